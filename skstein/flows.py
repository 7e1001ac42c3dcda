"""Functional layer of the particle samplers: SVGD and sliced SVGD update directions.

Arrays in, arrays out; :mod:`skstein.svgd` holds the estimators. The pair loops run in
:mod:`skstein._numba.svgd`.
"""

import functools

import numba
import numpy as np

from ._threads import numba_threads, single_blas
from ._numba.sliced import median_abs_diff_columns
from ._numba.stein import kernel_params as _kernel_code
from ._numba.learning import slice_chunks
from ._numba.svgd import (
    adagrad_step,
    adagrad_step_chunks,
    sliced_svgd_terms_tiled,
    svgd_field,
    svgd_field_serial,
    svgd_field_sets,
)
from .discrepancy import _threads_for
from .kernels import MIN_BANDWIDTH, inverse_square, make_kernel

__all__ = ["svgd_terms", "svgd_direction", "field_from_terms", "SVGDFlow", "adagrad_update",
           "sliced_svgd_update", "projection_medians", "bandwidth_scale", "kernel_code"]


#: Below this many kernel evaluations an update pass runs on the calling thread (waking
#: the thread pool costs more than the work; results are identical either way).
SERIAL_EVALUATIONS = 2**16


def sliced_terms(code, p0, p1, U, S, gdiag, drive, repulse):
    """Driving and repulsive sums of sliced SVGD: each kernel pair once, on numba's
    threads (:func:`skstein._numba.svgd.sliced_svgd_terms_tiled`), or on the calling
    thread below :data:`SERIAL_EVALUATIONS` (the same numbers either way)."""
    n, m = U.shape
    serial = n * n * m < SERIAL_EVALUATIONS
    with numba_threads(1 if serial else None):
        return sliced_svgd_terms_tiled(code, p0, p1, U, S, gdiag, drive, repulse,
                                       slice_chunks(n, m, numba.get_num_threads()))


def kernel_code(kernel, kernel_params=None):
    """``(code, beta)`` of a kernel name: 0 RBF, 1 IMQ with exponent ``beta``."""
    code, _, beta = _kernel_code(make_kernel(kernel, 1.0, kernel_params))
    return int(code), float(beta)


def bandwidth_scale(rule, n):
    """Factor on the median distance: 1 (``median``) or 1/sqrt(2 log(n+1)) (``median-log``)."""
    return 1.0 if rule == "median" else 1.0 / np.sqrt(2.0 * np.log(n + 1.0))


def svgd_terms(X, S, kernel, bandwidth="median-log", kernel_params=None):
    """Driving and repulsive sums of the SVGD direction (each to be divided by N).

    ``bandwidth`` is a float or a median rule (see :class:`SVGD`), resolved on the
    squared distances the kernel pass forms anyway.
    """
    flow = SVGDFlow(X.shape, kernel, bandwidth, kernel_params)
    with single_blas():
        drive, repulse = flow.terms(np.ascontiguousarray(X, dtype=np.float64),
                                    np.ascontiguousarray(S, dtype=np.float64))
    return drive.copy(), repulse.copy()


def field_from_terms(drive, repulse, n):
    """The field ``phi = (drive + repulse) / n``, written into ``drive`` (returned).

    The one place the two sums become the field, so the step of
    :class:`skstein.SVGD` and the field of its ``direction`` are the same numbers.
    """
    drive += repulse
    drive /= n
    return drive


def svgd_direction(X, S, kernel="rbf", bandwidth="median-log", kernel_params=None):
    r"""The SVGD field at each set of particles: ``(N, D)`` or a batch ``(B, N, D)``.

    For each set, :math:`\phi(x_i) = \frac1N \sum_j [k(x_j, x_i) s(x_j) +
    \nabla_{x_j} k(x_j, x_i)]`, the bandwidth rule applied to that set alone. ``X``
    and ``S`` are validated float64 arrays of one shape; returns a new array of it.
    """
    X = np.asarray(X, dtype=np.float64)
    S = np.asarray(S, dtype=np.float64)
    sets_x, sets_s = X.reshape((-1,) + X.shape[-2:]), S.reshape((-1,) + S.shape[-2:])
    n = X.shape[-2]
    flow = SVGDFlow(X.shape[-2:], kernel, bandwidth, kernel_params)
    out = np.empty(sets_x.shape)
    if sets_x.shape[0] > 1 and n * n < SERIAL_EVALUATIONS:
        # small sets, each a serial pass: the sets side by side on numba's threads
        return _direction_sets(flow, sets_x, sets_s).reshape(X.shape)
    with single_blas():
        for b in range(sets_x.shape[0]):
            drive, repulse = flow.terms(np.ascontiguousarray(sets_x[b]),
                                        np.ascontiguousarray(sets_s[b]))
            out[b] = field_from_terms(drive, repulse, n)
    return out.reshape(X.shape)


