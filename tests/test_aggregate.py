"""Aggregated tests over bandwidth collections: engine, min-p correction, level, power."""

import warnings

import numpy as np
import pytest

from _reference import assert_forms_close
from conftest import std_normal_score
from skstein import KSDTest, MaxSKSDTest, RelativeKSDTest
from skstein._bootstrap import aggregate_minp, bootstrap_pvalue, bootstrap_weights
from skstein.discrepancy import sliced_sums_and_forms, stein_sums_and_forms
from skstein.distributions import Gaussian, GaussianMixture
from skstein.experiments import rejection_rate
from skstein.kernels import IMQ, RBF, bandwidth_factor_grid, bandwidth_grid, median_bandwidth


def _within_3_sigma(rate, alpha, trials):
    return abs(rate - alpha) <= 3 * np.sqrt(alpha * (1 - alpha) / trials)


# ---------------------------------------------------------------------------
# collections
# ---------------------------------------------------------------------------
def test_bandwidth_grid_spans_percentile_to_twice_median(rng):
    X = rng.standard_normal((300, 3))
    grid = bandwidth_grid(X, 7)
    d = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))[np.triu_indices(300, 1)]
    assert grid[0] == pytest.approx(np.quantile(d, 0.01), rel=1e-12)
    assert grid[-1] == pytest.approx(2 * median_bandwidth(X), rel=1e-12)
    np.testing.assert_allclose(grid[1:] / grid[:-1], (grid[-1] / grid[0]) ** (1 / 6))
    assert bandwidth_grid(X, 1) == pytest.approx([median_bandwidth(X)])
    # clusters: the collection reaches down to the within-cluster scale
    centres = np.array([[0.0, 0.0], [20.0, 0.0], [0.0, 20.0], [20.0, 20.0]])
    Y = centres[rng.integers(0, 4, 400)] + 0.5 * rng.standard_normal((400, 2))
    grid = bandwidth_grid(Y)
    assert grid[0] < 0.5 < 20 < grid[-1]


def test_factor_grid_is_the_one_dimensional_range(rng):
    U = rng.standard_normal((400, 3)) * np.array([1.0, 5.0, 0.2])
    f = bandwidth_factor_grid(U, 5)
    assert f[-1] == 2.0 and f.shape == (5,)
    ratios = []
    for k in range(3):
        d = np.abs(U[:, None, k] - U[None, :, k])[np.triu_indices(400, 1)]
        pos = np.sort(d[d > 0])
        ratios.append(pos[int(np.ceil(0.01 * pos.size)) - 1] / np.median(d))
    assert f[0] == pytest.approx(np.median(ratios), rel=1e-12)  # scale free
    assert bandwidth_factor_grid(U, 1) == pytest.approx([1.0])
    with pytest.raises(ValueError, match="coincide"):
        bandwidth_factor_grid(np.ones((10, 2)))


# ---------------------------------------------------------------------------
# the shared-Gram engine
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("kernels", [[RBF(0.4), RBF(1.1), RBF(3.0)],
                                     [IMQ(0.5), IMQ(2.0)],
                                     [IMQ(0.7, beta=-0.3), IMQ(1.9, beta=-0.3)]])
