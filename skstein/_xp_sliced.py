r"""The test stage of the maxSKSD test in any Array API namespace.

The same quantities as :func:`skstein.discrepancy.sliced_sums_and_forms` and the
second-moment bootstrap of :class:`~skstein.MaxSKSDTest` (whose numba passes are the
CPU path), written as dense array algebra so that they run where the arrays live (a
GPU with CuPy or PyTorch). The directions, slices and bandwidths are learned and
resolved on the host; what grows as :math:`N^2` runs here. With the projections
:math:`u_{ik} = g_k^\top x_i`, :math:`a_{ik} = r_k^\top s_i`, :math:`c_k = r_k^\top g_k`,
:math:`\delta = u_{ik} - u_{jk}`, :math:`t = \delta^2` and the 1-D profile
:math:`K, K', K''` of pair ``k`` (DESIGN section 3.4),

.. math::

    h_k(x_i, x_j) = K a_{ik} a_{jk} - 2 c_k \delta K' (a_{ik} - a_{jk})
    - c_k^2 (2K' + 4tK''),

summed over the pairs ``k`` into the matrix :math:`H` (zero diagonal), formed by
blocks of rows (against all columns) and of pairs within ``max_memory`` bytes (at
least :data:`skstein._xp_stein.DEVICE_MAX_MEMORY`), never whole. The bootstrap forms
:math:`v_m^\top H v_m` are one product of each block of rows with the weights (drawn
on the host, in float64 as on the CPU), accumulated over the blocks.
"""

import numpy as np

from ._xp_stein import DEVICE_MAX_MEMORY
from .discrepancy import (_SLICED_RBF, DEFAULT_MAX_MEMORY, SlicedSteinSums, _sliced_diag,
                          _sliced_kernel_params, check_stein_finite)

__all__ = ["xp_sliced_sums_and_forms", "xp_linear_forms", "on_device_of"]

#: ``(rows, N, pairs)`` temporaries of a block of :func:`xp_sliced_sums_and_forms`.
SLICED_BLOCK_ARRAYS = 8
#: ``(rows, N)`` temporaries of a block of :func:`xp_linear_forms`.
LINEAR_BLOCK_ARRAYS = 6


def _namespace(X):
    import array_api_compat

    return array_api_compat.array_namespace(X), array_api_compat.device(X)


def _on(xp, device, A):
    return xp.asarray(np.ascontiguousarray(A, dtype=np.float64), device=device)


def on_device_of(A, ref):
    """The host array ``A`` in float64 on the device (and in the namespace) of ``ref``."""
    return _on(*_namespace(ref), A)


def _host(A):
    from ._xp import to_host

    return np.asarray(to_host(A), dtype=np.float64)


def _off_diagonal(xp, a, b, n, device):
    """``(b - a, n)``: 1 off the diagonal of rows ``a:b`` of an ``(n, n)`` matrix, 0 on it."""
    rows = xp.arange(a, b, device=device)[:, None]
    cols = xp.arange(n, device=device)[None, :]
    return xp.astype(rows != cols, xp.float64)


def _row_forms(xp, H_rows, W, a, b):
    r"""The share of the rows ``a:b`` (``H_rows``) in the forms :math:`v_m^\top H v_m`."""
    return xp.sum((W @ H_rows.T) * W[:, a:b], axis=1)


