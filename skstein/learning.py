r"""Stein discrepancies as training losses: values and closed-form gradients.

A model :math:`p_\theta` known up to its normalising constant can be fitted to data
:math:`x_1, \dots, x_N` by minimising a Stein discrepancy, which needs only its score
:math:`s_\theta(x) = \nabla_x \log p_\theta(x)`. The discrepancy is a smooth function
of the scores :math:`S = (s_\theta(x_i))_i` and of the points :math:`X`; this module
computes its value and the gradients :math:`\partial L / \partial S` and
:math:`\partial L / \partial X` in closed form (no automatic differentiation), from
the same pair terms as the statistics of :mod:`skstein.discrepancy`:

* :func:`ksd_value_and_grad`: the KSD U- or V-statistic (RBF or IMQ kernel);
* :func:`sliced_ksd_value_and_grad`: the sliced KSD at given directions ``G`` and
  slices ``R`` (optionally with its gradients in ``G`` and ``R``).

Both run in :math:`O(N^2 D)` time (:math:`O(N^2 m + N D m)` for ``m`` slices) and
never form an ``N x N x D`` array; the KSD pass works on row blocks bounded by
``max_memory``. Bandwidths are constants of the loss (the median heuristic, when
asked for, is evaluated on the data and not differentiated).

**Chaining into a model's parameters.** A model with parameters :math:`\theta`
supplies

* ``grad_logpdf(X)``: the score at each row of ``X``, shape ``(N, D)``;
* ``grad_logpdf_vjp(X, V)``: the vector-Jacobian product of the score with respect
  to :math:`\theta`, :math:`\sum_i (\partial s_\theta(x_i) / \partial\theta)^\top v_i`,
  shaped like :math:`\theta` (an array, or a tuple of arrays for several).

Then :math:`\mathrm dL/\mathrm d\theta = \sum_i (\partial L/\partial s_i)\cdot
(\partial s_i/\partial\theta)` is ``model.grad_logpdf_vjp(X, grad.grad_scores)``, which
:func:`model_value_and_grad` does. When the points themselves depend on parameters (a
sampler, an implicit model), their total gradient is
``grad_points + J_s(X)^T grad_scores``, the second term through the score's own
Jacobian in ``x``. :class:`skstein.distributions.ICA` implements the protocol.

**maxSKSD as a loss.** maxSKSD is a maximum over the directions ``G`` (and slices
``R``). :class:`MaxSKSDLoss` keeps the directions as state and interleaves one (or
more) projected Adam ascent steps on ``G`` with the caller's descent steps on
:math:`\theta` (Gong et al. 2021, section 4.2). By the envelope theorem the gradient
in :math:`\theta` of :math:`\max_G L(\theta, G)` is :math:`\partial_\theta L` at the
maximiser; it is taken at the current ``G``, and one pass over the pairs gives the
loss, its gradient in the scores and the ascent direction in ``G`` together.
:class:`KSDLoss` offers the same interface for the KSD.
"""

import numbers
from dataclasses import replace

import numpy as np
from sklearn.base import BaseEstimator

from ._docstrings import fill_doc
from ._gradients import (
    SteinGradient,
    _check_pair,
    _sliced_value_and_grad,
    ksd_value_and_grad,
    model_value_and_grad,
    sliced_ksd_value_and_grad,
)
from ._random import as_generator
from ._validation import check_bool, check_choice, check_positive_float, check_positive_int
from .directions import OPTIMIZERS, VARIANTS, _Adam, _ascent_step, _first_start, _n_pairs
from .discrepancy import resolve_sliced_bandwidth, sliced_projections
from .kernels import KERNELS, make_kernel, whitening

__all__ = ["SteinGradient", "ksd_value_and_grad", "sliced_ksd_value_and_grad",
           "model_value_and_grad", "KSDLoss", "MaxSKSDLoss"]

def _check_every(value, name):
    return check_positive_int(value, name)


