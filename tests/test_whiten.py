"""KSD and maxSKSD tests in whitened coordinates: change of variables, level, power, errors."""

import numpy as np
import pytest
from scipy.stats import special_ortho_group

from conftest import std_normal_score
from skstein import KSDTest, MaxSKSDTest, PolynomialKSDTest, RelativeKSDTest, rank_samples
from skstein.distributions import Categorical, Gaussian, GaussianMixture
from skstein.experiments import rejection_rate
from skstein.discrepancy import polynomial_coordinates
from skstein.kernels import ledoit_wolf_covariance, whitening


def _within_3_sigma(rate, alpha, trials):
    return abs(rate - alpha) <= 3 * np.sqrt(alpha * (1 - alpha) / trials)


def _anisotropic(dim, seed=3):
    """A rotated Gaussian with variances from 0.1 to 10, its rotation and variances."""
    R = special_ortho_group.rvs(dim, random_state=seed)
    var = np.logspace(-1, 1, dim)
    return Gaussian(np.zeros(dim), R @ np.diag(var) @ R.T), R, var


def test_whitening_maps_samples_and_scores(rng):
    model, _, _ = _anisotropic(4)
    X = model.rvs(2000, random_state=rng)
    A, B = whitening(X)
    np.testing.assert_allclose(A @ B.T, np.eye(4), atol=1e-12)
    # close to unit covariance (Ledoit-Wolf shrinks a little at n = 2000, d = 4)
    eig = np.linalg.eigvalsh(np.cov((X @ A).T))
    assert 0.8 < eig.min() and eig.max() < 1.2, eig
    # the mapped scores are the scores of the transformed model N(0, A^T C A)
    Y = X @ A
    cov_y = A.T @ model.cov @ A
    np.testing.assert_allclose(model.grad_logpdf(X) @ B, -np.linalg.solve(cov_y, Y.T).T,
                               rtol=1e-8, atol=1e-8)


def _wide_scales(dim, n, seed):
    """Rows of a rotated Gaussian with variances from e^-3.5 to e^3.5, and its covariance."""
    rng = np.random.default_rng(seed)
    R = special_ortho_group.rvs(dim, random_state=rng)
    var = np.exp(np.linspace(-3.5, 3.5, dim))
    return rng.standard_normal((n, dim)) * np.sqrt(var) @ R.T, R @ np.diag(var) @ R.T


def test_held_out_covariance_whitens_scales_that_differ_by_orders_of_magnitude():
    X, cov = _wide_scales(10, 300, 0)
    # Ledoit-Wolf adds a share of the mean eigenvalue, which swamps the smallest ones
    eig_lw = np.linalg.eigvalsh(np.cov((X @ whitening(X)[0]).T))
    assert eig_lw.min() < 0.8
    for covariance in ("held-out", "sample"):
        A, B = whitening(X, covariance=covariance)
        np.testing.assert_allclose(A @ B.T, np.eye(10), atol=1e-10)
        # the sample covariance: the whitened rows have exactly unit covariance
        np.testing.assert_allclose(np.cov((X @ A).T, bias=True), np.eye(10), atol=1e-10)
        # and the model, mapped, is close to white: its covariance A^T C A
        eig = np.linalg.eigvalsh(A.T @ cov @ A)
        assert 0.6 < eig.min() and eig.max() < 1.5, eig


@pytest.mark.parametrize("seed", range(6))
def test_held_out_choice_is_the_slow_obvious_one(seed):
    # the summed held-out Gaussian log-likelihoods, from scipy's densities under the
    # two covariance matrices of each training fold
    from scipy.stats import multivariate_normal
    from skstein.kernels import HELD_OUT_FOLDS, _sample_predicts_better
    rng = np.random.default_rng(seed)
    d = int(rng.integers(2, 12))
    X = rng.standard_normal((int(rng.integers(3 * d, 200)), d))
    X = X * np.exp(rng.uniform(-3.0, 3.0, d) * seed / 5) @ special_ortho_group.rvs(
        d, random_state=rng)
    folds = np.arange(X.shape[0]) % HELD_OUT_FOLDS
    total = np.zeros(2)
    for f in range(HELD_OUT_FOLDS):
        train, test = X[folds != f], X[folds == f]
        for k, C in enumerate((ledoit_wolf_covariance(train), np.cov(train.T, bias=True))):
            total[k] += multivariate_normal(train.mean(axis=0), C).logpdf(test).sum()
    assert abs(total[1] - total[0]) > 1e-6 * abs(total).max()  # no near-tie
    assert _sample_predicts_better(X) == (total[1] > total[0])


