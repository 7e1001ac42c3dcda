r"""Functional API: discrete Stein operators and their kernel Stein discrepancies.

Discrete samples are integer arrays ``X`` of shape ``(n, D)`` with values in
:math:`\{0, \dots, L_j - 1\}` (the model's ``n_values``); a shift
:math:`x \pm e_j` moves coordinate ``j`` by one, cyclically.

Operators
---------
* ``"difference"`` (Yang, Liu, Rao & Neville 2018): with
  :math:`s_j(x) = p(x + e_j)/p(x) - 1` and :math:`\Delta_j f(x) = f(x) - f(x - e_j)`,
  :math:`(\mathcal{A} f)(x) = \sum_j s_j(x) f_j(x) + \Delta_j f_j(x)`, whose
  expectation under :math:`p` vanishes by summation by parts.
* ``"zanella-barker"``: the generator of a Markov jump process with Zanella's (2020)
  locally balanced rates for Barker's balancing function :math:`g(t) = t / (1 + t)`,
  :math:`(\mathcal{A} f)(x) = \sum_j \sum_{s = \pm 1} w_{s,j}(x)(f(x + s e_j) - f(x))`,
  :math:`w_{s,j}(x) = g(p(x + s e_j)/p(x)) = p(x + s e_j) / (p(x) + p(x + s e_j))
  \in [0, 1]`; :math:`E_p \mathcal{A} f = 0` because :math:`p(x) w_{s,j}(x)` is
  symmetric in :math:`x` and :math:`x + s e_j`.

The difference score blows up where :math:`p(x)` is small and :math:`p(x + e_j)` is
not (a rare value beside a frequent one); the Zanella-Barker weights never exceed 1.
The default, when a model is discrete and no operator is named, is
``"zanella-barker"`` (:data:`DEFAULT_OPERATOR`).

Models
------
A model is discrete when it has an ``n_values`` attribute (an int ``L`` or an array of
``D`` ints, each at least 2). It supplies the probability ratios through either

* ``log_ratio(X, shift)`` (exact models): the ``(n, D)`` array of
  :math:`\log p(x + \mathrm{shift}\, e_j) - \log p(x)` for ``shift`` in ``{+1, -1}``
  (``-inf`` where the shifted point has probability 0); or
* ``posterior_coefficients(X, operator, n_samples, burn_in, random_state)`` (latent
  models, e.g. :class:`skstein.distributions.LDA`): estimates from posterior draws,
  shape ``(1, n, D)`` holding :math:`p(x + e_j)/p(x)` for ``"difference"`` and
  ``(2, n, D)`` holding the weights of the shifts ``+1`` and ``-1`` for
  ``"zanella-barker"``. For :class:`~skstein.distributions.LDA` the weights take one
  Gibbs chain per word and shift, ``2 D`` times the sampling of the difference ratios.

Kernels
-------
Base kernels are radial in an embedding of the integer vectors (``kernel`` names):

* ``"rbf"``, ``"imq"``: of the one-hot codes, :math:`\|\phi(x) - \phi(y)\|^2 = 2
  d_H(x, y)`; ``"rbf"`` is the exponentiated Hamming kernel
  :math:`\exp(-d_H(x, y) / h^2)`;
* ``"rbf-bow"``, ``"imq-bow"``: of the bag-of-words counts :math:`c(x) \in
  \mathbb{N}^L` (documents; all coordinates share one vocabulary), e.g.
  :math:`(1 + \|c(x) - c(y)\|^2 / h^2)^{-1/2}`.

The bandwidth convention is that of :mod:`skstein.kernels` applied to the embedded
vectors; ``"median"`` is the median embedded distance over pairs of (at most 2000)
samples.

Every pass returns the same sufficient statistics as the continuous engine
(:class:`skstein.discrepancy.SteinSums`), so the bootstraps and the relative test's
variance estimates take them unchanged.
"""

from contextlib import nullcontext
from dataclasses import dataclass, replace

import numpy as np
from scipy import sparse
from scipy.spatial.distance import cdist, pdist

from ._validation import check_discrete_samples
from ._threads import numba_threads, single_blas
from ._numba.discrete import BARKER, BOW, DIFFERENCE, ONEHOT
from ._numba.discrete import discrete_stein_block, discrete_stein_diag, onehot_stein_multi_block
from ._bootstrap import bootstrap_forms
from ._random import as_generator
from ._validation import check_choice, check_model_dim, check_positive_int, sklearn_model_hint
from .discrepancy import DEFAULT_MAX_MEMORY, SteinSums, _block_rows, upper_block_sums
from .kernels import GRID_QUANTILE, _positive_median, _subsample, make_kernel

