"""The Stein kernel of the saturated polynomial kernel (:mod:`skstein.gof._polynomial`).

:func:`polynomial_upper_rows` forms rows of the strict upper triangle of the Stein
matrix on numba's threads: each block of rows forms its four Gram products with the
columns from its first row on by one-thread BLAS calls (:mod:`._blas`; the caller
holds BLAS at one thread) and turns them into the kernel in its thread's cache.
"""

import numpy as np
from numba import njit, prange

from ._blas import gemm_nt
from ._jit import PARALLEL

__all__ = ["polynomial_upper_rows", "POLY_BLOCK"]

#: Rows per block of :func:`polynomial_upper_rows`: a function of nothing, so the
#: blocks, and the numbers, do not depend on the number of threads.
POLY_BLOCK = 32


@njit(cache=True, parallel=PARALLEL)
def polynomial_upper_rows(Y, S, w, g, r2, sy, degree, a0, b0, c0, out):
    r"""Rows ``a0:b0`` of the strict upper triangle of the Stein matrix, into ``out``.

    ``out[i - a0, j - c0]`` becomes :math:`h(y_i, y_j)` for ``j > i`` and 0 for
    ``a0 <= j <= i``; ``out`` has shape ``(b0 - a0, n - c0)`` with ``c0 <= a0``: the
    block's columns from ``a0`` on (``c0 = a0``), or whole rows of a kept triangle
    (``c0 = 0``, whose columns before ``a0`` are left as they are). ``w``, ``g``, ``r2``, ``sy``
    are the weights, twice their derivative in the squared radius, the squared radii
    and :math:`s_i^\top y_i` of every point (see ``_polynomial_point_terms`` of
    :mod:`skstein.discrepancy`, whose NumPy ``_polynomial_values`` is the reference).
    Blocks of :data:`POLY_BLOCK` rows run in parallel, each writing only its rows.
    """
    nb = (b0 - a0 + POLY_BLOCK - 1) // POLY_BLOCK
    for t in prange(nb):
        _poly_block(Y, S, w, g, r2, sy, degree, a0, b0, c0, np.int64(t), out)
    return out


@njit(cache=True)
def _poly_block(Y, S, w, g, r2, sy, degree, a0, b0, c0, t, out):
    """Block ``t`` of :func:`polynomial_upper_rows` (compiled once, called from its loop)."""
    n, d = Y.shape
    a = a0 + t * POLY_BLOCK
    b = min(b0, a + POLY_BLOCK)
    m = n - a
    T = np.empty((b - a, m))
    SS = np.empty((b - a, m))
    SY = np.empty((b - a, m))
    YS = np.empty((b - a, m))
    gemm_nt(Y[a:b], Y[a:], T, 0.0)
    gemm_nt(S[a:b], S[a:], SS, 0.0)
    gemm_nt(S[a:b], Y[a:], SY, 0.0)
    gemm_nt(Y[a:b], S[a:], YS, 0.0)
    p = degree
    for r in range(b - a):
        i = a + r
        row = out[i - a0]
        for j in range(a0, i + 1):
            row[j - c0] = 0.0
        wi, gi, ri, si = w[i], g[i], r2[i], sy[i]
        for c in range(r + 1, m):
            j = a + c
            t_ = T[r, c]
            tp2 = 1.0
            for _ in range(p - 2):
                tp2 *= t_
            tp1 = tp2 * t_ if p >= 2 else 1.0
            tp = tp1 * t_
            wj, gj = w[j], g[j]
            ww = wi * wj
            v = tp * (SS[r, c] * ww + wi * gj * SY[r, c] + gi * wj * YS[r, c] + gi * gj * t_)
            v += p * tp1 * (ww * (si + sy[j] + d) + gi * ri * wj + wi * gj * r2[j])
            if p >= 2:
                v += p * (p - 1) * tp2 * t_ * ww
            row[j - c0] = v
    return 0
