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

from ._blas import gemm_nt, sgemm_nn
from ._jit import IMQ, PARALLEL, RBF  # noqa: F401 (the kernel codes are part of this API)
from .sliced import fast_exp

#: Smallest bandwidth the kernels take, about 1.2e-77: below it the scale constants
#: (up to 1/h^4, in the second derivative of the profile) overflow float64.
MIN_BANDWIDTH = float(np.finfo(np.float64).tiny) ** 0.25


@njit(cache=True, inline="always")
def radial_profile(code, t, p0, p1):
    """kappa(t), kappa'(t), kappa''(t) for RBF (p0 = 1/(2h^2)) or IMQ (p0 = 1/h^2, p1 = beta)."""
    if code == RBF:
        k = fast_exp(-t * p0)  # polynomial exp (relative error ~1e-15): the loops vectorise
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
    inv = (1.0 / kernel.bandwidth) / kernel.bandwidth  # no overflow in h^2 for a wide kernel
    if kernel.name == "rbf":
        return RBF, 0.5 * inv, 0.0
    if kernel.name == "imq":
        return IMQ, inv, kernel.beta
    raise ValueError(f"unsupported kernel {kernel!r}")


@njit(cache=True, inline="always")
def _stein_row(code, p0, p1, two_d, G, SS, C, nx, nsx, bi, i, col0, start, mirror, out):
    """Fill row ``bi`` of ``out`` from column ``start`` on; return its sum.

    ``out`` may be ``G`` itself: each entry of ``G`` is read before it is written,
    and mirrored writes go below the diagonal, which is never read.
    """
    acc = 0.0
    nxi = nx[i]
    nsxi = nsx[i]
    M = G.shape[1]
    for bj in range(start, M):
        j = col0 + bj
        if j == i:
            out[bi, bj] = 0.0
            continue
        t = nxi + nx[j] - 2.0 * G[bi, bj]
        if t < 0.0:
            t = 0.0
        cross = nsxi + nsx[j] - C[bi, bj]
        k, k1, k2 = radial_profile(code, t, p0, p1)
        h = k * SS[bi, bj] - 2.0 * k1 * cross - two_d * k1 - 4.0 * t * k2
        out[bi, bj] = h
        if mirror:
            out[bj, bi] = h
        acc += h
    return acc


def stein_block_inplace(code, p0, p1, dim, G, SS, C, nx, nsx, row0, col0, upper, mirror, rowsum):
    """Overwrite the Gram block ``G`` with Stein kernel values; return row sums.

    :func:`stein_block_into` with ``out = G``.
    """
    return stein_block_into(code, p0, p1, dim, G, SS, C, nx, nsx, row0, col0, upper, mirror,
                            rowsum, G)


@njit(cache=True, parallel=PARALLEL)
def stein_block_into(code, p0, p1, dim, G, SS, C, nx, nsx, row0, col0, upper, mirror, rowsum,
                     out):
    """Write the Stein kernel values of a Gram block into ``out``; return row sums.

    With ``out`` a separate array, the Gram blocks are left intact, so several
    kernels (bandwidths) can be evaluated on the same blocks.

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
    out : float64 array (B, M)
        Output block (may be ``G``).

    Notes
    -----
    In ``upper`` mode row ``i`` holds ``M - (i - col0)`` pairs; the parallel loop
    runs over pairs of rows ``(p, B - 1 - p)`` so that every iteration does the same
    work and the static schedule keeps the threads balanced.
    """
    B, M = G.shape
    two_d = 2.0 * dim
    steps = (B + 1) // 2 if upper else B
    for p in prange(steps):
        bi = np.int64(p)
        _block_row(code, p0, p1, two_d, G, SS, C, nx, nsx, bi, row0, col0, upper, mirror,
                   rowsum, out)
        q = B - 1 - bi
        if upper and q != bi:
            _block_row(code, p0, p1, two_d, G, SS, C, nx, nsx, q, row0, col0, upper, mirror,
                       rowsum, out)
    return rowsum


@njit(cache=True)
def _block_row(code, p0, p1, two_d, G, SS, C, nx, nsx, bi, row0, col0, upper, mirror, rowsum,
               out):
    """Row ``bi`` of :func:`stein_block_into` (compiled once, called from its loop)."""
    i = row0 + bi
    start = 0
    if upper:
        start = min(max(i - col0, 0), G.shape[1])
        if not mirror:
            for bj in range(start):
                out[bi, bj] = 0.0
    rowsum[bi] = _stein_row(code, p0, p1, two_d, G, SS, C, nx, nsx, bi, i, col0, start,
                            upper and mirror, out)