__all__ = ["OPERATORS", "DEFAULT_OPERATOR", "DISCRETE_KERNELS", "DiscreteKernel",
           "is_discrete_model", "resolve_operator", "model_n_values", "check_discrete_samples",
           "discrete_median_bandwidth", "resolve_discrete_bandwidth", "operator_coefficients",
           "discrete_stein_sums", "discrete_stein_sums_many", "discrete_stein_row_blocks",
           "discrete_ksd",
           "discrete_stein_matrix", "bag_of_words"]

#: The discrete Stein operators.
OPERATORS = ("difference", "zanella-barker")
#: The operator used for a discrete model when none is named.
DEFAULT_OPERATOR = "zanella-barker"
#: Base kernels on discrete vectors: (radial profile, embedding).
DISCRETE_KERNELS = {"rbf": ("rbf", "onehot"), "imq": ("imq", "onehot"),
                    "rbf-bow": ("rbf", "bow"), "imq-bow": ("imq", "bow")}
_OP_CODES = {"difference": DIFFERENCE, "zanella-barker": BARKER}
_EMB_CODES = {"onehot": ONEHOT, "bow": BOW}
#: Largest table of kernel values (entries) a bag-of-words pass may build.
_MAX_TABLE = 2**26
#: Below this many pair-coordinate evaluations a pass runs on one thread.
_SERIAL_WORK = 2**17


# ---------------------------------------------------------------------------
# Models and data
# ---------------------------------------------------------------------------


def is_discrete_model(model):
    """Whether ``model`` declares a discrete domain (an ``n_values`` attribute).

    Parameters
    ----------
    model : object
        A distribution or score callable.

    Returns
    -------
    bool
    """
    return getattr(model, "n_values", None) is not None


def resolve_operator(model, operator, name="model"):
    """The discrete operator to use for ``model``, or None for a continuous model.

    Parameters
    ----------
    model : object
        The model; discrete when it declares ``n_values``.
    operator : {None, "difference", "zanella-barker"}
        None lets the model decide: :data:`DEFAULT_OPERATOR` for a discrete model, the
        Langevin operator otherwise.
    name : str, default="model"
        The argument's name in error messages.

    Returns
    -------
    str or None
        The operator's name, or None for the Langevin operator of a continuous model.

    Raises
    ------
    TypeError
        When a discrete operator is named for a continuous model.
    """
    if operator is not None:
        check_choice(operator, "operator", OPERATORS)
    if not is_discrete_model(model):
        if operator is None:
            return None
        raise TypeError(
            f"operator={operator!r} is a discrete Stein operator, but {name} is a continuous "
            f"model ({type(model).__name__} declares no n_values). Discrete data need a "
            "discrete model: one with n_values and log_ratio(X, shift) or "
            "posterior_coefficients(...), e.g. skstein.distributions.Categorical."
        )
    return DEFAULT_OPERATOR if operator is None else operator


def model_n_values(model, d, name="model"):
    """The model's ``n_values`` as an int64 array of ``d`` entries (each at least 2).

    Parameters
    ----------
    model : object
        A discrete model (with ``n_values``: an int, or one int per coordinate).
    d : int
        Coordinates of the samples.
    name : str, default="model"
        The argument's name in error messages.

    Returns
    -------
    int64 ndarray (d,)
    """
    nv = np.asarray(getattr(model, "n_values"))
    if nv.dtype == bool or not np.issubdtype(nv.dtype, np.integer):
        if not (np.issubdtype(nv.dtype, np.floating) and np.all(nv == np.round(nv))):
            raise TypeError(f"{name}.n_values must be an int or an array of ints, got {nv!r}.")
    nv = nv.astype(np.int64)
    if nv.ndim == 0:
        nv = np.full(d, int(nv), dtype=np.int64)
    if nv.shape != (d,):
        raise ValueError(f"{name}.n_values has shape {nv.shape}, but X has {d} columns.")
    if np.any(nv < 2):
        raise ValueError(f"{name}.n_values must be at least 2 for every coordinate, got {nv}.")
    return nv


