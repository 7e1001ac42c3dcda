import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from conftest import std_normal_score
from skstein import RFSDTest, rfsd
from skstein._numba import numba_threads
from skstein.distributions import Distribution, GaussBernRBM, Gaussian, Laplace
from skstein.experiments import rejection_rate
from skstein.features import (
    RFSD_FEATURES,
    draw_random_features,
    gaussian_functional_null,
    rfsd_functional,
    rfsd_log_shift,
    rfsd_moments,
    resolve_feature_scale,
)
from skstein.gof._rfsd import REFERENCE_ROWS

GAMMA = 0.25


def _X(n=120, d=2, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d)) * 1.1 + 0.2


def _phi(kind, x, f, j):
    """Feature function Phi(x, z_j) times its importance weight, from the definitions."""
    z = f.Z[j]
    if kind == "l1-imq":
        return np.exp(f.log_coef[j]) * (f.c2 + np.sum((x - z) ** 2)) ** f.beta
    if kind == "l2-sechexp":
        u = x - f.center
        tilt_x = np.exp(f.tilt * np.sum(np.sqrt(1 + u * u)))
        return np.exp(f.log_coef[j]) * tilt_x * np.prod(1 / np.cosh(f.rate * (x - z)))
    J = f.Z.shape[0]
    return np.sqrt(2.0 / J) * np.cos(z @ x + f.log_coef[j])


def _ref_statistic(kind, X, S, f, eps=1e-6):
    """RPhiSD^2 with Stein features whose gradient term is a central finite difference."""
    n, d = X.shape
    J = f.Z.shape[0]
    Xi = np.zeros((n, J, d))
    for i in range(n):
        for j in range(J):
            val = _phi(kind, X[i], f, j)
            for a in range(d):
                e = np.zeros(d)
                e[a] = eps
                grad = (_phi(kind, X[i] + e, f, j) - _phi(kind, X[i] - e, f, j)) / (2 * eps)
                Xi[i, j, a] = S[i, a] * val + grad
    mu = Xi.mean(axis=0)  # (J, d)
    r = f.order
    return float(np.sum(np.sum(np.abs(mu) ** r, axis=0) ** (2.0 / r)))


@pytest.mark.parametrize("kind", RFSD_FEATURES)
def test_statistic_matches_reference(kind):
    X = _X()
    f = draw_random_features(kind, X, 4, np.random.default_rng(7))
    ref = _ref_statistic(kind, X, -X, f)
    assert rfsd(X, std_normal_score, feature=kind, n_features=4, random_state=7) == \
        pytest.approx(ref, rel=1e-6)


def test_importance_weights_are_the_densities():
    X = _X(200, 3)
    J = 6
    f = draw_random_features("l1-imq", X, J, np.random.default_rng(1), gamma=GAMMA)
    m = X.mean(axis=0)
    ell = _median_dist(X)
    alpha = GAMMA / 3
    xi = 4 * alpha / (2 + alpha)
    cp = (1 - alpha / 2) * 4 * ell / 2
    assert f.c2 == pytest.approx(cp**2) and f.beta == pytest.approx(-(3 + 0.5) / (2 * xi))
    t = stats.multivariate_t(loc=m, shape=cp**2 / 0.5 * np.eye(3), df=0.5)
    np.testing.assert_allclose(f.log_coef, -(t.logpdf(f.Z) + np.log(J)), rtol=1e-10)
    g = draw_random_features("l2-sechexp", X, J, np.random.default_rng(2), gamma=GAMMA)
    nu_rate = 2 * xi * g.rate
    u = g.Z - g.center
    log_nu = np.sum(stats.hypsecant.logpdf(u, scale=1 / nu_rate), axis=1)
    tz = g.tilt * np.sum(np.sqrt(1 + u * u), axis=1)
    np.testing.assert_allclose(g.log_coef, -0.5 * (log_nu + np.log(J)) + tz, rtol=1e-10)


def _median_dist(X):
    from scipy.spatial.distance import pdist
    return np.median(pdist(X))


