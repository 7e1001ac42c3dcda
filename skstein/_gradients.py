r"""Stein discrepancies' values and closed-form gradients (the functional part of
:mod:`skstein.learning`, which re-exports these names and builds the losses on them).
"""

from contextlib import nullcontext
from dataclasses import dataclass, field

import numba
import numpy as np

from ._docstrings import fill_doc
from ._numba.learning import slice_chunks, sliced_grad_upper, stein_grad_block
from ._numba.stein import kernel_params as _kernel_params
from ._threads import numba_threads
from ._validation import check_bool, check_choice, check_positive_int, check_samples, evaluate_score
from .discrepancy import (
    DEFAULT_MAX_MEMORY,
    _sliced_kernel_params,
    _threads_for,
    check_directions,
    resolve_bandwidth,
    resolve_sliced_bandwidth,
    sliced_projections,
)
from .kernels import KERNELS, make_kernel

__all__ = ["SteinGradient", "ksd_value_and_grad", "sliced_ksd_value_and_grad",
           "model_value_and_grad"]

#: Below this many kernel evaluations a row-parallel pass runs on one thread.
SERIAL_EVALUATIONS = 2**16


@dataclass(frozen=True)
class SteinGradient:
    """A Stein discrepancy and its gradients.

    Attributes
    ----------
    value : float
        The statistic (U or V).
    grad_scores : ndarray (n, d)
        :math:`\\partial L / \\partial s_i`, row ``i`` for the score at ``x_i``.
    grad_points : ndarray (n, d)
        :math:`\\partial L / \\partial x_i` with the scores held fixed.
    bandwidth : float or ndarray (m,)
        The bandwidth(s) used.
    grad_directions, grad_slices : ndarray (m, d) or None
        Euclidean gradients in the directions ``G`` and slices ``R`` (sliced KSD only,
        when asked for).
    """

    value: float
    grad_scores: np.ndarray = field(repr=False)
    grad_points: np.ndarray = field(repr=False)
    bandwidth: object = None
    grad_directions: np.ndarray = field(default=None, repr=False)
    grad_slices: np.ndarray = field(default=None, repr=False)


def _as_samples(X, name):
    """``check_samples`` with a fast path for float64 arrays (this runs every training step)."""
    if (isinstance(X, np.ndarray) and X.dtype == np.float64 and X.ndim == 2
            and X.shape[0] >= 2 and X.shape[1] >= 1 and np.isfinite(X).all()):
        return X
    return check_samples(X, name=name)


def _check_pair(X, S):
    X = _as_samples(X, "X")
    S = _as_samples(S, "S")
    if S.shape != X.shape:
        raise ValueError(f"S must have the shape of X {X.shape} (one score per row), got "
                         f"{S.shape}.")
    return X, np.ascontiguousarray(S)