@pytest.mark.parametrize("n, d", [(300, 10), (60, 20), (1000, 50), (40, 3)])
def test_held_out_covariance_keeps_ledoit_wolf_on_isotropic_samples(rng, n, d):
    X = rng.standard_normal((n, d))
    for a, b in zip(whitening(X, covariance="held-out"), whitening(X)):
        np.testing.assert_array_equal(a, b)


def test_held_out_covariance_falls_back_where_folds_are_too_small():
    # 12 rows in 10 columns: a training fold of 9 or 10 rows has a singular covariance
    X, _ = _wide_scales(10, 12, 1)
    for a, b in zip(whitening(X, covariance="held-out"), whitening(X)):
        np.testing.assert_array_equal(a, b)


def test_whitening_covariance_errors_name_the_argument(rng):
    X = rng.standard_normal((20, 3))
    with pytest.raises(ValueError, match="covariance must be one of"):
        whitening(X, covariance="shrunk")
    with pytest.raises(ValueError, match="covariance='sample' needs more rows than columns"):
        whitening(X[:3], covariance="sample")


@pytest.mark.parametrize("n, d", [(5, 1), (2, 3), (10, 3), (200, 5), (50, 100), (7, 7)])
def test_ledoit_wolf_covariance_is_sklearns(rng, n, d):
    from sklearn.covariance import ledoit_wolf

    X = rng.standard_normal((n, d)) @ rng.standard_normal((d, d)) + 3.0
    C = ledoit_wolf_covariance(X)
    np.testing.assert_allclose(C, ledoit_wolf(X)[0], rtol=1e-12, atol=1e-14 * np.abs(C).max())
    # no shrinkage where the sample covariance is a multiple of the identity (delta = 0)
    signs = np.r_[np.eye(3), -np.eye(3)]
    np.testing.assert_array_equal(ledoit_wolf_covariance(signs), np.eye(3) / 3)
    np.testing.assert_allclose(ledoit_wolf(signs)[0], np.eye(3) / 3, atol=1e-15)


def test_whitening_rejects_coincident_samples():
    with pytest.raises(ValueError, match="coincide"):
        whitening(np.ones((10, 3)))
    # distinct rows whose covariance underflows are not called coincident
    X = np.random.default_rng(0).standard_normal((10, 3)) * 1e-200
    with pytest.raises(ValueError, match="covariance of X underflows float64"):
        whitening(X)


@pytest.mark.parametrize("bandwidth", ["median", "aggregate", 0.7])
def test_whitened_test_is_the_plain_test_on_whitened_coordinates(rng, bandwidth):
    model, _, _ = _anisotropic(3)
    X = model.rvs(150, random_state=rng) + 0.3
    A, B = whitening(X, "held-out")  # the KSD test's covariance
    S = model.grad_logpdf(X)
    white = KSDTest(model, bandwidth=bandwidth, whiten=True, random_state=1).test(X)
    plain = KSDTest(lambda Y: S @ B, bandwidth=bandwidth, random_state=1).test(X @ A)
    assert white.statistic == pytest.approx(plain.statistic, rel=1e-10)
    assert white.pvalue == plain.pvalue
    np.testing.assert_allclose(white.null_distribution, plain.null_distribution, rtol=1e-9,
                               atol=1e-14)
    assert "whitened" in white.method


