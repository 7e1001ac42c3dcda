r"""Row-parallel Langevin Stein kernel pass.

With centred samples :math:`x`, scores :math:`s`, :math:`t = \|x_i - x_j\|^2`,
:math:`c = (s_i - s_j)^\top (x_i - x_j)` and the radial profile
:math:`\kappa, \kappa', \kappa''` of the base kernel (see :mod:`skstein.kernels`),

.. math::

    h_p(x_i, x_j) = \kappa\, s_i^\top s_j - 2\kappa' c - 2D\kappa' - 4t\kappa''.

The O(N^2 D) inner products come in as Gram blocks computed by BLAS
(``G = X_a X_b^T``, ``SS = S_a S_b^T``, ``C = X_a S_b^T + S_a X_b^T``); this pass does
the O(N^2) elementwise work and writes :math:`h_p` over ``G`` in place.
"""

import numpy as np
from numba import njit, prange

RBF = 0
IMQ = 1


@njit(cache=True, inline="always")
def radial_profile(code, t, p0, p1):
    """kappa(t), kappa'(t), kappa''(t) for RBF (p0 = 1/(2h^2)) or IMQ (p0 = 1/h^2, p1 = beta)."""
    if code == RBF:
        k = np.exp(-t * p0)
        return k, -p0 * k, p0 * p0 * k
    base = 1.0 + t * p0
    if p1 == -0.5:
        k = 1.0 / np.sqrt(base)
    else:
        k = base**p1
    ib = 1.0 / base
    k1 = p1 * p0 * k * ib
    k2 = (p1 - 1.0) * p0 * k1 * ib
    return k, k1, k2


def kernel_params(kernel):
    """(code, p0, p1) of a kernel object for :func:`radial_profile`."""
    if kernel.name == "rbf":
        return RBF, 1.0 / (2.0 * kernel.bandwidth**2), 0.0
    if kernel.name == "imq":
        return IMQ, 1.0 / kernel.bandwidth**2, kernel.beta
    raise ValueError(f"unsupported kernel {kernel!r}")


@njit(cache=True, inline="always")
def _stein_row(code, p0, p1, two_d, G, SS, C, nx, nsx, bi, i, col0, start, mirror):
    """Fill row ``bi`` of the block from column ``start`` on; return its sum."""
    acc = 0.0
    nxi = nx[i]
    nsxi = nsx[i]
    M = G.shape[1]
    for bj in range(start, M):
        j = col0 + bj
        if j == i:
            G[bi, bj] = 0.0
            continue
        t = nxi + nx[j] - 2.0 * G[bi, bj]
        if t < 0.0:
            t = 0.0
        cross = nsxi + nsx[j] - C[bi, bj]
        k, k1, k2 = radial_profile(code, t, p0, p1)
        h = k * SS[bi, bj] - 2.0 * k1 * cross - two_d * k1 - 4.0 * t * k2
        G[bi, bj] = h
        if mirror:
            G[bj, bi] = h
        acc += h
    return acc


@njit(cache=True, parallel=True)
def stein_block_inplace(code, p0, p1, dim, G, SS, C, nx, nsx, row0, col0, upper, mirror, rowsum):
    """Overwrite the Gram block ``G`` with Stein kernel values; return row sums.

    Parameters
    ----------
    code, p0, p1 : int, float, float
        Base kernel (see :func:`radial_profile`).
    dim : int
        Dimension D.
    G, SS, C : float64 arrays (B, M)
        Blocks for rows ``row0 .. row0+B`` and columns ``col0 .. col0+M`` of
        ``X X^T``, ``S S^T`` and ``X S^T + S X^T``.
    nx, nsx : float64 arrays (N,)
        ``||x_i||^2`` and ``s_i . x_i`` for all rows (global indexing).
    upper : bool
        Compute only entries with global ``j > i``; the others are set to zero.
        Otherwise all entries are computed except the diagonal (set to zero).
    mirror : bool
        With ``upper`` and a square block at the origin, also write ``G[j, i]``
        (gives the full symmetric matrix; row ``i`` owns entries ``(i, j>i)`` and
        ``(j>i, i)``, so no two iterations write the same element).
    rowsum : float64 array (B,)
        Output: the sum of the computed (off-diagonal) entries of each row.

    Notes
    -----
    In ``upper`` mode row ``i`` holds ``M - (i - col0)`` pairs; the parallel loop
    runs over pairs of rows ``(p, B - 1 - p)`` so that every iteration does the same
    work and the static schedule keeps the threads balanced.
    """
    B, M = G.shape
    two_d = 2.0 * dim
    if not upper:
        for bi in prange(B):
            rowsum[bi] = _stein_row(code, p0, p1, two_d, G, SS, C, nx, nsx, bi, row0 + bi,
                                    col0, 0, False)
        return rowsum
    half = (B + 1) // 2
    for p in prange(half):
        _upper_row(code, p0, p1, two_d, G, SS, C, nx, nsx, p, row0, col0, mirror, rowsum)
        q = B - 1 - p
        if q != p:
            _upper_row(code, p0, p1, two_d, G, SS, C, nx, nsx, q, row0, col0, mirror, rowsum)
    return rowsum


@njit(cache=True, inline="always")
def _upper_row(code, p0, p1, two_d, G, SS, C, nx, nsx, bi, row0, col0, mirror, rowsum):
    i = row0 + bi
    M = G.shape[1]
    start = min(max(i - col0, 0), M)
    if not mirror:
        for bj in range(start):
            G[bi, bj] = 0.0
    rowsum[bi] = _stein_row(code, p0, p1, two_d, G, SS, C, nx, nsx, bi, i, col0, start, mirror)
