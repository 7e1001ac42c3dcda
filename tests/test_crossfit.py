"""Cross-fitted maxSKSD tests: the p-value combinations, the folds and their calibration."""

import math

import numpy as np
import pytest
from scipy.stats import ortho_group

from skstein import MaxSKSDTest
from skstein.directions import ALL_STARTS, independent_directions, search_directions
from skstein.distributions import Gaussian, Laplace, StudentT
from skstein.gof._maxsksd import combine_pvalues, crossfit_folds


def test_combinations_closed_forms():
    p = [0.01, 0.04, 0.5]
    assert combine_pvalues(p, "bonferroni") == pytest.approx(0.03)
    assert combine_pvalues(p, "mean") == pytest.approx(2 * np.mean(p))
    harmonic = math.e * math.log(3) * 3 / sum(1 / q for q in p)
    assert combine_pvalues(p, "harmonic") == pytest.approx(harmonic)
    # two p-values: the harmonic mean's factor is 2 (e log 2 < 2 would not be valid)
    assert combine_pvalues([0.02, 0.02], "harmonic") == pytest.approx(0.04)
    assert combine_pvalues([0.9, 0.8], "mean") == 1.0  # capped
    assert combine_pvalues([0.3], "bonferroni") == 0.3
    assert combine_pvalues([0.0, 0.5], "harmonic") == 0.0


@pytest.mark.parametrize("bad", [[], [1.5], [-0.1, 0.2], [np.nan]])
def test_combination_rejects_bad_pvalues(bad):
    with pytest.raises(ValueError, match="pvalues"):
        combine_pvalues(bad)


def test_combination_rejects_unknown_method():
    with pytest.raises(ValueError, match="combine"):
        combine_pvalues([0.1, 0.2], "fisher")


@pytest.mark.parametrize("method", ["bonferroni", "mean", "harmonic"])
def test_combinations_valid_under_dependence(method):
    # identical and anti-dependent uniform p-values: the combined rejection rate stays below
    # alpha (3 binomial sd over 4000 draws) under the two extreme dependences
    rng = np.random.default_rng(0)
    u = rng.uniform(size=4000)
    for K in (2, 3, 5):
        same = np.column_stack([u] * K)
        shifted = (u[:, None] + np.arange(K)[None, :] / K) % 1.0  # each column uniform
        for P in (same, shifted):
            rate = np.mean([combine_pvalues(row, method) <= 0.05 for row in P])
            assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / len(u))


def test_folds_partition_the_sample():
    folds = crossfit_folds(103, 5, np.random.default_rng(0))
    assert sorted(len(f) for f in folds) == [20, 20, 21, 21, 21]
    np.testing.assert_array_equal(np.sort(np.concatenate(folds)), np.arange(103))
    assert all(np.all(np.diff(f) > 0) for f in folds)


def _rotated_laplace(n, d, seed):
    rng = np.random.default_rng(seed)
    W = ortho_group.rvs(d, random_state=rng)
    return rng.laplace(scale=2**-0.5, size=(n, d)) @ W.T, W


def test_crossfit_result_fields():
    X = np.random.default_rng(0).standard_normal((240, 4))
    test = MaxSKSDTest(Gaussian(np.zeros(4)), cv=3, moment=False, n_bootstrap=200,
                       random_state=0)
    res = test.test(X)
    assert res.pvalues.shape == (3,) and res.statistics.shape == (3,)
    assert res.bandwidths.shape == (3, 4)
    assert len(res.labels) == 3 and res.labels[0].startswith("fold 0: ")
    assert res.n_samples == 240  # every point is tested once
    assert "3-fold cross-fitting, bonferroni" in res.method
    assert res.pvalue == pytest.approx(min(1.0, 3 * res.pvalues.min()))
    assert res.reject == (res.pvalue <= 0.05)
    assert not hasattr(test, "directions_")
    again = test.test(X)
    assert again == res  # same seed, same result
    # the combination leaves the folds, their directions and their p-values unchanged
    for method in ("mean", "harmonic"):
        other = test.set_params(combine=method).test(X)
        np.testing.assert_array_equal(other.pvalues, res.pvalues)
        assert other.pvalue == pytest.approx(combine_pvalues(res.pvalues, method))
    stats = test.discrepancy(X)
    # the folds' candidates: the default starts and "ica", fold after fold
    assert stats.shape == (3 * len(ALL_STARTS["g"]),) and np.isfinite(test.score(X))


def test_fitted_test_ignores_cv():
    X = np.random.default_rng(1).standard_normal((200, 3))
    a = MaxSKSDTest(Gaussian(np.zeros(3)), n_bootstrap=100, random_state=0).fit(X[:50])
    b = MaxSKSDTest(Gaussian(np.zeros(3)), cv=4, n_bootstrap=100, random_state=0).fit(X[:50])
    c = MaxSKSDTest(Gaussian(np.zeros(3)), cv=None, n_bootstrap=100, random_state=0).fit(X[:50])
    assert a.test(X[50:]) == b.test(X[50:]) == c.test(X[50:])


@pytest.mark.parametrize("cv", [1, 0, 2.5, True, "3"])
def test_bad_cv(cv):
    X = np.random.default_rng(0).standard_normal((50, 2))
    with pytest.raises(ValueError, match="cv must be"):
        MaxSKSDTest(Gaussian(np.zeros(2)), cv=cv).test(X)


