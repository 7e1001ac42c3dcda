r"""SVGD and sliced SVGD update directions.

SVGD (Liu & Wang 2016), with :math:`\kappa` the radial profile of the kernel,

.. math::

    \phi(x_i) = \frac1N \sum_j \left[k(x_j, x_i)\, s(x_j) + \nabla_{x_j} k(x_j, x_i)\right],
    \qquad \nabla_{x_j} k(x_j, x_i) = 2\kappa'(\|x_j - x_i\|^2)\,(x_j - x_i).

:func:`svgd_kernel_matrices` fills :math:`K` and :math:`K' = \kappa'(t_{ij})` from a
Gram matrix (resolving a median bandwidth on the way); the caller finishes with two BLAS products,
:math:`N\phi = K S + 2(K' X - \mathrm{diag}(K'\mathbf 1) X)`.

Sliced SVGD (Gong et al. 2021, Algorithm 2, slices :math:`r_d = e_d`), with the
projections :math:`u = X G^\top` and one 1-D kernel :math:`\kappa_d` per output
dimension:

.. math::

    \phi_d(x_i) = \frac1N \sum_j \left[\kappa_d(u_{jd}, u_{id})\, s_d(x_j)
    + G_{dd}\, \partial_{u_{jd}} \kappa_d(u_{jd}, u_{id})\right].
"""

import numpy as np
from numba import njit, prange

from .sliced import fast_exp
from .stein import MIN_BANDWIDTH, RBF, radial_profile


@njit(cache=True, parallel=True)
def svgd_kernel_matrices(code, beta, scale, h, G, nx, K, K1):
    """Fill ``K`` and ``K1`` (kernel and profile derivative) from a Gram matrix; return h.

    ``t_ij = max(nx_i + nx_j - 2 G_ij, 0)`` (zero on the diagonal). With ``h <= 0``
    the bandwidth is ``scale`` times the median of ``sqrt(t_ij)``, ``i < j`` (median of
    the positive ones if that is zero, 1 if there are none), and at least
    ``MIN_BANDWIDTH`` (whose scale constants are the largest float64 holds).

    Parameters
    ----------
    code : int
        0 RBF, 1 IMQ (exponent ``beta``).
    scale, h : float
        Median factor, or a fixed bandwidth ``h > 0``.
    G : float64 (N, N)
        Gram matrix of the centred particles.
    nx : float64 (N,)
        Squared norms of the centred particles.
    K, K1 : float64 (N, N)
        Outputs.
    """
    n = G.shape[0]
    for i in prange(n):
        for j in range(n):
            t = nx[i] + nx[j] - 2.0 * G[i, j]
            K[i, j] = t if (t > 0.0 and i != j) else 0.0
    if h <= 0.0:
        h = 1.0
        if n > 1:
            buf = np.empty(n * (n - 1) // 2)
            c = 0
            for i in range(n):
                for j in range(i + 1, n):
                    buf[c] = K[i, j]
                    c += 1
            med = np.median(buf)
            if med <= 0.0:
                pos = buf[buf > 0.0]
                med = np.median(pos) if pos.size > 0 else 1.0
            h = max(np.sqrt(med) * scale, MIN_BANDWIDTH)
    inv = (1.0 / h) / h  # no overflow in h * h for a wide kernel
    p0 = 0.5 * inv if code == RBF else inv
    for i in prange(n):
        K[i, i] = 1.0
        K1[i, i] = radial_profile(code, 0.0, p0, beta)[1]
        for j in range(i + 1, n):  # symmetric: row i owns (i, j > i) and (j > i, i)
            k, k1, _ = radial_profile(code, K[i, j], p0, beta)
            K[i, j] = k
            K1[i, j] = k1
            K[j, i] = k
            K1[j, i] = k1
    return h


@njit(cache=True, parallel=True)
def sliced_svgd_terms(code, p0, p1, U, S, gdiag, drive, repulse):
    r"""Driving and repulsive sums of the sliced SVGD direction (not divided by N).

    ``drive[i, d] = sum_j kappa_d(t) S[j, d]`` and
    ``repulse[i, d] = sum_j G_dd 2 (u_jd - u_id) kappa_d'(t)``, ``t = (u_jd - u_id)^2``.

    Parameters
    ----------
    code : int
        0 RBF, 1 IMQ.
    p0 : float64 (D,)
        Per-dimension profile scale (RBF ``1/(2 h_d^2)``, IMQ ``1/h_d^2``).
    p1 : float
        IMQ exponent.
    U, S : float64 (N, D), C-contiguous
        Projections ``X G^T`` and scores.
    gdiag : float64 (D,)
        ``G_dd = r_d . g_d``.
    drive, repulse : float64 (N, D)
        Outputs; row ``i`` is owned by iteration ``i``.
    """
    n, m = U.shape
    for i in prange(n):
        di = drive[i]
        ri = repulse[i]
        ui = U[i]
        for k in range(m):
            di[k] = 0.0
            ri[k] = 0.0
        for j in range(n):
            uj = U[j]
            sj = S[j]
            if code == RBF:
                for k in range(m):
                    delta = uj[k] - ui[k]
                    q = p0[k]
                    kk = fast_exp(-delta * delta * q)
                    di[k] += kk * sj[k]
                    ri[k] -= 2.0 * gdiag[k] * delta * q * kk
            else:
                for k in range(m):
                    delta = uj[k] - ui[k]
                    k0, k1, _ = radial_profile(code, delta * delta, p0[k], p1)
                    di[k] += k0 * sj[k]
                    ri[k] += 2.0 * gdiag[k] * delta * k1
    return drive, repulse


@njit(cache=True)
def sliced_svgd_terms_symmetric(code, p0, p1, U, S, gdiag, drive, repulse):
    """Serial :func:`sliced_svgd_terms` that evaluates each kernel pair once.

    Row ``i`` receives the terms of ``j < i`` while row ``j`` is processed, then its
    own term, then ``j > i``: the same summation order as the row-parallel pass, so
    the results are bitwise identical, with half the kernel evaluations.
    """
    n, m = U.shape
    for i in range(n):
        for k in range(m):
            drive[i, k] = 0.0
            repulse[i, k] = 0.0
    for i in range(n):
        ui = U[i]
        si = S[i]
        di = drive[i]
        ri = repulse[i]
        for k in range(m):
            di[k] += si[k]  # kappa(0) = 1 for both kernels; the self-repulsion is 0
        for j in range(i + 1, n):
            uj = U[j]
            sj = S[j]
            dj = drive[j]
            rj = repulse[j]
            if code == RBF:
                for k in range(m):
                    delta = uj[k] - ui[k]
                    q = p0[k]
                    kk = fast_exp(-delta * delta * q)
                    di[k] += kk * sj[k]
                    dj[k] += kk * si[k]
                    t = 2.0 * gdiag[k] * delta * q * kk
                    ri[k] -= t
                    rj[k] += t
            else:
                for k in range(m):
                    delta = uj[k] - ui[k]
                    k0, k1, _ = radial_profile(code, delta * delta, p0[k], p1)
                    di[k] += k0 * sj[k]
                    dj[k] += k0 * si[k]
                    t = 2.0 * gdiag[k] * delta * k1
                    ri[k] += t
                    rj[k] -= t
    return drive, repulse
