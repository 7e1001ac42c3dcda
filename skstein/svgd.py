r"""Particle samplers: Stein variational gradient descent and its sliced variant.

Both move a set of particles towards a target :math:`p`, given by its score alone,
along the direction that decreases the KL divergence fastest within the unit ball of
an RKHS (Liu & Wang 2016). Sliced SVGD (Gong, Li & Hernández-Lobato 2021, Algorithm 2)
uses one 1-D kernel per dimension, acting on the projection of the particles on a
learned direction, which keeps the repulsive force alive in high dimensions where
plain SVGD collapses to the mode (under-estimates the variance).

Why these are not scikit-learn transformers: the particles interact (the update of
one depends on all others), so the image of a point is not a function of that point.
``fit(X0)`` moves a particle set; ``move(X)`` moves another set with the same
settings (and, for :class:`SlicedSVGD`, starting from the learned directions).
"""

import copy
import functools
import numbers
import sys
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ._progress import check_verbose, progress_bar, verbosity
from ._random import as_generator
from ._validation import (
    caller_stacklevel,
    check_choice,
    check_model_dim,
    check_positive_float,
    check_positive_int,
    evaluate_score,
    named_errors,
    resolve_score,
    validate_samples,
)
from ._gradients import _sliced_pass
from .discrepancy import (
    _sliced_kernel_params,
    check_stein_finite,
    sliced_value_and_grad,
    stein_sums,
)
from .directions import _Adam, _tangent_unit_rows, _unit_rows
from ._flows_xp import SVGDTermsXp, sliced_svgd_terms_xp
from ._xp import (check_same_namespace, host_single_blas, is_device_array, namespace_of,
                  to_host, waits_for_device)
from ._xp_stein import xp_check_score_finite, xp_evaluate_score, xp_sums_and_forms
from .flows import (
    SVGDFlow,
    adagrad_update,
    bandwidth_scale,
    field_from_terms,
    kernel_code,
    projection_medians,
    sliced_terms,
    svgd_direction,
)
from .kernels import (
    KERNELS,
    MIN_BANDWIDTH,
    check_bandwidth,
    inverse_square,
    make_kernel,
    median_bandwidth,
)

__all__ = ["SVGD", "SlicedSVGD", "score_frame", "scores_correlated"]

OPTIMIZERS = ("sgd", "adagrad", "adam")
#: Largest magnitude whose square float64 holds (the adaptive steps square the direction).
_MAX_SQUARABLE = float(np.sqrt(np.finfo(np.float64).max))
#: Particles beyond this magnitude have diverged (their squared distances would overflow).
_DIVERGED = 1e150
#: On an accelerator, the particles are checked every this many iterations (and at each
#: recorded one): each check waits for the device, and between checks the host queues
#: the next iterations' work while the device runs.
DEVICE_CHECK_EVERY = 16
BANDWIDTHS = ("median", "median-log")
#: the slice rules of :class:`SlicedSVGD`
SLICE_RULES = ("auto", "axes", "score")
#: ``slices="auto"``: permutations of the independence check and its margin in null
#: standard deviations (see :func:`scores_correlated`)
SLICE_CHECK_PERMUTATIONS = 50
SLICE_CHECK_MARGIN = 4.0


class _Optimizer:
    """Per-coordinate step rules for the particle update.

    * ``sgd``: ``step_size * phi``.
    * ``adagrad``: the rule of the original SVGD code (an RMSprop-like running
      average): ``v = phi^2`` at the first step, then ``v = 0.9 v + 0.1 phi^2``;
      step ``step_size * phi / (1e-6 + sqrt(v))`` (one compiled pass with the
      update of the particles and the checks).
    * ``adam``: Adam (beta1 = 0.9, beta2 = 0.999, eps = 1e-8).
    """

    def __init__(self, name, step_size, shape):
        self.name, self.lr = name, step_size
        self.v = np.zeros(shape) if name == "adagrad" else None
        self.t = 0
        self.adam = _Adam(shape) if name == "adam" else None

    def _check_squarable(self, top):
        """Raise unless ``top`` (the largest ``|phi|``) can be squared in float64."""
        if not top < _MAX_SQUARABLE:
            raise ValueError(
                f"the SVGD direction reaches {top:.3g}, beyond what the {self.name} step can "
                "square in float64: the scores of the target or the particles X are too "
                "large; rescale them or use optimizer='sgd'.")

    def apply(self, drive, repulse, X):
        """Move ``X`` in place by the step for ``phi = (drive + repulse) / N``.

        ``drive`` may be overwritten. Returns the step and ``max |X|`` after it.
        """
        self.t += 1
        if self.name == "adagrad":
            vmax, xtop = adagrad_update(drive, repulse, X.shape[0], self.v, self.t == 1,
                                        self.lr, X)
            if not np.isfinite(vmax):  # some phi^2 overflowed (or phi is NaN)
                self._check_squarable(np.inf if vmax == np.inf else vmax)
            return drive, xtop
        phi = field_from_terms(drive, repulse, X.shape[0])
        if self.name == "sgd":
            step = self.lr * phi
        else:
            self._check_squarable(float(np.max(np.abs(phi))))
            step = self.lr * self.adam.step(phi)
        X += step
        return step, float(np.max(np.abs(X)))


def _check_particle_sets(Z):
    """``Z`` of ``direction``: a float64 copy of shape ``(N, D)`` or ``(B, N, D)``.

    Finite, at least two particles per set and one feature; every error names ``Z``.
    """
    if is_device_array(Z):
        raise TypeError(f"Z is a {type(Z).__name__}: direction computes on NumPy arrays; "
                        "pass a NumPy copy (e.g. z.detach().cpu().numpy()).")
    if np.iscomplexobj(Z):
        raise ValueError("Z must hold real numbers, got a complex array.")
    with named_errors("Z"):
        Z = np.array(Z, dtype=np.float64, order="C")
    if Z.ndim not in (2, 3):
        raise ValueError("Z must be a 2-D array (n_particles, n_features) or a 3-D array "
                         f"(batch, n_particles, n_features), got shape {Z.shape}.")
    if Z.shape[-2] < 2:
        raise ValueError(f"Z has {Z.shape[-2]} particle(s) per set (shape={Z.shape}); the "
                         "field needs at least 2.")
    if Z.shape[-1] < 1 or Z.shape[0] < 1:
        raise ValueError(f"Z is empty (shape={Z.shape}).")
    rows = np.all(np.isfinite(Z), axis=-1)
    if not np.all(rows):
        raise ValueError(f"Z is not finite at {int(np.sum(~rows))} of its {rows.size} "
                         "particles.")
    return Z


