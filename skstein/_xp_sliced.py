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

summed over the pairs ``k`` into the ``(N, N)`` matrix :math:`H` (zero diagonal) by
blocks of pairs, within ``max_memory`` bytes (at least
:data:`skstein._xp_stein.DEVICE_MAX_MEMORY`). The bootstrap forms
:math:`v_m^\top H v_m` are one product with the weights (drawn on the host, in
float64 as on the CPU).
"""

import numpy as np

from ._xp_stein import DEVICE_MAX_MEMORY
from .discrepancy import (_SLICED_RBF, DEFAULT_MAX_MEMORY, SlicedSteinSums, _sliced_diag,
                          _sliced_kernel_params, check_stein_finite)

__all__ = ["xp_sliced_sums_and_forms", "xp_linear_forms"]

#: ``(N, N, pairs)`` temporaries of a block of :func:`xp_sliced_sums_and_forms`.
SLICED_BLOCK_ARRAYS = 8


def _namespace(X):
    import array_api_compat

    return array_api_compat.array_namespace(X), array_api_compat.device(X)


def _on(xp, device, A):
    return xp.asarray(np.ascontiguousarray(A, dtype=np.float64), device=device)


def _host(A):
    from ._xp import to_host

    return np.asarray(to_host(A), dtype=np.float64)


def _zero_diagonal(xp, H, device):
    n = H.shape[0]
    return H * (1.0 - xp.eye(n, dtype=H.dtype, device=device))


def _forms(xp, H, W):
    """:math:`v_m^\top H v_m` for the rows of ``W`` (on the device), as NumPy."""
    return _host(xp.sum((W @ H) * W, axis=1))


def xp_sliced_sums_and_forms(X, S, directions, slices, bandwidths, V, *, kernel="rbf",
                             kernel_params=None, max_memory=DEFAULT_MAX_MEMORY):
    """:func:`skstein.discrepancy.sliced_sums_and_forms` for device arrays ``X``, ``S``.

    ``directions``, ``slices`` (m, d), ``bandwidths`` (L, m) and the weights ``V``
    (n_draws, n) are NumPy arrays; they cross to the device of ``X`` once. Returns
    ``(sums, forms)``: a :class:`~skstein.discrepancy.SlicedSteinSums` per row of
    ``bandwidths`` (NumPy arrays) and the ``(n_draws, L)`` forms, as on the CPU.
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
    budget = max(int(max_memory), DEVICE_MAX_MEMORY)
    width = int(max(1, min(m, budget // (SLICED_BLOCK_ARRAYS * 8 * n * n))))
    off = 1.0 - xp.eye(n, dtype=xp.float64, device=device)
    sums, forms = [], np.empty((V.shape[0], len(bandwidths)))
    for li, h in enumerate(np.asarray(bandwidths, dtype=np.float64)):
        code, p0_host, p1 = _sliced_kernel_params(kernel, h, kernel_params)
        p0 = _on(xp, device, p0_host)
        H = xp.zeros((n, n), dtype=xp.float64, device=device)
        pair_sums = []
        for k0 in range(0, m, width):
            k1 = min(m, k0 + width)
            hk = _pair_kernels(xp, code, p1, U[:, k0:k1], A[:, k0:k1], c[k0:k1], p0[k0:k1])
            hk = hk * off[:, :, None]
            pair_sums.append(_host(xp.sum(hk, axis=(0, 1))))
            H = H + xp.sum(hk, axis=2)
        pair_sums = np.concatenate(pair_sums)
        diag_k = _sliced_diag(code, p0_host, p1, A_host, c_host)
        check_stein_finite(pair_sums, diag_k)
        rowsums = _host(xp.sum(H, axis=1))
        sums.append(SlicedSteinSums(n, float(np.sum(pair_sums)), diag_k.sum(axis=1), rowsums,
                                    None, pair_sums, diag_k.sum(axis=0)))
        forms[:, li] = _forms(xp, H, W)
    return sums, forms


def _pair_kernels(xp, code, p1, U, A, c, p0):
    """``h_k(x_i, x_j)`` of the pairs ``k`` of the block, ``(N, N, k)``."""
    d = U[:, None, :] - U[None, :, :]
    t = d * d
    ai = A[:, None, :]
    aj = A[None, :, :]
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


def xp_linear_forms(X, S, V):
    r"""The bootstrap forms :math:`v_m^\top H v_m` of the linear Stein kernel of
    :func:`skstein.gof._maxsksd.second_moment_sums` (zero diagonal) for device arrays
    ``X``, ``S`` and the host weights ``V``: :math:`H = (S S^\top) \odot (Y Y^\top) +
    c_0 (a_i + a_j) + c_0^2 D` with :math:`y_i = x_i - \bar x`, :math:`a_i = s_i^\top
    y_i` and :math:`c_0 = 1 - 1/N`. Returns the ``(n_draws,)`` forms as NumPy."""
    xp, device = _namespace(X)
    X = xp.astype(X, xp.float64)
    S = xp.astype(S, xp.float64)
    n, d = X.shape
    Y = X - xp.mean(X, axis=0)
    a = xp.sum(S * Y, axis=1)
    c0 = 1.0 - 1.0 / n
    H = (S @ S.T) * (Y @ Y.T) + (c0 * (a[:, None] + a[None, :]) + c0 * c0 * d)
    return _forms(xp, _zero_diagonal(xp, H, device), _on(xp, device, V))