def test_features_follow_their_distributions():
    X = np.random.default_rng(0).standard_normal((300, 1))
    J = 4000
    f = draw_random_features("l2-sechexp", X, J, np.random.default_rng(3))
    nu_rate = 2 * (4 * (GAMMA / 3) / (2 + GAMMA / 3)) * f.rate
    u = (f.Z - f.center).ravel()
    assert stats.kstest(u, stats.hypsecant(scale=1 / nu_rate).cdf).pvalue > 1e-3
    g = draw_random_features("l1-imq", X, J, np.random.default_rng(4))
    scale = np.sqrt(g.c2 / 0.5)
    v = (g.Z - g.center).ravel() / scale
    assert stats.kstest(v, stats.t(df=0.5).cdf).pvalue > 1e-3


@pytest.mark.parametrize("kind,kernel", [
    ("rff-gauss", lambda r, h: np.exp(-np.sum(r * r) / (2 * h * h))),
    ("rff-cauchy", lambda r, h: np.prod(1 / (1 + r * r / h**2))),
])
def test_fourier_features_approximate_their_kernel(kind, kernel):
    X = np.random.default_rng(0).standard_normal((200, 2))
    J = 200_000
    f = draw_random_features(kind, X, J, np.random.default_rng(5), bandwidth=1.3)
    for x, y in [(np.array([0.1, 0.2]), np.array([0.5, -0.4])),
                 (np.array([0.0, 0.0]), np.array([1.5, 1.0]))]:
        approx = np.mean(2 * np.cos(f.Z @ x + f.log_coef) * np.cos(f.Z @ y + f.log_coef))
        assert approx == pytest.approx(kernel(x - y, 1.3), abs=0.01)


def test_gaussian_functional_null_matches_direct_draws():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((6, 6))
    cov = A @ A.T / 6
    a = gaussian_functional_null(cov, 1, 3, 2, 100_000, np.random.default_rng(1))
    G = np.random.default_rng(2).multivariate_normal(np.zeros(6), cov, size=100_000)
    b = rfsd_functional(G, 1, 3, 2)
    for q in (0.5, 0.9, 0.95):
        assert np.quantile(a, q) == pytest.approx(np.quantile(b, q), rel=0.03)
    c = gaussian_functional_null(cov, 2, 3, 2, 100_000, np.random.default_rng(1))
    assert c.mean() == pytest.approx(np.trace(cov), rel=0.02)


def test_rescaling_changes_nothing_but_the_reported_unit():
    X = _X(300, 3)
    f = draw_random_features("l1-imq", X, 5, np.random.default_rng(0))
    shift = rfsd_log_shift(X, f)
    a = rfsd_moments(X, -X, f, shift)
    b = rfsd_moments(X, -X, f, shift + 3.0)
    np.testing.assert_allclose(b.mean * np.exp(3.0), a.mean, rtol=1e-12)
    # in high dimension the L1 IMQ discrepancy leaves the range of a double; the test
    # then reports values times a named factor, with a valid decision
    X = np.random.default_rng(1).standard_normal((300, 60))
    for null, draws in [("gaussian", 200), ("monte-carlo", 19)]:
        res = RFSDTest(Gaussian(np.zeros(60)), feature="l1-imq", null=null, n_simulate=draws,
                       random_state=0).test(X)
        assert "reported times exp(" in res.method
        assert np.isfinite(res.statistic) and res.statistic > 0 and 0 < res.pvalue <= 1
        assert res.reject == (res.pvalue <= res.alpha) == (res.statistic > res.threshold)


def test_blocks_and_threads_change_nothing():
    X = _X(600, 3)
    f = draw_random_features("l2-sechexp", X, 5, np.random.default_rng(0))
    a = rfsd_moments(X, -X, f, 0.0)
    b = rfsd_moments(X, -X, f, 0.0, max_memory=8 * 15 * 11)
    with numba_threads(1):
        c = rfsd_moments(X, -X, f, 0.0)
    np.testing.assert_allclose(b.mean, a.mean, rtol=1e-12)
    np.testing.assert_allclose(b.covariance(), a.covariance(), rtol=1e-10, atol=1e-18)
    assert np.array_equal(c.mean, a.mean) and np.array_equal(c.covariance(), a.covariance())