def test_bad_combine_and_too_few_samples():
    X = np.random.default_rng(0).standard_normal((50, 2))
    with pytest.raises(ValueError, match="combine"):
        MaxSKSDTest(Gaussian(np.zeros(2)), cv=2, combine="min").test(X)
    with pytest.raises(ValueError):
        MaxSKSDTest(Gaussian(np.zeros(2)), cv=10).test(X[:15])


@pytest.mark.slow
@pytest.mark.parametrize("combine", ["bonferroni", "mean", "harmonic"])
def test_crossfit_calibration(combine):
    # 60 null trials: rate <= alpha + 3 sd (the combinations are conservative by design)
    d, n, R = 4, 150, 60
    rates = []
    for seed in range(R):
        X = np.random.default_rng(100 + seed).standard_normal((n, d))
        test = MaxSKSDTest(Gaussian(np.zeros(d)), cv=3, combine=combine, n_bootstrap=100,
                           max_iter=5, random_state=seed)
        rates.append(test.test(X).reject)
    assert np.mean(rates) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / R)


def test_crossfit_power_on_rotated_laplace():
    # heavy tails along random directions at D = 10: the cross-fitted test with the
    # independent-direction start rejects in every one of 5 trials
    d = 10
    for seed in range(5):
        X, _ = _rotated_laplace(600, d, seed)
        test = MaxSKSDTest(Gaussian(np.zeros(d)), variant="rg", cv=3,
                           starts=("identity", "ica"), n_bootstrap=200, random_state=seed)
        assert test.test(X).reject


def test_independent_directions_recover_laplace_axes():
    X, W = _rotated_laplace(3000, 6, 0)
    C = independent_directions(X, 6, np.random.default_rng(0))
    assert C.shape == (6, 6)
    np.testing.assert_allclose(np.linalg.norm(C, axis=1), 1.0)
    assert np.abs(C @ W).max(axis=1).min() > 0.97  # each found direction is a column of W


def _fastica_reference(Z, starts, max_iter, tol):
    # the deflationary fixed point written with NumPy, one direction after another
    n, r = Z.shape
    found = np.empty((0, r))
    for w in starts:
        w = w - found.T @ (found @ w)
        w /= np.linalg.norm(w)
        for _ in range(max_iter):
            t = np.tanh(Z @ w)
            new = Z.T @ t / n - np.mean(1.0 - t * t) * w
            new -= found.T @ (found @ new)
            norm = np.linalg.norm(new)
            if norm == 0:
                break
            new /= norm
            done = 1.0 - abs(new @ w) < tol
            w = new
            if done:
                break
        found = np.vstack([found, w])
    return found


@pytest.mark.parametrize("n, r, k, max_iter", [(300, 5, 5, 200), (97, 12, 4, 3),
                                               (1000, 40, 20, 200), (33, 2, 1, 0)])
def test_fastica_kernel_equals_numpy_for_any_number_of_threads(n, r, k, max_iter):
    from skstein._numba.directions import fastica_deflation
    from skstein._threads import numba_threads

    rng = np.random.default_rng(n)
    Z = rng.laplace(size=(n, r)) @ rng.standard_normal((r, r))
    Z = (Z - Z.mean(axis=0)) @ np.linalg.inv(np.linalg.cholesky(np.cov(Z.T, bias=True)).T)
    starts = rng.standard_normal((k, r))
    ref = _fastica_reference(Z, starts, max_iter, 1e-6)
    runs = []
    for t in (1, 2):
        with numba_threads(t):
            runs.append(fastica_deflation(Z, starts, max_iter, 1e-6))
    np.testing.assert_array_equal(runs[0], runs[1])
    np.testing.assert_allclose(runs[0], ref, atol=1e-9)
    np.testing.assert_allclose(runs[0] @ runs[0].T, np.eye(k), atol=1e-10)


def test_independent_directions_rank_deficient():
    rng = np.random.default_rng(0)
    X = rng.laplace(size=(500, 2)) @ rng.standard_normal((2, 5))  # rank 2 in 5-D
    C = independent_directions(X, 4, rng)
    assert C.shape == (2, 5) and np.all(np.isfinite(C))


@pytest.mark.parametrize("variant", ["g", "rg"])
def test_starts_and_ascent_size(variant):
    X, _ = _rotated_laplace(400, 6, 1)
    model = Gaussian(np.zeros(6))
    res = search_directions(X, model, variant=variant, n_slices=None if variant == "g" else 3,
                            starts=("ica", "identity"), ascent_size=100, random_state=0)
    assert [c[0] for c in res.candidates] == ["ica", "identity"]
    for _, G, R, h in res.candidates:
        np.testing.assert_allclose(np.linalg.norm(G, axis=1), 1.0)
        assert np.all(h > 0)
    assert "ica" in ALL_STARTS[variant]
    with pytest.raises(ValueError, match="starts"):
        search_directions(X, model, variant=variant, starts=("ica", "ica"))
    with pytest.raises(ValueError, match="starts"):
        search_directions(X, model, variant=variant, starts=("nope",))


# --- the linear Stein statistic along the moment direction (moment=True) ----------

