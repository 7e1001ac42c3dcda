r"""Base kernels of the Stein discrepancies and the median heuristic.

Both kernels are radial: :math:`k(x, y) = \kappa(\|x - y\|^2)`. Everything the
Stein kernels need follows from the *radial profile* :math:`\kappa(t)` and its first
two derivatives with respect to the squared distance :math:`t`. With
:math:`r = x - y` and :math:`t = \|r\|^2` in :math:`D` dimensions,

.. math::

    \nabla_x k = 2\kappa'(t)\, r, \qquad \nabla_y k = -2\kappa'(t)\, r, \qquad
    \operatorname{tr} \nabla_x \nabla_y^\top k = -2D\kappa'(t) - 4t\kappa''(t).

The same profile with :math:`D = 1` and :math:`t = (u_i - u_j)^2` gives the 1-D
kernels of the sliced discrepancies.

Conventions (bandwidth :math:`h > 0`):

* RBF: :math:`k(x, y) = \exp(-\|x - y\|^2 / (2h^2))`.
* IMQ: :math:`k(x, y) = (1 + \|x - y\|^2 / h^2)^\beta` with :math:`-1 < \beta < 0`
  (default :math:`\beta = -1/2`).
* Median heuristic: :math:`h` is the median of the pairwise Euclidean distances
  :math:`\|x_i - x_j\|, i < j` of (at most ``max_points`` of) the samples, with no
  extra scale factor.
* Bandwidth collection (:func:`bandwidth_grid`, for the aggregated tests): ``L``
  bandwidths in geometric progression from the 1st percentile of the pairwise
  distances to twice the median heuristic. kgof uses the same :math:`h` (its ``sigma2`` is :math:`h^2`);
  the authors' SKSD code writes :math:`\exp(-d^2/h'^2)` with
  :math:`h'^2 = 2\,\mathrm{med}^2`, i.e. the same kernel up to their use of the
  lower median of squared distances with the diagonal included.
"""

import numbers
import warnings
from collections.abc import Mapping
from contextlib import nullcontext

import numpy as np
from sklearn.utils.validation import check_array

from ._threads import numba_threads, single_blas
from ._numba._blas import gemm_nt_blocks
from ._numba.distances import RECOMPUTE_BELOW, condensed_distances, select_ranks
from ._numba.sliced import median_abs_diff_columns, quantile_abs_diff_columns
from ._numba.stein import MIN_BANDWIDTH as _MIN_BANDWIDTH
from ._random import as_generator
from ._validation import (
    caller_stacklevel,
    check_positive_int,
    check_samples,
    named_errors,
    power_of_two_exponent,
    refuse_masked,
)
from ._xp import namespace_of, to_host

__all__ = [
    "blind_kernels",
    "RBF",
    "IMQ",
    "make_kernel",
    "median_bandwidth",
    "median_bandwidth_1d",
    "bandwidth_grid",
    "bandwidth_factor_grid",
    "whitening",
    "ledoit_wolf_covariance",
    "whitening_condition",
    "auto_whitening",
    "AUTO_WHITEN_CONDITION",
    "KERNELS",
    "MIN_BANDWIDTH",
]

KERNELS = ("rbf", "imq")

#: Smallest bandwidth accepted, about 1.2e-77: below it the scale constants of the Stein
#: kernels (up to :math:`1/h^4`, in the second derivative of the radial profile) overflow
#: float64. Large bandwidths have no such limit: as :math:`h \to \infty` the kernel tends
#: to the constant 1, which float64 reaches for :math:`h` beyond about 1e154.
MIN_BANDWIDTH = _MIN_BANDWIDTH


def check_bandwidth(value, name="bandwidth"):
    """A bandwidth as a float: real, finite and at least :data:`MIN_BANDWIDTH`.

    ``value`` may also be an array of them (returned as a float64 array). Errors name
    ``name``.
    """
    if isinstance(value, (bool, np.bool_)) or not (
            isinstance(value, numbers.Real) or isinstance(value, np.ndarray)):
        raise TypeError(f"{name} must be a positive float, got {value!r}.")
    h = np.asarray(value, dtype=np.float64)
    if not (np.all(np.isfinite(h)) and np.all(h > 0)):
        raise ValueError(f"{name} must be a positive finite float, got {value!r}.")
    if np.any(h < MIN_BANDWIDTH):
        raise ValueError(
            f"{name}={value!r} is too small: the Stein kernels need 1/{name}**4, which "
            f"overflows float64 below {MIN_BANDWIDTH:.3g}; rescale the data or give a larger "
            f"{name}.")
    return float(h) if h.ndim == 0 else h


def inverse_square(h):
    """:math:`1/h^2` of a bandwidth (or an array of them) without overflow in :math:`h^2`.

    Exactly 0 for :math:`h` beyond about 1e154, where the kernel is constant in float64.
    """
    return (1.0 / h) / h


