import numpy as np
import pytest
from scipy.stats import norm
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from _reference import imq_parts, rbf_parts, stein_pair
from conftest import std_normal_score
from skstein import LinearKSDTest, linear_ksd
from skstein._numba import numba_threads
from skstein.distributions import Gaussian, Laplace
from skstein.experiments import rejection_rate
from skstein.gof._linear import linear_stein_terms
from skstein.kernels import IMQ, RBF


def _X(n=200, d=3, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d))


@pytest.mark.parametrize("kernel", ["rbf", "imq"])
@pytest.mark.parametrize("n", [40, 41])
def test_terms_match_pairwise_reference(kernel, n):
    X = _X(n, 3, seed=1) * 1.2 + 0.3
    S = -X
    h = 1.3
    parts = (lambda x, y: rbf_parts(x, y, h)) if kernel == "rbf" else \
        (lambda x, y: imq_parts(x, y, h, -0.5))
    m = n // 2  # the two halves; the last sample is dropped when n is odd
    ref = np.array([stein_pair(X[i], X[i + m], S[i], S[i + m], parts) for i in range(m)])
    kern = RBF(h) if kernel == "rbf" else IMQ(h)
    np.testing.assert_allclose(linear_stein_terms(X, S, kern), ref, rtol=1e-12, atol=1e-14)
    assert linear_ksd(X, std_normal_score, kernel=kernel, bandwidth=h) == \
        pytest.approx(ref.mean(), rel=1e-12)


def test_decision_from_normal_null():
    X = Laplace(2).rvs(1000, random_state=0)
    res = LinearKSDTest(Gaussian(np.zeros(2)), random_state=0).test(X)
    H = linear_stein_terms(X, -X, RBF(res.bandwidth))
    z = np.sqrt(500) * H.mean() / H.std(ddof=1)
    assert res.statistic == pytest.approx(H.mean(), rel=1e-12)
    assert res.pvalue == pytest.approx(norm.sf(z), rel=1e-9)
    assert res.threshold == pytest.approx(norm.isf(0.05) * H.std(ddof=1) / np.sqrt(500))
    assert res.reject == (res.pvalue <= 0.05) == (res.statistic > res.threshold)
    assert res.bootstrap == "normal" and res.n_bootstrap == 0 and res.null_distribution.size == 0
    assert res.n_samples == 1000


def test_threads_change_nothing():
    X = _X(5001, 4)
    a = linear_stein_terms(X, -X, RBF(1.0))
    with numba_threads(1):
        b = linear_stein_terms(X, -X, RBF(1.0))
    assert np.array_equal(a, b)


def test_fit_resolves_bandwidth_and_score():
    X = _X(400, 2)
    test = LinearKSDTest(std_normal_score).fit(X)
    assert test.bandwidth_ > 0 and test.n_features_in_ == 2
    H = linear_stein_terms(X, -X, RBF(test.bandwidth_))
    assert test.score(X) == pytest.approx(H.mean() / H.std(ddof=1))
    assert test.discrepancy(X) == pytest.approx(H.mean())
    with pytest.raises(ValueError, match="features"):
        test.test(_X(10, 3))


@pytest.mark.slow
def test_null_calibration():
    # the normal null needs many pairs: at n = 1000 the test is conservative (skewed
    # terms; measured 1.3% and 3.8% over 400 trials each), at n = 20000 it is not
    R = 400
    test = LinearKSDTest(Gaussian(np.zeros(2)), bandwidth=1.0)
    rr = rejection_rate(test, Gaussian(np.zeros(2)), 20000, n_trials=R, random_state=21,
                        n_jobs=1)
    assert abs(rr.rate - 0.05) <= 3 * np.sqrt(0.05 * 0.95 / R)


@pytest.mark.slow
def test_power_against_mean_shift():
    # N(0.3, I) data against N(0, I), D = 2, n = 20000
    data = Gaussian(np.full(2, 0.3))
    rr = rejection_rate(LinearKSDTest(Gaussian(np.zeros(2)), bandwidth=1.0), data, 20000,
                        n_trials=30, random_state=22, n_jobs=1)
    assert rr.rate >= 0.9


def test_validation():
    with pytest.raises(ValueError, match="minimum of 4"):
        LinearKSDTest(std_normal_score).test(_X(3))
    with pytest.raises(ValueError, match="kernel"):
        LinearKSDTest(std_normal_score, kernel="poly").test(_X())
    with pytest.raises(ValueError, match="kernel_params"):
        LinearKSDTest(std_normal_score, kernel_params={"beta": -0.5}).test(_X())
    with pytest.raises(ValueError, match="bandwidth"):
        LinearKSDTest(std_normal_score, bandwidth=-1.0).test(_X())
    with pytest.raises(TypeError, match="model"):
        LinearKSDTest(None).test(_X())


def test_degenerate_terms_do_not_give_nan():
    X = np.zeros((10, 2))
    res = LinearKSDTest(std_normal_score, bandwidth=1.0).test(X)
    assert np.isfinite(res.statistic) and np.isfinite(res.pvalue)


def test_clone_and_grid_search():
    X = Laplace(2).rvs(2000, random_state=3)
    test = LinearKSDTest(Gaussian(np.zeros(2)))
    assert clone(test).get_params()["kernel"] == "rbf"
    grid = GridSearchCV(test, {"bandwidth": [0.5, 1.0, 2.0]}, cv=3).fit(X)
    assert np.isfinite(grid.best_score_)