def test_aggregate_geometries_share_one_bootstrap(rng):
    model, _, _ = _anisotropic(3)
    X = model.rvs(200, random_state=rng) @ np.diag([1.3, 1.0, 0.8])
    kw = dict(bandwidth="median", random_state=5)
    both = KSDTest(model, whiten="aggregate", **kw).test(X)
    euclid = KSDTest(model, whiten=False, **kw).test(X)
    white = KSDTest(model, whiten=True, **kw).test(X)
    assert both.labels == ("euclidean", "whitened")
    np.testing.assert_allclose(both.statistics, [euclid.statistic, white.statistic], rtol=1e-12)
    # each geometry's own p-value is that of its plain test: the same bootstrap draws
    np.testing.assert_array_equal(both.pvalues, [euclid.pvalue, white.pvalue])
    assert both.pvalue >= min(euclid.pvalue, white.pvalue)  # the price of the correction
    assert "2 geometries x 1 bandwidth" in both.method
    # fitted: the whitening of the fitted data is kept and reused
    fitted = KSDTest(model, whiten="aggregate", n_bandwidths=4, random_state=0).fit(X)
    assert fitted.geometries_ == ("euclidean",) * 4 + ("whitened",) * 4
    assert fitted.bandwidth_.shape == (8,)
    np.testing.assert_allclose(fitted.whitening_[0], whitening(X, "held-out")[0])
    res = fitted.test(X)
    assert res.pvalue == KSDTest(model, whiten="aggregate", n_bandwidths=4,
                                 random_state=0).test(X).pvalue
    np.testing.assert_allclose(fitted.discrepancy(X), res.statistics, rtol=1e-12)
    # the memory budget changes nothing
    small = KSDTest(model, whiten="aggregate", n_bandwidths=4, random_state=0,
                    max_memory=8 * 200 * 20).test(X)
    assert small.pvalue == res.pvalue
    np.testing.assert_allclose(small.statistics, res.statistics, rtol=1e-10)


def test_whiten_validation_names_the_argument(rng):
    X = rng.standard_normal((40, 2))
    for bad in ("yes", 1, None, "both"):
        with pytest.raises(ValueError, match="whiten"):
            KSDTest(std_normal_score, whiten=bad).test(X)
    model = Categorical(np.full((3, 4), 0.25))
    Xd = rng.integers(0, 4, size=(50, 3))
    with pytest.raises(ValueError, match="whiten"):
        KSDTest(model, whiten=True).test(Xd)


def test_polynomial_test_whitens_with_the_held_out_covariance():
    # the polynomial kernel's coordinates: the held-out whitening (here the sample
    # covariance, which Ledoit-Wolf's is far from), scaled to a unit mean squared radius
    X, cov = _wide_scales(10, 300, 0)
    A = whitening(X, "held-out")[0]
    frame = polynomial_coordinates(X, True, "held-out")
    for whiten in (True, "auto"):
        test = PolynomialKSDTest(Gaussian(np.zeros(10), cov), whiten=whiten).fit(X)
        assert test.geometry_ == "whitened"
        scale = np.sum(test.transform_ * A) / np.sum(A * A)
        np.testing.assert_allclose(test.transform_, scale * A, rtol=1e-10, atol=0)
        for a, b in zip((test.center_, test.transform_, test.score_transform_,
                         test.saturation_), frame):
            np.testing.assert_array_equal(a, b)
    Y = (X - frame[0]) @ frame[1]
    np.testing.assert_allclose(np.cov(Y.T, bias=True) * 10, np.eye(10), atol=1e-10)
    # the function's default stays Ledoit-Wolf's, whose coordinates are not white here
    Y_lw = (X - frame[0]) @ polynomial_coordinates(X, True)[1]
    assert np.linalg.cond(np.cov(Y_lw.T)) > 3  # 4.35


def test_rank_samples_whitens_each_candidate_or_uses_the_fitted_whitening(rng):
    model = Gaussian(np.zeros(2), np.diag([100.0, 1.0]))
    good = rng.standard_normal((300, 2)) * [10.0, 1.0]
    shifted = rng.standard_normal((300, 2)) * [10.0, 1.0] + [8.0, 0.0]
    cands = {"good": good, "shifted": shifted}
    white = rank_samples(cands, KSDTest(model, bandwidth="median", whiten=True), random_state=0)
    assert white.names[0] == "good" and white.prob_best[0] > 0.95 and "whitened" in white.method
    fitted = KSDTest(model, bandwidth="median", whiten=True).fit(good)
    assert rank_samples(cands, fitted, random_state=0).names[0] == "good"
    with pytest.raises(ValueError, match="whiten"):
        rank_samples(cands, KSDTest(model, bandwidth="median", whiten="aggregate"))


def _mixture():
    means = np.array([[-2.0, -2.0, 0.0], [2.0, 2.0, 0.0], [2.0, -2.0, 0.0]])
    return GaussianMixture([0.3, 0.3, 0.4], means, np.full(3, 0.5), covariance_type="spherical")