def bag_of_words(X, n_values):
    """Count vectors of the rows of ``X``, a dense float64 ``(n, n_values)`` array.

    The representation on which scikit-learn's ``LatentDirichletAllocation`` is fitted,
    and the input of a relative MMD test on documents.

    Parameters
    ----------
    X : array-like of int of shape (n, n_words)
        Documents, one word index per entry.
    n_values : int
        Vocabulary size.

    Returns
    -------
    ndarray of shape (n, n_values)
    """
    X = check_discrete_samples(X, np.full(np.shape(X)[1], int(n_values)), min_samples=1)
    return _counts(X, int(n_values)).toarray()


def _counts(X, L):
    n, d = X.shape
    data = np.ones(n * d)
    indptr = np.arange(0, n * d + 1, d)
    C = sparse.csr_matrix((data, X.ravel(), indptr), shape=(n, L))
    C.sum_duplicates()
    return C


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------


class DiscreteKernel:
    r"""A radial kernel of an embedding of discrete vectors.

    Parameters
    ----------
    kernel : {"rbf", "imq", "rbf-bow", "imq-bow"}
        Radial profile and embedding (see the module docstring).
    bandwidth : float
        :math:`h`, applied to the embedded squared distance as in
        :mod:`skstein.kernels`.
    kernel_params : dict, default=None
        ``{"beta": ...}`` for the IMQ profiles.

    Attributes
    ----------
    name, bandwidth, embedding, base
        The kernel name, :math:`h`, ``"onehot"`` or ``"bow"``, and the radial kernel
        (:class:`skstein.kernels.RBF` or :class:`~skstein.kernels.IMQ`).
    """

    def __init__(self, kernel, bandwidth, kernel_params=None):
        check_choice(kernel, "kernel", tuple(DISCRETE_KERNELS))
        profile, embedding = DISCRETE_KERNELS[kernel]
        self.name = kernel
        self.embedding = embedding
        self.base = make_kernel(profile, bandwidth, kernel_params)
        self.bandwidth = self.base.bandwidth

    def sqdist(self, X, Y, n_values):
        """Integer squared embedded distances between the rows of ``X`` and ``Y``.

        Parameters
        ----------
        X : ndarray of int of shape (n, d)
            Validated samples.
        Y : ndarray of int of shape (m, d)
            Validated samples.
        n_values : ndarray of int of shape (d,)
            Domain size of each coordinate.

        Returns
        -------
        ndarray of shape (n, m)
        """
        return embedded_sqdist(X, Y, self.embedding, n_values)

    def __call__(self, X, Y, n_values):
        """Kernel matrix :math:`k(x_i, y_l)` (small inputs)."""
        return self.base.profile(self.sqdist(X, Y, n_values).astype(np.float64))[0]

    def table(self, tmax):
        """``kappa(t)`` for ``t = 0, ..., tmax``.

        Parameters
        ----------
        tmax : int
            Largest squared embedded distance.

        Returns
        -------
        ndarray of shape (tmax + 1,)
        """
        return np.ascontiguousarray(
            self.base.profile(np.arange(tmax + 1, dtype=np.float64))[0], dtype=np.float64)

    def __repr__(self):
        return f"DiscreteKernel({self.name!r}, bandwidth={self.bandwidth!r})"


def _check_bow_domain(n_values):
    if np.any(n_values != n_values[0]):
        raise ValueError("the bag-of-words kernels need one vocabulary for all coordinates "
                         f"(equal n_values), got n_values={n_values}.")
    return int(n_values[0])


def embedded_sqdist(X, Y, embedding, n_values):
    """Squared distances of the embedded rows of ``X`` and ``Y`` (int64 array)."""
    X = np.asarray(X, dtype=np.int64)
    Y = np.asarray(Y, dtype=np.int64)
    if embedding == "onehot":
        return 2 * np.rint(cdist(X, Y, "hamming") * X.shape[1]).astype(np.int64)
    L = _check_bow_domain(np.asarray(n_values))
    Cx, Cy = _counts(X, L), _counts(Y, L)
    nx = np.asarray(Cx.multiply(Cx).sum(axis=1)).ravel()
    ny = np.asarray(Cy.multiply(Cy).sum(axis=1)).ravel()
    G = (Cx @ Cy.T).toarray()
    return np.rint(nx[:, None] + ny[None, :] - 2.0 * G).astype(np.int64)