class _RadialKernel:
    """Shared algebra of radial kernels; subclasses define ``_profile`` (the radial
    profile and its derivatives at a float64 array of squared distances)."""

    name = None
    code = -1

    def __init__(self, bandwidth=1.0):
        if isinstance(bandwidth, np.ndarray) and bandwidth.ndim > 0:
            raise TypeError(f"bandwidth must be a positive float, got {bandwidth!r}.")
        self.bandwidth = check_bandwidth(bandwidth)

    # parameters handed to the numba kernels: (code, p0, p1)
    def _params(self):
        raise NotImplementedError

    def profile(self, sqdist):
        """Return :math:`\\kappa(t), \\kappa'(t), \\kappa''(t)` at squared distances ``t``.

        Parameters
        ----------
        sqdist : array-like
            Squared distances :math:`t = \\|x - y\\|^2`.

        Returns
        -------
        k, k1, k2 : ndarray
            The radial profile and its first two derivatives in ``t``, shaped like
            ``sqdist``.
        """
        return self._profile(np.asarray(sqdist, dtype=np.float64))

    def _profile(self, t):
        """:meth:`profile` at a float64 array ``t`` of squared distances."""
        raise NotImplementedError

    def __call__(self, X, Y):
        """Kernel matrix :math:`k(x_i, y_j)`, shape ``(n, m)``.

        ``X`` and ``Y`` are finite arrays of points of the same width (one point may
        be given as a 1-D array).
        """
        X, Y = _points(X, Y)
        return _finite_result(self.profile(_sqdist(X, Y))[0])

    def grad_x(self, X, Y):
        """:math:`\\nabla_x k(x_i, y_j)`, shape ``(n, m, d)``.

        A convenience for small inputs (tests, plots); the discrepancy engines never
        form this array.
        """
        X, Y = _points(X, Y)
        _, k1, _ = self.profile(_sqdist(X, Y))
        return _finite_result(2.0 * k1[:, :, None] * (X[:, None, :] - Y[None, :, :]))

    def grad_y(self, X, Y):
        """:math:`\\nabla_y k(x_i, y_j)`, shape ``(n, m, d)`` (small inputs only)."""
        return -self.grad_x(X, Y)

    def trace_grad_xy(self, X, Y):
        """:math:`\\operatorname{tr}\\nabla_x\\nabla_y^\\top k(x_i, y_j)`, shape ``(n, m)``."""
        X, Y = _points(X, Y)
        t = _sqdist(X, Y)
        _, k1, k2 = self.profile(t)
        return _finite_result(-2.0 * X.shape[1] * k1 - 4.0 * t * k2)

    def stein(self, X, Y, SX, SY):
        r"""Langevin Stein kernel :math:`h_p(x_i, y_j)`, shape ``(n, m)``.

        .. math::

            h_p(x, y) = k\, s(x)^\top s(y) + s(x)^\top \nabla_y k + s(y)^\top \nabla_x k
            + \operatorname{tr}\nabla_x\nabla_y^\top k

        with ``SX``, ``SY`` the scores at the rows of ``X`` and ``Y``. Plain NumPy
        with ``(n, m)`` temporaries; the engines in :mod:`skstein.discrepancy` compute
        the same quantity in a fused parallel pass.
        """
        X, Y = _points(X, Y)
        SX, SY = _points(SX, SY, ("SX", "SY"))
        if SX.shape != X.shape or SY.shape != Y.shape:
            raise ValueError(f"SX and SY must have the shapes of X and Y, {X.shape} and "
                             f"{Y.shape}; got {SX.shape} and {SY.shape}.")
        t = _sqdist(X, Y)
        k, k1, k2 = self.profile(t)
        cross = (
            np.einsum("ij,ij->i", SX, X)[:, None]
            - SX @ Y.T
            - X @ SY.T
            + np.einsum("ij,ij->i", SY, Y)[None, :]
        )  # (s(x) - s(y)) . (x - y)
        return _finite_result(
            k * (SX @ SY.T) - 2.0 * k1 * cross - 2.0 * X.shape[1] * k1 - 4.0 * t * k2)

    def __repr__(self):
        return f"{type(self).__name__}(bandwidth={self.bandwidth!r})"

    def __eq__(self, other):
        return type(self) is type(other) and self._params() == other._params()

    def __hash__(self):
        return hash((type(self).__name__, self._params()))


class RBF(_RadialKernel):
    r"""Gaussian (RBF) kernel :math:`k(x, y) = \exp(-\|x - y\|^2 / (2h^2))`.

    Parameters
    ----------
    bandwidth : float, default=1.0
        The length scale :math:`h > 0`.
    """

    name = "rbf"
    code = 0

    def _params(self):
        return (self.code, self.bandwidth, 0.0)

    def _profile(self, sqdist):
        inv = 0.5 * inverse_square(self.bandwidth)
        k = np.exp(-sqdist * inv)
        k1 = -inv * k
        return k, k1, -inv * k1


class IMQ(_RadialKernel):
    r"""Inverse multi-quadric kernel :math:`k(x, y) = (1 + \|x - y\|^2 / h^2)^\beta`.

    Parameters
    ----------
    bandwidth : float, default=1.0
        The length scale :math:`h > 0`.
    beta : float, default=-0.5
        The exponent, in :math:`(-1, 0)` (Gorham & Mackey 2017 show that the KSD with
        this kernel detects non-convergence).
    """

    name = "imq"
    code = 1

    def __init__(self, bandwidth=1.0, beta=-0.5):
        super().__init__(bandwidth)
        if isinstance(beta, bool) or not isinstance(beta, numbers.Real):
            raise TypeError(f"beta must be a float in (-1, 0), got {beta!r}.")
        if not -1.0 < beta < 0.0:
            raise ValueError(f"beta must be in the open interval (-1, 0), got {beta!r}.")
        self.beta = float(beta)

    def _params(self):
        return (self.code, self.bandwidth, self.beta)

    def _profile(self, sqdist):
        inv = inverse_square(self.bandwidth)
        b = self.beta
        base = 1.0 + sqdist * inv
        k = base**b
        k1 = b * inv * k / base
        k2 = b * (b - 1.0) * inv * inv * k / (base * base)
        return k, k1, k2

    def __repr__(self):
        return f"IMQ(bandwidth={self.bandwidth!r}, beta={self.beta!r})"


def make_kernel(kernel, bandwidth, kernel_params=None):
    """Build a kernel object from its name, a resolved bandwidth and extra parameters.

    Parameters
    ----------
    kernel : {"rbf", "imq"}
    bandwidth : float
    kernel_params : dict or None
        Extra keyword arguments of the kernel (``{"beta": -0.3}`` for IMQ).
    """
    if kernel_params is not None and not isinstance(kernel_params, Mapping):
        raise TypeError(f"kernel_params must be a dict of kernel parameters or None, got "
                        f"{kernel_params!r}.")
    params = {} if kernel_params is None else dict(kernel_params)
    if kernel == "rbf":
        if params:
            raise ValueError(f"kernel_params {sorted(params)} are not parameters of the RBF kernel.")
        return RBF(bandwidth)
    if kernel == "imq":
        unknown = set(params) - {"beta"}
        if unknown:
            raise ValueError(f"kernel_params {sorted(unknown)} are not parameters of the IMQ kernel.")
        return IMQ(bandwidth, **params)
    raise ValueError(f"kernel must be one of {list(KERNELS)}, got {kernel!r}.")