@njit(cache=True, inline="always")
def _sum4(x, start, stop):
    """Sum of ``x[start:stop]`` with four interleaved partial sums (fixed order)."""
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    k = start
    while k + 4 <= stop:
        s0 += x[k]
        s1 += x[k + 1]
        s2 += x[k + 2]
        s3 += x[k + 3]
        k += 4
    while k < stop:
        s0 += x[k]
        k += 1
    return (s0 + s1) + (s2 + s3)


@njit(cache=True)
def _multi_row(code, p0s, p1, two_d, G, SS, C, nx, nsx, bi, row0, col0, out, rowsum, t,
               cross, wt, tilted):
    """Row ``bi`` of :func:`stein_upper_multi` (compiled once, called from its loop); with
    ``tilted``, each value times ``wt[i] wt[j]`` (the tilted kernel's weights)."""
    i = row0 + bi
    M = G.shape[1]
    start = min(max(i - col0 + 1, 0), M)
    # zero-based loops over views: a loop from a variable start keeps numba's
    # negative-index handling and does not vectorise (measured 12 ns against 3 ns
    # per kernel value)
    g = G[bi, start:]
    c = C[bi, start:]
    ss = SS[bi, start:]
    nxj = nx[col0 + start:col0 + M]
    nsxj = nsx[col0 + start:col0 + M]
    m = M - start
    tr = t[:m]
    cr = cross[:m]
    nxi = nx[i]
    nsxi = nsx[i]
    for j in range(m):
        tt = nxi + nxj[j] - 2.0 * g[j]
        tr[j] = max(tt, 0.0)
        cr[j] = nsxi + nsxj[j] - c[j]
    for li in range(p0s.shape[0]):
        p0 = p0s[li]
        full = out[li, bi]
        for j in range(start):
            full[j] = 0.0
        row = full[start:]
        # one branch-free loop per kernel, no reduction in it: it vectorises
        if code == RBF:
            for j in range(m):
                tt = tr[j]
                k = fast_exp(-tt * p0)
                row[j] = k * (ss[j] + 2.0 * p0 * cr[j] + two_d * p0 - 4.0 * tt * p0 * p0)
        elif p1 == -0.5:
            for j in range(m):
                tt = tr[j]
                ib = 1.0 / (1.0 + tt * p0)
                k = np.sqrt(ib)
                k1 = -0.5 * p0 * k * ib
                k2 = -1.5 * p0 * k1 * ib
                row[j] = k * ss[j] - 2.0 * k1 * cr[j] - two_d * k1 - 4.0 * tt * k2
        else:
            for j in range(m):
                tt = tr[j]
                base = 1.0 + tt * p0
                k = base**p1
                k1 = p1 * p0 * k / base
                k2 = (p1 - 1.0) * p0 * k1 / base
                row[j] = k * ss[j] - 2.0 * k1 * cr[j] - two_d * k1 - 4.0 * tt * k2
        if tilted:
            wi = wt[i]
            wj = wt[col0 + start:col0 + M]
            for j in range(m):
                row[j] *= wi * wj[j]
        rowsum[li, bi] = _sum4(row, 0, m)


@njit(cache=True, parallel=PARALLEL)
def stein_upper_multi(code, p0s, p1, dim, G, SS, C, nx, nsx, row0, col0, out, rowsum, wt,
                      tilted):
    r"""Upper-triangle Stein kernel values of one Gram block at several bandwidths.

    For each kernel scale ``p0s[l]`` (same base kernel ``code`` and exponent ``p1``),
    writes :math:`h_l(x_i, x_j)` into ``out[l]`` for global ``j > i`` and zero
    elsewhere, and the sums of the computed entries of each row into ``rowsum[l]``.
    The squared distances and the cross terms of a row are formed once (in row
    buffers) and shared by all kernels; each kernel is then a contiguous loop.

    Parameters
    ----------
    code, p1 : int, float
        Base kernel and IMQ exponent (see :func:`radial_profile`).
    p0s : float64 array (L,)
        Per-kernel scale (RBF ``1/(2h^2)``, IMQ ``1/h^2``).
    dim : int
    G, SS, C : float64 arrays (B, M)
        Gram blocks for rows ``row0 .. row0+B`` and columns ``col0 .. col0+M``.
    nx, nsx : float64 arrays (N,)
        Global ``||x_i||^2`` and ``s_i . x_i``.
    out : float64 array (L, B, M)
    rowsum : float64 array (L, B)
    wt : float64 array (N,)
        With ``tilted``, the values of pair ``(i, j)`` are multiplied by ``wt[i] wt[j]``
        (a tilted kernel, :mod:`skstein.gof._tilt`); else unused.
    tilted : bool
    """
    B, M = G.shape
    two_d = 2.0 * dim
    half = (B + 1) // 2
    for p in prange(half):
        t = np.empty(M)
        cross = np.empty(M)
        bi = np.int64(p)
        _multi_row(code, p0s, p1, two_d, G, SS, C, nx, nsx, bi, row0, col0, out, rowsum, t, cross,
                   wt, tilted)
        q = B - 1 - bi
        if q != bi:
            _multi_row(code, p0s, p1, two_d, G, SS, C, nx, nsx, q, row0, col0, out, rowsum, t,
                       cross, wt, tilted)
    return rowsum