@pytest.mark.parametrize("kind", RFSD_FEATURES)
def test_same_seed_same_numbers_and_fit(kind):
    X = Laplace(2).rvs(400, random_state=0)
    a = RFSDTest(std_normal_score, feature=kind, n_simulate=300, random_state=3).test(X)
    b = RFSDTest(std_normal_score, feature=kind, n_simulate=300, random_state=3).test(X)
    c = RFSDTest(std_normal_score, feature=kind, n_simulate=300, random_state=4).test(X)
    assert a.statistic == b.statistic and np.array_equal(a.null_distribution, b.null_distribution)
    assert a.statistic != c.statistic
    fitted = RFSDTest(std_normal_score, feature=kind, random_state=3).fit(X)
    assert fitted.features_.n_features == 10 and fitted.bandwidth_ > 0
    assert fitted.discrepancy(X) == pytest.approx(fitted.discrepancy(X[::-1]), rel=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("kind,kw", [
    ("rff-gauss", {}),
    ("rff-cauchy", {}),
    ("l2-sechexp", {}),
    ("l1-imq", {"gamma": 1.0, "nu_df": 3.0}),
    ("rff-gauss", {"null_samples": 2000}),
])
def test_gaussian_null_calibration(kind, kw):
    # with the Gaussian null, L1 IMQ at its default gamma = 0.25 over-rejects (see
    # RFSDTest); gamma = 1 does not
    R = 200
    p = Gaussian(np.zeros(2))
    test = RFSDTest(p, feature=kind, null="gaussian", n_simulate=300, **kw)
    rr = rejection_rate(test, p, 400, n_trials=R, random_state=31, n_jobs=1)
    assert abs(rr.rate - 0.05) <= 3 * np.sqrt(0.05 * 0.95 / R)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["l2-sechexp", "rff-cauchy"])
def test_power_against_laplace(kind):
    # unit-variance Laplace data against N(0, I), D = 2, n = 1000
    test = RFSDTest(Gaussian(np.zeros(2)), feature=kind, n_simulate=300)
    rr = rejection_rate(test, Laplace(2), 1000, n_trials=20, random_state=32, n_jobs=1)
    assert rr.rate >= 0.7


class _Recording(Gaussian):
    """A standard normal model that keeps the samples it draws."""

    def __init__(self, dim):
        super().__init__(np.zeros(dim))
        self.drawn = []

    def rvs(self, n, random_state=None):
        Y = super().rvs(n, random_state=random_state)
        self.drawn.append(Y)
        return Y


@pytest.mark.parametrize("fitted", [False, True])
@pytest.mark.parametrize("kind", ["l1-imq", "l2-sechexp"])
def test_monte_carlo_null_is_the_statistic_on_model_samples(kind, fitted):
    # the null draws are the discrepancy, computed as on X, of samples of the model: with
    # the fitted features, or with features drawn on each sample from the same stream at
    # one length scale, the median distance of a sample of the model (the first one it
    # draws, REFERENCE_ROWS rows)
    X = Laplace(3).rvs(150, random_state=5)
    model = _Recording(3)
    test = RFSDTest(model, feature=kind, null="monte-carlo", n_simulate=39, random_state=8)
    if fitted:
        test.fit(Laplace(3).rvs(150, random_state=6))
    res = test.test(X)
    assert res.bootstrap == "monte-carlo" and res.n_bootstrap == 39
    drawn = model.drawn if fitted else model.drawn[1:]
    if not fitted:
        assert model.drawn[0].shape == (REFERENCE_ROWS, 3)
        scale = resolve_feature_scale(model.drawn[0], kind, "median")
        assert res.bandwidth == scale
        assert f"at length scale {scale:.4g}" in res.method
    assert len(drawn) == 39 and all(Y.shape == X.shape for Y in drawn)
    assert ("fitted features" in res.method) == fitted
    ref = np.array([test.discrepancy(Y) for Y in drawn])
    np.testing.assert_allclose(res.null_distribution, ref, rtol=1e-10)
    assert res.statistic == pytest.approx(test.discrepancy(X), rel=1e-10)
    assert res.pvalue == pytest.approx((1 + np.sum(ref >= res.statistic)) / 40)
    # the samples and the features do not repeat from one draw to the next
    assert len({float(v) for v in ref}) == 39
    again = RFSDTest(_Recording(3), feature=kind, null="monte-carlo", n_simulate=39,
                     random_state=8)
    if fitted:
        again.fit(Laplace(3).rvs(150, random_state=6))
    assert np.array_equal(again.test(X).null_distribution, res.null_distribution)
    # a float bandwidth is every sample's length scale, and no reference is drawn
    fixed = _Recording(3)
    res = RFSDTest(fixed, feature=kind, null="monte-carlo", n_simulate=5, bandwidth=1.7,
                   random_state=8).test(X)
    assert res.bandwidth == 1.7 and len(fixed.drawn) == 5


