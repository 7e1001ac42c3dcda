r"""Metropolis accept/reject passes of the vectorised MCMC samplers.

Every row of ``Z`` is an independent chain (one per data point). The passes are
serial: their work is O(n d) per step, far below what pays for starting threads
(a parallel pass measured several hundred times slower at n = 300, d = 10 on a
loaded two-core machine). The uniform draws come in as ``logu`` (drawn in NumPy).

The SGHMC update (:func:`sghmc_update`) has no accept/reject step; it comes serial and
chain-parallel (for many chains), with identical results, and its normal draws come
in as arrays too.
"""

import numpy as np
from numba import njit, prange

from ._jit import PARALLEL


@njit(cache=True, inline="always")
def _accept_row(i, log_ratio, Z, G, lp, Zp, Gp, lpp, logu, accepted):
    """Move chain ``i`` to its proposal when ``log u_i < log_ratio`` (a finite ratio)."""
    if np.isfinite(log_ratio) and logu[i] < log_ratio:
        for k in range(Z.shape[1]):
            Z[i, k] = Zp[i, k]
            G[i, k] = Gp[i, k]
        lp[i] = lpp[i]
        accepted[i] += 1


@njit(cache=True)
def mala_accept(Z, G, lp, Zp, Gp, lpp, logu, step, accepted):
    r"""Metropolis-adjusted Langevin accept/reject, in place.

    The proposal is :math:`z' = z + \tfrac{\epsilon^2}{2} g(z) + \epsilon \xi`, so with
    :math:`q(z' | z) \propto \exp(-\|z' - z - \tfrac{\epsilon^2}{2} g(z)\|^2 / (2\epsilon^2))`
    row ``i`` moves to ``Zp[i]`` when

    .. math::

        \log u_i < \log\pi(z'_i) - \log\pi(z_i) + \log q(z_i | z'_i) - \log q(z'_i | z_i).

    Parameters
    ----------
    Z, G : float64 (n, d)
        Current states and their gradients :math:`\nabla\log\pi`, overwritten on acceptance.
    lp : float64 (n,)
        Current log densities, overwritten on acceptance.
    Zp, Gp : float64 (n, d); lpp : float64 (n,)
        Proposals, their gradients and log densities.
    logu : float64 (n,)
        Logs of uniform(0, 1) draws.
    step : float
        :math:`\epsilon`.
    accepted : int64 (n,)
        Incremented for each accepted row.
    """
    n, d = Z.shape
    c = 0.5 * step * step
    inv = 1.0 / (2.0 * step * step)
    for i in range(n):
        fwd = 0.0
        bwd = 0.0
        for k in range(d):
            a = Zp[i, k] - Z[i, k] - c * G[i, k]
            b = Z[i, k] - Zp[i, k] - c * Gp[i, k]
            fwd += a * a
            bwd += b * b
        log_ratio = lpp[i] - lp[i] + (fwd - bwd) * inv
        _accept_row(i, log_ratio, Z, G, lp, Zp, Gp, lpp, logu, accepted)


@njit(cache=True)
def hmc_accept(Z, G, lp, Zp, Gp, lpp, P0, P1, logu, accepted):
    r"""Hamiltonian Monte Carlo accept/reject, in place.

    Row ``i`` moves to the end ``Zp[i]`` of its leapfrog trajectory when
    :math:`\log u_i < [\log\pi(z'_i) - \tfrac12\|p'_i\|^2] - [\log\pi(z_i) - \tfrac12\|p_i\|^2]`,
    with ``P0`` the initial and ``P1`` the final momenta. Other arguments as in
    :func:`mala_accept`.
    """
    n, d = Z.shape
    for i in range(n):
        k0 = 0.0
        k1 = 0.0
        for k in range(d):
            k0 += P0[i, k] * P0[i, k]
            k1 += P1[i, k] * P1[i, k]
        log_ratio = lpp[i] - lp[i] - 0.5 * (k1 - k0)
        _accept_row(i, log_ratio, Z, G, lp, Zp, Gp, lpp, logu, accepted)


def _sghmc_body(Z, V, G, noise_grad, noise_inj, step, friction, grad_sd, inj_sd, i):
    d = Z.shape[1]
    decay = 1.0 - step * friction
    for k in range(d):
        g = G[i, k]
        if grad_sd > 0.0:
            g += grad_sd * noise_grad[i, k]
        v = decay * V[i, k] + step * g + inj_sd * noise_inj[i, k]
        V[i, k] = v
        Z[i, k] += step * v


_sghmc_body_jit = njit(cache=True, inline="always")(_sghmc_body)


@njit(cache=True)
def sghmc_update(Z, V, G, noise_grad, noise_inj, step, friction, grad_sd, inj_sd):
    r"""One SGHMC step of every chain (row), in place (Chen, Fox & Guestrin 2014).

    With unit mass, friction :math:`C`, step size :math:`\epsilon`, the gradient
    :math:`g = \nabla\log\pi(z)` plus simulated noise :math:`\sigma_g \xi`, and injected
    noise of standard deviation :math:`\sigma_i`,

    .. math::

        v \leftarrow (1 - \epsilon C) v + \epsilon (g + \sigma_g \xi) + \sigma_i \eta,
        \qquad z \leftarrow z + \epsilon v.

    Parameters
    ----------
    Z, V : float64 (n, d)
        Positions and momenta, overwritten.
    G : float64 (n, d)
        Exact gradients at ``Z``.
    noise_grad, noise_inj : float64 (n, d)
        Standard normal draws (``noise_grad`` is not read when ``grad_sd == 0``).
    step, friction, grad_sd, inj_sd : float
    """
    for i in range(Z.shape[0]):
        _sghmc_body_jit(Z, V, G, noise_grad, noise_inj, step, friction, grad_sd, inj_sd, i)


@njit(cache=True, parallel=PARALLEL)
def sghmc_update_parallel(Z, V, G, noise_grad, noise_inj, step, friction, grad_sd, inj_sd):
    """:func:`sghmc_update` with the chains in parallel (identical results)."""
    for i in prange(Z.shape[0]):
        _sghmc_body_jit(Z, V, G, noise_grad, noise_inj, step, friction, grad_sd, inj_sd, i)
