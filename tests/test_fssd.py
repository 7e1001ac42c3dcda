import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from conftest import std_normal_score
from skstein import FSSDTest, GOFTestResult, fssd
from skstein._numba import numba_threads
from skstein.distributions import Gaussian, Laplace
from skstein.experiments import rejection_rate
from skstein.features import (
    chi2_mixture_null,
    fssd_criterion_and_grad,
    fssd_moments,
    fssd_power_criterion,
    gaussian_locations,
)
from skstein.kernels import IMQ, RBF


def _X(n=150, d=3, seed=0, scale=1.0):
    return np.random.default_rng(seed).standard_normal((n, d)) * scale


def _ref_features(X, S, V, h, kernel):
    """tau(x_i) written out: one location and one sample at a time."""
    n, d = X.shape
    J = V.shape[0]
    T = np.empty((n, J, d))
    for i in range(n):
        for j in range(J):
            r = X[i] - V[j]
            t = r @ r
            if kernel == "rbf":
                k = np.exp(-t / (2 * h * h))
                grad = -r / h**2 * k
            else:
                k = (1 + t / h**2) ** -0.5
                grad = -0.5 * (1 + t / h**2) ** -1.5 * 2 * r / h**2
            T[i, j] = k * S[i] + grad
    return T.reshape(n, J * d) / np.sqrt(d * J)


def _ref_ustat(T):
    n = T.shape[0]
    total = 0.0
    for i in range(n):
        for j in range(n):
            if i != j:
                total += T[i] @ T[j]
    return total / (n * (n - 1))


@pytest.mark.parametrize("kernel", ["rbf", "imq"])
def test_statistic_matches_double_loop(kernel):
    X = _X(60, 3, seed=1, scale=1.3)
    V = np.random.default_rng(2).standard_normal((4, 3))
    T = _ref_features(X, -X, V, 1.1, kernel)
    assert fssd(X, std_normal_score, locations=V, kernel=kernel, bandwidth=1.1) == \
        pytest.approx(_ref_ustat(T), rel=1e-12)
    kern = RBF(1.1) if kernel == "rbf" else IMQ(1.1)
    mom = fssd_moments(X, -X, V, kern)
    np.testing.assert_allclose(mom.covariance(), np.cov(T, rowvar=False), rtol=1e-10,
                               atol=1e-15)
    mu = T.mean(axis=0)
    var = 4 * np.mean((T @ mu) ** 2) - 4 * (mu @ mu) ** 2
    assert fssd_power_criterion(mom, 1e-2) == pytest.approx(_ref_ustat(T) / np.sqrt(var + 1e-2),
                                                            rel=1e-10)


def test_blocks_and_threads_change_nothing():
    X = _X(500, 4, seed=3)
    V = _X(6, 4, seed=4)
    a = fssd_moments(X, -X, V, RBF(1.5))
    b = fssd_moments(X, -X, V, RBF(1.5), max_memory=8 * 24 * 7)  # blocks of 7 rows
    with numba_threads(1):
        c = fssd_moments(X, -X, V, RBF(1.5))
    assert b.ustat() == pytest.approx(a.ustat(), rel=1e-12)
    np.testing.assert_allclose(b.covariance(), a.covariance(), rtol=1e-11, atol=1e-16)
    assert c.ustat() == a.ustat() and np.array_equal(c.covariance(), a.covariance())


@pytest.mark.parametrize("kernel", ["rbf", "imq"])
def test_criterion_gradient_matches_finite_differences(kernel):
    rng = np.random.default_rng(5)
    X = rng.laplace(size=(80, 3))
    V = rng.standard_normal((3, 3))
    h = 1.4
    _, gV, gh = fssd_criterion_and_grad(X, -X, V, h, kernel=kernel)
    eps = 1e-6
    num = np.zeros_like(V)
    for j in range(3):
        for a in range(3):
            Vp, Vm = V.copy(), V.copy()
            Vp[j, a] += eps
            Vm[j, a] -= eps
            num[j, a] = (fssd_criterion_and_grad(X, -X, Vp, h, kernel=kernel)[0]
                         - fssd_criterion_and_grad(X, -X, Vm, h, kernel=kernel)[0]) / (2 * eps)
    num_h = (fssd_criterion_and_grad(X, -X, V, h + eps, kernel=kernel)[0]
             - fssd_criterion_and_grad(X, -X, V, h - eps, kernel=kernel)[0]) / (2 * eps)
    np.testing.assert_allclose(gV, num, rtol=1e-5, atol=1e-9)
    assert gh == pytest.approx(num_h, rel=1e-5, abs=1e-9)


def test_chi2_mixture_null_moments():
    cov = np.diag([2.0, 1.0, 0.5])
    draws = chi2_mixture_null(cov, 200_000, np.random.default_rng(0))
    # sum_k lam_k (Z_k^2 - 1): mean 0, variance 2 sum lam^2 = 10.5
    assert abs(draws.mean()) < 4 * np.sqrt(10.5 / 200_000)
    assert draws.var() == pytest.approx(10.5, rel=0.02)


