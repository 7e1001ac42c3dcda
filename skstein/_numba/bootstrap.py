"""Bootstrap kernels: the weights, and the forms of an upper triangle with them."""

import numpy as np
from numba import njit, prange

from ._blas import gemm_nt
from ._jit import PARALLEL


@njit(cache=True, parallel=PARALLEL)
def centred_counts(idx, out):
    r"""Centred multinomial bootstrap weights from drawn indices.

    Row ``m`` of ``out`` becomes :math:`(c_m - 1) / n` where :math:`c_{mi}` counts
    the occurrences of ``i`` in ``idx[m]``, i.e. ``n`` uniform draws with
    replacement give :math:`c_m \sim \mathrm{Mult}(n; 1/n, \dots, 1/n)`.

    Parameters
    ----------
    idx : int32 array (M, n)
        Uniform indices in ``[0, n)`` drawn by the caller.
    out : float64 array (M, n)
    """
    M, n = idx.shape
    inv = 1.0 / n
    for m in prange(M):
        for i in range(n):
            out[m, i] = -inv
        for a in range(n):
            out[m, idx[m, a]] += inv
    return out


@njit(cache=True, parallel=PARALLEL)
def unpack_signs(bits, scale, out):
    r"""Rademacher bootstrap weights from packed sign bits, one row per draw.

    ``out[m, i] = scale`` where bit ``i % 8`` of byte ``bits[m, i // 8]`` is set, and
    ``-scale`` elsewhere (the values of :math:`(2b - 1)\,s`, exactly, in ``out``'s
    precision).

    Parameters
    ----------
    bits : uint8 array (M, ceil(n / 8))
        Fair random bytes drawn by the caller (bits past ``n`` in a row are unused).
    scale : float
    out : float array (M, n)
    """
    M, n = out.shape
    for m in prange(M):
        for i in range(n):
            out[m, i] = scale if (bits[m, i >> 3] >> (i & 7)) & 1 else -scale
    return out


@njit(cache=True, parallel=PARALLEL)
def unpack_signs_transposed(bits, scale, out):
    r"""The weights of :func:`unpack_signs` with one column per draw: ``out[i, m]``.

    Each parallel iteration unpacks one byte column of ``bits`` into 8 rows of
    ``out`` (the ``(n, M)`` operand of the forms' products, written without a
    transposed copy).

    Parameters
    ----------
    bits : uint8 array (M, ceil(n / 8))
    scale : float
    out : float array (n, M)
    """
    n, M = out.shape
    for byte in prange(bits.shape[1]):
        lo = 8 * byte
        hi = min(n, lo + 8)
        for m in range(M):
            b = bits[m, byte]
            for i in range(lo, hi):
                out[i, m] = scale if (b >> (i - lo)) & 1 else -scale
    return out