NULL_CASES = {
    # a rotated Gaussian with variances 0.1 to 10, a 3-cluster mixture, a standard normal
    "anisotropic": lambda: (_anisotropic(5)[0],) * 2,
    "mixture": lambda: (_mixture(),) * 2,
    "normal": lambda: (Gaussian(np.zeros(4)),) * 2,
}


LEVEL_CASES = [(KSDTest, whiten, case, 12) for whiten in (True, "aggregate")
               for case in sorted(NULL_CASES)] + \
    [(MaxSKSDTest, "aggregate", case, 13) for case in ("anisotropic", "mixture")]


@pytest.mark.slow
@pytest.mark.parametrize("cls, whiten, case, seed", LEVEL_CASES)
def test_whitened_level(cls, whiten, case, seed):
    model, data = NULL_CASES[case]()
    trials, alpha = 200, 0.05
    test = cls(model, whiten=whiten, n_bootstrap=200)
    res = rejection_rate(test, data, 150, n_trials=trials, random_state=seed, n_jobs=1)
    assert _within_3_sigma(res.rate, alpha, trials), res.rate


@pytest.mark.slow
@pytest.mark.parametrize("cls", [KSDTest, MaxSKSDTest])
def test_aggregated_geometries_find_a_shift_along_the_widest_axis(cls):
    # the data are shifted by half a standard deviation along the axis of largest
    # variance. KSD: the Euclidean kernel sees the shift at the scale of the whole
    # sample, where the narrow axes dominate the distances; the whitened one sees it at
    # once. maxSKSD: learned in the data's coordinates, the directions follow the
    # narrow axes, whose scores are largest; learned whitened, they find the shift
    model, R, var = _anisotropic(5)
    shifted = Gaussian(0.5 * np.sqrt(var[-1]) * R[:, -1], model.cov)
    kw = dict(n_trials=30, random_state=6, n_jobs=1)
    euclid = rejection_rate(cls(model, whiten=False, n_bootstrap=300), shifted, 300, **kw)
    both = rejection_rate(cls(model, whiten="aggregate", n_bootstrap=300), shifted, 300, **kw)
    # stated floors (maxSKSD-g measured 0.085 and 0.995 over 200 trials of other seeds):
    # the aggregated geometries (KSDTest's default here) reject in at least 90% of 30
    # trials, the data's coordinates alone in at most 30%
    assert euclid.rate <= 0.3 and both.rate >= 0.9, (euclid.rate, both.rate)


# --- MaxSKSDTest: directions learned in whitened coordinates -------------------------


@pytest.mark.parametrize("variant", ["g", "rg"])
def test_whitened_maxsksd_is_the_plain_test_on_whitened_coordinates(rng, variant):
    model, _, _ = _anisotropic(4)
    X = model.rvs(300, random_state=rng) + 0.4
    train, held_out = X[:120], X[120:]
    A, B = whitening(train, "held-out")  # the maxSKSD test's covariance
    kw = dict(variant=variant, n_slices=2 if variant == "rg" else None, moment=False,
              random_state=3)
    white = MaxSKSDTest(model, whiten=True, **kw).fit(train)
    plain = MaxSKSDTest(lambda Y: model.grad_logpdf(Y @ B.T) @ B, **kw).fit(train @ A)
    np.testing.assert_allclose(white.whitening_[0], A)
    assert [c[0] for c in white.candidates_] == [f"{c[0]}, whitened" for c in plain.candidates_]
    # the mapped directions are unit vectors; the slices are B r' for unit r'
    np.testing.assert_allclose(np.linalg.norm(white.directions_, axis=1), 1.0)
    np.testing.assert_allclose(white.slices_ @ np.linalg.inv(B).T, plain.slices_, atol=1e-12)
    a, b = white.test(held_out), plain.test(held_out @ A)
    np.testing.assert_allclose(a.statistics, b.statistics, rtol=1e-10)
    assert abs(a.pvalue - b.pvalue) <= 2 / 1001
    np.testing.assert_allclose(white.discrepancy(held_out), plain.discrepancy(held_out @ A),
                               rtol=1e-10)


