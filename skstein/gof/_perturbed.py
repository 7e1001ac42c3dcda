r"""The perturbed KSD test: a KSD test that sees the weights of separated modes.

A score-based test is nearly blind to the mixing proportions of a model whose mass
sits in well-separated modes: inside each mode the score hardly depends on the
weights, and points between the modes are rare (user guide, "What a score cannot
see"). Liu, Duncan & Gandy (2023, "Using perturbation to improve goodness-of-fit tests
based on kernelized Stein discrepancy") perturb the sample with a Markov kernel
:math:`K` that leaves the model invariant (:math:`pK = p`) and test the perturbed
sample beside the original one: under H0 the perturbed points follow :math:`p` too,
so the test keeps its level; under H1 the kernel's jumps between the modes move mass
at rates set by the model's weights, and where the data's weights differ the jumped
points pile up where the model's score says they should not.

The kernel here is theirs: Metropolis-Hastings moves whose proposals jump from a mode
:math:`i` to a mode :math:`j` of the model, chosen uniformly among the ordered pairs,

.. math::

    x' = \theta m_j + \Sigma_j^{1/2} \Sigma_i^{-1/2} (x - \theta m_i),

with :math:`m_i` a mode, :math:`\Sigma_i` the inverse of the Hessian of :math:`-\log
p` there (symmetric square roots) and :math:`\theta` the jump scale; the move from
``j`` to ``i`` undoes it, so accepting with probability :math:`\min(1, p(x') / p(x)
\cdot |\det \Sigma_j^{1/2} \Sigma_i^{-1/2}|)` leaves :math:`p` invariant. It needs the
model's log density up to a constant (``logpdf``), not its normaliser. The modes are
found by BFGS on :math:`-\log p` from points of the data; the jump scale is the one
whose perturbed statistic has the largest power criterion on a training part of the
sample (held-out selection), and the test runs on the rest.
"""

import numbers
import warnings

import numpy as np
from scipy.optimize import minimize
from sklearn.base import BaseEstimator

from .._engines import NumbaEngine
from .._estimator import is_fitted
from .._random import as_generator
from .._validation import (
    check_model_dim,
    check_positive_int,
    check_samples,
    evaluate_score,
    refuse_complex,
    resolve_score,
    sklearn_model_hint,
)
from ..discrepancy import DEFAULT_MAX_MEMORY
from ._base import SteinTestMixin, on_training_part, split_indices
from ._common import SampleTestMethods
from ._discrete import discrete_operator
from ._ksd import KSDTest, LangevinKSD

__all__ = ["PerturbedKSDTest", "find_modes", "jump_chain", "ModeSet", "JUMP_SCALES"]

#: the default jump scales, Liu, Duncan & Gandy's grid (0.8 to 1.2 in 21 steps)
JUMP_SCALES = tuple(float(t) for t in np.linspace(0.8, 1.2, 21))
#: an end point of the mode search is a mode when its Newton decrement g^T Sigma g
#: (the squared length of the score in the local standard deviations) is below this
NEWTON_TOL = 1e-6
#: two modes are one when one lies within this squared Mahalanobis distance of the other
MERGE_RADIUS = 1.0


def model_logpdf(model, name="model"):
    """The model's ``logpdf`` (up to a constant), or a TypeError naming ``name``."""
    logpdf = getattr(model, "logpdf", None)
    if not callable(logpdf):
        raise TypeError(
            f"{name} must have a logpdf(X) method (the log density up to a constant) for "
            "the perturbed KSD test, whose jumps between modes are Metropolis-Hastings "
            f"moves; got {type(model).__name__}." + sklearn_model_hint(model, name))
    return logpdf


def _logpdf_rows(logpdf, X, name="model"):
    """``logpdf`` at a copy of the rows of ``X`` (one that writes into its input changes
    nothing) as a float64 vector of one value per row; NaN and infinities are kept, a
    wrong shape or complex values raise a ValueError naming ``name``."""
    values = np.asarray(logpdf(np.array(X, dtype=np.float64, copy=True)))
    refuse_complex(values, name, of="X")
    values = np.asarray(values, dtype=np.float64)
    if values.shape not in ((X.shape[0],), (X.shape[0], 1)):
        raise ValueError(f"{name}.logpdf must return one value per row of the array it is "
                         f"given ({X.shape[0]} rows), got shape {values.shape}.")
    return values.reshape(-1)


