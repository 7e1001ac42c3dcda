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
:data:`SLICE_DEVICE_BYTES`). On an accelerator, sliced SVGD's direction ascent and
history take their pair sums from :func:`sliced_pass_xp` and their bandwidths from
:func:`projection_medians_xp`.
"""

import functools

import numpy as np

from ._xp import is_device_array, to_host

__all__ = ["SVGDTermsXp", "sliced_svgd_terms_xp", "median_squared_distance_xp",
           "sliced_pass_xp", "projection_medians_xp", "SLICE_BLOCK_BYTES",
           "SLICE_DEVICE_BYTES"]

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
    is a 0-d array of its namespace, computed without a transfer to the host (see
    :class:`_PairMedian`). ``one``: the 0-d array 1 of ``T``'s dtype and device, where
    the caller keeps one.
    """
    n = T.shape[0]
    if one is None:
        one = xp.asarray(1.0, dtype=T.dtype, device=_device(T))
    if n < 2:
        return one
    return _PairMedian(xp, T, one).twice(T) * 0.5


class _PairMedian:
    """Twice the median of the pairs of ``(N, N)`` squared distances, as a 0-d array.

    Sorted, the ``N^2`` entries are the ``N`` diagonal zeros and then each pair's value
    twice, so the pairs' two middle values are the entries ``N + P - 1`` and ``N + P``
    (``P`` pairs); those of the positive ones sit half-way through the entries after
    the last zero, found by one binary search: entries ``(z + N^2 - 1) // 2`` and
    ``(z + N^2) // 2`` for ``z`` entries at most 0. Their sum is returned (2 when all
    are zero), which saves a halving: every operation on a device is one launch. The
    index constants are made once, for particles of one shape and device.
    """

    def __init__(self, xp, T, one):
        n = T.shape[0]
        dev = _device(T)
        self.xp, self.n, self.p = xp, n, n * (n - 1) // 2
        self.zero = xp.reshape(0.0 * one, (1,))
        self.two = 2.0 * one
        self.ends = xp.asarray([n * n - 1, n * n], device=dev)

    def twice(self, T):
        xp, n, p = self.xp, self.n, self.p
        d = xp.sort(xp.reshape(T, (n * n,)))
        mid = xp.sum(d[n + p - 1:n + p + 1])
        z = xp.searchsorted(d, self.zero, side="right")
        pos = xp.sum(xp.take(d, xp.clip((z + self.ends) // 2, 0, n * n - 1)))
        return xp.where(mid > 0.0, mid, xp.where(pos > 0.0, pos, self.two))


class SVGDTermsXp:
    """The SVGD sums for one run of particles of a fixed shape, dtype and device.

    Made once per run: the constants every iteration needs (the diagonal's mask, 0,
    the median's indices and the squared bandwidth floor as arrays of the device) are
    made here, not at each iteration, where each would be one more call into the
    library (on a GPU, a launch or a transfer). Each iteration makes about 40 calls.

    ``terms(X, S)`` gives ``(drive, repulse)``: the two sums of N times the SVGD
    direction. ``h <= 0`` takes ``scale`` times the median distance (see the module
    docstring), at least ``min_bandwidth``: its square stays a 0-d array of the
    namespace (no wait for the device).
    """

    def __init__(self, xp, X, code, beta, scale, h, min_bandwidth):
        n = X.shape[0]
        dev = _device(X)
        self.xp, self.code = xp, code
        # Python floats mix with any namespace's arrays
        self.beta, self.scale2, self.h = float(beta), float(scale) ** 2, float(h)
        idx = xp.arange(n, device=dev)
        self.diagonal = idx[:, None] == idx[None, :]
        self.zero = xp.asarray(0.0, dtype=X.dtype, device=dev)
        one = xp.asarray(1.0, dtype=X.dtype, device=dev)
        self.floor2 = xp.asarray(float(min_bandwidth) ** 2, dtype=X.dtype, device=dev)
        self.median = _PairMedian(xp, X, one) if n > 1 else None
        self.one = one

    def terms(self, X, S):
        xp, beta = self.xp, self.beta
        Xc = X - xp.mean(X, axis=0)
        nx = xp.sum(Xc * Xc, axis=1)
        T = (nx[:, None] + nx[None, :]) - 2.0 * (Xc @ Xc.T)
        T = xp.where(self.diagonal, self.zero, xp.maximum(T, self.zero))
        if self.h > 0.0:
            h2 = self.h * self.h
        elif self.median is None:
            h2 = xp.maximum(self.one * self.scale2, self.floor2)
        else:
            # h^2 = max(scale^2 median, floor^2), a 0-d array on the device
            h2 = xp.maximum(self.median.twice(T) * (0.5 * self.scale2), self.floor2)
        if self.code == RBF:
            q = -0.5 / h2
            K = xp.exp(T * q)
            rows = xp.sum(K, axis=1)
            repulse = (rows[:, None] * Xc - K @ Xc) * (-2.0 * q)
        else:
            inv = 1.0 / h2
            base = 1.0 + T * inv
            K = 1.0 / xp.sqrt(base) if beta == -0.5 else base ** beta
            K1 = (beta * inv) * K / base
            repulse = 2.0 * (K1 @ Xc - xp.sum(K1, axis=1)[:, None] * Xc)
        return K @ S, repulse


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


def _slice_block(U, n, copies, budget):
    """Slices per block whose ``copies`` arrays ``(b, n, n)`` fit in ``budget`` bytes."""
    if budget is None:
        budget = SLICE_DEVICE_BYTES if is_device_array(U) else SLICE_BLOCK_BYTES
    return max(1, min(U.shape[1], budget // max(1, 8 * n * n * copies)))


def sliced_pass_xp(xp, U, A, c, p0, with_rho=True, budget=None):
    r"""The RBF sliced pass of :func:`skstein._gradients._sliced_pass` on the device.

    ``(hsum, rho, psisum)``: per slice ``k`` the sums over the ordered pairs ``i != j``
    of :math:`h_k(i, j)` and :math:`\psi_k = \partial h_k / \partial c_k`, shape
    ``(m,)``, and :math:`\rho_{ik} = \sum_j \partial h_k(i, j) / \partial\delta`,
    shape ``(n, m)`` (None without ``with_rho``), for projections ``U = X G^T``,
    ``A = S R^T``, ``c_k = r_k^\top g_k`` and ``p0 = 1 / (2 h_k^2)`` (arrays of the
    namespace).

    With :math:`E_{ij} = e^{-q\delta^2}`, :math:`\delta = u_i - u_j`, every pair term is
    :math:`E` times a polynomial in :math:`u_i, u_j, a_i, a_j` (see
    :mod:`skstein._numba.learning`), so the row sums are polynomials in :math:`u_i,
    a_i` and the seven row moments :math:`M = E\,[1, u, u^2, u^3, a, au, au^2]`: one
    batched product per block of slices, after three elementwise passes that form
    :math:`E` (the pair-by-pair terms would take about forty). The projections are
    centred per slice (the differences are the same) so that the moments stay of the
    size of the differences; the diagonal terms (:math:`h_k(i, i) = a_i^2 + 2qc^2`,
    :math:`\psi_k(i, i) = 4qc`, :math:`\phi = 0`) are taken off the full sums.
    """
    n, m = U.shape
    b = _slice_block(U, n, 3, budget)
    UT = xp.permute_dims(U - xp.mean(U, axis=0), (1, 0))  # (m, n), centred per slice
    AT = xp.permute_dims(A, (1, 0))
    hs, ps, rs = [], [], []
    for k0 in range(0, m, b):
        k1 = min(m, k0 + b)
        u, a = UT[k0:k1, :], AT[k0:k1, :]
        q, ck = p0[k0:k1][:, None], c[k0:k1][:, None]
        delta = u[:, :, None] - u[:, None, :]
        E = delta * delta
        del delta
        E = xp.exp(E * (-q[:, :, None]))
        u2 = u * u
        au = a * u
        M = E @ xp.stack([xp.ones_like(u), u, u2, u2 * u, a, au, au * u], axis=2)
        del E
        m0, m1, m2, m3, ma, mau, mau2 = (M[..., i] for i in range(7))
        s1 = u * m0 - m1                                  # sum_j E delta
        s2 = (u * m0 - 2.0 * m1) * u + m2                 # sum_j E delta^2
        t1 = u * ma - mau                                 # sum_j E delta a_j
        w = m0 - (2.0 * q) * s2                           # sum_j E (1 - 2 q delta^2)
        cross = a * s1 - t1                               # sum_j E delta (a_i - a_j)
        hrow = a * ma + (2.0 * q) * (ck * cross + (ck * ck) * w)
        psirow = (2.0 * q) * (cross + (2.0 * ck) * w)
        hs.append(xp.sum(hrow, axis=1) - (xp.sum(a * a, axis=1) + (2.0 * n) * q[:, 0]
                                          * ck[:, 0] * ck[:, 0]))
        ps.append(xp.sum(psirow, axis=1) - (4.0 * n) * q[:, 0] * ck[:, 0])
        if with_rho:
            s3 = ((u * m0 - 3.0 * m1) * u + 3.0 * m2) * u - m3      # sum_j E delta^3
            t2 = (u * ma - 2.0 * mau) * u + mau2                   # sum_j E delta^2 a_j
            rs.append(q * ((2.0 * ck) * (a * m0 - ma) - (4.0 * ck * q) * (a * s2 - t2)
                           - 2.0 * a * t1 - (12.0 * ck * ck * q) * s1
                           + (8.0 * ck * ck * q * q) * s3))
    rho = xp.permute_dims(xp.concat(rs, axis=0), (1, 0)) if with_rho else None
    return xp.concat(hs, axis=0), rho, xp.concat(ps, axis=0)


@functools.lru_cache(maxsize=4)
def _upper_pairs(n):
    """Flat indices ``i n + j`` of the pairs ``i < j`` of an ``n x n`` array (int64; kept,
    so not to be written to)."""
    iu, ju = np.triu_indices(n, 1)
    return iu * n + ju


def projection_medians_xp(xp, U, max_points=1000, budget=None):
    """:func:`skstein.flows.projection_medians` of projections on the device: per column,
    the median of ``|u_i - u_j|``, ``i < j``, over the first ``max_points`` rows (of the
    positive ones when that is zero; 1 where all are zero; at least the kernels'
    smallest bandwidth), as a NumPy float64 array.

    A block of columns sorts the absolute differences of its pairs, ``(b, P)`` for
    ``P = n (n - 1) / 2`` (taken from the upper triangle of the ``(b, n, n)``
    differences): the two middle values of each row, or those of its positive ones
    after the zeros. Exact order statistics, as the host's counting bisection.
    """
    from .kernels import MIN_BANDWIDTH

    V = U[:min(max_points, U.shape[0]), :]
    n, m = V.shape
    if n < 2:
        return np.ones(m)
    if not bool(xp.all(xp.isfinite(V))):
        raise ValueError("the projections of the particles or sample are not finite: "
                         "their median distances are undefined.")
    dev = _device(V)
    b = _slice_block(V, n, 3, budget)
    p = n * (n - 1) // 2
    upper = xp.asarray(_upper_pairs(n), device=dev)  # the pairs i < j of a row-major n x n
    VT = xp.permute_dims(V, (1, 0))
    out = []
    for k0 in range(0, m, b):
        k1 = min(m, k0 + b)
        u = VT[k0:k1, :]
        D = xp.reshape(xp.abs(u[:, :, None] - u[:, None, :]), (k1 - k0, n * n))
        D = xp.sort(xp.take(D, upper, axis=1), axis=1)
        med = (D[:, (p - 1) // 2] + D[:, p // 2]) * 0.5
        nz = xp.sum(xp.astype(D <= 0.0, xp.int64), axis=1)     # pairs at distance 0
        count = p - nz
        offset = xp.arange(k1 - k0, dtype=xp.int64, device=dev) * p
        flat = xp.reshape(D, (-1,))
        lo = xp.take(flat, offset + xp.clip(nz + (count - 1) // 2, 0, p - 1))
        hi = xp.take(flat, offset + xp.clip(nz + count // 2, 0, p - 1))
        pos = xp.where(count > 0, (lo + hi) * 0.5, xp.zeros_like(med))
        out.append(xp.where(med > 0.0, med, pos))
    med = np.asarray(to_host(xp.concat(out, axis=0)), dtype=np.float64)
    med[med <= 0] = 1.0
    return np.maximum(med, MIN_BANDWIDTH)


def host(a):
    """A NumPy copy (for the host-side bookkeeping of the samplers)."""
    return to_host(a)