def test_maxsksd_aggregate_geometries(rng):
    model, _, _ = _anisotropic(4)
    X = model.rvs(300, random_state=rng)
    kw = dict(moment=False, random_state=2)
    euclid = MaxSKSDTest(model, whiten=False, **kw).fit(X[:100])
    white = MaxSKSDTest(model, whiten=True, **kw).fit(X[:100])
    both = MaxSKSDTest(model, whiten="aggregate", **kw).fit(X[:100])
    names = [c[0] for c in both.candidates_]
    assert names == [c[0] for c in euclid.candidates_] + [c[0] for c in white.candidates_]
    # the Euclidean search comes first with the same random stream: its candidates and
    # the fitted directions are those of the plain test
    np.testing.assert_array_equal(both.directions_, euclid.directions_)
    for c, e in zip(both.candidates_, euclid.candidates_):
        np.testing.assert_array_equal(c[1], e[1])
    res = both.test(X[100:])
    assert res.labels == tuple(names) and len(res.statistics) == len(names)
    # unfitted: the split's training part is whitened, the rest tested
    res = MaxSKSDTest(model, whiten="aggregate", cv=None, **kw).test(X)
    assert any(label.endswith("whitened") for label in res.labels)


def test_maxsksd_whitened_stream(rng):
    model, _, _ = _anisotropic(3)
    batches = [model.rvs(60, random_state=k) for k in range(4)]
    test = MaxSKSDTest(model, variant="rg", n_slices=2, whiten=True, random_state=0)
    for batch in batches:
        test.partial_fit(batch)
    np.testing.assert_allclose(test.whitening_[0], whitening(batches[0], "held-out")[0])
    assert test.candidates_[0][0] == "stream, whitened" and test.n_iter_ == 4
    assert 0.0 <= test.test(model.rvs(200, random_state=9)).pvalue <= 1.0
    # a fitted whitened test streams on from its directions, in its whitening
    fitted = MaxSKSDTest(model, whiten=True, learning_rate=1e-12, random_state=0)
    fitted.fit(batches[0])
    G = fitted.directions_.copy()
    fitted.partial_fit(batches[1])
    np.testing.assert_allclose(fitted.directions_, G, atol=1e-9)
    with pytest.raises(ValueError, match="whiten"):
        MaxSKSDTest(model, whiten="aggregate").partial_fit(batches[0])


def test_maxsksd_whiten_validation_names_the_argument(rng):
    X = rng.standard_normal((40, 2))
    for bad in ("yes", 1, None):
        with pytest.raises(ValueError, match="whiten"):
            MaxSKSDTest(std_normal_score, whiten=bad).test(X)


# --- RelativeKSDTest: a kernel in whitened coordinates, shared by both models --------


def _two_models(dim=4):
    model, R, var = _anisotropic(dim)
    p = Gaussian(0.4 * np.sqrt(var[-1]) * R[:, -1], model.cov)
    return p, model


@pytest.mark.parametrize("bandwidth", ["median", "aggregate"])
def test_whitened_relative_ksd_is_the_plain_test_on_whitened_coordinates(rng, bandwidth):
    p, q = _two_models()
    X = q.rvs(200, random_state=rng)
    A, B = whitening(X)

    def mapped(model):
        return lambda Y: model.grad_logpdf(Y @ B.T) @ B

    kw = dict(bandwidth=bandwidth, random_state=4)
    white = RelativeKSDTest(p, q, whiten=True, **kw).test(X)
    plain = RelativeKSDTest(mapped(p), mapped(q), **kw).test(X @ A)
    assert white.statistic == pytest.approx(plain.statistic, rel=1e-10)
    assert white.zscore == pytest.approx(plain.zscore, rel=1e-9)
    assert white.pvalue == pytest.approx(plain.pvalue, rel=1e-9)
    assert "whitened" in white.method


def test_relative_ksd_aggregates_both_geometries(rng):
    p, q = _two_models()
    X = q.rvs(200, random_state=rng)
    kw = dict(n_bandwidths=4, random_state=4)
    both = RelativeKSDTest(p, q, whiten="aggregate", **kw).test(X)
    euclid = RelativeKSDTest(p, q, whiten=False, **kw).test(X)
    white = RelativeKSDTest(p, q, whiten=True, **kw).test(X)
    assert both.labels == ("euclidean",) * 4 + ("whitened",) * 4
    np.testing.assert_allclose(both.zscores, np.r_[euclid.zscores, white.zscores], rtol=1e-10)
    np.testing.assert_allclose(both.bandwidths, np.r_[euclid.bandwidths, white.bandwidths])
    assert "2 geometries" in both.method
    fitted = RelativeKSDTest(p, q, whiten="aggregate", **kw).fit(X)
    assert fitted.geometries_ == both.labels
    assert fitted.test(X) == both


