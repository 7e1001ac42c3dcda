"""The ICA model: score, log density, parameter gradients (skstein.distributions.ICA)."""

import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone

from skstein.distributions import ICA
from skstein.learning import KSDLoss, MaxSKSDLoss, model_value_and_grad


def _central_diff(f, A, eps=1e-6):
    grad = np.empty_like(A)
    for idx in np.ndindex(A.shape):
        Ap, Am = A.copy(), A.copy()
        Ap[idx] += eps
        Am[idx] -= eps
        grad[idx] = (f(Ap) - f(Am)) / (2 * eps)
    return grad


BASES = ["student-t", "laplace"]


@pytest.mark.parametrize("base", BASES)
def test_logpdf_matches_scipy_change_of_variables(base):
    model = ICA.random(3, base=base, random_state=0)
    X = model.rvs(50, random_state=1)
    Z = X @ model.unmixing.T
    src = stats.t(df=5) if base == "student-t" else stats.laplace()
    ref = src.logpdf(Z).sum(axis=1) + np.log(abs(np.linalg.det(model.unmixing)))
    np.testing.assert_allclose(model.logpdf(X), ref, rtol=1e-12)
    np.testing.assert_allclose(model.mixing @ model.unmixing, np.eye(3), atol=1e-12)


def test_density_integrates_to_one_in_2d():
    model = ICA(np.array([[1.0, 0.4], [-0.3, 0.8]]))
    g = np.linspace(-40, 40, 801)
    XX = np.stack(np.meshgrid(g, g), axis=-1).reshape(-1, 2)
    mass = np.exp(model.logpdf(XX)).sum() * (g[1] - g[0]) ** 2
    assert abs(mass - 1) < 2e-3  # the t(5) tails beyond the grid carry the rest


@pytest.mark.parametrize("base", BASES)
def test_score_matches_finite_differences(base):
    model = ICA.random(4, base=base, random_state=2)
    X = model.rvs(6, random_state=3)
    fd = np.stack([_central_diff(lambda x: model.logpdf(x[None])[0], x) for x in X])
    np.testing.assert_allclose(model.grad_logpdf(X), fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("base", BASES)
def test_vjp_matches_finite_differences(base):
    model = ICA.random(3, base=base, random_state=4)
    X = model.rvs(7, random_state=5)
    V = np.random.default_rng(6).standard_normal(X.shape)

    def f(B):
        return float(np.sum(ICA(B, base=base).grad_logpdf(X) * V))

    np.testing.assert_allclose(model.grad_logpdf_vjp(X, V), _central_diff(f, model.unmixing),
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("base", BASES)
def test_loglik_gradient_matches_finite_differences(base):
    model = ICA.random(3, base=base, random_state=7)
    X = model.rvs(20, random_state=8)

    def f(B):
        return float(np.mean(ICA(B, base=base).logpdf(X)))

    np.testing.assert_allclose(model.grad_loglik(X), _central_diff(f, model.unmixing),
                               rtol=1e-6, atol=1e-7)


def test_ksd_loss_gradient_in_the_unmixing_matrix():
    # the whole chain: KSD -> dL/dS -> VJP, against finite differences in B
    model = ICA.random(3, random_state=9)
    X = ICA.random(3, random_state=10).rvs(40, random_state=11)
    for loss in (KSDLoss(bandwidth=1.5), MaxSKSDLoss(bandwidth=1.2, statistic="v")):
        _, grad = model_value_and_grad(clone(loss), model, X)

        def f(B):  # a fresh loss each time: the same (initial) directions
            return clone(loss).value_and_grad(X, ICA(B).grad_logpdf(X)).value

        np.testing.assert_allclose(grad, _central_diff(f, model.unmixing, eps=1e-6),
                                   rtol=1e-5, atol=1e-8)


def test_rvs_has_the_model_covariance():
    model = ICA.random(3, random_state=12)
    X = model.rvs(200000, random_state=13)
    W = model.mixing
    np.testing.assert_allclose(np.cov(X.T), 5 / 3 * W @ W.T, rtol=0.05, atol=0.02)


def test_random_respects_the_condition_number_and_validation():
    for seed in range(5):
        B = ICA.random(20, random_state=seed).unmixing
        assert np.linalg.cond(B) < 20
    B1 = ICA.random(6, scale=0.5, random_state=3).unmixing
    B2 = ICA.random(6, scale=0.5, random_state=3).unmixing
    assert np.array_equal(B1, B2)
    with pytest.raises(ValueError, match="square"):
        ICA(np.ones((2, 3)))
    with pytest.raises(ValueError, match="invertible"):
        ICA(np.ones((2, 2)))
    with pytest.raises(ValueError, match="base"):
        ICA(np.eye(2), base="gauss")
    with pytest.raises(ValueError, match="shape"):
        ICA(np.eye(2)).grad_logpdf(np.ones((3, 3)))
    with pytest.raises(ValueError, match="V must"):
        ICA(np.eye(2)).grad_logpdf_vjp(np.ones((3, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="max_condition"):
        ICA.random(3, max_condition=0.5)
