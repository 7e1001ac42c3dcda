"""Tests of the vectorised MCMC samplers (skstein.samplers)."""

import numpy as np
import pytest

from skstein._numba.samplers import hmc_accept, mala_accept
from skstein.distributions import PPCA
from skstein.samplers import HMC, MALA, initial_state

MEAN = np.array([1.0, -2.0])
COV = np.array([[1.0, 0.6], [0.6, 0.5]])
PREC = np.linalg.inv(COV)


def gaussian_target(Z):
    D = Z - MEAN
    G = -D @ PREC
    return 0.5 * np.einsum("ij,ij->i", D, G), G


# HMC trajectory 0.6: far from half a period of either principal direction (no resonance)
SAMPLERS = [MALA(step_size=0.5), HMC(step_size=0.2, n_steps=3)]


@pytest.mark.parametrize("sampler", SAMPLERS, ids=repr)
def test_gaussian_is_left_invariant(sampler):
    # start 4000 chains at exact draws; after 30 steps the states must still be exact
    # draws: mean within 0.06 (about 4 standard errors) and covariance within 0.08
    rng = np.random.default_rng(0)
    n = 4000
    Z0 = MEAN + rng.standard_normal((n, 2)) @ np.linalg.cholesky(COV).T
    draws, acc = sampler.sample(gaussian_target, Z0, 30, random_state=1, return_acceptance=True)
    last = draws[-1]
    np.testing.assert_allclose(last.mean(axis=0), MEAN, atol=0.06)
    np.testing.assert_allclose(np.cov(last.T), COV, atol=0.08)
    assert 0.5 < acc.mean() <= 1.0


@pytest.mark.parametrize("sampler", SAMPLERS, ids=repr)
def test_chains_converge_from_a_biased_start(sampler):
    Z0 = np.full((3000, 2), 5.0)
    draws = sampler.sample(gaussian_target, Z0, 1, burn_in=300, random_state=2)
    np.testing.assert_allclose(draws[0].mean(axis=0), MEAN, atol=0.07)
    np.testing.assert_allclose(np.cov(draws[0].T), COV, atol=0.1)


@pytest.mark.parametrize("sampler", SAMPLERS, ids=repr)
def test_reproducible(sampler):
    Z0 = np.zeros((50, 2))
    a = sampler.sample(gaussian_target, Z0, 10, random_state=3)
    b = sampler.sample(gaussian_target, Z0, 10, random_state=3)
    c = sampler.sample(gaussian_target, Z0, 10, random_state=4)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert a.shape == (10, 50, 2)


def test_ppca_posterior_invariance_under_mala_and_hmc():
    rng = np.random.default_rng(5)
    model = PPCA(rng.uniform(0, 1, size=(8, 3)), 0.5)
    x = model.rvs(1, random_state=6)
    X = np.repeat(x, 3000, axis=0)  # 3000 chains on the same posterior
    mean, cov = model.posterior_mean_cov(x)
    for sampler in (MALA(step_size=0.25), HMC(step_size=0.15, n_steps=8)):
        Z = model.with_sampler(sampler).sample_posterior(X, 150, random_state=7)
        last = Z[-1]
        sd = np.sqrt(np.diag(cov))
        np.testing.assert_allclose(last.mean(axis=0), mean[0],
                                   atol=5 * sd.max() / np.sqrt(3000) + 0.02)
        np.testing.assert_allclose(np.cov(last.T), cov, atol=0.15 * np.abs(cov).max())


def test_hmc_jitter_breaks_resonance():
    # trajectory 1.0 is about 0.88 of half a period of the narrow direction: without
    # jitter the chains from one start barely spread there; with jitter they mix
    Z0 = np.full((3000, 2), 5.0)
    draws = HMC(0.2, 5, jitter=0.3).sample(gaussian_target, Z0, 1, burn_in=300, random_state=2)
    np.testing.assert_allclose(np.cov(draws[0].T), COV, atol=0.1)
    stuck = HMC(0.2, 5).sample(gaussian_target, Z0, 1, burn_in=300, random_state=2)
    assert np.abs(np.cov(stuck[0].T) - COV).max() > 0.3