def test_stein_sums_and_forms_match_explicit_matrices(kernels):
    rng = np.random.default_rng(1)
    n = 70
    X = rng.standard_normal((n, 3))
    S = -X + 0.4 * rng.standard_normal((n, 3))
    V = bootstrap_weights("rademacher", n, 40, rng)
    for budget in (2**26, 8 * n * 9 * 5):  # one block, or blocks of a few rows
        sums, forms = stein_sums_and_forms(X, S, kernels, V, max_memory=budget)
        for k, kern in enumerate(kernels):
            H = kern.stein(X, X, S, S)
            diag = np.diag(H).copy()
            np.fill_diagonal(H, 0.0)
            assert sums[k].offdiag_sum == pytest.approx(H.sum(), rel=1e-10)
            np.testing.assert_allclose(sums[k].rowsums, H.sum(1), rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(sums[k].diag, diag, rtol=1e-12)
            assert_forms_close(forms[:, k], np.einsum("mi,ij,mj->m", V, H, V), V, H)
    sums_only, none = stein_sums_and_forms(X, S, kernels, None)
    assert none is None and sums_only[0].offdiag_sum == pytest.approx(sums[0].offdiag_sum)
    with pytest.raises(ValueError, match="share the base kernel"):
        stein_sums_and_forms(X, S, [RBF(1.0), IMQ(1.0)], V)


@pytest.mark.parametrize("scale", [1e-25, 1e25])
@pytest.mark.parametrize("family", [RBF, IMQ])
def test_stein_sums_and_forms_accurate_at_any_scale(scale, family):
    """The single-precision products see each kernel's blocks scaled by its largest
    diagonal value, so Stein kernels far below (or above) float32's range keep their
    forms: with X and S scaled, every entry of H scales by ``scale**-2``."""
    rng = np.random.default_rng(2)
    n = 60
    X0 = rng.standard_normal((n, 2))
    X, S = scale * X0, (-X0 + 0.3 * rng.standard_normal((n, 2))) / scale
    kernels = [family(0.1 * scale), family(0.5 * scale), family(2.0 * scale)]
    V = bootstrap_weights("rademacher", n, 30, rng)
    _, forms = stein_sums_and_forms(X, S, kernels, V)
    for k, kern in enumerate(kernels):
        H = kern.stein(X, X, S, S)
        np.fill_diagonal(H, 0.0)
        assert np.abs(H).max() < 1e-38 or np.abs(H).max() > 1e38
        assert_forms_close(forms[:, k], np.einsum("mi,ij,mj->m", V, H, V), V, H)


def test_sliced_sums_and_forms_match_explicit_matrices():
    from skstein.discrepancy import sliced_stein_sums

    rng = np.random.default_rng(2)
    n, d = 60, 3
    X = rng.standard_normal((n, d))
    S = -X
    G = np.linalg.qr(rng.standard_normal((d, d)))[0][:2]
    H_rows = np.array([[0.5, 0.8], [1.5, 2.0]])
    V = bootstrap_weights("multinomial", n, 30, rng)
    for budget in (2**26, 8 * n * 10):
        sums, forms = sliced_sums_and_forms(X, S, G, G, H_rows, V, max_memory=budget)
        for k, h in enumerate(H_rows):
            ref = sliced_stein_sums(X, S, G, G, h, return_matrix=True)
            H = ref.upper + ref.upper.T
            assert sums[k].offdiag_sum == pytest.approx(ref.offdiag_sum, rel=1e-12)
            np.testing.assert_allclose(forms[:, k], np.einsum("mi,ij,mj->m", V, H, V),
                                       rtol=1e-9, atol=1e-14)


# ---------------------------------------------------------------------------
# the min-p aggregation
# ---------------------------------------------------------------------------
def _minp_reference(stats, null):
    T = np.vstack([stats, null])
    M1 = T.shape[0]
    p = np.array([[np.mean(T[:, c] >= T[j, c]) for c in range(T.shape[1])] for j in range(M1)])
    z = (T - T.mean(axis=0)) / T.std(axis=0)
    # each row's most significant entry: smallest p-value, then largest z
    key = [min((p[j, c], -z[j, c]) for c in range(T.shape[1])) for j in range(M1)]
    return (1 + sum(key[m] <= key[0] for m in range(1, M1))) / M1, p[0]


def test_aggregate_minp_equals_its_definition():
    rng = np.random.default_rng(0)
    for L in (1, 2, 5):
        base = rng.standard_normal((200, 1))
        null = base + 0.5 * rng.standard_normal((200, L))  # correlated columns
        for shift in (0.0, 1.5, 3.0):
            stats = rng.standard_normal(L) * 0.3 + shift
            agg = aggregate_minp(stats, null, 0.05)
            pvalue, pvalues = _minp_reference(stats, null)
            assert agg.pvalue == pytest.approx(pvalue, abs=1e-15)
            np.testing.assert_allclose(agg.pvalues, pvalues, atol=1e-15)
            # the decision rule and the per-bandwidth rule agree
            assert (agg.pvalue <= 0.05) == bool(np.any(agg.rejected))
            assert agg.pvalues[agg.selected] == agg.pvalues.min()
            # invariant to increasing transformations of each column (ranks only)
            again = aggregate_minp(np.exp(stats), np.exp(null), 0.05)
            np.testing.assert_array_equal(again.pvalues, agg.pvalues)
    # one statistic: the single bootstrap test
    null = rng.standard_normal((999, 1))
    for stat in np.linspace(-1, 4, 41):
        agg = aggregate_minp(np.array([stat]), null, 0.05)
        assert agg.pvalue == pytest.approx(bootstrap_pvalue(stat, null[:, 0]), abs=1e-15)
    # draws computed apart from the statistics (Monte Carlo nulls) compare exactly: the
    # bootstrap's tie tolerance, relative to a column's largest draw, would count the
    # draws 3e-20 below 4e-20 as a tie
    null = np.array([[1e-12, 1.0], [3e-20, 2.0], [5e-20, 3.0]])
    stats = np.array([4e-20, 2.5])
    assert aggregate_minp(stats, null, 0.05).pvalues[0] == 1.0
    assert aggregate_minp(stats, null, 0.05, snap_ties=False).pvalues[0] == 0.75


def test_aggregate_minp_z_tie_break_at_any_scale():
    # the z tie-break standardises each column; statistics beyond 1e154 gave squares
    # that overflowed. Scaled by powers of two the decision is the same to the bit,
    # with no warning; 200 draws of 20 columns, so that p-values tie and z decides
    rng = np.random.default_rng(3)
    null = rng.standard_normal((200, 20)) + rng.standard_normal((200, 1))
    stats = null[7] + 0.01
    ref = aggregate_minp(stats, null, 0.05)
    for k in (-900, -400, 0, 500, 1000):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            agg = aggregate_minp(np.ldexp(stats, k), np.ldexp(null, k), 0.05)
        assert (agg.pvalue, agg.selected, agg.level) == (ref.pvalue, ref.selected, ref.level)
        np.testing.assert_array_equal(agg.rejected, ref.rejected)
    # columns of very different scales keep their own z
    scaled = np.ldexp(null, np.arange(20) * 50)
    agg = aggregate_minp(np.ldexp(stats, np.arange(20) * 50), scaled, 0.05)
    assert (agg.pvalue, agg.selected) == (ref.pvalue, ref.selected)


def test_aggregate_minp_is_exact_for_exchangeable_vectors():
    # M + 1 exchangeable rows: the aggregated p-value is uniform on {1..M+1}/(M+1)
    rng = np.random.default_rng(3)
    M, trials, alpha = 99, 2000, 0.1
    rejects = 0
    for _ in range(trials):
        base = rng.standard_normal((M + 1, 1))
        T = base + rng.standard_normal((M + 1, 4)) * np.array([0.1, 0.5, 1.0, 3.0])
        rejects += aggregate_minp(T[0], T[1:], alpha).pvalue <= alpha
    assert _within_3_sigma(rejects / trials, alpha, trials)


def test_weighted_minp_is_exact_and_reduces_to_uniform():
    rng = np.random.default_rng(4)
    M, trials, alpha = 99, 2000, 0.1
    w = np.array([0.2, 1.0, 3.0, 0.5])
    rejects = 0
    for _ in range(trials):
        base = rng.standard_normal((M + 1, 1))
        T = base + rng.standard_normal((M + 1, 4)) * np.array([0.1, 0.5, 1.0, 3.0])
        agg = aggregate_minp(T[0], T[1:], alpha, weights=w)
        rejects += agg.pvalue <= alpha
        assert (agg.pvalue <= alpha) == bool(np.any(agg.rejected))
    assert _within_3_sigma(rejects / trials, alpha, trials)
    # equal weights (any scale) are the uniform test; the per-test levels follow w
    null = rng.standard_normal((199, 3))
    stats = np.array([0.5, 2.2, 1.0])
    plain = aggregate_minp(stats, null, 0.05)
    for scale in (1.0, 7.0):
        same = aggregate_minp(stats, null, 0.05, weights=np.full(3, scale))
        assert same.pvalue == plain.pvalue and same.level == plain.level
        np.testing.assert_array_equal(same.rejected, plain.rejected)
    weighted = aggregate_minp(stats, null, 0.05, weights=[1.0, 2.0, 3.0])
    np.testing.assert_allclose(weighted.levels, weighted.level * np.array([0.5, 1.0, 1.5]))
    # all weight on one statistic: nearly its own test
    alone = aggregate_minp(stats, null, 0.05, weights=[1e-9, 1.0, 1e-9])
    assert alone.pvalue == pytest.approx(bootstrap_pvalue(stats[1], null[:, 1]), abs=0.01)
    with pytest.raises(ValueError, match="weights"):
        aggregate_minp(stats, null, 0.05, weights=[1.0, -1.0, 1.0])


def test_ksd_bandwidth_weights(rng):
    X = rng.standard_normal((150, 2)) + 0.2
    kw = dict(n_bootstrap=200, random_state=0)
    plain = KSDTest(std_normal_score, **kw).test(X)
    ones = KSDTest(std_normal_score, bandwidth_weights=np.ones(10), **kw).test(X)
    assert ones.pvalue == plain.pvalue and ones.method.endswith("weighted)")
    centred = KSDTest(std_normal_score, bandwidth_weights="centred", **kw)
    res = centred.test(X)
    h, w = res.bandwidths, centred.fit(X).bandwidth_weights_
    # centred on the median heuristic (the grid ends at twice it), mean one
    assert w.mean() == pytest.approx(1.0)
    assert np.argmax(w) == np.argmin(np.abs(np.log(h / median_bandwidth(X))))
    np.testing.assert_allclose(res.pvalue_threshold / w, res.pvalue_threshold[0] / w[0])
    assert centred.test(X) == res  # the fitted weights give the same result
    # whitened and Euclidean collections: one centre each
    both = KSDTest(std_normal_score, bandwidth_weights="centred", whiten="aggregate",
                   **kw).fit(X)
    assert both.bandwidth_weights_.shape == (20,)
    # a single bandwidth ignores them
    assert KSDTest(std_normal_score, bandwidth="median", bandwidth_weights="centred",
                   **kw).test(X).pvalue_threshold is None
    for bad, err in (("peaked", ValueError), ([1.0, 2.0], ValueError), (np.zeros(10), ValueError),
                     ([["a"]], TypeError)):
        with pytest.raises(err, match="bandwidth_weights"):
            KSDTest(std_normal_score, bandwidth_weights=bad, **kw).test(X)


@pytest.mark.slow
def test_centred_weights_level_and_broad_departure():
    # level on the 6-cluster mixture; on a 1-D mixture whose weights change (a broad
    # departure) the centred weights reject at least as often as uniform ones
    model, data = NULL_CASES["mixture"]
    test = KSDTest(model, bandwidth_weights="centred", n_bootstrap=200)
    res = rejection_rate(test, data, 120, n_trials=200, random_state=12, n_jobs=1)
    assert _within_3_sigma(res.rate, 0.05, 200), res.rate
    one_d = GaussianMixture([0.7, 0.3], [[0.0], [2.0]], [1.0, 0.25], covariance_type="spherical")

    def draw(n, g):
        far = g.random(n) < 0.45
        return np.where(far, 2.0 + 0.5 * g.standard_normal(n), g.standard_normal(n))[:, None]
    kw = dict(n_trials=60, random_state=13, n_jobs=1)
    uniform = rejection_rate(KSDTest(one_d, n_bootstrap=300), draw, 200, **kw)
    centred = rejection_rate(KSDTest(one_d, bandwidth_weights="centred", n_bootstrap=300),
                             draw, 200, **kw)
    assert centred.rate >= uniform.rate, (uniform.rate, centred.rate)


def test_aggregate_minp_many_statistics_few_draws():
    # 50 statistics, 199 draws: a quarter of the rows hold some column's maximum, so
    # p-values alone tie; the standardised tie-break keeps the level and the power
    rng = np.random.default_rng(4)
    M, L, trials, alpha = 199, 50, 1000, 0.05
    rejects = 0
    for _ in range(trials):
        T = rng.standard_normal((M + 1, 1)) + rng.standard_normal((M + 1, L))
        rejects += aggregate_minp(T[0], T[1:], alpha).pvalue <= alpha
    assert _within_3_sigma(rejects / trials, alpha, trials)
    null = rng.standard_normal((M, 1)) + rng.standard_normal((M, L))
    stats = np.zeros(L)
    stats[7] = 6.0  # one clearly significant statistic among 50
    agg = aggregate_minp(stats, null, alpha)
    assert agg.pvalue <= alpha and agg.selected == 7
    assert agg.rejected[7] and agg.rejected.sum() == 1


# ---------------------------------------------------------------------------
# KSDTest
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("statistic", ["u", "v"])
@pytest.mark.parametrize("bootstrap", ["multinomial", "rademacher"])
def test_one_bandwidth_collection_is_the_plain_test(statistic, bootstrap):
    X = np.random.default_rng(0).standard_normal((150, 3)) * 1.2
    kw = dict(statistic=statistic, bootstrap=bootstrap, random_state=4)
    plain = KSDTest(std_normal_score, bandwidth=1.3, **kw).test(X)
    agg = KSDTest(std_normal_score, bandwidth=[1.3], **kw).test(X)
    assert agg.statistic == plain.statistic and agg.pvalue == plain.pvalue
    assert agg.reject == plain.reject
    np.testing.assert_array_equal(agg.null_distribution, plain.null_distribution)
    assert agg.rejected.shape == (1,) and agg.reject == bool(agg.rejected[0])


def test_aggregated_result_fields_and_invariances(rng):
    X = rng.laplace(size=(300, 2)) / np.sqrt(2)
    test = KSDTest(Gaussian(np.zeros(2)), bandwidth="aggregate", n_bandwidths=6, random_state=0)
    res = test.test(X)
    assert res.bandwidths.shape == res.statistics.shape == res.pvalues.shape == (6,)
    np.testing.assert_allclose(res.bandwidths, bandwidth_grid(X, 6))
    assert res.reject == (res.pvalue <= res.alpha) == (res.statistic > res.threshold)
    assert res.reject == bool(np.any(res.pvalues <= res.pvalue_threshold))
    np.testing.assert_array_equal(res.rejected, res.pvalues <= res.pvalue_threshold)
    k = int(np.flatnonzero(res.bandwidths == res.bandwidth)[0])
    assert res.pvalues[k] == res.pvalues.min()  # the most significant bandwidth
    assert "aggregated over 6 bandwidths" in res.method
    # statistics are those of the plain tests at each bandwidth
    for h, stat in zip(res.bandwidths, res.statistics):
        assert stat == pytest.approx(KSDTest(Gaussian(np.zeros(2)), bandwidth=h).discrepancy(X))
    np.testing.assert_allclose(test.discrepancy(X), res.statistics, rtol=1e-12)
    assert test.score(X) == pytest.approx(max(
        KSDTest(Gaussian(np.zeros(2)), bandwidth=h).score(X) for h in res.bandwidths))
    # memory budget, permutation of rows and refitting change nothing
    small = test.set_params(max_memory=8 * 300 * 20).test(X)
    assert small.pvalue == res.pvalue
    np.testing.assert_allclose(small.statistics, res.statistics, rtol=1e-10)
    fitted = KSDTest(Gaussian(np.zeros(2)), bandwidth="aggregate", n_bandwidths=6,
                     random_state=0).fit(X)
    np.testing.assert_array_equal(fitted.bandwidth_, res.bandwidths)
    assert fitted.test(X).pvalue == res.pvalue


def test_aggregated_validation_names_the_argument(rng):
    X = rng.standard_normal((40, 2))
    # an unknown rule is refused with every rule the test knows
    with pytest.raises(ValueError, match="bandwidth must be one of 'median', 'aggregate'"):
        KSDTest(std_normal_score, bandwidth="widest").test(X)
    with pytest.raises(ValueError, match="bandwidth"):
        KSDTest(std_normal_score, bandwidth=[1.0, 0.0]).test(X)
    with pytest.raises(ValueError, match="bandwidth"):
        KSDTest(std_normal_score, bandwidth=[[1.0, 2.0]]).test(X)
    with pytest.raises(ValueError, match="n_bandwidths"):
        KSDTest(std_normal_score, bandwidth="aggregate", n_bandwidths=0).test(X)


def _mixture(sd=0.6):
    centres = np.array([[3.0 * i, 3.0 * j] for i in range(3) for j in range(2)])
    return centres, GaussianMixture(np.ones(6), centres, np.full(6, sd**2),
                                    covariance_type="spherical")


def _mixture_sampler(centres, sd):
    def draw(n, rng):
        return centres[rng.integers(0, len(centres), n)] + sd * rng.standard_normal((n, 2))
    return draw


NULL_CASES = {
    # a standard normal in 3 dimensions, a 6-cluster mixture, a correlated Gaussian
    "normal": (Gaussian(np.zeros(3)), Gaussian(np.zeros(3))),
    "mixture": (_mixture()[1], _mixture_sampler(_mixture()[0], 0.6)),
    "correlated": (Gaussian(np.zeros(3), [[1.0, 0.8, 0.3], [0.8, 1.0, 0.5], [0.3, 0.5, 1.0]]),
                   Gaussian(np.zeros(3), [[1.0, 0.8, 0.3], [0.8, 1.0, 0.5],
                                          [0.3, 0.5, 1.0]])),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(NULL_CASES))
@pytest.mark.parametrize("bootstrap", ["multinomial", "rademacher"])
def test_aggregated_ksd_level(case, bootstrap):
    model, data = NULL_CASES[case]
    trials, alpha = 200, 0.05
    test = KSDTest(model, kernel="imq", bandwidth="aggregate", bootstrap=bootstrap,
                   n_bootstrap=200)
    res = rejection_rate(test, data, 120, n_trials=trials, random_state=11, n_jobs=1)
    assert _within_3_sigma(res.rate, alpha, trials), res.rate


@pytest.mark.slow
def test_aggregated_ksd_finds_the_cluster_scale_where_the_median_fails():
    # model: 6 clusters of sd 0.6; data: the same clusters with sd 0.75
    centres, model = _mixture(0.6)
    data = _mixture_sampler(centres, 0.75)
    kw = dict(n_trials=30, random_state=5, n_jobs=1)
    median = rejection_rate(KSDTest(model, kernel="imq", bandwidth="median", n_bootstrap=500),
                            data, 500, **kw)
    agg = rejection_rate(KSDTest(model, kernel="imq", bandwidth="aggregate", n_bootstrap=500),
                         data, 500, **kw)
    # stated floor: the aggregated test rejects in at least 60% of 30 trials, the
    # median-heuristic test in at most 30%
    assert median.rate <= 0.3 and agg.rate >= 0.6, (median.rate, agg.rate)


def test_aggregated_ksd_same_numbers_for_any_n_jobs():
    data = Gaussian(np.zeros(2))
    test = KSDTest(data, bandwidth="aggregate", n_bandwidths=4, n_bootstrap=100)
    a = rejection_rate(test, data, 60, n_trials=6, random_state=3, n_jobs=1)
    b = rejection_rate(test, data, 60, n_trials=6, random_state=3, n_jobs=2)
    np.testing.assert_array_equal(a.pvalues, b.pvalues)
    np.testing.assert_array_equal(a.statistics, b.statistics)


# ---------------------------------------------------------------------------
# MaxSKSDTest: aggregated test stage
# ---------------------------------------------------------------------------
def test_maxsksd_aggregated_test_stage(rng):
    X = rng.laplace(size=(400, 4)) / np.sqrt(2)
    model = Gaussian(np.zeros(4))
    test = MaxSKSDTest(model, init="identity", test_bandwidth="aggregate", n_bandwidths=5,
                       moment=False, random_state=0)
    test.fit(X[:100])
    res = test.test(X[100:])
    assert res.bandwidths.shape == (5, 4) and res.statistics.shape == (5,)
    U = X[100:] @ test.directions_.T
    from skstein.kernels import median_bandwidth_1d
    factors = bandwidth_factor_grid(U, 5)
    np.testing.assert_allclose(res.bandwidths, factors[:, None] * median_bandwidth_1d(U)[None])
    from skstein import max_sksd
    for h, stat in zip(res.bandwidths, res.statistics):
        assert stat == pytest.approx(max_sksd(X[100:], model, directions=test.directions_,
                                              bandwidth=h), rel=1e-10)
    assert res.reject == (res.pvalue <= 0.05) == bool(np.any(res.rejected))
    np.testing.assert_allclose(test.discrepancy(X[100:]), res.statistics, rtol=1e-12)
    # one row: the plain test with those bandwidths
    one = test.set_params(test_bandwidth=res.bandwidths[:1]).test(X[100:])
    plain = test.set_params(test_bandwidth=res.bandwidths[0]).test(X[100:])
    assert one.pvalue == plain.pvalue and one.statistic == plain.statistic
    with pytest.raises(ValueError, match="test_bandwidth"):
        test.set_params(test_bandwidth=np.ones((2, 3))).test(X[100:])


@pytest.mark.slow
@pytest.mark.parametrize("case", ["normal", "mixture"])
def test_maxsksd_aggregated_level(case):
    model, data = NULL_CASES[case]
    rng = np.random.default_rng(8)
    X_train = (data.rvs(150, random_state=rng) if hasattr(data, "rvs") else data(150, rng))
    fitted = MaxSKSDTest(model, variant="g", test_bandwidth="aggregate", n_bootstrap=200,
                         random_state=0).fit(X_train)
    # 5 direction sets x 10 factors aggregated, and the default's two moment candidates
    assert [c[0] for c in fitted.candidates_[5:]] == ["moment", "fourth moment"]
    trials, alpha = 200, 0.05
    res = rejection_rate(fitted, data, 100, n_trials=trials, random_state=2, n_jobs=1)
    assert _within_3_sigma(res.rate, alpha, trials), res.rate


# ---------------------------------------------------------------------------
# RelativeKSDTest: maximum of the z-scores
# ---------------------------------------------------------------------------
def _mirror_ties():
    """``{case: (P, Q, R)}`` with R invariant under x_1 -> -x_1 and Q the mirror of P."""
    centres, _ = _mixture()
    centres = centres - centres.mean(axis=0)  # symmetric under the mirror
    shift = np.array([0.4, 0.0])
    mix_p, mix_q = (GaussianMixture(np.ones(6), centres + sign * shift, np.full(6, 0.36),
                                    covariance_type="spherical") for sign in (1.0, -1.0))
    cov_r = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.8], [0.0, 0.8, 1.0]])
    cov_p, cov_q = cov_r.copy(), cov_r.copy()
    cov_p[0, 1] = cov_p[1, 0] = 0.5
    cov_q[0, 1] = cov_q[1, 0] = -0.5
    return {
        "mixture": (mix_p, mix_q, _mixture_sampler(centres, 0.6)),
        "correlated": (Gaussian(np.zeros(3), cov_p), Gaussian(np.zeros(3), cov_q),
                       Gaussian(np.zeros(3), cov_r)),
    }


