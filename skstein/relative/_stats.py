"""The normal-approximation decision shared by the relative tests."""

import warnings

import numpy as np
from scipy.stats import norm

from .._result import RelativeTestResult
from .._validation import check_choice

__all__ = ["VARIANCES", "relative_variance", "decide", "result_from_sums"]

#: Variance estimators of the relative KSD test.
VARIANCES = ("jackknife", "ustat")

_EPS = np.finfo(np.float64).eps


def relative_variance(rowsums, total, n, variance="jackknife"):
    r"""Standard deviation :math:`\hat\sigma` of :math:`\sqrt n\,\hat D_n` from the row sums.

    Parameters
    ----------
    rowsums : ndarray of shape (n,)
        :math:`r_i = \sum_{j \ne i} H_{ij}` of the difference of the Stein matrices.
    total : float
        :math:`T = \sum_{i \ne j} H_{ij}` (equal to ``rowsums.sum()``).
    n : int
        Sample size (at least 3).
    variance : {"jackknife", "ustat"}
        See the module docstring.

    Returns
    -------
    float
    """
    check_choice(variance, "variance", VARIANCES)
    rowsums = np.asarray(rowsums, dtype=np.float64)
    if n < 3:
        raise ValueError(f"the relative test needs at least 3 samples, got {n}.")
    centred = rowsums - rowsums.mean()
    if variance == "jackknife":
        # D_{-i} - mean_k D_{-k} = -2 (r_i - mean r) / ((n-1)(n-2)); the jackknife
        # variance of D_n is (n-1)/n * sum_i of its square, times n for sqrt(n) D_n
        ss = float(np.dot(centred, centred))
        var = 4.0 * ss / ((n - 1.0) * (n - 2.0) ** 2)
    else:
        var = 4.0 * float(np.mean((centred / (n - 1.0)) ** 2))
    return float(np.sqrt(max(var, 0.0)))


def decide(stat, sigma, n, alpha, scale):
    """(zscore, pvalue, threshold, reject, degenerate) of the normal-approximation test.

    ``scale`` is the magnitude of the Stein-kernel values, for the rounding tolerance:
    a variance that vanishes to rounding (P and Q give the same Stein matrix) is
    degenerate, and the test then does not reject (p-value 1).
    """
    tol = 8.0 * _EPS * n * max(scale, np.finfo(np.float64).tiny)
    z_alpha = float(norm.ppf(1.0 - alpha))
    if not np.isfinite(sigma) or sigma <= tol:
        if abs(stat) > tol:
            warnings.warn(
                f"the variance of the relative statistic vanished (sigma={sigma:.3g}) while the "
                f"statistic did not ({stat:.3g}); the normal approximation does not apply and "
                "the test does not reject.",
                RuntimeWarning,
                stacklevel=3,
            )
        return 0.0, 1.0, 0.0, False, True
    zscore = float(np.sqrt(n) * stat / sigma)
    pvalue = float(norm.sf(zscore))
    threshold = float(sigma * z_alpha / np.sqrt(n))
    return zscore, pvalue, threshold, bool(zscore >= z_alpha), False


def result_from_sums(sums, n, variance, alpha, method, bandwidth):
    """The test's decision from ``(U_p, U_q, T, r, scale)`` of any U-statistic pair.

    Any discrepancy that is a U-statistic of a symmetric kernel (the KSD, a sliced
    KSD with directions fixed beforehand) enters here; only the sums differ.
    """
    u_p, u_q, total, rowsums, scale = sums
    stat = total / (n * (n - 1.0))
    sigma = relative_variance(rowsums, total, n, variance)
    zscore, pvalue, threshold, reject, degenerate = decide(stat, sigma, n, alpha, scale)
    return RelativeTestResult(
        statistic=float(stat),
        pvalue=pvalue,
        threshold=threshold,
        reject=reject,
        alpha=float(alpha),
        method=method,
        n_samples=n,
        discrepancy_p=float(u_p),
        discrepancy_q=float(u_q),
        sigma=float(sigma),
        zscore=zscore,
        variance=variance,
        bandwidth=bandwidth if isinstance(bandwidth, np.ndarray) else float(bandwidth),
        degenerate=degenerate,
    )
