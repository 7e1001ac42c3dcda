import numpy as np
import pytest
from scipy import stats

from skstein import KSDTest
from skstein._numba import numba_threads
from skstein.distributions import (ICA, PPCA, AffineTransformed, Banana, BinaryRBM, Categorical,
                                   Distribution, GaussBernRBM, Gaussian, GaussianMixture,
                                   Laplace, StudentT, from_estimator, gaussian_diffusion,
                                   rvs_kind)


def _fd_grad(logpdf, X, eps=1e-6):
    G = np.empty_like(X)
    for d in range(X.shape[1]):
        E = np.zeros(X.shape[1])
        E[d] = eps
        G[:, d] = (logpdf(X + E) - logpdf(X - E)) / (2 * eps)
    return G


def _rbm(dx=6, dh=4, seed=0, burn_in=500):
    rng = np.random.default_rng(seed)
    return GaussBernRBM(rng.choice([-1.0, 1.0], size=(dx, dh)), rng.standard_normal(dx),
                        rng.standard_normal(dh), burn_in=burn_in)


COV = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, -0.2], [0.0, -0.2, 0.5]])
MODELS = [
    Gaussian(np.array([1.0, -2.0, 0.5]), COV),
    Gaussian(np.zeros(3), np.array([0.5, 1.0, 3.0])),
    Gaussian(np.ones(3), 2.0),
    Laplace(3, loc=0.5),
    StudentT(3, df=5, scale=1.5),
    _rbm(dx=3, dh=2),
    AffineTransformed(StudentT(3, df=4), np.linalg.qr(np.arange(9.0).reshape(3, 3) ** 1.5)[0],
                      [0.5, 0.0, -1.0]),
    Banana(3, curvature=0.7, scale=1.5),
    Banana(3, curvature=-1.2, rotation=np.linalg.qr(np.arange(9.0).reshape(3, 3) ** 1.5)[0]),
]


@pytest.mark.parametrize("model", MODELS, ids=repr)
def test_score_is_the_gradient_of_logpdf(model):
    X = np.random.default_rng(1).standard_normal((20, 3)) * 1.3 + 0.1
    np.testing.assert_allclose(model.grad_logpdf(X), _fd_grad(model.logpdf, X),
                               rtol=1e-6, atol=1e-6)
    assert model(X).shape == X.shape


def test_gaussian_logpdf_and_sampler_match_scipy():
    mean = np.array([1.0, -2.0, 0.5])
    g = Gaussian(mean, COV)
    X = np.random.default_rng(0).standard_normal((10, 3))
    np.testing.assert_allclose(g.logpdf(X), stats.multivariate_normal(mean, COV).logpdf(X))
    Y = g.rvs(20000, random_state=0)
    np.testing.assert_allclose(Y.mean(0), mean, atol=0.05)
    np.testing.assert_allclose(np.cov(Y.T), COV, atol=0.06)
    d = gaussian_diffusion(4, 0.3, index=2)
    np.testing.assert_allclose(d.cov, [1, 1, 0.3, 1])


def test_product_distributions_match_scipy():
    X = np.random.default_rng(0).standard_normal((10, 2))
    lap = Laplace(2)
    np.testing.assert_allclose(lap.logpdf(X), stats.laplace(scale=2**-0.5).logpdf(X).sum(1))
    assert lap.rvs(40000, random_state=0).var() == pytest.approx(1.0, abs=0.03)
    t = StudentT(2, df=5, loc=1.0, scale=2.0)
    np.testing.assert_allclose(t.logpdf(X), stats.t(5, loc=1.0, scale=2.0).logpdf(X).sum(1))
    assert t.rvs(40000, random_state=0).var() == pytest.approx(4 * 5 / 3, rel=0.08)