def _points(X, Y, names=("X", "Y")):
    """``X`` and ``Y`` as finite 2-D float64 arrays of the same width (errors name them)."""
    out = []
    for A, name in zip((X, Y), names):
        refuse_masked(A, name)
        with named_errors(name):
            A = check_array(A, dtype=np.float64, order="C", ensure_2d=False,
                            ensure_all_finite=True, input_name=name)
        if A.ndim != 2:
            A = A.reshape(1, -1)
        out.append(A)
    X, Y = out
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"{names[0]} has {X.shape[1]} features but {names[1]} has "
                         f"{Y.shape[1]}.")
    return X, Y


def _finite_result(value):
    if not np.all(np.isfinite(value)):
        raise ValueError("the kernel values are not finite: X, Y (or the scores) or the "
                         "kernel's scale 1/bandwidth**2 overflow float64; rescale X and Y or "
                         "choose another bandwidth.")
    return value


def _sqdist(X, Y):
    X, Y = np.atleast_2d(X), np.atleast_2d(Y)
    with np.errstate(over="ignore", invalid="ignore"):
        d2 = (
            np.einsum("ij,ij->i", X, X)[:, None]
            + np.einsum("ij,ij->i", Y, Y)[None, :]
            - 2.0 * X @ Y.T
        )
    if not np.all(np.isfinite(d2)):
        # points beyond 1e154: the differences first (inf where the distance overflows)
        with np.errstate(over="ignore"):
            d2 = np.sum((X[:, None, :] - Y[None, :, :]) ** 2, axis=2)
    return np.maximum(d2, 0.0)


def _check_max_points(max_points):
    """``max_points``: None or an int >= 2 (a median needs a pair of rows)."""
    if max_points is not None:
        check_positive_int(max_points, "max_points", minimum=2)


def _subsample(X, max_points, random_state):
    _check_max_points(max_points)
    n = X.shape[0]
    if max_points is None or n <= max_points:
        return X
    rng = as_generator(random_state)
    return X[np.sort(rng.choice(n, size=max_points, replace=False))]


def median_bandwidth(X, *, max_points=2000, random_state=None):
    """Median heuristic: median of the pairwise distances ``||x_i - x_j||``, ``i < j``.

    Parameters
    ----------
    X : array of shape (n, d)
    max_points : int or None, default=2000
        Use a random subsample of this many rows (drawn with ``random_state``) when
        ``n`` is larger, so the heuristic costs at most ``O(max_points^2 d)``; at
        least 2.
    random_state : None, int or Generator
        Only used for the subsample.

    Returns
    -------
    float
        The bandwidth. Zero distances (repeated rows) are ignored if the median would
        otherwise be zero; a ``ValueError`` is raised if all rows coincide, if the
        distances overflow float64 or if the median is below :data:`MIN_BANDWIDTH`.
    """
    if namespace_of(X) is not None:
        return _device_scales(X, max_points, random_state)[0]
    return _host_scales(_subsample(check_samples(X), max_points, random_state))[0]


def _projection_rows(U, max_points, random_state, what):
    """Projections ``U`` as float64, subsampled to ``max_points`` rows; a ValueError that
    names ``what`` unless they form a 2-D array with at least 2 rows."""
    U = _subsample(np.asarray(U, dtype=np.float64), max_points, random_state)
    if U.ndim != 2 or U.shape[0] < 2:
        raise ValueError(f"{what} needs a 2-D array with at least 2 rows.")
    return U


def median_bandwidth_1d(U, *, max_points=1000, random_state=None):
    """Median heuristic per column: median of ``|u_i - u_j|``, ``i < j``, for each column of ``U``.

    Used by the sliced kernels, whose 1-D kernels act on the projections
    ``u = X g_k`` (one bandwidth per direction). As in :func:`median_bandwidth`,
    zero differences are ignored when the median would otherwise be zero. Runs in
    a parallel compiled pass (one column per iteration), ``O(m n^2)`` time.

    Parameters
    ----------
    U : array-like of shape (n, m)
        Projections, one column per direction.
    max_points : int, default=1000
        At most this many rows are used (a seeded subsample beyond).
    random_state : None, int or Generator
        Seeds the subsample.

    Returns
    -------
    ndarray of shape (m,)
    """
    out = projection_medians_1d(U, max_points=max_points, random_state=random_state)
    if np.any(out <= 0):
        raise ValueError(
            "all samples coincide along a direction (for instance, X is constant in a "
            "feature), so the median heuristic is undefined; give an explicit bandwidth."
        )
    check_min_median(out)
    return out


def projection_medians_1d(U, *, max_points=1000, random_state=None):
    """The per-column medians of :func:`median_bandwidth_1d`, with 0 for a column whose
    rows all coincide (no error)."""
    U = _projection_rows(U, max_points, random_state, "the median heuristic")
    _check_projections(U)
    n, m = U.shape
    # one thread for small inputs: waking the pool costs more than the work
    with numba_threads(1) if n * n * m < 2**21 else nullcontext():
        return median_abs_diff_columns(np.ascontiguousarray(U), np.empty(m))


def check_min_median(medians):
    """A ValueError when a per-direction median bandwidth is below :data:`MIN_BANDWIDTH`."""
    if np.any(medians < MIN_BANDWIDTH):
        raise ValueError(f"the median distance of the samples of X along a direction "
                         f"({medians.min():.3g}) is below the smallest bandwidth, "
                         f"{MIN_BANDWIDTH:.3g}; rescale X or give a bandwidth.")


def _check_projections(U):
    """A ValueError if the projections (or their differences) of the samples overflow."""
    if not np.all(np.isfinite(U)) or not np.all(np.isfinite(U.max(axis=0) - U.min(axis=0))):
        raise ValueError("the projections of the samples of X on the directions overflow "
                         "float64 (X is too large); rescale X.")


#: Matrix products of at least this many multiply-adds inside skstein's passes run by
#: blocks of rows on numba's threads (:func:`product_nt`); smaller ones are one
#: one-thread BLAS call.
POOLED_PRODUCT_MADDS = 2**21


