"""KSDTest in whitened coordinates: the change of variables, level, power, errors."""

import numpy as np
import pytest
from scipy.stats import special_ortho_group

from conftest import std_normal_score
from skstein import KSDTest, rank_samples
from skstein.distributions import Categorical, Gaussian, GaussianMixture
from skstein.experiments import rejection_rate
from skstein.kernels import whitening


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


def test_whitening_rejects_coincident_samples():
    with pytest.raises(ValueError, match="coincide"):
        whitening(np.ones((10, 3)))


@pytest.mark.parametrize("bandwidth", ["median", "aggregate", 0.7])
def test_whitened_test_is_the_plain_test_on_whitened_coordinates(rng, bandwidth):
    model, _, _ = _anisotropic(3)
    X = model.rvs(150, random_state=rng) + 0.3
    A, B = whitening(X)
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
    np.testing.assert_allclose(fitted.whitening_[0], whitening(X)[0])
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


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(NULL_CASES))
@pytest.mark.parametrize("whiten", [True, "aggregate"])
def test_whitened_ksd_level(case, whiten):
    model, data = NULL_CASES[case]()
    trials, alpha = 200, 0.05
    test = KSDTest(model, whiten=whiten, n_bootstrap=200)
    res = rejection_rate(test, data, 150, n_trials=trials, random_state=12, n_jobs=1)
    assert _within_3_sigma(res.rate, alpha, trials), res.rate


@pytest.mark.slow
def test_aggregated_geometries_find_a_shift_along_the_widest_axis():
    # the data are shifted by half a standard deviation along the axis of largest
    # variance: the Euclidean kernel sees the shift at the scale of the whole sample,
    # where the narrow axes dominate the distances; the whitened one sees it at once
    model, R, var = _anisotropic(5)
    shifted = Gaussian(0.5 * np.sqrt(var[-1]) * R[:, -1], model.cov)
    kw = dict(n_trials=30, random_state=6, n_jobs=1)
    euclid = rejection_rate(KSDTest(model, n_bootstrap=300), shifted, 300, **kw)
    both = rejection_rate(KSDTest(model, whiten="aggregate", n_bootstrap=300), shifted, 300,
                          **kw)
    # stated floors: the aggregated geometries reject in at least 90% of 30 trials, the
    # Euclidean aggregated test in at most 30%
    assert euclid.rate <= 0.3 and both.rate >= 0.9, (euclid.rate, both.rate)
