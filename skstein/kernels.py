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
from contextlib import nullcontext

import numpy as np

from ._numba import numba_threads
from ._numba.distances import condensed_distances
from ._numba.sliced import median_abs_diff_columns, quantile_abs_diff_columns
from ._random import as_generator

__all__ = [
    "RBF",
    "IMQ",
    "make_kernel",
    "median_bandwidth",
    "median_bandwidth_1d",
    "bandwidth_grid",
    "bandwidth_factor_grid",
    "KERNELS",
]

KERNELS = ("rbf", "imq")


class _RadialKernel:
    """Shared algebra of radial kernels; subclasses define :meth:`profile`."""

    name = None
    code = -1

    def __init__(self, bandwidth=1.0):
        if isinstance(bandwidth, bool) or not isinstance(bandwidth, numbers.Real):
            raise TypeError(f"bandwidth must be a positive float, got {bandwidth!r}.")
        if not (np.isfinite(bandwidth) and bandwidth > 0):
            raise ValueError(f"bandwidth must be a positive finite float, got {bandwidth!r}.")
        self.bandwidth = float(bandwidth)

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
        raise NotImplementedError

    def __call__(self, X, Y):
        """Kernel matrix :math:`k(x_i, y_j)`, shape ``(n, m)``."""
        return self.profile(_sqdist(X, Y))[0]

    def grad_x(self, X, Y):
        """:math:`\\nabla_x k(x_i, y_j)`, shape ``(n, m, d)``.

        A convenience for small inputs (tests, plots); the discrepancy engines never
        form this array.
        """
        X, Y = np.atleast_2d(X), np.atleast_2d(Y)
        _, k1, _ = self.profile(_sqdist(X, Y))
        return 2.0 * k1[:, :, None] * (X[:, None, :] - Y[None, :, :])

    def grad_y(self, X, Y):
        """:math:`\\nabla_y k(x_i, y_j)`, shape ``(n, m, d)`` (small inputs only)."""
        return -self.grad_x(X, Y)

    def trace_grad_xy(self, X, Y):
        """:math:`\\operatorname{tr}\\nabla_x\\nabla_y^\\top k(x_i, y_j)`, shape ``(n, m)``."""
        X, Y = np.atleast_2d(X), np.atleast_2d(Y)
        t = _sqdist(X, Y)
        _, k1, k2 = self.profile(t)
        return -2.0 * X.shape[1] * k1 - 4.0 * t * k2

    def stein(self, X, Y, SX, SY):
        r"""Langevin Stein kernel :math:`h_p(x_i, y_j)`, shape ``(n, m)``.

        .. math::

            h_p(x, y) = k\, s(x)^\top s(y) + s(x)^\top \nabla_y k + s(y)^\top \nabla_x k
            + \operatorname{tr}\nabla_x\nabla_y^\top k

        with ``SX``, ``SY`` the scores at the rows of ``X`` and ``Y``. Plain NumPy
        with ``(n, m)`` temporaries; the engines in :mod:`skstein.discrepancy` compute
        the same quantity in a fused parallel pass.
        """
        X, Y = np.atleast_2d(X), np.atleast_2d(Y)
        t = _sqdist(X, Y)
        k, k1, k2 = self.profile(t)
        cross = (
            np.einsum("ij,ij->i", SX, X)[:, None]
            - SX @ Y.T
            - X @ SY.T
            + np.einsum("ij,ij->i", SY, Y)[None, :]
        )  # (s(x) - s(y)) . (x - y)
        return k * (SX @ SY.T) - 2.0 * k1 * cross - 2.0 * X.shape[1] * k1 - 4.0 * t * k2

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
        sqdist = np.asarray(sqdist, dtype=np.float64)
        inv = 1.0 / (2.0 * self.bandwidth**2)
        k = np.exp(-sqdist * inv)
        k1 = -inv * k
        return k, k1, inv * inv * k


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
        sqdist = np.asarray(sqdist, dtype=np.float64)
        inv = 1.0 / self.bandwidth**2
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


