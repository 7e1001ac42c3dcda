r"""Row-parallel sliced Stein kernel passes (maxSKSD).

For ``m`` pairs of a slice :math:`r_k` and a test direction :math:`g_k` the inputs
are the projections :math:`u_{ik} = x_i^\top g_k` (``U``, shape ``(N, m)``),
:math:`a_{ik} = s_p(x_i)^\top r_k` (``A``, shape ``(N, m)``) and
:math:`c_k = r_k^\top g_k`, computed by the caller as matrix products. With
:math:`\delta = u_{ik} - u_{jk}`, :math:`t = \delta^2` and the radial profile
:math:`K(t), K'(t), K''(t), K'''(t)` of the 1-D base kernel (bandwidth
:math:`h_k`; RBF :math:`K = e^{-t/(2h_k^2)}`, IMQ :math:`K = (1 + t/h_k^2)^\beta`),
the sliced Stein kernel of pair ``k`` is

.. math::

    h_k(i, j) = K\, a_i a_j - 2 c\, \delta K' (a_i - a_j) - c^2 (2K' + 4tK'').

Its derivatives, used by the direction search (DESIGN section 3.4), are

.. math::

    \phi = \frac{\partial h}{\partial \delta}
         = 2\delta K' a_i a_j - 2c(a_i - a_j)(K' + 2tK'') - c^2\delta(12K'' + 8tK'''),

    \psi = \frac{\partial h}{\partial c} = -2\delta K'(a_i - a_j) - 2c(2K' + 4tK''),
    \qquad
    \frac{\partial h}{\partial a_i} = K a_j - 2c\,\delta K'.

Every pass is ``prange`` over rows; each iteration owns its output rows, so the
results are bitwise identical for any number of threads. No ``N x N x m`` array is
formed; the only ``N x N`` output is the optional summed Stein matrix.
"""

import numpy as np
from numba import njit, prange

RBF = 0
IMQ = 1


@njit(cache=True, inline="always")
def _profile3(code, t, p0, p1):
    """K, K', K'', K''' in the squared distance (RBF p0 = 1/(2h^2); IMQ p0 = 1/h^2, p1 = beta)."""
    if code == RBF:
        k = np.exp(-t * p0)
        k1 = -p0 * k
        k2 = -p0 * k1
        return k, k1, k2, -p0 * k2
    base = 1.0 + t * p0
    if p1 == -0.5:
        k = 1.0 / np.sqrt(base)
    else:
        k = base**p1
    ib = 1.0 / base
    k1 = p1 * p0 * k * ib
    k2 = (p1 - 1.0) * p0 * k1 * ib
    k3 = (p1 - 2.0) * p0 * k2 * ib
    return k, k1, k2, k3


@njit(cache=True, inline="always")
def _profile2(code, t, p0, p1):
    if code == RBF:
        k = np.exp(-t * p0)
        k1 = -p0 * k
        return k, k1, -p0 * k1
    base = 1.0 + t * p0
    if p1 == -0.5:
        k = 1.0 / np.sqrt(base)
    else:
        k = base**p1
    ib = 1.0 / base
    k1 = p1 * p0 * k * ib
    return k, k1, (p1 - 1.0) * p0 * k1 * ib


