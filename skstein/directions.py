r"""Direction search for maxSKSD: gradient ascent over unit-norm directions.

maxSKSD (Gong, Li & Hernández-Lobato 2021) maximises the sliced KSD over the test
directions :math:`g_k` (maxSKSD-g, slices :math:`r_k = e_k`) or over both an
orthonormal set of slices :math:`r_k` and their directions (maxSKSD-rg):

.. math::

    \max_{G, R} \sum_{k=1}^m S_k(r_k, g_k), \qquad
    S_k = \frac{1}{N(N-1)} \sum_{i \ne j} h_k(x_i, x_j).

The objective is the U-statistic on the training sample, with exact full-batch
gradients in closed form (:func:`skstein.discrepancy.sliced_value_and_grad`).
Each step projects the Euclidean gradient onto the tangent space of the
constraint (unit-norm rows of ``G``; orthonormal rows of ``R``), takes an Adam or
plain ascent step, and maps back (row normalisation; a QR factorisation for
``R``). The bandwidths are treated as constants in each step; with
``bandwidth="median"`` they are re-estimated on the current projections every
``bandwidth_every`` steps and at the end. The iterate returned is the best on a
held-out part of the training sample (``validation_fraction``): the SKSD of a
few hundred points can be driven far up along directions that fit their noise,
and selecting on held-out points keeps what generalises.

For a factorised model and factorised data the optimal directions of maxSKSD-g
are the coordinate axes (Gong et al. 2021, appendix E), so ``init="identity"``
starts at the optimum of that class and the ascent only has to correct it.
"""

import numbers
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

from ._random import as_generator
from ._validation import (
    check_bool,
    check_choice,
    check_positive_float,
    check_positive_int,
    check_samples,
    evaluate_score,
)
from .discrepancy import (
    check_directions,
    resolve_sliced_bandwidth,
    sliced_stein_sums,
    sliced_value_and_grad,
)
from .kernels import KERNELS

__all__ = ["search_directions", "DirectionSearchResult", "VARIANTS", "OPTIMIZERS", "SCHEDULES"]

VARIANTS = ("g", "rg")
OPTIMIZERS = ("adam", "gd")
SCHEDULES = ("constant", "cosine")


@dataclass(frozen=True)
class DirectionSearchResult:
    """Result of :func:`search_directions`.

    Attributes
    ----------
    directions : ndarray (m, d)
        Unit-norm test directions ``G``.
    slices : ndarray (m, d)
        Orthonormal slices ``R`` (the identity for maxSKSD-g).
    bandwidth : ndarray (m,)
        Per-pair bandwidths for ``directions`` (re-estimated on the final
        projections when the search used the median heuristic).
    objective : float
        maxSKSD (U-statistic) at the returned directions, with the bandwidths the
        search used when it reached them: on the validation part when the search
        held one out, else on the training sample.
    n_iter : int
        Ascent steps taken (summed over restarts).
    history : ndarray
        Objective after each step of the best restart (left out of the repr).
    """

    directions: np.ndarray
    slices: np.ndarray
    bandwidth: np.ndarray
    objective: float
    n_iter: int
    history: np.ndarray = field(repr=False)


def _orthonormal_rows(M):
    """Orthonormalise the rows of M (m <= d) by QR, keeping each row's orientation."""
    Q, Rq = np.linalg.qr(M.T)
    sign = np.where(np.diag(Rq) < 0, -1.0, 1.0)
    return np.ascontiguousarray((Q * sign).T)


def _unit_rows(M):
    return M / np.linalg.norm(M, axis=1, keepdims=True)


def _random_orthonormal(m, d, rng):
    return _orthonormal_rows(rng.standard_normal((m, d)))


def _initial(init, variant, m, d, rng):
    """(G0, R0) for one restart."""
    if isinstance(init, str) and init == "identity":
        R = np.eye(d)[:m].copy()
        return R.copy(), R
    if isinstance(init, str) and init == "random":
        if variant == "g":
            return _unit_rows(rng.standard_normal((m, d))), np.eye(d)
        R = _random_orthonormal(m, d, rng)
        return R.copy(), R
    raise ValueError(f"init must be 'identity', 'random' or an array, got {init!r}.")


def _n_pairs(variant, n_slices, d):
    """Number of (slice, direction) pairs: ``d`` for "g", ``n_slices`` (default min(d, 10))."""
    if variant == "g":
        if n_slices is not None and n_slices != d:
            raise ValueError(f"n_slices must be None or {d} (n_features) for variant='g', "
                             f"got {n_slices!r}.")
        return d
    m = min(d, 10) if n_slices is None else check_positive_int(n_slices, "n_slices")
    if m > d:
        raise ValueError(f"n_slices must be at most n_features={d}, got {m}.")
    return m


