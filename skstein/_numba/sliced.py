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
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

from ._jit import IMQ, PARALLEL, RBF  # noqa: F401 (the kernel codes are part of this API)


# --- a vectorisable exp -----------------------------------------------------------
# np.exp in a compiled loop is a scalar libm call (no SVML here), which blocks SIMD
# vectorisation of the k-loops. _exp is plain arithmetic: Cody-Waite range reduction
# x = n ln2 + r, |r| <= ln2/2, a degree-12 Taylor polynomial for e^r (truncation
# error below 2e-16 relative) and 2^n built in the exponent bits. Inputs below
# _EXP_MIN (where e^x < 2.3e-308, the smallest normal number) give exactly 0.


@intrinsic
def _f64_as_i64(typingctx, x):
    sig = types.int64(types.float64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return sig, codegen


@intrinsic
def _i64_as_f64(typingctx, x):
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return sig, codegen


_LOG2E = 1.4426950408889634
_SHIFT = 6755399441055744.0  # 1.5 * 2**52: adding it rounds to an integer
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_EXP_MIN = -708.3
_EXP_MAX = 709.0


@njit(cache=True, inline="always")
def fast_exp(x):
    """exp(x) by range reduction and a polynomial; exactly 0 below -708.3, vectorisable."""
    xc = min(max(x, _EXP_MIN), _EXP_MAX)
    kf = xc * _LOG2E + _SHIFT
    nf = kf - _SHIFT
    r = (xc - nf * _LN2_HI) - nf * _LN2_LO
    p = 2.08767569878681e-09 * r + 2.505210838544172e-08
    p = p * r + 2.755731922398589e-07
    p = p * r + 2.7557319223985893e-06
    p = p * r + 2.48015873015873e-05
    p = p * r + 0.0001984126984126984
    p = p * r + 0.001388888888888889
    p = p * r + 0.008333333333333333
    p = p * r + 0.041666666666666664
    p = p * r + 0.16666666666666666
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    n = _f64_as_i64(kf) - _f64_as_i64(_SHIFT)
    scale = _i64_as_f64((n + 1023) << 52)
    out = p * scale
    return out if x >= _EXP_MIN else 0.0


@njit(cache=True)
def fast_exp_array(x, out):
    """Elementwise :func:`fast_exp` (for tests and benchmarks)."""
    for i in range(x.size):
        out[i] = fast_exp(x[i])
    return out


@njit(cache=True, inline="always")
def _imq_k(base, p1, half):
    if half:
        return 1.0 / np.sqrt(base)
    return base**p1


# The IMQ profile K, K', K'' and 1/(1 + tq) at t, q = 1/h^2: one function per exponent
# case, branch-free and inlined, so the k-loops that call them still vectorise.

@njit(cache=True, inline="always")
def _imq_half(t, q):
    """The IMQ profile for beta = -1/2 (a square root instead of a power)."""
    ib = 1.0 / (1.0 + t * q)
    kk = np.sqrt(ib)
    k1 = -0.5 * q * kk * ib
    return kk, k1, -1.5 * q * k1 * ib, ib


@njit(cache=True, inline="always")
def _imq_beta(t, q, p1):
    """The IMQ profile for the exponent ``p1``."""
    base = 1.0 + t * q
    kk = base**p1
    ib = 1.0 / base
    k1 = p1 * q * kk * ib
    return kk, k1, (p1 - 1.0) * q * k1 * ib, ib


@njit(cache=True, inline="always")
def _h_from_profile(t, d, kk, k1, k2, ck, a_i, a_j):
    """h_k(i, j) from the profile: K a_i a_j - 2c delta K' (a_i - a_j) - c^2 (2K' + 4tK'')."""
    return kk * a_i * a_j - 2.0 * ck * d * k1 * (a_i - a_j) - ck * ck * (2.0 * k1 + 4.0 * t * k2)


@njit(cache=True, inline="always", fastmath={"contract"})
def _pair_h(code, half, p1, ui, ai, uj, aj, c, p0, acc, tmp):
    """acc[k] += h_k(i, j) and tmp[k] = h_k(i, j) for all k (vectorisable loops).

    One branch-free loop per kernel: a branch inside the k-loop (even on a loop
    invariant) keeps it from vectorising.
    """
    m = ui.shape[0]
    if code == RBF:
        # K = E, K' = -qE, K'' = q^2 E written out (w = 1 - 2tq): fewer operations
        for k in range(m):
            d = ui[k] - uj[k]
            q = p0[k]
            ck = c[k]
            tq = d * d * q
            e = fast_exp(-tq)
            cross = ck * d * (ai[k] - aj[k]) + ck * ck * (1.0 - 2.0 * tq)
            h = e * (ai[k] * aj[k] + 2.0 * q * cross)
            acc[k] += h
            tmp[k] = h
    elif half:
        for k in range(m):
            d = ui[k] - uj[k]
            t = d * d
            kk, k1, k2, _ = _imq_half(t, p0[k])
            h = _h_from_profile(t, d, kk, k1, k2, c[k], ai[k], aj[k])
            acc[k] += h
            tmp[k] = h
    else:
        for k in range(m):
            d = ui[k] - uj[k]
            t = d * d
            kk, k1, k2, _ = _imq_beta(t, p0[k], p1)
            h = _h_from_profile(t, d, kk, k1, k2, c[k], ai[k], aj[k])
            acc[k] += h
            tmp[k] = h


@njit(cache=True, inline="always")
def _grad_terms(t, d, kk, k1, k2, k3, ck, a_i, a_j, k, acc, arho, apsi, abeta):
    dif = a_i - a_j
    e = 2.0 * k1 + 4.0 * t * k2
    cdk1 = ck * d * k1
    acc[k] += kk * a_i * a_j - 2.0 * cdk1 * dif - ck * ck * e
    arho[k] += (2.0 * d * k1 * a_i * a_j - 2.0 * ck * dif * (k1 + 2.0 * t * k2)
                - ck * ck * d * (12.0 * k2 + 8.0 * t * k3))
    apsi[k] += -2.0 * d * k1 * dif - 2.0 * ck * e
    abeta[k] += kk * a_j - 2.0 * cdk1


@njit(cache=True, inline="always")
def _pair_grad(code, half, p1, ui, ai, uj, aj, c, p0, acc, arho, apsi, abeta):
    """Accumulate h, phi, psi and dh/da_i of pair (i, j) for all k (vectorisable loops)."""
    m = ui.shape[0]
    if code == RBF:
        for k in range(m):
            d = ui[k] - uj[k]
            t = d * d
            q = p0[k]
            kk = fast_exp(-t * q)
            k1 = -q * kk
            k2 = -q * k1
            k3 = -q * k2
            _grad_terms(t, d, kk, k1, k2, k3, c[k], ai[k], aj[k], k, acc, arho, apsi, abeta)
    elif half:
        for k in range(m):
            d = ui[k] - uj[k]
            t = d * d
            q = p0[k]
            kk, k1, k2, ib = _imq_half(t, q)
            _grad_terms(t, d, kk, k1, k2, -2.5 * q * k2 * ib, c[k], ai[k], aj[k], k, acc,
                        arho, apsi, abeta)
    else:
        for k in range(m):
            d = ui[k] - uj[k]
            t = d * d
            q = p0[k]
            kk, k1, k2, ib = _imq_beta(t, q, p1)
            _grad_terms(t, d, kk, k1, k2, (p1 - 2.0) * q * k2 * ib, c[k], ai[k], aj[k], k,
                        acc, arho, apsi, abeta)


@njit(cache=True, inline="always")
def _sum4(x):
    """Sum with four interleaved partial sums (fixed order, so deterministic)."""
    m = x.shape[0]
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    k = 0
    while k + 4 <= m:
        s0 += x[k]
        s1 += x[k + 1]
        s2 += x[k + 2]
        s3 += x[k + 3]
        k += 4
    while k < m:
        s0 += x[k]
        k += 1
    return (s0 + s1) + (s2 + s3)


@njit(cache=True, parallel=PARALLEL, fastmath={"contract"})
def sliced_stein_rows(code, p0, p1, U, A, c, row0, want_grad, want_H, H, rowsum, rho, beta,
                      psisum):
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
    want_grad : bool
        Fill ``rho``, ``psisum`` and ``beta`` (all three must then be ``(B, m)``).
    want_H : bool
        Fill ``H``.
    H : float64 (B, N)
        Output block (any shape when not ``want_H``).
    rowsum, rho, beta, psisum : float64 (B, m)
        Outputs (``rho``, ``beta``, ``psisum`` may be any shape when not ``want_grad``).
    """
    nb = rowsum.shape[0]
    half = p1 == -0.5
    for bp in prange(nb):
        _full_row(code, half, p1, p0, c, U, A, row0, np.int64(bp), want_grad, want_H, H, rowsum,
                  rho, beta, psisum)
    return rowsum


@njit(cache=True, fastmath={"contract"})
def _full_row(code, half, p1, p0, c, U, A, row0, bi, want_grad, want_H, H, rowsum, rho, beta,
              psisum):
    """Row ``bi`` of :func:`sliced_stein_rows` (compiled once, called from its loop)."""
    n, m = U.shape
    i = row0 + bi
    acc = rowsum[bi]
    acc[:] = 0.0
    ui = U[i]
    ai = A[i]
    if want_grad:
        arho = rho[bi]
        apsi = psisum[bi]
        abeta = beta[bi]
        arho[:] = 0.0
        apsi[:] = 0.0
        abeta[:] = 0.0
        for j in range(n):
            if j != i:
                _pair_grad(code, half, p1, ui, ai, U[j], A[j], c, p0, acc, arho, apsi, abeta)
    else:
        tmp = np.empty(m)
        for j in range(n):
            if j == i:
                if want_H:
                    H[bi, j] = 0.0
                continue
            _pair_h(code, half, p1, ui, ai, U[j], A[j], c, p0, acc, tmp)
            if want_H:
                H[bi, j] = _sum4(tmp)


@njit(cache=True, parallel=PARALLEL, fastmath={"contract"})
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
    half = p1 == -0.5
    for qp in prange((n + 1) // 2):
        q = np.int64(qp)
        tmp = np.empty(m)
        _upper_row(code, half, p1, p0, c, U, A, q, want_H, H, rowsum, tmp)
        if n - 1 - q != q:
            _upper_row(code, half, p1, p0, c, U, A, n - 1 - q, want_H, H, rowsum, tmp)
    return rowsum


@njit(cache=True, fastmath={"contract"})
def _upper_row(code, half, p1, p0, c, U, A, i, want_H, H, rowsum, tmp):
    """Row ``i`` of :func:`sliced_stein_upper` (compiled once, called from its loop)."""
    n = U.shape[0]
    acc = rowsum[i]
    acc[:] = 0.0
    if want_H:
        for j in range(i + 1):
            H[i, j] = 0.0
    ui = U[i]
    ai = A[i]
    for j in range(i + 1, n):
        _pair_h(code, half, p1, ui, ai, U[j], A[j], c, p0, acc, tmp)
        if want_H:
            H[i, j] = _sum4(tmp)


@njit(cache=True, inline="always")
def _past(u, i, j, x):
    """The first index from ``max(j, i + 1)`` whose difference ``u[.] - u[i]`` is above
    ``x`` (ascending ``u``; ``len(u)`` if none): one step of the two-pointer passes."""
    n = u.shape[0]
    if j < i + 1:
        j = i + 1
    while j < n and u[j] - u[i] <= x:
        j += 1
    return j


@njit(cache=True)
def _pairs_le(u, x):
    """One two-pointer pass over the differences u[j] - u[i], i < j, of ascending ``u``.

    Returns how many are <= x, the largest of those (-inf if none) and the smallest
    difference above x (inf if none). For each ``i`` the first ``j`` with a difference
    above ``x`` only moves forward, so the pass is O(n).
    """
    n = u.shape[0]
    count = 0
    below = -np.inf
    above = np.inf
    j = 0
    for i in range(n):
        j = _past(u, i, j, x)
        count += j - i - 1
        if j - 1 > i:
            below = max(below, u[j - 1] - u[i])
        if j < n:
            above = min(above, u[j] - u[i])
    return count, below, above


@njit(cache=True)
def _bracket_diffs(u, lo, hi, out):
    """The differences u[j] - u[i] (i < j) in ``(lo, hi]`` into ``out`` (ascending ``u``).

    Two pointers per bound: for each ``i`` the ``j`` with a difference above ``lo``
    and the ``j`` with one above ``hi`` only move forward. Returns how many were written.
    """
    n = u.shape[0]
    a = 0
    b = 0
    pos = 0
    for i in range(n):
        a = _past(u, i, a, lo)
        b = _past(u, i, max(a, b), hi)
        for j in range(a, b):
            out[pos] = u[j] - u[i]
            pos += 1
    return pos


# The same questions (how many below, the largest below, the smallest above) asked of
# a list of the differences: for small samples the list fits in the cache, and a
# branch-free pass over it is several times faster than a two-pointer pass, whose
# inner loop mispredicts once per row.

@njit(cache=True)
def _list_diffs(u, out):
    """``out[:n(n-1)/2]`` = :math:`|u_j - u_i|`, i < j (any order of ``u``).

    For ``u_i <= u_j``, ``|u_i - u_j| = u_j - u_i`` exactly (a float difference and
    its negative are exact negatives), so the list holds the numbers the two-pointer
    passes form from the sorted values.
    """
    n = u.shape[0]
    p = 0
    for i in range(n - 1):
        ui = u[i]
        seg = out[p:p + n - 1 - i]
        src = u[i + 1:]
        for q in range(n - 1 - i):
            seg[q] = abs(src[q] - ui)
        p += n - 1 - i
    return p


@njit(cache=True)
def _list_count_le(d, x):
    """Number of entries of ``d`` that are <= x (a branch-free pass)."""
    count = np.int64(0)
    for q in range(d.shape[0]):
        count += d[q] <= x
    return count


@njit(cache=True)
def _list_max_le(d, x):
    """Largest entry <= x of the non-negative ``d`` (0 if none).

    On the bit patterns: for non-negative floats the integer order is the float
    order, and an integer maximum vectorises.
    """
    best = np.int64(0)
    for q in range(d.shape[0]):
        best = max(best, _f64_as_i64(d[q]) if d[q] <= x else np.int64(0))
    return _i64_as_f64(best)


_INF_BITS = np.int64(0x7FF0000000000000)


@njit(cache=True)
def _list_min_gt(d, x):
    """Smallest entry > x of the non-negative ``d`` (inf if none), as :func:`_list_max_le`."""
    best = _INF_BITS
    for q in range(d.shape[0]):
        best = min(best, _f64_as_i64(d[q]) if d[q] > x else _INF_BITS)
    return _i64_as_f64(best)


#: The two-pointer bisection of :func:`_pair_ranks` stops once at most this many
#: differences lie in its bracket; those are then listed and sorted.
PAIR_BRACKET = 24
#: Up to this many pairs the differences of a column are listed (in the cache) and
#: counted by branch-free passes; beyond, two-pointer passes on the sorted column.
LISTED_PAIRS = 8192


@njit(cache=True)
def _pair_ranks(u, d, k, k2, clo, hi):
    """The ``k``-th and ``k2``-th smallest (1-based, ``k <= k2 <= k + 1``) of the
    differences :math:`|u_j - u_i|`, i < j, given ``clo`` = the number of them <= 0
    (``clo < k``) and ``hi`` = their maximum.

    ``d`` is the list of the differences (:func:`_list_diffs`), or empty: then ``u``
    is ascending and the counts are two-pointer passes. Exact: bisection on the value
    with one count per step narrows a bracket ``(lo, hi]`` that holds both ranks,
    until at most :data:`PAIR_BRACKET` differences lie in it (those are then listed
    and sorted; with a list, until at most two: the smallest and the largest inside),
    a count splits the two ranks, or no float lies between the bounds (then every
    difference inside equals ``hi``). The answers are differences as
    computed, so they equal the order statistics of the formed differences bit for bit.
    The steps aim at the ranks by interpolating the counts (about 8 counts instead of
    11 for 50 normal or Laplace points).
    """
    listed = d.shape[0] > 0
    # listed counts are cheap: narrow down to the two ranks themselves
    width = 2 if listed else PAIR_BRACKET
    n = u.shape[0]
    lo = 0.0
    chi = n * (n - 1) // 2
    while chi - clo > width:
        # the value where the ranks would lie if the differences in the bracket were
        # evenly spread, kept off its ends (a bisection where that rounds onto them)
        f = min(max((0.5 * (k + k2) - 0.5 - clo) / (chi - clo), 0.2), 0.8)
        mid = lo + f * (hi - lo)
        if mid <= lo or mid >= hi:
            mid = lo + 0.5 * (hi - lo)
            if mid <= lo or mid >= hi:  # no float between: all inside equal hi
                return hi, hi
        c = _list_count_le(d, mid) if listed else _pairs_le(u, mid)[0]
        if c >= k2:
            hi = mid
            chi = c
        elif c < k:
            lo = mid
            clo = c
        elif listed:  # c == k < k2: rank k is the largest difference <= mid, k2 the next
            return _list_max_le(d, mid), _list_min_gt(d, mid)
        else:
            _, below, above = _pairs_le(u, mid)
            return below, above
    if listed:  # one or two differences in (lo, hi]: the ranks clo + 1 and chi
        first = _list_min_gt(d, lo)
        last = _list_max_le(d, hi)
        return first if k == clo + 1 else last, first if k2 == clo + 1 else last
    buf = np.empty(chi - clo)
    _bracket_diffs(u, lo, hi, buf)
    _insertion_sort(buf)
    return buf[k - clo - 1], buf[k2 - clo - 1]


@njit(cache=True)
def _insertion_sort(a):
    """Sort the few (at most :data:`PAIR_BRACKET`) values of ``a`` in place, ascending.

    For so few values an insertion sort is as fast as NumPy's, and far cheaper to
    compile than numba's quicksort (about a second on first use)."""
    for i in range(1, a.shape[0]):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


def median_abs_diff_columns(U, out):
    r"""Per column ``k``: the median of :math:`|u_{ik} - u_{jk}|, i < j`.

    If that median is zero, the median of the positive differences is taken instead,
    and ``-1`` is written when all differences are zero (the caller raises). Exact
    (equal to ``numpy.median`` of the differences) without sorting the
    :math:`n(n-1)/2` differences: order statistics by bisection on the value with a
    count of the differences below per step (:func:`_pair_ranks`). Up to
    :data:`LISTED_PAIRS` pairs the differences of a column are listed and counted by
    branch-free passes; beyond, the columns are sorted by NumPy and counted by
    two-pointer passes in :math:`O(n)` each. Parallel over columns.

    Parameters
    ----------
    U : float64 (n, m)
    out : float64 (m,)
    """
    _check_finite_columns(U)
    n = U.shape[0]
    if n * (n - 1) // 2 <= LISTED_PAIRS:
        return _median_listed_columns(np.ascontiguousarray(U, dtype=np.float64), out)
    return _median_sorted_rows(_sorted_columns(U), out)


def quantile_abs_diff_columns(U, q, out):
    r"""Per column ``k``: the ``q``-quantile of the positive :math:`|u_{ik} - u_{jk}|, i < j`.

    The order statistic of rank :math:`\lceil q P \rceil` among the ``P`` positive
    differences (lower quantile, no interpolation), by the same counting bisection
    as :func:`median_abs_diff_columns` on the sorted columns; ``-1`` when all
    differences are zero.

    Parameters
    ----------
    U : float64 (n, m)
    q : float in (0, 1]
    out : float64 (m,)
    """
    _check_finite_columns(U)
    return _quantile_sorted_rows(_sorted_columns(U), float(q), out)


def _check_finite_columns(U):
    """The bisections on the value never end on a NaN: raise for non-finite values."""
    if not np.isfinite(U).all():
        raise ValueError("the projections of the particles or sample are not finite: "
                         "their median distances are undefined.")


def _sorted_columns(U):
    """The columns of ``U`` (n, m), each sorted ascending, as the rows of a C array (m, n)."""
    V = np.ascontiguousarray(np.asarray(U, dtype=np.float64).T)
    V.sort(axis=1)
    return V


#: Columns per parallel step of :func:`_median_listed_columns` (one work list each).
LISTED_BLOCK = 64


@njit(cache=True, parallel=PARALLEL)
def _median_listed_columns(U, out):
    """:func:`median_abs_diff_columns` of the columns of ``U`` (n, m) by listed differences.

    Columns in blocks of :data:`LISTED_BLOCK`, one work list per block; each column's
    result depends on that column alone.
    """
    n, m = U.shape
    nb = (m + LISTED_BLOCK - 1) // LISTED_BLOCK
    for bp in prange(nb):
        b = np.int64(bp)
        u = np.empty(n)
        d = np.empty(n * (n - 1) // 2)
        for k in range(b * LISTED_BLOCK, min(m, (b + 1) * LISTED_BLOCK)):
            for i in range(n):
                u[i] = U[i, k]
            _list_diffs(u, d)
            out[k] = _median_abs_diff(u, d)
    return out


@njit(cache=True, parallel=PARALLEL)
def _median_sorted_rows(V, out):
    """:func:`median_abs_diff_columns` of the sorted columns ``V`` (m, n), one per row."""
    empty = np.empty(0)
    for k in prange(V.shape[0]):
        out[k] = _median_abs_diff(V[k], empty)
    return out


@njit(cache=True, parallel=PARALLEL)
def _quantile_sorted_rows(V, q, out):
    """:func:`quantile_abs_diff_columns` of the sorted columns ``V`` (m, n), one per row."""
    for k in prange(V.shape[0]):
        out[k] = _quantile_abs_diff(V[k], q)
    return out


@njit(cache=True)
def _middle_pair(u, d, offset, total, nzero, hi):
    """Median of the ranks ``offset + 1 .. offset + total`` of the pair differences."""
    half = total // 2
    k = offset + (half + 1 if total % 2 == 1 else half)
    k2 = offset + half + 1
    if k2 <= nzero:
        return 0.0
    if k <= nzero:
        a = 0.0
        b = _pair_ranks(u, d, k2, k2, nzero, hi)[0]
    else:
        a, b = _pair_ranks(u, d, k, k2, nzero, hi)
    return a if total % 2 == 1 else 0.5 * (a + b)


@njit(cache=True)
def _median_abs_diff(u, d):
    """The median of the pair differences of ``u`` (see median_abs_diff_columns).

    ``d`` lists the differences, or is empty and ``u`` ascending (see :func:`_pair_ranks`).
    """
    n = u.shape[0]
    npairs = n * (n - 1) // 2
    nzero = _list_count_le(d, 0.0) if d.shape[0] > 0 else _pairs_le(u, 0.0)[0]
    if nzero >= npairs:
        return -1.0
    umin = u[0]
    umax = u[0]
    for i in range(1, n):
        umin = min(umin, u[i])
        umax = max(umax, u[i])
    hi = umax - umin
    # median of all differences, or of the positive ones when that is zero (offset an
    # int64 variable in both calls: a literal 0 would compile a second variant)
    start = nzero - nzero
    med = _middle_pair(u, d, start, npairs, nzero, hi)
    if med <= 0.0:
        med = _middle_pair(u, d, nzero, npairs - nzero, nzero, hi)
    return med


@njit(cache=True)
def _quantile_abs_diff(u, q):
    """The q-quantile of the positive pair differences of ascending ``u``."""
    n = u.shape[0]
    npairs = n * (n - 1) // 2
    nzero = _pairs_le(u, 0.0)[0]
    total = npairs - nzero
    if total <= 0:
        return -1.0
    rank = int(np.ceil(q * total))
    if rank < 1:
        rank = 1
    return _pair_ranks(u, np.empty(0), nzero + rank, nzero + rank, nzero, u[n - 1] - u[0])[0]


@njit(cache=True, inline="always")
def _profile2(code, t, p0, p1):
    """K(t), K'(t), K''(t) of the 1-D base kernel (RBF p0 = 1/(2h^2); IMQ p0 = 1/h^2)."""
    if code == RBF:
        k = fast_exp(-t * p0)
        k1 = -p0 * k
        return k, k1, -p0 * k1
    base = 1.0 + t * p0
    k = _imq_k(base, p1, p1 == -0.5)
    ib = 1.0 / base
    k1 = p1 * p0 * k * ib
    return k, k1, (p1 - 1.0) * p0 * k1 * ib


@njit(cache=True, parallel=PARALLEL, fastmath={"contract"})
def shared_direction_rows(code, p0, p1, u, b, cc, AA, upper_only, H, K, hrow, wrow, rrow):
    r"""Summed sliced Stein matrix when every slice shares one direction (one projection ``u``).

    With :math:`\delta = u_i - u_j`, :math:`t = \delta^2` and the profile of one
    bandwidth, :math:`\sum_k h_k(i, j) = K\, (AA^\top)_{ij} - 2\delta K' (b_i - b_j)
    - \|c\|^2 (2K' + 4tK'')` (see :func:`skstein.discrepancy._shared_direction_sums`).
    Full rows, parallel over rows, each row in a fixed order.

    Parameters
    ----------
    code, p0, p1 : int, float, float
        Base kernel and its scale (as :func:`sliced_stein_rows`, one bandwidth).
    u, b : float64 (N,)
        The projection ``X g`` and ``A c``.
    cc : float
        :math:`\|c\|^2`.
    AA : float64 (N, N)
        The Gram matrix :math:`A A^\top` of the slice projections.
    upper_only : bool
        Write ``H`` in the strict upper triangle only (zeros elsewhere).
    H, K : float64 (N, N)
        Outputs: the summed Stein matrix and the kernel matrix, zero diagonal.
    hrow, wrow, rrow : float64 (N,)
        Outputs: row sums (over ``j != i``) of the summed Stein matrix, of
        :math:`\delta K'` and of :math:`2K' + 4tK''`.
    """
    for i in prange(u.shape[0]):
        _shared_direction_row(code, p0, p1, u, b, cc, AA, upper_only, H, K, hrow, wrow, rrow,
                              np.int64(i))
    return hrow


@njit(cache=True, fastmath={"contract"})
def _shared_direction_row(code, p0, p1, u, b, cc, AA, upper_only, H, K, hrow, wrow, rrow, i):
    """Row ``i`` of :func:`shared_direction_rows` (compiled once, called from its loop)."""
    n = u.shape[0]
    ah = 0.0
    aw = 0.0
    ar = 0.0
    for j in range(n):
        if j == i:
            H[i, j] = 0.0
            K[i, j] = 0.0
            continue
        d = u[i] - u[j]
        t = d * d
        kk, k1, k2 = _profile2(code, t, p0, p1)
        w = d * k1
        r = 2.0 * k1 + 4.0 * t * k2
        h = kk * AA[i, j] - 2.0 * w * (b[i] - b[j]) - cc * r
        K[i, j] = kk
        H[i, j] = 0.0 if upper_only and j < i else h
        ah += h
        aw += w
        ar += r
    hrow[i] = ah
    wrow[i] = aw
    rrow[i] = ar
