r"""Functional API: kernel Stein discrepancies of a sample to a model.

Arrays in, numbers out. The estimators in :mod:`skstein.gof` validate their
parameters and call these functions; the O(N^2) work runs in :mod:`skstein._numba`.

The KSD of a sample :math:`x_1, \dots, x_N` to a model :math:`p` with score
:math:`s_p = \nabla \log p` is built from the Stein kernel :math:`h_p` (see
:meth:`skstein.kernels.RBF.stein`):

.. math::

    \mathrm{KSD}^2_U = \frac{1}{N(N-1)} \sum_{i \ne j} h_p(x_i, x_j), \qquad
    \mathrm{KSD}^2_V = \frac{1}{N^2} \sum_{i, j} h_p(x_i, x_j).
"""

import math
from contextlib import nullcontext
from dataclasses import dataclass

import numba
import numpy as np

from sklearn.utils.validation import check_array

from ._docstrings import fill_doc
from ._threads import caller_blas, numba_threads, single_blas
from ._xp import host_single_blas, namespace_of, to_host
from ._numba.sliced import IMQ as _SLICED_IMQ
from ._numba.sliced import RBF as _SLICED_RBF
from ._numba.learning import slice_chunks, sliced_grad_upper
from ._numba.sliced import shared_direction_rows, sliced_stein_rows, sliced_stein_upper
from ._bootstrap import (FORM_DTYPE, STACKED_FORM_BLOCK, block_forms, bootstrap_forms,
                         weight_columns)
from ._numba.bootstrap import scaled_single
from ._numba.features import stein_pairs
from ._numba.polynomial import polynomial_upper_rows
from ._numba.stein import (
    kernel_params,
    linear_stein_upper,
    stein_block_inplace,
    stein_pass_blocks,
    stein_upper_multi,
)
from ._validation import (check_bool, check_choice, check_positive_float, check_positive_int,
                          check_samples, evaluate_score, power_of_two_exponent)
from .kernels import (
    KERNELS,
    auto_whitening,
    bandwidth_factor_grid,
    bandwidth_grid,
    check_bandwidth,
    check_min_median,
    flat_directions,
    inverse_square,
    make_kernel,
    median_bandwidth,
    product_nt,
    projection_medians_1d,
    whitening,
)

__all__ = ["ksd", "stein_matrix", "ksd_power_criterion", "resolve_bandwidth", "DEFAULT_MAX_MEMORY",
           "max_sksd", "sliced_stein_sums", "sliced_value_and_grad", "resolve_sliced_bandwidth",
           "stein_sums_and_forms", "sliced_sums_and_forms", "resolve_bandwidths",
           "resolve_sliced_bandwidths", "is_collection", "check_stein_finite",
           "paired_stein_terms", "radial_scale", "polynomial_coordinates", "polynomial_stein_rows",
           "polynomial_stein_pass", "polynomial_stein_sums"]


def check_stein_finite(*values):
    """A ValueError unless every Stein-kernel value (or sum of them) given is finite.

    Values beyond float64 come from the data, the scores or the kernel's scale
    (the Stein kernel multiplies ``||s||^2``, ``s . (x - y) / h^2`` and ``1/h^4``
    terms); a NaN statistic is never returned.
    """
    if not all(np.all(np.isfinite(v)) for v in values):
        raise ValueError(
            "the Stein kernel is not finite on X: the values of X, the scores of the "
            "model or the kernel's scale 1/bandwidth**2 overflow float64; rescale X or "
            "choose another bandwidth.")


def paired_stein_terms(X, Y, SX, SY, kernel):
    r"""The Stein kernel of matched rows, :math:`h_p(x_i, y_i)` for ``i < len(X)``.

    ``X``, ``Y`` and their scores ``SX``, ``SY`` are validated float64 arrays of one
    shape; ``O(nD)`` time, one value per row (the linear-time statistics' terms).
    Non-finite values raise (:func:`check_stein_finite`).
    """
    code, p0, p1 = kernel_params(kernel)
    out = np.empty(X.shape[0])
    with numba_threads(1) if X.shape[0] * X.shape[1] < 2**16 else nullcontext():
        stein_pairs(code, p0, p1, X, Y, SX, SY, out)
    check_stein_finite(out)
    return out


#: Default memory budget (bytes) for the temporaries of one Stein-kernel pass.
DEFAULT_MAX_MEMORY = 64 * 2**20
#: Bytes of the products of one chunk of draws in the bootstrap forms.
FORM_CHUNK = 32 * 2**20


@dataclass
class SteinSums:
    """Sufficient statistics of one Stein-kernel pass over a sample.

    Attributes
    ----------
    n : int
    offdiag_sum : float
        :math:`\\sum_{i \\ne j} h_p(x_i, x_j)`.
    diag : ndarray (n,)
        :math:`h_p(x_i, x_i)`.
    rowsums : ndarray (n,)
        :math:`\\sum_{j \\ne i} h_p(x_i, x_j)`.
    upper : ndarray (n, n) or None
        When asked for: the strictly upper triangle of the Stein matrix (zeros on and
        below the diagonal), C-contiguous (what the bootstrap's triangular products
        use); :func:`stein_sums` with ``mirror`` puts the whole matrix here, with a
        zero diagonal.
    """

    n: int
    offdiag_sum: float
    diag: np.ndarray
    rowsums: np.ndarray
    upper: np.ndarray = None

    def __post_init__(self):
        # a finite row sum has finite terms: an overflow anywhere shows in the sums
        check_stein_finite(self.offdiag_sum, self.rowsums, self.diag)

    def __add__(self, other):
        """The sums of the kernel :math:`h(x, y) + h(x', y')` on the pairs :math:`(x_i,
        x'_i)` of two passes over samples of one size, row ``i`` with row ``i`` (the
        matrix, where both hold it, added too)."""
        if not isinstance(other, SteinSums):
            return NotImplemented
        if other.n != self.n:
            raise ValueError(f"Stein sums of {self.n} and {other.n} samples do not pair.")
        upper = None if self.upper is None or other.upper is None else self.upper + other.upper
        return SteinSums(self.n, self.offdiag_sum + other.offdiag_sum, self.diag + other.diag,
                         self.rowsums + other.rowsums, upper)

    def statistic(self, kind="u"):
        if kind == "u":
            return self.offdiag_sum / (self.n * (self.n - 1))
        return (self.offdiag_sum + float(np.sum(self.diag))) / self.n**2

    def power_criterion(self, eps=1e-10):
        r"""Studentised U-statistic :math:`\mathrm{KSD}^2_U / \sqrt{\sigma^2_{H_1} + \epsilon}`.

        :math:`\sigma^2_{H_1} = 4\,\mathrm{Var}_i[\frac{1}{N-1}\sum_{j \ne i} h_p(x_i, x_j)]`
        is the asymptotic variance of :math:`\sqrt{N}\,\mathrm{KSD}^2_U` under the
        alternative, so the criterion is proportional to the test's asymptotic power
        proxy (Jitkrittum et al. 2017; Liu et al. 2020). The Stein kernel of data in
        units :math:`s` scales as :math:`1/s^2` and its variance as :math:`1/s^4`, so
        :math:`\epsilon` is held relative to the squared scale of the row means
        :math:`c` (their largest magnitude) when :math:`c` lies outside
        :math:`[2^{-10}, 2^{10}]`: times :math:`c^2` rounded to a power of four (data
        at 1000 times unit scale had their criterion set by :math:`\epsilon`, ranking
        the starts of the direction search by their raw statistic).
        """
        r = self.rowsums / (self.n - 1)
        k = power_of_two_exponent(np.max(np.abs(r)) if r.size else 0.0, 10)
        # in units of 2**k near the largest row mean (exact scalings, so the ratio is
        # the same): the variance neither overflows (data far from the model's scale)
        # nor underflows with epsilon (kernel values that vanish but for a few)
        sigma2 = 4.0 * float(np.var(np.ldexp(r, -k)))
        return float(np.ldexp(self.statistic("u"), -k)) / np.sqrt(sigma2 + eps)


