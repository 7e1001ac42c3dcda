"""Stein variational gradient descent (:class:`SVGD`)."""

import numpy as np

from .._flows_xp import SVGDTermsXp
from .._validation import check_bool
from .._xp import host_single_blas, waits_for_device
from .._xp_stein import xp_sums_and_forms
from ..discrepancy import stein_sums
from ..flows import SVGDFlow, bandwidth_scale, kernel_code, svgd_direction
from ..kernels import MIN_BANDWIDTH, make_kernel, median_bandwidth
from ._base import _check_particle_sets, _ParticleSampler, _supports_float64

__all__ = ["SVGD"]

#: The discrepancy of :meth:`SVGD.score` and of the history takes its median bandwidth
#: from the first this many points (as :class:`~skstein.SlicedSVGD`'s medians do): the
#: same points every time, so the same particles give the same number.
DISCREPANCY_MEDIAN_POINTS = 1000


def _discrepancy_kernel(X):
    """The RBF kernel of the discrepancy: the median bandwidth of the first
    :data:`DISCREPANCY_MEDIAN_POINTS` rows of ``X`` (NumPy or a device array)."""
    m = min(X.shape[0], DISCREPANCY_MEDIAN_POINTS)  # a stop within the axis (Array API)
    return make_kernel("rbf", median_bandwidth(X[:m, :], max_points=None))


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
        In the units of the particles: the ``"adagrad"`` and ``"adam"`` steps move each
        coordinate by about ``step_size`` whatever the scores (the field is divided by
        a running average of its magnitude), and keep doing so once the particles have
        settled, so they jitter on that scale. Take it well below the target's
        smallest standard deviation along a coordinate, a tenth of it for example
        (the default suits targets of unit scale), or make it relative to the
        particles' spread (``step_scale="spread"``, or ``whiten=True``). On
        N(0, 0.01^2 I) in 5 dimensions the default left the particle variance at 16
        times the target's; ``step_size`` of 1e-3 at 0.72, as on N(0, I) with 0.1
        (``benchmarks/bench_svgd_scale.py``).
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
    whiten : bool, default=False
        ``True``: at every iteration, compute the field and take the step in the
        coordinates that whiten the particles, then map them back: SVGD with the
        Mahalanobis kernel of the particles' covariance, preconditioned by it (a
        matrix-valued kernel, Wang, Tang, Bajaj & Liu 2019).
        The particles then move alike whatever the target's scales and correlations
        (affine invariance up to the step rule), where the plain kernel, one bandwidth
        for every direction, collapses the narrow directions of an ill-conditioned
        target; measured in the user guide ("Samplers", "Ill-conditioned targets").
        The covariance is the particles' own, so ``whiten`` needs more particles
        than dimensions, spread in all of them; it suits a target with one mode
        (with separated modes that covariance spans them). NumPy particles only.
    step_scale : {"absolute", "spread"}, default="absolute"
        What ``step_size`` is measured in. ``"absolute"``: the particles' units (see
        ``step_size``). ``"spread"``: the particles' standard deviation along each
        coordinate of the step, taken before each step; the AdaGrad and Adam steps are
        multiplied by it and the SGD step by its square, so that rescaling the target
        and the particles by one factor rescales the run (up to the step rules' guards
        against a zero division), and the particles' jitter once settled is a fraction
        of their spread. The default ``step_size`` then suits any scale: on N(0, s^2 I) in 5
        dimensions (``benchmarks/bench_svgd_scale.py``) the mean's error stayed at
        0.028-0.034 of s and the variance at 0.71-0.72 of the target's for s from
        1e-3 to 100. Needs at least two particles, spread along every coordinate.
        With ``whiten=True`` the spread is one in the whitened coordinates, and the
        two coincide.

    Attributes
    ----------
    particles_ : ndarray (n_particles, n_features)
    n_iter_ : int
    history_ : dict of ndarrays
        ``iteration``, ``step_norm`` (mean particle step), ``discrepancy`` (KSD U-statistic,
        RBF kernel, median bandwidth of the first 1000 particles, of the particles
        before that iteration's step),
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

    _fused_score_check = True

    def __init__(self, target, *, n_particles=100, n_iter=1000, step_size=0.1,
                 optimizer="adagrad", kernel="rbf", bandwidth="median-log", kernel_params=None,
                 repulsion_warmup=0, history_every=10, random_state=None, verbose=0,
                 whiten=False, step_scale="absolute"):
        super().__init__(target, n_particles=n_particles, n_iter=n_iter, step_size=step_size,
                         optimizer=optimizer, kernel=kernel, bandwidth=bandwidth,
                         kernel_params=kernel_params, repulsion_warmup=repulsion_warmup,
                         history_every=history_every, random_state=random_state,
                         verbose=verbose, step_scale=step_scale)
        self.whiten = whiten

    def _check_params(self, target=True):
        super()._check_params(target)
        check_bool(self.whiten, "whiten")

    @host_single_blas
    def direction(self, Z, score=None):
        r"""The SVGD field :math:`\phi` at the particles ``Z`` (amortised SVGD).

        :math:`\phi(z_i) = \frac1N \sum_j [k(z_j, z_i) s(z_j) + \nabla_{z_j} k(z_j,
        z_i)]`, with the estimator's ``kernel``, ``bandwidth`` rule and
        ``kernel_params``: the same numbers :meth:`fit` steps along, so one
        ``optimizer="sgd"`` iteration of :meth:`fit` from ``X0`` gives
        ``X0 + step_size * direction(X0)`` (with ``step_scale="absolute"``). The
        estimator is not changed.

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
        if not self.whiten:
            return svgd_direction(Z, S, self.kernel, self.bandwidth, self.kernel_params)
        # each set in the coordinates that whiten it; the fields of all sets in one call
        sets = Z.reshape((-1,) + Z.shape[-2:])
        A, B = map(np.stack, zip(*(_whitening_of(z, "Z") for z in sets)))
        field = svgd_direction((sets @ A).reshape(Z.shape),
                               (S.reshape(sets.shape) @ B).reshape(Z.shape), self.kernel,
                               self.bandwidth, self.kernel_params)
        return (field.reshape(sets.shape) @ B.transpose(0, 2, 1)).reshape(Z.shape)

    def _init_state(self, X, warm, rng, S=None):
        return SVGDFlow(X.shape, self.kernel, self.bandwidth, self.kernel_params)

    def _warm_state(self):
        return None

    def _store_state(self, state):
        pass

    def _terms(self, X, S, state, it, rng):
        return state.terms(X, S)

    def _step_coordinates(self, X):
        return _whitening_of(X, "the particles") if self.whiten else None

    def _init_state_xp(self, xp, Xd, X, warm, rng, score):
        if self.whiten:
            raise ValueError("whiten=True moves NumPy particles only; pass X0 as a NumPy "
                             "array (the field is computed on the CPU).")
        code, beta = kernel_code(self.kernel, self.kernel_params)
        if isinstance(self.bandwidth, str):
            scale, h = bandwidth_scale(self.bandwidth, X.shape[0]), 0.0
        else:
            scale, h = 1.0, float(self.bandwidth)
        return SVGDTermsXp(xp, Xd, code, beta, scale, h, MIN_BANDWIDTH)

    def _terms_xp(self, xp, X, S, state, it, rng):
        return state.terms(X, S)

    def _host_state(self, xp, state, device):
        return None

    def _discrepancy(self, X, S, state, history=False):
        if X.shape[0] < 2 or (history and np.all(X == X[0])):
            # the median heuristic needs two distinct particles: undefined in the
            # history, an error in score
            return float("nan")
        return float(stein_sums(X, S, _discrepancy_kernel(X)).statistic("u"))

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
        sums, _ = xp_sums_and_forms(X, S, [_discrepancy_kernel(X)], None)
        return float(sums[0].statistic("u"))


def _whitening_of(X, what):
    r"""``(A, B)``: the coordinates ``X @ A`` that whiten the particles ``X`` and the map
    ``S @ B`` of their scores (:math:`A B^\top = I`), its error naming ``what``.

    ``B`` is the Cholesky factor :math:`L` of the particles' covariance and :math:`A =
    L^{-\top}`: the whitened coordinates move continuously with the covariance, so a
    step rule's per-coordinate state (AdaGrad's, Adam's) stays attached to them (an
    eigenbasis would reorder and flip its axes). The covariance is the particles' own:
    the Ledoit-Wolf shrinkage of :func:`~skstein.kernels.whitening` pulls every
    eigenvalue towards their mean and, on a target of condition number 1e4, left its
    narrow directions unwhitened; with no more particles than dimensions the
    covariance is singular, and the shrunk one moved 15 particles in 20 dimensions
    worse than no whitening (mean error 2.1 against 1.4 standard deviations), so that
    case is refused.
    """
    n, d = X.shape
    if n <= d:
        raise ValueError(f"whiten=True needs more particles than dimensions, so that their "
                         f"covariance can be inverted; {what}: {n} particles in {d} "
                         "dimensions.")
    C = np.cov(X, rowvar=False).reshape(d, d)
    top = float(np.max(np.diag(C)))
    if not np.isfinite(top):
        raise ValueError(f"the covariance of {what} is not finite; rescale the target.")
    if not top > 0:
        raise ValueError(f"whiten=True needs distinct particles to whiten; {what} (shape "
                         f"{X.shape}) all coincide.")
    try:
        L = np.linalg.cholesky(C)
    except np.linalg.LinAlgError:
        L = None
    # a direction the particles do not spread in would stay unspread: the step there,
    # mapped back, is scaled by its standard deviation
    if L is None or np.min(np.diag(L)) ** 2 <= FLAT_VARIANCE * top:
        raise ValueError(f"whiten=True needs particles spread in every direction; {what} "
                         f"(shape {X.shape}) lie in (or next to) a subspace, where the "
                         "whitened step cannot move them out: start from distinct, "
                         "full-dimensional particles.")
    return np.linalg.inv(L).T, L


#: A particle variance along a direction (given the others) at most this fraction of
#: the largest is a direction the particles do not spread in (``whiten=True``).
FLAT_VARIANCE = 1e-10