def _variance_along(n, d, seed, variance=1.6):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(d)
    v /= np.linalg.norm(v)
    Z = rng.standard_normal((n, d))
    return Z + (np.sqrt(variance) - 1.0) * np.outer(Z @ v, v), v


def test_moment_sums_match_the_double_loop():
    from skstein.gof._maxsksd import moment_sums, moment_terms

    rng = np.random.default_rng(3)
    X = rng.standard_normal((9, 3))
    S = -X + 0.1 * rng.standard_normal((9, 3))
    u = rng.standard_normal(3)
    u /= np.linalg.norm(u)
    xi = np.array([(s @ u) * (x @ u) + 1.0 for x, s in zip(X, S)])
    H = np.outer(xi, xi)
    off = H.sum() - np.trace(H)
    sums = moment_sums(moment_terms(X, S, u))
    assert sums.offdiag_sum == pytest.approx(off, rel=1e-12)
    np.testing.assert_allclose(sums.diag, np.diag(H), rtol=1e-12)
    np.testing.assert_allclose(sums.rowsums, H.sum(axis=1) - np.diag(H), rtol=1e-12)
    assert sums.statistic("u") == pytest.approx(off / (9 * 8), rel=1e-12)


def test_moment_terms_have_mean_zero_under_the_model():
    # Stein's identity with the test function (u.x) u, for any fixed unit u
    from skstein.distributions import Laplace
    from skstein.gof._maxsksd import moment_terms

    model = Laplace(4)
    X = model.rvs(200_000, random_state=0)
    u = np.array([0.5, -0.5, 0.5, 0.5])
    xi = moment_terms(X, model.grad_logpdf(X), u)
    assert abs(xi.mean()) <= 4 * xi.std() / np.sqrt(len(xi))


def test_moment_direction_points_at_the_variance_change():
    from skstein.gof._maxsksd import moment_direction

    X, v = _variance_along(4000, 10, 0)
    u = moment_direction(X, -X)
    assert abs(u @ v) > 0.95 and np.linalg.norm(u) == pytest.approx(1.0)


def test_moment_candidate_in_the_aggregated_test():
    X, _ = _variance_along(400, 8, 1)
    test = MaxSKSDTest(Gaussian(np.zeros(8)), variant="rg", n_slices=4, moment=True, cv=None,
                       n_bootstrap=200, random_state=0)
    res = test.test(X)
    assert "moment" in res.labels and res.bandwidths.shape == (len(res.labels), 4)
    k = res.labels.index("moment")
    assert np.all(np.isnan(res.bandwidths[k])) and np.isfinite(res.statistics[k])
    assert len(np.atleast_1d(test.discrepancy(X))) == len(res.labels)
    again = MaxSKSDTest(Gaussian(np.zeros(8)), variant="rg", n_slices=4, moment=True, cv=None,
                        n_bootstrap=200, random_state=0).test(X)
    assert again.pvalue == res.pvalue and np.array_equal(again.statistics, res.statistics)
    # fitted: the candidate is learned by fit and kept in candidates_
    fitted = MaxSKSDTest(Gaussian(np.zeros(8)), variant="rg", n_slices=4, moment=True,
                         n_bootstrap=200, random_state=0).fit(X[:200])
    assert [c[0] for c in fitted.candidates_[-2:]] == ["moment", "fourth moment"]
    assert fitted.candidates_[-1][3] is None
    np.testing.assert_allclose(fitted.candidates_[-1][1][0], X[:200].mean(axis=0))
    labels = fitted.test(X[200:]).labels
    assert "moment" in labels and "fourth moment" in labels
    cv = MaxSKSDTest(Gaussian(np.zeros(8)), variant="rg", n_slices=4, moment=True, cv=2,
                     n_bootstrap=200, random_state=0).test(X)
    assert len(cv.pvalues) == 2 and cv.bandwidths.shape == (2, 4)


def test_fourth_moment_terms():
    # the terms against the test function's Stein operator written out, and their
    # mean zero under the model about a centre away from its mean
    from skstein.distributions import Laplace
    from skstein.gof._maxsksd import fourth_moment_terms

    rng = np.random.default_rng(4)
    X = rng.standard_normal((7, 3))
    S = -X + 0.2 * rng.standard_normal((7, 3))
    c = np.array([0.3, -0.1, 0.5])
    slow = [(s @ (x - c)) * ((x - c) @ (x - c)) + 5.0 * ((x - c) @ (x - c))
            for x, s in zip(X, S)]
    np.testing.assert_allclose(fourth_moment_terms(X, S, c), slow, rtol=1e-13)
    model = Laplace(4)
    X = model.rvs(400_000, random_state=1)
    for radii in (None, (3.0, 1.5)):
        xi = fourth_moment_terms(X, model.grad_logpdf(X), np.array([0.2, 0.0, -0.3, 0.1]),
                                 radii)
        assert abs(xi.mean()) <= 4 * xi.std() / np.sqrt(len(xi))