def logpdf_values(logpdf, X, name="model"):
    """``logpdf(X)`` as a float64 vector of one value per row, checked.

    ``-inf`` (outside the model's support) is kept; NaN, ``+inf`` or a wrong shape raise
    a ValueError naming ``name``. ``logpdf`` sees a copy of ``X``.
    """
    values = _logpdf_rows(logpdf, X, name)
    if np.any(np.isnan(values)) or np.any(values == np.inf):
        raise ValueError(f"{name}.logpdf returned NaN or +inf.")
    return values


class ModeSet:
    """Modes of a model and the local Gaussian geometry at each.

    Attributes
    ----------
    centres : ndarray (K, D)
        The modes, by decreasing log density.
    covariances : ndarray (K, D, D)
        :math:`\\Sigma_k`, the inverse Hessian of :math:`-\\log p` at each mode.
    """

    def __init__(self, centres, precisions):
        self.centres = np.asarray(centres, dtype=np.float64)
        lam, U = np.linalg.eigh(np.asarray(precisions, dtype=np.float64))
        Ut = U.transpose(0, 2, 1)
        # U diag(w) U^T as batched matrix products (BLAS; an einsum over three operands
        # loops in C, 2.5 s at D = 1000)
        self.covariances = (U / lam[:, None, :]) @ Ut
        # symmetric square roots of Sigma_k and of its inverse; log det Sigma_k
        self._root = (U * lam[:, None, :] ** -0.5) @ Ut
        self._inv_root = (U * lam[:, None, :] ** 0.5) @ Ut
        self._logdet = -np.sum(np.log(lam), axis=1)

    def __len__(self):
        return self.centres.shape[0]

    def jump(self, i, j):
        """``(T, log|det T|)`` of the map from mode ``i`` to mode ``j``:
        :math:`T = \\Sigma_j^{1/2} \\Sigma_i^{-1/2}`."""
        return self._root[j] @ self._inv_root[i], 0.5 * (self._logdet[j] - self._logdet[i])


class _Diverged(Exception):
    """A mode search that reached points where the log density is NaN or +inf."""


def _spread_starts(X, n_starts, rng):
    """``n_starts`` rows of ``X`` spread over it: a random first row, then each time the
    row farthest from those chosen (every cluster of the data gets a start)."""
    n = X.shape[0]
    chosen = [int(rng.integers(n))]
    dist = np.sum((X - X[chosen[0]]) ** 2, axis=1)
    for _ in range(min(n_starts, n) - 1):
        k = int(np.argmax(dist))
        if dist[k] == 0.0:
            break
        chosen.append(k)
        dist = np.minimum(dist, np.sum((X - X[k]) ** 2, axis=1))
    return X[chosen]


def _local_precision(model, x):
    """The Hessian of :math:`-\\log p` at ``x`` by central differences of the model's
    score."""
    d = x.size
    h = 1e-5 * np.maximum(1.0, np.abs(x))
    points = np.concatenate([x + np.diag(h), x - np.diag(h)])
    G = evaluate_score(model, points, "model", check_tails=False, finite=False)
    H = -(G[:d] - G[d:]) / (2.0 * h[:, None])
    return 0.5 * (H + H.T)


