import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from skstein import MMDGOFTest, RelativeMMDTest
from skstein.distributions import Distribution, Gaussian, Laplace
from skstein.experiments import rejection_rate
from skstein.gof._mmd import _gram_zero_diag, mmd_permutation_null, mmd_power_criterion, mmd_u


def _ref_mmd(X, Y, h):
    k = lambda a, b: np.exp(-np.sum((a - b) ** 2) / (2 * h * h))  # noqa: E731
    n, m = len(X), len(Y)
    xx = sum(k(X[i], X[j]) for i in range(n) for j in range(n) if i != j) / (n * (n - 1))
    yy = sum(k(Y[i], Y[j]) for i in range(m) for j in range(m) if i != j) / (m * (m - 1))
    xy = sum(k(X[i], Y[j]) for i in range(n) for j in range(m)) / (n * m)
    return xx + yy - 2 * xy


def test_statistic_matches_double_loop():
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((30, 3)), rng.standard_normal((23, 3)) + 0.4
    assert mmd_u(X, Y, 1.3) == pytest.approx(_ref_mmd(X, Y, 1.3), rel=1e-12)


def test_permutation_draws_are_statistics_of_relabelled_samples():
    rng = np.random.default_rng(1)
    X, Y = rng.standard_normal((12, 2)), rng.standard_normal((9, 2))
    Z = np.vstack([X, Y])
    K0 = _gram_zero_diag(Z, 0.9)
    null = mmd_permutation_null(K0, 12, 50, np.random.default_rng(2), batch=7)
    # the same splits, recomputed from scratch
    labels = np.zeros(21)
    labels[:12] = 1
    E = np.random.default_rng(2).permuted(np.broadcast_to(labels, (50, 21)), axis=1)
    ref = [_ref_mmd(Z[e == 1], Z[e == 0], 0.9) for e in E]
    np.testing.assert_allclose(null, ref, rtol=1e-10, atol=1e-14)


def test_power_criterion_projection_variance():
    rng = np.random.default_rng(3)
    X, Y = rng.standard_normal((40, 2)) + 0.5, rng.standard_normal((30, 2))
    Z = np.vstack([X, Y])
    K0 = _gram_zero_diag(Z, 1.0)
    Kxx, Kyy, Kxy = K0[:40, :40], K0[40:, 40:], K0[:40, 40:]
    gx = np.array([2 * (Kxx[i].sum() / 39 - Kxy[i].mean()) for i in range(40)])
    gy = np.array([2 * (Kyy[j].sum() / 29 - Kxy[:, j].mean()) for j in range(30)])
    var = np.var(gx, ddof=1) + 40 / 30 * np.var(gy, ddof=1)
    assert mmd_power_criterion(K0, 40) == pytest.approx(
        _ref_mmd(X, Y, 1.0) / np.sqrt(var + 1e-10), rel=1e-10)


def test_result_and_model_samples():
    X = Laplace(2).rvs(200, random_state=0)
    test = MMDGOFTest(Gaussian(np.zeros(2)), n_model_samples=150, n_permutations=300,
                      random_state=0)
    res = test.test(X)
    assert res.bootstrap == "permutation" and res.n_bootstrap == 300
    assert res.n_samples == 200 and "150 model samples" in res.method
    assert res.reject == (res.pvalue <= res.alpha) == (res.statistic > res.threshold)
    assert test.discrepancy(X) == pytest.approx(res.statistic)
    # a model given as its samples
    Y = Gaussian(np.zeros(2)).rvs(180, random_state=5)
    res2 = MMDGOFTest(Y, bandwidth=1.0, random_state=0).test(X)
    assert res2.statistic == pytest.approx(mmd_u(X, Y, 1.0))