def _first_start(init, variant, m, d, rng, orthogonal_slices=True):
    """(G0, R0) from ``init``: "identity", "random", an array G0 or a tuple (G0, R0)."""
    if isinstance(init, str):
        check_choice(init, "init", ("identity", "random"))
        return _initial(init, variant, m, d, rng)
    if isinstance(init, tuple):
        if len(init) != 2:
            raise ValueError("init as a tuple must be (G0, R0).")
        G0 = check_directions(init[0], "init", d, m)
        R0 = check_directions(init[1], "init", d, m)
    else:
        G0 = check_directions(init, "init", d, m)
        R0 = np.eye(d) if variant == "g" else G0.copy()
    if variant == "g" and not np.array_equal(R0, np.eye(d)):
        raise ValueError("maxSKSD-g uses the coordinate axes as slices; give init as G0 only.")
    if variant == "rg" and orthogonal_slices:
        R0 = _orthonormal_rows(R0)
    return G0, R0


class _Adam:
    def __init__(self, shape, beta1=0.9, beta2=0.999, eps=1e-8):
        self.m = np.zeros(shape)
        self.v = np.zeros(shape)
        self.b1, self.b2, self.eps, self.t = beta1, beta2, eps, 0

    def step(self, grad):
        self.t += 1
        self.m *= self.b1
        self.m += (1 - self.b1) * grad
        self.v *= self.b2
        self.v += (1 - self.b2) * grad * grad
        mhat = self.m / (1 - self.b1**self.t)
        vhat = self.v / (1 - self.b2**self.t)
        return mhat / (np.sqrt(vhat) + self.eps)


def _tangent_unit_rows(grad, G):
    return grad - np.einsum("kd,kd->k", grad, G)[:, None] * G


def _tangent_stiefel(grad, R):
    """Project onto the tangent space of {R : R R^T = I} at R (rows orthonormal)."""
    A = grad @ R.T
    return grad - 0.5 * (A + A.T) @ R


def _ascent_step(G, R, gG, gR, opt_g, opt_r, rate, orthogonal_slices=True):
    """One projected ascent step of ``G`` (and of ``R`` when ``gR`` is given).

    The Euclidean gradients are projected onto the tangent space of the constraint
    (unit-norm rows; orthonormal rows for ``R`` when ``orthogonal_slices``), passed
    through Adam when an optimiser state is given, and the step is mapped back.
    """
    tg = _tangent_unit_rows(gG, G)
    step = opt_g.step(tg) if opt_g is not None else tg
    G = _unit_rows(G + rate * step)
    if gR is not None:
        if orthogonal_slices:
            tr = _tangent_stiefel(gR, R)
            step = opt_r.step(tr) if opt_r is not None else tr
            R = _orthonormal_rows(R + rate * step)
        else:
            tr = _tangent_unit_rows(gR, R)
            step = opt_r.step(tr) if opt_r is not None else tr
            R = _unit_rows(R + rate * step)
    return G, R