def _blocks(n, per_row, budget):
    """Rows per block so that ``rows * per_row`` 8-byte values fit in ``budget`` bytes."""
    return int(max(1, min(n, budget // (8 * per_row))))


def xp_sliced_sums_and_forms(X, S, directions, slices, bandwidths, V, *, kernel="rbf",
                             kernel_params=None, max_memory=DEFAULT_MAX_MEMORY):
    """:func:`skstein.discrepancy.sliced_sums_and_forms` for device arrays ``X``, ``S``.

    ``directions``, ``slices`` (m, d), ``bandwidths`` (L, m) and the weights ``V``
    (n_draws, n) are NumPy arrays; they cross to the device of ``X`` once. Returns
    ``(sums, forms)``: a :class:`~skstein.discrepancy.SlicedSteinSums` per row of
    ``bandwidths`` (NumPy arrays) and the ``(n_draws, L)`` forms, as on the CPU. The
    kernels are formed by blocks of rows (all columns) and of pairs, within the memory
    budget; the matrix itself is never held whole.
    """
    xp, device = _namespace(X)
    X = xp.astype(X, xp.float64)
    S = xp.astype(S, xp.float64)
    n = X.shape[0]
    G = _on(xp, device, directions)
    R = _on(xp, device, slices)
    U = X @ G.T
    A = S @ R.T
    c_host = np.einsum("kd,kd->k", slices, directions)
    c = _on(xp, device, c_host)
    A_host = _host(A)
    W = _on(xp, device, V)
    m = G.shape[0]
    budget = max(int(max_memory), DEVICE_MAX_MEMORY) // SLICED_BLOCK_ARRAYS
    width = int(max(1, min(m, budget // (8 * n))))   # pairs per block
    rows = _blocks(n, n * width, budget)
    sums, forms = [], np.empty((V.shape[0], len(bandwidths)))
    for li, h in enumerate(np.asarray(bandwidths, dtype=np.float64)):
        code, p0_host, p1 = _sliced_kernel_params(kernel, h, kernel_params)
        p0 = _on(xp, device, p0_host)
        pair_sums = xp.zeros((m,), dtype=xp.float64, device=device)
        rowsums = []
        form = xp.zeros((V.shape[0],), dtype=xp.float64, device=device)
        for a in range(0, n, rows):
            b = min(n, a + rows)
            off = _off_diagonal(xp, a, b, n, device)
            H = xp.zeros((b - a, n), dtype=xp.float64, device=device)
            parts = []
            for k0 in range(0, m, width):
                k1 = min(m, k0 + width)
                hk = _pair_kernels(xp, code, p1, U[a:b, k0:k1], U[:, k0:k1], A[a:b, k0:k1],
                                   A[:, k0:k1], c[k0:k1], p0[k0:k1]) * off[:, :, None]
                parts.append(xp.sum(hk, axis=(0, 1)))
                H = H + xp.sum(hk, axis=2)
            pair_sums = pair_sums + xp.concat(parts)
            rowsums.append(_host(xp.sum(H, axis=1)))
            form = form + _row_forms(xp, H, W, a, b)
        pair_sums = _host(pair_sums)
        diag_k = _sliced_diag(code, p0_host, p1, A_host, c_host)
        check_stein_finite(pair_sums, diag_k)
        sums.append(SlicedSteinSums(n, float(np.sum(pair_sums)), diag_k.sum(axis=1),
                                    np.concatenate(rowsums), None, pair_sums,
                                    diag_k.sum(axis=0)))
        forms[:, li] = _host(form)
    return sums, forms


def _pair_kernels(xp, code, p1, Ui, Uj, Ai, Aj, c, p0):
    """``h_k(x_i, x_j)`` of the pairs ``k`` of a block, rows ``i`` against columns ``j``:
    ``(rows, columns, pairs)``."""
    d = Ui[:, None, :] - Uj[None, :, :]
    t = d * d
    ai = Ai[:, None, :]
    aj = Aj[None, :, :]
    if code == _SLICED_RBF:
        tq = t * p0
        cross = c * d * (ai - aj) + c * c * (1.0 - 2.0 * tq)
        return xp.exp(-tq) * (ai * aj + 2.0 * p0 * cross)
    base = 1.0 + t * p0
    kk = base ** p1
    ib = 1.0 / base
    k1 = p1 * p0 * kk * ib
    k2 = (p1 - 1.0) * p0 * k1 * ib
    return kk * ai * aj - 2.0 * c * d * k1 * (ai - aj) - c * c * (2.0 * k1 + 4.0 * t * k2)


def xp_linear_forms(X, S, V, *, max_memory=DEFAULT_MAX_MEMORY):
    r"""The bootstrap forms :math:`v_m^\top H v_m` of the linear Stein kernel of
    :func:`skstein.gof._maxsksd.second_moment_sums` (zero diagonal) for device arrays
    ``X``, ``S`` and the host weights ``V``: :math:`H = (S S^\top) \odot (Y Y^\top) +
    c_0 (a_i + a_j) + c_0^2 D` with :math:`y_i = x_i - \bar x`, :math:`a_i = s_i^\top
    y_i` and :math:`c_0 = 1 - 1/N`, by blocks of rows within the memory budget. Returns
    the ``(n_draws,)`` forms as NumPy."""
    xp, device = _namespace(X)
    X = xp.astype(X, xp.float64)
    S = xp.astype(S, xp.float64)
    n, d = X.shape
    Y = X - xp.mean(X, axis=0)
    a = xp.sum(S * Y, axis=1)
    c0 = 1.0 - 1.0 / n
    W = _on(xp, device, V)
    rows = _blocks(n, n * LINEAR_BLOCK_ARRAYS, max(int(max_memory), DEVICE_MAX_MEMORY))
    form = xp.zeros((V.shape[0],), dtype=xp.float64, device=device)
    for lo in range(0, n, rows):
        hi = min(n, lo + rows)
        H = (S[lo:hi, :] @ S.T) * (Y[lo:hi, :] @ Y.T)
        H = H + (c0 * (a[lo:hi, None] + a[None, :]) + c0 * c0 * d)
        form = form + _row_forms(xp, H * _off_diagonal(xp, lo, hi, n, device), W, lo, hi)
    return _host(form)