def test_whitened_relative_maxsksd_learns_in_whitened_coordinates(rng):
    p, q = _two_models()
    X = q.rvs(300, random_state=rng)
    train, held_out = X[:150], X[150:]
    A, B = whitening(train)

    def mapped(model):
        return lambda Y: model.grad_logpdf(Y @ B.T) @ B

    kw = dict(discrepancy="maxsksd", bandwidth="median", random_state=2)
    white = RelativeKSDTest(p, q, whiten=True, **kw).fit(train)
    plain = RelativeKSDTest(mapped(p), mapped(q), **kw).fit(train @ A)
    a, b = white.test(held_out), plain.test(held_out @ A)
    assert a.zscore == pytest.approx(b.zscore, rel=1e-9)
    assert "whitened" in a.method
    # unfitted: each fold's training half is whitened
    res = RelativeKSDTest(p, q, whiten=True, discrepancy="maxsksd", random_state=0).test(X)
    assert np.isfinite(res.zscore) and "whitened" in res.method


def test_relative_whiten_validation_names_the_argument(rng):
    p, q = _two_models(2)
    X = q.rvs(60, random_state=rng)
    for bad in ("yes", 1, None):
        with pytest.raises(ValueError, match="whiten"):
            RelativeKSDTest(p, q, whiten=bad).test(X)
    with pytest.raises(ValueError, match="whiten"):
        RelativeKSDTest(p, q, whiten="aggregate", discrepancy="maxsksd").test(X)
    cat = Categorical(np.full((3, 4), 0.25))
    with pytest.raises(ValueError, match="whiten"):
        RelativeKSDTest(cat, cat, whiten=True).test(rng.integers(0, 4, size=(50, 3)))


def test_relative_auto_whitening_follows_the_data(rng):
    p, q = _two_models()
    X = q.rvs(200, random_state=rng)
    kw = dict(n_bandwidths=4, random_state=4)
    # anisotropic data: the KSD's own collection in both geometries, as "aggregate"
    auto = RelativeKSDTest(p, q, **kw)
    assert auto.test(X) == RelativeKSDTest(p, q, whiten="aggregate", **kw).test(X)
    assert "2 geometries" in auto.test(X).method
    assert auto.fit(X).whitening_ is not None and "whitened" in auto.geometries_
    # a single bandwidth stays in the data's units
    for bandwidth in ("median", 0.8):
        one = RelativeKSDTest(p, q, bandwidth=bandwidth, **kw).test(X)
        assert one == RelativeKSDTest(p, q, bandwidth=bandwidth, whiten=False, **kw).test(X)
    # the maxSKSD comparison: each model's directions learned in both coordinates,
    # those of the data's coordinates first (as whiten=False learns them)
    mkw = dict(discrepancy="maxsksd", random_state=2)
    res = RelativeKSDTest(p, q, **mkw).test(X)
    assert "whitened" in res.method and np.isfinite(res.zscore)
    fitted = RelativeKSDTest(p, q, **mkw).fit(X[:100])
    plain = RelativeKSDTest(p, q, whiten=False, **mkw).fit(X[:100])
    white = RelativeKSDTest(p, q, whiten=True, **mkw).fit(X[:100])
    assert fitted.whitening_ is not None
    for both, one, other in zip(fitted.directions_, plain.directions_, white.directions_):
        k = one[0].shape[0]
        assert both[0].shape[0] == k + other[0].shape[0]
        np.testing.assert_array_equal(both[0][:k], one[0])
        np.testing.assert_array_equal(both[1][:k], one[1])
        np.testing.assert_array_equal(both[2][:k], one[2])
    assert np.isfinite(fitted.test(X[100:]).zscore)
    # isotropic data: the data's coordinates, the same numbers as whiten=False
    iso, shifted = Gaussian(np.zeros(4)), Gaussian(np.full(4, 0.2))
    Z = rng.standard_normal((200, 4))
    for params in (kw, mkw):
        r = RelativeKSDTest(shifted, iso, **params).test(Z)
        assert r == RelativeKSDTest(shifted, iso, whiten=False, **params).test(Z)
        assert "whitened" not in r.method and "geometries" not in r.method
    # a discrete model takes "auto" as its own coordinates
    cat = Categorical(np.full((3, 4), 0.25))
    res = RelativeKSDTest(cat, Categorical(np.full((3, 4), 0.25)), random_state=0).test(
        rng.integers(0, 4, size=(50, 3)))
    assert res.degenerate or np.isfinite(res.zscore)


