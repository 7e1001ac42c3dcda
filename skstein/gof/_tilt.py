r"""Tilted Stein kernels: the KSD of a model whose score does not grow with :math:`\|x\|`.

The Langevin Stein kernel of a base kernel :math:`k` sees a point :math:`x` through
the score :math:`s_p(x)`. For a model whose score fades in the tails (Student-t:
:math:`\|s_p(x)\| \sim 1/\|x\|`) or stays bounded (Laplace, logistic), the test
functions vanish where the tails are, and the KSD test misses a sample whose tails
differ from the model's: a Student-t(3) model against t(6) or Gaussian data. The
theory says why: the KSD controls convergence for targets whose score grows like
:math:`\|x\|` (Gorham & Mackey 2017), and a diffusion Stein operator with a matrix
:math:`m(x)` that grows in the tails restores that growth (Gorham, Duncan, Vollmer &
Mackey 2019; Kanagawa, Barp, Gretton & Mackey 2022 control moments this way).

With a scalar weight :math:`w`, the Stein kernel of the tilted base kernel
:math:`w(x) k(x, y) w(y)` is

.. math::

    h_w(x, y) = w(x) w(y)\, h_k^{\tilde s}(x, y), \qquad
    \tilde s = s_p + \nabla \log w,

the untilted Stein kernel on the shifted scores, times the weights: the compiled passes
take the weights as one factor per pair (:func:`skstein.discrepancy.stein_sums_and_forms`).
It is the diffusion Stein operator with :math:`m = w` on the RKHS of :math:`k`, so it
has mean zero under the model wherever :math:`\mathbb E_p[w \|s_p\|]` and
:math:`\mathbb E_p[\|\nabla w\|]` are finite. Here

.. math::

    w(x) = \left(1 + \|x - c\|^2 / \sigma^2\right)^{q / 2},

centred on the sample's spatial median :math:`c` (:func:`spatial_median`: a Cauchy
sample's mean is as spread as one draw), on the scale :math:`\sigma` of the median
distance to it, with the exponent :math:`q = 1 - a` for a score that grows like
:math:`\|x\|^a` (:func:`tail_probe`), rounded to the nearest half and kept in
:math:`[0, 2]`: the drift :math:`w s_p + \nabla w` then grows about linearly, as a
Gaussian's score does. The tilted kernel's diagonal grows like :math:`w^2`, and its
mean under the model must stay finite (the plain KSD's condition
:math:`\mathbb E_p \|s_p\|^2 < \infty`), so :math:`q` is at most half the order of
the model's moments, which the same probe measures: 1.5 for a Student-t(3), 0.5 for a
Cauchy, 2 for a Student-t(6) (at exactly half, the mean diverges only
logarithmically; the measured levels held there, ``benchmarks/bench_tilt.py``). A
model whose score grows linearly or faster (Gaussians, mixtures, RBMs) has
:math:`q = 0`: no tilt, the kernel of the plain KSD.
"""

import warnings
from dataclasses import dataclass

import numpy as np

from .._bootstrap import SMALL_SAMPLE
from .._validation import resolve_score
from .._validation import tail_index as hill_index

__all__ = ["Tilt", "tail_probe", "score_growth", "resolve_tilt", "resolve_shared_tilt",
           "tail_index", "spatial_median", "TILT_RADII", "MAX_TILT", "MIN_TILT_SAMPLES"]

#: The radii, in units of the sample's median distance to its mean, at which
#: :func:`tail_probe` compares the model's scores: far beyond the sample, where
#: the score's tail behaviour shows, and a decade apart.
TILT_RADII = (10.0, 100.0)

#: The largest tilt exponent: :math:`q = 2` turns the score of a polynomial tail
#: (:math:`\|s\| \sim 1/\|x\|`) into a linear drift; a larger one would only weight the
#: sample's few outermost points further.
MAX_TILT = 2.0

#: ``tilt="auto"`` tilts samples of at least this many points (the size below which
#: the multinomial bootstrap's asymptotics are not trusted either): below it the
#: weights rest on a handful of outer points, and true Student-t(3) samples of 10
#: points in one dimension were rejected in 0.115 of 400 trials with the plain and
#: tilted kernels, 0.01 with the plain ones alone.
MIN_TILT_SAMPLES = SMALL_SAMPLE