class _ParticleSampler(BaseEstimator):
    _required_parameters = ["target"]
    #: whether ``_terms`` checks the scores' finiteness (then later iterations skip it)
    _fused_score_check = False

    def __init__(self, target, *, n_particles=100, n_iter=1000, step_size=0.1,
                 optimizer="adagrad", kernel="rbf", bandwidth="median-log", kernel_params=None,
                 repulsion_warmup=0, history_every=10, random_state=None, verbose=0):
        # the parameters every particle sampler has (SVGD's signature and defaults)
        self.target = target
        self.n_particles = n_particles
        self.n_iter = n_iter
        self.step_size = step_size
        self.optimizer = optimizer
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.kernel_params = kernel_params
        self.repulsion_warmup = repulsion_warmup
        self.history_every = history_every
        self.random_state = random_state
        self.verbose = verbose

    def _check_params(self, target=True):
        if target:  # False where a score is given in its place (``direction``)
            resolve_score(self.target, "target")
        check_positive_int(self.n_particles, "n_particles", minimum=1)
        check_positive_int(self.n_iter, "n_iter", minimum=0)
        check_positive_float(self.step_size, "step_size")
        check_choice(self.optimizer, "optimizer", OPTIMIZERS)
        check_choice(self.kernel, "kernel", KERNELS)
        check_positive_int(self.history_every, "history_every")
        check_positive_int(self.repulsion_warmup, "repulsion_warmup", minimum=0)
        check_verbose(self.verbose)
        if isinstance(self.bandwidth, str):
            check_choice(self.bandwidth, "bandwidth", BANDWIDTHS)
        else:
            check_bandwidth(self.bandwidth)
        make_kernel(self.kernel, 1.0, self.kernel_params)

    def _initial(self, X0, rng, reset):
        if X0 is None:
            dim = getattr(self.target, "dim", None)
            if dim is None:
                raise ValueError("X0 is None and target has no 'dim': give initial particles X0.")
            X = rng.standard_normal((self.n_particles, int(dim)))
            if reset:
                self.n_features_in_ = int(dim)
            return X
        X = validate_samples(self, X0, reset=reset, min_samples=1, copy=True)
        repeated = X.shape[0] - np.unique(X, axis=0).shape[0]
        if repeated:
            warnings.warn(
                f"{'X0' if reset else 'X'} has {repeated} repeated row(s) among "
                f"{X.shape[0]} particles: {type(self).__name__} moves equal particles "
                "identically, so they never separate; start from distinct particles.",
                UserWarning, stacklevel=caller_stacklevel())
        return X

    def _validate_score_X(self, X):
        """``X`` of :meth:`score`: finite, at least 2 rows, the fitted width (if fitted)."""
        return validate_samples(self, X, reset=False)

    def _score_state(self):
        """The state :meth:`score` measures with; ``None`` where the sampler keeps none."""
        return None

    def _field_scores(self, Z, score):
        """The scores at the particles ``Z`` (validated by :func:`_check_particle_sets`).

        ``score`` (a callable or a distribution), or the target's when it is None, is
        called once on a copy of the whole of ``Z`` and must answer with a finite array
        of ``Z``'s shape; the errors name ``score`` (or ``target``).
        """
        name = "target" if score is None else "score"
        model = self.target if score is None else score
        fn = resolve_score(model, name)
        what = "the score of target" if score is None else "score"
        dim = getattr(model, "dim", None)
        if dim is not None and not callable(dim) and int(dim) != Z.shape[-1]:
            raise ValueError(f"Z has {Z.shape[-1]} features but {name} is a distribution on "
                             f"{int(dim)} dimensions.")
        values = check_same_namespace(None, Z, fn(Z.copy()), what, reference="Z")
        try:
            S = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{what} must return an array of floats of the shape of Z; it "
                            f"returned {type(values).__name__}: {exc}") from exc
        if S.shape != Z.shape:
            raise ValueError(f"{what} returned an array of shape {S.shape} for Z of shape "
                             f"{Z.shape}; it must return grad log p at each particle, an "
                             "array of Z's shape.")
        rows = np.all(np.isfinite(S), axis=-1)
        if not np.all(rows):
            raise ValueError(f"{what} is not finite at {int(np.sum(~rows))} of the "
                             f"{rows.size} particles of Z.")
        return np.ascontiguousarray(S)

    @host_single_blas
    def score(self, X, y=None):
        """Minus the discrepancy the sampler reduces, of ``X`` to the target.

        :class:`SVGD`: the KSD (U-statistic, RBF kernel, median bandwidth).
        :class:`SlicedSVGD`: the sliced KSD (maxSKSD-g objective) along
        ``directions_``, the identity directions when not fitted.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            A set of points, e.g. particles: at least 2, and after :meth:`fit` the
            fitted number of features.
        y : None
            Ignored; present for the scikit-learn API.

        Returns
        -------
        float
        """
        X = self._validate_score_X(X)
        S = evaluate_score(self.target, X, "target")
        return -self._discrepancy(X, S, self._score_state())

    @host_single_blas
    def fit(self, X0=None, y=None):
        """Move the initial particles ``X0`` (or ``n_particles`` draws from N(0, I)).

        Parameters
        ----------
        X0 : array-like of shape (n_particles, n_features), default=None
            Initial particles. ``None`` draws ``n_particles`` standard normal
            particles (needs ``target.dim``). Repeated rows warn: the update moves
            equal particles identically, so they never separate. An array of another
            Array API library (CuPy, PyTorch, ``array-api-strict``), with
            ``sklearn.set_config(array_api_dispatch=True)``, is moved with that
            library on its device (the target's score must then return arrays of the
            same library and device), and ``particles_`` is such an array: float32
            particles stay float32 there, others become float64.
        y : ignored

        Returns
        -------
        self
        """
        self._check_params()
        rng = as_generator(self.random_state)
        xp = None if X0 is None else namespace_of(X0, "X0")
        X = self._initial(X0 if xp is None else to_host(X0), rng, reset=True)
        run = self._run if xp is None else functools.partial(self._run_xp, xp, X0)
        self.particles_, self.n_iter_, self.history_, state = run(X, rng, None)
        self._store_state(state)
        return self

    @host_single_blas
    def move(self, X, n_iter=None):
        """Move the particles ``X`` with the fitted settings.

        The estimator's state is not changed. After :meth:`fit`, ``X`` must have the
        fitted number of features.

        Parameters
        ----------
        X : array-like of shape (n_particles, n_features)
            The particles to move.
        n_iter : int, default=None
            Iterations; ``None`` uses ``self.n_iter``.

        Returns
        -------
        array of shape (n_particles, n_features)
            The moved particles, in the namespace of ``X`` (see :meth:`fit`).
        """
        self._check_params()
        rng = as_generator(self.random_state)
        xp = namespace_of(X, "X")
        Xd = X
        X = self._initial(X if xp is None else to_host(X), rng, reset=False)
        if n_iter is not None:
            check_positive_int(n_iter, "n_iter", minimum=0)
        run = self._run if xp is None else functools.partial(self._run_xp, xp, Xd)
        particles, _, _, _ = run(X, rng, self._warm_state(), n_iter)
        return particles

    def _scores(self, score, X, first):
        """The target's score at ``X``: validated in full at the first iteration.

        Later iterations check the shape here and finiteness in the update pass
        (``_terms``), which reads the scores anyway.
        """
        if first or not self._fused_score_check:
            values = None
            if first:  # NumPy particles: the score must not answer with device arrays
                # (one call: a mini-batch score would otherwise skip a batch)
                check_model_dim(self.target, X, "target")
                values = check_same_namespace(None, X, score(X.copy()), "the score of target")
            return evaluate_score(self.target, X, "target", check_tails=False, values=values)
        values = score(X.copy())  # a score that writes into X changes nothing
        S = np.asarray(values, dtype=np.float64) if not isinstance(values, np.ndarray) or \
            values.dtype != np.float64 else values
        if S.shape != X.shape:
            return evaluate_score(self.target, X, "target", check_tails=False)  # its error
        return S if S.flags.c_contiguous else np.ascontiguousarray(S)

    def _repulsion_weight(self, it):
        """Weight of the repulsive term at iteration ``it`` (``repulsion_warmup``)."""
        return 1.0 if it >= self.repulsion_warmup else (it + 1.0) / self.repulsion_warmup

    def _run(self, X, rng, warm, n_iter=None):
        n_iter = self.n_iter if n_iter is None else n_iter
        X = np.array(X, dtype=np.float64, order="C")  # moved in place
        opt = _Optimizer(self.optimizer, self.step_size, X.shape)
        score = resolve_score(self.target, "target")
        # the first scores serve the initial state too (one call per iteration: a
        # mini-batch score must not skip a batch)
        S = self._scores(score, X, True) if n_iter else None
        state = self._init_state(X, warm, rng, S)
        hist = {"iteration": [], "step_norm": [], "discrepancy": [], "repulsive_force": [],
                "variance": []}
        name = type(self).__name__
        detail = verbosity(self.verbose) >= 2
        with progress_bar(n_iter, verbose=self.verbose, desc=name) as bar:
            for it in range(n_iter):
                if it:
                    S = self._scores(score, X, False)
                drive, repulse = self._terms(X, S, state, it, rng)
                if it < self.repulsion_warmup:
                    repulse *= self._repulsion_weight(it)
                record = it % self.history_every == 0 or it == n_iter - 1
                if record:
                    hist["iteration"].append(it)
                    hist["discrepancy"].append(self._discrepancy(X, S, state, history=True))
                    hist["repulsive_force"].append(
                        float(np.mean(np.linalg.norm(repulse / X.shape[0], axis=1))))
                    hist["variance"].append(
                        float(np.mean(X.var(axis=0, ddof=1))) if X.shape[0] > 1
                        else float("nan"))
                update, top = opt.apply(drive, repulse, X)
                if record:
                    hist["step_norm"].append(float(np.mean(np.linalg.norm(update, axis=1))))
                    status = (f"step {hist['step_norm'][-1]:.3e}  "
                              f"discrepancy {hist['discrepancy'][-1]:.4e}")
                    bar.set_postfix_str(status)
                    if detail:
                        bar.write(f"[{name}] iter {it:5d}  {status}", file=sys.stderr)
                if not top < _DIVERGED:
                    raise ValueError(
                        f"the particles diverged at iteration {it} (an entry beyond "
                        f"{_DIVERGED:g} or not finite): the step (step_size="
                        f"{self.step_size!r}, optimizer={self.optimizer!r}) is too large "
                        "for the target's scores, or they are too large for float64.")
                bar.update(1)
        history = {k: np.asarray(v) for k, v in hist.items()}
        return X, n_iter, history, state


    def _run_xp(self, xp, Xd, X, rng, warm, n_iter=None):
        """:meth:`_run` with an Array API namespace: particles, scores and the update on
        the device of ``Xd``; ``X`` is its validated host copy (for the bookkeeping
        that runs on the host: history records, direction updates of SlicedSVGD).

        Reading a value on the host waits for the device, so on an accelerator
        (:func:`~skstein._xp.waits_for_device`) the check of the moved particles runs
        at recorded iterations and every :data:`DEVICE_CHECK_EVERY` iterations, not at
        each: the host queues the next iterations meanwhile. When a check fails, the
        iterations since the last good one run again, checked one by one, so the
        error names the iteration and its cause as the one-by-one check does.
        """
        n_iter = self.n_iter if n_iter is None else n_iter
        score = resolve_score(self.target, "target")
        import array_api_compat

        dev = array_api_compat.device(Xd)
        every = DEVICE_CHECK_EVERY if waits_for_device(Xd) else 1
        # float32 particles stay float32 (a device's fast precision); others float64
        Xd = xp.astype(Xd, Xd.dtype if Xd.dtype == xp.float32 else xp.float64, copy=True)
        state = self._init_state_xp(xp, Xd, X, warm, rng, score)
        opt = _OptimizerXp(xp, self.optimizer, self.step_size, X.shape, dev)
        hist = {"iteration": [], "step_norm": [], "discrepancy": [], "repulsive_force": [],
                "variance": []}
        n = X.shape[0]
        it, good = 0, None
        while it < n_iter:
            if every > 1 and good is None:
                # what the iterations from here change, kept until the next check passes
                good = (it, Xd, opt.snapshot(), self._snapshot_state(state),
                        rng.bit_generator.state, {k: len(v) for k, v in hist.items()})
            try:
                S = xp_evaluate_score(score, Xd, xp, "target", check_finite=False)
                drive, repulse = self._terms_xp(xp, Xd, S, state, it, rng)
                if it < self.repulsion_warmup:
                    repulse = repulse * self._repulsion_weight(it)
                record = it % self.history_every == 0 or it == n_iter - 1
                if record:  # values read off the device, not its arrays
                    hist["iteration"].append(it)
                    hist["discrepancy"].append(self._history_discrepancy_xp(xp, Xd, S, state))
                    hist["repulsive_force"].append(_mean_row_norm(xp, repulse) / n)
                    hist["variance"].append(float(xp.mean(xp.var(Xd, axis=0, correction=1)))
                                            if n > 1 else float("nan"))
                step = opt.step((drive + repulse) / n)
                if record:
                    hist["step_norm"].append(_mean_row_norm(xp, step))
                Xd = Xd + step
                checked = every == 1 or record or it + 1 - good[0] >= every \
                    or it == n_iter - 1
                diverged = checked and not float(xp.max(xp.abs(Xd))) < _DIVERGED
            except (ValueError, FloatingPointError):
                if every == 1:
                    raise
                diverged = True  # found by an unchecked iteration's host work
            if diverged:
                if every > 1:  # run the iterations since the last good check one by one
                    it, Xd, kept, state, rng.bit_generator.state, lengths = good
                    opt.restore(kept)
                    for k, v in hist.items():
                        del v[lengths[k]:]
                    every = 1
                    continue
                xp_check_score_finite(S, xp, "target")
                opt.check_finite()
                raise ValueError(
                    f"the particles diverged at iteration {it} (an entry beyond "
                    f"{_DIVERGED:g} or not finite): the step (step_size="
                    f"{self.step_size!r}, optimizer={self.optimizer!r}) is too large "
                    "for the target's scores, or they are too large for float64.")
            if checked:
                good = None
            it += 1
        history = {k: np.asarray(v) for k, v in hist.items()}
        return Xd, n_iter, history, self._host_state(xp, state, dev)

    def _snapshot_state(self, state):
        """A copy of the run's state that later iterations leave alone (:meth:`_run_xp`)."""
        return state

    def _history_discrepancy_xp(self, xp, X, S, state):
        """The history's discrepancy of device particles: by default on host copies."""
        return self._discrepancy(to_host(X), to_host(S), state, history=True)