@njit(cache=True)
def _pass_block(k, block, width, code, p0s, p1, two_d, Xc, S, nx, nsx, scale, VT, forms_on,
                rowpart, colpart, coloff, formpart, mirror, dense, wt, tilted):
    """Block ``k`` of :func:`stein_pass_blocks` (compiled once, called from its loop)."""
    n = Xc.shape[0]
    L = p0s.shape[0]
    a = k * block
    b = min(n, a + block)
    B = b - a
    M = VT.shape[1]
    tiny = 1.1754943508222875e-38  # the smallest normal float32 (see scaled_single)
    t = np.empty(width)
    cross = np.empty(width)
    rs = np.empty((L, B))
    P = np.zeros((L * B, M if forms_on else 1), dtype=np.float32)
    Xa = Xc[a:b]
    Sa = S[a:b]
    span = n - a
    if dense is not None and not mirror:
        for i in range(a, b):
            orow = dense[i]
            for j in range(a):
                orow[j] = 0.0
    for c0 in range(a, n, width):
        c1 = min(n, c0 + width)
        w = c1 - c0
        Xt = Xc[c0:c1]
        St = S[c0:c1]
        G = np.empty((B, w))
        SS = np.empty((B, w))
        C = np.empty((B, w))
        gemm_nt(Xa, Xt, G, 0.0)
        gemm_nt(Sa, St, SS, 0.0)
        gemm_nt(Xa, St, C, 0.0)
        gemm_nt(Sa, Xt, C, 1.0)
        H = np.empty((L, B, w))
        for bi in range(B):
            _multi_row(code, p0s, p1, two_d, G, SS, C, nx, nsx, bi, a, c0, H, rs, t, cross, wt,
                       tilted)
            for li in range(L):
                rowpart[li, a + bi] += rs[li, bi]
            if dense is not None:
                _matrix_row(H[0, bi], a + bi, c0, mirror, dense)
        for li in range(L):
            base = coloff[k] + li * span + (c0 - a)
            for bi in range(B):
                row = H[li, bi]
                for j in range(w):
                    colpart[base + j] += row[j]
        if forms_on:
            Hf = np.empty((L * B, w), dtype=np.float32)
            for li in range(L):
                s = scale[li]
                for bi in range(B):
                    row = H[li, bi]
                    out = Hf[li * B + bi]
                    for j in range(w):
                        v = row[j] * s
                        out[j] = 0.0 if abs(v) < tiny else v
            sgemm_nn(Hf, VT[c0:c1], P, 1.0)
    if forms_on:
        for li in range(L):
            for m in range(M):
                acc = np.float32(0.0)
                for bi in range(B):
                    acc += P[li * B + bi, m] * VT[a + bi, m]
                formpart[k, m, li] = acc


@njit(cache=True)
def _matrix_row(row, i, c0, mirror, dense):
    """Copy the chunk ``row`` (columns ``c0 ..``, zero up to the diagonal) of row ``i``
    into ``dense``; with ``mirror``, its entries right of the diagonal into column ``i``
    too, and no entry left of it (those are other rows' mirrors)."""
    w = row.shape[0]
    orow = dense[i]
    if not mirror:
        for j in range(w):
            orow[c0 + j] = row[j]
        return
    start = max(i + 1 - c0, 0)
    if start <= w and c0 <= i:
        orow[i] = 0.0
    for j in range(start, w):
        orow[c0 + j] = row[j]
        dense[c0 + j, i] = row[j]


