r"""Direction search for maxSKSD: data-driven starts and gradient ascent.

maxSKSD (Gong, Li & Hernández-Lobato 2021) maximises the sliced KSD over the test
directions :math:`g_k` (maxSKSD-g, slices :math:`r_k = e_k`) or over both the slices
:math:`r_k` and their directions (maxSKSD-rg):

.. math::

    \max_{G, R} \sum_{k=1}^m S_k(r_k, g_k), \qquad
    S_k = \frac{1}{N(N-1)} \sum_{i \ne j} h_k(x_i, x_j).

The objective is the U-statistic on the training sample, with exact full-batch
gradients in closed form (:func:`skstein.discrepancy.sliced_value_and_grad`).
Each step projects the Euclidean gradient onto the tangent space of the
constraint (unit-norm rows of ``G``; orthonormal or unit rows of ``R``), takes an
Adam or plain ascent step, and maps back (row normalisation; a QR factorisation for
orthonormal ``R``). The bandwidths are treated as constants in each step; with
``bandwidth="median"`` they are re-estimated on the current projections every
``bandwidth_every`` steps and at the end. The iterate returned is the best on a
held-out part of the training sample (``validation_fraction``): the SKSD of a
few hundred points can be driven far up along directions that fit their noise,
and selecting on held-out points keeps what generalises.

**Where the ascent starts** (``init="auto"``, the default) decides what it can find:
an ascent of a few hundred points refines directions, it does not discover them in
50 dimensions. The starts are built from *Stein moments* of the training part,
:math:`E_q[(s_p(x)\cdot r)\,\varphi(g \cdot \tilde x) + (r \cdot g)\,\varphi'(g\cdot\tilde x)]`,
which vanish for every direction when the sample comes from :math:`p` (the Stein
identity with the test function :math:`\varphi`, :math:`\tilde x` the centred data),
so their large values point at departures:

* ``"identity"``: the coordinate axes, optimal when model and data factorise over
  them (Gong et al. 2021, appendix E);
* ``"spectral"``, :math:`\varphi(u) = u` and :math:`\varphi = 1`: the symmetric Stein
  moment matrix :math:`M = \mathrm{sym}(\frac1N\sum_i s_p(x_i)\tilde x_i^\top) + I`,
  zero in expectation under :math:`p`. maxSKSD-rg starts at the mean score direction
  and the eigenvectors of :math:`M` taken alternately from both ends of its spectrum
  (departures in second moments, e.g. a variance along an oblique direction).
  maxSKSD-g, whose slices are the axes, gets three starts: slice :math:`d` at row
  :math:`d` of :math:`M` (the direction :math:`g` that maximises :math:`(Mg)_d`),
  and every slice along the eigenvector at the top, or at the bottom, of the
  spectrum (a departure along one direction :math:`v` reaches every slice in
  proportion to :math:`v_d`; in 50 dimensions the rows of :math:`M` estimated from
  200 points are mostly noise, its extreme eigenvectors are not). Cost: one
  ``D x D`` eigendecomposition.
* ``"cubic"``, :math:`\varphi(u) = u^3` on standardised data (centred, divided by
  their root mean square :math:`\sigma`), with the standardised model's score
  :math:`\sigma s_p`: the unit directions that maximise
  :math:`|E[\sigma (s_p\cdot r) u^3 + 3 (r\cdot g) u^2]|` (departures in
  third and fourth moments, e.g. heavy tails along an oblique direction: for a
  Gaussian model this is a projection-pursuit / FastICA contrast), found by a
  fixed-point (power) iteration on its gradient, with deflation for maxSKSD-rg (one
  direction per pair, each orthogonal to those before) and one iteration per slice
  started at its axis for maxSKSD-g. Cost: ``O(N D m)`` per iteration, at most 50.
* ``"ica"`` (not among the defaults; ``starts``): directions of extreme
  non-Gaussianity of the training sample, found by deflationary FastICA (log-cosh
  contrast) on the whitened sample (:func:`independent_directions`), ranked by a
  Stein moment with :math:`\varphi = \tanh` on standardised projections. The
  log-cosh contrast is far less noisy than the fourth moment behind ``"cubic"``: on
  rotated Laplace data in 50 dimensions, 800 points give directions within a median
  cosine of 0.85 of the true ones (``"cubic"``: 0.6), while 200 points give 0.35,
  no better than chance; it earns its place with cross-fitting
  (:class:`skstein.MaxSKSDTest` ``cv``), whose folds learn on most of the sample.

The Stein moments use the whole training sample (estimates that improve with every
point: a variance deficit along one direction in 50 dimensions stands out of the
spectrum of 200 points, not of 150), and the data-driven starts are used as found;
the axes are refined by the ascent on the fit part, with early stopping on the
held-out part. Every start's result is kept (``DirectionSearchResult.candidates``);
the one returned is the best by the held-out power criterion (statistic over its
standard deviation). Choosing among starts on
a few dozen held-out points is unreliable in high dimensions (measured on rotated
diffusion in 50 dimensions, 20 trials: the right start was chosen in about half of
them), so :class:`skstein.MaxSKSDTest` does not choose: its test aggregates over
the candidates, with one bootstrap and the exact min-p correction of the aggregated
tests, and its power follows the best candidate.
"""

