r"""SVGD and sliced SVGD directions as plain array algebra in any Array API namespace.

The device engine of :mod:`skstein.svgd` (DESIGN section 3.13): the same numbers as
the numba passes of :mod:`skstein.flows`, written with the operations every Array API
library offers, so particles given as CuPy or PyTorch arrays are moved on their device.

SVGD, with the centred particles :math:`\bar X`, :math:`t_{ij} = \|\bar x_i\|^2 +
\|\bar x_j\|^2 - 2\bar x_i^\top \bar x_j` (clipped at 0, zero diagonal), the RBF kernel
:math:`K = e^{-t/(2h^2)}` and the IMQ kernel :math:`K = (1 + t/h^2)^\beta`:

.. math::

    N\phi = K S + 2\left(K'\bar X - \mathrm{diag}(K'\mathbf 1)\bar X\right)
    \;\overset{\text{RBF}}{=}\; K S + \frac{1}{h^2}\left(\mathrm{diag}(K\mathbf 1)\bar X
    - K\bar X\right).

The median bandwidth is the square root of the median of :math:`t_{ij}`, ``i < j``
(mean of the two middle values for an even count, median of the positive ones when
that is zero), by a sort on the device, times the rule's factor. Sliced SVGD is ``D``
one-dimensional kernels over the projections :math:`u = X G^\top`, in blocks of slices
whose ``N x N x b`` differences stay within :data:`SLICE_BLOCK_BYTES` (on a device,
:data:`SLICE_DEVICE_BYTES`).
"""

import numpy as np

from ._xp import is_device_array, to_host

__all__ = ["SVGDTermsXp", "sliced_svgd_terms_xp", "median_squared_distance_xp",
           "SLICE_BLOCK_BYTES", "SLICE_DEVICE_BYTES"]

#: Memory budget of one block of slices of the sliced field (``N x N x b`` float64).
SLICE_BLOCK_BYTES = 64 * 2**20
#: The same on a device (CuPy, PyTorch, ...): a GPU runs a few large passes far faster
#: than many small ones (at N = 1000 the host's budget cuts D = 100 slices into 50 blocks).
SLICE_DEVICE_BYTES = 2 * 2**30
RBF, IMQ = 0, 1


def _device(a):
    import array_api_compat

    return array_api_compat.device(a)


