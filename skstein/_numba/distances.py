"""Pairwise distances for the bandwidth heuristics."""

import numpy as np
from numba import njit, prange

from ._jit import PARALLEL

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
