"""What SVGD and sliced SVGD share: the step rules and the particle loop, on the host
(numba) and in an Array API namespace (a device)."""

import functools
import sys
import warnings

import numpy as np
from sklearn.base import BaseEstimator

from .._progress import check_verbose, progress_bar, verbosity
from .._random import as_generator
from .._validation import (
    caller_stacklevel,
    check_choice,
    check_model_dim,
    check_positive_float,
    check_positive_int,
    evaluate_score,
    named_errors,
    refuse_complex,
    resolve_score,
    validate_samples,
)
from .._xp import (check_same_namespace, host_single_blas, is_device_array, namespace_of,
                   to_host, waits_for_device)
from .._xp_stein import xp_check_score_finite, xp_evaluate_score
from ..directions import _Adam
from ..flows import adagrad_update, field_from_terms
from ..kernels import KERNELS, check_bandwidth, make_kernel

OPTIMIZERS = ("sgd", "adagrad", "adam")
#: what ``step_size`` is measured in: the particles' units, or their standard deviation
#: along each coordinate of the step
STEP_SCALES = ("absolute", "spread")
#: Largest magnitude whose square float64 holds (the adaptive steps square the direction).
_MAX_SQUARABLE = float(np.sqrt(np.finfo(np.float64).max))
#: Particles beyond this magnitude have diverged (their squared distances would overflow).
_DIVERGED = 1e150
#: On an accelerator, the particles are checked every this many iterations (and at each
#: recorded one): each check waits for the device, and between checks the host queues
#: the next iterations' work while the device runs.
DEVICE_CHECK_EVERY = 16
BANDWIDTHS = ("median", "median-log")


class _Optimizer:
    """Per-coordinate step rules for the particle update.

    * ``sgd``: ``step_size * phi``.
    * ``adagrad``: the rule of the original SVGD code (an RMSprop-like running
      average): ``v = phi^2`` at the first step, then ``v = 0.9 v + 0.1 phi^2``;
      step ``step_size * phi / (1e-6 + sqrt(v))`` (one compiled pass with the
      update of the particles and the checks).
    * ``adam``: Adam (beta1 = 0.9, beta2 = 0.999, eps = 1e-8).

    With ``spread``, ``step_size`` is relative to the particles' standard deviation
    along each coordinate, ``sd``, taken before each step: the ``adagrad`` and ``adam``
    steps are multiplied by ``sd``, the ``sgd`` step by ``sd^2`` (the field has the
    units of a score), so that every rule commutes with rescaling a coordinate (the
    field of sliced SVGD along fixed axes does too; SVGD's, with one bandwidth, with
    rescaling all coordinates by one factor).
    """

    def __init__(self, name, step_size, shape, spread=False):
        self.name, self.lr = name, step_size
        self.v = np.zeros(shape) if name == "adagrad" else None
        self.t = 0
        self.adam = _Adam(shape) if name == "adam" else None
        self.spread = spread

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
        if self.name == "adagrad" and not self.spread:
            vmax, xtop = adagrad_update(drive, repulse, X.shape[0], self.v, self.t == 1,
                                        self.lr, X)
            if not np.isfinite(vmax):  # some phi^2 overflowed (or phi is NaN)
                self._check_squarable(np.inf if vmax == np.inf else vmax)
            return drive, xtop
        lr = self.lr
        if self.spread:
            sd = _spread(X)
            lr = lr * sd * sd if self.name == "sgd" else lr * sd
        phi = field_from_terms(drive, repulse, X.shape[0])
        if self.name == "sgd":
            step = lr * phi
        elif self.name == "adagrad":
            # the arithmetic of adagrad_update, with a step size per coordinate
            self._check_squarable(float(np.max(np.abs(phi))))
            sq = phi * phi
            self.v = sq if self.t == 1 else self.v * 0.9 + sq * 0.1
            step = phi / (np.sqrt(self.v) + 1e-6) * lr
        else:
            self._check_squarable(float(np.max(np.abs(phi))))
            step = lr * self.adam.step(phi)
        X += step
        return step, float(np.max(np.abs(X)))


def _spread(X):
    """The particles' standard deviation along each coordinate (``step_scale="spread"``)."""
    return np.std(X, axis=0, ddof=1)


