r"""SVGD and sliced SVGD update directions.

SVGD (Liu & Wang 2016), with :math:`\kappa` the radial profile of the kernel,

.. math::

    \phi(x_i) = \frac1N \sum_j \left[k(x_j, x_i)\, s(x_j) + \nabla_{x_j} k(x_j, x_i)\right],
    \qquad \nabla_{x_j} k(x_j, x_i) = 2\kappa'(\|x_j - x_i\|^2)\,(x_j - x_i).

:func:`svgd_field` (and :func:`svgd_field_serial`, the same arithmetic without the
thread pool) computes, with the centred particles :math:`\bar x_i = x_i - \bar x`,
:math:`t_{ij} = \max(\|\bar x_i\|^2 + \|\bar x_j\|^2 - 2\bar x_i^\top \bar x_j, 0)`,
:math:`K = \kappa(t)`, :math:`K' = \kappa'(t)`,

.. math::

    N\phi = K S + 2\left(K' \bar X - \mathrm{diag}(K'\mathbf 1) \bar X\right)
    \;\overset{\text{RBF}}{=}\; K S + \frac{1}{h^2}\left(\mathrm{diag}(K\mathbf 1)\bar X
    - K\bar X\right),

(the repulsive sum is translation invariant, so the centred particles serve). The rows
are cut into blocks of :data:`SVGD_BLOCK`; each block forms its rows of the Gram matrix,
of :math:`K` and of both products with single-threaded BLAS calls (``np.dot``), so the
only thread pool is numba's and each block's numbers do not depend on which thread
computes them: the results are bitwise identical for any number of threads. The row
sums :math:`K\mathbf 1` come from a BLAS product with a vector of ones.

Sliced SVGD (Gong et al. 2021, Algorithm 2, slices :math:`r_d = e_d`), with the
projections :math:`u = X G^\top` and one 1-D kernel :math:`\kappa_d` per output
dimension:

.. math::

    \phi_d(x_i) = \frac1N \sum_j \left[\kappa_d(u_{jd}, u_{id})\, s_d(x_j)
    + G_{dd}\, \partial_{u_{jd}} \kappa_d(u_{jd}, u_{id})\right].
"""

import numpy as np
from numba import njit, prange

from ._jit import PARALLEL
from .learning import pair_blocks, tile
from .select import select_kth, select_pair
from .sliced import fast_exp
from .stein import MIN_BANDWIDTH, RBF, radial_profile

#: Rows per block of the SVGD passes (fixed, so the numbers do not depend on threads).
SVGD_BLOCK = 32
#: Up to this many pairs the median is a selection over all of them; beyond, a sample
#: brackets it and only the pairs inside the bracket are selected from.
MEDIAN_DIRECT_PAIRS = 2**16
#: Pairs in the sample that brackets the median (beyond ``MEDIAN_DIRECT_PAIRS``).
MEDIAN_SAMPLE = 2**13
_GOLDEN = 0.6180339887498949


@njit(cache=True)
def _centre_rows(X, S, mu, Xc, nx, r0, r1):
    """Rows ``r0:r1``: ``Xc[i] = x_i - mu``, ``nx[i] = |x_i - mu|^2``.

    Returns the number of those rows where ``S`` has a non-finite entry.
    """
    d = X.shape[1]
    bad = 0
    for i in range(r0, r1):
        s = 0.0
        for k in range(d):
            v = X[i, k] - mu[k]
            Xc[i, k] = v
            s += v * v
        nx[i] = s
        ok = True
        for k in range(d):
            ok &= np.isfinite(S[i, k])
        if not ok:
            bad += 1
    return bad


@njit(cache=True)
def _distance_rows(Xc, nx, T, r0, r1):
    """Rows ``r0:r1`` of the squared distances ``t_ij`` (zero diagonal) into ``T``."""
    n = T.shape[0]
    np.dot(Xc[r0:r1], Xc.T, T[r0:r1])
    for i in range(r0, r1):
        row = T[i]
        a = nx[i]
        for j in range(n):
            row[j] = max(a + nx[j] - 2.0 * row[j], 0.0)
        row[i] = 0.0