#: Rows of the sample whose directions :func:`tail_probe` probes (evenly spaced).
GROWTH_POINTS = 200


@dataclass(frozen=True)
class Tilt:
    r"""The weight :math:`w(x) = (1 + \|x - c\|^2 / \sigma^2)^{q/2}` of a tilted kernel.

    Attributes
    ----------
    exponent : float
        :math:`q > 0`.
    center : ndarray of shape (n_features,)
        :math:`c`.
    scale : float
        :math:`\sigma > 0`.
    """

    exponent: float
    center: np.ndarray
    scale: float

    def apply(self, X, S):
        r"""``(S + grad log w, w)`` at the rows of ``X``: the tilted scores and weights."""
        Z = (X - self.center) / self.scale  # in units of the scale: no overflow of |x|^2
        b = 1.0 + np.einsum("ij,ij->i", Z, Z)
        w = b ** (0.5 * self.exponent)
        return S + (self.exponent / (self.scale * b))[:, None] * Z, w

    def __repr__(self):
        return f"Tilt(exponent={self.exponent:g}, scale={self.scale:.4g})"


def spatial_median(X, max_iter=100):
    r"""The spatial (geometric) median of the rows of ``X``: the point :math:`c` that
    minimises :math:`\sum_i \|x_i - c\|`, by Weiszfeld's iterations from the
    coordinate-wise median (at most ``max_iter``, until a step below
    :math:`10^{-10}` of the median distance to that start). Unlike the mean it stays among the
    sample's bulk when the tails are heavy (a Cauchy sample's mean is as spread as one
    draw), and unlike the coordinate-wise median it moves with the sample under a
    rotation."""
    c = np.median(X, axis=0)
    scale = None
    for _ in range(max_iter):
        d = np.sqrt(np.einsum("ij,ij->i", X - c, X - c))
        if scale is None:  # the tolerance's unit, from the start
            scale = float(np.median(d))
        if not scale > 0:  # more than half the rows at c
            break
        inv = 1.0 / np.maximum(d, 1e-12 * scale)
        step = inv @ X / inv.sum() - c
        c = c + step
        if np.sqrt(step @ step) <= 1e-10 * scale:
            break
    return c


def _centre_and_scale(X, c=None):
    """``(c, r, scale)``: the centre (the spatial median unless given), the rows'
    distances to it and their median (the largest where that is 0)."""
    c = spatial_median(X) if c is None else c
    r = np.sqrt(np.einsum("ij,ij->i", X - c, X - c))
    scale = float(np.median(r))
    if not scale > 0:  # more than half the rows at the centre: the spread of the others
        scale = float(r.max())
    return c, r, scale


def _median_of_most(values, n):
    """The median of the finite ``values``, NaN unless more than half of ``n`` are."""
    values = values[np.isfinite(values)]
    return float(np.median(values)) if 2 * values.size > n else np.nan


def tail_probe(model, X, score=None):
    r"""``(a, alpha)``: the growth :math:`\|s_p(x)\| \sim \|x\|^a` of the model's score
    and the order :math:`\alpha` of the moments its density has, probed far out along
    the sample's directions.

    From the sample's mean :math:`c`, along the direction :math:`u_i` of each of (up to
    200, evenly spaced) rows, the model's scores at :math:`c + \rho u_i \sigma` for the
    two radii :data:`TILT_RADII` (in units of the median distance :math:`\sigma` to
    :math:`c`): :math:`a` is the median over the directions of :math:`\log_{10}` of
    the ratio of their norms (a Gaussian gives 1, a Laplace 0, a Student-t -1). A
    density that falls like :math:`\|x\|^{-m}` along a ray has :math:`\rho \sigma\,
    s_p \cdot u \to -m` and moments of the orders below :math:`\alpha = m - D`:
    :math:`\alpha` is the median of :math:`-\rho \sigma\, s_p \cdot u_i - D` at the
    outer radius (a Student-t(:math:`\nu`) gives :math:`\nu`; a Gaussian or a Laplace,
    whose every moment is finite, a number that grows with the radius).

    The radii are measured from the sample, not from the model's own centre: a sample
    far from the model (beyond ten times its own spread, which the plain kernels
    reject anyway) can make a Gaussian's score look bounded there, and the test then
    adds tilted kernels it does not need (a cost, not a wrong level).

    Each is NaN when it cannot be measured: no row away from the centre, or a score that
    fails, vanishes or is not finite at the probed points in most directions. The
    score's warnings at such far points are silenced (the probe is advisory).
    ``score``: a callable that evaluates the model's score at NumPy points and returns
    NumPy (the default calls the model on them; a model of another array library is
    called on its own arrays by the caller's ``score``).
    """
    X = np.asarray(X, dtype=np.float64)
    return _probe(model, X, _centre_and_scale(X, X.mean(axis=0)), score)