def _embedded_distances(X, embedding, n_values, max_points, random_state):
    X = _subsample(np.asarray(X), max_points, random_state)
    if X.shape[0] < 2:
        raise ValueError("a bandwidth heuristic needs at least 2 samples.")
    if embedding == "onehot":
        return np.sqrt(2.0 * np.rint(pdist(X, "hamming") * X.shape[1]))
    T = embedded_sqdist(X, X, embedding, n_values)
    return np.sqrt(T[np.triu_indices(X.shape[0], 1)].astype(np.float64))


def discrete_median_bandwidth(X, embedding, n_values, *, max_points=2000, random_state=None):
    """Median of the embedded distances over pairs ``i < j`` of (at most ``max_points``) rows.

    Parameters
    ----------
    X : int64 ndarray (n, D)
        Validated samples (at least 2 rows).
    embedding : {"onehot", "bow"}
        The embedding of the values (see :class:`DiscreteKernel`).
    n_values : int64 ndarray (D,)
    max_points : int, default=2000
        Rows beyond this are subsampled.
    random_state : None, int or numpy.random.Generator
        Draws the subsample.

    Returns
    -------
    float
        The median of the positive distances.
    """
    return _positive_median(_embedded_distances(X, embedding, n_values, max_points,
                                                random_state))


def discrete_bandwidth_grid(X, embedding, n_values, n_bandwidths=10, *, max_points=2000,
                            random_state=None):
    """The collection of :func:`skstein.kernels.bandwidth_grid` on the embedded distances.

    Geometric, from the 1st percentile of the positive embedded distances to twice
    their median.
    """
    d = _embedded_distances(X, embedding, n_values, max_points, random_state)
    med = _positive_median(d)
    if n_bandwidths == 1:
        return np.array([med])
    lo = min(float(np.quantile(d[d > 0], GRID_QUANTILE)), med)
    return np.geomspace(lo, 2.0 * med, n_bandwidths)


def discrete_kernel_collection(X, kernel, n_values, n_bandwidths, kernel_params, random_state):
    """One :class:`DiscreteKernel` per bandwidth of :func:`discrete_bandwidth_grid` on ``X``.

    The kernels of an aggregated test (a bandwidth collection), in grid order;
    ``kernel`` names an entry of :data:`DISCRETE_KERNELS`.
    """
    check_positive_int(n_bandwidths, "n_bandwidths")
    grid = discrete_bandwidth_grid(X, DISCRETE_KERNELS[kernel][1], n_values, n_bandwidths,
                                   random_state=random_state)
    return tuple(DiscreteKernel(kernel, float(h), kernel_params) for h in grid)


def is_discrete_kernel(kern):
    """Whether ``kern`` is a :class:`DiscreteKernel` or a tuple of them (a collection)."""
    return isinstance(kern, DiscreteKernel) or (
        isinstance(kern, tuple) and all(isinstance(k, DiscreteKernel) for k in kern))


def resolve_discrete_bandwidth(X, bandwidth, embedding, n_values, *, random_state=None):
    """A positive float bandwidth, or the median heuristic of the embedded ``X``.

    Parameters
    ----------
    X : int64 ndarray (n, D)
    bandwidth : float or "median"
    embedding : {"onehot", "bow"}
    n_values : int64 ndarray (D,)
    random_state : None, int or numpy.random.Generator
        Draws the subsample of the median heuristic.

    Returns
    -------
    float
    """
    if isinstance(bandwidth, str):
        if bandwidth != "median":
            raise ValueError(f"bandwidth must be a positive float or 'median', got {bandwidth!r}.")
        return discrete_median_bandwidth(X, embedding, n_values, random_state=random_state)
    if isinstance(bandwidth, bool) or not np.isscalar(bandwidth):
        raise TypeError(f"bandwidth must be a positive float or 'median', got {bandwidth!r}.")
    bandwidth = float(bandwidth)
    if not (np.isfinite(bandwidth) and bandwidth > 0):
        raise ValueError(f"bandwidth must be a positive finite float or 'median', got "
                         f"{bandwidth!r}.")
    return bandwidth


# ---------------------------------------------------------------------------
# Operator coefficients from a model
# ---------------------------------------------------------------------------


def has_exact_ratios(model):
    return callable(getattr(model, "log_ratio", None))


def has_posterior_coefficients(model):
    return callable(getattr(model, "posterior_coefficients", None))


