"""Result objects of the tests, frozen dataclasses in the manner of scipy.stats."""

from dataclasses import dataclass, field, fields

import numpy as np

__all__ = ["GOFTestResult", "RelativeTestResult"]


def _fields_equal(a, b):
    """Field-wise equality of two results of the same type; arrays compared by value
    (NaN equal to NaN: the bandwidth rows of statistics without a bandwidth)."""
    if type(a) is not type(b):
        return NotImplemented
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if x is None or y is None or not np.array_equal(x, y, equal_nan=True):
                return False
        elif x != y:
            return False
    return True


def _readonly(a):
    a = np.array(a, dtype=np.float64, copy=True)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class _TestResult:
    """The fields every test's result starts with, compared field by field.

    A subclass declares a ``bandwidth`` field, made a read-only copy when it is an
    array, and names in ``_array_fields`` its optional arrays, made read-only
    float copies when given.
    """

    statistic: float
    pvalue: float
    threshold: float
    reject: bool
    alpha: float
    method: str
    n_samples: int

    _array_fields = ()

    __eq__ = _fields_equal

    def __post_init__(self):
        if isinstance(self.bandwidth, np.ndarray):
            object.__setattr__(self, "bandwidth", _readonly(self.bandwidth))
        for name in self._array_fields:
            if getattr(self, name) is not None:
                object.__setattr__(self, name, _readonly(getattr(self, name)))


@dataclass(frozen=True, eq=False)
class GOFTestResult(_TestResult):
    """Result of a goodness-of-fit test.

    Attributes
    ----------
    statistic : float
        The discrepancy estimate (squared KSD, U- or V-statistic).
    pvalue : float
        Bootstrap p-value ``(1 + #{null >= statistic}) / (1 + n_bootstrap)``.
    threshold : float
        Rejection threshold: ``reject == (pvalue <= alpha)``, which is
        ``statistic > threshold`` up to ties.
    reject : bool
        Whether H0 (the sample comes from the model) is rejected at level ``alpha``.
    alpha : float
        Significance level.
    method : str
        The test, e.g. ``"KSD (rbf, u-statistic, multinomial bootstrap)"``.
    n_samples : int
        Number of samples the statistic was computed on.
    bootstrap : str
    n_bootstrap : int
    bandwidth : float or ndarray
        The kernel bandwidth(s) used.
    null_distribution : ndarray (n_bootstrap,)
        The bootstrap replicates (read-only, left out of the repr).
    bandwidths, statistics, pvalues : ndarray (L,) or None
        Aggregated tests only: each bandwidth of the collection (for a sliced test,
        row ``l`` of the ``(L, m)`` per-pair bandwidths), its statistic and its own
        bootstrap p-value (``statistic``, ``bandwidth``, ``threshold`` and
        ``null_distribution`` are those of the most significant one; ``pvalue`` is
        the aggregated test's).
    rejected : ndarray of bool (L,) or None
        Aggregated tests only: which bandwidths reject at the corrected level.
    pvalue_threshold : float, ndarray (L,) or None
        Aggregated tests only: the corrected per-bandwidth level; bandwidth ``l``
        rejects when ``pvalues[l] <= pvalue_threshold`` (an array, one level per
        bandwidth, for a weighted aggregation: ``KSDTest(bandwidth_weights=...)``).
    labels : tuple of str or None
        Aggregated maxSKSD tests: the candidate set of directions (and bandwidth
        factor) of each statistic; KSD tests with ``whiten="aggregate"``: the geometry
        (``"euclidean"`` or ``"whitened"``) of each statistic. None otherwise.
    """

    bootstrap: str
    n_bootstrap: int
    bandwidth: object
    null_distribution: np.ndarray = field(repr=False)
    bandwidths: np.ndarray = field(default=None, repr=False)
    statistics: np.ndarray = field(default=None, repr=False)
    pvalues: np.ndarray = field(default=None, repr=False)
    rejected: np.ndarray = field(default=None, repr=False)
    pvalue_threshold: float = None
    labels: tuple = field(default=None, repr=False)

    _array_fields = ("bandwidths", "statistics", "pvalues")

    def __post_init__(self):
        object.__setattr__(self, "null_distribution", _readonly(self.null_distribution))
        super().__post_init__()
        if self.rejected is not None:
            rejected = np.array(self.rejected, dtype=bool, copy=True)
            rejected.setflags(write=False)
            object.__setattr__(self, "rejected", rejected)


@dataclass(frozen=True, eq=False)
class RelativeTestResult(_TestResult):
    """Result of a relative goodness-of-fit test of two models P and Q.

    H0: P fits the data at least as well as Q (``D(P, R) <= D(Q, R)``);
    H1: Q fits better.

    Attributes
    ----------
    statistic : float
        The difference ``D_n = discrepancy_p - discrepancy_q`` (positive when Q
        looks closer to the data).
    pvalue : float
        ``1 - Phi(zscore)``, in ``[0, 1]``; 1.0 when the variance is degenerate.
    threshold : float
        ``sigma / sqrt(n) * z_{1 - alpha}``: H0 is rejected when ``statistic >= threshold``.
    reject : bool
        Whether H0 is rejected at level ``alpha`` (Q is the better model).
    alpha : float
        Significance level.
    method : str
        The test, e.g. ``"relative KSD (imq, jackknife variance)"``.
    n_samples : int
        Number of data points.
    discrepancy_p, discrepancy_q : float
        The two discrepancy estimates (U-statistics) of the data to P and to Q.
    sigma : float
        Estimated asymptotic standard deviation of ``sqrt(n) * statistic``.
    zscore : float
        The studentised difference ``sqrt(n) * statistic / sigma`` (0.0 when the
        variance is degenerate).
    variance : str
        The variance estimator (``"jackknife"``, ``"ustat"`` or ``"projection"``).
    bandwidth : float or ndarray
        The kernel bandwidth used for both models; for the maxSKSD comparison the
        per-direction bandwidths of P (row 0) and Q (row 1), read-only.
    degenerate : bool
        True when the estimated variance vanished (P and Q indistinguishable on the
        data); the test then does not reject.
    bandwidths, zscores, statistics : ndarray (L,) or None
        Aggregated tests only: each bandwidth (or, for maxSKSD, bandwidth factor) of
        the collection, its studentised difference and its difference; ``statistic``,
        ``zscore``, ``sigma``, ``bandwidth`` and ``threshold`` are those of the
        largest z-score, ``pvalue`` is the aggregated test's.
    zscore_threshold : float or None
        Aggregated tests only: the ``1 - alpha`` quantile of the maximum of the
        fitted joint normal; H0 is rejected when the largest z-score reaches it.
    labels : tuple of str or None
        With ``whiten="aggregate"``: the geometry (``"euclidean"`` or
        ``"whitened"``) of each kernel of ``bandwidths``. None otherwise.
    """

    discrepancy_p: float
    discrepancy_q: float
    sigma: float
    zscore: float
    variance: str
    bandwidth: object
    degenerate: bool = False
    bandwidths: np.ndarray = field(default=None, repr=False)
    zscores: np.ndarray = field(default=None, repr=False)
    statistics: np.ndarray = field(default=None, repr=False)
    zscore_threshold: float = None
    labels: tuple = field(default=None, repr=False)

    _array_fields = ("bandwidths", "zscores", "statistics")
