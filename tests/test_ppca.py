"""Tests of the PPCA / factor-analysis latent-variable model."""

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from skstein.distributions import PPCA
from skstein.samplers import HMC, MALA


@pytest.fixture(params=["ppca", "fa"])
def model(request):
    rng = np.random.default_rng(0)
    W = rng.normal(size=(5, 2))
    noise = 0.7 if request.param == "ppca" else rng.uniform(0.3, 1.5, size=5)
    return PPCA(W, noise, mean=rng.normal(size=5))


def _psi(model):
    return np.broadcast_to(np.asarray(model.noise_variance, float), (model.dim,))


def test_logpdf_and_score_are_the_gaussian_marginal(model):
    X = np.random.default_rng(1).normal(size=(20, 5))
    C = model.W @ model.W.T + np.diag(_psi(model))
    np.testing.assert_allclose(model.logpdf(X), multivariate_normal(model.mean, C).logpdf(X),
                               rtol=1e-10)
    np.testing.assert_allclose(model.grad_logpdf(X), -np.linalg.solve(C, (X - model.mean).T).T,
                               rtol=1e-9, atol=1e-12)
    eps = 1e-6
    num = np.stack([(model.logpdf(X + eps * e) - model.logpdf(X - eps * e)) / (2 * eps)
                    for e in np.eye(5)], axis=1)
    np.testing.assert_allclose(model.grad_logpdf(X), num, rtol=1e-6, atol=1e-7)


def test_posterior_is_gaussian_conditioning(model):
    X = np.random.default_rng(2).normal(size=(4, 5))
    psi = _psi(model)
    # joint of (z, x): cov [[I, W^T], [W, C]]
    C = model.W @ model.W.T + np.diag(psi)
    mean_ref = (model.W.T @ np.linalg.solve(C, (X - model.mean).T)).T
    cov_ref = np.eye(2) - model.W.T @ np.linalg.solve(C, model.W)
    mean, cov = model.posterior_mean_cov(X)
    np.testing.assert_allclose(mean, mean_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(cov, cov_ref, rtol=1e-9, atol=1e-12)


def test_marginal_score_is_posterior_mean_of_conditional_score(model):
    X = np.random.default_rng(3).normal(size=(10, 5))
    mean, _ = model.posterior_mean_cov(X)
    # grad_x log p(x | z) is affine in z, so its posterior mean is its value at E[z | x]
    np.testing.assert_allclose(model.grad_logpdf_conditional(X, mean), model.grad_logpdf(X),
                               rtol=1e-9, atol=1e-10)


def test_conditional_score_is_gradient_of_likelihood(model):
    rng = np.random.default_rng(4)
    X, Z = rng.normal(size=(6, 5)), rng.normal(size=(6, 2))
    psi = _psi(model)

    def loglik(X):
        return np.sum(-0.5 * (X - model.mean - Z @ model.W.T) ** 2 / psi, axis=1)

    eps = 1e-6
    num = np.stack([(loglik(X + eps * e) - loglik(X - eps * e)) / (2 * eps) for e in np.eye(5)],
                   axis=1)
    np.testing.assert_allclose(model.grad_logpdf_conditional(X, Z), num, rtol=1e-6, atol=1e-8)


def test_posterior_target_gradient(model):
    rng = np.random.default_rng(5)
    X, Z = rng.normal(size=(6, 5)), rng.normal(size=(6, 2))
    target = model.posterior_target(X)
    lp, G = target(Z)
    eps = 1e-6
    num = np.stack([(target(Z + eps * e)[0] - target(Z - eps * e)[0]) / (2 * eps)
                    for e in np.eye(2)], axis=1)
    np.testing.assert_allclose(G, num, rtol=1e-6, atol=1e-8)
    # log p(x, z) up to a constant in z: differences match the joint density
    psi = _psi(model)

    def logjoint(Z):
        r = X - model.mean - Z @ model.W.T
        return -0.5 * np.sum(r**2 / psi, axis=1) - 0.5 * np.sum(Z**2, axis=1)

    Z2 = Z + 0.3
    np.testing.assert_allclose(target(Z2)[0] - lp, logjoint(Z2) - logjoint(Z), rtol=1e-9)


def test_exact_posterior_draws(model):
    X = np.random.default_rng(6).normal(size=(3, 5))
    Z = model.sample_posterior(X, 20000, random_state=0)
    assert Z.shape == (20000, 3, 2)
    mean, cov = model.posterior_mean_cov(X)
    np.testing.assert_allclose(Z.mean(axis=0), mean, atol=0.03)
    np.testing.assert_allclose(np.cov(Z[:, 1].T), cov, atol=0.03)
    np.testing.assert_array_equal(Z, model.sample_posterior(X, 20000, random_state=0))


@pytest.mark.parametrize("sampler", [MALA(step_size=0.5, init=4.0), HMC(0.3, 5, init="zeros")],
                         ids=repr)
def test_mcmc_posterior_draws(model, sampler):
    x = np.random.default_rng(7).normal(size=(1, 5))
    X = np.repeat(x, 2000, axis=0)
    Z = model.with_sampler(sampler).sample_posterior(X, 200, random_state=1)
    mean, cov = model.posterior_mean_cov(x)
    np.testing.assert_allclose(Z[-1].mean(axis=0), mean[0], atol=0.08)
    np.testing.assert_allclose(np.cov(Z[-1].T), cov, atol=0.08)


def test_rvs_moments(model):
    X = model.rvs(40000, random_state=0)
    np.testing.assert_allclose(X.mean(axis=0), model.mean, atol=0.05)
    np.testing.assert_allclose(np.cov(X.T), model.covariance, atol=0.1)


def test_validation():
    W = np.ones((3, 2))
    with pytest.raises(ValueError, match="noise_variance"):
        PPCA(W, -1.0)
    with pytest.raises(ValueError, match="noise_variance"):
        PPCA(W, [1.0, 1.0])
    with pytest.raises(ValueError, match="W"):
        PPCA(np.ones(3))
    with pytest.raises(ValueError, match="mean"):
        PPCA(W, 1.0, mean=np.zeros(2))
    with pytest.raises(TypeError, match="sampler"):
        PPCA(W, 1.0, sampler="gibbs")
    m = PPCA(W, 1.0)
    with pytest.raises(ValueError, match="Z"):
        m.grad_logpdf_conditional(np.zeros((4, 3)), np.zeros((4, 3)))
    with pytest.raises(ValueError, match="shape"):
        m.grad_logpdf(np.zeros((4, 2)))