def _diagonal(kernel, S):
    """h_p(x_i, x_i) = kappa(0) ||s_i||^2 - 2 D kappa'(0)."""
    k0, k1, _ = kernel.profile(0.0)
    return float(k0) * np.einsum("ij,ij->i", S, S) - 2.0 * S.shape[1] * float(k1)


def _block_rows(n_rows, n_cols, max_memory, n_arrays=3):
    return int(max(1, min(n_rows, max_memory // max(1, n_arrays * 8 * n_cols))))


def upper_block_sums(n, diag, block, max_memory, n_arrays=3):
    """:class:`SteinSums` (without the matrix) of a pass over row blocks of the upper triangle.

    ``block(a, b)`` returns ``(H, rowsum)``: rows ``a:b`` of the strict upper
    triangle of the Stein matrix from column ``a`` on (shape ``(b - a, n - a)``) and
    their row sums; the column sums of ``H`` add the lower triangle's share of the
    row sums. Blocks hold ``n_arrays`` such temporaries within ``max_memory`` bytes.
    """
    rowsums = np.zeros(n)
    total = 0.0
    rows = _block_rows(n, n, max_memory, n_arrays)
    for a in range(0, n, rows):
        b = min(n, a + rows)
        H, rowsum = block(a, b)
        rowsums[a:b] += rowsum
        rowsums[a:] += H.sum(axis=0)
        total += 2.0 * float(np.sum(rowsum))
    return SteinSums(n, total, diag, rowsums, None)


def stein_sums(X, S, kernel, *, return_matrix=False, max_memory=DEFAULT_MAX_MEMORY,
               mirror=False):
    """One Stein-kernel pass over validated arrays ``X`` and scores ``S``.

    The pass runs over blocks of rows of the upper triangle on numba's threads, Gram
    products included (:func:`_pooled_pass`), or, beyond its memory, with BLAS forming
    the Gram blocks; temporaries are bounded by ``max_memory`` bytes. With
    ``return_matrix`` the pooled pass also writes the strict upper triangle of the
    Stein matrix (``SteinSums.upper``; ``N^2`` floats, whatever ``max_memory``), or
    with ``mirror`` the whole matrix with a zero diagonal; the sums are the same bits
    as without it.
    """
    # the compiled passes call double-precision BLAS: other dtypes (float32 particles
    # copied from a device) are cast here
    X, S = np.asarray(X, dtype=np.float64), np.asarray(S, dtype=np.float64)
    n, d = X.shape
    Xc = X - X.mean(axis=0)  # h_p is translation invariant; centring keeps the Gram trick accurate
    nx = np.einsum("ij,ij->i", Xc, Xc)
    nsx = np.einsum("ij,ij->i", S, Xc)
    code, p0, p1 = kernel_params(kernel)
    diag = _diagonal(kernel, S)

    # the matrix is written by the pass's blocks, each from its Gram chunks in its
    # thread's cache: one N x N array, not three Gram matrices and then the kernel's
    # pass over them (memory-bound, it had gained 1.3x from a second core)
    H = np.empty((n, n)) if return_matrix else None
    pooled = _pooled_pass(Xc, S, nx, nsx, code, np.array([p0]), p1, d, np.ones(1), None,
                          max_memory, out=H, mirror=mirror)
    if pooled is not None:
        rowsums, totals, _ = pooled
        return SteinSums(n, float(totals[0]), diag, rowsums[0], H)

    def block(a, b):
        Xa, Sa = Xc[a:b], S[a:b]
        Xt, St = Xc[a:], S[a:]
        with caller_blas():
            G = Xa @ Xt.T
            SS = Sa @ St.T
            C = Xa @ St.T
            C += Sa @ Xt.T
        rowsum = np.empty(b - a)
        stein_block_inplace(code, p0, p1, d, G, SS, C, nx, nsx, a, a, True, False, rowsum)
        return G, rowsum

    return upper_block_sums(n, diag, block, max_memory)


def stein_row_blocks(X, S, kernel, *, max_memory=DEFAULT_MAX_MEMORY):
    """Yield ``(a, b, H[a:b])``: full rows of the Stein matrix (zero diagonal) by blocks.

    For bootstraps whose Stein matrix does not fit in ``max_memory``.
    """
    n, d = X.shape
    Xc = X - X.mean(axis=0)
    nx = np.einsum("ij,ij->i", Xc, Xc)
    nsx = np.einsum("ij,ij->i", S, Xc)
    code, p0, p1 = kernel_params(kernel)
    rows = _block_rows(n, n, max_memory)
    for a in range(0, n, rows):
        b = min(n, a + rows)
        with caller_blas():
            G = Xc[a:b] @ Xc.T
            SS = S[a:b] @ S.T
            C = Xc[a:b] @ S.T
            C += S[a:b] @ Xc.T
        rowsum = np.empty(b - a)
        stein_block_inplace(code, p0, p1, d, G, SS, C, nx, nsx, a, 0, False, False, rowsum)
        yield a, b, G


def stein_sums_and_forms(X, S, kernels, V, *, max_memory=DEFAULT_MAX_MEMORY, weights=None):
    r"""Sums of several Stein kernels and their bootstrap forms, Gram blocks shared.

    For each kernel :math:`l` (e.g. one base kernel at several bandwidths) returns the
    :class:`SteinSums` (without the matrix) and the off-diagonal quadratic forms
    :math:`\sum_{i \ne j} v_{mi} v_{mj} h_l(x_i, x_j)` for the rows :math:`v_m` of the
    bootstrap weights ``V`` (an ``(n_draws, n)`` array or
    :class:`~skstein._bootstrap.PackedSigns`). The pass runs over blocks of rows ``a:b``
    of the upper triangle: the Gram blocks :math:`X_{a:b} X_{a:}^\top`, :math:`S_{a:b} S_{a:}^\top`,
    :math:`X_{a:b} S_{a:}^\top + S_{a:b} X_{a:}^\top` are formed once and shared by
    all kernels; each kernel costs one elementwise pass into a reused buffer. The
    kernels' blocks, stacked, then multiply the weights of columns ``a:`` in one BLAS
    product, and the dot with the weights of rows ``a:b`` completes the forms, both
    in the precision :data:`skstein._bootstrap.FORM_DTYPE` (single, on each kernel's
    blocks scaled by its largest diagonal value; the forms are accumulated over blocks
    in double, and the sums are in double). No ``n x n`` array is formed: the
    temporaries are four ``block x n`` arrays within ``max_memory``, a copy of the
    weights and the products of a chunk of draws.
    With ``V=None`` only the sums are computed. With ``weights`` (an ``(n,)`` array
    :math:`w`), every kernel is the tilted one, :math:`w_i w_j h_l(x_i, x_j)` (its
    diagonal :math:`w_i^2 h_l(x_i, x_i)`), ``S`` then being the tilted scores
    (:mod:`skstein.gof._tilt`).

    The blocks run on numba's threads, each forming its own Gram and weight products
    with one-thread BLAS calls (:func:`_pooled_pass`), while the column sums fit in
    ``4 * max_memory`` bytes; beyond, BLAS's threads form the products between
    numba's passes.

    Returns
    -------
    sums : list of SteinSums
    forms : ndarray of shape (n_draws, n_kernels), or None when ``V`` is None
    """
    X, S = np.asarray(X, dtype=np.float64), np.asarray(S, dtype=np.float64)
    n, d = X.shape
    Xc = X - X.mean(axis=0)
    nx = np.einsum("ij,ij->i", Xc, Xc)
    nsx = np.einsum("ij,ij->i", S, Xc)
    params = [kernel_params(k) for k in kernels]
    if len({(c, p1) for c, _, p1 in params}) != 1:
        raise ValueError("the kernels of a collection must share the base kernel.")
    code, _, p1 = params[0]
    p0s = np.array([p0 for _, p0, _ in params])
    L = len(kernels)
    if weights is not None:
        weights = np.ascontiguousarray(weights, dtype=np.float64)
    diags = [_diagonal(k, S) if weights is None else _diagonal(k, S) * (weights * weights)
             for k in kernels]
    forms = None if V is None else np.zeros((V.shape[0], L))
    # the weights with one column per draw, for products H_block @ VT[a:]
    VT = None if V is None else weight_columns(V)
    # each kernel's blocks scaled by 1 / max_i h_l(x_i, x_i) >= 1 / max |h_l| before the
    # single-precision products (see scaled_single); the forms are scaled back
    dmax = np.array([d.max() for d in diags])
    scale = np.ones(L)
    usable = np.isfinite(dmax) & (dmax > 0)
    scale[usable] = 1.0 / dmax[usable]
    pooled = _pooled_pass(Xc, S, nx, nsx, code, p0s, p1, d, scale, VT, max_memory,
                          tilt_weights=weights)
    if pooled is not None:
        rowsums, totals, pooled_forms = pooled
        sums = [SteinSums(n, float(totals[li]), diags[li], rowsums[li], None)
                for li in range(L)]
        return sums, pooled_forms
    rowsums = np.zeros((L, n))
    totals = np.zeros(L)
    # G, SS, C and the L kernel blocks in double, and their single-precision copies
    rows = min(STACKED_FORM_BLOCK,
               _block_rows(n, n, max_memory,
                           n_arrays=3 + L + (0 if V is None else (L + 1) // 2)))
    for a in range(0, n, rows):
        b = min(n, a + rows)
        Xa, Sa, Xt, St = Xc[a:b], S[a:b], Xc[a:], S[a:]
        with caller_blas():  # beyond the pooled pass: BLAS's threads form the products
            G = Xa @ Xt.T
            SS = Sa @ St.T
            C = Xa @ St.T
            C += Sa @ Xt.T
        H = np.empty((L,) + G.shape)
        rowsum = np.empty((L, b - a))
        stein_upper_multi(code, p0s, p1, d, G, SS, C, nx, nsx, a, a, H, rowsum,
                          *_tilt_args(weights))
        rowsums[:, a:b] += rowsum
        rowsums[:, a:] += H.sum(axis=1)
        totals += 2.0 * rowsum.sum(axis=1)
        if V is not None:
            # one product for all kernels: their blocks stacked row-wise (one large
            # product runs faster than L) times the weights of columns a:, in chunks
            # of draws that keep the product within max_memory
            M = V.shape[0]
            Hf = scaled_single(H, scale, np.empty(H.shape, dtype=FORM_DTYPE))
            Hf = Hf.reshape(L * (b - a), n - a)
            width = max(1, min(M, min(max_memory, FORM_CHUNK) // (4 * L * (b - a))))
            for c in range(0, M, width):
                e = min(M, c + width)
                with caller_blas():
                    P = (Hf @ VT[a:, c:e]).reshape(L, b - a, e - c)
                # the dot with the same draws' weights on rows a:b (single precision
                # over at most STACKED_FORM_BLOCK rows, accumulated in double across
                # blocks)
                forms[c:e] += (2.0 / scale) * np.einsum("lim,im->ml", P, VT[a:b, c:e])
    sums = [SteinSums(n, float(totals[li]), diags[li], rowsums[li], None) for li in range(L)]
    return sums, forms


#: Columns per chunk of a block of the pooled pass (:func:`_pooled_pass`): a chunk's
#: Gram blocks and kernels stay in the thread's cache-sized buffers.
POOLED_CHUNK = 1024


def _pooled_block(n):
    """Rows per block of the pooled pass: :data:`STACKED_FORM_BLOCK`, fewer (down to 16)
    below 64 blocks, so that a small sample still gives 32 pairs of blocks to share
    among the threads (at N = 1000, 64 rows made 8). A function of ``N`` alone."""
    return int(max(16, min(STACKED_FORM_BLOCK, -(-n // 64))))


def _tilt_args(weights):
    """``(wt, tilted)`` of the compiled passes for ``weights`` (None: untilted)."""
    return (np.ones(1), False) if weights is None else (weights, True)


def _pooled_pass(Xc, S, nx, nsx, code, p0s, p1, d, scale, VT, max_memory, out=None,
                 mirror=False, tilt_weights=None):
    """``(rowsums, totals, forms)`` of :func:`stein_sums_and_forms` by one numba pass
    whose threads also form the Gram blocks (:func:`skstein._numba.stein.stein_pass_blocks`),
    or None when its column sums (``L N^2 / (2 b)`` doubles for blocks of ``b`` rows,
    :func:`_pooled_block`) would pass ``4 * max_memory`` bytes.

    One thread pool, not two: with BLAS and numba each running a pool, the idle
    threads of one wait beside the other's work, and the pass stopped gaining from
    more cores (``benchmarks/bench_threads.py``). Each block's Gram products are
    single-thread BLAS calls of the thread that owns the block. The blocks, chunks
    and orders of summation depend on ``N`` alone, so the results are the same for
    any number of threads. Memory: per thread, one chunk's Gram blocks and kernels
    and the block's products with the weights.

    With ``out`` (one kernel), the pass also writes the kernel's values into it (see
    ``mirror`` and ``out`` of ``stein_pass_blocks``), whatever ``max_memory``.
    ``tilt_weights``: the tilted kernels' weights (``weights`` of
    :func:`stein_sums_and_forms`), or None.
    """
    n = Xc.shape[0]
    L = p0s.shape[0]
    block = _pooled_block(n)
    starts = np.arange(0, n, block)
    spans = n - starts
    if out is None and 8 * L * int(spans.sum()) > 4 * max_memory:
        return None
    coloff = np.concatenate([[0], np.cumsum(L * spans)[:-1]]).astype(np.int64)
    colpart = np.zeros(int(L * spans.sum()))
    rowpart = np.zeros((L, n))
    forms_on = VT is not None
    M = VT.shape[1] if forms_on else 1
    formpart = np.zeros((len(starts), M, L) if forms_on else (1, 1, 1))
    weights = VT if forms_on else np.zeros((1, 1), dtype=FORM_DTYPE)
    with single_blas():
        stein_pass_blocks(code, p0s, p1, d, np.ascontiguousarray(Xc), np.ascontiguousarray(S),
                          nx, nsx, block, POOLED_CHUNK, scale, weights, forms_on, rowpart,
                          colpart, coloff, formpart, mirror, out, *_tilt_args(tilt_weights))
    rowsums = rowpart.copy()
    for k, a in enumerate(starts):
        rowsums[:, a:] += colpart[coloff[k]:coloff[k] + L * spans[k]].reshape(L, spans[k])
    totals = 2.0 * rowpart.sum(axis=1)
    forms = (2.0 / scale) * formpart.sum(axis=0) if forms_on else None
    return rowsums, totals, forms


def resolve_bandwidths(X, bandwidth, n_bandwidths=10, *, random_state=None, max_points=2000):
    """The bandwidth collection of an aggregated test, shape ``(L,)``.

    ``bandwidth`` is ``"aggregate"`` (:func:`skstein.kernels.bandwidth_grid` with
    ``n_bandwidths`` values) or an array-like of positive floats (used as given).
    """
    if isinstance(bandwidth, str):
        if bandwidth != "aggregate":
            raise ValueError(f"bandwidth must be 'aggregate', 'median', a positive float or "
                             f"an array of positive floats, got {bandwidth!r}.")
        return bandwidth_grid(X, n_bandwidths, max_points=max_points, random_state=random_state)
    h = _positive_array(bandwidth, "bandwidth")
    if h.ndim != 1 or h.size == 0:
        raise ValueError(f"bandwidth as an array must be 1-D and non-empty, got shape {h.shape}.")
    return h


def _positive_array(value, name):
    try:
        h = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be positive floats, got {value!r}.") from None
    if not (np.all(np.isfinite(h)) and np.all(h > 0)):
        raise ValueError(f"{name} must be positive and finite, got {value!r}.")
    check_bandwidth(h, name)
    return h


def resolve_bandwidth(X, bandwidth, *, random_state=None, max_points=2000):
    """A positive float bandwidth, or the median heuristic of ``X`` for ``"median"``."""
    if isinstance(bandwidth, str):
        if bandwidth != "median":
            raise ValueError(f"bandwidth must be a positive float or 'median', got {bandwidth!r}.")
        return median_bandwidth(X, max_points=max_points, random_state=random_state)
    if isinstance(bandwidth, (bool, np.bool_)) or not np.isscalar(bandwidth):
        raise TypeError(f"bandwidth must be a positive float or 'median', got {bandwidth!r}.")
    if isinstance(bandwidth, (str, bytes, complex, np.complexfloating)):
        raise TypeError(f"bandwidth must be a positive float or 'median', got {bandwidth!r}.")
    bandwidth = float(bandwidth)
    if not (np.isfinite(bandwidth) and bandwidth > 0):
        raise ValueError(f"bandwidth must be a positive finite float or 'median', got {bandwidth!r}.")
    return check_bandwidth(bandwidth)


def _prepare(X, model, kernel, bandwidth, kernel_params, random_state):
    """Validated ``X``, its scores and the kernel; arrays of another Array API library
    than NumPy (under scikit-learn's ``array_api_dispatch``) stay in their namespace."""
    xp = namespace_of(X)
    check_choice(kernel, "kernel", KERNELS)
    if xp is None:
        X = check_samples(X)
        h = resolve_bandwidth(X, bandwidth, random_state=random_state)
        return X, evaluate_score(model, X), make_kernel(kernel, h, kernel_params)
    from ._xp_stein import xp_check_samples, xp_evaluate_score

    X = xp_check_samples(X, xp)
    h = resolve_bandwidth(to_host(X), bandwidth, random_state=random_state)
    return X, xp_evaluate_score(model, X, xp), make_kernel(kernel, h, kernel_params)


def _one_pass(X, S, kern, max_memory):
    """The :class:`SteinSums` of one kernel, on the engine of ``X``'s arrays."""
    if namespace_of(X) is None:
        return stein_sums(X, S, kern, max_memory=max_memory)
    from ._xp_stein import xp_sums_and_forms

    return xp_sums_and_forms(X, S, (kern,), None, max_memory=max_memory)[0][0]


@host_single_blas(data=0)
def ksd(X, model, *, kernel="rbf", bandwidth="median", kernel_params=None, statistic="u",
        random_state=None, max_memory=DEFAULT_MAX_MEMORY):
    """Squared kernel Stein discrepancy of the sample ``X`` to ``model``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        NumPy data run the numba kernels; an array of another Array API library
        (CuPy, PyTorch) under scikit-learn's ``array_api_dispatch`` is computed with
        that library on its device (the model's score must return the same library's
        arrays), with the same value to rounding.
    model : distribution or callable
        An object with ``grad_logpdf(X)`` or a callable returning the score
        ``grad log p`` at each row of ``X``.
    kernel : {"rbf", "imq"}, default="rbf"
    bandwidth : float or "median", default="median"
    kernel_params : dict, default=None
        Extra kernel parameters (``{"beta": -0.5}`` for IMQ).
    statistic : {"u", "v"}, default="u"
        Unbiased U-statistic (can be negative) or V-statistic (non-negative, biased).
    random_state : None, int or Generator
        Only used by the median heuristic's subsample when ``n > 2000``.
    max_memory : int, default=64 MiB
        Bound on the temporaries of the pass; no ``n x n`` array is formed, so the
        statistic works for very large ``n`` in ``O(n^2 d)`` time.

    Returns
    -------
    float
    """
    check_choice(statistic, "statistic", ("u", "v"))
    check_positive_int(max_memory, "max_memory")
    X, S, kern = _prepare(X, model, kernel, bandwidth, kernel_params, random_state)
    return _one_pass(X, S, kern, max_memory).statistic(statistic)


@fill_doc
@host_single_blas(data=0)
def ksd_power_criterion(X, model, *, kernel="rbf", bandwidth="median", kernel_params=None,
                        random_state=None, eps=1e-10, max_memory=DEFAULT_MAX_MEMORY):
    """Test-power criterion ``KSD_U^2 / sqrt(sigma_H1^2 + eps)`` (higher = more power).

    See :meth:`SteinSums.power_criterion`.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The sample, at least 3 points.
    %(stein_kernel_parameters)s
    eps : float, default=1e-10
        Added to the variance estimate before the square root; a positive finite float,
        held relative to the squared scale of the Stein kernel's row means when that
        scale is far from one (see :meth:`SteinSums.power_criterion`).
    max_memory : int, default=64 MiB
        Bound on the temporaries of the pass.

    Returns
    -------
    float
    """
    check_positive_float(eps, "eps")
    check_positive_int(max_memory, "max_memory")
    X, S, kern = _prepare(X, model, kernel, bandwidth, kernel_params, random_state)
    if X.shape[0] < 3:
        raise ValueError(f"X needs at least 3 samples for the power criterion, got "
                         f"{X.shape[0]}: with 2 its variance estimate is always 0.")
    return _one_pass(X, S, kern, max_memory).power_criterion(eps)


@fill_doc
@host_single_blas(data=0)
def stein_matrix(X, model, *, kernel="rbf", bandwidth="median", kernel_params=None,
                 random_state=None):
    """The Stein kernel matrix ``H[i, j] = h_p(x_i, x_j)``, diagonal included.

    Uses ``O(n^2)`` memory.

    %(sample_parameters)s
    %(stein_kernel_parameters)s

    Returns
    -------
    ndarray of shape (n_samples, n_samples)
        In ``X``'s namespace: for an array of another Array API library (CuPy, PyTorch)
        under scikit-learn's ``array_api_dispatch``, an array of that library on ``X``'s
        device, computed there.
    """
    X, S, kern = _prepare(X, model, kernel, bandwidth, kernel_params, random_state)
    if namespace_of(X) is not None:
        from ._xp_stein import xp_stein_matrix

        return xp_stein_matrix(X, S, kern)
    res = stein_sums(X, S, kern, return_matrix=True, mirror=True)
    H = res.upper
    H[np.diag_indices_from(H)] = res.diag
    return H


# ---------------------------------------------------------------------------
# Sliced kernel Stein discrepancy (maxSKSD)
# ---------------------------------------------------------------------------


@dataclass
class SlicedSteinSums(SteinSums):
    """:class:`SteinSums` of the summed sliced Stein kernel, plus per-pair totals.

    Attributes
    ----------
    pair_sums : ndarray (m,)
        :math:`\\sum_{i \\ne j} h_k(x_i, x_j)` for each (slice, direction) pair ``k``.
    pair_diag : ndarray (m,)
        :math:`\\sum_i h_k(x_i, x_i)` for each pair.
    """

    pair_sums: np.ndarray = None
    pair_diag: np.ndarray = None

    def pair_statistics(self, kind="u"):
        """Per-pair SKSD estimates; they sum to :meth:`statistic`."""
        if kind == "u":
            return self.pair_sums / (self.n * (self.n - 1))
        return (self.pair_sums + self.pair_diag) / self.n**2


#: Below this many pair-evaluations a sliced pass runs on one thread: waking the
#: thread pool costs more than the work (results are identical either way).
SERIAL_PAIR_EVALUATIONS = 2**20
#: What one pair of :func:`_shared_direction_sums` (one pass for all slices) weighs in
#: pair-evaluations of :data:`SERIAL_PAIR_EVALUATIONS`: about 20 ns, a row of slices'
#: work, so that pass takes the threads from 2^14 pairs on.
SHARED_PAIR_WEIGHT = 64


def _threads_for(n_rows, n_cols, m):
    return numba_threads(1) if n_rows * n_cols * m < SERIAL_PAIR_EVALUATIONS else nullcontext()


def check_directions(G, name, dim, m=None):
    """Validate a ``(m, dim)`` array of directions; return it with unit-norm rows."""
    G = check_array(G, dtype=np.float64, ensure_2d=True, ensure_all_finite=True,
                    input_name=name)
    if G.shape[1] != dim:
        raise ValueError(f"{name} must have {dim} columns (the dimension of X), got shape "
                         f"{G.shape}.")
    if m is not None and G.shape[0] != m:
        raise ValueError(f"{name} must have {m} rows (one per slice), got shape {G.shape}.")
    norms = np.linalg.norm(G, axis=1)
    if np.any(norms == 0):
        raise ValueError(f"the rows of {name} must be non-zero directions.")
    return np.ascontiguousarray(G / norms[:, None])


def _median_1d(U, max_points, random_state, name, value, samples=None):
    """The per-direction median bandwidths of the projections ``U``
    (:func:`~skstein.kernels.median_bandwidth_1d`); along a direction where the samples
    coincide, the median of the other directions' bandwidths. ``samples``: the ``(X, G)``
    behind ``U = X @ G.T``, which also finds the directions where the samples coincide
    up to rounding (:func:`~skstein.kernels.flat_directions`). Errors name the argument
    ``name``."""
    try:
        med = projection_medians_1d(U, max_points=max_points, random_state=random_state)
        flat = med <= 0
        if samples is not None:
            flat |= flat_directions(*samples, projections=U)
        if np.all(flat):
            raise ValueError(
                "all samples coincide along every direction (for instance, X has one "
                "distinct row), so the median heuristic is undefined; give an explicit "
                "bandwidth.")
        check_min_median(med[~flat])
    except ValueError as exc:
        raise ValueError(f"{name}={value!r}: {exc}") from exc
    if np.any(flat):
        # the sliced kernel along such a direction is constant over the sample: any
        # bandwidth is valid there, and the others' median keeps it at the data's scale
        med[flat] = np.median(med[~flat])
    return med


def resolve_sliced_bandwidth(U, bandwidth, *, random_state=None, max_points=1000,
                             name="bandwidth", samples=None):
    """Per-pair bandwidths ``(m,)``: median heuristic of the projections ``U``, or given.

    ``bandwidth`` is ``"median"`` (per column of ``U``, see
    :func:`skstein.kernels.median_bandwidth_1d`; along a direction where the samples
    coincide, e.g. an axis on which X is constant, the median of the other directions'
    bandwidths), a positive float (the same for all pairs) or an array of ``m``
    positive floats. ``name`` is the argument named in error messages. ``samples``:
    the ``(X, G)`` with ``U = X @ G.T``, with which the samples also count as
    coinciding along a direction where they differ by rounding only.
    """
    m = U.shape[1]
    if isinstance(bandwidth, str):
        if bandwidth != "median":
            raise ValueError(
                f"{name} must be 'median', a positive float or an array of {m} positive "
                f"floats, got {bandwidth!r}.")
        return _median_1d(U, max_points, random_state, name, bandwidth, samples)
    if isinstance(bandwidth, bool):
        raise TypeError(
            f"{name} must be 'median', a positive float or an array, got {bandwidth!r}.")
    try:
        h = np.asarray(bandwidth, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be 'median', a positive float or an array, got "
                        f"{bandwidth!r}.") from None
    if h.ndim == 0:
        h = np.full(m, float(h))
    if h.shape != (m,):
        raise ValueError(f"{name} must be a float or an array of {m} values (one per "
                         f"direction), got shape {h.shape}.")
    if not (np.all(np.isfinite(h)) and np.all(h > 0)):
        raise ValueError(f"{name} must be positive and finite, got {bandwidth!r}.")
    return check_bandwidth(h, name).copy()


def resolve_sliced_bandwidths(U, bandwidth, n_bandwidths=10, *, random_state=None,
                              max_points=1000, name="bandwidth", samples=None):
    """Per-pair bandwidths of an aggregated sliced test, shape ``(L, m)``.

    ``"aggregate"``: the median bandwidths of the projections ``U`` (as in
    :func:`resolve_sliced_bandwidth`, with ``samples``) times the factors of
    :func:`skstein.kernels.bandwidth_factor_grid`; a 2-D array: its rows as given.
    """
    m = U.shape[1]
    if isinstance(bandwidth, str):
        if bandwidth != "aggregate":
            raise ValueError(f"{name} must be 'aggregate' or an array of shape (L, {m}) for an "
                             f"aggregated test, got {bandwidth!r}.")
        med = _median_1d(U, max_points, random_state, name, bandwidth, samples)
        factors = bandwidth_factor_grid(U, n_bandwidths, max_points=max_points,
                                        random_state=random_state)
        return factors[:, None] * med[None, :]
    h = _positive_array(bandwidth, name)
    if h.ndim != 2 or h.shape[1] != m or h.shape[0] == 0:
        raise ValueError(f"{name} as a collection must have shape (L, {m}), got {h.shape}.")
    return h


def is_collection(bandwidth):
    """Whether a ``bandwidth`` argument asks for an aggregated test (``"aggregate"``)."""
    return isinstance(bandwidth, str) and bandwidth == "aggregate"


def linear_stein_upper_matrix(S, Y, a, c0, const):
    r"""The strict upper triangle ``(N, N)`` of the kernel :math:`(s_i^\top s_j)
    (y_i^\top y_j) + c_0 (a_i + a_j) + C` (zero on and below the diagonal), ``C`` =
    ``const``: the linear Stein kernel of
    :func:`skstein.gof._maxsksd.second_moment_sums`. Its Gram products and its entries
    run on numba's threads (:func:`skstein._numba.stein.linear_stein_upper`)."""
    H = product_nt(S, S)
    linear_stein_upper(H, product_nt(Y, Y), np.ascontiguousarray(a, dtype=np.float64),
                       float(c0), float(const))
    return H


def _sliced_kernel_params(kernel, bandwidths, kernel_params):
    """(code, p0 (m,), p1) of the 1-D kernels with per-pair bandwidths."""
    proto = make_kernel(kernel, 1.0, kernel_params)  # validates kernel and its parameters
    inv = inverse_square(np.asarray(bandwidths, dtype=np.float64))
    if proto.name == "rbf":
        return _SLICED_RBF, np.ascontiguousarray(0.5 * inv), 0.0
    return _SLICED_IMQ, np.ascontiguousarray(inv), proto.beta


def sliced_projections(X, S, directions, slices):
    """``U = X G^T``, ``A = S R^T`` and ``c_k = r_k . g_k`` (C-contiguous)."""
    U = product_nt(X, directions)
    A = product_nt(S, slices)
    c = np.ascontiguousarray(np.einsum("kd,kd->k", slices, directions))
    return U, A, c


def _sliced_diag(code, p0, p1, A, c):
    """h_k(x_i, x_i) = K(0) a_ik^2 - 2 c_k^2 K'(0), shape (n, m)."""
    k1 = -p0 if code == _SLICED_RBF else p1 * p0
    return A * A - 2.0 * (c * c * k1)[None, :]


def sliced_stein_sums(X, S, directions, slices, bandwidths, *, kernel="rbf",
                      kernel_params=None, return_matrix=False, max_memory=DEFAULT_MAX_MEMORY):
    """One pass of the summed sliced Stein kernel over validated arrays.

    Parameters
    ----------
    X, S : ndarray (n, d)
        Samples and scores.
    directions, slices : ndarray (m, d)
        Unit-norm test directions ``G`` and slices ``R``.
    bandwidths : ndarray (m,)
    kernel, kernel_params : see :func:`max_sksd`
    return_matrix : bool
        Also form the strict upper triangle of the summed Stein matrix
        (``SlicedSteinSums.upper``, C-contiguous ``(n, n)``), for the bootstrap.
    max_memory : int
        Without ``return_matrix``, the full row sums (for the power criterion) come
        from the upper triangle when its matrix fits in this budget, and from a
        full-row pass (twice the work, no ``n x n`` array) otherwise.

    Returns
    -------
    SlicedSteinSums
    """
    n = X.shape[0]
    if (np.all(directions == directions[0]) and np.all(bandwidths == bandwidths[0])
            and SHARED_DIRECTION_ARRAYS * 8 * n * n <= max_memory):
        return _shared_direction_sums(X, S, directions[0], slices, float(bandwidths[0]),
                                      kernel, kernel_params, return_matrix)
    U, A, c = sliced_projections(X, S, directions, slices)
    m = U.shape[1]
    code, p0, p1 = _sliced_kernel_params(kernel, bandwidths, kernel_params)
    diag_k = _sliced_diag(code, p0, p1, A, c)
    empty = np.empty((1, 1))
    if return_matrix or 8 * n * n <= max_memory:
        H = np.empty((n, n))
        upper_rows = np.empty((n, m))
        with _threads_for(n, n // 2, m):
            sliced_stein_upper(code, p0, p1, U, A, c, True, H, upper_rows)
        rowsums = upper_rows.sum(axis=1) + H.sum(axis=0)
        pair_sums = 2.0 * upper_rows.sum(axis=0)
        upper = H if return_matrix else None
    else:
        rows = np.empty((n, m))
        with _threads_for(n, n, m):
            sliced_stein_rows(code, p0, p1, U, A, c, 0, False, False, empty, rows, empty,
                              empty, empty)
        rowsums = rows.sum(axis=1)
        pair_sums = rows.sum(axis=0)
        upper = None
    return SlicedSteinSums(n, float(np.sum(pair_sums)), diag_k.sum(axis=1), rowsums, upper,
                           pair_sums, diag_k.sum(axis=0))


#: ``n x n`` temporaries of the shared-direction pass (it runs when they fit in
#: ``max_memory``; otherwise the general pass does the same sums).
SHARED_DIRECTION_ARRAYS = 3


def _shared_direction_sums(X, S, g, slices, bandwidth, kernel, kernel_params, return_matrix):
    r""":func:`sliced_stein_sums` when every slice is tested along one direction ``g``.

    With one projection :math:`u = Xg` and one bandwidth, :math:`\delta`, ``K`` and its
    derivatives are shared by all ``m`` slices, and the summed kernel is

    .. math::

        \sum_k h_k(i, j) = K\, a_i^\top a_j - 2\delta K' (b_i - b_j)
        - \|c\|^2 (2K' + 4tK''), \qquad b = A c,

    one ``n x n`` pass and a Gram product instead of ``m`` kernel evaluations per
    pair. The per-slice totals follow from the same matrices:
    :math:`\sum_{i \ne j} h_k = a_k^\top K_0 a_k - 4 c_k a_k^\top W 1 - c_k^2 T` with
    :math:`K_0` the kernel matrix without its diagonal, :math:`W = \delta K'` and
    :math:`T = \sum_{i \ne j} (2K' + 4tK'')`.
    """
    n = X.shape[0]
    A = product_nt(S, slices)
    c = slices @ g
    code, p0, p1 = _sliced_kernel_params(kernel, np.full(len(c), bandwidth), kernel_params)
    diag_k = _sliced_diag(code, p0, p1, A, c)
    u = np.ascontiguousarray(X @ g)
    b = A @ c
    AA = product_nt(A, A)
    H = np.empty((n, n))
    K = np.empty((n, n))
    hrow, wrow, rrow = np.empty(n), np.empty(n), np.empty(n)
    # counted as one slice, n = 800 ran on one thread (SHARED_PAIR_WEIGHT)
    with _threads_for(n, n, SHARED_PAIR_WEIGHT):
        shared_direction_rows(code, float(p0[0]), p1, u, b, float(c @ c), AA, return_matrix,
                              H, K, hrow, wrow, rrow)
    pair_sums = (np.einsum("ik,ik->k", A, product_nt(K, A.T)) - 4.0 * c * (A.T @ wrow)
                 - c * c * rrow.sum())
    return SlicedSteinSums(n, float(hrow.sum()), diag_k.sum(axis=1), hrow,
                           H if return_matrix else None, pair_sums, diag_k.sum(axis=0))


def sliced_stein_row_blocks(X, S, directions, slices, bandwidths, *, kernel="rbf",
                            kernel_params=None, max_memory=DEFAULT_MAX_MEMORY):
    """Yield ``(a, b, H[a:b])``: full rows of the summed sliced Stein matrix by blocks."""
    n = X.shape[0]
    U, A, c = sliced_projections(X, S, directions, slices)
    m = U.shape[1]
    code, p0, p1 = _sliced_kernel_params(kernel, bandwidths, kernel_params)
    empty = np.empty((1, 1))
    rows = _block_rows(n, n, max_memory, n_arrays=1)
    for a in range(0, n, rows):
        b = min(n, a + rows)
        H = np.empty((b - a, n))
        sliced_stein_rows(code, p0, p1, U, A, c, a, False, True, H, np.empty((b - a, m)),
                          empty, empty, empty)
        yield a, b, H


def sliced_value_and_grad(X, S, directions, slices, bandwidths, *, kernel="rbf",
                          kernel_params=None, grad_slices=False):
    r"""Per-pair SKSD U-statistics and their gradients in the directions (and slices).

    With :math:`S_k = \frac{1}{N(N-1)} \sum_{i \ne j} h_k(x_i, x_j)`, returns
    ``values`` (m,) with ``values[k] = S_k``, ``grad_G`` (m, d) with row ``k`` the
    Euclidean gradient :math:`\nabla_{g_k} S_k` and, with ``grad_slices``, ``grad_R``
    with rows :math:`\nabla_{r_k} S_k` (else None). Bandwidths are held constant.
    The gradients are the closed forms of DESIGN section 3.4:

    .. math::

        \nabla_{g_k} S_k = \frac{2 X^\top \rho_{:k} + \Psi_k r_k}{N(N-1)}, \qquad
        \nabla_{r_k} S_k = \frac{2 S^\top \beta_{:k} + \Psi_k g_k}{N(N-1)},

    with :math:`\rho_{ik} = \sum_{j} \partial h_k / \partial\delta`,
    :math:`\beta_{ik} = \sum_j \partial h_k(i, j) / \partial a_i` and
    :math:`\Psi_k = \sum_{i \ne j} \partial h_k / \partial c_k`.
    """
    n = X.shape[0]
    U, A, c = sliced_projections(X, S, directions, slices)
    m = U.shape[1]
    code, p0, p1 = _sliced_kernel_params(kernel, bandwidths, kernel_params)
    hsum = np.empty(m)
    psisum = np.empty(m)
    rho = np.empty((n, m))
    beta = np.empty((n, m))
    with _threads_for(n, n // 2, m):
        sliced_grad_upper(code, p0, p1, U, A, c, hsum, rho, beta, psisum, grad_slices,
                          slice_chunks(n, m, numba.get_num_threads()))
    scale = 1.0 / (n * (n - 1.0))
    psisum *= 2.0  # over ordered pairs
    values = 2.0 * hsum * scale
    check_stein_finite(values)
    with np.errstate(over="ignore", invalid="ignore"):
        grad_G = (2.0 * (rho.T @ X) + psisum[:, None] * slices) * scale  # beta is not needed
        grad_R = None
        if grad_slices:
            grad_R = (2.0 * (beta.T @ S) + psisum[:, None] * directions) * scale
    check_stein_finite(grad_G, *(() if grad_R is None else (grad_R,)))
    return values, grad_G, grad_R


def sliced_sums_and_forms(X, S, directions, slices, bandwidths, V, *, kernel="rbf",
                          kernel_params=None, max_memory=DEFAULT_MAX_MEMORY):
    """Sums of the summed sliced Stein kernel at several bandwidth vectors, and their forms.

    ``bandwidths`` has shape ``(L, m)``: row ``l`` gives the per-pair bandwidths of
    the ``l``-th kernel. Returns ``(sums, forms)`` as :func:`stein_sums_and_forms`
    (the forms are the off-diagonal quadratic forms with the rows of ``V``), one
    sliced pass per row; beyond ``max_memory`` the matrix is formed by row blocks.
    """
    n = X.shape[0]
    forms = np.zeros((V.shape[0], len(bandwidths)))
    sums = []
    for li, h in enumerate(bandwidths):
        if 8 * n * n <= max_memory:
            res = sliced_stein_sums(X, S, directions, slices, h, kernel=kernel,
                                    kernel_params=kernel_params, return_matrix=True)
            forms[:, li] = bootstrap_forms(res.upper, V)
            res.upper = None
        else:
            res = sliced_stein_sums(X, S, directions, slices, h, kernel=kernel,
                                    kernel_params=kernel_params, max_memory=max_memory)
            for a, b, H in sliced_stein_row_blocks(X, S, directions, slices, h, kernel=kernel,
                                                   kernel_params=kernel_params,
                                                   max_memory=max_memory):
                forms[:, li] += block_forms(H, V, a, b)
        sums.append(res)
    return sums, forms


@host_single_blas(data=0)
def max_sksd(X, model, *, directions=None, slices=None, kernel="rbf", bandwidth="median",
             kernel_params=None, statistic="u", return_pairs=False, random_state=None,
             max_memory=DEFAULT_MAX_MEMORY):
    r"""Sliced kernel Stein discrepancy of ``X`` to ``model`` along given directions.

    .. math::

        \mathrm{SKSD}^2 = \sum_{k=1}^m \frac{1}{N(N-1)} \sum_{i \ne j}
        h_{k}(x_i, x_j),

    with :math:`h_k` the 1-D Stein kernel of slice :math:`r_k` (which score
    component is tested) and test direction :math:`g_k` (along which the kernel
    acts); see :mod:`skstein._numba.sliced`. It is the maxSKSD (Gong et al. 2021)
    when the directions maximise it, which :func:`skstein.directions.search_directions`
    and :class:`skstein.MaxSKSDTest` do on held-out data.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    model : distribution or callable
        An object with ``grad_logpdf(X)`` or a callable returning the score.
    directions : array-like of shape (m, n_features), default=None
        Test directions ``G`` (rows are normalised to unit length). ``None``: the
        slices themselves.
    slices : array-like of shape (m, n_features), default=None
        Slices ``R`` (rows normalised). ``None``: the identity (``m = n_features``,
        maxSKSD-g).
    kernel : {"rbf", "imq"}, default="rbf"
        1-D base kernel; conventions of :mod:`skstein.kernels`.
    bandwidth : "median", float or array-like of shape (m,), default="median"
        Per-pair bandwidths; ``"median"`` is the median of ``|u_i - u_j|`` of each
        projection ``u = X g_k`` (on at most 1000 points); along a direction where the
        rows of ``X`` coincide up to rounding (e.g. an axis on which ``X`` is
        constant), the median of the other directions' bandwidths.
    kernel_params : dict, default=None
        ``{"beta": ...}`` for IMQ.
    statistic : {"u", "v"}, default="u"
    return_pairs : bool, default=False
        Also return the per-pair values (they sum to the statistic) and the bandwidths.
    random_state : None, int or Generator
        Only for the median heuristic's subsample.
    max_memory : int, default=64 MiB

    Returns
    -------
    float, or (float, ndarray (m,), ndarray (m,)) with ``return_pairs``

    Examples
    --------
    >>> import numpy as np
    >>> from skstein import max_sksd
    >>> from skstein.distributions import Gaussian
    >>> X = np.random.default_rng(0).laplace(size=(400, 10)) / np.sqrt(2)
    >>> bool(max_sksd(X, Gaussian(np.zeros(10))) > 0.1)  # axes as directions
    True
    """
    check_choice(statistic, "statistic", ("u", "v"))
    check_choice(kernel, "kernel", KERNELS)
    check_bool(return_pairs, "return_pairs")
    check_positive_int(max_memory, "max_memory")
    X = check_samples(X)
    d = X.shape[1]
    if slices is None:
        R = np.eye(d)
    else:
        R = check_directions(slices, "slices", d)
    G = R if directions is None else check_directions(directions, "directions", d, R.shape[0])
    S = evaluate_score(model, X)
    h = resolve_sliced_bandwidth(X @ G.T, bandwidth, random_state=random_state,
                                 samples=(X, G))
    sums = sliced_stein_sums(X, S, G, R, h, kernel=kernel, kernel_params=kernel_params,
                             max_memory=max_memory)
    stat = sums.statistic(statistic)
    if return_pairs:
        return stat, sums.pair_statistics(statistic), h
    return stat


# ---------------------------------------------------------------------------
# The saturated polynomial kernel (skstein.PolynomialKSDTest)
# ---------------------------------------------------------------------------


def radial_scale(Z):
    r"""``(m, w)``: the mean ``m`` of the squared radii :math:`\|z_i\|^2` of the ``n``
    rows of ``Z`` and the width :math:`w = \sqrt{2 \ln n}\, \tau` within which
    :func:`fourth_moment_terms` follows the cubic, :math:`\tau` their standard deviation
    (``w`` 0 for fewer than two rows, or squared radii all equal).

    :math:`\sqrt{2 \ln n}` standard deviations is about as far as the largest of ``n``
    normal draws reaches: the width grows with the reference, slowly, so the test
    function follows the cubic over the range that the reference itself spans when
    the radii are light-tailed, and saturates beyond it.
    """
    r2 = np.einsum("ij,ij->i", Z, Z)
    n = r2.shape[0]
    if n < 2:
        return float(r2.mean()), 0.0
    w = math.sqrt(2.0 * math.log(n)) * float(r2.std(ddof=1))
    return float(r2.mean()), w if np.isfinite(w) else 0.0


def polynomial_coordinates(X, whiten=False, covariance="ledoit-wolf"):
    r"""The coordinates of the polynomial kernel learned on the reference sample ``X``.

    Returns ``(c, A, B, c2)``: the mean ``c``; ``A`` (d x d) with the rows of ``(X - c)
    @ A`` of unit mean squared norm (``A`` a multiple of the identity; with ``whiten``,
    the whitening of :func:`~skstein.kernels.whitening` with the covariance estimate
    ``covariance``, ``"ledoit-wolf"``, ``"sample"`` or ``"held-out"``, so scaled; with
    ``whiten="auto"``, that whitening where :func:`~skstein.kernels.auto_whitening`
    takes it: an anisotropic ``X``); ``B``
    maps the scores to those coordinates (``S @ B``, :math:`A B^\top = I`); and the
    saturation ``c2``, the squared radius where the mapped sample's squared radii end
    (their mean 1 plus the width of :func:`radial_scale`, :math:`\sqrt{2 \ln n}`
    standard deviations). Raises ``ValueError`` when the rows of ``X`` coincide. The test
    does not change when ``A`` is multiplied by a number (the Stein matrix is multiplied by a
    power of it), so the scaling only keeps the products in range.
    """
    return polynomial_frame(X, whiten, covariance)[:4]


def polynomial_frame(X, whiten=False, covariance="ledoit-wolf"):
    """:func:`polynomial_coordinates` ``(c, A, B, c2)`` and whether ``A`` whitens."""
    d = X.shape[1]
    c = X.mean(axis=0)
    Xc = X - c
    if isinstance(whiten, str) and whiten == "auto":
        white = auto_whitening(X, covariance)
    else:
        white = whitening(X, covariance) if whiten else None
    A, B = white if white is not None else (np.eye(d), np.eye(d))
    Y = Xc @ A
    top = float(np.max(np.abs(Y))) if Y.size else 0.0
    if not np.isfinite(top):
        raise ValueError("X is on a scale whose coordinates overflow float64; rescale X.")
    if top == 0.0:  # the kernel, a power of products centred at c, is zero on every row
        raise ValueError("all samples coincide (X has no two distinct rows), so the "
                         "polynomial kernel centred at their mean has no scale and is zero "
                         "on them; fit the test on a reference sample (for instance the "
                         "model's samples) or use KSDTest.")
    rho = top * math.sqrt(float(np.mean(np.einsum("ij,ij->i", Y / top, Y / top))))
    A, B = A / rho, B * rho
    mean, width = radial_scale(Xc @ A)  # the mean is 1
    return c, A, B, mean + width, white is not None


def _polynomial_point_terms(Z, SZ, degree, c2):
    """Per point: the weight ``w``, ``g = 2 w'`` (in the squared radius), ``|z|^2``,
    ``s . z``."""
    r2 = np.einsum("ij,ij->i", Z, Z)
    u = 1.0 + r2 / c2
    w = u ** (-0.5 * degree)
    return w, -(degree / c2) * w / u, r2, np.einsum("ij,ij->i", SZ, Z)


def _polynomial_values(T, SS, SY, YS, rows, cols, degree, d):
    """The Stein kernel from the pairs' products ``T = y_i.y_j``, ``SS = s_i.s_j``,
    ``SY = s_i.y_j``, ``YS = y_i.s_j`` and the :func:`_polynomial_point_terms` of ``i``
    (``rows``) and ``j`` (``cols``), broadcast against each other."""
    p = degree
    wr, gr, r2r, syr = rows
    wc, gc, r2c, syc = cols
    P2 = (p * (p - 1)) * T ** (p - 2) if p >= 2 else 0.0
    ww = wr * wc
    H = T ** p * (SS * ww + (wr * gc) * SY + (gr * wc) * YS + (gr * gc) * T)
    H += p * T ** (p - 1) * (ww * (syr + syc + d) + (gr * r2r) * wc + wr * (gc * r2c))
    H += P2 * T * ww
    return H


def _polynomial_block(Yr, Sr, Y, S, degree, c2):
    """Rows of the Stein matrix: ``Yr, Sr`` (rows) against ``Y, S`` (columns)."""
    rows = [v[:, None] for v in _polynomial_point_terms(Yr, Sr, degree, c2)]
    cols = [v[None, :] for v in _polynomial_point_terms(Y, S, degree, c2)]
    return _polynomial_values(Yr @ Y.T, Sr @ S.T, Sr @ Y.T, Yr @ S.T, rows, cols, degree,
                              Y.shape[1])


def polynomial_stein_rows(Y, S, degree, c2, max_memory=DEFAULT_MAX_MEMORY):
    r"""Full rows of the Stein matrix of the saturated polynomial kernel, by blocks, in
    NumPy: the reference of the compiled pass of the test (:func:`polynomial_stein_sums`).

    Yields ``(a, b, H)`` with ``H`` the rows ``a:b`` of the ``n x n`` matrix
    :math:`h(y_i, y_j)` of the kernel :math:`k(x, y) = w(x) w(y) (x^\top y)^p`,
    :math:`w(x) = (1 + \|x\|^2 / c^2)^{-p/2}`, with zeros on the diagonal (the form
    :func:`~skstein._bootstrap.bootstrap_null` takes). ``Y`` are the points in the
    kernel's coordinates and ``S`` the model's score there; blocks of rows use about
    ``max_memory`` bytes.

    With :math:`P = t^p`, :math:`t = y_i^\top y_j` and :math:`g = 2 w'` (the derivative
    in :math:`\|y\|^2`), the Stein kernel :math:`s_i^\top s_j k + s_i^\top
    \nabla_{y_j} k + s_j^\top \nabla_{y_i} k + \operatorname{tr} \nabla_{y_i}
    \nabla_{y_j} k` is

    .. math::

        h = P\,[w_i w_j\, s_i^\top s_j + w_i g_j\, s_i^\top y_j + g_i w_j\, y_i^\top s_j
        + g_i g_j\, t] + P'\,[w_i w_j (s_i^\top y_i + s_j^\top y_j + D)
        + g_i w_j \|y_i\|^2 + w_i g_j \|y_j\|^2] + P''\, t\, w_i w_j.
    """
    n = Y.shape[0]
    rows = int(max(1, min(n, max_memory // max(1, 10 * 8 * n))))
    for a in range(0, n, rows):
        b = min(n, a + rows)
        H = _polynomial_block(Y[a:b], S[a:b], Y, S, degree, c2)
        H[np.arange(b - a), np.arange(a, b)] = 0.0
        yield a, b, H


def _polynomial_diagonal(Y, S, degree, c2):
    """:math:`h(y_i, y_i)` (the V-statistic's diagonal; for :class:`SteinSums`)."""
    pt = _polynomial_point_terms(Y, S, degree, c2)
    r2, sy = pt[2], pt[3]
    return _polynomial_values(r2, np.einsum("ij,ij->i", S, S), sy, sy, pt, pt, degree,
                              Y.shape[1])


def polynomial_stein_pass(Y, S, degree, c2, max_memory, *, keep=False, V=None):
    """One pass over the strict upper triangle of the Stein matrix, by blocks of rows
    on numba's threads (``skstein._numba.polynomial.polynomial_upper_rows``).

    Returns ``(sums, upper, forms)``: the :class:`~skstein.discrepancy.SteinSums`;
    with ``keep``, the ``n x n`` upper triangle when it fits in ``max_memory`` (else
    ``None``); with weights ``V`` (one row per draw), the forms :math:`v^\top H v`
    accumulated block by block (else ``None``).
    """
    n = Y.shape[0]
    w, g, r2, sy = _polynomial_point_terms(Y, S, degree, c2)
    rowsums = np.zeros(n)
    upper = np.zeros((n, n)) if keep and 8 * n * n <= max_memory else None
    forms = None if V is None else np.zeros(V.shape[0])
    rows = int(max(1, min(n, max_memory // max(1, 2 * 8 * n))))
    # each numba thread forms its block's products with one-thread BLAS calls
    with single_blas(), np.errstate(over="ignore", invalid="ignore"):  # overflow: SteinSums
        for a0 in range(0, n, rows):
            b0 = min(n, a0 + rows)
            if upper is not None:  # straight into the kept triangle's rows
                polynomial_upper_rows(Y, S, w, g, r2, sy, int(degree), a0, b0, 0, upper[a0:b0])
                out = upper[a0:b0, a0:]
            else:  # the block's columns from a0 on
                out = np.empty((b0 - a0, n - a0))
                polynomial_upper_rows(Y, S, w, g, r2, sy, int(degree), a0, b0, a0, out)
            rowsums[a0:b0] += out.sum(axis=1)
            rowsums[a0:] += out.sum(axis=0)
            if forms is not None:  # the block's part of the triangle, columns a0 on
                forms += 2.0 * block_forms(out, V[:, a0:], 0, b0 - a0)
        total = float(rowsums.sum())
    return SteinSums(n, total, _polynomial_diagonal(Y, S, degree, c2), rowsums), upper, forms


def polynomial_stein_sums(Y, S, degree, c2, max_memory=DEFAULT_MAX_MEMORY):
    """:class:`~skstein.discrepancy.SteinSums` of the saturated polynomial kernel, by
    blocks of rows of its upper triangle on numba's threads (the same numbers as the
    NumPy rows of :func:`polynomial_stein_rows`, to rounding)."""
    return polynomial_stein_pass(Y, S, degree, c2, max_memory)[0]