def test_whitening_condition_is_the_ledoit_wolf_condition_number(rng):
    from sklearn.covariance import ledoit_wolf

    from skstein.kernels import whitening_condition

    model, _, _ = _anisotropic(4)
    X = model.rvs(300, random_state=rng)
    w = np.linalg.eigvalsh(ledoit_wolf(X)[0])
    assert whitening_condition(whitening(X)) == pytest.approx(w[-1] / w[0], rel=1e-9)
    # isotropic samples stay below the threshold of whiten="auto"
    from skstein.kernels import AUTO_WHITEN_CONDITION
    assert whitening_condition(whitening(rng.standard_normal((100, 5)))) < \
        AUTO_WHITEN_CONDITION


def test_auto_whitening_is_the_plain_test_on_isotropic_data(rng):
    model = Gaussian(np.zeros(4))
    X = rng.standard_normal((150, 4)) * 1.1
    auto = KSDTest(model, n_bootstrap=200, random_state=2).test(X)
    plain = KSDTest(model, n_bootstrap=200, random_state=2, whiten=False).test(X)
    assert auto.statistic == plain.statistic and auto.pvalue == plain.pvalue
    assert auto.method == plain.method and "geometries" not in auto.method
    np.testing.assert_array_equal(auto.statistics, plain.statistics)
    fitted = KSDTest(model, n_bootstrap=200).fit(X)
    assert fitted.whitening_ is None and set(fitted.geometries_) == {"euclidean"}


def test_auto_whitening_aggregates_both_geometries_on_anisotropic_data(rng):
    model, _, _ = _anisotropic(4)
    X = model.rvs(150, random_state=rng)
    auto = KSDTest(model, n_bootstrap=200, random_state=2).test(X)
    both = KSDTest(model, n_bootstrap=200, random_state=2, whiten="aggregate").test(X)
    assert auto.statistic == both.statistic and auto.pvalue == both.pvalue
    assert auto.labels == both.labels and "2 geometries" in auto.method
    fitted = KSDTest(model, n_bootstrap=200).fit(X)
    assert fitted.geometries_ == both.labels and fitted.whitening_ is not None
    # a single bandwidth, or a collection the user gives, stays in the data's units
    for bandwidth in ("median", 0.8, [0.5, 1.0, 2.0]):
        one = KSDTest(model, bandwidth=bandwidth, n_bootstrap=200, random_state=2).test(X)
        plain = KSDTest(model, bandwidth=bandwidth, n_bootstrap=200, random_state=2,
                        whiten=False).test(X)
        assert one.pvalue == plain.pvalue and one.statistic == plain.statistic


def test_whiten_errors_name_auto():
    with pytest.raises(ValueError, match="'auto'"):
        KSDTest(Gaussian(np.zeros(2)), whiten="yes").fit(np.ones((5, 2)) * np.arange(5)[:, None])
    X = np.random.default_rng(0).integers(0, 3, size=(40, 2))
    res = KSDTest(Categorical(np.full((2, 3), 1 / 3)), n_bootstrap=100, random_state=0).test(X)
    assert np.isfinite(res.pvalue)
    with pytest.raises(ValueError, match="False or 'auto'"):
        KSDTest(Categorical(np.full((2, 3), 1 / 3)), whiten=True).test(X)