def _exact_coefficients(model, X, operator, name):
    shifts = (1,) if operator == "difference" else (1, -1)
    out = np.empty((len(shifts),) + X.shape)
    for a, shift in enumerate(shifts):
        lr = np.asarray(model.log_ratio(X, shift), dtype=np.float64)
        if lr.shape != X.shape:
            raise ValueError(f"{name}.log_ratio returned shape {lr.shape} for X of shape "
                             f"{X.shape}.")
        bad = np.isnan(lr) | (lr == np.inf)
        if np.any(bad):
            i = int(np.argwhere(bad)[0][0])
            raise ValueError(f"X[{i}] has probability 0 under {name} (its log ratios are not "
                             "defined); every row of X must lie in the model's support.")
        with np.errstate(over="ignore"):
            out[a] = np.expm1(lr) if operator == "difference" else 1.0 / (1.0 + np.exp(-lr))
    return out


def _check_difference_scores(S, name):
    if not np.all(np.isfinite(S)):
        bad = int(np.sum(~np.all(np.isfinite(S), axis=(0, 2))))
        raise ValueError(
            f"the difference score p(x + e_j)/p(x) - 1 of {name} overflows at {bad} rows of X "
            "(a value of tiny probability next to a likely one); use "
            "operator='zanella-barker', whose weights stay in [0, 1].")
    return S


def operator_coefficients(model, X, operator, *, model_score="auto", n_posterior_samples=500,
                          burn_in=200, random_state=None, name="model"):
    """The coefficients of a discrete Stein operator at the rows of ``X``.

    Parameters
    ----------
    model : discrete model
        With ``log_ratio`` (exact) or ``posterior_coefficients`` (latent).
    X : int64 ndarray (n, D)
        Validated samples.
    operator : {"difference", "zanella-barker"}
    model_score : {"auto", "exact", "posterior"}
        ``"auto"`` uses the exact ratios when the model has them.
    n_posterior_samples, burn_in : int
        Posterior draws (and discarded burn-in) for latent models; their unit is the
        model's (one Gibbs sweep over a document for :class:`~skstein.distributions.LDA`).
    random_state : None, int or Generator
    name : str
        Name of the model in error messages.

    Returns
    -------
    coefficients : ndarray of shape (1, n, D) or (2, n, D)
        ``"difference"``: the scores :math:`p(x + e_j)/p(x) - 1`; ``"zanella-barker"``:
        the weights of the shifts ``+1`` and ``-1``.
    used_posterior : bool
    """
    check_choice(model_score, "model_score", ("auto", "exact", "posterior"))
    exact = has_exact_ratios(model)
    latent = has_posterior_coefficients(model)
    if model_score == "auto":
        model_score = "exact" if exact else "posterior"
    if model_score == "exact" and not exact:
        raise TypeError(f"{name} has no log_ratio(X, shift) method, so its exact ratios are not "
                        "available; use model_score='posterior' or 'auto'.")
    if model_score == "posterior" and not latent:
        raise TypeError(
            f"{name} must have posterior_coefficients(X, operator, n_samples, burn_in, "
            f"random_state) to use posterior estimates; {type(model).__name__} lacks it."
            + ("" if exact else " A discrete model needs log_ratio(X, shift) or "
               "posterior_coefficients(...)."))
    if model_score == "exact":
        C = _exact_coefficients(model, X, operator, name)
    else:
        m = check_positive_int(n_posterior_samples, "n_posterior_samples")
        b = check_positive_int(burn_in, "burn_in", minimum=0)
        C = np.asarray(model.posterior_coefficients(X, operator, n_samples=m, burn_in=b,
                                                    random_state=random_state),
                       dtype=np.float64)
        k = 1 if operator == "difference" else 2
        if C.shape != (k,) + X.shape:
            raise ValueError(f"{name}.posterior_coefficients returned shape {C.shape}; expected "
                             f"{(k,) + X.shape}.")
        if operator == "difference":
            with np.errstate(invalid="ignore"):
                if np.any(C < 0):
                    raise ValueError(f"{name}.posterior_coefficients returned negative ratios.")
            C = C - 1.0
        elif not (np.all(C >= 0) and np.all(C <= 1)):
            raise ValueError(f"{name}.posterior_coefficients returned Zanella-Barker weights "
                             "outside [0, 1].")
    if operator == "difference":
        _check_difference_scores(C, name)
    return np.ascontiguousarray(C), model_score == "posterior"


# ---------------------------------------------------------------------------
# Stein passes
# ---------------------------------------------------------------------------