@njit(cache=True)
def _bracket_counts(T, r0, r1, lo, hi):
    """Pairs ``i < j`` of rows ``r0:r1`` with ``t < lo`` and with ``lo <= t <= hi``."""
    n = T.shape[0]
    below = 0
    inside = 0
    for i in range(r0, r1):
        row = T[i]
        for j in range(i + 1, n):
            t = row[j]
            below += t < lo
            inside += (t >= lo) & (t <= hi)
    return below, inside


@njit(cache=True)
def _bracket_fill(T, r0, r1, lo, hi, out, pos):
    """Rows ``r0:r1``: the ``t_ij``, ``i < j``, with ``lo <= t <= hi`` into ``out[pos:]``.

    Branch-free (every value is written, the position moves on for those inside), so
    ``out`` needs one spare slot after them.
    """
    n = T.shape[0]
    for i in range(r0, r1):
        row = T[i]
        for j in range(i + 1, n):
            t = row[j]
            out[pos] = t
            pos += (t >= lo) & (t <= hi)


@njit(cache=True)
def _median_upper_direct(T):
    """Median of ``t_ij``, ``i < j`` (of the positive ones if that is 0; 1 if none)."""
    n = T.shape[0]
    m = n * (n - 1) // 2
    if m == 0:
        return 1.0
    buf = np.empty(m)
    c = 0
    for i in range(n):
        for j in range(i + 1, n):
            buf[c] = T[i, j]
            c += 1
    a, b = select_pair(buf, (m - 1) // 2)
    med = a if m % 2 == 1 else 0.5 * a + 0.5 * b
    if med <= 0.0:
        npos = 0
        for q in range(m):  # the positive values to the front (buf is a scratch copy)
            if buf[q] > 0.0:
                buf[npos] = buf[q]
                npos += 1
        if npos == 0:
            return 1.0
        a, b = select_pair(buf[:npos], (npos - 1) // 2)
        med = a if npos % 2 == 1 else 0.5 * a + 0.5 * b
    return med


@njit(cache=True)
def _median_bracket(T):
    """A bracket ``(lo, hi)`` of the median of ``t_ij``, ``i < j``, from a sample of pairs.

    Each particle ``i`` is paired with ``k`` others, ``i + s mod N`` for offsets ``s``
    from a Weyl sequence (golden ratio) over ``1 .. (N - 1) / 2``: every particle lies
    in the sample about equally often and the offsets are spread evenly, so the sample
    median strays from the median of all pairs only by the sampling of pairs, whatever
    the order or structure of the rows (a grid of particles, or fixed offsets, missed
    the bracket often). The bracket is the order statistics ``2 sqrt(m)`` either side of
    the sample median (``m = kN`` pairs); a miss is detected by the counts.
    """
    n = T.shape[0]
    half = (n - 1) // 2
    k = max(1, MEDIAN_SAMPLE // n)
    cnt = n * k
    sample = np.empty(cnt)
    c = 0
    for i in range(n):
        for _ in range(k):
            u = c * _GOLDEN
            j = i + 1 + int((u - np.floor(u)) * half)
            if j >= n:
                j -= n
            sample[c] = T[min(i, j), max(i, j)]
            c += 1
    w = int(2.0 * np.sqrt(cnt)) + 2
    q = cnt // 2
    a = max(0, q - w)
    b = min(cnt - 1, q + w)
    hi = select_kth(sample, b)
    return select_kth(sample[:b], a) if a < b else hi, hi


@njit(cache=True)
def _bracket_starts(below, inside, m):
    """Where each block's candidates go (a spare slot after each) and the rank sought.

    ``below`` and ``inside`` are the bracket counts per block of the ``m`` pairs. The
    rank is that of the lower middle pair among the candidates, -1 if the median lies
    outside the bracket.
    """
    start = np.empty(below.size, dtype=np.int64)
    pos = 0
    for b in range(below.size):
        start[b] = pos
        pos += inside[b] + 1
    nbelow = below.sum()
    ka = (m - 1) // 2
    if ka < nbelow or m // 2 >= nbelow + inside.sum():
        return start, -1
    return start, ka - nbelow


@njit(cache=True)
def _bracket_median(cand, start, inside, rank, even):
    """The median from the candidates filled block by block; -1 if it is not positive.

    The blocks' candidates are moved together (in block order), then the order
    statistic ``rank`` (and ``rank + 1``, averaged with it, for an ``even`` count).
    """
    pos = 0
    for b in range(start.size):
        s = start[b]
        for q in range(inside[b]):
            cand[pos] = cand[s + q]
            pos += 1
    a, c = select_pair(cand[:pos], rank)
    med = 0.5 * a + 0.5 * c if even else a
    return med if med > 0.0 else -1.0


@njit(cache=True, parallel=True)
def _median_bracketed(T, bs):
    """The median of ``t_ij``, ``i < j``, from the pairs in a sampled bracket (-1 on a miss).

    Counts and fills run over row blocks of ``bs`` on numba's threads (each block's
    numbers do not depend on the thread).
    """
    n = T.shape[0]
    nb = (n + bs - 1) // bs
    lo, hi = _median_bracket(T)
    below = np.zeros(nb, dtype=np.int64)
    inside = np.zeros(nb, dtype=np.int64)
    for b in prange(nb):
        below[b], inside[b] = _bracket_counts(T, b * bs, min(n, (b + 1) * bs), lo, hi)
    start, rank = _bracket_starts(below, inside, n * (n - 1) // 2)
    if rank < 0:
        return -1.0
    cand = np.empty(start[-1] + inside[-1] + 1)
    for b in prange(nb):
        _bracket_fill(T, b * bs, min(n, (b + 1) * bs), lo, hi, cand, start[b])
    return _bracket_median(cand, start, inside, rank, n * (n - 1) % 4 == 0)


@njit(cache=True)
def _bandwidth(med, scale):
    return max(np.sqrt(med) * scale, MIN_BANDWIDTH)


@njit(cache=True)
def _field_rows(code, p0, beta, T, S, Xc, ones, drive, repulse, r0, r1):
    """Rows ``r0:r1``: ``T`` becomes ``K``; ``drive = K S``, ``repulse`` its repulsive sum.

    The row sums come from a BLAS product with ``ones``, not a serial reduction.
    """
    n = T.shape[0]
    d = S.shape[1]
    rows = T[r0:r1]
    rs = np.empty(r1 - r0)
    if code == RBF:
        for i in range(r0, r1):
            row = T[i]
            for j in range(n):
                row[j] = fast_exp(-row[j] * p0)
        np.dot(rows, Xc, repulse[r0:r1])
        np.dot(rows, ones, rs)
        c = 2.0 * p0
        for i in range(r0, r1):
            s = rs[i - r0]
            for k in range(d):
                repulse[i, k] = c * (s * Xc[i, k] - repulse[i, k])
    else:
        K1 = np.empty((r1 - r0, n))
        for i in range(r0, r1):
            row = T[i]
            row1 = K1[i - r0]
            for j in range(n):
                k0, k1, _ = radial_profile(code, row[j], p0, beta)
                row[j] = k0
                row1[j] = k1
        np.dot(K1, Xc, repulse[r0:r1])
        np.dot(K1, ones, rs)
        for i in range(r0, r1):
            s = rs[i - r0]
            for k in range(d):
                repulse[i, k] = 2.0 * (repulse[i, k] - s * Xc[i, k])
    np.dot(rows, S, drive[r0:r1])


@njit(cache=True)
def _column_mean(X):
    n, d = X.shape
    mu = np.zeros(d)
    for i in range(n):
        for k in range(d):
            mu[k] += X[i, k]
    for k in range(d):
        mu[k] /= n
    return mu


@njit(cache=True, parallel=True)
def svgd_field(code, beta, scale, h, X, S, Xc, nx, ones, T, drive, repulse):
    """Driving and repulsive sums of SVGD (not divided by N); returns ``(h, bad)``.

    ``drive = K S`` and ``repulse[i] = 2 sum_j kappa'(t_ij) (x_i - x_j)`` (the
    gradient of the kernel in its first argument, summed), ``t_ij = |x_i - x_j|^2``.
    With ``h <= 0`` the bandwidth is ``scale`` times the square root of the median of
    ``t_ij``, ``i < j`` (the mean of the two middle values for an even count; the
    median of the positive ones if that is zero, 1 if there are none), at least
    ``MIN_BANDWIDTH``. Row blocks of :data:`SVGD_BLOCK` run in parallel; the numbers
    equal :func:`svgd_field_serial`'s bit for bit.

    Parameters
    ----------
    code : int
        0 RBF (``exp(-t / (2h^2))``), 1 IMQ (``(1 + t/h^2)^beta``).
    scale, h : float
        Median factor, or a fixed bandwidth ``h > 0``.
    X, S : float64 (N, D), C-contiguous
        Particles and scores.
    Xc : float64 (N, D), nx : float64 (N,), T : float64 (N, N)
        Work buffers (centred particles, their squared norms, distances then kernel
        values).
    ones : float64 (N,)
        All ones.
    drive, repulse : float64 (N, D)
        Outputs.

    Returns
    -------
    h : float
        The bandwidth used.
    bad : int
        Rows of ``S`` with a non-finite entry (then the outputs are meaningless).
    """
    n, d = X.shape
    bs = SVGD_BLOCK
    nb = (n + bs - 1) // bs
    mu = _column_mean(X)
    bad = np.zeros(nb, dtype=np.int64)
    for b in prange(nb):
        bad[b] = _centre_rows(X, S, mu, Xc, nx, b * bs, min(n, (b + 1) * bs))
    for b in prange(nb):
        _distance_rows(Xc, nx, T, b * bs, min(n, (b + 1) * bs))
    if h <= 0.0:
        # beyond MEDIAN_DIRECT_PAIRS pairs from a bracket on numba's threads, else (or
        # when the bracket misses) by a selection over all pairs
        med = -1.0
        if n * (n - 1) // 2 > MEDIAN_DIRECT_PAIRS:
            med = _median_bracketed(T, bs)
        if med < 0.0:
            med = _median_upper_direct(T)
        h = _bandwidth(med, scale)
    inv = (1.0 / h) / h  # no overflow in h * h for a wide kernel
    p0 = 0.5 * inv if code == RBF else inv
    for b in prange(nb):
        r0 = b * bs
        r1 = min(n, r0 + bs)
        _field_rows(code, p0, beta, T, S, Xc, ones, drive, repulse, r0, r1)
    return h, bad.sum()


@njit(cache=True)
def svgd_field_serial(code, beta, scale, h, X, S, Xc, nx, ones, T, drive, repulse, bs):
    """:func:`svgd_field` on the calling thread, rows in blocks of ``bs``.

    With ``bs = SVGD_BLOCK`` the numbers are :func:`svgd_field`'s; small problems
    take one block (``bs = N``: fewer, larger BLAS calls). The median is a selection
    over all pairs at any size (the same value as :func:`svgd_field`'s bracket, which
    the flows use beyond :data:`MEDIAN_DIRECT_PAIRS` pairs): a kernel without numba's
    threads calls none that has them (see :mod:`skstein._numba._jit`).
    """
    n, d = X.shape
    nb = (n + bs - 1) // bs
    mu = _column_mean(X)
    bad = 0
    for b in range(nb):
        bad += _centre_rows(X, S, mu, Xc, nx, b * bs, min(n, (b + 1) * bs))
    for b in range(nb):
        _distance_rows(Xc, nx, T, b * bs, min(n, (b + 1) * bs))
    if h <= 0.0:
        h = _bandwidth(_median_upper_direct(T), scale)
    inv = (1.0 / h) / h
    p0 = 0.5 * inv if code == RBF else inv
    for b in range(nb):
        _field_rows(code, p0, beta, T, S, Xc, ones, drive, repulse, b * bs, min(n, (b + 1) * bs))
    return h, bad


@njit(cache=True, parallel=True)
def svgd_field_sets(code, beta, scale, h, X, S, Xc, nx, ones, T, drive, repulse):
    """:func:`svgd_field_serial` (one block) for each set ``X[b]`` of a batch, the sets on
    numba's threads; returns the bad rows of each set.

    Each set's numbers are those of :func:`svgd_field_serial` with ``bs = N`` on it,
    whichever thread computes them. For sets of at most :data:`MEDIAN_DIRECT_PAIRS`
    pairs (their median is a direct selection, not a nested parallel pass).

    Parameters
    ----------
    X, S : float64 (B, N, D), C-contiguous
    Xc : float64 (B, N, D), nx : float64 (B, N), T : float64 (B, N, N)
        Work buffers, one per set.
    ones : float64 (N,)
    drive, repulse : float64 (B, N, D)
        Outputs.

    Returns
    -------
    bad : int64 (B,)
    """
    nsets = X.shape[0]
    n = X.shape[1]
    bad = np.zeros(nsets, dtype=np.int64)
    for bp in prange(nsets):
        b = np.int64(bp)
        _, bad[b] = svgd_field_serial(code, beta, scale, h, X[b], S[b], Xc[b], nx[b], ones,
                                      T[b], drive[b], repulse[b], max(n, 1))
    return bad


_ABS_BITS = np.int64(0x7FFFFFFFFFFFFFFF)


@njit(cache=True)
def _max_abs_bits(a):
    """``max |a|`` of a contiguous float64 array as the bit pattern of a non-negative
    float (an int64; NaN lies above infinity).

    For non-negative floats (sign bit cleared) the integer order is the float order
    and NaN lies above infinity, and an integer maximum vectorises where a float
    maximum that honours NaN does not.
    """
    bits = a.view(np.int64)
    top = np.int64(0)
    for i in range(bits.size):
        top = max(top, bits[i] & _ABS_BITS)
    return top


@njit(cache=True)
def _max_abs(a):
    """``max |a|`` of a C-contiguous float64 array, NaN if any entry is NaN."""
    return np.array([_max_abs_bits(a.reshape(-1))]).view(np.float64)[0]


@njit(cache=True, error_model="numpy")
def _adagrad_range(a, r, w, x, n, first, lr):
    """:func:`adagrad_step` on flat contiguous views (one range of the arrays)."""
    keep = 0.0 if first else 0.9
    new = 1.0 if first else 0.1
    for i in range(a.size):  # branch-free: vectorises
        phi = (a[i] + r[i]) / n
        vi = w[i] * keep + phi * phi * new
        w[i] = vi
        step = phi / (np.sqrt(vi) + 1e-6) * lr
        a[i] = step
        x[i] += step


@njit(cache=True, error_model="numpy")
def adagrad_step(drive, repulse, n, v, first, lr, X):
    """The AdaGrad-like step of the original SVGD code, applied to ``X`` in place.

    ``phi = (drive + repulse) / n``; ``v = phi^2`` (``first``) or ``0.9 v + 0.1 phi^2``;
    ``step = lr phi / (1e-6 + sqrt(v))`` is written into ``drive`` and added to ``X``.
    Returns ``(max v, max |X|)`` after the step (NaN if any is NaN); ``max v`` is
    finite exactly when every ``phi^2`` is. The numpy error model (IEEE division, no
    zero check) lets the loop vectorise: four times faster, the same numbers.
    """
    _adagrad_range(drive.reshape(-1), repulse.reshape(-1), v.reshape(-1), X.reshape(-1), n,
                   first, lr)
    return _max_abs(v), _max_abs(X)


@njit(cache=True, parallel=PARALLEL, error_model="numpy")
def adagrad_step_chunks(drive, repulse, n, v, first, lr, X, chunk):
    """:func:`adagrad_step` by ranges of ``chunk`` entries on numba's threads.

    Every entry is computed alone and a maximum does not depend on the order of its
    terms, so the results are bitwise those of :func:`adagrad_step` for any number
    of threads.
    """
    a = drive.reshape(-1)
    r = repulse.reshape(-1)
    w = v.reshape(-1)
    x = X.reshape(-1)
    nc = (a.size + chunk - 1) // chunk
    tops = np.zeros((nc, 2), dtype=np.int64)
    for cp in prange(nc):
        lo = np.int64(cp) * chunk
        hi = min(a.size, lo + chunk)
        _adagrad_range(a[lo:hi], r[lo:hi], w[lo:hi], x[lo:hi], n, first, lr)
        tops[cp, 0] = _max_abs_bits(w[lo:hi])
        tops[cp, 1] = _max_abs_bits(x[lo:hi])
    top_v = np.int64(0)
    top_x = np.int64(0)
    for c in range(nc):
        top_v = max(top_v, tops[c, 0])
        top_x = max(top_x, tops[c, 1])
    both = np.array([top_v, top_x]).view(np.float64)
    return both[0], both[1]


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


@njit(cache=True, parallel=PARALLEL)
def sliced_svgd_terms_tiled(code, p0, p1, U, S, gdiag, drive, repulse, chunks):
    """:func:`sliced_svgd_terms` with each kernel pair evaluated once, on numba's threads.

    The tiles of :func:`skstein._numba.learning.sliced_grad_upper`: the rows are cut
    into ``pair_blocks(N)`` blocks, the diagonal tiles run in one round and the
    round-robin tiles of distinct blocks in the next ones; the tiles of a round touch
    disjoint rows, so they run in parallel, and ``chunks`` (:func:`slice_chunks`) cuts
    each tile into ranges of slices when a round has fewer tiles than threads. Each
    entry of the outputs receives its terms in one order fixed by ``N``: the numbers are
    the same for any number of threads and any ``chunks``. Half the kernel evaluations
    of the row-parallel pass.
    """
    n, m = U.shape
    nb = pair_blocks(n)
    nk = max(1, chunks)
    for i in range(n):
        for k in range(m):
            drive[i, k] = S[i, k]  # kappa(0) = 1 for both kernels; no self-repulsion
            repulse[i, k] = 0.0
    for r in range(nb):
        ntiles = nb if r == 0 else nb // 2
        for item in prange(ntiles * nk):
            i0, i1, j0, j1, s0, s1 = tile(r, item, nk, n, m, nb)
            for i in range(i0, i1):
                _sliced_pairs_of_row(code, p0, p1, U, S, gdiag, i, i + 1 if j0 < 0 else j0,
                                     j1, s0, s1, drive, repulse)
    return drive, repulse


@njit(cache=True)
def _sliced_pairs_of_row(code, p0, p1, U, S, gdiag, i, j0, j1, s0, s1, drive, repulse):
    """Pairs ``(i, j)``, ``j0 <= j < j1``, slices ``s0 <= k < s1`` of
    :func:`sliced_svgd_terms_tiled`, added to rows ``i`` and ``j`` (compiled once)."""
    u0, u1 = np.uint64(s0), np.uint64(s1)  # unsigned bounds: the loops vectorise
    ui = U[i]
    si = S[i]
    di = drive[i]
    ri = repulse[i]
    for j in range(j0, j1):
        uj = U[j]
        sj = S[j]
        dj = drive[j]
        rj = repulse[j]
        if code == RBF:
            for k in range(u0, u1):
                delta = uj[k] - ui[k]
                q = p0[k]
                kk = fast_exp(-delta * delta * q)
                di[k] += kk * sj[k]
                dj[k] += kk * si[k]
                t = 2.0 * gdiag[k] * delta * q * kk
                ri[k] -= t
                rj[k] += t
        else:
            for k in range(u0, u1):
                delta = uj[k] - ui[k]
                k0, k1, _ = radial_profile(code, delta * delta, p0[k], p1)
                di[k] += k0 * sj[k]
                dj[k] += k0 * si[k]
                t = 2.0 * gdiag[k] * delta * k1
                ri[k] += t
                rj[k] -= t