@njit(cache=True, parallel=True)
def sliced_stein_rows(code, p0, p1, U, A, c, row0, want_grad, want_grad_r, want_H, H,
                      rowsum, rho, beta, psisum):
    r"""Full rows ``row0 .. row0 + B`` of the sliced Stein kernels, with gradient sums.

    For each row ``i`` and pair ``k`` (sums over all ``j != i``):

    .. math::

        \mathrm{rowsum}_{ik} = \sum_j h_k(i, j), \quad
        \rho_{ik} = \sum_j \phi_k(i, j), \quad
        \beta_{ik} = \sum_j \partial h_k(i, j) / \partial a_i, \quad
        \mathrm{psisum}_{ik} = \sum_j \psi_k(i, j),

    and optionally the summed Stein matrix block ``H[i - row0, j] = sum_k h_k(i, j)``
    (zero diagonal).

    Parameters
    ----------
    code : int
        0 for RBF, 1 for IMQ.
    p0 : float64 (m,)
        Per-pair profile scale (RBF ``1/(2 h_k^2)``, IMQ ``1/h_k^2``).
    p1 : float
        IMQ exponent beta (ignored for RBF).
    U, A : float64 (N, m), C-contiguous
        Projections ``X G^T`` and ``S R^T``.
    c : float64 (m,)
        ``r_k . g_k``.
    row0 : int
        First row of the block; the block has ``rowsum.shape[0]`` rows.
    want_grad, want_grad_r, want_H : bool
        Fill ``rho`` and ``psisum``; ``beta``; ``H``.
    H : float64 (B, N)
        Output block (any shape when not ``want_H``).
    rowsum, rho, beta, psisum : float64 (B, m)
        Outputs (``rho``/``psisum`` and ``beta`` may be any shape when not wanted).
    """
    n, m = U.shape
    nb = rowsum.shape[0]
    for bi in prange(nb):
        i = row0 + bi
        for k in range(m):
            rowsum[bi, k] = 0.0
            if want_grad:
                rho[bi, k] = 0.0
                psisum[bi, k] = 0.0
            if want_grad_r:
                beta[bi, k] = 0.0
        for j in range(n):
            if j == i:
                if want_H:
                    H[bi, j] = 0.0
                continue
            hsum = 0.0
            for k in range(m):
                d = U[i, k] - U[j, k]
                t = d * d
                ai = A[i, k]
                aj = A[j, k]
                ck = c[k]
                dif = ai - aj
                if want_grad:
                    kk, k1, k2, k3 = _profile3(code, t, p0[k], p1)
                else:
                    kk, k1, k2 = _profile2(code, t, p0[k], p1)
                    k3 = 0.0
                e = 2.0 * k1 + 4.0 * t * k2
                cdk1 = ck * d * k1
                h = kk * ai * aj - 2.0 * cdk1 * dif - ck * ck * e
                rowsum[bi, k] += h
                hsum += h
                if want_grad:
                    phi = (2.0 * d * k1 * ai * aj - 2.0 * ck * dif * (k1 + 2.0 * t * k2)
                           - ck * ck * d * (12.0 * k2 + 8.0 * t * k3))
                    rho[bi, k] += phi
                    psisum[bi, k] += -2.0 * d * k1 * dif - 2.0 * ck * e
                if want_grad_r:
                    beta[bi, k] += kk * aj - 2.0 * cdk1
            if want_H:
                H[bi, j] = hsum
    return rowsum


@njit(cache=True, parallel=True)
def sliced_stein_upper(code, p0, p1, U, A, c, want_H, H, rowsum):
    r"""Strict upper triangle of the summed sliced Stein matrix, and upper row sums.

    Writes ``H[i, j] = sum_k h_k(i, j)`` for ``j > i`` and zero elsewhere (when
    ``want_H``), and ``rowsum[i, k] = sum_{j > i} h_k(i, j)``. Rows ``q`` and
    ``N - 1 - q`` form one parallel iteration, so every iteration does the same work.

    Parameters
    ----------
    code, p0, p1, U, A, c : see :func:`sliced_stein_rows`
    want_H : bool
    H : float64 (N, N), C-contiguous (any shape when not ``want_H``)
    rowsum : float64 (N, m)
    """
    n, m = U.shape
    half = (n + 1) // 2
    for q in prange(half):
        for side in range(2):
            i = q + side * (n - 1 - 2 * q)
            if side == 1 and i == q:
                break
            for k in range(m):
                rowsum[i, k] = 0.0
            if want_H:
                for j in range(i + 1):
                    H[i, j] = 0.0
            for j in range(i + 1, n):
                hsum = 0.0
                for k in range(m):
                    d = U[i, k] - U[j, k]
                    t = d * d
                    ai = A[i, k]
                    aj = A[j, k]
                    ck = c[k]
                    kk, k1, k2 = _profile2(code, t, p0[k], p1)
                    h = kk * ai * aj - 2.0 * ck * d * k1 * (ai - aj) - ck * ck * (2.0 * k1 + 4.0 * t * k2)
                    rowsum[i, k] += h
                    hsum += h
                if want_H:
                    H[i, j] = hsum
    return rowsum


@njit(cache=True, parallel=True)
def median_abs_diff_columns(U, out):
    r"""Per column ``k``: the median of :math:`|u_{ik} - u_{jk}|, i < j`.

    If that median is zero, the median of the positive differences is taken instead,
    and ``-1`` is written when all differences are zero (the caller raises).

    Parameters
    ----------
    U : float64 (n, m)
    out : float64 (m,)
    """
    n, m = U.shape
    npairs = n * (n - 1) // 2
    for k in prange(m):
        u = np.sort(U[:, k].copy())
        diff = np.empty(npairs)
        p = 0
        for i in range(n):
            ui = u[i]
            for j in range(i + 1, n):
                diff[p] = u[j] - ui
                p += 1
        med = np.median(diff)
        if med > 0.0:
            out[k] = med
            continue
        npos = 0
        for q in range(npairs):
            if diff[q] > 0.0:
                npos += 1
        if npos == 0:
            out[k] = -1.0
            continue
        pos = np.empty(npos)
        p = 0
        for q in range(npairs):
            if diff[q] > 0.0:
                pos[p] = diff[q]
                p += 1
        out[k] = np.median(pos)
    return out