def product_nt(A, B):
    """``A @ B.T`` in float64, C-contiguous: by blocks of rows of ``A`` on numba's threads,
    each a one-thread BLAS product (:func:`skstein._numba._blas.gemm_nt_blocks`), from
    :data:`POOLED_PRODUCT_MADDS` multiply-adds on; else one BLAS call.

    Inside skstein's computations BLAS runs on one thread (:mod:`skstein._threads`), so
    the products between the sliced passes (projections, Gram matrices of ``n`` points
    and ``m`` slices) would otherwise run on one core. The blocks (64 rows, a multiple
    of 64 beyond 4096 rows) depend on the shapes alone: the same numbers for any number
    of threads (with OpenBLAS, in every case tried, the same bits as one product;
    16-row blocks were not). On the development machine, 1000 x 100 x 100 to
    800 x 800 x 100 products took 1.0-1.2 times one BLAS call's time on one thread,
    0.6-0.8 times on two.
    """
    A = np.ascontiguousarray(A, dtype=np.float64)
    B = np.ascontiguousarray(B, dtype=np.float64)
    m, k = A.shape
    n = B.shape[0]
    if m * k * n < POOLED_PRODUCT_MADDS:
        return np.ascontiguousarray(A @ B.T)
    C = np.empty((m, n))
    with single_blas():
        gemm_nt_blocks(A, B, C, 64 * max(1, -(-m // 4096)))
    return C


def pairwise_distances_condensed(X):
    """The distances ``||x_i - x_j||``, ``i < j``, in the order of ``scipy``'s ``pdist``.

    One Gram product of the centred rows (:func:`product_nt`) and a parallel compiled pass (see
    :func:`skstein._numba.distances.condensed_distances`); agrees with ``pdist`` to
    about 1e-12 relative, with exact zeros for repeated rows. Beyond the float64 range
    the distances are not finite (without a warning: the callers check them).
    """
    X = np.asarray(X, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        Xc = np.ascontiguousarray(X - X.mean(axis=0))
        G = product_nt(Xc, Xc)    # on numba's threads from 2^21 multiply-adds on
    nx = np.ascontiguousarray(np.diagonal(G))
    n = X.shape[0]
    return condensed_distances(Xc, G, nx, np.empty(n * (n - 1) // 2))


def _finite_distances(X, name="X"):
    """Pairwise distances of the rows of ``X``; a ValueError naming ``name`` if they overflow."""
    d = pairwise_distances_condensed(X)
    if not np.all(np.isfinite(d)):
        raise ValueError(f"the pairwise distances of {name} overflow float64 (its values are too "
                         f"large); rescale {name}.")
    return d


#: Beyond this many values, order statistics come from the parallel bracketed
#: selection (:func:`skstein._numba.distances.select_ranks`), not a serial partition.
SELECT_MIN_VALUES = 2**16


def _order_statistics(d, ranks):
    """The ``ranks``-th smallest values of ``d`` (0-based, ascending), exactly as a
    partition gives them: by the parallel bracketed selection beyond
    :data:`SELECT_MIN_VALUES` values, else (or when its bracket misses) by
    partitioning ``d`` in place."""
    ranks = np.asarray(ranks, dtype=np.int64)
    if d.size > SELECT_MIN_VALUES and d.dtype == np.float64 and d.flags.c_contiguous:
        out = np.empty(ranks.size)
        if select_ranks(d, ranks, out):
            return out
    d.partition(ranks)
    return d[ranks]


def _median_of(d):
    """np.median of the finite values ``d`` (the same float), by :func:`_order_statistics`."""
    mid = d.size // 2
    if d.size % 2:
        return float(_order_statistics(d, [mid])[0])
    a, b = _order_statistics(d, [mid - 1, mid])
    return (float(a) + float(b)) / 2.0


def _positive_median(d, name="X"):
    """Median of the distances ``d`` (of the positive ones if that is 0); ``d`` is the
    caller's own array, possibly reordered in place (no copy of up to 2 million
    values)."""
    med = _median_of(d)
    if not med > 0:
        d = d[d > 0]
        if d.size == 0:
            raise ValueError(
                f"all samples coincide ({name} has no two distinct rows, or rows so close "
                "that their squared distances underflow float64), so the median "
                "heuristic is undefined; give an explicit bandwidth, or rescale "
                f"{name}.")
        med = float(np.median(d, overwrite_input=True))
    if med < MIN_BANDWIDTH:
        raise ValueError(f"the median distance of {name} ({med:.3g}) is below the smallest "
                         f"bandwidth, {MIN_BANDWIDTH:.3g}; rescale {name} or give a bandwidth.")
    return med


#: A kernel below this fraction of its peak between every two distinct points sees nothing.
VANISHING_KERNEL = 1e-12


def blind_kernels(X, kernels, max_points=1000):
    """Whether each kernel vanishes between every two distinct rows of ``X``.

    A kernel below :data:`VANISHING_KERNEL` of its peak at the closest two distinct
    rows is below it at every pair (the profiles decrease with the distance): its
    Stein kernel's off-diagonal terms are all zero, so its statistic, null and power
    criterion are zero whatever the data. The closest pair among the first 100 rows
    settles the usual case cheaply (no kernel blind there, none blind at all);
    otherwise the check runs on at most ``max_points`` evenly spaced rows
    (``O(max_points^2 d)``).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The points the kernels compare.
    kernels : sequence of RBF or IMQ
        The kernels to check.
    max_points : int, default=1000
        Most rows of the full check (evenly spaced).

    Returns
    -------
    blind : ndarray of bool of shape (n_kernels,)
        Whether each kernel vanishes between every two distinct rows.
    t : float or None
        The squared distance of the closest pair checked (None when no two rows
        differ).
    """
    X = np.asarray(X, dtype=np.float64)
    peak = np.array([float(k.profile(np.zeros(1))[0][0]) for k in kernels])

    def blind_at(rows):
        d = pairwise_distances_condensed(rows)
        d = d[(d > 0) & np.isfinite(d)]
        if d.size == 0:
            return np.zeros(len(kernels), dtype=bool), None
        t = float(np.min(d)) ** 2
        return np.array([float(k.profile(np.array([t]))[0][0]) < VANISHING_KERNEL * p
                         for k, p in zip(kernels, peak)]), t

    blind, t = blind_at(X[:100])
    if not blind.any():
        return blind, t
    if X.shape[0] > max_points:
        X = X[np.linspace(0, X.shape[0] - 1, max_points).astype(np.intp)]
    return blind_at(X)


def warn_vanishing_kernels(X, kernels, name="bandwidth", max_points=1000, advice=None):
    """Warn when every kernel vanishes between every two distinct rows of ``X``.

    A bandwidth far below the distances between the samples (a float on the wrong
    scale, or bandwidths fitted to data of a far smaller scale) leaves a Stein kernel
    whose off-diagonal terms are all zero: the statistic and its null are then zero
    and the p-value is one, whatever the data (see :func:`blind_kernels`). ``advice``
    ends the message (default: use a bandwidth rule, or one on the data's scale).
    Returns whether it warned.
    """
    blind, t = blind_kernels(X, kernels, max_points)
    if blind.all():
        h = [k.bandwidth for k in kernels]
        n = min(np.shape(X)[0], max_points)
        warnings.warn(
            (f"{name}={h[0]:.3g}" if len(h) == 1 else
             f"{name} (from {min(h):.3g} to {max(h):.3g})") +
            " is far below the distances between the "
            f"samples (the closest two of {n} are {np.sqrt(t):.3g} apart): the "
            f"kernel is below {VANISHING_KERNEL:g} of its peak between every two distinct "
            "points, so the test cannot see anything. " + (
                advice or "Use bandwidth='aggregate' or 'median', or a bandwidth on the "
                "scale of the data."), UserWarning,
            stacklevel=caller_stacklevel())
        return True
    return False


#: Fraction of the pairwise distances below the smallest bandwidth of the collection.
GRID_QUANTILE = 0.01
#: The largest bandwidth of the collection, as a multiple of the median heuristic.
GRID_TOP = 2.0


def bandwidth_grid(X, n_bandwidths=10, *, max_points=2000, random_state=None):
    r"""Geometric collection of bandwidths from the cluster scale to the data scale.

    ``n_bandwidths`` values :math:`h_1 < \dots < h_L` in geometric progression from
    :math:`h_1`, the 1st percentile of the pairwise distances :math:`\|x_i - x_j\|`
    (the scale below which a kernel compares almost no pairs: within a cluster of the
    data, if there are clusters), to :math:`h_L = 2 h_{med}`, twice the median
    heuristic (the scale of the whole sample; much wider kernels see only the lowest
    moments of the data). In low dimensions or for clustered data the range spans one
    to two orders of magnitude; in high dimensions, where distances concentrate, it
    narrows (about ``[0.8 h_med, 2 h_med]`` for standard normal data in 100
    dimensions) and neighbouring bandwidths give nearly the same test, so an
    aggregated test pays little for them.

    Parameters
    ----------
    X : array of shape (n, d)
    n_bandwidths : int, default=10
        ``L``; with 1 the collection is the median heuristic alone.
    max_points : int, default=2000
        Both scales are computed on a seeded subsample of this many rows.
    random_state : None, int or Generator
        Only used for the subsample.

    Returns
    -------
    ndarray of shape (n_bandwidths,)
    """
    quantile = None if n_bandwidths == 1 else GRID_QUANTILE
    if namespace_of(X) is not None:
        med, low = _device_scales(X, max_points, random_state, quantile)
    else:
        med, low = _host_scales(_subsample(check_samples(X), max_points, random_state),
                                quantile)
    if n_bandwidths == 1:
        return np.array([med])
    lo = min(max(low, MIN_BANDWIDTH), med)
    return np.geomspace(lo, GRID_TOP * med, n_bandwidths)


def _host_scales(X, quantile=None):
    """``(median, quantile)`` of the pairwise distances of the float64 rows ``X`` (the
    median of the positive ones if it is zero; the quantile of the positive ones, None
    without ``quantile``), on the host."""
    d = _finite_distances(X)
    med = _positive_median(d)
    if quantile is None:
        return med, None
    pos = d if np.all(d > 0) else d[d > 0]
    m = pos.size
    prev = int(np.floor((m - 1) * quantile))
    a, b = _order_statistics(pos, [prev, min(prev + 1, m - 1)])
    return med, _interpolated(float(a), float(b), m, quantile)


def _sorted_median(v, m):
    """np.median of the ``m`` sorted values ``v`` (an array of any library)."""
    mid = m // 2
    return float(v[mid]) if m % 2 else (float(v[mid - 1]) + float(v[mid])) / 2.0


def _interpolated(a, b, m, q):
    """np.quantile's linear interpolation between ``a`` and ``b``, the order statistics
    of ranks ``floor((m - 1) q)`` and the next of ``m`` values: the same arithmetic,
    so the same float."""
    virtual = (m - 1) * q
    gamma = virtual - int(np.floor(virtual))
    diff = b - a
    return b - diff * (1.0 - gamma) if gamma >= 0.5 else a + diff * gamma


def _sorted_quantile(v, m, q):
    """np.quantile(v, q) (linear interpolation) of the ``m`` sorted values ``v``."""
    prev = int(np.floor((m - 1) * q))
    return _interpolated(float(v[prev]), float(v[min(prev + 1, m - 1)]), m, q)


#: Up to this many features the device sums the squared differences of each pair
#: directly (one pass per feature); beyond, it takes them from the Gram matrix.
DEVICE_DIRECT_MAX_DIM = 32


def _device_squared_distances(X, xp, device):
    """The squared distances of the pairs ``i < j`` of rows of ``X``, unordered, on its
    device: direct sums over at most :data:`DEVICE_DIRECT_MAX_DIM` features, else the
    Gram identity with the pairs closer than ``RECOMPUTE_BELOW`` of their norms (where
    it loses its relative accuracy) summed directly, as the host's pass does. None
    when those pairs are too many to gather (then the host computes)."""
    n, d = X.shape
    Xc = X - xp.mean(X, axis=0)
    rows = xp.arange(n, device=device)
    upper = rows[:, None] < rows[None, :]
    if d <= DEVICE_DIRECT_MAX_DIM:
        T = xp.zeros((n, n), dtype=X.dtype, device=device)
        for k in range(d):
            diff = Xc[:, k:k + 1] - xp.reshape(Xc[:, k], (1, n))
            T += diff * diff
        return T[upper]
    nx = xp.sum(Xc * Xc, axis=1)
    scale = nx[:, None] + nx[None, :]
    T = scale - 2.0 * (Xc @ Xc.T)
    close = upper & (T <= RECOMPUTE_BELOW * scale)
    n_close = int(xp.sum(xp.astype(close, xp.int64)))
    if n_close == 0:
        return T[upper]
    if n_close * d > 2**25:
        return None
    i, j = xp.nonzero(close)
    diff = xp.take(Xc, i, axis=0) - xp.take(Xc, j, axis=0)
    return xp.concat([T[upper & ~close], xp.sum(diff * diff, axis=1)])


def _device_scales(X, max_points, random_state, quantile=None):
    """``(median, quantile)`` of the pairwise distances of (a subsample of) an Array API
    array ``X``, computed and sorted on its device: what :func:`median_bandwidth` and
    :func:`bandwidth_grid` take from the host's distances (the median, of the positive
    distances if it is zero, and the quantile of the positive ones), the same order
    statistics with the host's errors.
    """
    import array_api_compat

    _check_max_points(max_points)
    xp = array_api_compat.array_namespace(X)
    device = array_api_compat.device(X)
    if X.ndim != 2 or X.shape[0] < 2:
        raise ValueError(f"X must be a 2-D array with at least 2 rows, got shape "
                         f"{tuple(X.shape)}.")
    if not bool(xp.all(xp.isfinite(X))):
        raise ValueError("Input X contains NaN or infinity.")
    n = X.shape[0]
    if max_points is not None and n > max_points:
        rng = as_generator(random_state)
        idx = np.sort(rng.choice(n, size=max_points, replace=False))
        X = xp.take(X, xp.asarray(idx, device=device), axis=0)
    T = _device_squared_distances(X, xp, device)
    if T is None or not bool(xp.all(xp.isfinite(T))):
        # overflow (the host names it) or too many near-repeated rows: the host's pass
        return _host_scales(to_host(X).astype(np.float64), quantile)
    v = xp.sqrt(xp.sort(xp.clip(T, 0.0, None)))
    m = v.shape[0]
    zeros = int(xp.sum(xp.astype(v == 0, xp.int64)))
    if zeros == m:
        _positive_median(np.zeros(1))   # raises the host's error
    med = _sorted_median(v, m)
    if not med > 0:
        med = _sorted_median(v[zeros:], m - zeros)
    if med < MIN_BANDWIDTH:
        _positive_median(np.array([med]))   # raises the host's error
    return med, (None if quantile is None else _sorted_quantile(v[zeros:], m - zeros, quantile))


#: ``KSDTest(whiten="auto")`` aggregates the whitened geometry with the data's own (and
#: ``MaxSKSDTest(whiten="auto")`` searches in both) when the Ledoit-Wolf covariance of
#: the data has a condition number of at least this (:func:`auto_whitening`): the
#: standard deviation along the widest direction at least twice that along the
#: narrowest. Isotropic samples stay below it (at most 2.6 in 50 samples each of 30 to
#: 1000 standard normal points in 2 to 100 dimensions); at a ratio of 16 the Euclidean
#: kernels already miss a shift along the widest axis that the whitened ones find.
AUTO_WHITEN_CONDITION = 4.0


def flat_directions(A, G, projections=None):
    r"""Whether the rows of ``A`` coincide along each direction (row of ``G``), up to
    rounding: a spread of at most 64 machine epsilons of the largest row norm times the
    direction's norm, :math:`\max_i \|a_i\| \, \|g\|`. That bounds the sum of the
    magnitudes of a projection's products, :math:`\sum_k |a_{ik} g_k|`, the scale of its
    rounding error (along a direction orthogonal to two equal columns every projection
    is rounding, small against that sum but not against the largest projection), and
    also covers coordinates that carry rounding from an earlier product, such as
    whitened ones, whose sum of products is itself of the size of the rounding.
    ``projections``: ``A @ G.T`` when the caller has it already."""
    tol = 64 * np.finfo(np.float64).eps
    P = A @ G.T if projections is None else projections
    scale = np.max(np.linalg.norm(A, axis=1)) * np.linalg.norm(G, axis=1)
    return np.ptp(P, axis=0) <= tol * scale


def auto_whitening(X, covariance="ledoit-wolf"):
    """The :func:`whitening` of ``X`` where ``whiten="auto"`` takes it, else None.

    It is taken when the condition number of the Ledoit-Wolf covariance
    (:func:`whitening_condition`) is at least :data:`AUTO_WHITEN_CONDITION` and the
    rows of ``X`` do not coincide, up to rounding, along an axis of that covariance (a
    sample with no more rows than columns, or with equal or collinear columns): there the
    shrinkage alone sets the scale, and whitened coordinates would magnify rounding.

    Parameters
    ----------
    X : array of shape (n, d)
    covariance : {"ledoit-wolf", "sample", "held-out"}, default="ledoit-wolf"
        The covariance of the whitening returned (:func:`whitening`); the rule above
        takes the Ledoit-Wolf covariance whatever it is.

    Returns
    -------
    tuple (A, B) of ndarrays of shape (d, d), or None
    """
    X = check_samples(X)
    if X.shape[0] <= X.shape[1]:
        return None   # the centred rows span at most n - 1 < d dimensions: flat
    white = whitening(X)
    if whitening_condition(white) < AUTO_WHITEN_CONDITION:
        return None
    axes = white[0] / np.linalg.norm(white[0], axis=0)   # the eigenvectors, columns
    if np.any(flat_directions(X, axes.T)):
        return None
    return white if covariance == "ledoit-wolf" else whitening(X, covariance)


def whitening_condition(whitening):
    """The condition number of the covariance behind a :func:`whitening`.

    Parameters
    ----------
    whitening : tuple (A, B) of ndarrays of shape (d, d)
        The output of :func:`whitening`.

    Returns
    -------
    float
        The ratio of the largest eigenvalue of the Ledoit-Wolf covariance to its
        smallest (after the raises of :func:`whitening` along flat axes and to its
        floor).
    """
    norms = np.linalg.norm(whitening[0], axis=0)   # the columns of A: 1 / sqrt(eigenvalue)
    return float((norms.max() / norms.min()) ** 2)


def ledoit_wolf_covariance(X):
    r"""The Ledoit-Wolf shrunk covariance of the rows of ``X``.

    With the centred rows :math:`x_k`, the sample covariance :math:`S = \frac1n \sum_k
    x_k x_k^\top` and :math:`\mu = \operatorname{tr} S / d`, it is :math:`(1 - s) S + s
    \mu I` with the shrinkage :math:`s = \min(\bar\beta, \delta) / \delta`, where
    :math:`\delta = \|S - \mu I\|_F^2 / d` and :math:`\bar\beta = \frac{1}{n^2 d}
    \sum_k \|x_k x_k^\top - S\|_F^2 = \frac{1}{n d} \big(\frac1n \sum_k
    \|x_k\|^4 - \|S\|_F^2\big)` (Ledoit & Wolf 2004); :math:`s = 0` where
    :math:`\bar\beta \le 0` or :math:`d = 1`. It is
    :func:`sklearn.covariance.ledoit_wolf`'s estimate, up to rounding, without its
    input checks, which cost a millisecond per call where a Monte Carlo null
    whitens a thousand samples.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Finite samples (not checked).

    Returns
    -------
    ndarray of shape (d, d)
    """
    S, shrinkage, mu = _ledoit_wolf_parts(X)
    if shrinkage == 0.0:
        return S
    C = (1.0 - shrinkage) * S
    C.flat[::X.shape[1] + 1] += shrinkage * mu
    return C


def _ledoit_wolf_parts(X):
    """``(S, s, mu)`` of :func:`ledoit_wolf_covariance`: the sample covariance (divided
    by ``n``), the shrinkage (0 for one column) and the mean eigenvalue."""
    n, d = X.shape
    Xc = X - X.mean(axis=0)
    S = (Xc.T @ Xc) / n
    mu = np.trace(S) / d
    if d == 1:
        return S, 0.0, mu
    S_norm2 = float(np.sum(S * S))
    delta = (S_norm2 - 2.0 * mu * np.trace(S) + d * mu * mu) / d
    row_norm2 = np.einsum("ij,ij->i", Xc, Xc)
    beta = (float(np.dot(row_norm2, row_norm2)) / n - S_norm2) / (n * d)
    beta = min(beta, delta)
    return S, (0.0 if beta <= 0.0 else beta / delta), mu


#: The covariance estimates of :func:`whitening`.
COVARIANCES = ("ledoit-wolf", "sample", "held-out")

#: Folds of ``whitening(X, covariance="held-out")``.
HELD_OUT_FOLDS = 5


def _sample_covariance(X):
    """The sample covariance of the rows of ``X``, divided by ``n``."""
    Xc = X - X.mean(axis=0)
    return (Xc.T @ Xc) / X.shape[0]


def _held_out_loglik(w, Z):
    """The Gaussian log-likelihood, up to a constant, of held-out rows whose centred
    coordinates along a covariance's eigenvectors are the rows of ``Z``, under its
    eigenvalues ``w``; -inf where the covariance is singular in float64."""
    if not (np.all(np.isfinite(w)) and w[-1] > 0.0 and w[0] > 1e-12 * w[-1]):
        return -np.inf
    return float(-0.5 * (np.sum(Z * Z / w) + Z.shape[0] * np.sum(np.log(w))))


def _sample_predicts_better(X):
    """Whether the sample covariance gives held-out rows of ``X`` a larger Gaussian
    log-likelihood than the Ledoit-Wolf covariance (:func:`whitening`). The two share
    their eigenvectors (Ledoit-Wolf's is ``(1 - s) S + s mu I``), so one
    eigendecomposition a fold serves both."""
    n, d = X.shape
    folds = np.arange(n) % HELD_OUT_FOLDS
    if np.count_nonzero(folds != 0) <= d:  # fold 0 is the largest, its complement least
        return False  # a training fold's sample covariance is singular
    total = np.zeros(2)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for f in range(HELD_OUT_FOLDS):
            train, test = X[folds != f], X[folds == f]
            S, shrinkage, mu = _ledoit_wolf_parts(train)
            w, V = np.linalg.eigh(S)
            Z = (test - train.mean(axis=0)) @ V
            total += [_held_out_loglik((1.0 - shrinkage) * w + shrinkage * mu, Z),
                      _held_out_loglik(w, Z)]
    return bool(np.isfinite(total[1]) and total[1] > total[0])


def whitening(X, covariance="ledoit-wolf"):
    r"""The change of coordinates that whitens ``X``, and its action on scores.

    With the covariance estimate :math:`\hat C = V \operatorname{diag}(w) V^\top` of
    ``X`` (by default the Ledoit-Wolf shrunk covariance,
    :func:`ledoit_wolf_covariance`; shrinkage keeps it invertible when ``n`` is close
    to ``d``), :math:`A = V \operatorname{diag}(w)^{-1/2}` maps the samples to ``X @
    A``, with sample covariance (close to) the identity, and :math:`B = V
    \operatorname{diag}(w)^{1/2}` maps the scores: if ``S`` holds :math:`\nabla \log
    p` at the rows of ``X``, ``S @ B`` holds the score of the transformed model at the
    rows of ``X @ A`` (the chain rule; :math:`A B^\top = I`). A radial kernel on the
    whitened points is the Mahalanobis kernel :math:`\kappa(\|x - y\|^2_{\hat
    C^{-1}})` on the original ones, so a Stein discrepancy computed there tests the
    same hypothesis with a kernel fitted to the data's correlations and scales.

    Ledoit-Wolf shrinkage adds a share of the mean eigenvalue to every eigenvalue. Where
    the scales of ``X`` differ by orders of magnitude that share can exceed the
    smallest variances many times over, and the whitened coordinates are far from
    white along the narrow axes (user guide, "Bandwidths").
    ``covariance="held-out"`` then takes the plain sample covariance instead: of the
    two estimates, the one under which held-out rows are more likely.
    :class:`~skstein.KSDTest`, the direction search of :class:`~skstein.MaxSKSDTest` and
    :class:`~skstein.PolynomialKSDTest` whiten with it; the other estimators with
    Ledoit-Wolf's.

    Parameters
    ----------
    X : array of shape (n, d)
    covariance : {"ledoit-wolf", "sample", "held-out"}, default="ledoit-wolf"
        The covariance estimate. ``"sample"``: the plain sample covariance (divided by
        ``n``; it needs more rows than columns). ``"held-out"``: of the Ledoit-Wolf
        and the sample covariance, the one with the larger Gaussian log-likelihood of
        held-out rows, summed over 5 folds (row ``i`` in fold ``i mod 5``, each
        estimated on the other four); the Ledoit-Wolf covariance where a training
        fold's sample covariance is singular, and on ties. Deterministic: no random
        numbers.

    Returns
    -------
    A, B : ndarrays of shape (d, d)
        Along an axis of :math:`\hat C` on which the rows of ``X`` coincide up to
        rounding (:func:`flat_directions`: equal or collinear columns, or fewer rows
        than columns), the eigenvalue is raised to the mean eigenvalue (the shrinkage
        target), so that the whitened coordinates do not magnify rounding; eigenvalues
        below ``1e-12`` times the largest are raised to it.
    """
    if covariance not in COVARIANCES:
        raise ValueError(f"covariance must be one of {COVARIANCES}, got {covariance!r}.")
    X = check_samples(X)
    if covariance == "sample" and X.shape[0] <= X.shape[1]:
        raise ValueError(f"covariance='sample' needs more rows than columns in X, got "
                         f"{X.shape[0]} rows and {X.shape[1]} columns; take "
                         f"covariance='ledoit-wolf'.")
    # the shrinkage squares the covariance's entries (fourth powers of X): far from
    # unit scale, X is scaled by a power of two first, which changes no rounding
    with np.errstate(over="ignore"):
        top = float(np.max(np.abs(X - X.mean(axis=0))))
    if not np.isfinite(top):
        raise ValueError("the deviations of X from its mean overflow float64, so X cannot "
                         "be whitened; rescale X.")
    k = power_of_two_exponent(top, 60)
    Xs = np.ldexp(X, -k)
    if covariance == "ledoit-wolf" or (covariance == "held-out"
                                       and not _sample_predicts_better(Xs)):
        C = ledoit_wolf_covariance(Xs)
    else:
        C = _sample_covariance(Xs)
    with np.errstate(over="ignore"):
        C = np.ldexp(C, 2 * k)
    if not np.all(np.isfinite(C)):
        raise ValueError("the covariance of X overflows float64, so X cannot be whitened; "
                         "rescale X.")
    w, V = np.linalg.eigh(C)
    if not (np.all(np.isfinite(w)) and w[-1] > 0):
        if top > 0.0:  # distinct rows whose squared deviations underflow
            raise ValueError(f"the covariance of X underflows float64 (its rows deviate "
                             f"from their mean by at most {top:.3g}), so X cannot be "
                             "whitened; rescale X.")
        raise ValueError("all samples coincide (X has no two distinct rows), so X cannot "
                         "be whitened.")
    flat = flat_directions(X, V.T)
    if np.all(flat):
        raise ValueError("all samples coincide up to rounding (X has no two distinct "
                         "rows), so X cannot be whitened.")
    # along an axis where X has no spread, only the shrinkage sets the variance, and a
    # small one would magnify rounding; the mean variance (the shrinkage target) does not
    w[flat] = np.maximum(w[flat], np.mean(w))
    w = np.maximum(w, 1e-12 * w[-1])
    return V / np.sqrt(w), V * np.sqrt(w)


def bandwidth_factor_grid(U, n_factors=10, *, max_points=1000, random_state=None):
    r"""Geometric factors for the per-direction bandwidths of a sliced kernel.

    The sliced kernels act on 1-D projections ``U[:, k]``, each with its own median
    bandwidth :math:`h_k`; an aggregated sliced test multiplies all of them by a
    common factor :math:`c_l`. The factors run in geometric progression from
    :math:`c_1` to :math:`c_L = 2`, where :math:`c_1` is the median over the
    directions of (1st percentile / median) of the pairwise differences
    :math:`|u_{ik} - u_{jk}|`, the same range as :func:`bandwidth_grid` in one
    dimension: from the scale of a cluster of the projected data to that of all of it.

    Parameters
    ----------
    U : array of shape (n, m)
        Projections (one column per direction).
    n_factors : int, default=10
        With 1 the factor is 1 (the median bandwidths).
    max_points : int, default=1000
        At most this many rows are used (a seeded subsample beyond), as in
        :func:`median_bandwidth_1d`.
    random_state : None, int or Generator
        Seeds the subsample.

    Returns
    -------
    ndarray of shape (n_factors,)
    """
    U = _projection_rows(U, max_points, random_state, "a factor grid")
    if n_factors == 1:
        return np.ones(1)
    _check_projections(U)
    U = np.ascontiguousarray(U)
    med = median_abs_diff_columns(U, np.empty(U.shape[1]))
    low = quantile_abs_diff_columns(U, GRID_QUANTILE, np.empty(U.shape[1]))
    ok = (med > 0) & (low > 0)
    if not np.any(ok):
        raise ValueError(
            "all samples coincide along every direction, so no bandwidth factor can be "
            "chosen; give explicit bandwidths.")
    c1 = min(float(np.median(low[ok] / med[ok])), 1.0)
    return np.geomspace(c1, GRID_TOP, n_factors)