def _block_rows(n, max_memory):
    """Rows per block: three ``B x n`` temporaries within ``max_memory`` bytes."""
    return int(max(1, min(n, max_memory // max(1, 3 * 8 * n))))


def ksd_value_and_grad(X, S, *, kernel="rbf", bandwidth="median", kernel_params=None,
                       statistic="u", random_state=None, max_memory=DEFAULT_MAX_MEMORY):
    r"""The KSD of ``X`` with scores ``S``, and its gradients in ``S`` and ``X``.

    With the Stein kernel :math:`h(i, j)` of :mod:`skstein.discrepancy` and
    :math:`L = \frac{1}{N(N-1)}\sum_{i \ne j} h(i, j)` (U) or
    :math:`\frac{1}{N^2}\sum_{i, j} h(i, j)` (V), by the symmetry of :math:`h`,

    .. math::

        \frac{\partial L}{\partial s_i} \propto 2\sum_{j \ne i}
        \left[\kappa_{ij} s_j - 2\kappa'_{ij}(x_i - x_j)\right], \qquad
        \frac{\partial L}{\partial x_i} \propto 2\sum_{j \ne i}
        \left[2\omega_{ij}(x_i - x_j) - 2\kappa'_{ij}(s_i - s_j)\right],

    with :math:`\omega = \partial h / \partial \|x_i - x_j\|^2` (see
    :mod:`skstein._numba.learning`), plus the diagonal's :math:`2\kappa(0)s_i` for V.
    The scores are treated as free inputs: ``grad_points`` is the partial gradient at
    fixed ``S``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    S : array-like of shape (n_samples, n_features)
        Scores :math:`\nabla\log p(x_i)` (or any inputs the loss is a function of).
    kernel : {"rbf", "imq"}, default="rbf"
    bandwidth : float or "median", default="median"
        A constant of the loss; ``"median"`` is evaluated on ``X``.
    kernel_params : dict, default=None
        ``{"beta": ...}`` for IMQ.
    statistic : {"u", "v"}, default="u"
    random_state : None, int or Generator
        Only for the median heuristic's subsample (more than 2000 points).
    max_memory : int, default=64 MiB
        Bound on the ``B x N`` temporaries of one row block.

    Returns
    -------
    SteinGradient

    Examples
    --------
    >>> import numpy as np
    >>> from skstein.learning import ksd_value_and_grad
    >>> X = np.random.default_rng(0).standard_normal((100, 3))
    >>> res = ksd_value_and_grad(X, -1.5 * X, bandwidth=1.0)   # score of N(0, I/1.5)
    >>> res.grad_scores.shape
    (100, 3)
    """
    check_choice(statistic, "statistic", ("u", "v"))
    check_choice(kernel, "kernel", KERNELS)
    check_positive_int(max_memory, "max_memory")
    X, S = _check_pair(X, S)
    n, d = X.shape
    h = resolve_bandwidth(X, bandwidth, random_state=random_state)
    kern = make_kernel(kernel, h, kernel_params)
    code, p0, p1 = _kernel_params(kern)
    Xc = X - X.mean(axis=0)
    nx = np.einsum("ij,ij->i", Xc, Xc)
    nsx = np.einsum("ij,ij->i", S, Xc)
    gS = np.empty((n, d))
    gX = np.empty((n, d))
    total = 0.0
    rows = _block_rows(n, max_memory)
    for a in range(0, n, rows):
        b = min(n, a + rows)
        Xa, Sa = Xc[a:b], S[a:b]
        W = Xa @ Xc.T
        K = Sa @ S.T
        K1 = Xa @ S.T
        K1 += Sa @ Xc.T
        rh, rk1, rw = np.empty(b - a), np.empty(b - a), np.empty(b - a)
        with numba_threads(1) if (b - a) * n < SERIAL_EVALUATIONS else nullcontext():
            stein_grad_block(code, p0, p1, d, W, K, K1, nx, nsx, a, rh, rk1, rw)
        total += float(np.sum(rh))
        # sum_j dh(i, j)/ds_i and sum_j dh(i, j)/dx_i; the terms h(j, i) double them below
        gS[a:b] = K @ S - 2.0 * (rk1[:, None] * Xa - K1 @ Xc)
        gX[a:b] = 2.0 * (rw[:, None] * Xa - W @ Xc) - 2.0 * (rk1[:, None] * Sa - K1 @ S)
    gS *= 2.0
    gX *= 2.0
    if statistic == "u":
        scale = 1.0 / (n * (n - 1.0))
    else:
        k0, k1_0, _ = kern.profile(0.0)
        total += float(k0) * float(np.einsum("ij,ij->", S, S)) - 2.0 * d * n * float(k1_0)
        gS += 2.0 * float(k0) * S
        scale = 1.0 / float(n * n)
    return SteinGradient(total * scale, gS * scale, gX * scale, h)


def _sliced_pass(code, p0, p1, U, A, c, with_beta=True):
    """(hsum (m,), rho (n, m), beta (n, m), psisum (m,)) summed over ordered pairs i != j.

    ``beta`` stays zero unless ``with_beta`` (only gradients in the scores need it).
    """
    n, m = U.shape
    rho = np.empty((n, m))
    beta = np.empty((n, m))
    hsum = np.empty(m)
    psisum = np.empty(m)
    with _threads_for(n, n // 2, m):
        sliced_grad_upper(code, p0, p1, U, A, c, hsum, rho, beta, psisum, with_beta,
                          slice_chunks(n, m, numba.get_num_threads()))
    return 2.0 * hsum, rho, beta, 2.0 * psisum


def sliced_ksd_value_and_grad(X, S, directions=None, slices=None, *, kernel="rbf",
                              bandwidth="median", kernel_params=None, statistic="u",
                              grad_directions=False, grad_slices=False, random_state=None):
    r"""The sliced KSD at given directions and slices, and its gradients.

    With the 1-D Stein kernels :math:`h_k` of :func:`skstein.max_sksd`, projections
    :math:`u_{ik} = x_i^\top g_k`, :math:`a_{ik} = s_i^\top r_k`,
    :math:`c_k = r_k^\top g_k` and :math:`L = \sum_k \frac{1}{N(N-1)}
    \sum_{i \ne j} h_k(i, j)` (U) or the V-statistic with :math:`1/N^2` and the
    diagonal,

    .. math::

        \frac{\partial L}{\partial S} = \frac{2 B R}{N(N-1)}, \quad
        \frac{\partial L}{\partial X} = \frac{2 P G}{N(N-1)}, \quad
        \nabla_{g_k} L = \frac{2 X^\top P_{:k} + \Psi_k r_k}{N(N-1)}, \quad
        \nabla_{r_k} L = \frac{2 S^\top B_{:k} + \Psi_k g_k}{N(N-1)},

    where :math:`P_{ik} = \sum_j \partial h_k(i,j)/\partial\delta`,
    :math:`B_{ik} = \sum_j \partial h_k(i,j)/\partial a_i` and
    :math:`\Psi_k = \sum_{i \ne j} \partial h_k/\partial c_k` (DESIGN section 3.4).
    The bandwidths are constants of the loss.

    Parameters
    ----------
    X, S : array-like of shape (n_samples, n_features)
        Points and scores.
    directions : array-like of shape (m, n_features), default=None
        Test directions ``G`` (rows normalised); ``None``: the slices.
    slices : array-like of shape (m, n_features), default=None
        Slices ``R`` (rows normalised); ``None``: the identity (maxSKSD-g).
    kernel : {"rbf", "imq"}, default="rbf"
    bandwidth : "median", float or array-like of shape (m,), default="median"
        Per-pair bandwidths; ``"median"`` is evaluated on the projections ``X G^T``
        (as in :func:`~skstein.max_sksd`).
    kernel_params : dict, default=None
    statistic : {"u", "v"}, default="u"
    grad_directions, grad_slices : bool, default=False
        Also return the gradients in ``G`` and ``R`` (with respect to the normalised
        rows).
    random_state : None, int or Generator
        Only for the median heuristic's subsample (more than 1000 points).

    Returns
    -------
    SteinGradient
    """
    check_choice(statistic, "statistic", ("u", "v"))
    check_choice(kernel, "kernel", KERNELS)
    grad_directions = check_bool(grad_directions, "grad_directions")
    grad_slices = check_bool(grad_slices, "grad_slices")
    X, S = _check_pair(X, S)
    n, d = X.shape
    R = np.eye(d) if slices is None else check_directions(slices, "slices", d)
    G = R if directions is None else check_directions(directions, "directions", d,
                                                      R.shape[0])
    U, A, c = sliced_projections(X, S, G, R)
    h = resolve_sliced_bandwidth(U, bandwidth, random_state=random_state, samples=(X, G))
    return _sliced_value_and_grad(X, S, U, A, c, G, R, h, kernel, kernel_params, statistic,
                                  grad_directions, grad_slices)


def _sliced_value_and_grad(X, S, U, A, c, G, R, h, kernel, kernel_params, statistic,
                           grad_directions, grad_slices):
    """The sliced value and gradients from validated arrays and projections."""
    n = X.shape[0]
    code, p0, p1 = _sliced_kernel_params(kernel, h, kernel_params)
    hsum, rho, beta, psisum = _sliced_pass(code, p0, p1, U, A, c)
    total = float(np.sum(hsum))
    gA = 2.0 * beta
    if statistic == "u":
        scale = 1.0 / (n * (n - 1.0))
    else:
        k1_0 = -p0 if code == 0 else p1 * p0  # K'(0) per pair
        total += float(np.einsum("ik,ik->", A, A)) - 2.0 * n * float(np.sum(c * c * k1_0))
        gA += 2.0 * A
        psisum = psisum - 4.0 * n * c * k1_0
        scale = 1.0 / float(n * n)
    gU = 2.0 * rho
    gS = (gA @ R) * scale
    gX = (gU @ G) * scale
    gG = gR = None
    if grad_directions:
        gG = (gU.T @ X + psisum[:, None] * R) * scale
    if grad_slices:
        gR = (gA.T @ S + psisum[:, None] * G) * scale
    return SteinGradient(total * scale, gS, gX, h, gG, gR)


@fill_doc
def model_value_and_grad(loss, model, X):
    r"""A loss's value and its gradient in a model's parameters.

    Evaluates the score ``S = model.grad_logpdf(X)``, the loss and its gradient in the
    scores, and returns ``(value, model.grad_logpdf_vjp(X, dL/dS))``, i.e.
    :math:`\mathrm dL/\mathrm d\theta = \sum_i (\partial L/\partial s_i)\cdot
    (\partial s_i/\partial\theta)`.

    Parameters
    ----------
    loss : KSDLoss, MaxSKSDLoss or callable
        Anything with ``value_and_grad(X, S) -> SteinGradient``, or a callable
        ``(X, S) -> SteinGradient``.
    %(model_batch_parameters)s

    Returns
    -------
    value : float
        The loss.
    grad : ndarray or tuple of ndarrays
        Its gradient, shaped like the model's parameters.
    """
    vjp = getattr(model, "grad_logpdf_vjp", None)
    if not callable(vjp):
        raise TypeError(
            f"model must have grad_logpdf_vjp(X, V), the vector-Jacobian product of its "
            f"score with respect to its parameters; {type(model).__name__} has none.")
    X = _as_samples(X, "X")
    S = evaluate_score(model, X, "model", check_tails=False)
    fn = getattr(loss, "value_and_grad", loss)
    if not callable(fn):
        raise TypeError(f"loss must have value_and_grad(X, S) or be callable; got "
                        f"{type(loss).__name__}.")
    res = fn(X, S)
    return res.value, vjp(X, res.grad_scores)