@njit(cache=True, parallel=PARALLEL)
def stein_pass_blocks(code, p0s, p1, dim, Xc, S, nx, nsx, block, width, scale, VT, forms_on,
                      rowpart, colpart, coloff, formpart, mirror, out, wt, tilted):
    r"""The upper-triangle Stein pass of several kernels, Gram products included, on
    numba's threads alone.

    Blocks of ``block`` rows ``a:b`` run in a ``prange`` (blocks ``p`` and ``nb - 1 - p``
    in one iteration, so every iteration has the same work). A block walks its columns
    ``a:`` in chunks of ``width``: the Gram chunks ``X_a X_c^T``, ``S_a S_c^T``,
    ``X_a S_c^T + S_a X_c^T`` by BLAS from the block's own thread (:mod:`._blas`; the
    caller holds BLAS at one thread), the ``L`` kernels on them (:func:`_multi_row`, zero at and below the
    diagonal), their row and column sums, and, with ``forms_on``, the products of the
    single-precision scaled kernels (:func:`skstein._numba.bootstrap.scaled_single`)
    with the weights, summed over chunks. No two blocks write the same element, so the
    results do not depend on the number of threads.

    Parameters
    ----------
    code, p1 : int, float
        Base kernel and IMQ exponent (:func:`radial_profile`).
    p0s : float64 array (L,)
    dim : int
    Xc, S : float64 arrays (N, D)
        Centred points and scores (C-contiguous).
    nx, nsx : float64 arrays (N,)
    block, width : int
        Rows per block and columns per chunk.
    scale : float64 array (L,)
        Per-kernel scale of the single-precision copies.
    VT : float32 array (N, M)
        The weights, one column per draw (a (1, 1) placeholder without forms).
    forms_on : bool
    rowpart : float64 array (L, N), zeros
        Output: the sum of each row's entries right of the diagonal.
    colpart : float64 array, zeros
        Output: block ``k``'s column sums of kernel ``l`` over its columns ``a:``, at
        ``coloff[k] + l * (N - a) + (j - a)``.
    coloff : int64 array (nb,)
    formpart : float64 array (nb, M, L)
        Output: block ``k``'s share :math:`\sum_{i \in k} \sum_{j > i} v_{mi} v_{mj}
        s_l h_l(x_i, x_j)`, summed in single precision.
    mirror : bool
        With ``out``: write the whole symmetric matrix, not its upper triangle.
    out : float64 array (N, N), C-contiguous, or None
        With one kernel (``L = 1``), also write the kernel values into ``out``: its
        strict upper triangle, zeros on and below the diagonal, or, with ``mirror``,
        the whole symmetric matrix with a zero diagonal. A block writes its own rows
        and, mirrored, their columns below the diagonal: no element twice. ``None``
        types the argument away: the pass of the sums compiles without this code.
    wt : float64 array (N,)
        With ``tilted``, every kernel value of pair ``(i, j)`` is multiplied by ``wt[i]
        wt[j]`` before it is summed or used (a tilted kernel); else unused.
    tilted : bool
    """
    n = Xc.shape[0]
    nb = (n + block - 1) // block
    two_d = 2.0 * dim
    for t in prange(2 * ((nb + 1) // 2)):
        # iteration t takes block t // 2 or its mirror nb - 1 - t // 2; the static schedule
        # gives each thread consecutive iterations, so mirrored pairs share a thread and
        # the threads' work stays balanced (one call site: compiled once)
        k = t // 2 if t % 2 == 0 else nb - 1 - t // 2
        if t % 2 == 0 or k != t // 2:
            _pass_block(k, block, width, code, p0s, p1, two_d, Xc, S, nx, nsx, scale, VT,
                        forms_on, rowpart, colpart, coloff, formpart, mirror, out, wt, tilted)
    return rowpart


@njit(cache=True, parallel=PARALLEL)
def linear_stein_upper(SS, YY, a, c0, const):
    r"""The strict upper triangle of the linear Stein kernel, in place over ``SS``.

    ``SS[i, j]`` becomes :math:`(s_i^\top s_j)(y_i^\top y_j) + (c_0 (a_i + a_j) + C)` for
    ``j > i`` and zero elsewhere (the kernel of
    :func:`skstein.gof._maxsksd.second_moment_sums`, with ``C`` = ``const``). Rows
    ``q`` and ``N - 1 - q`` form one parallel iteration (equal work); every entry is
    computed alone, so the values do not depend on the number of threads.

    Parameters
    ----------
    SS, YY : float64 (N, N), C-contiguous
        The Gram matrices of the scores and of the centred points.
    a : float64 (N,)
    c0, const : float
    """
    n = SS.shape[0]
    for qp in prange((n + 1) // 2):
        q = np.int64(qp)
        _linear_row(SS, YY, a, c0, const, q)
        if n - 1 - q != q:
            _linear_row(SS, YY, a, c0, const, n - 1 - q)
    return SS


@njit(cache=True)
def _linear_row(SS, YY, a, c0, const, i):
    """Row ``i`` of :func:`linear_stein_upper`."""
    n = SS.shape[0]
    row = SS[i]
    grow = YY[i]
    for j in range(i + 1):
        row[j] = 0.0
    ai = a[i]
    for j in range(i + 1, n):
        row[j] = row[j] * grow[j] + (c0 * (ai + a[j]) + const)