def _ascend(X, S, G, R, variant, bandwidth, kernel, kernel_params, optimizer, lr, schedule,
            max_iter, tol, patience, bandwidth_every, rng, Xv=None, Sv=None, batch_size=None,
            orthogonal_slices=True):
    """One restart. Returns ((objective, G, R, h), n_iter, history).

    Without a validation sample the best iterate by training objective is kept. With
    one (``Xv``, ``Sv``) the held-out objective decides. When the pairs do not
    interact (maxSKSD-g, or -rg with free slices) each pair keeps the iterate whose
    held-out ``S_k`` was highest (early stopping per pair); orthonormal slices are
    tied together, so whole iterates are compared. The plateau rule watches the
    selected objective.
    """
    learn_r = variant == "rg"
    median = isinstance(bandwidth, str)
    h = resolve_sliced_bandwidth(X @ G.T, bandwidth, random_state=rng)
    opt_g = _Adam(G.shape) if optimizer == "adam" else None
    opt_r = _Adam(R.shape) if optimizer == "adam" and learn_r else None
    kw = dict(kernel=kernel, kernel_params=kernel_params)
    best_val = np.full(G.shape[0], -np.inf)
    bG, bR, bh = G.copy(), R.copy(), h.copy()
    best_total = -np.inf
    history = []
    since_best = 0
    n_iter = 0
    for it in range(max_iter + 1):
        if median and it > 0 and it % bandwidth_every == 0:
            h = resolve_sliced_bandwidth(X @ G.T, "median", random_state=rng)
        if batch_size is not None and batch_size < X.shape[0]:
            idx = rng.choice(X.shape[0], size=batch_size, replace=False)
            Xb, Sb = X[idx], S[idx]
        else:
            Xb, Sb = X, S
        values, gG, gR = sliced_value_and_grad(Xb, Sb, G, R, h, grad_slices=learn_r, **kw)
        if not learn_r:
            gR = None
        if Xv is not None:
            sel = sliced_stein_sums(Xv, Sv, G, R, h, **kw).pair_statistics("u")
        else:
            sel = values
        if learn_r and orthogonal_slices:
            better = np.full(sel.shape, sel.sum() > best_val.sum())
        else:
            better = sel > best_val
        best_val = np.where(better, sel, best_val)
        bG[better], bR[better], bh[better] = G[better], R[better], h[better]
        total = float(best_val.sum())
        history.append(float(sel.sum()))
        if total > best_total + tol * max(abs(best_total), 1e-12) or best_total == -np.inf:
            since_best = 0
        else:
            since_best += 1
        best_total = max(best_total, total)
        if it == max_iter or since_best >= patience:
            break
        rate = lr if schedule == "constant" else 0.5 * lr * (1 + np.cos(np.pi * it / max_iter))
        G, R = _ascent_step(G, R, gG, gR, opt_g, opt_r, rate, orthogonal_slices)
        n_iter += 1
    return (best_total, bG, bR, bh), n_iter, np.array(history)