@pytest.mark.slow
@pytest.mark.parametrize("case", ["mixture", "correlated"])
def test_relative_aggregated_level_at_symmetric_ties(case):
    P, Q, R = _mirror_ties()[case]
    trials, alpha = 200, 0.05
    seeds = np.random.SeedSequence(21).spawn(trials)
    rejects = []
    for s in seeds:
        rng = np.random.default_rng(s)
        X = R.rvs(200, random_state=rng) if hasattr(R, "rvs") else R(200, rng)
        rejects.append(RelativeKSDTest(P, Q, random_state=rng).test(X).reject)
    assert _within_3_sigma(np.mean(rejects), alpha, trials), np.mean(rejects)


def test_relative_aggregated_tie_is_a_mirror_image():
    P, Q, R = _mirror_ties()["correlated"]
    X = R.rvs(150, random_state=0)
    flip = np.array([-1.0, 1.0, 1.0])
    a = RelativeKSDTest(P, Q, random_state=0).test(X)
    b = RelativeKSDTest(P, Q, random_state=0).test(X * flip)
    np.testing.assert_allclose(a.bandwidths, b.bandwidths, rtol=1e-12)
    np.testing.assert_allclose(a.statistics, -b.statistics, rtol=1e-9)


def test_relative_aggregated_decides_the_mixture_comparison():
    # one Gaussian against the true 6-cluster mixture: the median spans the clusters
    centres, truth = _mixture(0.6)
    rng = np.random.default_rng(0)
    X = _mixture_sampler(centres, 0.6)(400, rng)
    one = Gaussian(X.mean(axis=0), np.cov(X.T))
    agg = RelativeKSDTest(one, truth, random_state=0).test(X)
    assert agg.reject and agg.zscore >= agg.zscore_threshold
    assert agg.zscores.max() == agg.zscore and np.all(np.isfinite(agg.zscores))
    # the threshold of the maximum is above the single-test quantile (1.645), below Bonferroni
    assert 1.645 < agg.zscore_threshold < 2.58