def test_fewer_rows_than_features_keep_the_rows_and_the_spectrum():
    # n = 12 rows of p = J D = 40 features: the rows are kept (no p x p matrix), and the
    # covariance's spectrum comes from the 12 x 12 Gram matrix of the centred rows
    from skstein.features import _psd_eigh, chi2_mixture_draws

    X = _X(12, 10, seed=5) + 0.4
    V = _X(4, 10, seed=6)
    T = _ref_features(X, -X, V, 1.7, "rbf")
    mom = fssd_moments(X, -X, V, RBF(1.7))
    assert mom.rows is not None and mom.rows.shape == (12, 40)
    np.testing.assert_allclose(mom.covariance(), np.cov(T, rowvar=False), rtol=1e-10,
                               atol=1e-15)
    lam = mom.covariance_eigenvalues()
    ref = _psd_eigh(np.cov(T, rowvar=False))[0]
    assert lam.shape == ref.shape == (40,)
    np.testing.assert_allclose(lam, ref, rtol=0, atol=1e-12 * ref.max())
    assert np.all(lam[:40 - 11] == 0)    # rank n - 1
    # the power criterion's variance, through the rows
    mu = T.mean(axis=0)
    var = 4 * np.mean((T @ mu) ** 2) - 4 * (mu @ mu) ** 2
    assert mom.h1_variance() == pytest.approx(var, rel=1e-10)
    # the same null draws as from the covariance, and the test's p-value with them
    cov = np.cov(T, rowvar=False)
    np.testing.assert_allclose(chi2_mixture_draws(lam, 500, np.random.default_rng(2)),
                               chi2_mixture_null(cov, 500, np.random.default_rng(2)),
                               rtol=0, atol=1e-12 * ref.max())
    res = FSSDTest(std_normal_score, locations=V, bandwidth=1.7, random_state=3).test(X)
    null = chi2_mixture_null(cov, 3000, np.random.default_rng(3).spawn(2)[1]) / 12
    np.testing.assert_allclose(res.null_distribution, null, rtol=1e-9, atol=1e-15)
    # as many rows as features: the p x p matrix, as before
    assert fssd_moments(_X(40, 10), -_X(40, 10), V, RBF(1.7)).rows is None


@pytest.mark.parametrize("scale", [1e-6, 1e4])
def test_fssd_at_initial_locations_does_not_depend_on_the_units(scale):
    # the locations' regulariser is relative to the data's variance: at 1e-6 an absolute
    # one put every location a thousand data scales away, and the test lost its power
    def pvalue(c):
        X = c * Laplace(2).rvs(300, random_state=4) / np.sqrt(2)
        test = FSSDTest(Gaussian(np.zeros(2), cov=c * c), optimize=False, random_state=0)
        return test.test(X).pvalue
    assert pvalue(scale) == pytest.approx(pvalue(1.0), rel=1e-9)


def test_gaussian_locations_follow_the_data():
    X = np.random.default_rng(0).normal([5.0, -2.0], [1.0, 3.0], size=(4000, 2))
    V = gaussian_locations(X, 20000, np.random.default_rng(1))
    np.testing.assert_allclose(V.mean(axis=0), [5.0, -2.0], atol=0.08)
    np.testing.assert_allclose(V.std(axis=0), [1.0, 3.0], rtol=0.04)


def test_result_fields_and_conventions():
    X = Laplace(2).rvs(400, random_state=1)
    test = FSSDTest(Gaussian(np.zeros(2)), n_locations=4, n_simulate=500, random_state=0)
    res = test.test(X)
    assert isinstance(res, GOFTestResult)
    assert res.bootstrap == "chi2-mixture" and res.n_bootstrap == 500 and res.n_samples == 400
    assert res.null_distribution.shape == (500,)
    assert res.reject == (res.pvalue <= res.alpha) == (res.statistic > res.threshold)
    # the statistic is FSSD^2_u itself (kgof reports n times it)
    fitted = clone(test).fit(X)
    assert fitted.discrepancy(X) == pytest.approx(
        fssd(X, std_normal_score, locations=fitted.locations_, bandwidth=fitted.bandwidth_))
    assert res.statistic == pytest.approx(fitted.discrepancy(X))  # same seed, same locations


def test_optimize_splits_and_learns():
    X = Laplace(3).rvs(1000, random_state=2)
    test = FSSDTest(Gaussian(np.zeros(3)), optimize=True, n_locations=3, random_state=0)
    res = test.test(X)
    assert res.n_samples == 800  # 20% learn the locations
    fitted = clone(test).fit(X[:200])
    assert fitted.n_iter_ > 0 and fitted.locations_.shape == (3, 3)
    rand = FSSDTest(Gaussian(np.zeros(3)), n_locations=3, random_state=0).fit(X[:200])
    # the ascent improves the training criterion over the Gaussian draws it starts from
    assert fitted.criterion_ > rand.criterion_
    assert fitted.score(X[:200]) == pytest.approx(fitted.criterion_, rel=1e-9)