@njit(cache=True, parallel=PARALLEL)
def transposed_into(V, out):
    r"""``out[i, m] = V[m, i]`` in ``out``'s precision, by tiles of 64 columns of ``V``
    on numba's threads (each entry written once: the same values for any number of
    threads).

    Parameters
    ----------
    V : float64 array (M, n), C-contiguous
    out : float array (n, M)
    """
    M, n = V.shape
    for tp in prange((n + 63) // 64):
        i0 = np.int64(tp) * 64
        _transpose_tile(V, out, i0, min(n, i0 + 64))
    return out


@njit(cache=True)
def _transpose_tile(V, out, i0, i1):
    """Columns ``i0:i1`` of ``V`` into rows ``i0:i1`` of ``out``."""
    for m in range(V.shape[0]):
        row = V[m]
        for i in range(i0, i1):
            out[i, m] = row[i]


#: Smallest normal single-precision magnitude: below it products run on subnormal
#: operands, which x86 processors handle in microcode (tens of times slower).
FLOAT32_TINY = float(np.finfo(np.float32).tiny)


@njit(cache=True, parallel=PARALLEL)
def scaled_single(H, scale, out):
    r"""``out[l] = float32(scale[l] * H[l])`` with magnitudes below the smallest normal
    float32 set to zero.

    The forms' products run in single precision; scaling each kernel's block by
    :math:`1 / \max_i h_l(x_i, x_i)` (which bounds :math:`|h_l|`, the Stein kernel
    being positive definite) and flushing subnormals keeps them on normal operands:
    an RBF kernel at a small bandwidth leaves many entries in the subnormal range,
    which made a product tens of times slower. Entries flushed are below 2^-126 of the
    largest entry.

    Parameters
    ----------
    H : float64 (L, rows, w)
    scale : float64 (L,)
    out : float32 (L, rows, w)
    """
    L, rows, w = H.shape
    tiny = FLOAT32_TINY
    for t in prange(L * rows):
        li = t // rows
        i = t - li * rows
        s = scale[li]
        for j in range(w):
            v = H[li, i, j] * s
            if abs(v) < tiny:
                v = 0.0
            out[li, i, j] = v
    return out


@njit(cache=True, parallel=PARALLEL)
def upper_forms_blocks(upper, V, block, out):
    r"""The bootstrap forms of a strict upper triangle by blocks of rows, on numba's
    threads alone.

    Row ``k`` of ``out`` becomes block ``k``'s share :math:`\sum_{i \in k} v_{mi}
    \sum_{j \ge a_k} U_{ij} v_{mj}` of :math:`v_m^\top U v_m` for every draw ``m``: one
    product ``V[:, a:] @ U[a:b, a:].T`` by a one-thread BLAS call (:mod:`._blas`; the
    caller holds BLAS at one thread) and a dot of each draw's row with its weights on
    the block. Blocks ``p`` and ``nb - 1 - p`` form one parallel iteration (equal work);
    no two blocks write the same row of ``out``, so its values do not depend on the
    number of threads.

    Parameters
    ----------
    upper : float64 array (N, N), C-contiguous
        Zero on and below the diagonal.
    V : float64 array (M, N), C-contiguous
        The weights, one row per draw.
    block : int
    out : float64 array (ceil(N / block), M)
    """
    n = upper.shape[0]
    nb = (n + block - 1) // block
    for t in prange(2 * ((nb + 1) // 2)):
        k = t // 2 if t % 2 == 0 else nb - 1 - t // 2
        if t % 2 == 0 or k != t // 2:
            _forms_block(upper, V, block, k, out)
    return out


@njit(cache=True)
def _forms_block(upper, V, block, k, out):
    """Block ``k`` of :func:`upper_forms_blocks` (compiled once, called from its loop)."""
    n = upper.shape[0]
    M = V.shape[0]
    a = k * block
    b = min(n, a + block)
    PT = np.empty((M, b - a))
    gemm_nt(V[:, a:], upper[a:b, a:], PT, 0.0)
    acc = out[k]
    for m in range(M):
        p = PT[m]
        w = V[m, a:b]
        s = 0.0
        for i in range(b - a):
            s += p[i] * w[i]
        acc[m] = s


@njit(cache=True, parallel=PARALLEL)
def row_forms_blocks(H, V, a, block, out):
    r"""The share of the full rows ``a:a + B`` of a zero-diagonal matrix in the bootstrap
    forms :math:`v_m^\top H v_m`, by blocks of ``block`` rows on numba's threads.

    Row ``k`` of ``out`` becomes :math:`\sum_{i \in k} v_{m, a + i} (H_{i,:} v_m)` for
    every draw ``m``: one product ``V @ H[rows].T`` by a one-thread BLAS call (the caller
    holds BLAS at one thread) and a dot with the block's weights. No two blocks write
    the same row of ``out``, so its values do not depend on the number of threads.

    Parameters
    ----------
    H : float64 array (B, N), rows C-contiguous
        Rows ``a:a + B`` of the matrix.
    V : float64 array (M, N), C-contiguous
        The weights, one row per draw.
    a : int
    block : int
    out : float64 array (ceil(B / block), M)
    """
    rows = H.shape[0]
    M = V.shape[0]
    for k in prange((rows + block - 1) // block):
        lo = k * block
        hi = min(rows, lo + block)
        PT = np.empty((M, hi - lo))
        gemm_nt(V, H[lo:hi], PT, 0.0)
        acc = out[k]
        for m in range(M):
            p = PT[m]
            w = V[m, a + lo:a + hi]
            s = 0.0
            for i in range(hi - lo):
                s += p[i] * w[i]
            acc[m] = s
    return out