@dataclass
class _Pass:
    """Arrays of one discrete Stein pass, in the form the kernels take."""

    op: int
    emb: int
    X: np.ndarray
    nvals: np.ndarray
    A: np.ndarray
    B: np.ndarray
    ktab: np.ndarray
    nc: np.ndarray

    def threads(self, rows, cols):
        work = rows * cols * self.X.shape[1]
        return numba_threads(1) if work < _SERIAL_WORK else nullcontext()

    def block(self, row0, col0, rows, cols, upper):
        out = np.empty((rows, cols))
        rowsum = np.empty(rows)
        with self.threads(rows, cols):
            discrete_stein_block(self.op, self.emb, self.X, self.nvals, self.A, self.B,
                                 self.ktab, self.nc, row0, col0, upper, out, rowsum)
        return out, rowsum

    def diag(self):
        out = np.empty(self.X.shape[0])
        with self.threads(self.X.shape[0], 1):
            discrete_stein_diag(self.op, self.emb, self.X, self.nvals, self.A, self.B,
                                self.ktab, self.nc, out)
        return out


def _prepare_pass(X, C, kernel, operator, n_values):
    check_choice(operator, "operator", OPERATORS)
    n, d = X.shape
    k = 1 if operator == "difference" else 2
    if C.shape != (k, n, d):
        raise ValueError(f"the coefficients of the {operator} operator must have shape "
                         f"{(k, n, d)}, got {C.shape}.")
    nvals = np.ascontiguousarray(n_values, dtype=np.int64)
    if kernel.embedding == "bow":
        L = _check_bow_domain(nvals)
        nc = np.asarray(_counts(X, L).power(2).sum(axis=1), dtype=np.int64).ravel()
        tmax = 4 * int(nc.max()) + 8 * d + 8
        if tmax + 1 > _MAX_TABLE:
            raise ValueError(f"documents of {d} words with up to {int(nc.max())} squared "
                             "counts need too large a table of kernel values; use the one-hot "
                             "kernels ('rbf', 'imq').")
    else:
        nc = np.zeros(n, dtype=np.int64)
        tmax = 2 * d
    A = np.ascontiguousarray(C[0])
    B = np.ascontiguousarray(C[-1])
    return _Pass(_OP_CODES[operator], _EMB_CODES[kernel.embedding], X, nvals, A, B,
                 kernel.table(tmax), nc)


def discrete_stein_sums(X, C, kernel, operator, n_values, *, return_matrix=False,
                        max_memory=DEFAULT_MAX_MEMORY):
    """One discrete Stein pass over validated samples and operator coefficients.

    Parameters
    ----------
    X : int64 ndarray (n, D)
    C : ndarray (1, n, D) or (2, n, D)
        From :func:`operator_coefficients`.
    kernel : DiscreteKernel
    operator : {"difference", "zanella-barker"}
    n_values : int64 ndarray (D,)
    return_matrix : bool, default=False
        Also form the strict upper triangle of the Stein matrix (``SteinSums.upper``,
        C-contiguous ``(n, n)``, zeros on and below the diagonal), for the bootstrap.
    max_memory : int
        Otherwise the pass runs over blocks of rows of the upper triangle whose
        temporaries stay within this many bytes.

    Returns
    -------
    skstein.discrepancy.SteinSums
    """
    n = X.shape[0]
    ps = _prepare_pass(X, C, kernel, operator, n_values)
    diag = ps.diag()
    if return_matrix:
        H, rowsum = ps.block(0, 0, n, n, True)
        rowsums = rowsum + H.sum(axis=0)
        return SteinSums(n, 2.0 * float(np.sum(rowsum)), diag, rowsums, H)
    return upper_block_sums(n, diag, lambda a, b: ps.block(a, a, b - a, n - a, True),
                            max_memory, n_arrays=1)


def discrete_stein_row_blocks(X, C, kernel, operator, n_values, *,
                              max_memory=DEFAULT_MAX_MEMORY):
    """Yield ``(a, b, H[a:b])``: full rows of the Stein matrix (zero diagonal) by blocks.

    For bootstraps whose Stein matrix does not fit in ``max_memory``.

    Parameters
    ----------
    X, C, kernel, operator, n_values
        As for :func:`discrete_stein_sums`.
    max_memory : int
        Bytes of each block of rows.

    Yields
    ------
    a, b : int
        The block's first row and the row after its last.
    H : ndarray (b - a, n)
        Rows ``a`` to ``b - 1`` of the Stein matrix, zeros on the diagonal.
    """
    n = X.shape[0]
    ps = _prepare_pass(X, C, kernel, operator, n_values)
    rows = _block_rows(n, n, max_memory, n_arrays=1)
    for a in range(0, n, rows):
        b = min(n, a + rows)
        H, _ = ps.block(a, 0, b - a, n, False)
        yield a, b, H