def _mean_row_norm(xp, A):
    """Mean Euclidean norm of the rows of ``A``, a float read off its device."""
    return float(xp.mean(xp.sqrt(xp.sum(A * A, axis=1))))


def _supports_float64(xp, device):
    """Whether ``xp`` has float64 arrays on ``device`` (some GPUs' libraries do not)."""
    try:
        return "float64" in xp.__array_namespace_info__().dtypes(device=device)
    except Exception:  # a library without the inspection API: assume it has float64
        return True


class _OptimizerXp(_Optimizer):
    """:class:`_Optimizer` in an Array API namespace (same arithmetic)."""

    def __init__(self, xp, name, step_size, shape, device):
        self.xp, self.name, self.lr, self.t = xp, name, step_size, 0
        self.v = None
        self.m = None
        self.last = None

    def snapshot(self):
        """The step rule's state (its arrays are replaced, never changed in place)."""
        return self.t, self.v, self.m, self.last

    def restore(self, kept):
        self.t, self.v, self.m, self.last = kept

    def check_finite(self):
        """The host's check of the last field's squares (:meth:`_check_squarable`), run
        when the particles stopped being finite (the step does not wait for it)."""
        xp = self.xp
        if self.last is not None and not bool(xp.all(xp.isfinite(self.last * self.last))):
            self._check_squarable(float(xp.max(xp.abs(self.last))))

    def step(self, phi):
        xp = self.xp
        self.t += 1
        if self.name == "sgd":
            return self.lr * phi
        sq = phi * phi
        self.last = phi
        if self.name == "adagrad":
            self.v = sq if self.t == 1 else self.v * 0.9 + sq * 0.1
            return phi / (xp.sqrt(self.v) + 1e-6) * self.lr
        b1, b2 = 0.9, 0.999
        self.m = (1 - b1) * phi if self.m is None else self.m * b1 + (1 - b1) * phi
        self.v = (1 - b2) * phi * phi if self.v is None else self.v * b2 + (1 - b2) * phi * phi
        mhat = self.m / (1 - b1**self.t)
        vhat = self.v / (1 - b2**self.t)
        return self.lr * (mhat / (xp.sqrt(vhat) + 1e-8))