def _sqdist(X, Y):
    X, Y = np.atleast_2d(X), np.atleast_2d(Y)
    d2 = (
        np.einsum("ij,ij->i", X, X)[:, None]
        + np.einsum("ij,ij->i", Y, Y)[None, :]
        - 2.0 * X @ Y.T
    )
    return np.maximum(d2, 0.0)


def _subsample(X, max_points, random_state):
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
        ``n`` is larger, so the heuristic costs at most ``O(max_points^2 d)``.
    random_state : None, int or Generator
        Only used for the subsample.

    Returns
    -------
    float
        The bandwidth. Zero distances (repeated rows) are ignored if the median would
        otherwise be zero; a ``ValueError`` is raised if all rows coincide.
    """
    X = _subsample(np.asarray(X, dtype=np.float64), max_points, random_state)
    if X.shape[0] < 2:
        raise ValueError("the median heuristic needs at least 2 samples.")
    d = pairwise_distances_condensed(X)
    return _positive_median(d)


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
    U = _subsample(np.asarray(U, dtype=np.float64), max_points, random_state)
    if U.ndim != 2 or U.shape[0] < 2:
        raise ValueError("the median heuristic needs a 2-D array with at least 2 rows.")
    n, m = U.shape
    # one thread for small inputs: waking the pool costs more than the work
    with numba_threads(1) if n * n * m < 2**21 else nullcontext():
        out = median_abs_diff_columns(np.ascontiguousarray(U), np.empty(m))
    if np.any(out <= 0):
        raise ValueError(
            "all samples coincide along a direction, so the median heuristic is undefined; "
            "give an explicit bandwidth."
        )
    return out


def pairwise_distances_condensed(X):
    """The distances ``||x_i - x_j||``, ``i < j``, in the order of ``scipy``'s ``pdist``.

    One BLAS Gram product of the centred rows and a parallel compiled pass (see
    :func:`skstein._numba.distances.condensed_distances`); agrees with ``pdist`` to
    about 1e-12 relative, with exact zeros for repeated rows.
    """
    X = np.asarray(X, dtype=np.float64)
    Xc = np.ascontiguousarray(X - X.mean(axis=0))
    G = Xc @ Xc.T
    nx = np.ascontiguousarray(np.diagonal(G))
    n = X.shape[0]
    return condensed_distances(Xc, G, nx, np.empty(n * (n - 1) // 2))


def _positive_median(d):
    med = float(np.median(d))
    if med > 0:
        return med
    d = d[d > 0]
    if d.size == 0:
        raise ValueError(
            "all samples coincide, so the median heuristic is undefined; give an explicit bandwidth."
        )
    return float(np.median(d))


#: Fraction of the pairwise distances below the smallest bandwidth of the collection.
GRID_QUANTILE = 0.01


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
    X = _subsample(np.asarray(X, dtype=np.float64), max_points, random_state)
    if X.shape[0] < 2:
        raise ValueError("a bandwidth collection needs at least 2 samples.")
    d = pairwise_distances_condensed(X)
    med = _positive_median(d)
    if n_bandwidths == 1:
        return np.array([med])
    pos = d[d > 0]
    lo = min(float(np.quantile(pos, GRID_QUANTILE)), med)
    return np.geomspace(lo, 2.0 * med, n_bandwidths)


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
    U = _subsample(np.asarray(U, dtype=np.float64), max_points, random_state)
    if U.ndim != 2 or U.shape[0] < 2:
        raise ValueError("a factor grid needs a 2-D array with at least 2 rows.")
    if n_factors == 1:
        return np.ones(1)
    U = np.ascontiguousarray(U)
    med = median_abs_diff_columns(U, np.empty(U.shape[1]))
    low = quantile_abs_diff_columns(U, GRID_QUANTILE, np.empty(U.shape[1]))
    ok = (med > 0) & (low > 0)
    if not np.any(ok):
        raise ValueError(
            "all samples coincide along every direction, so no bandwidth factor can be "
            "chosen; give explicit bandwidths.")
    c1 = min(float(np.median(low[ok] / med[ok])), 1.0)
    return np.geomspace(c1, 2.0, n_factors)