def test_fixed_locations_are_used():
    V = np.array([[0.5, 0.0], [-1.0, 1.0]])
    X = _X(300, 2)
    test = FSSDTest(std_normal_score, locations=V, bandwidth=0.8, random_state=0).fit(X)
    assert np.array_equal(test.locations_, V) and test.bandwidth_ == 0.8
    assert test.discrepancy(X) == pytest.approx(
        fssd(X, std_normal_score, locations=V, bandwidth=0.8))


def test_same_seed_same_numbers():
    X = Laplace(2).rvs(300, random_state=0)
    for opt in (False, True):
        a = FSSDTest(std_normal_score, optimize=opt, random_state=3).test(X)
        b = FSSDTest(std_normal_score, optimize=opt, random_state=3).test(X)
        c = FSSDTest(std_normal_score, optimize=opt, random_state=4).test(X)
        assert a.statistic == b.statistic and np.array_equal(a.null_distribution,
                                                             b.null_distribution)
        assert not np.array_equal(a.null_distribution, c.null_distribution)
    with numba_threads(1):
        d = FSSDTest(std_normal_score, optimize=True, random_state=3).test(X)
    assert d.statistic == a.statistic and d.pvalue == a.pvalue


@pytest.mark.slow
@pytest.mark.parametrize("optimize", [False, True])
def test_null_calibration(optimize):
    R = 200
    test = FSSDTest(Gaussian(np.zeros(2)), n_locations=5, optimize=optimize, max_iter=20,
                    n_simulate=500)
    rr = rejection_rate(test, Gaussian(np.zeros(2)), 300, n_trials=R, random_state=11,
                        n_jobs=1)
    assert abs(rr.rate - 0.05) <= 3 * np.sqrt(0.05 * 0.95 / R)


@pytest.mark.slow
def test_power_against_laplace():
    # Gaussian model, unit-variance Laplace data in 5 dimensions, n = 1000
    test = FSSDTest(Gaussian(np.zeros(5)), n_locations=5, optimize=True, n_simulate=500)
    rr = rejection_rate(test, Laplace(5), 1000, n_trials=20, random_state=12, n_jobs=1)
    assert rr.rate >= 0.7


def test_validation():
    X = _X()
    with pytest.raises(ValueError, match="n_locations"):
        FSSDTest(std_normal_score, n_locations=0).test(X)
    with pytest.raises(TypeError, match="optimize"):
        FSSDTest(std_normal_score, optimize="yes").test(X)
    with pytest.raises(ValueError, match="locations"):
        FSSDTest(std_normal_score, locations=np.zeros((2, 5))).test(X)
    with pytest.raises(ValueError, match="locations"):
        FSSDTest(std_normal_score, locations=np.full((2, 3), np.nan)).test(X)
    with pytest.raises(ValueError, match="kernel"):
        FSSDTest(std_normal_score, kernel="laplace").test(X)
    with pytest.raises(ValueError, match="n_simulate"):
        FSSDTest(std_normal_score, n_simulate=0).test(X)
    with pytest.raises(ValueError, match="train_size"):
        FSSDTest(std_normal_score, optimize=True, train_size=1.5).test(X)
    with pytest.raises(ValueError, match="max_iter"):
        FSSDTest(std_normal_score, max_iter=-1).test(X)
    with pytest.raises(ValueError, match="alpha"):
        FSSDTest(std_normal_score, alpha=1.0).test(X)
    with pytest.raises(ValueError, match="finite"):
        FSSDTest(lambda Y: np.full(Y.shape, np.inf)).test(X)
    with pytest.raises(ValueError, match="features"):
        FSSDTest(Gaussian(np.zeros(2))).test(X)
    with pytest.raises(ValueError):
        FSSDTest(std_normal_score).test(np.array([[np.nan, 1.0, 2.0]] * 5))
    with pytest.warns(UserWarning, match="too small"):
        FSSDTest(std_normal_score, n_simulate=5).test(X)


def test_clone_params_and_grid_search():
    X = Laplace(2).rvs(600, random_state=0)
    test = FSSDTest(Gaussian(np.zeros(2)), n_locations=3, random_state=0)
    assert clone(test).get_params()["n_locations"] == 3
    grid = GridSearchCV(test, {"bandwidth": [0.3, 1.0, 3.0]}, cv=3).fit(X)
    assert grid.best_params_["bandwidth"] in (0.3, 1.0, 3.0)
    assert np.isfinite(grid.best_score_)


def test_optimised_with_a_given_bandwidth_on_coinciding_training_rows():
    # the ascent bounds its bandwidth about the median heuristic of the training part;
    # where that part's rows coincide (no median), a given bandwidth is the centre
    X = np.zeros((8, 2))
    X[0, 1] = X[7, 1] = 1.0
    for seed in range(6):
        res = FSSDTest(lambda Z: -Z, n_locations=2, optimize=True, max_iter=3, bandwidth=1.0,
                       n_simulate=50, random_state=seed).test(X)
        assert 0 < res.pvalue <= 1
    with pytest.raises(ValueError, match="median heuristic"):
        FSSDTest(lambda Z: -Z, n_locations=2, optimize=True, max_iter=3,
                 n_simulate=50, random_state=0).test(np.zeros((8, 2)))
