"""Sliced SVGD (:class:`SlicedSVGD`) and its slice rules."""

import copy
import numbers

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._flows_xp import projection_medians_xp, sliced_pass_xp, sliced_svgd_terms_xp
from .._gradients import _sliced_pass
from .._random import as_generator
from .._validation import (check_choice, check_positive_float, check_positive_int, evaluate_score,
                           named_errors)
from .._xp import check_same_namespace, host_single_blas, to_host, waits_for_device
from ..directions import _Adam, _tangent_unit_rows, _unit_rows
from ..discrepancy import _sliced_kernel_params, check_stein_finite, sliced_value_and_grad
from ..flows import (bandwidth_scale, field_from_terms, kernel_code, projection_medians,
                     sliced_terms)
from ..kernels import inverse_square
from ._base import _check_particle_sets, _ParticleSampler, _supports_float64

__all__ = ["SlicedSVGD", "score_frame", "scores_correlated"]

#: the slice rules of :class:`SlicedSVGD`
SLICE_RULES = ("auto", "axes", "score")
#: ``slices="auto"``: permutations of the independence check and its margin in null
#: standard deviations (see :func:`scores_correlated`)
SLICE_CHECK_PERMUTATIONS = 50
SLICE_CHECK_MARGIN = 4.0


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


def _put(xp, X, a):
    """The host array ``a`` on the device of ``X``, in its dtype."""
    import array_api_compat

    return xp.asarray(np.ascontiguousarray(a), dtype=X.dtype,
                      device=array_api_compat.device(X))


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
    algorithm in the rotated coordinates :math:`Rx`, step rule included (AdaGrad's and
    Adam's per-coordinate scales act along the slices, not along the axes of
    :math:`x`; with fixed directions a run equals the axis-sliced run on the rotated
    problem, whatever the step rule). Along the axes of :math:`x` those scales mix
    the scales of an ill-conditioned target's principal axes: on rotated Gaussians of
    condition number 1e4 the particle variances along those axes ranged over
    0.29-2.16 of the target's (D = 10) and 0.18-5.94 (D = 30), against 0.98-1.07 and
    0.96-1.49 along the slices (``benchmarks/bench_sliced_frame.py``). For a Gaussian target
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
    always detected). No frame separates coordinates that depend on each other
    nonlinearly: on a bent target (:class:`~skstein.distributions.Banana`) the
    particles' variances along the bend settled at 0.2-0.5 of the target's, in 2 to 50
    dimensions (``svgd-variance``, part ``banana``; the user guide compares SVGD).

    Parameters
    ----------
    target : distribution or callable
    n_particles : int, default=100
    n_iter : int, default=1000
    step_size : float, default=0.1
        In the units of the particles, as for :class:`SVGD`: take it well below the
        target's smallest standard deviation along a slice (the default suits targets
        of unit scale; on N(0, 0.01^2 I) in 5 dimensions it left the particle
        variance at 14 times the target's, ``step_size=1e-3`` at 1.01).
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
    step_scale : {"absolute", "spread"}, default="absolute"
        As for :class:`SVGD`; along slices other than the axes, the spread is taken
        along the slices. With ``"spread"`` the default ``step_size`` suited N(0, s^2 I)
        (D = 5) for s from 1e-3 to 100 alike, and on rotated Gaussians of condition
        number 1e4 the particle mean's error fell from 0.63 to 0.17 target standard
        deviations (D = 10, N = 200) and from 1.03 to 0.33 (D = 30, N = 100)
        (``benchmarks/bench_sliced_frame.py``).

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
                 repulsion_warmup=0, history_every=10, random_state=None, verbose=0,
                 step_scale="absolute"):
        super().__init__(target, n_particles=n_particles, n_iter=n_iter, step_size=step_size,
                         optimizer=optimizer, kernel=kernel, bandwidth=bandwidth,
                         kernel_params=kernel_params, repulsion_warmup=repulsion_warmup,
                         history_every=history_every, random_state=random_state,
                         verbose=verbose, step_scale=step_scale)
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
        an unfitted copy (with ``step_scale="absolute"``; with ``"spread"``, to
        ``X0 + step_size * var * direction(X0)``, ``var`` the variance of ``X0``
        along each coordinate, along the axes).

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
        with named_errors("slices"):
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
            with named_errors("init_directions"):
                G = np.asarray(self.init_directions, dtype=np.float64)
            if G.shape != (d, d) or not np.all(np.isfinite(G)) or np.any(
                    np.linalg.norm(G, axis=1) == 0):
                raise ValueError(f"init_directions must be a finite ({d}, {d}) array with "
                                 f"non-zero rows, got shape {G.shape}.")
            G = _unit_rows(G)
        if R is None:
            R = self._initial_slices(X, S)
        state = {"G": G, "R": R, "axes": _is_identity(R),
                 "adam": _Adam(G.shape, scale_free=True), "med": None,
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
        return self._field_terms(X, S, state, mapped=self._step_frame(state) is None)

    def _step_frame(self, state):
        """The slices ``R`` unless they are the axes: the step rule (AdaGrad's or Adam's
        per-coordinate scales) runs along the slices, in the coordinates ``R x`` in which
        the update is defined, so that the algorithm along slices ``R`` is the algorithm
        along the axes in those coordinates, whatever the step rule."""
        return None if state["axes"] else state["R"]

    def _field_terms(self, X, S, state, mapped=True):
        """Driving and repulsive sums at the current directions and bandwidths (in the
        coordinates ``R x`` unless ``mapped``)."""
        rule = self.bandwidth if isinstance(self.bandwidth, str) else "median"
        h = self._bandwidths(X, state, rule) if X.shape[0] > 1 else np.ones(X.shape[1])
        return self._set_terms(X[:, None], S[:, None], h[None], state, mapped)

    def _set_terms(self, Xt, St, h, state, mapped=True):
        """Driving and repulsive sums of the sets side by side ``Xt``, ``St`` (n, B, d)
        with bandwidths ``h`` (B, d): arrays (n, B * d), set ``b`` in its ``d`` columns.

        Along other slices than the axes, the axis-sliced sums in the coordinates
        ``R x``, mapped back unless ``mapped`` is false.
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
        if mapped and not state["axes"]:
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
        code, beta = kernel_code(self.kernel, self.kernel_params)
        if it % self.bandwidth_every == 0:
            state["med"] = None
        Xh = None
        on_device = self._on_device(X)
        if n > 1 and self.slice_update_every and it % self.slice_update_every == 0:
            Xh = to_host(X)
            if _moved(Xh, state["ref"]) >= self.slice_update_tol:
                if on_device:
                    self._update_directions_xp(xp, X, S, state)
                else:
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
                if on_device:
                    state["med"] = self._medians_xp(xp, X, G)
                h = self._bandwidths(to_host(X) if Xh is None else Xh, state, rule)
            else:
                h = self._bandwidths(X, state, rule)
            p0 = 0.5 * inverse_square(h) if code == 0 else inverse_square(h)

            def put(a):
                return xp.asarray(np.ascontiguousarray(a), dtype=X.dtype, device=dev)

            Gr = G if state["axes"] else G @ R.T
            kept = (G, state["med"], put(Gr.T), put(np.diag(Gr)), put(p0),
                    None if state["axes"] else put(R))
            state["device"] = kept
        _, _, GrT, gdiag, p0, Rd = kept
        if Rd is None:
            return sliced_svgd_terms_xp(xp, X @ GrT, S, gdiag, p0, code, beta)
        drive, repulse = sliced_svgd_terms_xp(xp, (X @ Rd.T) @ GrT, S @ Rd.T, gdiag, p0,
                                              code, beta)
        if self._step_frame(state) is not None:  # the step rule's coordinates (_run_xp)
            return drive, repulse
        return drive @ Rd, repulse @ Rd

    def _on_device(self, X):
        """Whether the direction ascent, the medians and the history's discrepancy of
        particles ``X`` run on their device: on an accelerator
        (:func:`~skstein._xp.waits_for_device`) with the RBF kernel, whose pair terms
        are sums of batched products there (:func:`~skstein._flows_xp.sliced_pass_xp`).
        Elsewhere they run on host copies (the compiled passes are faster on a CPU)."""
        return waits_for_device(X) and kernel_code(self.kernel, self.kernel_params)[0] == 0

    def _medians_xp(self, xp, X, G):
        """:meth:`_medians` of the projections ``X G^T`` of device particles."""
        m = min(X.shape[0], 1000)
        return projection_medians_xp(xp, X[:m, :] @ _put(xp, X, G.T))

    def _update_directions_xp(self, xp, X, S, state):
        """:meth:`_update_directions` of device particles."""
        if isinstance(self.bandwidth, str) and state["med"] is None:
            state["med"] = self._medians_xp(xp, X, state["G"])
        self._ascend_xp(xp, X, S, self._bandwidths(X, state, "median"), state)

    def _ascend_xp(self, xp, X, S, h, state):
        """:meth:`_ascend` of one set of device particles: the pair sums and the
        gradient on the device, read back (``d x d`` and ``d`` values) for the Adam
        step of the directions, which stay on the host."""
        n, d = X.shape
        G, R = state["G"], state["R"]
        Rd = _put(xp, X, R)
        A = S if state["axes"] else S @ xp.permute_dims(Rd, (1, 0))
        _, p0, _ = _sliced_kernel_params(self.kernel, h, self.kernel_params)
        p0 = _put(xp, X, p0)
        scale = 1.0 / (n * (n - 1.0))
        for _ in range(self.slice_steps):
            c = _put(xp, X, np.einsum("kd,kd->k", R, G))
            hsum, rho, psisum = sliced_pass_xp(xp, X @ _put(xp, X, G.T), A, c, p0)
            grad = 2.0 * (xp.permute_dims(rho, (1, 0)) @ X) + psisum[:, None] * Rd
            out = np.asarray(to_host(xp.concat([xp.reshape(grad, (d * d,)), hsum])),
                             dtype=np.float64) * scale
            values = out[d * d:]
            check_stein_finite(values)
            grad = out[:d * d].reshape(d, d)
            check_stein_finite(grad)
            G = _unit_rows(G + self.slice_learning_rate * state["adam"].step(
                _tangent_unit_rows(grad, G)))
            state["value"] = float(values.sum())
        state["G"] = G

    def _history_discrepancy_xp(self, xp, X, S, state):
        """:meth:`_discrepancy` of device particles on their device (see
        :meth:`_on_device`), in float64 where the device has it."""
        import array_api_compat

        if X.shape[0] < 2 or not self._on_device(X):
            return super()._history_discrepancy_xp(xp, X, S, state)
        if _supports_float64(xp, array_api_compat.device(X)):
            X, S = xp.astype(X, xp.float64), xp.astype(S, xp.float64)
        n, d = X.shape
        G, R = state["G"], state["R"]
        h = self._medians_xp(xp, X, G) if isinstance(self.bandwidth, str) else \
            np.full(d, float(self.bandwidth))
        _, p0, _ = _sliced_kernel_params(self.kernel, h, self.kernel_params)
        A = S if state["axes"] else S @ xp.permute_dims(_put(xp, X, R), (1, 0))
        hsum, _, _ = sliced_pass_xp(xp, X @ _put(xp, X, G.T), A,
                                    _put(xp, X, np.einsum("kd,kd->k", R, G)),
                                    _put(xp, X, p0), with_rho=False)
        values = np.asarray(to_host(hsum), dtype=np.float64) / (n * (n - 1.0))
        check_stein_finite(values)
        return float(values.sum())

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