def _direction_sets(flow, X, S):
    """The fields of the sets ``X[b]`` (``(B, N, D)``, each a serial pass of ``flow``),
    computed side by side (:func:`skstein._numba.svgd.svgd_field_sets`): each set's
    numbers are those of ``flow.terms`` on it."""
    nsets, n, d = X.shape
    X, S = np.ascontiguousarray(X), np.ascontiguousarray(S)
    drive, repulse = np.empty((nsets, n, d)), np.empty((nsets, n, d))
    with single_blas():
        bad = svgd_field_sets(flow.code, flow.beta, flow.scale, flow.h, X, S,
                              np.empty((nsets, n, d)), np.empty((nsets, n)), np.ones(n),
                              np.empty((nsets, n, n)), drive, repulse)
    if bad.any():
        b = int(np.flatnonzero(bad)[0])
        raise ValueError(f"the score of target is not finite at {int(bad[b])} of the {n} "
                         f"rows of set {b} of X.")
    return field_from_terms(drive, repulse, n)


class SVGDFlow:
    """Work space of the SVGD direction for particles of one shape.

    Resolves the kernel and bandwidth rule once and keeps the buffers, so an
    iteration allocates nothing of size N x N. Below :data:`SERIAL_EVALUATIONS`
    pairs the pass runs on the calling thread as one block (waking numba's pool
    costs more than the work); above, on numba's threads in row blocks, each
    calling BLAS on one thread. Which one runs depends on N only, and the blocks do
    not depend on the threads, so the numbers are the same bits for any number of
    threads (OpenBLAS itself gives different bits for different thread counts);
    :meth:`threads` holds BLAS at one thread around the passes.

    Parameters
    ----------
    shape : (int, int)
        ``(N, D)`` of the particles.
    kernel, bandwidth, kernel_params
        As for :class:`skstein.SVGD`.
    """

    def __init__(self, shape, kernel="rbf", bandwidth="median-log", kernel_params=None):
        n, d = shape
        if isinstance(bandwidth, str):
            self.scale, self.h = bandwidth_scale(bandwidth, n), 0.0
        else:
            self.scale, self.h = 1.0, float(bandwidth)
        self.code, _, self.beta = _kernel_code(make_kernel(kernel, 1.0, kernel_params))
        self.n = n
        if n * n < SERIAL_EVALUATIONS:  # one block on the calling thread
            self._field = functools.partial(svgd_field_serial, bs=max(n, 1))
        else:
            self._field = svgd_field
        self._Xc = np.empty((n, d))
        self._nx = np.empty(n)
        self._ones = np.ones(n)
        self._T = np.empty((n, n))
        self.drive = np.empty((n, d))
        self.repulse = np.empty((n, d))
        self.bandwidth_ = None

    def terms(self, X, S):
        """``(drive, repulse)``: the two sums of N times the direction (kept buffers).

        ``X`` and ``S`` are C-contiguous float64 arrays of shape ``(N, D)``. A
        non-finite score raises a ValueError.
        """
        h, bad = self._field(self.code, self.beta, self.scale, self.h, X, S, self._Xc,
                             self._nx, self._ones, self._T, self.drive, self.repulse)
        if bad:
            raise ValueError(f"the score of target is not finite at {bad} of the {self.n} "
                             "rows of X.")
        self.bandwidth_ = h
        return self.drive, self.repulse


def adagrad_update(drive, repulse, n, v, first, lr, X):
    """AdaGrad-like step of the original SVGD code on ``X`` in place (see ``adagrad_step``).

    ``drive`` is overwritten with the step. Returns ``(max v, max |X|)`` (NaN if any
    entry is NaN); ``max v`` is finite exactly when every ``phi^2`` is. From
    :data:`PARALLEL_STEP_SIZE` entries on, the step runs on numba's threads (the same
    numbers).
    """
    if X.size >= PARALLEL_STEP_SIZE:
        return adagrad_step_chunks(drive, repulse, n, v, first, lr, X, STEP_CHUNK)
    return adagrad_step(drive, repulse, n, v, first, lr, X)


#: Entries of ``X`` from which :func:`adagrad_update` runs on numba's threads (below it,
#: a step takes a few microseconds, the time of starting a parallel region), and the
#: entries per parallel range.
PARALLEL_STEP_SIZE = 2**15
STEP_CHUNK = 2**13


def sliced_svgd_update(X, S, G, h, kernel="rbf", kernel_params=None):
    """Driving and repulsive sums of sliced SVGD (each to be divided by N).

    ``G`` holds the directions (one row per output dimension, slices on the axes) and
    ``h`` the per-dimension bandwidths of the 1-D kernels on the projections ``X G^T``.
    """
    U = np.ascontiguousarray(X @ G.T)
    code, _, p1 = _kernel_code(make_kernel(kernel, 1.0, kernel_params))
    p0 = 0.5 * inverse_square(h) if code == 0 else inverse_square(h)
    drive = np.empty_like(U)
    repulse = np.empty_like(U)
    sliced_terms(code, np.ascontiguousarray(p0), p1, U, np.ascontiguousarray(S),
                 np.ascontiguousarray(np.diag(G)), drive, repulse)
    return drive, repulse


def projection_medians(U, max_points=1000):
    """Per-column median of ``|u_i - u_j|`` (first ``max_points`` rows); 1 where undefined."""
    med = np.empty(U.shape[1])
    V = np.ascontiguousarray(U[:max_points])
    with _threads_for(V.shape[0], V.shape[0], U.shape[1]):
        median_abs_diff_columns(V, med)
    med[med <= 0] = 1.0
    np.maximum(med, MIN_BANDWIDTH, out=med)  # the smallest bandwidth the kernels take
    return med