def _probe(model, X, frame, score):
    """:func:`tail_probe` of float64 ``X`` whose ``_centre_and_scale`` is ``frame``."""
    c, r, sigma = frame
    if not (np.isfinite(sigma) and sigma > 0):
        return np.nan, np.nan
    rows = np.unique(np.linspace(0, X.shape[0] - 1, GROWTH_POINTS).astype(int))
    rows = rows[r[rows] > 0]
    if rows.size == 0:
        return np.nan, np.nan
    U = (X[rows] - c) / r[rows, None]
    score = resolve_score(model, "model") if score is None else score
    scores = []
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            for rho in TILT_RADII:
                S = np.asarray(score(c + (rho * sigma) * U), dtype=np.float64)
                if S.shape != U.shape:
                    return np.nan, np.nan
                scores.append(S)
    except (ArithmeticError, ValueError, TypeError):  # undefined that far out: no tilt
        return np.nan, np.nan
    with np.errstate(all="ignore"):
        norms = [np.sqrt(np.einsum("ij,ij->i", S, S)) for S in scores]
        ratio = np.log10(norms[1] / norms[0]) / np.log10(TILT_RADII[1] / TILT_RADII[0])
        radial = -(TILT_RADII[1] * sigma) * np.einsum("ij,ij->i", scores[1], U) - X.shape[1]
    return _median_of_most(ratio, rows.size), _median_of_most(radial, rows.size)


def score_growth(model, X, score=None):
    """The exponent ``a`` of :func:`tail_probe`."""
    return tail_probe(model, X, score)[0]


def check_tilt(tilt):
    """``tilt`` validated: ``"auto"`` or a float in ``[0, MAX_TILT]``."""
    if isinstance(tilt, str):
        if tilt != "auto":
            raise ValueError(f"tilt must be 'auto' or a number in [0, {MAX_TILT:g}], "
                             f"got {tilt!r}.")
        return tilt
    if isinstance(tilt, bool) or not isinstance(tilt, (int, float, np.integer, np.floating)):
        raise ValueError(f"tilt must be 'auto' or a number in [0, {MAX_TILT:g}], got "
                         f"{tilt!r}.")
    if not (0.0 <= float(tilt) <= MAX_TILT):
        raise ValueError(f"tilt must be 'auto' or a number in [0, {MAX_TILT:g}], got "
                         f"{tilt!r}.")
    return float(tilt)


def tail_index(X):
    r"""The Hill estimate of the order of the moments of the sample's radial tail.

    From the distances :math:`r_{(1)} \ge r_{(2)} \ge \dots` of the rows to their
    spatial median, with :math:`k = \max(10, \lfloor \sqrt n \rfloor)`,

    .. math::

        \hat\alpha = k \Big/ \sum_{i=1}^{k} \log \frac{r_{(i)}}{r_{(k+1)}}:

    a distribution whose radius has a tail :math:`P(R > r) \sim r^{-\alpha}` has
    moments of the orders below :math:`\alpha` (the estimator of
    :func:`skstein._validation.tail_index`, here of the radii). Its standard error is
    about :math:`\hat\alpha / \sqrt k`, and at a few hundred points it reads a
    Student-t(:math:`\nu`)'s tail below :math:`\nu` (the middle 90% of 50 samples of
    300 points: 2.1-4.0 for a one-dimensional t(4), 0.65-1.55 for a Cauchy); a
    Gaussian sample gives a number that grows with ``n`` (4-10 in one dimension, 8-15
    in five, at 300 points). Infinite where the outermost radii are equal, and for fewer than
    :data:`MIN_TILT_SAMPLES` rows.
    """
    X = np.asarray(X, dtype=np.float64)
    return _radial_index(_centre_and_scale(X)[1])