class SVGD(_ParticleSampler):
    r"""Stein variational gradient descent (Liu & Wang 2016).

    Each iteration evaluates the target's score once and moves every particle by
    :math:`\phi(x_i) = \frac1N \sum_j [k(x_j, x_i) s(x_j) + \nabla_{x_j} k(x_j, x_i)]`
    (driving term plus repulsive term) through the chosen step rule.

    Parameters
    ----------
    target : distribution or callable
        The target's score ``grad log p`` (``grad_logpdf`` or a callable).
    n_particles : int, default=100
        Number of particles drawn from N(0, I) when ``fit`` gets no ``X0``.
    n_iter : int, default=1000
    step_size : float, default=0.1
    optimizer : {"adagrad", "sgd", "adam"}, default="adagrad"
        ``"adagrad"`` is the RMSprop-like rule of the original SVGD code.
    kernel : {"rbf", "imq"}, default="rbf"
    bandwidth : {"median-log", "median"} or float, default="median-log"
        Re-estimated every iteration: ``"median"`` is the median pairwise distance
        ``med``; ``"median-log"`` is ``med / sqrt(2 log(N + 1))``, the heuristic of
        the original SVGD code (there written ``h = med^2 / log(N + 1)`` for the
        kernel ``exp(-d^2 / h)``), which makes the kernel sum over neighbours about 1.
    kernel_params : dict, default=None
    repulsion_warmup : int, default=0
        Iterations over which the repulsive term is phased in: at iteration ``t``
        (counted from 0 in each :meth:`fit` or :meth:`move`) it is weighted by
        ``min(1, (t + 1) / repulsion_warmup)``. ``0``: full weight throughout. For
        particles started (nearly) on top of each other, where the repulsion of a
        tiny bandwidth would otherwise dominate the first steps (Gong et al.'s UCI
        script phases it in over 1000 epochs).
    history_every : int, default=10
        Record the trace every this many iterations.
    random_state : None, int or Generator
        Only used to draw default initial particles.
    verbose : int, bool or "auto", default=0
        Progress on standard error: ``1`` (or ``True``) a bar with the time left and
        the latest step size and discrepancy (refreshed every ``history_every``
        iterations); ``2`` also a line per history record; ``"auto"`` the bar only
        when standard error is a terminal. The particles do not depend on it.

    Attributes
    ----------
    particles_ : ndarray (n_particles, n_features)
    n_iter_ : int
    history_ : dict of ndarrays
        ``iteration``, ``step_norm`` (mean particle step), ``discrepancy`` (KSD U-statistic,
        RBF kernel, median bandwidth, of the particles before that iteration's step),
        ``repulsive_force`` (mean norm of the repulsive term; "PARF"), ``variance``
        (per-dimension particle variance averaged over dimensions, before the step).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from skstein import SVGD
    >>> from skstein.distributions import Gaussian
    >>> svgd = SVGD(Gaussian(np.ones(2)), n_particles=50, n_iter=300, random_state=0).fit()
    >>> bool(np.allclose(svgd.particles_.mean(axis=0), 1.0, atol=0.1))
    True
    """

    # __init__: the parameters of every particle sampler, stored by _ParticleSampler

    _fused_score_check = True

    @host_single_blas
    def direction(self, Z, score=None):
        r"""The SVGD field :math:`\phi` at the particles ``Z`` (amortised SVGD).

        :math:`\phi(z_i) = \frac1N \sum_j [k(z_j, z_i) s(z_j) + \nabla_{z_j} k(z_j,
        z_i)]`, with the estimator's ``kernel``, ``bandwidth`` rule and
        ``kernel_params``: the same numbers :meth:`fit` steps along, so one
        ``optimizer="sgd"`` iteration of :meth:`fit` from ``X0`` gives
        ``X0 + step_size * direction(X0)``. The estimator is not changed.

        For particles produced by a model, e.g. an encoder trained by amortisation
        (Gong et al. 2021, Algorithm 3; Feng, Wang & Liu 2017): the encoder
        regresses onto the moved particles, with the target held fixed. With
        PyTorch (not a dependency of skstein):

        .. code-block:: python

            z = encoder(x, noise)                    # (batch, n_particles, D)
            phi = torch.as_tensor(svgd.direction(z.detach().numpy(), score))
            loss = 0.5 * ((z - (z + eps * phi).detach()) ** 2).sum()
            loss.backward()                          # the gradient is -eps * phi

        Parameters
        ----------
        Z : array-like of shape (n_particles, n_features) or (batch, n_particles, n_features)
            The particles: one set, or one set per batch item (each its own field,
            the bandwidth rule applied to each set alone). At least 2 particles per
            set, finite. NumPy only.
        score : callable or distribution, default=None
            The score ``grad log p`` at ``Z`` (a callable or an object with
            ``grad_logpdf``), for a target that changes from call to call (e.g. one
            posterior per image); ``None`` uses ``target`` (which may be ``None``
            when every call gives a score). It is called once, on a
            copy of the whole ``Z``, and must return a finite array of ``Z``'s shape
            (for a batch: ``(batch, n_particles, n_features)`` in and out).

        Returns
        -------
        ndarray of the shape of ``Z``
            The field at each particle.
        """
        self._check_params(target=score is None)
        Z = _check_particle_sets(Z)
        S = self._field_scores(Z, score)
        return svgd_direction(Z, S, self.kernel, self.bandwidth, self.kernel_params)

    def _init_state(self, X, warm, rng, S=None):
        return SVGDFlow(X.shape, self.kernel, self.bandwidth, self.kernel_params)

    def _warm_state(self):
        return None

    def _store_state(self, state):
        pass

    def _terms(self, X, S, state, it, rng):
        return state.terms(X, S)

    def _init_state_xp(self, xp, Xd, X, warm, rng, score):
        code, beta = kernel_code(self.kernel, self.kernel_params)
        if isinstance(self.bandwidth, str):
            scale, h = bandwidth_scale(self.bandwidth, X.shape[0]), 0.0
        else:
            scale, h = 1.0, float(self.bandwidth)
        return SVGDTermsXp(xp, Xd, code, beta, scale, h, MIN_BANDWIDTH)

    def _terms_xp(self, xp, X, S, state, it, rng):
        drive, repulse, _ = state.terms(X, S)
        return drive, repulse

    def _host_state(self, xp, state, device):
        return None

    def _discrepancy(self, X, S, state, history=False):
        if X.shape[0] < 2 or (history and np.all(X == X[0])):
            # the median heuristic needs two distinct particles: undefined in the
            # history, an error in score
            return float("nan")
        kern = make_kernel("rbf", median_bandwidth(X, max_points=1000))
        return float(stein_sums(X, S, kern).statistic("u"))

    def _history_discrepancy_xp(self, xp, X, S, state):
        """:meth:`_discrepancy` on the device of ``X``, in float64 (the host's precision):
        the median bandwidth and the Stein sums of the Array API engine, one float read
        back. Arrays on the CPU (the compiled pass is faster there) and devices without
        float64 take host copies."""
        import array_api_compat

        if not (waits_for_device(X) and _supports_float64(xp, array_api_compat.device(X))):
            return super()._history_discrepancy_xp(xp, X, S, state)
        if X.shape[0] < 2 or bool(xp.all(X == X[0:1, :])):
            return float("nan")
        X, S = xp.astype(X, xp.float64), xp.astype(S, xp.float64)
        kern = make_kernel("rbf", median_bandwidth(X, max_points=1000))
        sums, _ = xp_sums_and_forms(X, S, [kern], None)
        return float(sums[0].statistic("u"))


