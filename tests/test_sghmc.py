"""The SGHMC sampler (skstein.samplers.SGHMC)."""

import numpy as np
import pytest
from scipy.linalg import solve_discrete_lyapunov

from skstein._numba import numba_threads
from skstein._numba.samplers import sghmc_update, sghmc_update_parallel
from skstein.distributions import Gaussian
from skstein.samplers import SGHMC


def _gauss(Z):
    return -0.5 * np.sum(Z**2, axis=1), -Z


def _stationary_variance(eps, C, sigma_g, noise_estimate, s2=1.0):
    """Exact stationary variance of z for the discretised SGHMC on N(0, s2) in 1-D.

    x = (z, v): v' = (1 - eps C) v - eps z / s2 + eps sigma_g xi + s_i eta,
    z' = z + eps v'.
    """
    a = 1.0 - eps * C
    s_i = np.sqrt(2.0 * (C - noise_estimate) * eps)
    Mv = np.array([-eps / s2, a])
    M = np.array([[1.0, 0.0], [0.0, 0.0]]) + np.outer([eps, 1.0], Mv)
    noise_var = (eps * sigma_g) ** 2 + s_i**2
    Q = noise_var * np.outer([eps, 1.0], [eps, 1.0])
    return solve_discrete_lyapunov(M, Q)[0, 0]


@pytest.mark.parametrize("eps,C,sg,B", [(0.1, 1.0, 0.0, 0.0), (0.2, 2.0, 3.0, 0.0),
                                        (0.1, 1.0, 3.0, "exact")])
def test_stationary_variance_matches_the_discrete_dynamics(eps, C, sg, B):
    sampler = SGHMC(eps, C, gradient_noise=sg, noise_estimate=B)
    draws = sampler.sample(_gauss, np.zeros((4000, 1)), 20, burn_in=400, thin=50,
                           random_state=0)
    Bhat = 0.5 * eps * sg**2 if B == "exact" else B
    ref = _stationary_variance(eps, C, sg, Bhat)
    var = draws.var()
    # 80000 draws, correlated at most weakly 50 steps apart: sd of the estimate < 1.5%
    assert abs(var / ref - 1) < 0.04, (var, ref)
    if sg > 0 and B == 0.0:
        assert ref > 1.2  # uncorrected gradient noise heats the chain
    if B == "exact":
        assert abs(ref - _stationary_variance(eps, C, 0.0, 0.0)) < 1e-12


def test_correlated_gaussian_target_and_distribution_target():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((3, 3))
    cov = A @ A.T / 3 + 0.5 * np.eye(3)
    target = Gaussian(np.zeros(3), cov)
    draws = SGHMC(0.05, 1.0).sample(target, np.zeros((600, 3)), 5, burn_in=1000, thin=100,
                                    random_state=2)
    X = draws.reshape(-1, 3)
    np.testing.assert_allclose(np.cov(X.T), cov, atol=0.12 * np.abs(cov).max())


def test_same_seed_same_chains_and_thread_independence():
    Z0 = np.random.default_rng(3).standard_normal((50, 4))
    a = SGHMC(0.05, gradient_noise=2.0).sample(_gauss, Z0, 5, burn_in=10, random_state=7)
    b = SGHMC(0.05, gradient_noise=2.0).sample(_gauss, Z0, 5, burn_in=10, random_state=7)
    c = SGHMC(0.05, gradient_noise=2.0).sample(_gauss, Z0, 5, burn_in=10, random_state=8)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    # thinning keeps every thin-th state of the same chain
    full = SGHMC(0.05).sample(_gauss, Z0, 12, random_state=1)
    thinned = SGHMC(0.05).sample(_gauss, Z0, 3, burn_in=3, thin=3, random_state=1)
    np.testing.assert_array_equal(thinned, full[[5, 8, 11]])
    # serial and chain-parallel kernels agree exactly
    rng = np.random.default_rng(4)
    args = [rng.standard_normal((300, 5)) for _ in range(5)]
    outs = []
    for fn in (sghmc_update, sghmc_update_parallel):
        Z, V = args[0].copy(), args[1].copy()
        with numba_threads(2):
            fn(Z, V, args[2], args[3], args[4], 0.1, 1.0, 0.5, 0.3)
        outs.append((Z, V))
    assert np.array_equal(outs[0][0], outs[1][0]) and np.array_equal(outs[0][1], outs[1][1])


def test_iterate_yields_every_step():
    states = list(SGHMC(0.1).iterate(_gauss, np.ones((3, 2)), 4, random_state=0))
    assert len(states) == 4 and all(s.shape == (3, 2) for s in states)
    assert not np.array_equal(states[0], states[1])


def test_validation():
    Z0 = np.zeros((5, 2))
    with pytest.raises(ValueError, match="step_size"):
        SGHMC(-1.0).sample(_gauss, Z0, 2)
    with pytest.raises(ValueError, match="exceeds the friction"):
        SGHMC(0.1, 0.1, noise_estimate=0.5).sample(_gauss, Z0, 2)
    with pytest.raises(ValueError, match="reverses"):
        SGHMC(0.5, 3.0).sample(_gauss, Z0, 2)
    with pytest.raises(ValueError, match="gradient_noise"):
        SGHMC(0.1, gradient_noise=-1.0).sample(_gauss, Z0, 2)
    with pytest.raises(ValueError, match="noise_estimate"):
        SGHMC(0.1, noise_estimate="auto").sample(_gauss, Z0, 2)
    with pytest.raises(ValueError, match="Z0"):
        SGHMC(0.1).sample(_gauss, np.full((5, 2), np.nan), 2)
    with pytest.raises(ValueError, match="momentum"):
        SGHMC(0.1).sample(_gauss, Z0, 2, momentum=np.zeros((4, 2)))
    with pytest.raises(ValueError, match="gradient of shape"):
        SGHMC(0.1).sample(lambda Z: (np.zeros(5), np.zeros((5, 3))), Z0, 2)
    with pytest.raises(TypeError, match="target"):
        SGHMC(0.1).sample(42, Z0, 2)
    with pytest.raises(FloatingPointError, match="diverged"), np.errstate(over="ignore"):
        SGHMC(0.9, 1.0).sample(lambda Z: (np.zeros(2), -1e200 * Z), np.ones((2, 1)), 50)


def test_iterate_checks_its_arguments_when_called():
    with pytest.raises(ValueError, match="step_size"):
        SGHMC(0.0).iterate(_gauss, np.zeros((2, 2)), 3)
    with pytest.raises(ValueError, match="Z0"):
        SGHMC(0.1).iterate(_gauss, np.zeros(3), 3)
