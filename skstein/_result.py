"""Result objects of the tests, frozen dataclasses in the manner of scipy.stats."""

from dataclasses import dataclass, field

import numpy as np

__all__ = ["GOFTestResult"]


def _readonly(a):
    a = np.array(a, dtype=np.float64, copy=True)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class GOFTestResult:
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
    """

    statistic: float
    pvalue: float
    threshold: float
    reject: bool
    alpha: float
    method: str
    n_samples: int
    bootstrap: str
    n_bootstrap: int
    bandwidth: object
    null_distribution: np.ndarray = field(repr=False)

    def __post_init__(self):
        object.__setattr__(self, "null_distribution", _readonly(self.null_distribution))
        if isinstance(self.bandwidth, np.ndarray):
            object.__setattr__(self, "bandwidth", _readonly(self.bandwidth))
