"""Block Gibbs sampling of the Gauss-Bernoulli RBM, one independent chain per row."""

import numpy as np
from numba import njit, prange

from ._jit import PARALLEL


@njit(cache=True, parallel=PARALLEL)
def gauss_bernoulli_gibbs(X, B, BT, b, c, U, E):
    r"""Run ``U.shape[0]`` block-Gibbs sweeps on every chain (row of ``X``), in place.

    One sweep: :math:`h_k = +1` with probability :math:`\sigma(2 a_k)`,
    :math:`a = B^\top x / 2 + c` (else :math:`-1`), then :math:`x = b + B h / 2 + \epsilon`.

    Parameters
    ----------
    X : float64 (n, dx)
        Current visible states, overwritten.
    B : float64 (dx, dh); BT : its transpose, C-contiguous (dh, dx); b : (dx,); c : (dh,)
    U : float64 (steps, n, dh)
        Uniform(0, 1) draws for the hidden units.
    E : float64 (steps, n, dx)
        Standard normal draws for the visible units.
    """
    n, dx = X.shape
    dh = B.shape[1]
    steps = U.shape[0]
    for i in prange(n):
        a = np.empty(dh)
        h = np.empty(dh)
        m = np.empty(dx)
        for t in range(steps):
            xi = X[i]
            # the dot products run over d (then k) in order for every unit, as plain
            # sums would; only the independent units are computed side by side
            a[:] = 0.0
            for d in range(dx):
                xd = xi[d]
                bd = B[d]
                for k in range(dh):
                    a[k] += xd * bd[k]
            for k in range(dh):
                ak = c[k] + 0.5 * a[k]
                h[k] = 1.0 if U[t, i, k] * (1.0 + np.exp(-2.0 * ak)) < 1.0 else -1.0
            m[:] = 0.0
            for k in range(dh):
                hk = h[k]
                bk = BT[k]
                for d in range(dx):
                    m[d] += bk[d] * hk
            for d in range(dx):
                X[i, d] = b[d] + 0.5 * m[d] + E[t, i, d]
    return X
