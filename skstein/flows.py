"""Functional layer of the particle samplers: SVGD and sliced SVGD update directions.

Arrays in, arrays out; :mod:`skstein.svgd` holds the estimators. The pair loops run in
:mod:`skstein._numba.svgd`.
"""

from contextlib import nullcontext

import numba
import numpy as np

from ._threads import numba_threads
from ._numba.sliced import median_abs_diff_columns
from ._numba.stein import kernel_params as _kernel_code
from ._numba.svgd import sliced_svgd_terms, sliced_svgd_terms_symmetric, svgd_kernel_matrices
from .discrepancy import _threads_for
from .kernels import MIN_BANDWIDTH, inverse_square, make_kernel

__all__ = ["svgd_terms", "sliced_svgd_update", "projection_medians", "bandwidth_scale"]


#: Below this many kernel evaluations an update pass runs on one thread (waking the
#: thread pool costs more than the work; results are identical either way).
SERIAL_EVALUATIONS = 2**16


def _small_serial(evaluations):
    return numba_threads(1) if evaluations < SERIAL_EVALUATIONS else nullcontext()


#: With at most this many numba threads the serial symmetric sliced pass (each pair
#: once) beats the row-parallel one (each pair twice); both give identical numbers.
SYMMETRIC_MAX_THREADS = 2


def sliced_terms(code, p0, p1, U, S, gdiag, drive, repulse):
    """Driving and repulsive sums of sliced SVGD by the faster of the two passes."""
    n, m = U.shape
    if numba.get_num_threads() <= SYMMETRIC_MAX_THREADS or n * n * m < SERIAL_EVALUATIONS:
        return sliced_svgd_terms_symmetric(code, p0, p1, U, S, gdiag, drive, repulse)
    return sliced_svgd_terms(code, p0, p1, U, S, gdiag, drive, repulse)


def bandwidth_scale(rule, n):
    """Factor on the median distance: 1 (``median``) or 1/sqrt(2 log(n+1)) (``median-log``)."""
    return 1.0 if rule == "median" else 1.0 / np.sqrt(2.0 * np.log(n + 1.0))


def svgd_terms(X, S, kernel, bandwidth="median-log", kernel_params=None):
    """Driving and repulsive sums of the SVGD direction (each to be divided by N).

    ``bandwidth`` is a float or a median rule (see :class:`SVGD`), resolved on the
    squared distances the kernel pass forms anyway.
    """
    n = X.shape[0]
    Xc = X - X.mean(axis=0)
    nx = np.einsum("ij,ij->i", Xc, Xc)
    G = Xc @ Xc.T
    if isinstance(bandwidth, str):
        scale, h = bandwidth_scale(bandwidth, n), 0.0
    else:
        scale, h = 1.0, float(bandwidth)
    code, _, beta = _kernel_code(make_kernel(kernel, 1.0, kernel_params))
    K = np.empty((n, n))
    K1 = np.empty((n, n))
    with _small_serial(n * n):
        svgd_kernel_matrices(code, beta, scale, h, G, nx, K, K1)
    drive = K @ S
    repulse = K1 @ X
    repulse -= K1.sum(axis=1)[:, None] * X
    repulse *= 2.0
    return drive, repulse


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