def test_same_seed_same_numbers_and_fit():
    X = Laplace(2).rvs(150, random_state=0)
    a = MMDGOFTest(Gaussian(np.zeros(2)), n_permutations=200, random_state=2).test(X)
    b = MMDGOFTest(Gaussian(np.zeros(2)), n_permutations=200, random_state=2).test(X)
    c = MMDGOFTest(Gaussian(np.zeros(2)), n_permutations=200, random_state=3).test(X)
    assert a.statistic == b.statistic and np.array_equal(a.null_distribution, b.null_distribution)
    assert a.statistic != c.statistic
    fitted = MMDGOFTest(Gaussian(np.zeros(2)), random_state=2).fit(X)
    assert fitted.bandwidth_ > 0 and fitted.n_features_in_ == 2
    assert np.isfinite(fitted.score(X))


@pytest.mark.slow
def test_null_calibration():
    R = 200
    p = Gaussian(np.zeros(3))
    rr = rejection_rate(MMDGOFTest(p, n_permutations=200), p, 100, n_trials=R,
                        random_state=41, n_jobs=1)
    assert abs(rr.rate - 0.05) <= 3 * np.sqrt(0.05 * 0.95 / R)


@pytest.mark.slow
def test_power_against_mean_shift():
    # N(0.4, I) data against N(0, I) in 2 dimensions, n = m = 300
    rr = rejection_rate(MMDGOFTest(Gaussian(np.zeros(2)), n_permutations=200),
                        Gaussian(np.full(2, 0.4)), 300, n_trials=20, random_state=42,
                        n_jobs=1)
    assert rr.rate >= 0.9


def test_validation():
    X = np.random.default_rng(0).standard_normal((50, 2))
    with pytest.raises(TypeError, match="rvs"):
        MMDGOFTest(lambda Y: -Y).test(X)

    class ScoreOnly(Distribution):  # inherits an rvs method, but has no sampler
        dim = 2

        def _grad_logpdf(self, Y):
            return -Y

    with pytest.raises(TypeError, match="model must be a distribution with rvs"):
        MMDGOFTest(ScoreOnly()).test(X)
    with pytest.raises(TypeError, match="model_q must be a distribution with rvs"):
        RelativeMMDTest(Gaussian(np.zeros(2)), ScoreOnly()).test(X)
    with pytest.raises(ValueError, match="n_permutations"):
        MMDGOFTest(Gaussian(np.zeros(2)), n_permutations=0).test(X)
    with pytest.raises(ValueError, match="n_model_samples"):
        MMDGOFTest(Gaussian(np.zeros(2)), n_model_samples=1).test(X)
    with pytest.raises(ValueError, match="bandwidth"):
        MMDGOFTest(Gaussian(np.zeros(2)), bandwidth=0.0).test(X)
    with pytest.raises(ValueError, match="features"):
        MMDGOFTest(Gaussian(np.zeros(3))).test(X)
    with pytest.raises(ValueError, match="features"):
        MMDGOFTest(np.zeros((10, 3))).test(X)
    with pytest.raises(ValueError):
        MMDGOFTest(Gaussian(np.zeros(2))).test(np.full((5, 2), np.inf))


def test_clone_and_grid_search():
    X = Laplace(2).rvs(300, random_state=1)
    test = MMDGOFTest(Gaussian(np.zeros(2)), random_state=0)
    assert clone(test).get_params()["n_permutations"] == 1000
    grid = GridSearchCV(test, {"bandwidth": [0.5, 1.0, 2.0]}, cv=3).fit(X)
    assert np.isfinite(grid.best_score_)


def test_overflowing_distances_are_refused_by_name():
    # found by tests/test_fuzz.py: a row of 1e200 made the Gram trick overflow (inf - inf)
    X = np.zeros((4, 6))
    X[0, 0] = 1e200
    test = MMDGOFTest(Gaussian(np.zeros(6)), bandwidth=1.0, n_permutations=20, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(ValueError, match="X: the squared distances"):
            test.test(X)
        with pytest.raises(ValueError, match="X and Y"):
            mmd_u(X, np.zeros((3, 6)), 1.0)