def find_modes(model, X, n_starts=20, random_state=None):
    """The modes of ``model`` that BFGS on :math:`-\\log p` reaches from points of ``X``.

    Starts from ``n_starts`` rows of ``X`` spread over it (the first at random, then
    each the row farthest from those chosen). An end point is a mode when the Hessian
    of :math:`-\\log p` there (central differences of the score) is positive definite
    and the score's length in the local standard deviations is below
    :data:`NEWTON_TOL`; end points within :data:`MERGE_RADIUS` squared local standard
    deviations of a mode of higher density are that mode.

    Parameters
    ----------
    model : distribution with ``logpdf`` and ``grad_logpdf``
    X : ndarray of shape (n, D)
    n_starts : int, default=20
    random_state : None, int or Generator

    Returns
    -------
    ModeSet
    """
    logpdf = model_logpdf(model)
    resolve_score(model)  # a model without a score: the error that names it
    X = np.asarray(X, dtype=np.float64)
    check_positive_int(n_starts, "n_starts")
    rng = as_generator(random_state)
    starts = _spread_starts(X, n_starts, rng)
    # a model of another dimension, a score of the wrong shape or not finite at the data,
    # a logpdf that is NaN or +inf there: errors that name the model
    evaluate_score(model, starts, "model", check_tails=False)
    logpdf_values(logpdf, starts)
    ends = []
    for x0 in starts:
        def objective(x):
            value = _logpdf_rows(logpdf, x[None, :])[0]
            if np.isnan(value) or value == np.inf:  # away from the data: no mode this way
                raise _Diverged
            # outside the support: a wall the line search steps back from
            return -value if np.isfinite(value) else np.inf

        def gradient(x):
            return -evaluate_score(model, x[None, :], "model", check_tails=False,
                                   finite=False).reshape(-1)

        try:
            with np.errstate(all="ignore"):
                res = minimize(objective, x0, jac=gradient, method="BFGS",
                               options={"maxiter": 200 + 20 * X.shape[1], "gtol": 1e-9})
        except _Diverged:
            continue
        x = res.x
        if not np.all(np.isfinite(x)):
            continue
        H = _local_precision(model, x)
        lam = np.linalg.eigvalsh(H) if np.all(np.isfinite(H)) else np.array([-1.0])
        if lam[0] <= 1e-12 * max(lam[-1], 0.0) or lam[0] <= 0.0:
            continue  # not a strict local maximum (a saddle, a plateau, a wall)
        g = -gradient(x)
        if g @ np.linalg.solve(H, g) > NEWTON_TOL:
            continue  # the search stopped short of the mode
        ends.append((float(-res.fun), x, H))
    ends.sort(key=lambda e: -e[0])
    centres, precisions = [], []
    for _, x, H in ends:
        if any((x - m) @ P @ (x - m) < MERGE_RADIUS for m, P in zip(centres, precisions)):
            continue
        centres.append(x)
        precisions.append(H)
    if not centres:
        return ModeSet(np.empty((0, X.shape[1])), np.empty((0, X.shape[1], X.shape[1])))
    return ModeSet(np.array(centres), np.array(precisions))


def jump_chain(model, X, modes, jump_scale, n_steps, random_state=None):
    """``n_steps`` Metropolis-Hastings moves of every row of ``X`` by jumps between modes.

    Each step draws, for each row, an ordered pair ``(i, j)`` of distinct modes
    uniformly and proposes :math:`x' = \\theta m_j + \\Sigma_j^{1/2}\\Sigma_i^{-1/2}(x -
    \\theta m_i)` with :math:`\\theta` = ``jump_scale``, accepted with probability
    :math:`\\min(1, p(x') |\\det \\Sigma_j^{1/2}\\Sigma_i^{-1/2}| / p(x))`; ``model``
    is invariant. Rows move independently; all random numbers come from
    ``random_state``.

    Returns
    -------
    Y : ndarray (n, D)
        The moved rows.
    acceptance : float
        The share of proposals accepted.
    """
    logpdf = model_logpdf(model)
    rng = as_generator(random_state)
    Y = np.array(X, dtype=np.float64, copy=True)
    k_modes = len(modes)
    if k_modes < 2 or n_steps == 0:
        return Y, 0.0
    pairs = [(i, j) for i in range(k_modes) for j in range(k_modes) if i != j]
    maps = [modes.jump(i, j) for i, j in pairs]
    lp = logpdf_values(logpdf, Y)
    if not np.all(np.isfinite(lp)):
        raise ValueError("model.logpdf is -inf at some rows of X: X lies outside the "
                         "model's support.")
    accepted = 0
    n = Y.shape[0]
    for _ in range(n_steps):
        which = rng.integers(len(pairs), size=n)
        log_u = np.log(rng.random(n))
        proposal = np.empty_like(Y)
        log_jac = np.empty(n)
        for p, ((i, j), (T, log_det)) in enumerate(zip(pairs, maps)):
            rows = which == p
            proposal[rows] = ((Y[rows] - jump_scale * modes.centres[i]) @ T.T
                              + jump_scale * modes.centres[j])
            log_jac[rows] = log_det
        lp_new = _finite_rows_logpdf(logpdf, proposal)
        accept = log_u < lp_new - lp + log_jac
        Y[accept] = proposal[accept]
        lp[accept] = lp_new[accept]
        accepted += int(np.count_nonzero(accept))
    return Y, accepted / (n * n_steps)