def search_directions(X, model, *, variant="g", n_slices=None, kernel="rbf", kernel_params=None,
                      bandwidth="median", init="identity", optimizer="adam", learning_rate=0.01,
                      schedule="cosine", max_iter=20, tol=1e-3, patience=10, n_restarts=1,
                      bandwidth_every=10, validation_fraction=0.25, batch_size=None,
                      orthogonal_slices=True, random_state=None):
    """Learn maxSKSD directions (and slices) on the training sample ``X``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Training sample (keep it disjoint from the sample the test is run on).
    model : distribution or callable
        The model's score ``grad log p``.
    variant : {"g", "rg"}, default="g"
        ``"g"``: slices fixed to the coordinate axes, one learned direction each
        (``m = n_features``). ``"rg"``: ``n_slices`` learned orthonormal slices,
        each with its learned direction.
    n_slices : int, default=None
        Number of slices for ``"rg"``; default ``min(n_features, 10)``.
    kernel : {"rbf", "imq"}, default="rbf"
    kernel_params : dict, default=None
    bandwidth : "median", float or array-like (m,), default="median"
        Fixed bandwidths, or the median heuristic on the current projections
        (re-estimated every ``bandwidth_every`` steps and at the end).
    init : {"identity", "random"} or array-like, default="identity"
        Starting point: the coordinate axes (``G = R = I[:m]``), random unit
        directions (random orthonormal slices for ``"rg"``, with ``G = R``), an
        array ``G0`` of shape ``(m, n_features)``, or a tuple ``(G0, R0)`` for ``"rg"``.
        Restarts after the first always start at random.
    optimizer : {"adam", "gd"}, default="adam"
        Adam on the projected gradient, or plain projected gradient ascent.
    learning_rate : float, default=0.01
        Step size (Adam: roughly the change of each coordinate per step).
    schedule : {"cosine", "constant"}, default="cosine"
        Step-size schedule over ``max_iter`` steps.
    max_iter : int, default=20
        Maximum ascent steps per restart (0: evaluate the initial directions only).
    tol : float, default=1e-3
        Relative improvement of the best objective that counts as progress.
    patience : int, default=10
        Stop a restart after this many steps without progress.
    n_restarts : int, default=1
        Number of starts; the one with the highest objective is kept.
    bandwidth_every : int, default=10
        Steps between re-estimates of the median-heuristic bandwidths.
    validation_fraction : float, default=0.25
        Fraction of ``X`` held out of the gradient and used to select, for each pair
        ``k`` separately, the iterate with the highest held-out SKSD (early stopping).
        The sliced KSD of 200 points can be driven far up along directions that
        fit the sample's noise; selecting on held-out points keeps what generalises.
        ``0``: ascend on all of ``X`` and keep the best training objective.
    batch_size : int, default=None
        Points per gradient step: ``None`` uses the whole training part (exact
        full-batch gradients); an int draws a fresh random minibatch each step, for
        large training samples (e.g. pseudo-samples collected during an MCMC burn-in).
    orthogonal_slices : bool, default=True
        For ``"rg"``: keep the slices orthonormal (a partial orthonormal basis, the
        setting of the paper's theory), or only unit-norm (``False``), so that each
        pair ascends on its own and several slices may turn to the same informative
        direction, as in the authors' experiments. Either way the test is valid when
        the directions are learned on data disjoint from the tested sample.
    random_state : None, int or Generator
        Random initialisations and the median heuristic's subsample.

    Returns
    -------
    DirectionSearchResult

    Examples
    --------
    >>> import numpy as np
    >>> from skstein import search_directions
    >>> from skstein.distributions import Gaussian, gaussian_diffusion
    >>> X = gaussian_diffusion(5, 0.3).rvs(200, random_state=0)
    >>> res = search_directions(X, Gaussian(np.zeros(5)), variant="rg", n_slices=2,
    ...                         init="random", random_state=0)
    >>> res.directions.shape, res.slices.shape
    ((2, 5), (2, 5))
    """
    check_choice(variant, "variant", VARIANTS)
    check_choice(kernel, "kernel", KERNELS)
    check_choice(optimizer, "optimizer", OPTIMIZERS)
    check_choice(schedule, "schedule", SCHEDULES)
    lr = check_positive_float(learning_rate, "learning_rate")
    max_iter = check_positive_int(max_iter, "max_iter", minimum=0)
    patience = check_positive_int(patience, "patience")
    n_restarts = check_positive_int(n_restarts, "n_restarts")
    bandwidth_every = check_positive_int(bandwidth_every, "bandwidth_every")
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not tol >= 0:
        raise ValueError(f"tol must be a non-negative float, got {tol!r}.")
    X = check_samples(X)
    d = X.shape[1]
    m = _n_pairs(variant, n_slices, d)
    if (isinstance(validation_fraction, bool) or not isinstance(validation_fraction, numbers.Real)
            or not 0.0 <= validation_fraction < 1.0):
        raise ValueError(f"validation_fraction must be in [0, 1), got {validation_fraction!r}.")
    if batch_size is not None:
        batch_size = check_positive_int(batch_size, "batch_size", minimum=2)
    orthogonal_slices = check_bool(orthogonal_slices, "orthogonal_slices")
    rng = as_generator(random_state)
    S = evaluate_score(model, X)
    Xv = Sv = None
    n_val = int(round(validation_fraction * X.shape[0]))
    if n_val > 0:
        if n_val < 2 or X.shape[0] - n_val < 2:
            raise ValueError(f"validation_fraction={validation_fraction} leaves fewer than 2 "
                             f"samples for training or validation (n_samples={X.shape[0]}).")
        perm = rng.permutation(X.shape[0])
        Xv, Sv = X[perm[:n_val]], S[perm[:n_val]]
        X, S = X[perm[n_val:]], S[perm[n_val:]]

    starts = [_first_start(init, variant, m, d, rng, orthogonal_slices)]
    for _ in range(n_restarts - 1):
        starts.append(_initial("random", variant, m, d, rng))
    if isinstance(bandwidth, str):
        if bandwidth != "median":
            raise ValueError(f"bandwidth must be 'median', a positive float or an array, got "
                             f"{bandwidth!r}.")
    else:
        bandwidth = resolve_sliced_bandwidth(np.empty((0, m)), bandwidth)

    best, total_iter = None, 0
    # the matrix products of a step are small (m x n x d); one BLAS thread avoids the
    # thread pools of BLAS and numba competing for the same cores
    with threadpool_limits(limits=1, user_api="blas"):
        for G0, R0 in starts:
            (obj, G, R, h), n_iter, history = _ascend(
                X, S, G0, R0, variant, bandwidth, kernel, kernel_params, optimizer, lr,
                schedule, max_iter, tol, patience, bandwidth_every, rng, Xv, Sv, batch_size,
                orthogonal_slices)
            total_iter += n_iter
            if best is None or obj > best[0]:
                best = (obj, G, R, h, history)
    obj, G, R, h, history = best
    if isinstance(bandwidth, str):
        Xall = X if Xv is None else np.concatenate([X, Xv])
        h = resolve_sliced_bandwidth(Xall @ G.T, "median", random_state=rng)
    return DirectionSearchResult(G, R, h, obj, total_iter, history)