@pytest.mark.parametrize("scale,shift", [(0.5, 0.0), (2.0, 0.0), (1.0, 5.0)])
def test_monte_carlo_null_sees_samples_of_another_scale_or_place(scale, shift):
    # L1 IMQ's statistic scales as a high power of the length scale of its features:
    # with features at each sample's own median distance, a sample twice as wide as the
    # model got a statistic far below every null draw (p = 1); at the model's length
    # scale, it is rejected, as is a sample half as wide. The features stay centred at
    # each sample's mean: centred at the model's, they missed a sample shifted by 5
    model = Gaussian(np.zeros(3))
    X = Gaussian(np.full(3, shift), scale**2).rvs(200, random_state=2)
    res = RFSDTest(model, n_simulate=99, random_state=3).test(X)
    assert res.bootstrap == "monte-carlo" and res.reject
    assert res.pvalue == pytest.approx(0.01)


def test_functional_null_from_kept_rows():
    # n = 12 rows of p = 40 features: the Gaussian functional null from the Gram matrix
    # of the centred rows has the law of the one from the 40 x 40 covariance
    from skstein.features import FeatureMoments, moments_functional_null

    rng = np.random.default_rng(4)
    F = rng.standard_normal((12, 40)) * np.linspace(0.5, 2.0, 40) + 0.3
    mom = FeatureMoments(12, F.sum(axis=0), float(np.sum(F * F)), rows=F)
    cov = np.cov(F, rowvar=False)
    np.testing.assert_allclose(mom.covariance(), cov, rtol=1e-12, atol=1e-14)
    for order in (1, 2):
        new = moments_functional_null(mom, order, 4, 10, 40_000, np.random.default_rng(1))
        old = gaussian_functional_null(cov, order, 4, 10, 40_000, np.random.default_rng(2))
        q = [0.1, 0.5, 0.9, 0.99]
        np.testing.assert_allclose(np.quantile(new, q), np.quantile(old, q), rtol=0.03)
    # more rows than active components: the covariance's own factor, the same draws
    G = rng.standard_normal((60, 8))
    mom = FeatureMoments(60, G.sum(axis=0), float(np.sum(G * G)), rows=G)
    np.testing.assert_allclose(
        moments_functional_null(mom, 1, 2, 4, 500, np.random.default_rng(3)),
        gaussian_functional_null(np.cov(G, rowvar=False), 1, 2, 4, 500,
                                 np.random.default_rng(3)), rtol=1e-9)


def test_monte_carlo_p_values_count_draws_exactly():
    # L1 IMQ draws at n = 20 span ten orders of magnitude: a tie tolerance relative to
    # the largest draw counted every draw below it as a tie (p = 1 in 0.455 of 200 null
    # trials); draws of other samples cannot tie with the statistic by rounding
    model = Gaussian(np.zeros(2))
    pvalues = []
    for seed in range(8):
        X = np.random.default_rng(100 + seed).standard_normal((20, 2))
        res = RFSDTest(model, random_state=seed).test(X)
        draws = res.null_distribution
        assert res.pvalue == (1 + np.count_nonzero(draws >= res.statistic)) / (1 + draws.size)
        pvalues.append(res.pvalue)
    assert max(pvalues) < 1.0
    from skstein._bootstrap import bootstrap_pvalue
    draws = np.array([1e-12, 3e-20, 5e-20])
    assert bootstrap_pvalue(4e-20, draws) == 1.0            # within 1e-6 of the largest
    assert bootstrap_pvalue(4e-20, draws, snap_ties=False) == 0.75