@pytest.mark.parametrize("radii", [(2.5, 2.4), (0.7, 0.8), (2.0, 0.0)])
def test_saturated_fourth_moment_terms_against_finite_differences(radii):
    # the terms s^T f + div f of f(x) = g(|x - c|^2) (x - c), g the saturated cubic,
    # with the divergence by central differences of f written out
    from skstein.gof._maxsksd import fourth_moment_terms

    m, w = radii

    def f(x):
        y = x - c
        r2 = y @ y
        return (m + w * np.tanh((r2 - m) / w) if w > 0 else m) * y

    rng = np.random.default_rng(5)
    X = 1.3 * rng.standard_normal((9, 3))
    S = -X + 0.3 * rng.standard_normal((9, 3))
    c = np.array([0.2, -0.4, 0.1])
    eps = 1e-5
    slow = []
    for x, s in zip(X, S):
        div = sum((f(x + eps * e)[k] - f(x - eps * e)[k]) / (2 * eps)
                  for k, e in enumerate(np.eye(3)))
        slow.append(s @ f(x) + div)
    np.testing.assert_allclose(fourth_moment_terms(X, S, c, radii), slow, rtol=1e-7,
                               atol=1e-8)


@pytest.mark.parametrize("bootstrap", ["multinomial", "rademacher"])
def test_studentised_null_against_resampling_by_hand(bootstrap):
    from skstein._bootstrap import bootstrap_weights
    from skstein.gof._maxsksd import StudentisedMean, studentised_null

    rng = np.random.default_rng(5)
    xi = rng.standard_exponential(30) - 1.0
    V = bootstrap_weights(bootstrap, 30, 7, np.random.default_rng(0))
    got = studentised_null(xi, V, bootstrap)
    for v, g in zip(V, got):
        counts = np.rint(30 * v + 1.0) if bootstrap == "multinomial" else 1.0 + np.sign(v)
        sample = np.repeat(xi, counts.astype(int))
        t = (sample.mean() - xi.mean()) / (sample.std(ddof=1) / np.sqrt(sample.size))
        assert g == pytest.approx(t * t, rel=1e-9)
    stat = StudentisedMean(xi)
    assert stat.statistic("u") == stat.statistic("v") == pytest.approx(
        30 * xi.mean() ** 2 / xi.var(ddof=1), rel=1e-12)
    # a resample of equal terms counts against the statistic; equal terms have no spread
    # to studentise by and give 0, whatever their mean
    assert studentised_null(np.array([1.0, 2.0]), np.array([[0.5, -0.5]]), "multinomial")[0] \
        == np.inf
    assert StudentisedMean(np.zeros(5)).statistic() == 0.0
    assert StudentisedMean(np.full(5, 3.0)).statistic() == 0.0


def test_fourth_moment_finds_rotated_tails():
    # unit-variance Laplace coordinates in a random basis of 30 dimensions against a
    # standard normal model, n = 600, 2-fold cross-fitting, slices along the axes (no
    # search): rejected in all of 3 trials with the moment statistics, in 1 without
    from scipy.stats import ortho_group

    rejects = {False: 0, True: 0}
    for seed in range(3):
        rng = np.random.default_rng(40 + seed)
        X = rng.laplace(scale=2**-0.5, size=(600, 30)) @ ortho_group.rvs(30, random_state=rng)
        for moment in (False, True):
            test = MaxSKSDTest(Gaussian(np.zeros(30)), variant="rg", moment=moment, cv=2,
                               init="identity", starts=("identity",), max_iter=0,
                               n_bootstrap=200, random_state=seed)
            rejects[moment] += test.test(X).reject
    assert rejects == {False: 1, True: 3}


@pytest.mark.parametrize("bad,error", [("yes", ValueError), (1, TypeError),
                                       (None, TypeError)])
def test_bad_moment(bad, error):
    X = np.random.default_rng(0).standard_normal((40, 3))
    with pytest.raises(error, match="moment"):
        MaxSKSDTest(Gaussian(np.zeros(3)), moment=bad).test(X)


@pytest.mark.parametrize("cv", [None, 2])
def test_pooled_moments(cv):
    # moment="pooled": the learned statistics (split or folds) at alpha / 2, the whole
    # sample's second moments at alpha / 4 and its fourth moment about the other half's
    # mean at alpha / 4: p = min(1, 2 p_learned, 4 p_second, 4 p_fourth)
    from skstein._random import as_generator
    from skstein.gof._maxsksd import (
        StudentisedMean,
        crossed_fourth_moment_terms,
        second_moment_sums,
    )

    model = Gaussian(np.zeros(6))
    X, _ = _rotated_laplace(300, 6, 3)
    test = MaxSKSDTest(model, variant="rg", n_slices=3, moment="pooled", cv=cv,
                       n_bootstrap=200, random_state=4)
    res = test.test(X)
    assert res.labels[-2:] == ("all: second moments", "all: fourth moment")
    S = model.grad_logpdf(X)
    # each half about the other half's mean: the third stream of random_state, first part
    part_rng = as_generator(4).spawn(3)[2].spawn(2)[0]
    xi = crossed_fourth_moment_terms(X, S, part_rng)
    assert res.statistics[-1] == pytest.approx(StudentisedMean(xi).statistic(), rel=1e-12)
    second = second_moment_sums(X, S)
    assert res.statistics[-2] == pytest.approx(second.statistic("u"), rel=1e-12)
    if cv is None:
        assert len(res.labels) == 3 and res.labels[0].startswith("learned")
        learned_p = res.pvalues[0]
        np.testing.assert_allclose(res.pvalue_threshold, [0.025, 0.0125, 0.0125])
    else:
        assert [lab[:6] for lab in res.labels[:2]] == ["fold 0", "fold 1"]
        learned_p = min(1.0, 2 * res.pvalues[:2].min())
        np.testing.assert_allclose(res.pvalue_threshold, [0.0125, 0.0125, 0.0125, 0.0125])
        assert not any("moment" in lab for lab in res.labels[:2])
    assert np.isnan(res.bandwidths[-2:]).all()
    assert res.pvalue == pytest.approx(min(1.0, 2 * learned_p, 4 * res.pvalues[-2],
                                           4 * res.pvalues[-1]))
    assert res.reject == (res.pvalue <= 0.05)
    np.testing.assert_array_equal(res.rejected, res.pvalues <= res.pvalue_threshold)
    again = MaxSKSDTest(model, variant="rg", n_slices=3, moment="pooled", cv=cv,
                        n_bootstrap=200, random_state=4).test(X)
    assert again == res
    # discrepancy and score see the same statistics, the whole sample's moments last
    values = test.discrepancy(X)
    n = X.shape[0]
    assert values[-1] == pytest.approx((xi.sum() ** 2 - xi @ xi) / (n * (n - 1)))
    assert values[-2] == pytest.approx(second.statistic("u"), rel=1e-12)
    assert np.isfinite(test.score(X))
    # a fitted test keeps both moment candidates in its aggregated test, as moment=True
    fitted = MaxSKSDTest(model, variant="rg", n_slices=3, moment="pooled", n_bootstrap=100,
                         random_state=0).fit(X[:150])
    assert [c[0] for c in fitted.candidates_[-2:]] == ["moment", "fourth moment"]
    assert "fourth moment" in fitted.test(X[150:]).labels


