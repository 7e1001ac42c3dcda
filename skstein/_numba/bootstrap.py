"""Bootstrap weight kernels."""

from numba import njit, prange


@njit(cache=True, parallel=True)
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
