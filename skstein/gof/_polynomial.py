r"""The KSD test with a saturated polynomial kernel: every moment of one order at once.

The radial kernels of :class:`~skstein.KSDTest` compare sample and model at the scale
of their bandwidths; heavier or lighter tails along a direction that nobody names
barely move them in a few dozen dimensions, and a direction search from a few
hundred points does not find such a direction (user guide, "Tails along an unknown
direction"). The Stein discrepancy with the homogeneous polynomial kernel

.. math::

    k(x, y) = w(x)\, w(y)\, (y_x^\top y_y)^p, \qquad
    y_x = A^\top (x - c), \qquad w(x) = (1 + \|y_x\|^2 / c^2)^{-p/2},

is the norm of the Stein moments of every monomial of degree ``p`` of the
coordinates ``y`` (its features are the entries of :math:`w(x)\, y_x^{\otimes p}`):
with ``p = 3`` it compares the fourth moments of sample and model along every
direction at once, and a departure along one direction counts in full, where the
radial fourth moment of :class:`~skstein.MaxSKSDTest` averages it over ``D``
directions. The weight :math:`w` bounds the features: they follow the monomials
well inside the radius ``c`` and level off at :math:`c^p` beyond it, so the test
needs only a finite second moment of the model's score under the data (for a
Gaussian model, the plain cubic's terms would need the data's eighth moment);
``c^2`` is the squared radius where the reference sample's squared radii end (their
mean plus :math:`\sqrt{2 \ln n}` standard deviations,
:func:`~skstein.discrepancy.radial_scale`, the rule of the maxSKSD fourth moment).

The Stein kernel of ``k`` (:func:`skstein.discrepancy.polynomial_stein_rows`) needs
the same Gram products as the radial ones: :math:`y_i^\top y_j`, :math:`s_i^\top
s_j` and :math:`s_i^\top y_j`, with ``s`` the model's score in the coordinates
``y``; the test forms them by blocks of rows of the upper triangle on numba's
threads (:func:`skstein.discrepancy.polynomial_stein_pass`). The statistic is its
U-statistic, calibrated by the bootstrap of the KSD test.
"""

import math
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator

from .._bootstrap import BOOTSTRAPS, auto_bootstrap, bootstrap_forms, bootstrap_weights
from .._estimator import is_fitted
from .._random import as_generator
from .._validation import (
    caller_stacklevel,
    check_choice,
    check_positive_int,
    check_samples,
    evaluate_score,
)
from ..discrepancy import (
    DEFAULT_MAX_MEMORY,
    check_stein_finite,
    polynomial_frame,
    polynomial_stein_pass,
    polynomial_stein_sums,
)
from ..distributions import rvs_kind
from ._base import BaselineTestMixin, aggregated_result
from ._common import WHITEN_COVARIANCE, SampleTestMethods, model_sample, simulated_null_result

__all__ = ["PolynomialKSDTest", "MAX_DEGREE", "LOW_DIMENSION_MIN_SAMPLES", "REFERENCE_DRAWS",
           "REFERENCES"]

#: The least number of model draws on which ``reference="model"`` learns the kernel's
#: coordinates (the tested sample's size when that is larger).
REFERENCE_DRAWS = 1000

#: Powers of ten beyond which the kernel's products, raised to the degree, are taken
#: to overflow float64 (whose largest value is about 1.8e308), with room for the
#: scores and weights they are multiplied by.
OVERFLOW_EXPONENT = 300

#: The values of :class:`PolynomialKSDTest`'s ``reference``.
REFERENCES = ("auto", "sample", "model", "aggregate")

#: Below this many tested points in one or two dimensions the wild bootstrap of
#: :class:`PolynomialKSDTest` runs above its level: ``bootstrap="auto"`` takes the Monte
#: Carlo null there when the model samples exactly, and the test warns otherwise.
#: Measured with the wild bootstrap at alpha = 0.05 (400-600 trials a cell): 0.09-0.11
#: of true 1-D samples of 50-250 points at degree 3; in 2-D 0.11 at
#: 30 points and up to 0.09 at 50-250; within three binomial standard deviations from
#: 500 points on.
LOW_DIMENSION_MIN_SAMPLES = 500


#: The largest degree that :class:`PolynomialKSDTest` accepts: its features are the
#: ``D^p`` monomials of degree ``p``, among which a departure is ever more diluted;
#: higher degrees were not studied.
MAX_DEGREE = 8