def _radial_index(r):
    return hill_index(r, min_values=MIN_TILT_SAMPLES)


def _half(value):
    """``value`` rounded to the nearest half."""
    return np.round(2.0 * value) / 2.0


def _auto_exponent(model, X, frame, score):
    """The exponent of ``tilt="auto"`` for ``model`` (see :func:`resolve_tilt`)."""
    a, alpha = _probe(model, X, frame, score)
    # no moment of positive order (a score that pushes outwards): no tilt
    cap = MAX_TILT if np.isnan(alpha) else max(0.0, np.round(alpha) / 2.0)
    return 0.0 if not np.isfinite(a) else float(np.clip(_half(1.0 - a), 0.0,
                                                        min(MAX_TILT, cap)))


def resolve_tilt(model, X, tilt, score=None):
    r"""The :class:`Tilt` of a test on ``X`` (NumPy), or None for the untilted kernel.

    ``tilt``: ``"auto"`` takes :math:`q = 1 - a`, at most :math:`\alpha / 2`, of
    :func:`tail_probe`, each rounded to the nearest half, in ``[0, MAX_TILT]`` (none
    where the growth cannot be measured, nor for fewer than :data:`MIN_TILT_SAMPLES`
    rows); a number is :math:`q` itself. The bound
    keeps the tilted kernel's diagonal, which grows like :math:`w(x)^2 \sim
    \|x\|^{2q}`, of finite mean under the model, as the plain KSD needs
    :math:`\mathbb E_p \|s_p\|^2 < \infty`: 1.5 for a Student-t(3), 0.5 for a
    Cauchy. The centre and scale are the sample's spatial median and the median
    distance to it. ``score``: as for :func:`tail_probe`.
    """
    return resolve_shared_tilt((model,), X, tilt, None if score is None else (score,),
                               data_bound=False)


def resolve_shared_tilt(models, X, tilt, scores=None, data_bound=True):
    r"""The :class:`Tilt` shared by the Stein kernels of several ``models`` on ``X``
    (NumPy), or None: the kernel of a comparison, which must be the same for all.

    ``"auto"`` takes the smallest of the models' exponents of :func:`resolve_tilt`, so
    that no model's drift grows faster than linearly and the moment bound holds for
    each; with ``data_bound``, at most half the sample's own order of moments,
    :func:`tail_index` rounded to an integer (the statistics average over the data's
    distribution, whose tails may be heavier than every model's). A number is
    :math:`q` itself. ``scores``: one callable per model, as ``score`` of
    :func:`tail_probe`.
    """
    tilt = check_tilt(tilt)
    if not isinstance(tilt, str) and tilt == 0.0:
        return None
    X = np.asarray(X, dtype=np.float64)
    if isinstance(tilt, str):
        if X.shape[0] < MIN_TILT_SAMPLES:
            return None
        # the probe looks far out from the mean (cheap; the weight's centre comes next)
        frame = _centre_and_scale(X, X.mean(axis=0))
        if not (np.isfinite(frame[2]) and frame[2] > 0):  # every row at one point
            return None
        scores = (None,) * len(models) if scores is None else scores
        q = min(_auto_exponent(m, X, frame, s) for m, s in zip(models, scores))
        if q == 0.0:
            return None
    else:
        q = tilt
    c, r, sigma = _centre_and_scale(X)
    if not (np.isfinite(sigma) and sigma > 0):  # every row at one point: nothing to weight
        return None
    if isinstance(tilt, str) and data_bound:
        q = min(q, max(0.0, np.round(min(_radial_index(r), 1e6)) / 2.0))
    return None if q == 0.0 else Tilt(q, c, sigma)