def discrete_stein_sums_many(X, C, kernels, operator, n_values, V=None, *,
                             max_memory=DEFAULT_MAX_MEMORY):
    r"""The discrete Stein passes of several one-hot kernels at once (and their forms).

    A shift moves one coordinate, so each of a pair's kernel values is the profile at
    its Hamming distance ``d`` or at ``d - 1`` or ``d + 1``, and its Stein kernel value
    is linear in those three values with coefficients that do not depend on the kernel
    (:func:`skstein._numba.discrete.onehot_coefficients`). One pass over the pairs
    computes the coefficients and every kernel's value: the aggregated test's ten
    bandwidths cost about one pass instead of ten.

    Parameters
    ----------
    X : int64 ndarray (n, D)
    C : ndarray (1, n, D) or (2, n, D)
        From :func:`operator_coefficients`.
    kernels : sequence of DiscreteKernel
        One-hot kernels (``"rbf"``, ``"imq"``).
    operator : {"difference", "zanella-barker"}
    n_values : int64 ndarray (D,)
    V : ndarray (M, n) or None
        Bootstrap weights, one row per draw: the off-diagonal forms :math:`v_m^\top H
        v_m` of each kernel's Stein matrix are accumulated block by block.
    max_memory : int
        Bytes of the block of rows of the upper triangle held for all kernels.

    Returns
    -------
    sums : list of skstein.discrepancy.SteinSums
        One per kernel (without the matrix).
    forms : ndarray (M, len(kernels)) or None
        The forms, with ``V``.
    """
    if any(k.embedding != "onehot" for k in kernels):
        raise ValueError("discrete_stein_sums_many takes one-hot kernels ('rbf', 'imq').")
    n, d = X.shape
    K = len(kernels)
    first = _prepare_pass(X, C, kernels[0], operator, n_values)
    ktabs = np.ascontiguousarray(np.stack([k.table(2 * d + 2) for k in kernels]))
    rowsums = np.zeros((K, n))
    totals = np.zeros(K)
    forms = None if V is None else np.zeros((V.shape[0], K))
    if V is not None:
        V = np.ascontiguousarray(V, dtype=np.float64)
    rows = _block_rows(n, n, max_memory, n_arrays=K)
    for a in range(0, n, rows):
        b = min(n, a + rows)
        out = np.empty((K, b - a, n - a))
        rowsum = np.empty((K, b - a))
        with first.threads(b - a, n - a):
            onehot_stein_multi_block(first.op, X, first.nvals, first.A, first.B, ktabs, a,
                                     out, rowsum)
        for k in range(K):
            rowsums[k, a:b] += rowsum[k]
            rowsums[k, a:] += out[k].sum(axis=0)
            totals[k] += 2.0 * float(np.sum(rowsum[k]))
            if V is not None:
                forms[:, k] += _upper_rows_forms(out[k], V, a)
    # each kernel's diagonal: the same pass with that kernel's table
    sums = [SteinSums(n, float(totals[k]), replace(first, ktab=kern.table(2 * d)).diag(),
                      rowsums[k].copy(), None) for k, kern in enumerate(kernels)]
    return sums, forms


def shares_one_pass(kernels):
    """Whether a collection of discrete kernels takes :func:`discrete_stein_sums_many`:
    several kernels, all one-hot (one kernel keeps :func:`discrete_stein_sums`)."""
    return len(kernels) > 1 and all(k.embedding == "onehot" for k in kernels)


def _upper_rows_forms(H, V, a):
    """The share of rows ``a:a + r`` of a strict upper triangle ``U`` (``H``: those rows
    from column ``a`` on) in the forms :math:`2 v_m^\top U v_m`: the triangle of the
    rows' own columns by :func:`~skstein._bootstrap.bootstrap_forms`, the rectangle
    right of it by one product (one-thread BLAS: the same numbers for any number of
    threads)."""
    r = H.shape[0]
    out = bootstrap_forms(np.ascontiguousarray(H[:, :r]), V[:, a:a + r])
    if H.shape[1] > r:
        with single_blas():
            P = V[:, a + r:] @ H[:, r:].T
        out += 2.0 * np.einsum("mi,mi->m", P, V[:, a:a + r])
    return out