def _loss_whitening(whiten, X):
    """``(A, B)`` of a loss's ``whiten`` parameter for batches like ``X``, or None.

    ``True``: the Ledoit-Wolf whitening of ``X`` (:func:`skstein.kernels.whitening`);
    an array: the map ``A`` itself, with ``B = A^{-T}`` so that ``A B^T = I``.
    """
    d = X.shape[1]
    if isinstance(whiten, (bool, np.bool_)):
        return whitening(X) if whiten else None
    message = (f"whiten must be True, False or an invertible array of shape ({d}, {d}) "
               f"(e.g. skstein.kernels.whitening(X_train)[0]), got")
    if isinstance(whiten, str) or whiten is None:
        raise ValueError(f"{message} {whiten!r}.")
    try:
        A = np.array(whiten, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{message} {type(whiten).__name__}.") from None
    if A.shape != (d, d) or not np.isfinite(A).all():
        raise ValueError(f"{message} an array of shape {A.shape}"
                         f"{'' if np.isfinite(A).all() else ' with non-finite entries'}.")
    s = np.linalg.svd(A, compute_uv=False)
    if not s[-1] > 1e-12 * s[0]:
        raise ValueError(f"{message} a singular matrix (condition number "
                         f"{s[0] / s[-1] if s[-1] > 0 else np.inf:.3g}).")
    return A, np.linalg.inv(A).T


def _whitened_call(white, X, S, evaluate):
    r"""``evaluate(X @ A, S @ B)`` with its gradients mapped back to ``X`` and ``S``.

    With :math:`X' = XA` and :math:`S' = SB`, the chain rule gives
    :math:`\partial L/\partial S = (\partial L/\partial S') B^\top` and
    :math:`\partial L/\partial X = (\partial L/\partial X') A^\top`; gradients in the
    directions and slices stay in the whitened coordinates, where those live.
    """
    if white is None:
        return evaluate(X, S)
    A, B = white
    res = evaluate(X @ A, np.ascontiguousarray(S @ B))
    return replace(res, grad_scores=res.grad_scores @ B.T, grad_points=res.grad_points @ A.T)


@fill_doc
class _ModelGradientMixin:
    """``model_value_and_grad`` for a loss with ``value_and_grad(X, S)``."""

    def model_value_and_grad(self, model, X):
        """``(value, dL/dtheta)`` for a model with ``grad_logpdf_vjp``.

        See :func:`model_value_and_grad`. A :class:`MaxSKSDLoss` also moves its
        directions, as :meth:`value_and_grad` does.

        Parameters
        ----------
        %(model_batch_parameters)s

        Returns
        -------
        value : float
            The loss (for :class:`MaxSKSDLoss`, at the directions of the evaluation;
            see its ``order``).
        grad : ndarray or tuple of ndarrays
            Its gradient, shaped like the model's parameters.
        """
        return model_value_and_grad(self, model, X)


class KSDLoss(_ModelGradientMixin, BaseEstimator):
    r"""The KSD as a training loss, with its gradients in the scores and the points.

    A thin stateful wrapper of :func:`ksd_value_and_grad` with the interface of
    :class:`MaxSKSDLoss`: ``value_and_grad(X, S)`` on each minibatch, and
    :func:`model_value_and_grad` for a model's parameters.

    Parameters
    ----------
    kernel : {"rbf", "imq"}, default="rbf"
    bandwidth : float or "median", default="median"
        ``"median"``: the median heuristic of the batch, re-estimated every
        ``bandwidth_every`` calls (a constant of the loss between re-estimates).
    kernel_params : dict, default=None
    statistic : {"u", "v"}, default="u"
    bandwidth_every : int, default=1
    whiten : bool or array-like of shape (n_features, n_features), default=False
        The coordinates the loss is computed in. ``False``: the data's. An
        invertible matrix ``A``: the points ``X @ A`` with the scores ``S @ B``,
        :math:`B = A^{-\top}` (the transformed model's scores, so the loss still
        vanishes exactly at the data's distribution), with the gradients mapped
        back to ``X`` and ``S``. Pass ``skstein.kernels.whitening(X_train)[0]`` to
        compute the loss where the training data are white: a radial kernel there
        is a Mahalanobis kernel in the data's units, which suits strongly
        correlated or anisotropic data. Only the loss moves; when the model's
        parameters can follow the change of coordinates (ICA), training the model
        of the whitened data does better, as the optimiser moves too (user guide,
        "Coordinates"; the ``ica`` reproduction). ``True``: the Ledoit-Wolf
        whitening of the first batch, kept for every later call (a batch
        estimates it less well than the whole training set).
    random_state : None, int or Generator, default=None
        The median heuristic's subsample (batches of more than 2000 points).

    Attributes
    ----------
    bandwidth_ : float
        The bandwidth of the last call.
    whitening_ : tuple (A, B) of ndarrays of shape (n_features, n_features) or None
        The map of ``whiten`` (None for ``whiten=False``).
    n_iter_ : int
        Number of calls.

    Examples
    --------
    >>> import numpy as np
    >>> from skstein.learning import KSDLoss
    >>> X = np.random.default_rng(0).standard_normal((50, 2))
    >>> loss = KSDLoss()
    >>> res = loss.value_and_grad(X, -X)
    >>> res.grad_scores.shape
    (50, 2)
    """

    def __init__(self, *, kernel="rbf", bandwidth="median", kernel_params=None, statistic="u",
                 bandwidth_every=1, whiten=False, random_state=None):
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.kernel_params = kernel_params
        self.statistic = statistic
        self.bandwidth_every = bandwidth_every
        self.whiten = whiten
        self.random_state = random_state

    def value_and_grad(self, X, S):
        """Loss and gradients on one batch (see :func:`ksd_value_and_grad`).

        Parameters
        ----------
        X, S : array-like of shape (n_samples, n_features)

        Returns
        -------
        SteinGradient
        """
        every = _check_every(self.bandwidth_every, "bandwidth_every")
        X, S = _check_pair(X, S)
        n_iter = getattr(self, "n_iter_", 0)
        if n_iter == 0:
            self._rng = as_generator(self.random_state)
            self.whitening_ = _loss_whitening(self.whiten, X)
        elif self.whitening_ is not None and X.shape[1] != self.whitening_[0].shape[0]:
            raise ValueError(f"X has {X.shape[1]} features, but this loss's whitening has "
                             f"{self.whitening_[0].shape[0]}; use a new loss (sklearn.clone).")
        h = self.bandwidth
        if isinstance(h, str) and n_iter % every != 0:
            h = self.bandwidth_
        res = _whitened_call(self.whitening_, X, S, lambda X, S: ksd_value_and_grad(
            X, S, kernel=self.kernel, bandwidth=h, kernel_params=self.kernel_params,
            statistic=self.statistic, random_state=self._rng))
        self.bandwidth_ = res.bandwidth
        self.n_iter_ = n_iter + 1
        return res


class MaxSKSDLoss(_ModelGradientMixin, BaseEstimator):
    r"""The maxSKSD as a training loss: the sliced KSD with directions learned alongside.

    Each call of :meth:`value_and_grad` on a batch ``(X, S)`` takes projected ascent
    steps on the directions ``G`` (and the slices ``R`` for ``"rg"``) and returns the
    sliced KSD with its gradients in the scores and the points at the current ``G``.
    A model trained on the returned ``grad_scores`` descends
    :math:`\max_G L(\theta, G)` with the gradient of the envelope theorem, taken
    at the current ``G``, while ``G`` follows the maximum (Gong et al. 2021, section
    4.2). ``order`` says when the ascent happens:

    * ``"simultaneous"``: the loss is evaluated at ``G`` and the same pass over the
      pairs gives the ascent step (one pass per call; ``n_ascent - 1`` further
      ascent steps, if any, run first);
    * ``"ascent-first"``: ``n_ascent`` ascent steps on the batch, then the loss at the
      updated ``G`` (the order of the paper's ICA code; ``n_ascent + 1`` passes).

    Parameters
    ----------
    variant : {"g", "rg"}, default="g"
        ``"g"``: slices are the coordinate axes (``m = n_features``), directions
        learned. ``"rg"``: ``n_slices`` slices learned too.
    n_slices : int, default=None
        For ``"rg"`` (default ``min(n_features, 10)``).
    kernel : {"rbf", "imq"}, default="rbf"
    bandwidth : "median", float or array-like of shape (m,), default="median"
        ``"median"``: per direction, the median heuristic of the batch's projections,
        re-estimated every ``bandwidth_every`` calls; a constant of the loss in between.
    kernel_params : dict, default=None
    statistic : {"u", "v"}, default="v"
        The paper trains with the V-statistic (non-negative).
    init : {"identity", "random"} or array-like, default="identity"
        Starting directions (see :func:`skstein.search_directions`).
    optimizer : {"adam", "gd"}, default="adam"
    learning_rate : float, default=1e-3
        Ascent step size on the directions.
    betas : tuple of two floats, default=(0.9, 0.999)
        Adam's decay rates (the paper's ICA code uses (0.9, 0.99)).
    n_ascent : int, default=1
        Ascent steps per call.
    order : {"simultaneous", "ascent-first"}, default="simultaneous"
        Whether the loss is evaluated before the (last) ascent step, sharing its pass,
        or after the ascent steps.
    bandwidth_every : int, default=1
    orthogonal_slices : bool, default=True
        For ``"rg"``: keep the slices orthonormal (else unit-norm only).
    whiten : bool or array-like of shape (n_features, n_features), default=False
        The coordinates the loss is computed in (see :class:`KSDLoss`): an
        invertible ``A`` computes it at ``X @ A`` with scores ``S @ A^{-T}``, and
        the directions, slices and bandwidths live in those coordinates.
        ``skstein.kernels.whitening(X_train)[0]`` computes it where the training
        data are white (at D = 80 and 100 it halved the gap of ICA models to
        maximum likelihood; training the model of the whitened data did better
        still, see :class:`KSDLoss`); ``True`` whitens by the first batch.
    random_state : None, int or Generator, default=None
        Random initial directions and the median heuristic's subsample.

    Attributes
    ----------
    directions_ : ndarray of shape (m, n_features)
        The current directions (after the last ascent step), in the coordinates
        of ``whiten``.
    slices_ : ndarray of shape (m, n_features)
    bandwidth_ : ndarray of shape (m,)
        Bandwidths of the last evaluation.
    whitening_ : tuple (A, B) of ndarrays of shape (n_features, n_features) or None
        The map of ``whiten`` (None for ``whiten=False``).
    n_iter_ : int
        Calls so far.

    Examples
    --------
    >>> import numpy as np
    >>> from skstein.learning import MaxSKSDLoss
    >>> X = np.random.default_rng(0).standard_normal((50, 4))
    >>> loss = MaxSKSDLoss(random_state=0)
    >>> res = loss.value_and_grad(X, -2.0 * X)
    >>> res.grad_scores.shape, loss.directions_.shape
    ((50, 4), (4, 4))
    """

    def __init__(self, *, variant="g", n_slices=None, kernel="rbf", bandwidth="median",
                 kernel_params=None, statistic="v", init="identity", optimizer="adam",
                 learning_rate=1e-3, betas=(0.9, 0.999), n_ascent=1, order="simultaneous",
                 bandwidth_every=1, orthogonal_slices=True, whiten=False, random_state=None):
        self.variant = variant
        self.n_slices = n_slices
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.kernel_params = kernel_params
        self.statistic = statistic
        self.init = init
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.betas = betas
        self.n_ascent = n_ascent
        self.order = order
        self.bandwidth_every = bandwidth_every
        self.orthogonal_slices = orthogonal_slices
        self.whiten = whiten
        self.random_state = random_state

    def _start(self, X):
        d = X.shape[1]
        check_choice(self.variant, "variant", VARIANTS)
        check_choice(self.kernel, "kernel", KERNELS)
        check_choice(self.statistic, "statistic", ("u", "v"))
        check_choice(self.optimizer, "optimizer", OPTIMIZERS)
        check_positive_float(self.learning_rate, "learning_rate")
        check_positive_int(self.n_ascent, "n_ascent")
        check_choice(self.order, "order", ("simultaneous", "ascent-first"))
        _check_every(self.bandwidth_every, "bandwidth_every")
        orthogonal = check_bool(self.orthogonal_slices, "orthogonal_slices")
        betas = self.betas
        if (not isinstance(betas, (tuple, list)) or len(betas) != 2
                or not all(isinstance(b, numbers.Real) and not isinstance(b, bool)
                           and 0.0 <= b < 1.0 for b in betas)):
            raise ValueError(f"betas must be two floats in [0, 1), got {betas!r}.")
        make_kernel(self.kernel, 1.0, self.kernel_params)
        white = _loss_whitening(self.whiten, X)
        m = _n_pairs(self.variant, self.n_slices, d)
        rng = as_generator(self.random_state)
        G, R = _first_start(self.init, self.variant, m, d, rng, orthogonal)
        adam = self.optimizer == "adam"
        self._rng = rng
        self._opt_g = _Adam(G.shape, *betas, scale_free=True) if adam else None
        self._opt_r = _Adam(R.shape, *betas, scale_free=True) if adam and \
            self.variant == "rg" else None
        self.directions_, self.slices_ = G, R
        self.whitening_ = white
        self.bandwidth_ = None
        self.n_iter_ = 0

    def value_and_grad(self, X, S, *, update=True):
        """Ascent step(s) on the directions and the loss with its gradients (see ``order``).

        Parameters
        ----------
        X, S : array-like of shape (n_samples, n_features)
            The batch and its scores.
        update : bool, default=True
            ``False`` evaluates without moving the directions (e.g. for monitoring).

        Returns
        -------
        SteinGradient
            At the directions of the evaluation; ``grad_directions`` (and
            ``grad_slices`` for ``"rg"``) are the gradients there.
        """
        X, S = _check_pair(X, S)
        d = X.shape[1]
        if not hasattr(self, "directions_"):
            self._start(X)
        elif d != self.directions_.shape[1]:
            raise ValueError(f"X has {d} features, but this loss's directions have "
                             f"{self.directions_.shape[1]}; use a new loss (sklearn.clone).")
        update = check_bool(update, "update")
        return _whitened_call(self.whitening_, X, S, lambda X, S: self._step(X, S, update))

    def _step(self, X, S, update):
        """The ascent step(s) and the evaluation, in the loss's coordinates."""
        learn_r = self.variant == "rg"
        orthogonal = bool(self.orthogonal_slices)
        G, R = self.directions_, self.slices_
        median = isinstance(self.bandwidth, str)
        h = self.bandwidth_
        if h is None or (median and self.n_iter_ % self.bandwidth_every == 0):
            h = resolve_sliced_bandwidth(X @ G.T, self.bandwidth, random_state=self._rng,
                                         samples=(X, G))
        rate = float(self.learning_rate)
        n = int(self.n_ascent)
        if not update:
            plan = [(True, False)]  # (evaluate, ascend)
        elif self.order == "simultaneous":
            plan = [(False, True)] * (n - 1) + [(True, True)]
        else:
            plan = [(False, True)] * n + [(True, False)]
        res = None
        for evaluate, ascend in plan:
            U, A, c = sliced_projections(X, S, G, R)
            out = _sliced_value_and_grad(X, S, U, A, c, G, R, h, self.kernel,
                                         self.kernel_params, self.statistic, True, learn_r)
            if evaluate:
                res = out
            if ascend:
                G, R = _ascent_step(G, R, out.grad_directions,
                                    out.grad_slices if learn_r else None, self._opt_g,
                                    self._opt_r, rate, orthogonal)
        self.directions_, self.slices_, self.bandwidth_ = G, R, h
        if update:
            self.n_iter_ += 1
        return res