def _finite_rows_logpdf(logpdf, P):
    """The log density at the finite rows of ``P`` (the others -inf)."""
    out = np.full(P.shape[0], -np.inf)
    ok = np.all(np.isfinite(P), axis=1)
    if ok.any():
        out[ok] = logpdf_values(logpdf, P[ok])
    return out


class PerturbedKSDTest(SampleTestMethods, SteinTestMixin, BaseEstimator):
    r"""KSD goodness-of-fit test on the sample and its perturbation by jumps between modes.

    The statistic is the KSD of the pairs :math:`(x_i, x'_i)`, :math:`x'` being
    :math:`x` after ``n_steps`` Metropolis-Hastings moves by jumps between the model's
    modes (Liu, Duncan & Gandy 2023; the module :mod:`skstein.gof._perturbed` gives the
    moves): the kernel :math:`h(x, y) + h(x', y')`, whose U-statistic is the sum of the
    two samples' KSDs, bootstrapped with one set of weights for both. The moves leave
    the model invariant, so under H0 the test holds its level as :class:`KSDTest`
    does; where the data's weights of well-separated modes differ from the model's,
    which a score-based test barely sees, the jumps move mass at the model's rates and
    the jumped points pile up where the model's score says they should not.

    ``test(X)`` on an unfitted test splits ``X`` (``train_size``): on the training part
    it finds the modes (:func:`~skstein.gof._perturbed.find_modes`, from ``n_starts``
    of its points) and chooses the jump scale of ``jump_scales`` whose perturbed
    statistic has the largest power criterion, the kernels resolved as
    :class:`KSDTest` resolves them; it tests the other part with that scale. ``fit(X)``
    learns the modes and the jump scale on ``X``; a fitted test then perturbs and tests
    the whole sample it is given, which must be other data than the data it was fitted
    on (a jump scale chosen on the sample tested makes the test liberal), as for
    :class:`MaxSKSDTest`. Where fewer than two modes are found there is nothing to
    jump between, and the test is :class:`KSDTest` on the whole sample (its method
    says so). The model needs a
    ``logpdf`` up to a constant, besides its score.

    Parameters
    ----------
    model : distribution
        A continuous model with ``grad_logpdf(X)`` and ``logpdf(X)`` (up to a constant).
    n_steps : int, default=10
        Metropolis-Hastings moves per point: the user's choice, not tuned on the
        measurements quoted here. Each move gives a point one more chance to jump; once
        the moved copy has mixed between the modes, more moves add nothing but cost.
        0 makes the test the KSD test of the tested part.
    jump_scales : array-like of float, default=None
        The jump scales :math:`\theta` to choose from; None: ``JUMP_SCALES``, 0.8 to
        1.2 in 21 steps (:math:`\theta = 1` maps mode onto mode; near it, jumped points
        land off the centre of their new mode, which is what the statistic sees).
    train_size : float or int, default=0.5
        The training part of the split of an unfitted test (fraction or number of rows).
    n_starts : int, default=20
        Starting points of the mode search, spread over the training data; more find
        more modes of a model with many. Each start costs a BFGS search on
        :math:`-\log p`, a Hessian from ``2 D`` score evaluations and its
        eigendecomposition, cubic in ``D``: an unfitted test of 50 points took 5.9 s at
        D = 1000 and 47 s at D = 2000 (30 points) on a 2-core machine.
    kernel : {"imq", "rbf"}, default="imq"
        Base kernel of the KSD (the paper's IMQ by default).
    bandwidth : "median", "aggregate", float or array-like, default="median"
        As in :class:`KSDTest` (the paper's median heuristic by default), resolved on
        the unperturbed points of the sample tested.
    n_bandwidths : int, default=10
        Size of the collection for ``bandwidth="aggregate"``.
    kernel_params : dict, default=None
        Extra kernel parameters, e.g. ``{"beta": -0.5}`` for IMQ.
    bootstrap : {"auto", "multinomial", "rademacher"}, default="auto"
        The bootstrap weights, one set for the sample and its perturbation. ``"auto"``:
        Rademacher weights where fewer than
        :data:`~skstein._bootstrap.AUTO_RADEMACHER_BELOW` (120) points are tested (the
        half of a sample of fewer than 240 points), multinomial ones from there on, as
        :class:`KSDTest` draws them: on a 3-D mixture null the test of 100 points
        rejected 0.062 of 2000 trials with the multinomial draws (bound 0.065) and
        0.054 with the Rademacher ones, and :class:`KSDTest` with the same kernel
        0.067 with the multinomial draws; at 500 points 0.051 and 0.047.
    n_bootstrap : int, default=1000
        Bootstrap draws.
    alpha : float, default=0.05
        Level of the test.
    random_state : None, int or Generator, default=None
        Seeds the split, the mode search, the moves and the bootstrap.
    max_memory : int, default=64 MiB
        Bytes the Stein passes' temporaries may hold, as in :class:`KSDTest`.
    whiten : bool or "aggregate", default=False
        As in :class:`KSDTest`: the kernels act in the coordinates that whiten the
        sample tested (its perturbation in the same coordinates).

    Attributes
    ----------
    modes_ : ndarray (K, D)
        Fitted: the modes found, by decreasing density. A mode counts where the log
        density is smooth with a positive definite Hessian, so a peak that is not
        smooth (a Laplace model's) is not found.
    mode_covariances_ : ndarray (K, D, D)
        Fitted: the inverse Hessian of :math:`-\log p` at each mode.
    jump_scale_ : float
        Fitted: the chosen jump scale (NaN with fewer than two modes).
    jump_scores_ : ndarray (len(jump_scales),)
        Fitted: the power criterion of each jump scale on the fitting data.
    n_features_in_ : int

    Notes
    -----
    ``score(X)`` is the power criterion (:meth:`KSDTest.score`) of the paired statistic
    on the part of ``X`` that is tested, ``discrepancy(X)`` its statistic(s).

    Measured with ``skstein reproduce gof-mixture`` (100 trials a cell; user guide,
    "What a score cannot see"): on a 1-D mixture of N(0, 1) and N(4, 0.25) whose data
    weights are 0.55 / 0.45 instead of 0.7 / 0.3 it rejected 0.49 at n = 1000 and 0.96
    at n = 2000, where the default :class:`KSDTest` rejected 0.06 and 0.04; on a 5-D
    mixture of two components 5 apart, 0.30 and 0.66 against 0.06 and 0.02; on three
    overlapping components in 3-D it gained nothing (0.11 and 0.06 against 0.10 and
    0.12). Its level held on every null measured (1-D, 3-D and 5-D mixtures, an RBM;
    0.048-0.057 in 500-2000 trials). On the 1-D mixture at n = 1000 a test took
    0.068 s (median of 9, one process, the 2-core development machine), against
    0.017 s for the KSD test with its kernel and 0.058 s for the default one: most of
    it is the choice among the jump scales (a chain each, with the model's ``logpdf``
    at every step, and one criterion pass over the moved copies, the sample's own
    Stein sums computed once) and the mode search.
    """

    def __init__(self, model, *, n_steps=10, jump_scales=None, train_size=0.5, n_starts=20,
                 kernel="imq", bandwidth="median", n_bandwidths=10, kernel_params=None,
                 bootstrap="auto", n_bootstrap=1000, alpha=0.05, random_state=None,
                 max_memory=DEFAULT_MAX_MEMORY, whiten=False):
        self.model = model
        self.n_steps = n_steps
        self.jump_scales = jump_scales
        self.train_size = train_size
        self.n_starts = n_starts
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.n_bandwidths = n_bandwidths
        self.kernel_params = kernel_params
        self.bootstrap = bootstrap
        self.n_bootstrap = n_bootstrap
        self.alpha = alpha
        self.random_state = random_state
        self.max_memory = max_memory
        self.whiten = whiten

    @staticmethod
    def _run(method, *args, **kwargs):
        """``method`` of the KSD engine, with the warning about too few bootstrap draws
        filtered: :meth:`_check_params` gave it once, and the inner KSD test repeats its
        checks."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"n_bootstrap=\d+ is too small",
                                    category=UserWarning)
            return getattr(LangevinKSD(NumbaEngine()), method)(*args, **kwargs)

    def _ksd(self, seed):
        """The KSD test (U-statistic) that computes the statistics, bootstrapped from
        ``seed`` (``"auto"`` draws by the size of the sample it tests)."""
        return KSDTest(self.model, kernel=self.kernel, bandwidth=self.bandwidth,
                       n_bandwidths=self.n_bandwidths, kernel_params=self.kernel_params,
                       bootstrap=self.bootstrap, n_bootstrap=self.n_bootstrap,
                       alpha=self.alpha, random_state=seed, max_memory=self.max_memory,
                       whiten=self.whiten)

    def _scales(self):
        if self.jump_scales is None:
            return np.array(JUMP_SCALES)
        scales = np.asarray(self.jump_scales)
        if scales.dtype.kind not in "iuf" or scales.ndim != 1 or scales.size == 0 \
                or not np.all(np.isfinite(scales)):
            raise ValueError("jump_scales must be a non-empty 1-D array of finite numbers, "
                             f"got {self.jump_scales!r}.")
        return scales.astype(np.float64)

    def _check_params(self):
        if discrete_operator(self) is not None:
            raise TypeError("PerturbedKSDTest is for continuous models; model is discrete "
                            "(it declares n_values).")
        self._ksd(0)._check_common_params()
        model_logpdf(self.model)
        if isinstance(self.n_steps, bool) or not isinstance(self.n_steps, numbers.Integral) \
                or self.n_steps < 0:
            raise ValueError(f"n_steps must be a non-negative int, got {self.n_steps!r}.")
        check_positive_int(self.n_starts, "n_starts")
        self._scales()

    def _streams(self):
        """Seeds of the split, the mode search, the selection's moves, the test's moves
        and the bootstrap, from ``random_state``."""
        rng = as_generator(self.random_state)
        return [int(s) for s in rng.integers(0, 2**63 - 1, size=5)]

    def _learn(self, X, search_seed, select_seed):
        """Modes, the chosen jump scale and every scale's criterion, learned on ``X``."""
        modes = find_modes(self.model, X, self.n_starts, search_seed)
        scales = self._scales()
        if len(modes) < 2:
            return modes, np.nan, np.full(scales.size, np.nan)
        # the same random numbers for every scale: the criteria differ by the scale
        moved = [jump_chain(self.model, X, modes, theta, self.n_steps, select_seed)[0]
                 for theta in scales]
        crit = self._run("score_companions", self._ksd(0), X, moved)
        return modes, float(scales[int(np.argmax(crit))]), crit

    def _fit(self, X):
        _, search_seed, select_seed, _, _ = self._streams()
        modes, theta, crit = self._learn(X, search_seed, select_seed)
        self.modes_, self.mode_covariances_ = modes.centres, modes.covariances
        self._modes = modes
        self.jump_scale_ = theta
        self.jump_scores_ = crit

    def _plan(self, X):
        """``(ksd, X_tested, companions, description)`` of a test on ``X``."""
        self._check_params()
        split_seed, search_seed, select_seed, move_seed, boot_seed = self._streams()
        if is_fitted(self):
            X = self._validate_X(X, reset=False)
            modes, theta, X_test = self._modes, self.jump_scale_, X
        else:
            X = check_samples(X)
            check_model_dim(self.model, X, "model")
            train, test = split_indices(X.shape[0], self.train_size,
                                        as_generator(split_seed))
            with on_training_part(X[train], self.train_size):
                modes, theta, _ = self._learn(X[train], search_seed, select_seed)
            X_test = X[test]
        ksd = self._ksd(boot_seed)
        if len(modes) < 2:
            # a peak that is not smooth (a Laplace model's) has no Hessian to check
            found = ("1 mode found" if len(modes) else "no mode found where the log "
                     "density is smooth with a positive definite Hessian")
            return ksd, X, (), (f"{found}, nothing to jump between: the KSD test of the "
                                "whole sample")
        Y, acceptance = jump_chain(self.model, X_test, modes, theta, self.n_steps, move_seed)
        return ksd, X_test, (Y,), (f"perturbed by {self.n_steps} jumps between "
                                   f"{len(modes)} modes, jump scale {theta:.3g}, "
                                   f"acceptance {acceptance:.2f}")

    def _test(self, X):
        from dataclasses import replace

        ksd, X_test, companions, description = self._plan(X)
        result = self._run("test", ksd, X_test, companions=companions)
        return replace(result, method=f"{result.method[:-1]}; {description})")

    def _discrepancy(self, X):
        ksd, X_test, companions, _ = self._plan(X)
        return self._run("discrepancy", ksd, X_test, companions=companions)

    def _score(self, X):
        ksd, X_test, companions, _ = self._plan(X)
        return self._run("score", ksd, X_test, companions=companions)
