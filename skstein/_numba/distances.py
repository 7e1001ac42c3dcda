"""Pairwise distances for the bandwidth heuristics."""

import numpy as np
from numba import njit, prange

from ._jit import PARALLEL
from .select import select_kth

#: Squared distances below this fraction of ``|x_i|^2 + |x_j|^2`` are recomputed
#: directly: there the Gram identity loses its relative accuracy.
RECOMPUTE_BELOW = 1e-4


@njit(cache=True, parallel=PARALLEL)
def condensed_distances(X, G, nx, out):
    r"""``out`` = the distances :math:`\|x_i - x_j\|, i < j`, in ``pdist`` order.

    From the Gram matrix ``G = X X^T`` and ``nx = diag(G)`` by
    :math:`\|x_i\|^2 + \|x_j\|^2 - 2 g_{ij}`; pairs where cancellation would cost
    accuracy (squared distance below ``RECOMPUTE_BELOW`` times the norms) are summed
    directly, so repeated rows give exact zeros. Rows ``t`` and ``n - 1 - t`` go to
    the same iteration, which balances the triangle over the threads.

    Parameters
    ----------
    X : float64 (n, d), best centred
    G : float64 (n, n)
    nx : float64 (n,)
    out : float64 (n (n - 1) / 2,)
    """
    n, d = X.shape
    for tt in prange((n + 1) // 2):
        t = np.int64(tt)
        for side in range(2):
            i = t if side == 0 else n - 1 - t
            if side == 1 and i == t:
                continue
            start = i * n - (i * (i + 1)) // 2
            for j in range(i + 1, n):
                scale = nx[i] + nx[j]
                d2 = scale - 2.0 * G[i, j]
                if d2 <= RECOMPUTE_BELOW * scale:
                    d2 = 0.0
                    for k in range(d):
                        diff = X[i, k] - X[j, k]
                        d2 += diff * diff
                out[start + j - i - 1] = np.sqrt(d2)
    return out


#: Values drawn (at low-discrepancy positions) to bracket the ranks of
#: :func:`select_ranks`.
SELECT_SAMPLE = 2**14
_GOLDEN = 0.6180339887498949
#: Chunks of the counting and filling passes of :func:`select_ranks`.
SELECT_CHUNKS = 64


@njit(cache=True)
def _bracket(sample, p):
    """``(lo, hi)`` around the fraction ``p`` of ``sample`` (reordered in place): its
    order statistics 4 binomial standard deviations of the sample rank, plus 4 values,
    on each side."""
    s = sample.size
    margin = 4.0 * np.sqrt(s * p * (1.0 - p)) + 4.0
    a = int(np.floor(p * s - margin))
    b = int(np.ceil(p * s + margin))
    lo = select_kth(sample, a) if a >= 0 else -np.inf
    hi = select_kth(sample, b) if b < s else np.inf
    return lo, hi


@njit(cache=True, parallel=PARALLEL)
def _count_two(d, a0, b0, a1, b1, nc, counts):
    """Per chunk: values below ``a0``, inside ``[a0, b0]``, below ``a1``, inside
    ``[a1, b1]`` (branch-free, in registers)."""
    m = d.size
    for cp in prange(nc):
        c = np.int64(cp)
        n0 = 0
        i0 = 0
        n1 = 0
        i1 = 0
        for i in range(c * m // nc, (c + 1) * m // nc):
            v = d[i]
            n0 += v < a0
            i0 += (v >= a0) & (v <= b0)
            n1 += v < a1
            i1 += (v >= a1) & (v <= b1)
        counts[c, 0] = n0
        counts[c, 1] = i0
        counts[c, 2] = n1
        counts[c, 3] = i1


@njit(cache=True, parallel=PARALLEL)
def _fill_two(d, a0, b0, a1, b1, nc, start0, start1, cand0, cand1):
    """The values inside each bracket, chunk by chunk from ``start0`` / ``start1``."""
    m = d.size
    for cp in prange(nc):
        c = np.int64(cp)
        p0 = start0[c]
        p1 = start1[c]
        for i in range(c * m // nc, (c + 1) * m // nc):
            v = d[i]
            if v >= a0 and v <= b0:
                cand0[p0] = v
                p0 += 1
            if v >= a1 and v <= b1:
                cand1[p1] = v
                p1 += 1


@njit(cache=True)
def _rank_brackets(d, ranks):
    """The brackets of :func:`select_ranks`: ``(lo, hi, group, ok)``, ``group[q]`` the
    bracket of rank ``q`` (an empty second bracket when one holds them all); ``ok`` is
    False when they need more than two."""
    m = d.size
    s = SELECT_SAMPLE
    sample = np.empty(s)
    for t in range(s):
        f = (t + 0.5) * _GOLDEN
        f -= np.floor(f)
        sample[t] = d[min(m - 1, int(f * m))]
    nq = ranks.size
    # brackets of the ranks, merged where they overlap (ranks ascending): at most two
    lo = np.empty(2)
    hi = np.empty(2)
    group = np.empty(nq, dtype=np.int64)
    ng = 0
    for q in range(nq):
        a, b = _bracket(sample, ranks[q] / m)
        if ng > 0 and a <= hi[ng - 1]:
            hi[ng - 1] = max(hi[ng - 1], b)
        else:
            if ng == 2:
                return lo, hi, group, False
            lo[ng] = a
            hi[ng] = b
            ng += 1
        group[q] = ng - 1
    if ng == 1:   # an empty second bracket
        lo[1] = np.inf
        hi[1] = -np.inf
    return lo, hi, group, True


@njit(cache=True)
def _bracket_offsets(ranks, group, counts):
    """From the chunks' counts: the values below each bracket, each chunk's first slot
    in each bracket's candidates, and whether every rank lies inside its bracket."""
    nc = counts.shape[0]
    below = np.array([counts[:, 0].sum(), counts[:, 2].sum()])
    start0 = np.zeros(nc + 1, dtype=np.int64)
    start1 = np.zeros(nc + 1, dtype=np.int64)
    for c in range(nc):
        start0[c + 1] = start0[c] + counts[c, 1]
        start1[c + 1] = start1[c] + counts[c, 3]
    total = np.array([start0[nc], start1[nc]])
    for q in range(ranks.size):
        g = group[q]
        if ranks[q] < below[g] or ranks[q] >= below[g] + total[g]:
            return below, start0, start1, False
    return below, start0, start1, True


@njit(cache=True)
def _select_candidates(ranks, group, below, cand0, cand1, out):
    for q in range(ranks.size):
        cand = cand0 if group[q] == 0 else cand1
        out[q] = select_kth(cand, ranks[q] - below[group[q]])


def select_ranks(d, ranks, out):
    r"""``out[q]`` = the ``ranks[q]``-th smallest value of ``d`` (0-based), without
    reordering ``d``; False (``out`` unset) when a bracket misses.

    A sample of :data:`SELECT_SAMPLE` values at low-discrepancy positions (golden-ratio
    steps, not aligned with any row structure of ``d``) gives, for each rank, a bracket
    ``[lo, hi]`` (two of its order statistics) that holds it with overwhelming probability;
    overlapping brackets merge, and at most two are handled (more: False). One
    parallel pass counts the values below and inside each, a second copies the inside
    ones, and a selection among those gives each value. The counts are integers and
    the values order statistics, so the result is exact and the same for any number
    of threads. The steps are compiled apart and called from here, so that no serial
    kernel calls a parallel one (see :mod:`skstein._numba._jit`).

    Parameters
    ----------
    d : float64 array (m,), finite
    ranks : int64 array (q,)
        Ascending, in ``[0, m)``.
    out : float64 array (q,)
    """
    lo, hi, group, ok = _rank_brackets(d, ranks)
    if not ok:
        return False
    nc = SELECT_CHUNKS
    counts = np.empty((nc, 4), dtype=np.int64)
    _count_two(d, lo[0], hi[0], lo[1], hi[1], nc, counts)
    below, start0, start1, ok = _bracket_offsets(ranks, group, counts)
    if not ok:
        return False
    cand0 = np.empty(start0[nc])
    cand1 = np.empty(start1[nc])
    _fill_two(d, lo[0], hi[0], lo[1], hi[1], nc, start0, start1, cand0, cand1)
    _select_candidates(ranks, group, below, cand0, cand1, out)
    return True