def test_second_moment_sums_against_the_matrices():
    # the linear Stein kernel <xi_i, xi_j>_F with xi_i = s_i (x_i - mean)^T + (1 - 1/n) I,
    # its sums and its row blocks (any block size), against the D x D matrices themselves
    from skstein.gof._maxsksd import (second_moment_blocks, second_moment_sums,
                                      second_moment_upper)

    rng = np.random.default_rng(0)
    X = rng.standard_normal((37, 4)) * [1.0, 2.0, 3.0, 0.5] + 1.0
    S = -X + 0.3 * rng.standard_normal(X.shape)
    n, d = X.shape
    xi = [np.outer(S[i], X[i] - X.mean(axis=0)) + (1 - 1 / n) * np.eye(d) for i in range(n)]
    H = np.array([[np.sum(a * b) for b in xi] for a in xi])
    sums = second_moment_sums(X, S)
    off = H.sum() - np.trace(H)
    assert sums.offdiag_sum == pytest.approx(off, rel=1e-12)
    np.testing.assert_allclose(sums.diag, np.diag(H), rtol=1e-12)
    np.testing.assert_allclose(sums.rowsums, H.sum(axis=1) - np.diag(H), rtol=1e-10,
                               atol=1e-10 * np.abs(H).max())
    assert sums.statistic("v") == pytest.approx(H.sum() / n**2, rel=1e-12)
    for rows in (1, 5, 37):
        blocks = list(second_moment_blocks(X, S, max_memory=16 * n * rows))
        assert [b - a for a, b, _ in blocks][0] == rows
        got = np.vstack([blk for _, _, blk in blocks])
        np.testing.assert_allclose(got, H - np.diag(np.diag(H)), rtol=1e-12,
                                   atol=1e-12 * np.abs(H).max())
    np.testing.assert_allclose(second_moment_upper(X, S), np.triu(H, 1), rtol=1e-12,
                               atol=1e-12 * np.abs(H).max())


def test_second_moment_upper_equals_the_blocks_for_any_number_of_threads():
    # large enough for the Gram products on numba's threads
    from skstein._threads import numba_threads
    from skstein.gof._maxsksd import second_moment_blocks, second_moment_upper

    rng = np.random.default_rng(1)
    X = rng.standard_normal((301, 30))
    S = -X + 0.2 * rng.standard_normal(X.shape)
    (_, _, H), = second_moment_blocks(X, S)
    runs = []
    for t in (1, 2):
        with numba_threads(t):
            runs.append(second_moment_upper(X, S))
    np.testing.assert_array_equal(runs[0], runs[1])
    np.testing.assert_allclose(runs[0], np.triu(H, 1), rtol=1e-12,
                               atol=1e-12 * np.abs(H).max())


def test_second_moment_bootstrap_by_blocks_equals_the_upper_triangle():
    # the test's own second-moment bootstrap: the upper triangle when it fits in
    # max_memory, full rows by blocks otherwise; the same draws, the same p-value
    X = Laplace(6).rvs(200, random_state=3)
    model = Gaussian(np.zeros(6))
    S = model.grad_logpdf(X)
    res = []
    for mem in (10**9, 8 * 200 * 30):
        for bootstrap in ("multinomial", "rademacher"):
            test = MaxSKSDTest(model, n_bootstrap=300, bootstrap=bootstrap, max_memory=mem)
            res.append(test._pooled_second(X, S, np.random.default_rng(4), 0.05, bootstrap))
    for a, b in zip(res[:2], res[2:]):
        scale = np.abs(a.null_distribution).max()
        np.testing.assert_allclose(a.null_distribution, b.null_distribution, rtol=1e-12,
                                   atol=1e-12 * scale)
        assert a.statistic == b.statistic and a.pvalue == b.pvalue
        assert 0 < a.pvalue < 1 and np.ptp(a.null_distribution) > 0