def prepare_discrete(X, model, kernel, bandwidth, kernel_params, random_state, name="model"):
    """Validated ``X``, the model's ``n_values`` and the kernel (bandwidth resolved on X)."""
    X0 = check_discrete_samples(X)
    nvals = model_n_values(model, X0.shape[1], name)
    check_model_dim(model, X0, name)
    X0 = check_discrete_samples(X0, nvals)
    check_choice(kernel, "kernel", tuple(DISCRETE_KERNELS))
    embedding = DISCRETE_KERNELS[kernel][1]
    if embedding == "bow":
        _check_bow_domain(nvals)
    h = resolve_discrete_bandwidth(X0, bandwidth, embedding, nvals, random_state=random_state)
    return X0, nvals, DiscreteKernel(kernel, h, kernel_params)


def discrete_ksd(X, model, *, operator=None, kernel="rbf", bandwidth="median",
                 kernel_params=None, statistic="u", model_score="auto", n_posterior_samples=500,
                 burn_in=200, random_state=None, max_memory=DEFAULT_MAX_MEMORY):
    r"""Squared discrete kernel Stein discrepancy of the integer sample ``X`` to ``model``.

    .. math::

        \mathrm{KSD}^2_U = \frac{1}{n(n-1)} \sum_{i \ne l} h_p(x_i, x_l),

    with :math:`h_p` the Stein kernel of the chosen operator (module docstring).

    Parameters
    ----------
    X : array-like of int, shape (n_samples, n_features)
        Values in ``{0, ..., n_values[j] - 1}``.
    model : discrete model
        With ``n_values`` and ``log_ratio`` or ``posterior_coefficients``.
    operator : {None, "difference", "zanella-barker"}, default=None
        None: :data:`DEFAULT_OPERATOR`.
    kernel : {"rbf", "imq", "rbf-bow", "imq-bow"}, default="rbf"
        ``"rbf"`` is the exponentiated Hamming kernel :math:`\exp(-d_H / h^2)`.
    bandwidth : float or "median", default="median"
    kernel_params : dict, default=None
    statistic : {"u", "v"}, default="u"
    model_score : {"auto", "exact", "posterior"}, default="auto"
    n_posterior_samples, burn_in : int, default=500, 200
        For latent models (posterior estimates of the ratios).
    random_state : None, int or Generator
        Seeds the median heuristic's subsample and the posterior draws.
    max_memory : int, default=64 MiB

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from skstein.discrete import discrete_ksd
    >>> from skstein.distributions import Categorical
    >>> p = Categorical(np.full((5, 4), 0.25))
    >>> X = p.rvs(300, random_state=0)
    >>> bool(abs(discrete_ksd(X, p)) < 0.05)
    True
    """
    check_choice(statistic, "statistic", ("u", "v"))
    if not is_discrete_model(model):
        raise TypeError(f"model must be a discrete model (with n_values) for discrete data; "
                        f"{type(model).__name__} is continuous." + sklearn_model_hint(model))
    operator = resolve_operator(model, operator)
    bw_rng, score_rng = as_generator(random_state).spawn(2)
    X, nvals, kern = prepare_discrete(X, model, kernel, bandwidth, kernel_params, bw_rng)
    C, _ = operator_coefficients(model, X, operator, model_score=model_score,
                                 n_posterior_samples=n_posterior_samples, burn_in=burn_in,
                                 random_state=score_rng)
    sums = discrete_stein_sums(X, C, kern, operator, nvals, max_memory=max_memory)
    return sums.statistic(statistic)


def discrete_stein_matrix(X, C, kernel, operator, n_values):
    """The full Stein matrix ``H[i, l] = h_p(x_i, x_l)``, diagonal included (small inputs).

    Parameters
    ----------
    X : ndarray of int of shape (n, d)
        Validated samples.
    C : ndarray
        Operator coefficients from :func:`operator_coefficients`.
    kernel : DiscreteKernel
        The kernel.
    operator : {"difference", "zanella-barker"}
        The Stein operator.
    n_values : ndarray of int of shape (d,)
        Domain size of each coordinate.

    Returns
    -------
    ndarray of shape (n, n)
    """
    sums = discrete_stein_sums(X, C, kernel, operator, n_values, return_matrix=True)
    H = sums.upper + sums.upper.T
    H[np.diag_indices_from(H)] = sums.diag
    return H