def test_mala_accept_matches_numpy():
    rng = np.random.default_rng(8)
    n, d, eps = 200, 3, 0.3
    Z, Zp = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    G, Gp = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    lp, lpp = rng.normal(size=n), rng.normal(size=n)
    logu = np.log(rng.random(n))
    fwd = np.sum((Zp - Z - 0.5 * eps**2 * G) ** 2, axis=1)
    bwd = np.sum((Z - Zp - 0.5 * eps**2 * Gp) ** 2, axis=1)
    accept = logu < lpp - lp + (fwd - bwd) / (2 * eps**2)
    expected = np.where(accept[:, None], Zp, Z)
    acc = np.zeros(n, dtype=np.int64)
    mala_accept(Z, G, lp, Zp, Gp, lpp, logu, eps, acc)
    np.testing.assert_array_equal(Z, expected)
    np.testing.assert_array_equal(acc, accept.astype(np.int64))
    assert 0 < accept.sum() < n


def test_hmc_accept_matches_numpy():
    rng = np.random.default_rng(9)
    n, d = 200, 3
    Z, Zp = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    G, Gp = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    lp, lpp = rng.normal(size=n), rng.normal(size=n)
    P0, P1 = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    logu = np.log(rng.random(n))
    accept = logu < lpp - lp - 0.5 * (np.sum(P1**2, 1) - np.sum(P0**2, 1))
    expected = np.where(accept[:, None], Zp, Z)
    acc = np.zeros(n, dtype=np.int64)
    hmc_accept(Z, G, lp, Zp, Gp, lpp, P0, P1, logu, acc)
    np.testing.assert_array_equal(Z, expected)
    assert 0 < accept.sum() < n


def test_non_finite_proposals_are_rejected():
    def target(Z):
        lp = np.where(Z[:, 0] > 0.5, -np.inf, -0.5 * np.sum(Z**2, axis=1))
        return lp, -Z

    draws = MALA(step_size=2.0).sample(target, np.zeros((100, 1)), 20, random_state=0)
    assert np.all(np.isfinite(draws)) and np.all(draws <= 0.5)


@pytest.mark.parametrize(
    "sampler, match",
    [(MALA(step_size=-1.0), "step_size"), (MALA(step_size="big"), "step_size"),
     (HMC(n_steps=0), "n_steps"), (HMC(step_size=0.0), "step_size"),
     (HMC(jitter=1.0), "jitter"),
     (MALA(init=object()), "init")],
)
def test_invalid_parameters(sampler, match):
    with pytest.raises((ValueError, TypeError), match=match):
        sampler.sample(gaussian_target, np.zeros((5, 2)), 3)


def test_invalid_arguments():
    with pytest.raises(ValueError, match="n_samples"):
        MALA().sample(gaussian_target, np.zeros((5, 2)), 0)
    with pytest.raises(ValueError, match="burn_in"):
        MALA().sample(gaussian_target, np.zeros((5, 2)), 2, burn_in=-3)
    with pytest.raises(ValueError, match="Z0"):
        MALA().sample(gaussian_target, np.zeros(5), 2)


def test_initial_state():
    assert initial_state("zeros", 4, 2).shape == (4, 2)
    np.testing.assert_array_equal(initial_state(3.0, 4, 2), np.full((4, 2), 3.0))
    np.testing.assert_array_equal(initial_state([1.0, 2.0], 3, 2), [[1, 2]] * 3)
    a = initial_state(None, 4, 2, random_state=0)
    np.testing.assert_array_equal(a, initial_state(None, 4, 2, random_state=0))
    with pytest.raises(ValueError, match="init"):
        initial_state([1.0, 2.0, 3.0], 4, 2)
    with pytest.raises(ValueError, match="init"):
        initial_state("prior", 4, 2)