def test_fitted_moment_candidates_on_two_points_compute_cleanly():
    # two points: the studentised moment statistics' terms are equal (variance zero),
    # so the statistic is 0 and its draws infinite; the aggregated test ranks them
    # without invalid arithmetic and does not reject
    import warnings

    X = np.array([[0.0, 0.0], [1.0, 0.0]])
    test = MaxSKSDTest(lambda Z: -Z, variant="rg", init=np.array([[1.0, 1.0]]), n_slices=1,
                       max_iter=0, validation_fraction=0.0, n_bootstrap=50, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.filterwarnings("ignore", message="the multinomial bootstrap")
        res = test.fit(X).test(X)
    assert res.labels[-2:] == ("moment", "fourth moment")
    assert res.statistics[-2] == 0.0 and np.isfinite(res.statistic)
    assert res.pvalue == 1.0 and not res.reject


def test_second_moments_that_overflow_name_X():
    from skstein.gof._maxsksd import second_moment_sums

    X = np.random.default_rng(0).standard_normal((60, 3)) * 1e100
    with pytest.raises(ValueError, match="second moments of the 60 samples of X overflow"):
        second_moment_sums(X, -X)


@pytest.mark.parametrize("model", [Gaussian(np.ones(3), np.diag([0.1, 1.0, 10.0])),
                                   StudentT(3, 5.0), Laplace(3)])
def test_second_moment_terms_have_mean_zero_under_the_model(model):
    # Stein's identity for the linear test functions: the mean of xi (the sum of the
    # kernel's rows over N) is zero under the model, every entry within 4 standard errors
    from skstein.gof._maxsksd import _second_moment_parts

    X = model.rvs(100000, random_state=3)
    S = model.grad_logpdf(X)
    Y, _, c0, _ = _second_moment_parts(X, S)
    entries = (S[:, :, None] * Y[:, None, :]).reshape(X.shape[0], -1) \
        + c0 * np.eye(3).reshape(1, -1)
    se = entries.std(axis=0) / np.sqrt(X.shape[0])
    assert np.all(np.abs(entries.mean(axis=0)) < 4 * se)


def test_pooled_second_moments_find_a_variance_change():
    # variance 1.6 along a random direction in 20-D, n = 600: the whole sample's second
    # moments reject at their level alpha / 4 in every one of 5 trials
    test = MaxSKSDTest(Gaussian(np.zeros(20)), n_bootstrap=200)
    for seed in range(5):
        X, _ = _variance_along(600, 20, 40 + seed)
        part = test._pooled_second(X, -X, np.random.default_rng(seed), 0.0125, "multinomial")
        assert part.reject and part.labels == ("second moments",)


@pytest.mark.slow
@pytest.mark.parametrize("bootstrap", ["multinomial", "rademacher"])
def test_pooled_second_moment_calibration(bootstrap):
    # the whole sample's second moments alone, 200 null trials of a rotated Gaussian
    # model with variances 0.1 to 10 (D = 5, N = 150): rate <= alpha + 3 sd at 0.05
    from scipy.stats import ortho_group

    d, n, R = 5, 150, 200
    Q = ortho_group.rvs(d, random_state=0)
    model = Gaussian(np.full(d, 2.0), Q @ np.diag(np.logspace(-1, 1, d)) @ Q.T)
    test = MaxSKSDTest(model, n_bootstrap=200, bootstrap=bootstrap)
    rejects = 0
    for seed in range(R):
        X = model.rvs(n, random_state=500 + seed)
        part = test._pooled_second(X, model.grad_logpdf(X), np.random.default_rng(seed), 0.05,
                                   bootstrap)
        rejects += part.reject
    assert rejects / R <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / R)


@pytest.mark.parametrize("kw", [dict(cv=2, moment="pooled"), dict(moment=True),
                                dict(cv=3, whiten="aggregate")])
def test_the_score_is_evaluated_once(kw):
    # a test that learns on its own input evaluates the model's score once, on the
    # whole sample, and shares the rows between the search, the moment candidates, the
    # folds and the pooled fourth moment: same numbers as evaluating each part apart
    model = Gaussian(np.zeros(4))
    X, _ = _rotated_laplace(120, 4, 5)
    calls = []

    def score(Y):
        calls.append(Y.shape[0])
        return model.grad_logpdf(Y)

    counted = MaxSKSDTest(score, n_bootstrap=50, max_iter=3, random_state=1, **kw)
    res = counted.test(X)
    assert calls == [120]
    calls.clear()
    counted.discrepancy(X)
    assert calls == [120]
    same = MaxSKSDTest(model, n_bootstrap=50, max_iter=3, random_state=1, **kw).test(X)
    assert same.pvalue == res.pvalue
    np.testing.assert_allclose(same.statistics, res.statistics, rtol=1e-12)


