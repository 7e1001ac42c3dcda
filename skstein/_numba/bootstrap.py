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


@njit(cache=True, parallel=True)
def add_weighted_forms(R, V, col, forms):
    r"""``forms[m, l] += 2 sum_j R[m, l, j] V[m, col + j]``: the last step of the forms.

    ``R[m, l]`` holds draw ``m``'s weights times kernel ``l``'s block of the upper
    triangle; the dot with the draw's weights on the block's columns completes that
    block's share of :math:`v_m^\top H_l v_m`.

    Parameters
    ----------
    R : float64 (M, L, w)
    V : float64 (M, n)
    col : int, first column of the block in ``V``
    forms : float64 (M, L)
    """
    M, L, w = R.shape
    for m in prange(M):
        for li in range(L):
            s0 = 0.0
            s1 = 0.0
            s2 = 0.0
            s3 = 0.0
            j = 0
            while j + 4 <= w:
                s0 += R[m, li, j] * V[m, col + j]
                s1 += R[m, li, j + 1] * V[m, col + j + 1]
                s2 += R[m, li, j + 2] * V[m, col + j + 2]
                s3 += R[m, li, j + 3] * V[m, col + j + 3]
                j += 4
            while j < w:
                s0 += R[m, li, j] * V[m, col + j]
                j += 1
            forms[m, li] += 2.0 * ((s0 + s1) + (s2 + s3))
    return forms
