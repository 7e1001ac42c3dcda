r"""Metropolis accept/reject passes of the vectorised MCMC samplers.

Every row of ``Z`` is an independent chain (one per data point). The passes are
serial: their work is O(n d) per step, far below what pays for starting threads
(a parallel pass measured several hundred times slower at n = 300, d = 10 on a
loaded two-core machine). The uniform draws come in as ``logu`` (drawn in NumPy).
"""

import numpy as np
from numba import njit


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
        if np.isfinite(log_ratio) and logu[i] < log_ratio:
            for k in range(d):
                Z[i, k] = Zp[i, k]
                G[i, k] = Gp[i, k]
            lp[i] = lpp[i]
            accepted[i] += 1


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
        if np.isfinite(log_ratio) and logu[i] < log_ratio:
            for k in range(d):
                Z[i, k] = Zp[i, k]
                G[i, k] = Gp[i, k]
            lp[i] = lpp[i]
            accepted[i] += 1