def _check_spread(X, what):
    """Refuse particles that ``step_scale="spread"`` could not move: fewer than two, or
    all equal along a coordinate (a step relative to a spread of zero is zero)."""
    if X.shape[0] < 2:
        raise ValueError(f"step_scale='spread' needs at least 2 particles; got "
                         f"{X.shape[0]} ({what}).")
    flat = np.flatnonzero(~(np.ptp(X, axis=0) > 0))
    if flat.size:
        raise ValueError(f"step_scale='spread' measures the step along each coordinate in "
                         f"the particles' spread, and {what} do not spread along coordinate "
                         f"{int(flat[0])} of the step{' (and others)' if flat.size > 1 else ''}"
                         ": they would never move along it; start from distinct values "
                         "there, or use step_scale='absolute'.")


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
                 repulsion_warmup=0, history_every=10, random_state=None, verbose=0,
                 step_scale="absolute"):
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
        self.step_scale = step_scale

    def _check_params(self, target=True):
        if target:  # False where a score is given in its place (``direction``)
            resolve_score(self.target, "target")
        check_positive_int(self.n_particles, "n_particles", minimum=1)
        check_positive_int(self.n_iter, "n_iter", minimum=0)
        check_positive_float(self.step_size, "step_size")
        check_choice(self.optimizer, "optimizer", OPTIMIZERS)
        check_choice(self.step_scale, "step_scale", STEP_SCALES)
        check_choice(self.kernel, "kernel", KERNELS)
        check_positive_int(self.history_every, "history_every")
        check_positive_int(self.repulsion_warmup, "repulsion_warmup", minimum=0)
        check_verbose(self.verbose)
        if isinstance(self.bandwidth, str):
            check_choice(self.bandwidth, "bandwidth", BANDWIDTHS)
        else:
            if np.ndim(self.bandwidth) != 0:
                raise TypeError(f"bandwidth must be {' or '.join(map(repr, BANDWIDTHS))} or a "
                                f"positive float, got an array of shape "
                                f"{np.shape(self.bandwidth)}.")
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
        name = "X0" if reset else "X"
        X = validate_samples(self, X0, reset=reset, min_samples=1, copy=True, name=name)
        check_model_dim(self.target, X, "target", of=name)
        if not np.max(np.abs(X)) < _DIVERGED:  # the check of moved particles would fire
            raise ValueError(f"{name} has entries of magnitude {np.max(np.abs(X)):.3g}, at "
                             f"or beyond {_DIVERGED:g}, where the particles count as "
                             "diverged; rescale the problem.")
        repeated = X.shape[0] - np.unique(X, axis=0).shape[0]
        if repeated:
            warnings.warn(
                f"{name} has {repeated} repeated row(s) among "
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
        refuse_complex(values, what, of="Z")
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

        :class:`SVGD`: the KSD (U-statistic, RBF kernel, the median bandwidth of the
        first 1000 points).
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
        if np.iscomplexobj(values):  # refused there, not cast with its imaginary part lost
            return evaluate_score(self.target, X, "target", check_tails=False, values=values)
        S = np.asarray(values, dtype=np.float64) if not isinstance(values, np.ndarray) or \
            values.dtype != np.float64 else values
        if S.shape != X.shape:
            return evaluate_score(self.target, X, "target", check_tails=False)  # its error
        return S if S.flags.c_contiguous else np.ascontiguousarray(S)

    def _step_coordinates(self, X):
        """``None``, or ``(A, B)`` with :math:`A B^\top = I`: the iteration then computes
        the field and the step at the points ``X @ A`` with scores ``S @ B`` and maps
        the moved points back (``SVGD(whiten=True)``)."""
        return None

    def _step_frame(self, state):
        """``None``, or orthonormal rows ``R``: the step rule then runs in the coordinates
        ``X @ R.T``, on the terms that ``_terms`` / ``_terms_xp`` return in them, and the
        particles are those coordinates times ``R`` (``SlicedSVGD`` along slices other
        than the axes)."""
        return None

    def _repulsion_weight(self, it):
        """Weight of the repulsive term at iteration ``it`` (``repulsion_warmup``)."""
        return 1.0 if it >= self.repulsion_warmup else (it + 1.0) / self.repulsion_warmup

    def _run(self, X, rng, warm, n_iter=None):
        n_iter = self.n_iter if n_iter is None else n_iter
        X = np.array(X, dtype=np.float64, order="C")  # moved in place
        spread = self.step_scale == "spread"
        opt = _Optimizer(self.optimizer, self.step_size, X.shape, spread)
        score = resolve_score(self.target, "target")
        # the first scores serve the initial state too (one call per iteration: a
        # mini-batch score must not skip a batch)
        S = self._scores(score, X, True) if n_iter else None
        state = self._init_state(X, warm, rng, S)
        frame = self._step_frame(state)
        # the coordinates the step rule moves along the frame's rows (kept: the particles
        # are computed from them, so no rounding accumulates from mapping back and forth)
        F = None if frame is None else X @ frame.T
        if spread and n_iter:
            _check_spread(X if F is None else F, "the initial particles")
        hist = {"iteration": [], "step_norm": [], "discrepancy": [], "repulsive_force": [],
                "variance": []}
        name = type(self).__name__
        detail = verbosity(self.verbose) >= 2
        with progress_bar(n_iter, verbose=self.verbose, desc=name) as bar:
            for it in range(n_iter):
                if it:
                    S = self._scores(score, X, False)
                coords = self._step_coordinates(X)
                P, SP = (X, S) if coords is None else (X @ coords[0], S @ coords[1])
                drive, repulse = self._terms(P, SP, state, it, rng)
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
                if F is not None:
                    P = F
                update, top = opt.apply(drive, repulse, P)  # moves P in place
                if coords is not None or F is not None:  # the moved points, back in X's
                    np.matmul(P, coords[1].T if F is None else frame, out=X)
                    top = float(np.max(np.abs(X))) if np.isfinite(top) else top
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
        that runs on the host: the step rules' constants, SlicedSVGD's directions).

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
        frame = self._step_frame(state)
        if frame is not None:  # as in _run: the step rule's coordinates are kept
            frame = xp.asarray(np.ascontiguousarray(frame), dtype=Xd.dtype, device=dev)
            Fd = Xd @ xp.permute_dims(frame, (1, 0))
        opt = _OptimizerXp(xp, self.optimizer, self.step_size, X.shape, dev)
        spread = self.step_scale == "spread"
        if spread and n_iter:
            _check_spread(X if frame is None else to_host(Fd), "the initial particles")
        hist = {"iteration": [], "step_norm": [], "discrepancy": [], "repulsive_force": [],
                "variance": []}
        n = X.shape[0]
        it, good = 0, None
        while it < n_iter:
            if every > 1 and good is None:
                # what the iterations from here change, kept until the next check passes
                good = (it, Xd, opt.snapshot(), self._snapshot_state(state),
                        rng.bit_generator.state, {k: len(v) for k, v in hist.items()},
                        None if frame is None else Fd)
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
                step = opt.step((drive + repulse) / n, None if not spread else
                                xp.std(Xd if frame is None else Fd, axis=0, correction=1))
                if record:
                    hist["step_norm"].append(_mean_row_norm(xp, step))
                if frame is None:
                    Xd = Xd + step
                else:
                    Fd = Fd + step
                    Xd = Fd @ frame
                checked = every == 1 or record or it + 1 - good[0] >= every \
                    or it == n_iter - 1
                diverged = checked and not float(xp.max(xp.abs(Xd))) < _DIVERGED
            except (ValueError, FloatingPointError):
                if every == 1:
                    raise
                diverged = True  # found by an unchecked iteration's host work
            if diverged:
                if every > 1:  # run the iterations since the last good check one by one
                    it, Xd, kept, state, rng.bit_generator.state, lengths, Fd = good
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

    def step(self, phi, sd=None):
        """The step for the field ``phi``; ``sd``: the particles' spread per coordinate
        (``step_scale="spread"``, as :meth:`_Optimizer.apply`)."""
        xp = self.xp
        self.t += 1
        lr = self.lr
        if sd is not None:
            lr = lr * sd * sd if self.name == "sgd" else lr * sd
        if self.name == "sgd":
            return lr * phi
        sq = phi * phi
        self.last = phi
        if self.name == "adagrad":
            self.v = sq if self.t == 1 else self.v * 0.9 + sq * 0.1
            return phi / (xp.sqrt(self.v) + 1e-6) * lr
        b1, b2 = 0.9, 0.999
        self.m = (1 - b1) * phi if self.m is None else self.m * b1 + (1 - b1) * phi
        self.v = (1 - b2) * phi * phi if self.v is None else self.v * b2 + (1 - b2) * phi * phi
        mhat = self.m / (1 - b1**self.t)
        vhat = self.v / (1 - b2**self.t)
        return lr * (mhat / (xp.sqrt(vhat) + 1e-8))