def test_banana_is_the_twisted_gaussian():
    # density: the Gaussian of the untwisted coordinates (unit Jacobian), rotated
    R = np.linalg.qr(np.random.default_rng(3).standard_normal((4, 4)))[0]
    b, s = 0.8, 1.5
    model = Banana(4, curvature=b, scale=s, rotation=R)
    X = np.random.default_rng(0).standard_normal((10, 4)) * 2.0
    Z = X @ R.T
    Y = Z.copy()
    Y[:, 1] -= b * (Z[:, 0] ** 2 - s ** 2)
    base = stats.multivariate_normal(np.zeros(4), np.diag([s * s, 1, 1, 1]))
    np.testing.assert_allclose(model.logpdf(X), base.logpdf(Y), rtol=1e-12)
    # the sampler: moments of the twisted coordinates, and the bend
    W = model.rvs(40000, random_state=0) @ R.T
    np.testing.assert_allclose(W.mean(0), 0.0, atol=0.05)
    np.testing.assert_allclose(W.var(0), [s * s, 1 + 2 * b * b * s ** 4, 1, 1], rtol=0.05)
    np.testing.assert_allclose(W.var(0), model.coordinate_variances(), rtol=0.05)
    assert abs(np.corrcoef(W[:, 0], W[:, 1])[0, 1]) < 0.02
    assert np.corrcoef(W[:, 0] ** 2, W[:, 1])[0, 1] > 0.9
    # curvature 0 is the Gaussian
    flat = Banana(3, curvature=0.0, scale=2.0)
    np.testing.assert_allclose(flat.logpdf(X[:, :3]), Gaussian(np.zeros(3), [4.0, 1, 1])
                               .logpdf(X[:, :3]), rtol=1e-12)
    for kwargs, match in [({"dim": 1}, "dim must be at least 2"),
                          ({"dim": 2, "curvature": np.inf}, "curvature"),
                          ({"dim": 2, "curvature": "a"}, "curvature"),
                          ({"dim": 2, "scale": 0.0}, "scale"),
                          ({"dim": 2, "rotation": np.ones((2, 2))}, "rotation"),
                          ({"dim": 2, "rotation": np.eye(3)}, "rotation")]:
        with pytest.raises(ValueError, match=match):
            Banana(**kwargs)


def test_affine_matrix_form_is_the_linearly_mapped_gaussian():
    # y = A x + b ~ N(0, I) means x ~ N(-A^{-1} b, (A^T A)^{-1})
    rng = np.random.default_rng(3)
    A, b = rng.standard_normal((3, 3)) + 2 * np.eye(3), rng.standard_normal(3)
    model = AffineTransformed(Gaussian(np.zeros(3)), A, b)
    mean, cov = -np.linalg.solve(A, b), np.linalg.inv(A.T @ A)
    exact = Gaussian(mean, cov)
    X = rng.standard_normal((10, 3))
    np.testing.assert_allclose(model.logpdf(X), exact.logpdf(X), rtol=1e-12)
    np.testing.assert_allclose(model.grad_logpdf(X), exact.grad_logpdf(X), rtol=1e-10)
    Y = model.rvs(40000, random_state=0)
    np.testing.assert_allclose(Y.mean(0), mean, atol=4 * np.sqrt(np.diag(cov) / 40000).max())
    np.testing.assert_allclose(np.cov(Y.T), cov, atol=0.05 * np.abs(cov).max())
    # the elementwise form is the diagonal matrix
    diag = AffineTransformed(Laplace(3), np.diag([2.0, -0.5, 1.0]), b)
    elem = AffineTransformed(Laplace(3), [2.0, -0.5, 1.0], b)
    np.testing.assert_allclose(diag.logpdf(X), elem.logpdf(X), rtol=1e-12)
    np.testing.assert_allclose(diag.grad_logpdf(X), elem.grad_logpdf(X), rtol=1e-12)
    np.testing.assert_allclose(diag.rvs(5, random_state=1), elem.rvs(5, random_state=1))


@pytest.mark.parametrize("scale, shift, match", [
    (np.ones((3, 2)), 0.0, r"scale as a matrix must have shape \(3, 3\)"),
    (np.ones(4), 0.0, r"scale must be a number or have shape \(3,\)"),
    (np.ones((3, 3)), 0.0, "scale as a matrix must be invertible"),
    ([1.0, 0.0, 1.0], 0.0, "scale must be non-zero"),
    (1.0, np.ones(2), r"shift must be a number or have shape \(3,\)"),
    (1.0, [0.0, np.nan, 0.0], "scale and shift must be finite"),
    (["a", "b", "c"], 0.0, "scale must be real numbers"),
])
def test_affine_transformed_rejects_bad_maps(scale, shift, match):
    with pytest.raises((ValueError, TypeError), match=match):
        AffineTransformed(Gaussian(np.zeros(3)), scale, shift)