import numbers
from dataclasses import dataclass, field, replace

import numpy as np

from ._numba.directions import cubic_slice_moments, fastica_deflation
from ._threads import single_blas
from ._random import as_generator
from ._validation import (
    check_bool,
    check_choice,
    check_positive_float,
    check_positive_int,
    check_samples,
    evaluate_score,
    power_of_two_exponent,
)
from .discrepancy import (
    check_directions,
    resolve_sliced_bandwidth,
    sliced_stein_sums,
    sliced_value_and_grad,
)
from .kernels import KERNELS
from .kernels import flat_directions as _flat_columns

__all__ = ["search_directions", "DirectionSearchResult", "AscentSettings", "stein_starts",
           "stein_moment_matrix", "independent_directions", "VARIANTS", "OPTIMIZERS",
           "SCHEDULES", "AUTO_STARTS", "ALL_STARTS"]

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
        Ascent steps taken (summed over starts and restarts).
    history : ndarray
        Objective after each step of the best start (left out of the repr).
    pair_objectives : ndarray (m,)
        Each pair's share of ``objective`` (held-out ``S_k`` of its selected iterate).
    start : str
        Which start the directions came from (``"identity"``, ``"spectral"``,
        ``"cubic"``, ``"given"``, ``"random"``).
    candidates : tuple of (str, G, R, h)
        Every start's result (name, directions, slices, bandwidths), the returned one
        among them; :class:`skstein.MaxSKSDTest` aggregates its test over them.
    """

    directions: np.ndarray
    slices: np.ndarray
    bandwidth: np.ndarray
    objective: float
    n_iter: int
    history: np.ndarray = field(repr=False)
    pair_objectives: np.ndarray = field(default=None, repr=False)
    start: str = None
    candidates: tuple = field(default=(), repr=False)


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
        if n_slices is not None and check_positive_int(n_slices, "n_slices") != d:
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
        check_choice(init, "init", ("auto", "identity", "random"))
        # the data-driven starts need a training sample; a stream starts at the axes
        return _initial("identity" if init == "auto" else init, variant, m, d, rng)
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


#: Maximum iterations of the fixed-point iteration of the cubic Stein moment.
CUBIC_ITERATIONS = 50
#: The iteration stops when every direction moved by less than this in 1 - |cos|
#: (an angle below about 1.4e-4 radians).
CUBIC_TOL = 1e-8
#: Starts of ``init="auto"``, per variant, in the order of ``candidates``.
AUTO_STARTS = {"g": ("identity", "spectral", "spectral-top", "spectral-bottom", "cubic"),
               "rg": ("identity", "spectral", "cubic")}
#: Every start ``init="auto"`` can take (``starts``), per variant.
ALL_STARTS = {"g": AUTO_STARTS["g"] + ("ica",), "rg": AUTO_STARTS["rg"] + ("ica",)}


def _standardised(X):
    """``(Xs, scale)``: the centred data divided by ``scale``, their overall root mean
    square (one scale for all axes; 1 for a constant sample)."""
    Xc = X - X.mean(axis=0)
    scale = float(np.sqrt(np.mean(Xc * Xc)))
    scale = scale if scale > 0 else 1.0
    return Xc / scale, scale


def stein_moment_matrix(X, S):
    r"""Symmetric Stein moment matrix :math:`\mathrm{sym}(\frac1N \sum_i s_i \tilde x_i^\top) + I`.

    Zero in expectation when the rows of ``X`` come from the model whose scores are
    ``S`` (Stein's identity with the linear test functions :math:`x \mapsto x_a`);
    ``X`` is centred at its mean.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The sample.
    S : ndarray of shape (n, d)
        The model's scores at the rows of ``X``.

    Returns
    -------
    ndarray of shape (d, d)
    """
    with np.errstate(over="ignore", invalid="ignore"):  # overflow: the error below
        Xc = X - X.mean(axis=0)
        M = S.T @ Xc / X.shape[0]
        M = 0.5 * (M + M.T)
    if not np.all(np.isfinite(M)):
        raise ValueError("the Stein moment matrix of X (its products with the model's "
                         "scores) overflows float64; rescale X.")
    M[np.diag_indices_from(M)] += 1.0
    return M


def _spectral_start(X, S, variant, m, orthogonal_slices):
    d = X.shape[1]
    M = stein_moment_matrix(X, S)
    if variant == "g":
        with np.errstate(over="ignore", invalid="ignore"):  # overflow: the ascent's error
            norms = np.linalg.norm(M, axis=1)
        G = np.where(norms[:, None] > 0, M / np.where(norms > 0, norms, 1.0)[:, None], np.eye(d))
        return np.ascontiguousarray(G), np.eye(d)
    evals, evecs = np.linalg.eigh(M)
    order = []
    lo, hi = 0, d - 1
    while lo <= hi:  # alternate ends of the spectrum, the larger |eigenvalue| first
        if abs(evals[hi]) >= abs(evals[lo]):
            order += [hi, lo] if lo != hi else [hi]
        else:
            order += [lo, hi]
        lo, hi = lo + 1, hi - 1
    cands = [evecs[:, k] for k in order]
    mean_score = S.mean(axis=0)
    if np.linalg.norm(mean_score) > 0:
        cands.insert(0, mean_score / np.linalg.norm(mean_score))
    C = np.array(cands[:m])
    R = _orthonormal_rows(C) if orthogonal_slices else _unit_rows(C)
    return R.copy(), R


def _cubic_gradients_per_slice(Xs, S, G, transposed=None):
    """Values and gradients of :math:`f_d(g_d) = E[s_d u^3 + 3 g_{dd} u^2]`, ``u = Xs g_d``.

    All slices ``d`` (rows of ``G``) at once, by the compiled kernel
    :func:`skstein._numba.directions.cubic_slice_moments` (parallel over the slices,
    the same numbers for any thread count).

    Parameters
    ----------
    Xs, S : ndarray of shape (n, d)
        The standardised sample and its scores.
    G : ndarray of shape (d, d)
        One direction per slice.
    transposed : tuple of ndarray, default=None
        ``(Xs.T, S.T)`` as C-contiguous float64 arrays, when the caller keeps them
        (the iteration of :func:`_cubic_start` makes them once); None: made here.

    Returns
    -------
    values : ndarray of shape (d,)
    grad : ndarray of shape (d, d)
        Row ``d`` the gradient of :math:`f_d` at ``G[d]``.
    """
    Xs = np.ascontiguousarray(Xs, dtype=np.float64)
    G = np.ascontiguousarray(G, dtype=np.float64)
    if transposed is None:
        transposed = _transposed(Xs, S)
    d = G.shape[0]
    values = np.empty(d)
    grad = np.empty((d, d))
    cubic_slice_moments(Xs, transposed[0], transposed[1], G, values, grad)
    return values, grad


def _transposed(Xs, S):
    """``(Xs.T, S.T)`` as C-contiguous float64 arrays (the kernel's column access)."""
    return (np.ascontiguousarray(Xs.T, dtype=np.float64),
            np.ascontiguousarray(S.T, dtype=np.float64))


def _cubic_overflow():
    return ValueError("the cubic Stein moment is not finite on X: the model's scores in "
                      "the units of the standardised data (the scores times the data's "
                      "scale) overflow float64, X being far from the model's scale; "
                      "rescale X.")


def _cubic_start(X, S, variant, m, rng, orthogonal_slices):
    Xs, scale = _standardised(X)
    # the scores of the model of the standardised data (the chain rule): the cubic
    # moment is a Stein identity only with them (before, the data's own scores made
    # the start depend on the units of X)
    with np.errstate(over="ignore", invalid="ignore"):
        S = S * scale
        if not np.all(np.isfinite(S)):
            raise _cubic_overflow()
        return _cubic_iterations(Xs, S, variant, m, rng, orthogonal_slices)


def _cubic_iterations(Xs, S, variant, m, rng, orthogonal_slices):
    """The fixed-point iterations of :func:`_cubic_start` on standardised data ``Xs``
    with the standardised model's scores ``S``."""
    n, d = Xs.shape
    if variant == "g":
        G = np.eye(d)
        transposed = _transposed(Xs, S)
        for _ in range(CUBIC_ITERATIONS):
            values, grad = _cubic_gradients_per_slice(Xs, S, G, transposed)
            new = np.sign(values)[:, None] * grad
            norms = np.linalg.norm(new, axis=1)
            if not np.all(np.isfinite(norms)):
                raise _cubic_overflow()
            new = np.where(norms[:, None] > 0, new / np.where(norms > 0, norms, 1.0)[:, None], G)
            done = np.all(np.abs(np.einsum("kd,kd->k", new, G)) > 1.0 - CUBIC_TOL)
            G = new
            if done:
                break
        return np.ascontiguousarray(G), np.eye(d)
    found = []
    for _ in range(m):
        g = rng.standard_normal(d)
        for b in found:
            g -= (g @ b) * b
        g /= np.linalg.norm(g)
        for _ in range(CUBIC_ITERATIONS):
            u = Xs @ g
            a = S @ g
            value = np.mean(a * u**3 + 3.0 * u * u)
            grad = S.T @ (u**3) / n + 3.0 * Xs.T @ (a * u * u) / n + 6.0 * Xs.T @ u / n
            grad *= np.sign(value) if value != 0 else 1.0
            for b in found:
                grad -= (grad @ b) * b
            norm = np.linalg.norm(grad)
            if not np.isfinite(norm):
                raise _cubic_overflow()
            if norm == 0:
                break
            new = grad / norm
            done = abs(new @ g) > 1.0 - CUBIC_TOL
            g = new
            if done:
                break
        found.append(g)
    C = np.array(found)
    R = _orthonormal_rows(C) if orthogonal_slices else _unit_rows(C)
    return R.copy(), R


#: Maximum iterations of the FastICA fixed point per direction of the ``"ica"`` start.
ICA_ITERATIONS = 200
#: Its iteration stops when the direction moved by less than this in 1 - |cos|.
ICA_TOL = 1e-6
#: Directions found by the ``"ica"`` start, among which the slices choose (at most the
#: rank of the sample's covariance).
ICA_DIRECTIONS = 20


def _whitening_map(X):
    """``(Xc, A)``: the centred sample and ``A`` (d x r) with ``Xc @ A`` white.

    ``r`` counts the covariance's eigenvalues above ``1e-10`` of the largest (the
    directions along which the sample varies at all).
    """
    with np.errstate(over="ignore", invalid="ignore"):  # overflow: the error below
        Xc = X - X.mean(axis=0)
        C = Xc.T @ Xc / Xc.shape[0]
    if not np.all(np.isfinite(C)):
        raise ValueError("the covariance of X overflows float64; rescale X.")
    evals, evecs = np.linalg.eigh(C)
    keep = evals > 1e-10 * max(evals[-1], np.finfo(np.float64).tiny)
    return Xc, evecs[:, keep] / np.sqrt(evals[keep])


def independent_directions(X, n_directions, rng):
    r"""Directions of extreme non-Gaussianity: deflationary FastICA on the whitened sample.

    The one-unit fixed point of Hyvärinen (1999) with the log-cosh contrast,
    :math:`w \leftarrow E[z \tanh(w^\top z)] - E[1 - \tanh^2(w^\top z)]\, w`, on the
    whitened points :math:`z = A^\top \tilde x` (:math:`\tilde x` centred), each
    direction from a random start, kept orthogonal to those found before and
    normalised after every step (at most ``ICA_ITERATIONS`` steps, until it moves by
    less than ``ICA_TOL``). Each unmixing vector is mapped back to the data's
    coordinates (:math:`g \propto A w`, the direction whose projection of the data is
    :math:`w^\top z`) and normalised. Cost: ``O(n d)`` per step and direction.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    n_directions : int
        Directions to find (at most the rank of the sample's covariance).
    rng : Generator
        The random starts.

    Returns
    -------
    ndarray of shape (k, d)
        Unit directions, ``k = min(n_directions, rank)``.
    """
    Xc, A = _whitening_map(X)
    Z = np.ascontiguousarray(Xc @ A)
    r = Z.shape[1]
    starts = rng.standard_normal((min(n_directions, r), r))  # one start per direction
    # each fixed-point step is one parallel pass over the rows (numba's threads)
    found = fastica_deflation(Z, starts, ICA_ITERATIONS, ICA_TOL)
    return _unit_rows(found @ A.T)


def _tanh_stein_moments(X, S, C):
    r"""Stein moments :math:`E[s_a \tanh(u_j) + C_{ja} \operatorname{sech}^2(u_j) / \sigma_j]`.

    ``u_j`` is the projection of the centred data on ``C_j`` divided by its standard
    deviation ``sigma_j``; zero in expectation under the model for every slice ``a``
    and direction ``j``. Returns the ``(d, r)`` matrix.
    """
    U = (X - X.mean(axis=0)) @ C.T
    sd = U.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    T = np.tanh(U / sd)
    return S.T @ T / X.shape[0] + C.T * (np.mean(1.0 - T * T, axis=0) / sd)[None, :]


def _ica_start(X, S, variant, m, rng, orthogonal_slices):
    r"""The ``"ica"`` start: independent directions where the Stein moments are largest.

    ``ICA_DIRECTIONS`` (at least ``m``) directions of :func:`independent_directions`
    are ranked by :math:`|c_j^\top M_{:,j}|`, the Stein moment with slice and
    direction along :math:`c_j` (:func:`_tanh_stein_moments`, ``M`` of shape (d, r)).
    maxSKSD-rg takes the ``m`` first (slice and direction alike); maxSKSD-g keeps
    the ``min(d, 10)`` first and gives slice ``d`` the one with the largest
    :math:`|M_{dj}|` (a departure along :math:`c_j` reaches slice ``d`` in proportion
    to :math:`c_{jd}`).
    """
    d = X.shape[1]
    C = independent_directions(X, max(ICA_DIRECTIONS, m) if variant == "rg" else ICA_DIRECTIONS,
                               rng)
    if len(C) == 0:  # a constant sample has no independent directions: the axes
        return np.eye(d)[:m].copy(), np.eye(d)[:m].copy()
    M = _tanh_stein_moments(X, S, C)
    order = np.argsort(-np.abs(np.einsum("jd,dj->j", C, M)), kind="stable")
    if variant == "g":
        keep = order[:min(d, 10)]
        return np.ascontiguousarray(C[keep][np.argmax(np.abs(M[:, keep]), axis=1)]), np.eye(d)
    picked = C[order[:m]]
    if len(picked) < m:  # a rank-deficient sample: fill with the axes
        picked = np.vstack([picked, np.eye(d)[:m - len(picked)]])
    R = _orthonormal_rows(picked) if orthogonal_slices else _unit_rows(picked)
    return R.copy(), R


def _spectral_shared_starts(X, S):
    """maxSKSD-g: every slice along one extreme eigenvector of M (one start per end)."""
    d = X.shape[1]
    evals, evecs = np.linalg.eigh(stein_moment_matrix(X, S))
    return {"spectral-top": (np.tile(evecs[:, -1], (d, 1)), np.eye(d)),
            "spectral-bottom": (np.tile(evecs[:, 0], (d, 1)), np.eye(d))}


def stein_starts(X, S, variant, m, rng, orthogonal_slices=True, starts=None):
    """The data-driven starts of ``init="auto"``: ``{name: (G0, R0)}`` (see module docstring).

    Parameters
    ----------
    X, S : ndarray (n, d)
        Training sample and its scores.
    variant : {"g", "rg"}
    m : int
        Number of (slice, direction) pairs.
    rng : Generator
        Deflation starts of the cubic and independent-direction iterations.
    orthogonal_slices : bool
    starts : sequence of str, default=None
        Which starts, among ``ALL_STARTS[variant]``, in that order; ``None``:
        ``AUTO_STARTS[variant]``.
    """
    names = resolve_starts(starts, variant)
    d = X.shape[1]
    identity = np.eye(d)[:m].copy()
    out = {}
    for name in names:
        if name == "identity":
            out[name] = (identity.copy(), identity if variant == "rg" else np.eye(d))
        elif name == "spectral":
            out[name] = _spectral_start(X, S, variant, m, orthogonal_slices)
        elif name in ("spectral-top", "spectral-bottom"):
            out[name] = _spectral_shared_starts(X, S)[name]
        elif name == "cubic":
            out[name] = _cubic_start(X, S, variant, m, rng, orthogonal_slices)
        else:
            out[name] = _ica_start(X, S, variant, m, rng, orthogonal_slices)
    return out


def resolve_starts(starts, variant):
    """The names of the starts of ``init="auto"`` (``None``: ``AUTO_STARTS[variant]``)."""
    if starts is None:
        return AUTO_STARTS[variant]
    names = (starts,) if isinstance(starts, str) else tuple(starts)
    if not names or any(not isinstance(n, str) or n not in ALL_STARTS[variant] for n in names) \
            or len(set(names)) < len(names):
        raise ValueError(f"starts must be None or distinct names among "
                         f"{list(ALL_STARTS[variant])} for variant={variant!r}, got {starts!r}.")
    return names


#: ``_Adam(scale_free=True)``: first gradients whose root-mean-square lies outside
#: [2^-SCALE_FREE_WINDOW, 2^SCALE_FREE_WINDOW] fix a power of two that brings them to
#: unit scale
SCALE_FREE_WINDOW = 20


class _Adam:
    """Adam's step direction (``step`` returns ``mhat / (sqrt(vhat) + eps)``).

    ``scale_free=True``: the guard ``eps`` is held relative to the gradients' scale, so
    the steps do not depend on the units of the problem. The maxSKSD objective of data
    in units ``s`` has gradients of order ``1 / s^2`` in the directions: at ``s = 1e6``
    they are far below ``eps`` and the steps vanish (the identity start's ascent on a
    rotated-Laplace sample in ten dimensions ended at -0.008 there, against 0.055 at
    unit scale). The first gradient's root-mean-square, if outside
    [2^-SCALE_FREE_WINDOW, 2^SCALE_FREE_WINDOW], fixes a power of two (at most 2^300
    either way) by which every gradient is multiplied: exact, and none inside that
    window, so problems near unit scale take the same steps as with plain Adam.
    """

    def __init__(self, shape, beta1=0.9, beta2=0.999, eps=1e-8, scale_free=False):
        self.m = np.zeros(shape)
        self.v = np.zeros(shape)
        self.b1, self.b2, self.eps, self.t = beta1, beta2, eps, 0
        self.scale_free = scale_free
        self.k = None  # the power of two of scale_free, fixed at the first step

    def _rescaled(self, grad):
        if self.k is None:
            with np.errstate(over="ignore", under="ignore", invalid="ignore"):
                rms = float(np.sqrt(np.mean(np.square(grad)))) if np.size(grad) else 0.0
            self.k = -int(np.clip(power_of_two_exponent(rms, SCALE_FREE_WINDOW), -300, 300))
        return np.ldexp(grad, self.k) if self.k else grad

    def step(self, grad):
        if self.scale_free:
            grad = self._rescaled(grad)
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


@dataclass(frozen=True)
class AscentSettings:
    """Settings of one ascent.

    The parameters mean what they mean in :func:`search_directions`.

    Parameters
    ----------
    kernel : {"rbf", "imq"}, default="rbf"
        1-D base kernel.
    kernel_params : dict, default=None
        Extra kernel parameters.
    optimizer : {"adam", "gd"}, default="adam"
        Step rule on the projected gradient.
    learning_rate : float, default=0.01
        Step size.
    schedule : {"cosine", "constant"}, default="cosine"
        Step-size schedule over ``max_iter`` steps.
    max_iter : int, default=20
        Maximum ascent steps per start.
    tol : float, default=1e-3
        Relative improvement that counts as progress.
    patience : int, default=10
        Steps without progress before an ascent stops.
    bandwidth_every : int, default=10
        Steps between re-estimates of median-heuristic bandwidths.
    batch_size : int, default=None
        Points per gradient step (``None``: all).
    orthogonal_slices : bool, default=True
        Keep the ``"rg"`` slices orthonormal.
    """

    kernel: str = "rbf"
    kernel_params: dict = None
    optimizer: str = "adam"
    learning_rate: float = 0.01
    schedule: str = "cosine"
    max_iter: int = 20
    tol: float = 1e-3
    patience: int = 10
    bandwidth_every: int = 10
    batch_size: int = None
    orthogonal_slices: bool = True

    def kernel_kwargs(self):
        """The keyword arguments ``kernel`` and ``kernel_params`` of the Stein passes.

        Returns
        -------
        dict
        """
        return dict(kernel=self.kernel, kernel_params=self.kernel_params)


def _coincide_along(G, *samples):
    """Whether the rows of some sample coincide along some direction (row of ``G``), up to
    rounding (:func:`_flat_columns`)."""
    return any(bool(np.any(_flat_columns(A, G))) for A in samples if A is not None)


def _heldout_bandwidth(X, Xv, G, rng, h=None):
    """Median bandwidths of the held-out projections ``Xv @ G.T``; along a direction where
    the held-out rows coincide, those of the training projections ``X @ G.T`` (``h`` when
    given).

    A few held-out points of discrete-valued data coincide along an axis often: two
    points of integers drawn from seven values agree in a coordinate one time in seven,
    so of 17 axes some axis nine times in ten. The median of their
    differences is then undefined, while the training sample's is not.
    """
    flat = _flat_columns(Xv, G)
    if not np.any(flat):
        return resolve_sliced_bandwidth(Xv @ G.T, "median", random_state=rng)
    out = (_median(X, G, rng) if h is None else h).copy()
    if not np.all(flat):
        out[~flat] = resolve_sliced_bandwidth(Xv @ G[~flat].T, "median", random_state=rng)
    return out


def _median(X, G, rng):
    """The per-direction median bandwidths of ``X @ G.T`` (``"median"`` of
    :func:`~skstein.discrepancy.resolve_sliced_bandwidth`, flat directions up to rounding
    included)."""
    return resolve_sliced_bandwidth(X @ G.T, "median", random_state=rng, samples=(X, G))


def _ascend(X, S, G, R, variant, bandwidth, cfg, rng, Xv=None, Sv=None):
    """One ascent from ``(G, R)``. Returns ((objective, G, R, h, per_pair), n_iter, history).

    Without a validation sample the best iterate by training objective is kept. With
    one (``Xv``, ``Sv``) the held-out objective decides, computed with bandwidths
    from the held-out projections (median heuristic) or the fixed ones: along a
    direction that fits the training sample's noise its training spread is small,
    and a bandwidth taken from it would make the held-out value large by noise. When
    the pairs do not interact (maxSKSD-g, or -rg with free slices) each pair keeps
    the iterate whose held-out ``S_k`` was highest (early stopping per pair);
    orthonormal slices are tied together, so whole iterates are compared. The
    plateau rule watches the selected objective. ``h`` holds the bandwidths of the
    selected iterates (held-out ones with a validation sample), ``per_pair`` their
    selected objectives.
    """
    learn_r = variant == "rg"
    median = isinstance(bandwidth, str)
    h = resolve_sliced_bandwidth(X @ G.T, bandwidth, random_state=rng, samples=(X, G))
    hv = h if Xv is None or not median else _heldout_bandwidth(X, Xv, G, rng, h)
    opt_g = _Adam(G.shape, scale_free=True) if cfg.optimizer == "adam" else None
    opt_r = _Adam(R.shape, scale_free=True) if cfg.optimizer == "adam" and learn_r else None
    kw = cfg.kernel_kwargs()
    best_val = np.full(G.shape[0], -np.inf)
    bG, bR, bh = G.copy(), R.copy(), hv.copy()
    best_total = -np.inf
    history = []
    since_best = 0
    n_iter = 0
    for it in range(cfg.max_iter + 1):
        if median and it > 0 and it % cfg.bandwidth_every == 0:
            h = _median(X, G, rng)
            if Xv is not None:
                hv = _heldout_bandwidth(X, Xv, G, rng, h)
            else:
                hv = h
        if cfg.batch_size is not None and cfg.batch_size < X.shape[0]:
            idx = rng.choice(X.shape[0], size=cfg.batch_size, replace=False)
            Xb, Sb = X[idx], S[idx]
        else:
            Xb, Sb = X, S
        values, gG, gR = sliced_value_and_grad(Xb, Sb, G, R, h, grad_slices=learn_r, **kw)
        if not learn_r:
            gR = None
        if Xv is not None:
            sel = sliced_stein_sums(Xv, Sv, G, R, hv, **kw).pair_statistics("u")
        else:
            sel = values
        if learn_r and cfg.orthogonal_slices:
            better = np.full(sel.shape, sel.sum() > best_val.sum())
        else:
            better = sel > best_val
        best_val = np.where(better, sel, best_val)
        bG[better], bR[better], bh[better] = G[better], R[better], hv[better]
        total = float(best_val.sum())
        history.append(float(sel.sum()))
        # progress relative to the best so far (no absolute floor: the objective of
        # data in units s scales as 1 / s^2)
        if total > best_total + cfg.tol * abs(best_total) or best_total == -np.inf:
            since_best = 0
        else:
            since_best += 1
        best_total = max(best_total, total)
        if it == cfg.max_iter or since_best >= cfg.patience:
            break
        lr = cfg.learning_rate
        rate = lr if cfg.schedule == "constant" else \
            0.5 * lr * (1 + np.cos(np.pi * it / cfg.max_iter))
        G, R = _ascent_step(G, R, gG, gR, opt_g, opt_r, rate, cfg.orthogonal_slices)
        n_iter += 1
    return (best_total, bG, bR, bh, best_val), n_iter, np.array(history)


def _from_whitened(G, R, h, A, B):
    r"""Pairs learned on the whitened points ``X @ A`` as the same statistic on ``X``.

    The projection :math:`g'^\top (A^\top x)` is :math:`\|A g'\|\, g^\top x` with
    the unit direction :math:`g = A g' / \|A g'\|`, so the 1-D kernel keeps its
    values with the bandwidth :math:`h' / \|A g'\|`; the slice :math:`r'` of the
    whitened score :math:`B^\top s` is :math:`r = B r'` on the score, and
    :math:`r^\top g\, \|A g'\| = r'^\top g'` because :math:`A B^\top = I`. Each
    pair's Stein kernel is thus unchanged; the slices are no longer unit vectors.
    """
    Gx = G @ A.T
    norms = np.linalg.norm(Gx, axis=1)
    return Gx / norms[:, None], R @ B.T, np.asarray(h, dtype=np.float64) / norms


def _to_whitened(G, R, h, A, B):
    """The inverse of :func:`_from_whitened` (``B^T A = I``)."""
    Gw = G @ B
    norms = np.linalg.norm(Gw, axis=1)
    hw = None if h is None else np.asarray(h, dtype=np.float64) / norms
    return Gw / norms[:, None], R @ A, hw


def search_directions(X, model, *, variant="g", n_slices=None, kernel="rbf", kernel_params=None,
                      bandwidth="median", init="auto", optimizer="adam", learning_rate=0.01,
                      schedule="cosine", max_iter=20, tol=1e-3, patience=10, n_restarts=1,
                      bandwidth_every=10, validation_fraction=0.25, batch_size=None,
                      orthogonal_slices=True, starts=None, ascent_size=None,
                      random_state=None, scores=None):
    """Learn maxSKSD directions (and slices) on the training sample ``X``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Training sample (keep it disjoint from the sample the test is run on).
    model : distribution or callable
        The model's score ``grad log p``.
    variant : {"g", "rg"}, default="g"
        ``"g"``: slices fixed to the coordinate axes, one learned direction each
        (``m = n_features``). ``"rg"``: ``n_slices`` learned slices, each with its
        learned direction.
    n_slices : int, default=None
        Number of slices for ``"rg"``; default ``min(n_features, 10)``.
    kernel : {"rbf", "imq"}, default="rbf"
    kernel_params : dict, default=None
    bandwidth : "median", float or array-like (m,), default="median"
        Fixed bandwidths, or the median heuristic on the current projections
        (re-estimated every ``bandwidth_every`` steps and at the end).
    init : {"auto", "identity", "random"} or array-like, default="auto"
        Where the ascent starts. ``"auto"``: the starts of the module docstring (the
        axes, ascended; the Stein moment matrix and the cubic Stein moment, as
        found), all kept in ``candidates`` but for a start along which the samples
        coincide when the bandwidth is the median heuristic (it has no median
        there: the start is dropped). ``"identity"``: the coordinate axes
        (``G = R = I[:m]``); ``"random"``: random unit directions (random orthonormal
        slices for ``"rg"``, with ``G = R``); an array ``G0`` of shape
        ``(m, n_features)``, or a tuple ``(G0, R0)`` for ``"rg"``. Restarts after the
        first start always start at random.
    optimizer : {"adam", "gd"}, default="adam"
        Adam on the projected gradient, or plain projected gradient ascent.
    learning_rate : float, default=0.01
        Step size (Adam: roughly the change of each coordinate per step).
    schedule : {"cosine", "constant"}, default="cosine"
        Step-size schedule over ``max_iter`` steps.
    max_iter : int, default=20
        Maximum ascent steps per start (0: evaluate the starts only).
    tol : float, default=1e-3
        Relative improvement of the best objective that counts as progress.
    patience : int, default=10
        Stop an ascent after this many steps without progress.
    n_restarts : int, default=1
        Number of starts besides those of ``init="auto"`` (restarts after the first
        are random); the one with the highest objective is kept.
    bandwidth_every : int, default=10
        Steps between re-estimates of the median-heuristic bandwidths.
    validation_fraction : float, default=0.25
        Fraction of ``X`` held out of the gradient and the Stein moments, used to
        choose among the starts and to select, for each pair ``k`` separately, the
        iterate with the highest held-out SKSD (early stopping). The sliced KSD of
        200 points can be driven far up along directions that fit the sample's
        noise; selecting on held-out points keeps what generalises. ``0``: ascend on
        all of ``X`` and keep the best training objective, as also happens when the
        fraction would hold out fewer than 2 samples or keep fewer than 2 (fewer than
        6 samples at the default).
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
    starts : sequence of str, default=None
        With ``init="auto"``: which data-driven starts, among ``ALL_STARTS[variant]``
        (``"identity"``, ``"spectral"``, ``"spectral-top"``, ``"spectral-bottom"``
        (maxSKSD-g only), ``"cubic"``, ``"ica"``); ``None``: ``AUTO_STARTS[variant]``.
    ascent_size : int, default=None
        Points of ``X`` that the ascent and the selection among starts use (a random
        subset; their cost grows as its square), while the data-driven starts, whose
        cost grows linearly, use all of ``X``. ``None``: all of ``X``.
    random_state : None, int or Generator
        Random initialisations, the split, and the median heuristic's subsample.
    scores : array-like of shape (n_samples, n_features), default=None
        The model's scores at the rows of ``X``, when already computed (a test that
        learns and tests on parts of one sample evaluates its score once); ``None``:
        ``model`` is evaluated at ``X``.

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
    ...                         random_state=0)
    >>> res.directions.shape, res.slices.shape
    ((2, 5), (2, 5))
    >>> bool(abs(res.slices[:, 0]).max() > 0.9)  # a slice finds the low-variance axis
    True
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
    auto = isinstance(init, str) and init == "auto"
    start_names = resolve_starts(starts, variant) if auto else None
    if ascent_size is not None:
        ascent_size = check_positive_int(ascent_size, "ascent_size", minimum=2)
    rng = as_generator(random_state)
    # given scores: checked for shape and finiteness (their tails by whoever computed them)
    S = evaluate_score(model, X, values=scores, check_tails=scores is None)
    X_all, S_all = X, S
    if ascent_size is not None and ascent_size < X.shape[0]:
        keep = np.sort(rng.permutation(X.shape[0])[:ascent_size])
        X, S = X[keep], S[keep]
    Xv = Sv = None
    n_val = int(round(validation_fraction * X.shape[0]))
    if n_val < 2 or X.shape[0] - n_val < 2:
        n_val = 0  # too few samples to hold any out: select on the training objective
    if n_val > 0:
        perm = rng.permutation(X.shape[0])
        Xv, Sv = X[perm[:n_val]], S[perm[:n_val]]
        X, S = X[perm[n_val:]], S[perm[n_val:]]
    if isinstance(bandwidth, str):
        if bandwidth != "median":
            raise ValueError(f"bandwidth must be 'median', a positive float or an array, got "
                             f"{bandwidth!r}.")
    else:
        bandwidth = resolve_sliced_bandwidth(np.empty((0, m)), bandwidth)
    cfg = AscentSettings(kernel=kernel, kernel_params=kernel_params, optimizer=optimizer,
                         learning_rate=lr, schedule=schedule, max_iter=max_iter, tol=tol,
                         patience=patience, bandwidth_every=bandwidth_every,
                         batch_size=batch_size, orthogonal_slices=orthogonal_slices)

    # the matrix products of a step are small (m x n x d); one BLAS thread avoids the
    # thread pools of BLAS and numba competing for the same cores (skstein._threads)
    with single_blas():
        if auto:
            # the Stein moments are estimates that improve with every point (a spike in
            # 50 dimensions stands out of 200 points, not of 150), so they use the whole
            # training sample; the ascent then refines on the fit part
            starts = list(stein_starts(X_all, S_all, variant, m, rng, orthogonal_slices,
                                       start_names).items())
        else:
            given = "given" if not isinstance(init, str) else init
            starts = [(given, _first_start(init, variant, m, d, rng, orthogonal_slices))]
        for _ in range(n_restarts - 1):
            starts.append(("random", _initial("random", variant, m, d, rng)))
        results, total_iter = [], 0
        for name, (G0, R0) in starts:
            if auto and name != "identity" and isinstance(bandwidth, str) and \
                    _coincide_along(G0, X, Xv):
                continue  # no median bandwidth along it: a data-driven start is dropped
            # the data-driven starts are used as found: they already come from the whole
            # training sample, and an ascent from them gained no power in the rotated
            # benchmarks while tripling the cost of a search
            run_cfg = cfg if name in ("identity", "given", "random") else replace(cfg, max_iter=0)
            (obj, G, R, h, pairs), n_iter, history = _ascend(X, S, G0, R0, variant, bandwidth,
                                                             run_cfg, rng, Xv, Sv)
            total_iter += n_iter
            if isinstance(bandwidth, str):
                # held-out projections: along learned directions the training spread is
                # biased low (the directions fit it)
                h = _median(X, G, rng) if Xv is None else _heldout_bandwidth(X, Xv, G, rng)
            # between starts: the held-out power criterion (statistic over its standard
            # deviation), which the test's power follows, rather than the raw value, which
            # a start with heavy-tailed projections can inflate by noise
            key = obj if Xv is None or len(starts) == 1 else \
                sliced_stein_sums(Xv, Sv, G, R, h, **cfg.kernel_kwargs()).power_criterion()
            results.append((key, G, R, h, history, pairs, name, obj))
    best = max(range(len(results)), key=lambda k: results[k][0])
    _, G, R, h, history, pairs, name, obj = results[best]
    candidates = tuple((r[6], r[1], r[2], r[3]) for r in results)
    return DirectionSearchResult(G, R, h, obj, total_iter, history, pairs, name, candidates)