def test_maxsksd_auto_whitening_follows_the_training_sample(rng):
    kw = dict(n_bootstrap=200, random_state=2, max_iter=5)
    # isotropic training data: the search in the data's coordinates, the same numbers
    Z = rng.standard_normal((200, 4)) * 1.2
    auto = MaxSKSDTest(Gaussian(np.zeros(4)), **kw).test(Z)
    plain = MaxSKSDTest(Gaussian(np.zeros(4)), whiten=False, **kw).test(Z)
    assert auto.pvalue == plain.pvalue and auto.statistic == plain.statistic
    assert auto.method == plain.method
    # anisotropic: both searches, as whiten="aggregate"
    model, _, _ = _anisotropic(4)
    X = model.rvs(200, random_state=rng)
    auto = MaxSKSDTest(model, **kw).fit(X[:80])
    both = MaxSKSDTest(model, whiten="aggregate", **kw).fit(X[:80])
    assert [c[0] for c in auto.candidates_] == [c[0] for c in both.candidates_]
    assert any(c[0].endswith("whitened") for c in auto.candidates_)
    assert auto.test(X[80:]).pvalue == both.test(X[80:]).pvalue
    assert auto.whitening_ is not None
    # a float bandwidth stays in the data's units; partial_fit ascends in them
    one = MaxSKSDTest(model, bandwidth=0.8, **kw).fit(X[:80])
    assert not any(c[0].endswith("whitened") for c in one.candidates_)
    streamed = MaxSKSDTest(model, **kw).partial_fit(X[:80])
    assert streamed.whitening_ is None
    with pytest.raises(ValueError, match="'auto'"):
        MaxSKSDTest(model, whiten="no").fit(X)


def test_auto_whitening_skips_samples_flat_along_an_axis(rng):
    from skstein.kernels import auto_whitening

    # equal columns, or fewer rows than columns: no spread along some axis of the
    # covariance, whose scale there only the shrinkage sets
    x = rng.standard_normal((200, 1))
    assert auto_whitening(np.c_[x, x, 3 * rng.standard_normal((200, 1))]) is None
    assert auto_whitening(rng.standard_normal((5, 8)) * np.logspace(-1, 1, 8)) is None
    assert auto_whitening(rng.standard_normal((8, 8)) * np.logspace(-1, 1, 8)) is None
    assert auto_whitening(rng.standard_normal((9, 8)) * np.logspace(-1, 1, 8)) is not None
    model, _, _ = _anisotropic(4)
    white = auto_whitening(model.rvs(100, random_state=rng))
    assert white is not None
    res = KSDTest(Gaussian(np.zeros(2)), random_state=0).test(np.c_[x, x])
    assert "geometries" not in res.method and np.isfinite(res.statistic)


def test_whitening_does_not_magnify_rounding_along_flat_axes(rng):
    from sklearn.covariance import ledoit_wolf

    # two equal columns: along their difference the sample is flat; the Ledoit-Wolf
    # variance there is the shrinkage's alone (small), and is raised to the mean one
    x = rng.standard_normal((200, 1))
    X = np.c_[x, x, 2 * rng.standard_normal((200, 2))]
    A, B = whitening(X)
    np.testing.assert_allclose(A @ B.T, np.eye(4), atol=1e-12)
    w, V = np.linalg.eigh(ledoit_wolf(X)[0])
    assert w[0] < 0.1 * w.mean()
    Y = X @ A
    assert np.ptp(Y[:, 0]) < 1e-13 * np.ptp(Y)    # the flat axis, whitened
    # the other axes are whitened as before
    np.testing.assert_allclose(np.linalg.norm(A, axis=0)[1:], 1 / np.sqrt(w[1:]), rtol=1e-12)
    assert np.linalg.norm(A[:, 0]) == pytest.approx(1 / np.sqrt(w.mean()), rel=1e-12)
    # the whitened maxSKSD search meets rounding only along the flat axis, and gives
    # it the other directions' bandwidth: no bandwidth of rounding (1e-15, and a
    # statistic of 5e30, with the shrinkage's variance). The singular sample has a large
    # statistic: the search runs towards the flat axis, where the discrepancy grows
    # without bound, and a learned direction there keeps a small real spread (1e-14 to
    # 1e-3 on the seeds below, each run), above the rounding of the flat axis itself
    test = MaxSKSDTest(Gaussian(np.zeros(4)), whiten=True, moment=False, random_state=0)
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((200, 1))
        X = np.c_[x, x, 2 * np.random.default_rng(seed + 10).standard_normal((200, 2))]
        rounding = np.ptp((X @ whitening(X)[0])[:, 0])
        res = test.test(X)
        assert res.reject and np.isfinite(res.statistic)
        assert np.min(res.bandwidths) > rounding