def test_rbm_gibbs_sampler_matches_exact_moments():
    # summing out x, the marginal of h is proportional to exp(c.h + ||b + B h / 2||^2 / 2),
    # and x | h ~ N(b + B h / 2, I): the exact mean of x is a finite sum over h
    rbm = _rbm(dx=4, dh=3, burn_in=300)
    H = np.array(np.meshgrid(*[[-1.0, 1.0]] * 3)).reshape(3, -1).T
    means = rbm.b + 0.5 * H @ rbm.B.T
    logw = H @ rbm.c + 0.5 * np.sum(means**2, axis=1)
    w = np.exp(logw - logw.max())
    w /= w.sum()
    exact = w @ means
    X = rbm.rvs(20000, random_state=0)
    se = X.std(0) / np.sqrt(20000)
    assert np.all(np.abs(X.mean(0) - exact) < 4 * se + 1e-3)
    second = w @ (means**2 + 1.0)
    np.testing.assert_allclose((X**2).mean(0), second, rtol=0.03)


def test_rbm_samples_do_not_depend_on_threads_and_pass_a_ksd_test():
    rbm = _rbm(dx=10, dh=5, burn_in=200)
    with numba_threads(1):
        a = rbm.rvs(300, random_state=4)
    with numba_threads(2):
        b = rbm.rvs(300, random_state=4)
    assert np.array_equal(a, b)
    assert KSDTest(rbm, n_bootstrap=500, random_state=0).test(a).pvalue > 0.01


def test_rbm_gibbs_chains_are_the_burn_in_of_rvs():
    # sweep k of gibbs_chains is rvs with burn_in=k, drawn one sweep at a time
    rbm = _rbm(dx=5, dh=3, burn_in=7)
    states = list(rbm.gibbs_chains(20, 7, random_state=2))
    assert len(states) == 7 and all(S.shape == (20, 5) for S in states)
    np.testing.assert_array_equal(states[-1], rbm.rvs(20, random_state=2, chunk=1))
    assert not np.shares_memory(states[0], states[1])
    assert not np.array_equal(states[0], states[1])
    with pytest.raises(ValueError, match="n_sweeps"):
        rbm.gibbs_chains(20, -1)


def test_rvs_kind_says_how_each_model_samples():
    # exact samplers, Gibbs chains, and models without a sampler
    from sklearn.mixture import GaussianMixture as SkGaussianMixture
    gm = SkGaussianMixture(2, random_state=0).fit(np.random.default_rng(0).normal(size=(50, 2)))
    exact = [Gaussian(np.zeros(2)), Laplace(2), StudentT(2, df=3), ICA(np.eye(2)), Banana(2),
             GaussianMixture([0.5, 0.5], np.eye(2), np.stack([np.eye(2)] * 2)),
             AffineTransformed(Laplace(2), [2.0, 1.0], [0.0, 1.0]), PPCA(np.ones((3, 1))),
             Categorical(np.full((2, 3), 1 / 3)), from_estimator(gm)]
    assert [rvs_kind(m) for m in exact] == ["exact"] * len(exact)
    rbm = BinaryRBM(np.ones((3, 2)), np.zeros(3), np.zeros(2))
    assert rvs_kind(_rbm()) == rvs_kind(rbm) == "mcmc"
    assert rvs_kind(AffineTransformed(_rbm(dx=2, dh=1), [2.0, 1.0], [0.0, 0.0])) == "mcmc"

    class ScoreOnly(Distribution):
        dim = 2

        def _grad_logpdf(self, X):
            return -X

    class WithRvs:
        def rvs(self, n, random_state=None):
            return np.zeros((n, 2))

    assert rvs_kind(ScoreOnly()) is None and rvs_kind(lambda X: -X) is None
    assert rvs_kind(WithRvs()) == "exact"
    WithRvs.rvs_kind = "mcmc"
    assert rvs_kind(WithRvs()) == "mcmc"
    WithRvs.rvs_kind = "gibbs"
    with pytest.raises(ValueError, match="model.rvs_kind must be"):
        rvs_kind(WithRvs())


def test_distribution_validation():
    with pytest.raises(ValueError, match="cov"):
        Gaussian(np.zeros(2), np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="positive definite"):
        Gaussian(np.zeros(2), np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="mean must be finite"):
        Gaussian(np.array([np.nan, 0.0]))
    with pytest.raises(ValueError, match="mean must be a 1-D array"):
        Gaussian(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="dim"):
        Laplace(0)
    with pytest.raises(ValueError, match="means must be a 2-D array"):
        GaussianMixture([0.5, 0.5], np.zeros((2, 2, 2)), np.stack([np.eye(2)] * 2))
    with pytest.raises(ValueError, match="df"):
        StudentT(2, df=-1)
    with pytest.raises(ValueError, match="B must be"):
        GaussBernRBM(np.ones((3, 2)), np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match="shape"):
        Gaussian(np.zeros(2)).grad_logpdf(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="n must be"):
        Laplace(2).rvs(0)