def test_which_null_auto_takes():
    model = Gaussian(np.zeros(2))
    assert RFSDTest(model)._null_kind() == "monte-carlo"
    assert RFSDTest(model, feature="l2-sechexp")._null_kind() == "gaussian"
    assert RFSDTest(model, feature="rff-gauss")._null_kind() == "gaussian"
    assert RFSDTest(model, null_samples=500)._null_kind() == "gaussian"
    assert RFSDTest(std_normal_score)._null_kind() == "gaussian"
    assert RFSDTest(std_normal_score, null="gaussian")._null_kind() == "gaussian"
    # Gibbs chains: each of the 499 samples would cost burn_in sweeps
    rbm = GaussBernRBM(np.ones((2, 1)), np.zeros(2), np.zeros(1))
    assert RFSDTest(rbm)._null_kind() == "gaussian"
    assert RFSDTest(rbm, null="monte-carlo")._null_kind() == "monte-carlo"
    res = RFSDTest(std_normal_score, random_state=0).test(_X())
    assert res.bootstrap == "gaussian-functional" and res.n_bootstrap == 3000
    res = RFSDTest(model, feature="rff-gauss", random_state=0).test(_X())
    assert res.bootstrap == "chi2-mixture" and res.n_bootstrap == 3000


@pytest.mark.slow
@pytest.mark.parametrize("kind,D,n", [("l1-imq", 5, 200), ("l2-sechexp", 10, 100)])
def test_monte_carlo_null_calibration(kind, D, n):
    # exact by exchangeability; at D = 5, n = 200 the Gaussian null rejected 16% of 300
    # null samples with L1 IMQ (see RFSDTest). 99 draws: (B + 1) alpha is an integer
    R = 200
    p = Gaussian(np.zeros(D))
    test = RFSDTest(p, feature=kind, null="monte-carlo", n_simulate=99)
    rr = rejection_rate(test, p, n, n_trials=R, random_state=33, n_jobs=1)
    assert abs(rr.rate - 0.05) <= 3 * np.sqrt(0.05 * 0.95 / R)


def test_validation():
    X = _X()
    with pytest.raises(ValueError, match="feature"):
        RFSDTest(std_normal_score, feature="l3").test(X)
    with pytest.raises(ValueError, match="n_features"):
        RFSDTest(std_normal_score, n_features=0).test(X)
    with pytest.raises(ValueError, match="gamma"):
        RFSDTest(std_normal_score, gamma=2.0).test(X)
    with pytest.raises(ValueError, match="nu_df"):
        RFSDTest(std_normal_score, nu_df=-1.0).test(X)
    with pytest.raises(ValueError, match="bandwidth"):
        RFSDTest(std_normal_score, bandwidth="mean").test(X)
    with pytest.raises(TypeError, match="rvs"):
        RFSDTest(std_normal_score, null_samples=100).test(X)
    with pytest.raises(ValueError, match="null_samples"):
        RFSDTest(Gaussian(np.zeros(2)), null_samples=1).test(X)
    with pytest.raises(ValueError, match="null"):
        RFSDTest(Gaussian(np.zeros(2)), null="bootstrap").test(X)
    with pytest.raises(TypeError, match="null='monte-carlo' .* rvs"):
        RFSDTest(std_normal_score, null="monte-carlo").test(X)

    class ScoreOnly(Distribution):  # has the rvs method of the base class, no sampler
        dim = 2

        def _grad_logpdf(self, Y):
            return -Y

    assert RFSDTest(ScoreOnly())._null_kind() == "gaussian"
    with pytest.raises(TypeError, match="null='monte-carlo' .* ScoreOnly has none"):
        RFSDTest(ScoreOnly(), null="monte-carlo").test(X)
    with pytest.raises(TypeError, match="null_samples .* ScoreOnly has none"):
        RFSDTest(ScoreOnly(), null_samples=100).test(X)
    with pytest.raises(ValueError, match="null_samples .* null='monte-carlo'"):
        RFSDTest(Gaussian(np.zeros(2)), null="monte-carlo", null_samples=100).test(X)
    with pytest.warns(UserWarning, match="n_simulate=9 is too small"):
        RFSDTest(Gaussian(np.zeros(2)), n_simulate=9, random_state=0).test(X)
    with pytest.raises(ValueError, match="features"):
        RFSDTest(Gaussian(np.zeros(3))).test(X)
    with pytest.raises(ValueError, match="finite"):
        RFSDTest(lambda Y: np.full(Y.shape, np.nan)).test(X)


def test_clone_and_grid_search():
    X = Laplace(2).rvs(900, random_state=1)
    test = RFSDTest(Gaussian(np.zeros(2)), feature="rff-gauss", random_state=0)
    assert clone(test).get_params()["feature"] == "rff-gauss"
    grid = GridSearchCV(test, {"bandwidth": [0.5, 1.0, 2.0]}, cv=3).fit(X)
    assert np.isfinite(grid.best_score_)