def median_squared_distance_xp(xp, T, one=None):
    """Median of ``T[i, j]``, ``i < j`` (of the positive ones if that is 0; 1 if none).

    ``T`` is an ``(N, N)`` array of squared distances with a zero diagonal; the value
    is a 0-d array of its namespace, computed without a transfer to the host. Sorted,
    its ``N^2`` entries are the ``N`` diagonal zeros and then each pair's value twice,
    so the pairs' two middle values are the entries ``N + P - 1`` and ``N + P`` (``P``
    pairs), and those of the positive ones sit half-way through the entries after the
    last zero (found by a binary search). ``one``: the 0-d array 1 of ``T``'s dtype and
    device, where the caller keeps one.
    """
    n = T.shape[0]
    if one is None:
        one = xp.asarray(1.0, dtype=T.dtype, device=_device(T))
    if n < 2:
        return one
    d = xp.sort(xp.reshape(T, (n * n,)))
    p = n * (n - 1) // 2
    med = xp.sum(d[n + p - 1:n + p + 1]) * 0.5
    nz = xp.searchsorted(d, xp.reshape(0.0 * one, (1,)), side="right")  # entries <= 0
    count = n * n - nz
    idx = xp.clip(xp.concat([nz + (count - 1) // 2, nz + count // 2]), 0, n * n - 1)
    pos = xp.where(count[0] > 0, xp.sum(xp.take(d, idx)) * 0.5, one)
    return xp.where(med > 0.0, med, pos)


class SVGDTermsXp:
    """The SVGD sums for one run of particles of a fixed shape, dtype and device.

    Made once per run: the constants every iteration needs (the diagonal's mask, 0,
    1 and the bandwidth floor as arrays of the device) are made here, not at each
    iteration, where each would be one more call into the library (on a GPU, a
    launch or a transfer).

    ``terms(X, S)`` gives ``(drive, repulse, h)``: the two sums of N times the SVGD
    direction, and h. ``h <= 0`` takes ``scale`` times the median distance (see the
    module docstring), at least ``min_bandwidth``; h is then a 0-d array of the
    namespace.
    """

    def __init__(self, xp, X, code, beta, scale, h, min_bandwidth):
        n = X.shape[0]
        dev = _device(X)
        self.xp, self.code = xp, code
        # Python floats mix with any namespace's arrays
        self.beta, self.scale, self.h = float(beta), float(scale), float(h)
        idx = xp.arange(n, device=dev)
        self.diagonal = idx[:, None] == idx[None, :]
        self.zero = xp.asarray(0.0, dtype=X.dtype, device=dev)
        self.one = xp.asarray(1.0, dtype=X.dtype, device=dev)
        self.floor = xp.asarray(min_bandwidth, dtype=X.dtype, device=dev)

    def terms(self, X, S):
        xp, beta = self.xp, self.beta
        Xc = X - xp.mean(X, axis=0)
        nx = xp.sum(Xc * Xc, axis=1)
        T = (nx[:, None] + nx[None, :]) - 2.0 * (Xc @ Xc.T)
        T = xp.where(self.diagonal, self.zero, xp.maximum(T, self.zero))
        h = self.h
        if h <= 0.0:
            # a 0-d array: the bandwidth stays on the device (no wait for it per iteration)
            h = xp.maximum(xp.sqrt(median_squared_distance_xp(xp, T, self.one)) * self.scale,
                           self.floor)
        inv = (1.0 / h) / h
        if self.code == RBF:
            p0 = 0.5 * inv
            K = xp.exp(-T * p0)
            rows = xp.sum(K, axis=1)
            repulse = (2.0 * p0) * (rows[:, None] * Xc - K @ Xc)
        else:
            base = 1.0 + T * inv
            K = 1.0 / xp.sqrt(base) if beta == -0.5 else base ** beta
            K1 = (beta * inv) * K / base
            repulse = 2.0 * (K1 @ Xc - xp.sum(K1, axis=1)[:, None] * Xc)
        return K @ S, repulse, h


def sliced_svgd_terms_xp(xp, U, S, gdiag, p0, code, beta, budget=None):
    """Driving and repulsive sums of sliced SVGD (not divided by N) on projections ``U``.

    ``drive[i, d] = sum_j kappa_d(t) S[j, d]``, ``repulse[i, d] = sum_j 2 G_dd
    (u_jd - u_id) kappa_d'(t)``, ``t = (u_jd - u_id)^2``; ``p0`` holds the per-slice
    profile scales (RBF ``1/(2h^2)``, IMQ ``1/h^2``) and ``gdiag`` the ``G_dd``, both
    arrays of the namespace. The slices run in blocks of ``budget`` bytes (default
    :data:`SLICE_BLOCK_BYTES`, or :data:`SLICE_DEVICE_BYTES` for a device's arrays).

    A block of ``b`` slices forms its kernels as one ``(b, N, N)`` array ``K``. For the
    RBF kernel (``kappa' = -q K``) the sums are then one batched product with it:
    ``drive = K s`` and, on projections centred per slice (their differences are the
    same), ``sum_j (u_j - u_i) kappa'_ij = -q ((K u)_i - u_i (K 1)_i)``: a third of the
    elementwise passes over the block of the sums of ``K * S`` and ``delta * kappa'``
    (with PyTorch on 2 CPU cores, N = 1000, 100 slices: 1.3x faster in float32, 1.9x
    in float64). The IMQ kernel's sums stay elementwise: its second matrix ``kappa'``
    made the batched form slower there in float32 (0.85x).
    """
    n, m = U.shape
    beta = float(beta)
    if budget is None:
        budget = SLICE_DEVICE_BYTES if is_device_array(U) else SLICE_BLOCK_BYTES
    b = max(1, min(m, budget // max(1, 8 * n * n * 3)))
    if code != RBF:
        return _sliced_terms_elementwise(xp, U, S, gdiag, p0, beta, b)
    UT = xp.permute_dims(U - xp.mean(U, axis=0), (1, 0))  # (m, n), centred per slice
    ST = xp.permute_dims(S, (1, 0))
    drive, repulse = [], []
    for k0 in range(0, m, b):
        k1 = min(m, k0 + b)
        u = UT[k0:k1, :]
        q = p0[k0:k1][:, None, None]
        delta = u[:, None, :] - u[:, :, None]  # [k, i, j] = u_jk - u_ik
        t = delta * delta
        del delta
        K = xp.exp(t * (-q))
        del t
        out = K @ xp.stack([ST[k0:k1, :], u, xp.ones_like(u)], axis=2)  # (b, n, 3)
        drive.append(out[..., 0])
        repulse.append(((-2.0) * gdiag[k0:k1] * p0[k0:k1])[:, None]
                       * (out[..., 1] - u * out[..., 2]))
    return (xp.permute_dims(xp.concat(drive, axis=0), (1, 0)),
            xp.permute_dims(xp.concat(repulse, axis=0), (1, 0)))


def _sliced_terms_elementwise(xp, U, S, gdiag, p0, beta, b):
    """:func:`sliced_svgd_terms_xp` of the IMQ kernel: the sums elementwise, ``(N, N,
    b)`` blocks."""
    m = U.shape[1]
    drive, repulse = [], []
    for k0 in range(0, m, b):
        k1 = min(m, k0 + b)
        u = U[:, k0:k1]
        delta = u[None, :, :] - u[:, None, :]  # [i, j, k] = u_jk - u_ik
        q = p0[k0:k1]
        base = 1.0 + delta * delta * q
        kk = 1.0 / xp.sqrt(base) if beta == -0.5 else base ** beta
        k1v = beta * q * kk / base
        drive.append(xp.sum(kk * S[None, :, k0:k1], axis=1))
        repulse.append(xp.sum((2.0 * gdiag[k0:k1]) * delta * k1v, axis=1))
    return xp.concat(drive, axis=1), xp.concat(repulse, axis=1)


def host(a):
    """A NumPy copy (for the host-side bookkeeping of the samplers)."""
    return to_host(a)