def score_frame(S):
    """Orthonormal rows: eigenvectors of the covariance of the scores ``S``, largest first.

    Each row's sign makes its largest-magnitude entry positive, so the frame does
    not depend on the eigensolver's sign convention.

    Parameters
    ----------
    S : ndarray of shape (n_particles, n_features)
        The target's scores at the particles.

    Returns
    -------
    ndarray of shape (n_features, n_features)
        The slices, one per row.
    """
    w, V = np.linalg.eigh(np.atleast_2d(np.cov(S.T)))
    R = V[:, ::-1].T
    k = np.argmax(np.abs(R), axis=1)
    R *= np.sign(R[np.arange(R.shape[0]), k])[:, None]
    return np.ascontiguousarray(R)


def scores_correlated(S, n_permutations=SLICE_CHECK_PERMUTATIONS, margin=SLICE_CHECK_MARGIN):
    r"""Whether the components of the scores ``S`` (N x D) are correlated beyond chance.

    The statistic is :math:`T = \sum_{i \ne j} r_{ij}^2`, the squared sample
    correlations of the score components (computed through the smaller of the two Gram
    matrices). Its null is that of independent components: ``n_permutations`` copies of
    ``S`` with each column permuted on its own (a fixed generator, so the answer
    depends on ``S`` alone). The components count as correlated when ``T`` exceeds the
    null's mean by ``margin`` of its standard deviations: about a 3e-5 tail if the null
    were normal, so independent components are almost never called correlated, while
    the scores of AR(1) Gaussian targets (neighbour correlation 0.5 to 0.9, D from 8
    to 50) at 50 to 100 isotropic particles gave ``T`` 27 to 44 null deviations out.
    Columns that are constant or not finite are left out; fewer than two columns, or
    fewer than three rows, are never called correlated.

    Parameters
    ----------
    S : array-like of shape (n_particles, n_features)
        The target's scores at the particles.
    n_permutations : int, default=50
        Column-permuted copies that simulate the null.
    margin : float, default=4.0
        Null standard deviations above the null mean beyond which the components
        count as correlated.

    Returns
    -------
    bool
    """
    S = np.asarray(S, dtype=np.float64)
    if S.ndim != 2 or S.shape[0] < 3:
        return False
    S = S[:, np.all(np.isfinite(S), axis=0)]
    Z = S - S.mean(axis=0)
    with np.errstate(over="ignore", invalid="ignore"):
        sd = np.sqrt(np.mean(Z * Z, axis=0))
    keep = np.isfinite(sd) & (sd > 0)
    Z = Z[:, keep] / sd[keep]
    n, d = Z.shape
    if d < 2:
        return False

    def stat(A):
        C = A.T @ A if d <= n else A @ A.T
        return (np.sum(C * C) / (n * n) - d)  # sum of squared off-diagonal correlations

    rng = np.random.default_rng(0)
    null = np.array([stat(rng.permuted(Z, axis=0)) for _ in range(int(n_permutations))])
    return bool(stat(Z) > null.mean() + margin * null.std(ddof=1))


def _is_identity(R):
    return bool(np.array_equal(R, np.eye(R.shape[0])))


def _moved(X, ref):
    """Root-mean-square displacement from ``ref`` over the spread of ``ref`` (inf if None)."""
    if ref is None:
        return np.inf
    spread = np.sqrt(np.mean((ref - ref.mean(axis=0)) ** 2))
    step = np.sqrt(np.mean((X - ref) ** 2))
    return step / spread if spread > 0 else np.inf