def test_crossed_fourth_moment_terms():
    # each half's terms about the other half's mean, in the coordinates that whiten
    # the other half (its Ledoit-Wolf whitening), the halves those of crossfit_folds
    from skstein.gof._maxsksd import crossed_fourth_moment_terms, crossfit_folds
    from skstein.kernels import whitening

    rng = np.random.default_rng(2)
    X = rng.standard_normal((31, 4)) * [0.3, 1.0, 2.0, 5.0] + 1.0
    S = -X + 0.1
    got = crossed_fourth_moment_terms(X, S, np.random.default_rng(9))
    a, b = crossfit_folds(31, 2, np.random.default_rng(9))
    want = np.empty(31)
    for part, other in ((a, b), (b, a)):
        A, B = whitening(X[other])
        Y = (X[part] - X[other].mean(axis=0)) @ A
        ref = np.sum(((X[other] - X[other].mean(axis=0)) @ A) ** 2, axis=1)
        m, w = ref.mean(), np.sqrt(2.0 * np.log(len(ref))) * ref.std(ddof=1)
        r2 = np.sum(Y * Y, axis=1)
        th = np.tanh((r2 - m) / w)
        want[part] = ((m + w * th) * (np.sum((S[part] @ B) * Y, axis=1) + 4.0)
                      + 2.0 * r2 * (1.0 - th * th))
    np.testing.assert_allclose(got, want, rtol=1e-10)
    # Stein's identity in the whitened coordinates: mean zero under a model with
    # unequal variances (a large sample, about a reference drawn apart)
    from skstein.distributions import Gaussian

    model = Gaussian(np.zeros(3), np.diag([0.1, 1.0, 10.0]))
    big = model.rvs(200000, random_state=1)
    ref = model.rvs(500, random_state=2)
    from skstein.gof._maxsksd import whitened_fourth_moment_terms

    xi = whitened_fourth_moment_terms(big, model.grad_logpdf(big), ref)
    assert abs(xi.mean()) < 4 * xi.std() / np.sqrt(big.shape[0])


def test_moment_finds_a_variance_change_the_slices_dilute():
    # variance 1.6 along a random direction in 20-D, n = 600: the moment statistic
    # rejects in all of 5 trials (2-fold cross-fitting)
    for seed in range(5):
        X, _ = _variance_along(600, 20, 10 + seed)
        test = MaxSKSDTest(Gaussian(np.zeros(20)), variant="rg", moment=True, cv=2,
                           n_bootstrap=200, random_state=seed)
        assert test.test(X).reject


@pytest.mark.slow
@pytest.mark.parametrize("moment,offset", [(True, 200), ("pooled", 300)])
def test_moment_calibration(moment, offset):
    # 100 null trials with a Student-t model (skewed, heavy-tailed Stein terms), the
    # fourth moment in each fold (True) or once on the whole sample ("pooled"):
    # rate <= alpha + 3 sd
    from skstein.distributions import StudentT

    d, n, R = 5, 200, 100
    model = StudentT(d, 5.0)
    rates = []
    for seed in range(R):
        X = model.rvs(n, random_state=offset + seed)
        test = MaxSKSDTest(model, variant="rg", n_slices=2, moment=moment, cv=2,
                           n_bootstrap=100, max_iter=5, random_state=seed)
        rates.append(test.test(X).reject)
    assert np.mean(rates) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / R)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["correlated-2d", "student-t3"])
def test_pooled_fourth_moment_level_small_sample_and_heavy_tails(case):
    # the default test's fourth moment alone, at its level alpha / 4, over 300 null
    # trials: a correlated 2-D Gaussian at N = 100, and Student-t(3) coordinates (terms
    # of the cubic without a variance) at D = 5, N = 200. The cubic test function
    # rejected these in 0.049 and 0.048 of 1000 trials; the saturated one holds
    # rate <= alpha / 4 + 3 sd
    if case == "correlated-2d":
        model, n = Gaussian(np.array([1.0, -2.0]), np.array([[1.0, 0.8], [0.8, 1.0]])), 100
    else:
        model, n = StudentT(5, 3.0), 200
    R, level = 300, 0.05 / 4
    rejected = []
    for seed in range(R):
        X = model.rvs(n, random_state=500 + seed)
        res = MaxSKSDTest(model, n_bootstrap=200, max_iter=5, random_state=seed).test(X)
        assert res.labels[-1] == "all: fourth moment" and res.pvalue_threshold[-1] == level
        rejected.append(res.rejected[-1])
    assert np.mean(rejected) <= level + 3 * math.sqrt(level * (1 - level) / R)


def test_pooled_moments_on_model_samples_in_low_dimensions():
    # one dimension below 500 points, a model with exact samples: the whole sample's
    # second and fourth moments are calibrated on samples of the model
    rng = np.random.default_rng(31)
    model = Gaussian(np.zeros(1))
    X = rng.standard_normal((40, 1)) * 1.3
    kw = dict(n_bootstrap=99, max_iter=5, random_state=2)
    mc = MaxSKSDTest(model, **kw).test(X)
    assert mc.method.endswith("calibrated on samples of the model)")
    wild = MaxSKSDTest(model, bootstrap="rademacher", **kw).test(X)
    assert "calibrated" not in wild.method
    # the same statistics (the same streams); p-values on the grid of 99 model samples
    np.testing.assert_allclose(mc.statistics[-2:], wild.statistics[-2:], rtol=1e-12)
    grid = mc.pvalues[-2:] * 100
    np.testing.assert_allclose(grid, np.round(grid), atol=1e-9)
    assert mc.pvalues[0] == wild.pvalues[0]  # the learned part keeps its bootstrap
    again = MaxSKSDTest(model, **kw).test(X)
    np.testing.assert_array_equal(again.pvalues, mc.pvalues)
    # not where the rule does not hold: two dimensions, or a score without samples
    X2 = rng.standard_normal((40, 2))
    assert "calibrated" not in MaxSKSDTest(Gaussian(np.zeros(2)), **kw).test(X2).method
    assert "calibrated" not in MaxSKSDTest(lambda Z: -Z, **kw).test(X).method