class PolynomialKSDTest(SampleTestMethods, BaselineTestMixin, BaseEstimator):
    r"""KSD test with a saturated polynomial kernel: departures in the moments of order
    ``degree + 1`` along any direction (default: the fourth moments, heavier or
    lighter tails).

    The kernel is :math:`k(x, y) = w(x) w(y) (y_x^\top y_y)^p` in centred coordinates
    :math:`y_x = A^\top (x - c)` (see :mod:`skstein.gof._polynomial`): its Stein
    discrepancy is the norm of the Stein moments of all monomials of degree :math:`p`
    (``degree``), each weighted down beyond the radius where the reference sample
    ends. Heavier tails along one unknown direction, which neither the radial kernels
    of :class:`KSDTest` nor a direction search from a few hundred points find, count
    in full. The kernel is not characteristic: it sees moments, so it complements the
    radial tests rather than replacing them (a shift of the mean shows in it only
    through the fourth moments).

    Parameters
    ----------
    model : distribution or callable
        The model p: an object with ``grad_logpdf(X)`` or a callable ``X -> grad log p(X)``.
    degree : int or sequence of int, default=3
        Degree :math:`p` of the monomials (1 to ``MAX_DEGREE``, 8): the test compares
        the moments of order :math:`p + 1` in every direction: 3 the fourth moments
        (tails), 2 the third (skewness), 1 the second (variances and correlations).
        The user's choice of the order of the moments to compare. Several distinct
        degrees, e.g. ``(1, 3)``, aggregate their tests: one statistic per degree, in
        the order given, calibrated on the same bootstrap draws and combined by the
        min-p rule of the aggregated :class:`KSDTest`
        (:func:`~skstein._bootstrap.aggregate_minp`), so the level is that of one test;
        each degree costs one more pass over the Stein matrix.
    whiten : bool or "auto", default="auto"
        ``False``: the data's coordinates, centred at the reference sample's mean and
        scaled to a unit mean squared radius. ``True``: whitened too, by the reference
        sample's own covariance or its Ledoit-Wolf estimate, whichever gives held-out
        rows the larger Gaussian likelihood (:func:`~skstein.kernels.whitening`'s
        ``"held-out"``, as in :class:`KSDTest`), for features in different units or a
        model with correlated, unequal scales.
        ``"auto"``: whitened where the reference sample is anisotropic (the rule of
        :class:`KSDTest`'s ``"auto"``, :func:`~skstein.kernels.auto_whitening`: a
        Ledoit-Wolf condition number of at least 4), the data's coordinates
        otherwise; ``geometry_`` (or the result's ``method``) says which. The
        monomials span the same moments in either coordinates, but in the data's
        coordinates of an anisotropic sample the wide axes' monomials outweigh the
        rest, and departures elsewhere barely count (Notes).
    reference : {"auto", "sample", "model", "aggregate"}, default="auto"
        The reference sample on which an unfitted test learns the kernel's
        coordinates (centre, scale, whitening and saturation radius). ``"sample"``:
        the sample it tests. ``"model"``: ``max(REFERENCE_DRAWS, n)`` draws of
        ``model.rvs`` (``REFERENCE_DRAWS`` is 1000), seeded by ``random_state``, so
        that the coordinates do not depend on the tested data. ``"aggregate"``: both,
        one statistic in each set of coordinates, calibrated on the same bootstrap draws and
        combined by the min-p rule (as several degrees are; ``labels`` name them, and
        a sample that one of the two cannot take, with coinciding rows or far beyond
        the model's scale, is tested in the other's alone). Neither reference wins
        everywhere: whitened by its own covariance, a sample in many dimensions looks
        more like the model than the bootstrap allows, and the test turns
        conservative and loses power, while the model's coordinates lost a mixture
        whose clusters were too wide (Notes). ``"auto"``: ``"aggregate"`` when the
        model samples exactly (:func:`~skstein.distributions.rvs_kind` ``"exact"``),
        ``"sample"`` otherwise. A fitted test keeps the coordinates :meth:`fit`
        learned.
    bootstrap : {"auto", "multinomial", "rademacher", "monte-carlo"}, default="auto"
        ``"multinomial"`` and ``"rademacher"``: the wild bootstrap of :class:`KSDTest`.
        ``"monte-carlo"``: the statistic computed in the same way (unfitted, with the
        coordinates learned on each sample) on ``n_bootstrap`` samples of size ``n``
        drawn from ``model.rvs``, an exact level at every ``n`` for a model that
        samples exactly. ``"auto"``: the Monte Carlo null in one or two dimensions
        below ``LOW_DIMENSION_MIN_SAMPLES`` (500) tested points when the model samples
        exactly (:func:`~skstein.distributions.rvs_kind` ``"exact"``), where the wild
        bootstrap runs above its level (Notes); otherwise Rademacher weights below
        :data:`~skstein._bootstrap.AUTO_RADEMACHER_BELOW` (120) tested points and
        multinomial ones above, as in :class:`KSDTest`.
    n_bootstrap : int, default=1000
        Bootstrap draws, or model samples for the Monte Carlo null.
    alpha : float, default=0.05
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the bootstrap (or the model samples of the Monte Carlo null) and the
        model's reference draws.
    max_memory : int, default=64 MiB
        Memory for the ``N x N`` Stein matrix; beyond it its rows are computed twice,
        by blocks (same results).

    Attributes
    ----------
    center_ : ndarray of shape (n_features,)
        The centre ``c`` (the mean of the sample given to :meth:`fit`).
    transform_ : ndarray of shape (n_features, n_features)
        ``A``: the kernel's coordinates are ``(X - center_) @ transform_``.
    score_transform_ : ndarray of shape (n_features, n_features)
        ``B``: the model's score in those coordinates is ``S @ score_transform_``.
    saturation_ : float
        :math:`c^2`, in those coordinates.
    geometry_ : str
        ``"whitened"`` or ``"euclidean"``: whether ``transform_`` whitens.
    n_features_in_ : int

    Notes
    -----
    :meth:`fit` learns the coordinates on its sample
    (:func:`skstein.discrepancy.polynomial_coordinates`); unfitted, :meth:`test`,
    :meth:`discrepancy` and :meth:`score` learn them on the references that
    ``reference`` names: by default, for a model that samples exactly, the tested
    sample and the model's draws, aggregated; otherwise the tested sample. The rates
    from here to the next table were measured with ``reference="sample"``. On true
    models the test holds its
    level within three binomial standard deviations from about 100 points on
    (0.031-0.080 in 200-1500 trials, D = 2 to 100), somewhat above it in two
    dimensions, and beyond it at 50 points in two dimensions (0.076-0.080). In one
    dimension, at the default degree, it rejected 0.09-0.11 of true samples of 50 to
    250 points. There, below ``LOW_DIMENSION_MIN_SAMPLES`` (500) points in one or two
    dimensions, ``bootstrap="auto"`` takes the Monte Carlo null when the model samples
    exactly. Its level is exact: it rejected 0.037-0.072 of true samples (n = 30 to
    300, D = 1 and 2, 400 trials each; the wild bootstrap 0.065-0.155 of the same),
    and it was the more powerful against Student-t(5) data (D = 1, n = 300: 0.50
    against 0.235; D = 2: 0.775 against 0.46, and 0.51 against 0.25 with the t5 along
    one direction; ``benchmarks/bench_polynomial_null.py``). It costs ``n_bootstrap``
    passes: 0.4 s at D = 2, n = 300 (two cores). Where the model cannot sample
    exactly, :meth:`test` warns there; use :class:`KSDTest` (user guide, "Tails
    along an unknown direction").

    In the data's coordinates of an anisotropic sample the monomials of the wide axes
    outweigh the rest, and most departures barely count; ``whiten="auto"`` (the
    default) whitens such a sample and leaves a nearly isotropic one as it is.
    Measured (``benchmarks/bench_whiten_auto.py --test polynomial``: a rotated
    Gaussian model with condition number 16 or 100, n = 300, 200 trials, seed 808;
    ``whiten=False`` / the default): 1.5 times the variance along the widest axis was
    rejected at 0.325 / 0.835 and 0.10 / 0.83 in D = 5, and at 0.20 / 0.235 and 0.095 /
    0.19 in D = 20; true samples at 0.07-0.09 / 0.03-0.04; a mixture's wider
    clusters at 0.92 / 0.92 (D = 5) and 1.00 / 1.00 (D = 20); isotropic
    Student-t(5) data were never whitened (the same numbers). Unit-variance Laplace
    along a random direction of the model's standardised coordinates (D = 10,
    condition number 100, n = 500, 100 trials) was rejected at 0.07 / 0.42
    (``bench_polynomial_reference.py --d 10 --n 500 --trials 100``, ``"sample"``), as
    often as with an isotropic model (0.37 / 0.38). Coordinates whitened by the
    tested sample's own covariance make the test conservative where that covariance
    is poorly estimated: with condition number 100, true samples were rejected at
    0.0-0.005 in D = 50, n = 200 and D = 100, n = 300 (200 trials; 0.09 and 0.04 in
    the data's coordinates), where neither found the departures above (rates at the
    level). Fitted on 1000 draws of the model with ``whiten=True`` (coordinates
    independent of the tested data), it rejected true samples at 0.02-0.07 and found
    more in D = 20, n = 500 (the widest axis's variance 0.58 against 0.46 for the
    default, the Laplace direction 0.16 against 0.13; 100 trials each; these with the
    Ledoit-Wolf whitening).

    The whitening takes the held-out choice of covariance: Ledoit-Wolf's alone adds a
    share of the mean eigenvalue to every eigenvalue and leaves the narrow axes of
    data whose scales differ by orders of magnitude far from white. On Gaussian
    models with variances from e^-3.5 to e^3.5 along random axes
    (``benchmarks/bench_unseen.py --part scales --tests Poly``, seed 2027, n = 300,
    100 trials, the default reference) a variance 1.8 times the model's along the
    narrowest axis was found in 0.61 / 0.14 of the trials (D = 10 / 50) with
    Ledoit-Wolf's covariance and 0.96 / 0.29 with the held-out choice; true samples
    0.03 / 0.04 and 0.03 / 0.01.

    Coordinates learned on the model's draws (``reference="model"``) do not depend on
    the tested data, and keep the level and the power there; on a mixture whose
    clusters are too wide the sample's own whitening saw more. Aggregating both
    (``"aggregate"``, the default for a model that samples exactly) came within
    noise of the better of the two in every case. Measured with
    ``benchmarks/bench_polynomial_reference.py`` (the models above, n = 300, 200
    trials, seed 808; ``"sample"`` / ``"model"`` / ``"aggregate"``):

    ======================================  ===================  ===================
    case                                    D = 5                D = 20
    ======================================  ===================  ===================
    condition 100, variance 1.5, widest     0.83 / 0.86 / 0.855  0.19 / 0.345 / 0.325
    condition 100, Laplace direction        0.40 / 0.40 / 0.41   0.045 / 0.10 / 0.09
    mixture, wider clusters                 0.92 / 0.82 / 0.885  1.00 / 1.00 / 1.00
    isotropic, Student-t(5)                 0.815 / 0.83 / 0.83  0.965 / 0.97 / 0.97
    true samples (condition 100, mixture)   0.03-0.04            0.01-0.05
    ======================================  ===================  ===================

    In D = 50 (n = 200) the sample's coordinates rejected true samples at 0.0-0.005
    and found nothing (the variance 0.005, the Laplace direction 0.0), where the
    model's gave 0.05-0.06, 0.105 and 0.065, and the aggregate 0.025-0.045, 0.08
    and 0.055; the wider clusters 0.905 / 0.995 / 0.99. The aggregate costs two passes
    (0.004 s / 0.008 s a test at n = 300, D = 5).

    In a result ``statistic`` is the U-statistic (:meth:`discrepancy`), ``bandwidth``
    is the saturation radius :math:`c` (in the kernel's coordinates) and ``method``
    names the degree (and ``whitened`` coordinates). :meth:`score` is the power
    criterion of the U-statistic
    (:meth:`~skstein.discrepancy.SteinSums.power_criterion`). With several degrees, or
    both references, a result holds each statistic and p-value (``statistics``,
    ``pvalues``, ``labels`` such as ``"degree 3"`` or ``"degree 3, model,
    whitened"``; its ``statistic`` is the most significant one's), :meth:`discrepancy`
    returns the array of the statistics and :meth:`score` the largest criterion. With
    one reference and one degree it costs about as much as a :class:`KSDTest` with one
    bandwidth:
    four ``N x N`` Gram products turned into the kernel by blocks of rows on numba's
    threads (``benchmarks/bench_polynomial.py``); CPU only.

    See Also
    --------
    KSDTest : radial kernels, characteristic.
    MaxSKSDTest : learned directions; its ``moment="pooled"`` default tests the
        radial fourth moment, the trace of what this test compares.

    Examples
    --------
    >>> import numpy as np
    >>> from skstein import PolynomialKSDTest
    >>> from skstein.distributions import Gaussian
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((1000, 10))
    >>> X[:, 0] = rng.laplace(scale=np.sqrt(0.5), size=1000)   # heavy tails on one axis
    >>> Q = np.linalg.qr(rng.standard_normal((10, 10)))[0]     # ... along a random direction
    >>> bool(PolynomialKSDTest(Gaussian(np.zeros(10)), random_state=0).test(X @ Q).reject)
    True
    """

    def __init__(self, model, *, degree=3, whiten="auto", reference="auto", bootstrap="auto",
                 n_bootstrap=1000, alpha=0.05, random_state=None,
                 max_memory=DEFAULT_MAX_MEMORY):
        self.model = model
        self.degree = degree
        self.whiten = whiten
        self.reference = reference
        self.bootstrap = bootstrap
        self.n_bootstrap = n_bootstrap
        self.alpha = alpha
        self.random_state = random_state
        self.max_memory = max_memory

    def _check_params(self):
        self._check_baseline_params(self.n_bootstrap, "n_bootstrap")
        self._degrees()
        if not (isinstance(self.whiten, (bool, np.bool_))
                or isinstance(self.whiten, str) and self.whiten == "auto"):
            raise ValueError(f"whiten must be True, False or 'auto', got {self.whiten!r}.")
        check_choice(self.bootstrap, "bootstrap", BOOTSTRAPS + ("auto", "monte-carlo"))
        check_choice(self.reference, "reference", REFERENCES)
        check_positive_int(self.max_memory, "max_memory")
        for name, values in (("bootstrap", ("monte-carlo",)),
                             ("reference", ("model", "aggregate"))):
            value = getattr(self, name)
            if value in values and rvs_kind(self.model) is None:
                raise TypeError(f"{name}={value!r} draws samples from the model, which "
                                "needs an rvs(n, random_state) method; "
                                f"{type(self.model).__name__} has none.")

    def _references(self):
        """The reference samples of an unfitted test's coordinates: ``("sample",)``,
        ``("model",)`` or both, aggregated."""
        reference = self.reference
        if reference == "auto":
            reference = "aggregate" if rvs_kind(self.model) == "exact" else "sample"
        return ("sample", "model") if reference == "aggregate" else (reference,)

    def _null_kind(self, n, d):
        """The null of a test of ``n`` points in ``d`` dimensions."""
        if self.bootstrap != "auto":
            return self.bootstrap
        if d <= 2 and n < LOW_DIMENSION_MIN_SAMPLES and rvs_kind(self.model) == "exact":
            return "monte-carlo"
        return auto_bootstrap(n)

    def _degrees(self):
        """The checked degrees as a tuple of ints, and whether ``degree`` is a sequence."""
        many = not isinstance(self.degree, (numbers.Number, str, bytes)) and \
            np.ndim(self.degree) == 1
        values = list(self.degree) if many else [self.degree]
        if many and not values:
            raise ValueError("degree must name at least one degree, got an empty sequence.")
        for p in values:
            if isinstance(p, (bool, np.bool_)) or not isinstance(p, numbers.Integral):
                raise TypeError(f"degree must be an int from 1 to {MAX_DEGREE} or a sequence "
                                f"of them, got {self.degree!r}.")
            if not 1 <= p <= MAX_DEGREE:
                raise ValueError(f"degree must be from 1 to {MAX_DEGREE}, got {self.degree!r}.")
        if len(set(int(p) for p in values)) != len(values):
            raise ValueError(f"degree must not repeat a degree, got {self.degree!r}.")
        return tuple(int(p) for p in values), many

    def _fit(self, X):
        (self.center_, self.transform_, self.score_transform_, self.saturation_,
         white) = polynomial_frame(X, self.whiten, WHITEN_COVARIANCE)
        self.geometry_ = "whitened" if white else "euclidean"

    def _prepare(self, X, rng):
        """The validated ``X`` and the test's frames, each ``(frame, reference, coords)``:
        ``frame`` the coordinates ``(c, A, B, c2, white)`` that every sample of the test
        shares (None where each sample learns its own) and ``coords`` those of ``X``,
        ``(Y, SY, c2, white)``; ``rng`` seeds the model's reference draws."""
        self._check_params()
        if is_fitted(self):
            X = self._validate_X(X, reset=False)
            frames = [((self.center_, self.transform_, self.score_transform_,
                        self.saturation_, self.geometry_ == "whitened"), "fit")]
        else:
            X = check_samples(X)
            frames = [(None if ref == "sample" else self._model_frame(X.shape, rng), ref)
                      for ref in self._references()]
        S = evaluate_score(self.model, X, "model")
        if len(frames) == 1:
            return X, [(*frames[0], self._in_coordinates(X, S, frames[0][0]))]
        # aggregated: a sample whose own coordinates do not exist (coinciding rows), or
        # which lies too far out in the model's, is tested in the other's alone
        kept, errors = [], []
        for frame, ref in frames:
            try:
                kept.append((frame, ref, self._in_coordinates(X, S, frame)))
            except ValueError as exc:
                errors.append(exc)
        if not kept:
            raise errors[0]
        return X, kept

    def _model_frame(self, shape, rng):
        """The coordinates learned on ``max(REFERENCE_DRAWS, n)`` draws of the model."""
        n, d = shape
        m = max(REFERENCE_DRAWS, n)
        R = check_samples(self.model.rvs(m, random_state=rng.spawn(1)[0]),
                          name="model.rvs(...)")
        if R.shape != (m, d):
            raise ValueError(f"model.rvs({m}) returned shape {R.shape}; the test needs "
                             f"({m}, {d}) to learn its coordinates on the model's samples.")
        return polynomial_frame(R, self.whiten, WHITEN_COVARIANCE)

    def _in_coordinates(self, X, S, frame=None):
        """``X`` and its scores ``S`` in the kernel's coordinates (``frame``, or learned
        on ``X``), ``c2`` and whether the coordinates whiten."""
        c, A, B, c2, white = (polynomial_frame(X, self.whiten, WHITEN_COVARIANCE)
                              if frame is None else frame)
        with np.errstate(over="ignore", invalid="ignore"):  # overflow: the error below
            Y, SY = (X - c) @ A, S @ B
        if not (np.all(np.isfinite(Y)) and np.all(np.isfinite(SY))):
            raise ValueError("X (or the model's score at X) is on a scale that overflows "
                             "float64 in the kernel's coordinates; rescale X.")
        if frame is not None:
            # coordinates learned elsewhere: the powers t^p of the products t = y_i.y_j
            # must not overflow before the weights level them off
            with np.errstate(over="ignore"):
                r2 = float(np.max(np.einsum("ij,ij->i", Y, Y)))
            if max(self._degrees()[0]) * math.log10(max(r2, 1.0)) > OVERFLOW_EXPONENT:
                far = f"{math.sqrt(r2):.3g}" if math.isfinite(r2) else "more than 1e154"
                raise ValueError(
                    f"X lies up to {far} times the unit radius of the "
                    "kernel's coordinates from their centre, learned on another sample "
                    "(the model's draws, or the sample given to fit), where the powers "
                    "of the polynomial kernel overflow float64: the model does not "
                    "describe X on any scale near its own. reference='sample' learns "
                    "the coordinates on X itself.")
        return np.ascontiguousarray(Y), np.ascontiguousarray(SY), c2, white

    def _statistics(self, coords, degrees):
        """The U-statistic of each (frame, degree), frames outer, from each frame's
        coordinates ``(Y, SY, c2, white)``."""
        return [polynomial_stein_sums(Y, SY, p, c2, self.max_memory).statistic("u")
                for Y, SY, c2, _ in coords for p in degrees]

    def _monte_carlo(self, n, d, degrees, rng, frames):
        """The statistic of each (frame, degree) (columns) on ``n_bootstrap`` model
        samples of size ``n`` (rows), computed as on the tested sample."""
        null = np.empty((int(self.n_bootstrap), len(frames) * len(degrees)))
        for b, child in enumerate(rng.spawn(int(self.n_bootstrap))):
            Y, S = model_sample(self.model, n, d, child)
            null[b] = self._statistics([self._in_coordinates(Y, S, frame)
                                        for frame, _, _ in frames], degrees)
        return null

    def _test(self, X):
        rng = as_generator(self.random_state)
        X, frames = self._prepare(X, rng)
        coords = [f[2] for f in frames]
        degrees, many = self._degrees()
        n, d = X.shape
        kind = self._null_kind(n, d)
        if kind == "monte-carlo":
            stats = self._statistics(coords, degrees)
            check_stein_finite(*stats)
            null = self._monte_carlo(n, d, degrees, rng, frames)
            if not np.all(np.isfinite(null)):
                raise ValueError("the statistic is not finite on some samples of model.rvs "
                                 "(their values or the model's scores there overflow "
                                 "float64); take bootstrap='multinomial'.")
            return self._result(stats, list(null.T), degrees, many, frames, n, kind)
        if d <= 2 and n < LOW_DIMENSION_MIN_SAMPLES:
            warnings.warn(
                f"PolynomialKSDTest in {d} dimension{'s' if d > 1 else ''} with n={n} < "
                f"{LOW_DIMENSION_MIN_SAMPLES} points rejects true models more often than "
                "alpha (measured: up to 0.11 at alpha = 0.05): its few, skewed features "
                "defeat the wild bootstrap; KSDTest holds its level there, and so does "
                "bootstrap='monte-carlo' for a model with rvs.",
                UserWarning, stacklevel=caller_stacklevel())
        V = bootstrap_weights(kind, n, self.n_bootstrap, rng)
        stats, nulls = [], []
        for Y, SY, c2, _ in coords:
            for p in degrees:  # every statistic's forms on the same draws
                if 8 * n * n <= self.max_memory:  # the triangle kept, its forms threaded
                    sums, upper, _ = polynomial_stein_pass(Y, SY, p, c2, self.max_memory,
                                                           keep=True)
                    null = bootstrap_forms(upper, V)
                    del upper  # one triangle at a time
                else:  # the forms of each block of rows as it is formed
                    sums, _, null = polynomial_stein_pass(Y, SY, p, c2, self.max_memory, V=V)
                stats.append(sums.statistic("u"))
                check_stein_finite(stats[-1], null)
                nulls.append(null)
        return self._result(stats, nulls, degrees, many, frames, n, kind)

    def _result(self, stats, nulls, degrees, many, frames, n, kind):
        """The result of one statistic, or the aggregated result of several (degrees,
        and the coordinates of the sample and of the model's draws)."""
        c2s = [coords[2] for _, _, coords in frames]
        whites = [coords[3] for _, _, coords in frames]
        null_name = (f"Monte Carlo null of {int(self.n_bootstrap)} model samples"
                     if kind == "monte-carlo" else f"{kind} bootstrap")
        fields = dict(n_samples=n, bootstrap=kind, n_bootstrap=self.n_bootstrap)
        independent = kind == "monte-carlo"
        degree_name = (f"degrees {', '.join(map(str, degrees))}" if many
                       else f"degree {degrees[0]}")
        if len(frames) == 1:
            if whites[0]:
                null_name = f"whitened, {null_name}"
            if not many:
                return simulated_null_result(
                    stats[0], nulls[0], alpha=float(self.alpha),
                    method=f"polynomial KSD ({degree_name}, {null_name})",
                    bandwidth=math.sqrt(c2s[0]), independent=independent, **fields)
            method = f"polynomial KSD ({degree_name}, aggregated, {null_name})"
            labels = tuple(f"degree {p}" for p in degrees)
        else:
            method = (f"polynomial KSD ({degree_name}, in the coordinates of the sample "
                      f"and of the model's draws, aggregated, {null_name})")
            labels = tuple(f"degree {p}, {ref}{', whitened' if white else ''}"
                           for (_, ref, _), white in zip(frames, whites) for p in degrees)
        bandwidths = np.repeat(np.sqrt(c2s), len(degrees))
        return aggregated_result(np.array(stats), np.column_stack(nulls), method, bandwidths,
                                 alpha=float(self.alpha), labels=labels,
                                 independent=independent, **fields)

    def _all_sums(self, X):
        """The :class:`~skstein.discrepancy.SteinSums` of each (frame, degree) on ``X``,
        and whether there are several."""
        _, frames = self._prepare(X, as_generator(self.random_state))
        degrees, many = self._degrees()
        sums = [polynomial_stein_sums(Y, SY, p, c2, self.max_memory)
                for _, _, (Y, SY, c2, _) in frames for p in degrees]
        return sums, many or len(frames) > 1

    def _discrepancy(self, X):
        sums, many = self._all_sums(X)
        values = np.array([s.statistic("u") for s in sums])
        return values if many else float(values[0])

    def _score(self, X):
        sums, _ = self._all_sums(X)
        return max(float(s.power_criterion()) for s in sums)