class SlicedSVGD(_ParticleSampler):
    r"""Sliced Stein variational gradient descent (Gong et al. 2021, Algorithm 2).

    Output dimension :math:`d` of the update uses a 1-D kernel on the projections
    :math:`u_{\cdot d} = X g_d` (slices :math:`r_d = e_d`):
    :math:`\phi_d(x_i) = \frac1N \sum_j [\kappa_d(u_{jd}, u_{id}) s_d(x_j) + G_{dd}
    \partial_{u_{jd}}\kappa_d(u_{jd}, u_{id})]`. The directions ``G`` are re-optimised
    as the particles move: every ``slice_update_every`` iterations, ``slice_steps``
    Adam steps of maxSKSD-g ascent (exact gradients, warm-started, optimiser state
    kept), using the score already evaluated for the particle update, but only when
    the particles have moved since the previous update by more than
    ``slice_update_tol`` times their spread (root-mean-square displacement over
    root-mean-square distance to their mean; after Gong et al. 2021, appendix J.1).
    While the particles travel the directions follow them; once they have settled,
    further ascent steps would only fit the noise of a fixed finite sample, and the
    directions stay where they are. (Measured before this rule, on the N(0, I_50)
    target with 50 particles: the ungated updates pulled ``G`` up to 0.46 off the
    identity over 3000 iterations and the particle variance drifted from 1.02 to
    1.17, while the particles moved by 0.1-0.6% of their spread per 10 iterations
    once settled, against 1-30% while travelling.) The per-dimension bandwidths are
    medians of the projections, refreshed every ``bandwidth_every`` iterations.

    With ``slices="score"`` the slices are not the axes but the eigenvectors of the
    covariance of the target's scores at the initial particles, kept for the run;
    the update is then :math:`\phi(x) = \sum_d r_d \phi_d(x)` with :math:`s_d =
    r_d^\top s_p` and :math:`G_{dd}` replaced by :math:`r_d^\top g_d`: the same
    algorithm in the rotated coordinates :math:`Rx`. For a Gaussian target
    :math:`N(\mu, \Sigma)` and isotropic initial particles these are the target's
    principal axes (the score covariance is :math:`\Sigma^{-1} C \Sigma^{-1}` for
    particles with covariance :math:`C`), in which the coordinates are independent.
    Along the axes, one 1-D kernel per coordinate cannot spread correlated
    coordinates: on :math:`N(0, \Sigma)` with :math:`\Sigma_{ij} = 0.9^{|i-j|}` in 50
    dimensions the particles' marginal variances settle near the conditional
    variances, about 0.11 of the target's, with fixed or learned ``G`` alike;
    with ``slices="score"`` they reach the target's (``svgd-variance``, part
    ``correlated``). Re-estimating the frame as the particles move fed back on the
    particles (their variance doubled in that case), so it is estimated once. The
    default ``slices="auto"`` takes the score frame only when the score components
    at the initial particles are correlated beyond chance; with independent
    particles on a factorised target it keeps the axes (0 of 240 draws of
    independent N(0, I) or Laplace scores with D from 2 to 1000 and N = 50 or 100
    were called correlated; an AR(1) target with neighbour correlation 0.3 was
    always detected).

    Parameters
    ----------
    target : distribution or callable
    n_particles : int, default=100
    n_iter : int, default=1000
    step_size : float, default=0.1
    optimizer : {"adagrad", "sgd", "adam"}, default="adagrad"
    kernel : {"rbf", "imq"}, default="rbf"
    bandwidth : {"median-log", "median"} or float, default="median"
        Per-dimension rule on the projections (see :class:`SVGD`), re-estimated
        every ``bandwidth_every`` iterations.
    kernel_params : dict, default=None
    init_directions : {"identity", "random"} or array (D, D), default="identity"
        Starting ``G`` (rows are normalised). The identity is optimal for
        factorised targets and particles (Gong et al. 2021, appendix E).
        With other slices, ``"identity"`` starts each direction at its slice.
    slices : {"auto", "axes", "score"} or array (D, D), default="auto"
        The slices :math:`r_d`: the coordinate axes (Gong et al. 2021), the
        eigenvectors of the score covariance at the initial particles (see above;
        for correlated targets), or given orthonormal rows. ``"auto"`` chooses
        between the first two from the initial particles: the score frame when the
        target's score components are correlated there beyond chance (a column
        permutation check, :func:`skstein.svgd.scores_correlated`) and there are more
        particles than dimensions (else the score covariance is singular and its
        frame partly arbitrary), the axes otherwise, so factorised targets keep the
        paper's algorithm. :meth:`move`
        keeps the fitted slices.
    slice_update_every : int, default=10
        Iterations between checks for a direction update (``0``: never update).
    slice_update_tol : float, default=0.05
        Relative displacement of the particles since the last update that triggers
        the next one (``0``: update at every check).
    slice_steps : int, default=1
        Ascent steps per update.
    slice_learning_rate : float, default=0.001
        Adam step of the direction updates.
    bandwidth_every : int, default=10
        Iterations between re-estimates of the per-dimension median bandwidths
        (the per-column medians cost more than an update at small N).
    repulsion_warmup : int, default=0
        As for :class:`SVGD`.
    history_every : int, default=10
    random_state : None, int or Generator
    verbose : int, bool or "auto", default=0
        As for :class:`SVGD`.

    Attributes
    ----------
    particles_ : ndarray (n_particles, n_features)
    directions_ : ndarray (n_features, n_features)
        The final test directions ``G`` (unit rows).
    slices_ : ndarray (n_features, n_features)
        The final slices ``R`` (orthonormal rows; the identity for ``"axes"``).
    n_direction_updates_ : int
        Direction updates made by :meth:`fit` (checks that found the particles moved).
    n_iter_ : int
    history_ : dict of ndarrays
        As for :class:`SVGD`; ``discrepancy`` is the sliced KSD (maxSKSD-g objective
        at the current directions).
    n_features_in_ : int
    """

    def __init__(self, target, *, n_particles=100, n_iter=1000, step_size=0.1,
                 optimizer="adagrad", kernel="rbf", bandwidth="median", kernel_params=None,
                 init_directions="identity", slices="auto", slice_update_every=10,
                 slice_update_tol=0.05,
                 slice_steps=1, slice_learning_rate=0.001, bandwidth_every=10,
                 repulsion_warmup=0, history_every=10, random_state=None, verbose=0):
        super().__init__(target, n_particles=n_particles, n_iter=n_iter, step_size=step_size,
                         optimizer=optimizer, kernel=kernel, bandwidth=bandwidth,
                         kernel_params=kernel_params, repulsion_warmup=repulsion_warmup,
                         history_every=history_every, random_state=random_state,
                         verbose=verbose)
        self.init_directions = init_directions
        self.slices = slices
        self.slice_update_every = slice_update_every
        self.slice_update_tol = slice_update_tol
        self.slice_steps = slice_steps
        self.slice_learning_rate = slice_learning_rate
        self.bandwidth_every = bandwidth_every

    @host_single_blas
    def direction(self, Z, score=None):
        r"""The sliced SVGD field at the particles ``Z``, after one direction update.

        Each call does what one iteration of :meth:`fit` does before its step: one
        update of the directions ``G`` on the current particles (``slice_steps``
        Adam ascent steps of the maxSKSD-g objective, the update the gate of
        :meth:`fit` would allow; none when ``slice_update_every=0``), then the field
        :math:`\phi_d(z_i) = \frac1N \sum_j [\kappa_d(u_{jd}, u_{id}) s_d(z_j) +
        G_{dd} \partial_{u_{jd}} \kappa_d(u_{jd}, u_{id})]` at the updated
        directions, its per-dimension bandwidths the medians of the projections
        before the update (as in :meth:`fit`). The updated directions are kept
        (``directions_``, ``slices_``, ``n_direction_updates_`` counts the update,
        and the Adam moments carry over), so successive calls are successive steps
        of Algorithm 3 of Gong et al. 2021 (amortised S-SVGD): from a fitted
        estimator they go on from its directions; one ``optimizer="sgd"`` iteration
        of :meth:`fit` from ``X0`` moves it to ``X0 + step_size * direction(X0)`` of
        an unfitted copy.

        Unfitted, the first call initialises the directions and slices from ``Z``
        (its first set for a batch) and the scores there, as :meth:`fit` does from
        its initial particles, with ``random_state`` (for
        ``init_directions="random"``), and sets ``n_features_in_``; a later call
        must have the same number of features.

        A batch shares one set of directions: the update ascends the mean of the
        sets' objectives (each set with its own median bandwidths) and every set's
        field uses the updated directions. With ``slice_update_every=0`` and the
        same starting directions (fitted, or ``slices="axes"``) a batch gives the
        fields of its sets called one by one.

        Parameters
        ----------
        Z : array-like of shape (n_particles, n_features) or (batch, n_particles, n_features)
            The particles, as for :meth:`SVGD.direction`. NumPy only.
        score : callable or distribution, default=None
            As for :meth:`SVGD.direction`: ``None`` uses ``target``.

        Returns
        -------
        ndarray of the shape of ``Z``
            The field at each particle.
        """
        self._check_params(target=score is None)
        Z = _check_particle_sets(Z)
        warm = self._warm_state()
        if warm is not None and warm[0].shape[1] != Z.shape[-1]:
            raise ValueError(f"Z has {Z.shape[-1]} features but the directions_ of this "
                             f"estimator are for {warm[0].shape[1]}.")
        S = self._field_scores(Z, score)
        n, d = Z.shape[-2:]
        sets = Z.reshape(-1, n, d)
        state = self._direction_state(sets[0], S.reshape(-1, n, d)[0])
        # the sets side by side: particle i of every set in row i, set b in columns
        # b*d .. (b+1)*d; every pass below works column by column, so the whole batch
        # is one pass and each set's numbers are those of the set alone
        Xt = np.ascontiguousarray(sets.transpose(1, 0, 2))
        St = np.ascontiguousarray(S.reshape(-1, n, d).transpose(1, 0, 2))
        # the medians of the projections U on G before the update, as fit's first step
        U = (Xt.reshape(-1, d) @ state["G"].T).reshape(n, -1)
        h = self._set_bandwidths(Xt, U)
        if self.slice_update_every:
            self._ascend(Xt, St, h, state, U)
            state["ref"] = sets[-1].copy()
            state["updates"] += 1
        rule = self.bandwidth if isinstance(self.bandwidth, str) else "median"
        drive, repulse = self._set_terms(Xt, St, h * bandwidth_scale(rule, n), state)
        phi = field_from_terms(drive, repulse, n).reshape(n, -1, d).transpose(1, 0, 2)
        self._store_state(state)
        self.n_features_in_ = d
        return np.ascontiguousarray(phi).reshape(Z.shape)

    def _check_params(self, target=True):
        super()._check_params(target)
        check_positive_int(self.slice_update_every, "slice_update_every", minimum=0)
        tol = self.slice_update_tol
        if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not (
                np.isfinite(tol) and tol >= 0):
            raise ValueError(f"slice_update_tol must be a non-negative float, got {tol!r}.")
        check_positive_int(self.slice_steps, "slice_steps", minimum=0)
        check_positive_float(self.slice_learning_rate, "slice_learning_rate")
        check_positive_int(self.bandwidth_every, "bandwidth_every")
        if isinstance(self.slices, str):
            check_choice(self.slices, "slices", SLICE_RULES)

    def _initial_slices(self, X, S=None):
        d = X.shape[1]
        if isinstance(self.slices, str):
            if self.slices == "axes" or X.shape[0] < 2:
                return np.eye(d)
            if S is None:
                S = evaluate_score(self.target, X, "target", check_tails=False)
            # with no more particles than dimensions the score covariance is singular
            # and the frame partly arbitrary: "auto" keeps the axes there
            if self.slices == "auto" and (X.shape[0] <= d or not scores_correlated(S)):
                return np.eye(d)
            return score_frame(S)
        R = np.asarray(self.slices, dtype=np.float64)
        if R.shape != (d, d) or not np.all(np.isfinite(R)) or not np.allclose(
                R @ R.T, np.eye(d), atol=1e-8):
            raise ValueError(f"slices must be 'auto', 'axes', 'score' or a ({d}, {d}) array with "
                             f"orthonormal rows, got shape {R.shape}.")
        return R.copy()

    def _init_state(self, X, warm, rng, S=None):
        d = X.shape[1]
        R = None
        if warm is not None:
            G, R = warm[0].copy(), warm[1].copy()
        elif isinstance(self.init_directions, str):
            check_choice(self.init_directions, "init_directions", ("identity", "random"))
            R = self._initial_slices(X, S)
            G = R.copy() if self.init_directions == "identity" else \
                _unit_rows(rng.standard_normal((d, d)))
        else:
            G = np.asarray(self.init_directions, dtype=np.float64)
            if G.shape != (d, d) or not np.all(np.isfinite(G)) or np.any(
                    np.linalg.norm(G, axis=1) == 0):
                raise ValueError(f"init_directions must be a finite ({d}, {d}) array with "
                                 f"non-zero rows, got shape {G.shape}.")
            G = _unit_rows(G)
        if R is None:
            R = self._initial_slices(X, S)
        state = {"G": G, "R": R, "axes": _is_identity(R), "adam": _Adam(G.shape), "med": None,
                 "value": np.nan, "ref": None, "updates": 0}
        return state

    def _warm_state(self):
        try:
            check_is_fitted(self, "directions_")
        except Exception:
            return None
        G = to_host(self.directions_)
        return G, to_host(getattr(self, "slices_", np.eye(G.shape[1])))

    def _store_state(self, state):
        self.directions_ = state["G"]
        self.slices_ = state["R"]
        self.n_direction_updates_ = state["updates"]
        # the ascent's Adam moments, for the next :meth:`direction` while these
        # directions stand (a later fit or a set directions_ starts them afresh)
        self._direction_adam = (self.directions_, state["adam"])

    def _direction_state(self, X, S):
        """The state :meth:`direction` starts from: the kept directions, or ones
        initialised from the particles ``X`` (scores ``S``) as :meth:`fit` does."""
        warm = self._warm_state()
        state = self._init_state(X, warm, as_generator(self.random_state), S)
        if warm is not None:
            state["updates"] = int(getattr(self, "n_direction_updates_", 0))
            kept = getattr(self, "_direction_adam", None)
            if kept is not None and kept[0] is self.directions_:
                state["adam"] = kept[1]
        return state

    def _medians(self, U):
        """Per-dimension median of |u_i - u_j| (at most 1000 particles); 1 where undefined."""
        return projection_medians(U)

    def _set_bandwidths(self, Xt, U):
        """Per-set, per-dimension bandwidths of the median rule (before its scale factor)
        for the sets side by side ``Xt`` (n, B, d): the medians of their projections
        ``U`` (n, B * d), or the fixed bandwidth; shape (B, d)."""
        n, nsets, d = Xt.shape
        if not isinstance(self.bandwidth, str):
            return np.full((nsets, d), float(self.bandwidth))
        return self._medians(U).reshape(nsets, d)

    def _bandwidths(self, X, state, rule):
        if not isinstance(self.bandwidth, str):
            return np.full(X.shape[1], float(self.bandwidth))
        if state["med"] is None:
            state["med"] = self._medians(X @ state["G"].T)
        return state["med"] * bandwidth_scale(rule, X.shape[0])

    def _update_directions(self, X, S, state):
        self._ascend(X[:, None], S[:, None], self._bandwidths(X, state, "median")[None], state)

    def _ascend(self, Xt, St, h, state, U=None):
        r"""``slice_steps`` Adam ascent steps of ``G`` on the maxSKSD-g objective.

        ``Xt``, ``St`` (n, B, d): the particles and scores of ``B`` sets side by side;
        ``h`` (B, d): their per-dimension bandwidths; ``U``: the projections ``X G^T``
        side by side (n, B * d), if at hand. With several sets the objective (and its
        gradient) is their mean. One pass of the pair kernel serves all sets (their
        columns side by side); per set, the gradient of DESIGN section 3.4 is
        :math:`(2 X^\top \rho + \Psi R) / (N(N-1))` (the pass's sums over ordered pairs).
        """
        n, nsets, d = Xt.shape
        G, R = state["G"], state["R"]
        X = Xt.reshape(-1, d)
        A = St.reshape(n, -1) if state["axes"] else (St.reshape(-1, d) @ R.T).reshape(n, -1)
        code, p0, p1 = _sliced_kernel_params(self.kernel, h.ravel(), self.kernel_params)
        scale = 1.0 / (n * (n - 1.0))
        for step in range(self.slice_steps):
            if step or U is None:
                U = (X @ G.T).reshape(n, -1)
            c = np.tile(np.einsum("kd,kd->k", R, G), nsets)
            hsum, rho, _, psisum = _sliced_pass(code, p0, p1, np.ascontiguousarray(U),
                                                np.ascontiguousarray(A), c, with_beta=False)
            values = hsum * scale
            check_stein_finite(values)
            with np.errstate(over="ignore", invalid="ignore"):
                grad = (2.0 * (rho.reshape(-1, d).T @ X)
                        + psisum.reshape(nsets, d).sum(axis=0)[:, None] * R) * scale
            check_stein_finite(grad)
            total = float(values.sum())
            if nsets > 1:
                total, grad = total / nsets, grad / nsets
            G = _unit_rows(G + self.slice_learning_rate * state["adam"].step(
                _tangent_unit_rows(grad, G)))
            state["value"] = total
        state["G"] = G

    def _terms(self, X, S, state, it, rng):
        if it % self.bandwidth_every == 0:
            state["med"] = None
        if X.shape[0] > 1 and self.slice_update_every and it % self.slice_update_every == 0 \
                and _moved(X, state["ref"]) >= self.slice_update_tol:
            self._update_directions(X, S, state)
            state["ref"] = X.copy()
            state["updates"] += 1
        return self._field_terms(X, S, state)

    def _field_terms(self, X, S, state):
        """Driving and repulsive sums at the current directions and bandwidths."""
        rule = self.bandwidth if isinstance(self.bandwidth, str) else "median"
        h = self._bandwidths(X, state, rule) if X.shape[0] > 1 else np.ones(X.shape[1])
        return self._set_terms(X[:, None], S[:, None], h[None], state)

    def _set_terms(self, Xt, St, h, state):
        """Driving and repulsive sums of the sets side by side ``Xt``, ``St`` (n, B, d)
        with bandwidths ``h`` (B, d): arrays (n, B * d), set ``b`` in its ``d`` columns.

        Along other slices than the axes, the axis-sliced sums in the coordinates
        ``R x``, mapped back.
        """
        n, nsets, d = Xt.shape
        G, R = state["G"], state["R"]
        X, S = Xt.reshape(-1, d), St.reshape(-1, d)
        if not state["axes"]:
            X, S, G = X @ R.T, S @ R.T, G @ R.T
        code, p1 = kernel_code(self.kernel, self.kernel_params)
        inv = inverse_square(h.ravel())
        p0 = np.ascontiguousarray(0.5 * inv if code == 0 else inv)
        drive = np.empty((n, nsets * d))
        repulse = np.empty((n, nsets * d))
        sliced_terms(code, p0, p1, np.ascontiguousarray((X @ G.T).reshape(n, -1)),
                     np.ascontiguousarray(S.reshape(n, -1)), np.tile(np.diag(G), nsets),
                     drive, repulse)
        if not state["axes"]:
            drive = (drive.reshape(-1, d) @ R).reshape(n, -1)
            repulse = (repulse.reshape(-1, d) @ R).reshape(n, -1)
        return drive, repulse

    def _init_state_xp(self, xp, Xd, X, warm, rng, score):
        S = None
        if warm is None and isinstance(self.slices, str) and self.slices != "axes" \
                and X.shape[0] > 1:  # the score frame needs the scores: on the device
            S = to_host(check_same_namespace(xp, Xd, score(xp.asarray(Xd, copy=True)),
                                             "the score of target"))
        return self._init_state(X, warm, rng, S)

    def _terms_xp(self, xp, X, S, state, it, rng):
        """:meth:`_terms` on the device; the direction updates and the bandwidth medians
        (every ``slice_update_every`` / ``bandwidth_every`` iterations) run on host
        copies."""
        import array_api_compat

        dev = array_api_compat.device(X)
        n, d = X.shape
        if it % self.bandwidth_every == 0:
            state["med"] = None
        Xh = None
        if n > 1 and self.slice_update_every and it % self.slice_update_every == 0:
            Xh = to_host(X)
            if _moved(Xh, state["ref"]) >= self.slice_update_tol:
                self._update_directions(Xh, to_host(S), state)
                state["ref"] = Xh.copy()
                state["updates"] += 1
        G, R = state["G"], state["R"]
        kept = state.get("device")
        if kept is None or kept[0] is not G or kept[1] is not state["med"]:
            # the directions and bandwidths change every few iterations only: their
            # device copies are made then, not at every iteration
            rule = self.bandwidth if isinstance(self.bandwidth, str) else "median"
            if n < 2:
                h = np.ones(d)
            elif isinstance(self.bandwidth, str) and state["med"] is None:
                h = self._bandwidths(to_host(X) if Xh is None else Xh, state, rule)
            else:
                h = self._bandwidths(X, state, rule)
            code, _ = kernel_code(self.kernel, self.kernel_params)
            p0 = 0.5 * inverse_square(h) if code == 0 else inverse_square(h)

            def put(a):
                return xp.asarray(np.ascontiguousarray(a), dtype=X.dtype, device=dev)

            Gr = G if state["axes"] else G @ R.T
            kept = (G, state["med"], put(Gr.T), put(np.diag(Gr)), put(p0),
                    None if state["axes"] else put(R))
            state["device"] = kept
        _, _, GrT, gdiag, p0, Rd = kept
        code, beta = kernel_code(self.kernel, self.kernel_params)
        if Rd is None:
            return sliced_svgd_terms_xp(xp, X @ GrT, S, gdiag, p0, code, beta)
        drive, repulse = sliced_svgd_terms_xp(xp, (X @ Rd.T) @ GrT, S @ Rd.T, gdiag, p0,
                                              code, beta)
        return drive @ Rd, repulse @ Rd

    def _snapshot_state(self, state):
        # the device copies of the directions are remade from the host's
        return {k: copy.deepcopy(v) for k, v in state.items() if k != "device"}

    def _host_state(self, xp, state, device):
        state = dict(state)
        state.pop("device", None)
        state["G"] = xp.asarray(state["G"], device=device)
        state["R"] = xp.asarray(state["R"], device=device)
        return state

    def _discrepancy(self, X, S, state, history=False):
        if X.shape[0] < 2:
            return float("nan")
        eye = np.eye(X.shape[1])
        G, R = (eye, eye) if state is None else (state["G"], state.get("R", eye))
        h = self._medians(X @ G.T) if isinstance(self.bandwidth, str) else \
            np.full(X.shape[1], float(self.bandwidth))
        values, _, _ = sliced_value_and_grad(X, S, G, R, h, kernel=self.kernel,
                                             kernel_params=self.kernel_params)
        return float(values.sum())

    def _score_state(self):
        warm = self._warm_state()
        return None if warm is None else {"G": warm[0], "R": warm[1]}