@pytest.mark.slow
def test_pooled_moments_level_in_one_dimension():
    # the default test in one dimension at N = 30: its whole-sample moments' bootstraps
    # rejected 0.11 of 600 true samples; calibrated on model samples, 300 trials
    g = Gaussian(np.zeros(1))
    R = 300
    rejected = [MaxSKSDTest(g, n_bootstrap=99, max_iter=5, random_state=seed).test(
        g.rvs(30, random_state=900 + seed)).reject for seed in range(R)]
    assert np.mean(rejected) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / R)


@pytest.mark.parametrize("kw, n, kind", [
    (dict(), 149, "rademacher"),  # 119 points not learned on
    (dict(), 150, "multinomial"),  # 120
    (dict(train_size=50), 169, "rademacher"),
    (dict(train_size=50), 170, "multinomial"),
    (dict(cv=2), 239, "rademacher"),  # folds of 119 and 120: the smaller counts
    (dict(cv=2), 240, "multinomial"),
    (dict(bootstrap="multinomial"), 60, "multinomial"),
    (dict(bootstrap="rademacher"), 1000, "rademacher"),
])
def test_auto_bootstrap_rule(kw, n, kind):
    assert MaxSKSDTest(Gaussian(np.zeros(2)), **kw)._bootstrap_kind(n) == kind


def test_auto_bootstrap_of_a_fitted_test_counts_its_input():
    model = Gaussian(np.zeros(2))
    X = model.rvs(300, random_state=0)
    test = MaxSKSDTest(model, max_iter=2, n_bootstrap=50, random_state=0).fit(X[:100])
    assert test._bootstrap_kind(119) == "rademacher"
    assert test._bootstrap_kind(120) == "multinomial"
    assert test.test(X[100:219]).bootstrap == "rademacher"


@pytest.mark.parametrize("n, kind", [(100, "rademacher"), (160, "multinomial")])
def test_auto_bootstrap_draws_what_it_names(n, kind):
    # "auto" is the named bootstrap, with the same draws: the same p-values, parts and all
    model = Gaussian(np.zeros(3))
    X = model.rvs(n, random_state=1) * 1.2
    auto = MaxSKSDTest(model, n_bootstrap=100, max_iter=3, random_state=2).test(X)
    named = MaxSKSDTest(model, n_bootstrap=100, max_iter=3, random_state=2,
                        bootstrap=kind).test(X)
    assert auto.bootstrap == kind and kind in auto.method
    np.testing.assert_array_equal(auto.pvalues, named.pvalues)
    assert auto.pvalue == named.pvalue


@pytest.mark.parametrize("bandwidth", ["aggregate", "median"])
def test_ksd_auto_bootstrap_follows_the_sample_size(bandwidth):
    # KSDTest's default draws Rademacher weights below AUTO_RADEMACHER_BELOW points,
    # multinomial ones from there on: the same numbers as the named kind
    from skstein import KSDTest
    from skstein.distributions import Categorical
    model = Gaussian(np.zeros(2))
    for n, kind in ((119, "rademacher"), (120, "multinomial")):
        X = model.rvs(n, random_state=n)
        auto = KSDTest(model, bandwidth=bandwidth, n_bootstrap=100, random_state=0).test(X)
        named = KSDTest(model, bandwidth=bandwidth, bootstrap=kind, n_bootstrap=100,
                        random_state=0).test(X)
        assert auto.bootstrap == kind and kind in auto.method and auto == named
    categorical = Categorical(np.full((3, 4), 0.25))
    Xd = np.random.default_rng(0).integers(0, 4, size=(60, 3))
    auto = KSDTest(categorical, bandwidth=bandwidth, n_bootstrap=100, random_state=0).test(Xd)
    named = KSDTest(categorical, bandwidth=bandwidth, bootstrap="rademacher", n_bootstrap=100,
                    random_state=0).test(Xd)
    assert auto.bootstrap == "rademacher" and auto == named
    with pytest.raises(ValueError, match="bootstrap"):
        KSDTest(model, bootstrap="wild").test(X)


@pytest.mark.slow
def test_default_level_at_small_n_in_two_dimensions():
    # the default test (Rademacher draws below 150 points) on a correlated 2-D Gaussian
    # at N = 80, 400 null trials: rate <= alpha + 3 sd. With the multinomial draws it
    # rejected 0.065 of 3000 trials (and 0.073 of 1000 others)
    model = Gaussian(np.array([1.0, -2.0]), np.array([[1.0, 0.8], [0.8, 1.0]]))
    R, rejected = 400, 0
    for seed in range(R):
        X = model.rvs(80, random_state=900 + seed)
        res = MaxSKSDTest(model, n_bootstrap=200, random_state=seed).test(X)
        assert res.bootstrap == "rademacher"
        rejected += res.reject
    assert rejected / R <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / R)
