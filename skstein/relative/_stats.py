"""The normal-approximation decision shared by the relative tests."""

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from .._result import RelativeTestResult
from .._validation import check_choice

__all__ = ["VARIANCES", "relative_variance", "decide", "result_from_sums", "DifferenceSums",
           "difference_sums", "combine_folds", "max_z_decision", "aggregated_result",
           "check_decision_finite"]

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
    # an overflow gives inf (refused by the decision, check_decision_finite), not a warning
    with np.errstate(over="ignore", invalid="ignore"):
        centred = rowsums - rowsums.mean()
        if variance == "jackknife":
            # D_{-i} - mean_k D_{-k} = -2 (r_i - mean r) / ((n-1)(n-2)); the jackknife
            # variance of D_n is (n-1)/n * sum_i of its square, times n for sqrt(n) D_n
            ss = float(np.dot(centred, centred))
            var = 4.0 * ss / ((n - 1.0) * (n - 2.0) ** 2)
        else:
            var = 4.0 * float(np.mean((centred / (n - 1.0)) ** 2))
    return float(np.sqrt(max(var, 0.0)))


def check_decision_finite(stat, sigma):
    """A ValueError naming X unless the differences ``stat`` and their standard deviations
    ``sigma`` are finite: an overflow (X or the scores on a scale beyond float64) is not a
    degenerate variance, which means P and Q give the same Stein matrix to rounding."""
    if not (np.all(np.isfinite(stat)) and np.all(np.isfinite(sigma))):
        raise ValueError(
            "the relative statistic or its variance is not finite on X: the values of X, "
            "the scores of the models or the kernel's scale overflow float64; rescale X or "
            "choose another bandwidth.")


def _degenerate_values(stat, tol):
    """The statistic reported by a degenerate test: 0 where it is below the rounding
    tolerance ``tol`` (the same Stein matrix to rounding), else unchanged."""
    return np.where(np.abs(stat) <= tol, 0.0, stat)


def decide(stat, sigma, n, alpha, scale):
    """(zscore, pvalue, threshold, reject, degenerate, stat, sigma) of the
    normal-approximation test.

    ``scale`` is the magnitude of the Stein-kernel values, for the rounding tolerance:
    a variance that vanishes to rounding (P and Q give the same Stein matrix) is
    degenerate, and the test then does not reject (p-value 1); the ``stat`` and
    ``sigma`` returned are those to report: a degenerate test's ``sigma`` is 0, and so
    is its ``stat`` where it is below the rounding tolerance too. A statistic or
    variance that is not finite (an overflow) raises (:func:`check_decision_finite`).
    """
    check_decision_finite(stat, sigma)
    tol = 8.0 * _EPS * n * max(scale, np.finfo(np.float64).tiny)
    z_alpha = float(norm.ppf(1.0 - alpha))
    if sigma <= tol:
        if abs(stat) > tol:
            warnings.warn(
                f"the variance of the relative statistic vanished (sigma={sigma:.3g}) while the "
                f"statistic did not ({stat:.3g}); the normal approximation does not apply and "
                "the test does not reject.",
                RuntimeWarning,
                stacklevel=3,
            )
        return 0.0, 1.0, 0.0, False, True, float(_degenerate_values(stat, tol)), 0.0
    zscore = float(np.sqrt(n) * stat / sigma)
    pvalue = float(norm.sf(zscore))
    threshold = float(sigma * z_alpha / np.sqrt(n))
    return zscore, pvalue, threshold, bool(zscore >= z_alpha), False, float(stat), float(sigma)


def result_from_sums(sums, n, variance, alpha, method, bandwidth):
    """The test's decision from ``(U_p, U_q, T, r, scale)`` of any U-statistic pair.

    Any discrepancy that is a U-statistic of a symmetric kernel (the KSD, a sliced
    KSD with directions fixed beforehand) enters here; only the sums differ.
    """
    u_p, u_q, total, rowsums, scale = sums
    stat = total / (n * (n - 1.0))
    sigma = relative_variance(rowsums, total, n, variance)
    zscore, pvalue, threshold, reject, degenerate, stat, sigma = decide(stat, sigma, n, alpha,
                                                                        scale)
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


@dataclass
class DifferenceSums:
    r"""Sufficient statistics of the difference of two U-statistics, per kernel.

    Attributes
    ----------
    n : int
        Samples the statistics are computed on (all folds together).
    u_p, u_q : ndarray (L,)
        The two discrepancy estimates under each of ``L`` kernels.
    stat : ndarray (L,)
        :math:`\hat D_l = U_l(P) - U_l(Q)`.
    sigma : ndarray (L,)
        Estimated standard deviation of :math:`\sqrt n \hat D_l`.
    influence : ndarray (L, n)
        Centred first-order influence of each sample on :math:`\hat D_l`
        (:math:`r_{li}/(n-1)` minus its mean, with :math:`r_{li}` the row sums of the
        difference of the Stein matrices): the correlation of the ``L`` studentised
        differences is the correlation of these rows.
    scale : float
        Magnitude of the Stein-kernel values (rounding tolerance of a vanishing variance).
    """

    n: int
    u_p: np.ndarray
    u_q: np.ndarray
    stat: np.ndarray
    sigma: np.ndarray
    influence: np.ndarray
    scale: float


def difference_sums(sums_p, sums_q, variance):
    """:class:`DifferenceSums` from the ``SteinSums`` of P and of Q under each kernel."""
    n = sums_p[0].n
    total = np.array([a.offdiag_sum - b.offdiag_sum for a, b in zip(sums_p, sums_q)])
    rows = np.stack([a.rowsums - b.rowsums for a, b in zip(sums_p, sums_q)])
    sigma = np.array([relative_variance(r, t, n, variance) for r, t in zip(rows, total)])
    influence = (rows - rows.mean(axis=1, keepdims=True)) / (n - 1.0)
    scale = max(max(float(np.mean(np.abs(s.rowsums))) for s in sums_p),
                max(float(np.mean(np.abs(s.rowsums))) for s in sums_q)) / (n - 1.0)
    return DifferenceSums(
        n=n,
        u_p=np.array([s.statistic("u") for s in sums_p]),
        u_q=np.array([s.statistic("u") for s in sums_q]),
        stat=total / (n * (n - 1.0)),
        sigma=sigma,
        influence=influence,
        scale=scale,
    )


def combine_folds(folds):
    r"""One :class:`DifferenceSums` from disjoint folds (cross-fitting).

    With fold sizes :math:`n_f` and :math:`n = \sum_f n_f`, the combined difference is
    :math:`\hat D = \sum_f n_f \hat D_f / n` and, the folds' U-statistics being
    independent given their kernels, :math:`\sigma^2 = \sum_f n_f \sigma_f^2 / n`
    (the variance of :math:`\sqrt n \hat D`); the influence rows are concatenated.
    """
    n = sum(f.n for f in folds)
    w = np.array([f.n / n for f in folds])
    with np.errstate(over="ignore"):  # an overflow: inf, refused by the decision
        sigma = np.sqrt(sum(wi * f.sigma**2 for wi, f in zip(w, folds)))
    return DifferenceSums(
        n=n,
        u_p=sum(wi * f.u_p for wi, f in zip(w, folds)),
        u_q=sum(wi * f.u_q for wi, f in zip(w, folds)),
        stat=sum(wi * f.stat for wi, f in zip(w, folds)),
        sigma=sigma,
        influence=np.concatenate([f.influence for f in folds], axis=1),
        scale=max(f.scale for f in folds),
    )


def concat_kernels(parts):
    """One :class:`DifferenceSums` from several over the same samples (kernels appended)."""
    if len(parts) == 1:
        return parts[0]
    return DifferenceSums(
        n=parts[0].n,
        u_p=np.concatenate([p.u_p for p in parts]),
        u_q=np.concatenate([p.u_q for p in parts]),
        stat=np.concatenate([p.stat for p in parts]),
        sigma=np.concatenate([p.sigma for p in parts]),
        influence=np.concatenate([p.influence for p in parts], axis=0),
        scale=max(p.scale for p in parts),
    )


#: Draws of the fitted normal used to calibrate the maximum of the z-scores.
MAX_Z_DRAWS = 20000


def max_z_decision(zscores, influence, alpha, rng, n_draws=MAX_Z_DRAWS):
    r"""Calibrate :math:`\max_l z_l` of jointly normal studentised differences.

    Under H0 at its boundary the ``L`` studentised differences are asymptotically
    :math:`N(0, \Sigma)` with :math:`\Sigma` the correlation of their Hoeffding
    projections, estimated by the correlation of the rows of ``influence``. The
    ``(1 - alpha)`` quantile of :math:`\max_l Z_l` and the p-value
    :math:`(1 + \#\{\max_l Z_{ml} \ge \max_l z_l\}) / (1 + M)` come from ``n_draws``
    draws of that normal (from ``rng``, so a seed fixes them).

    Returns
    -------
    pvalue, z_threshold : float
    """
    L = zscores.shape[0]
    corr = np.corrcoef(influence) if L > 1 else np.ones((1, 1))
    corr = np.atleast_2d(corr)
    evals, evecs = np.linalg.eigh(corr)
    A = evecs * np.sqrt(np.clip(evals, 0.0, None))
    Z = rng.standard_normal((n_draws, L)) @ A.T
    zmax = Z.max(axis=1)
    observed = float(np.max(zscores))
    pvalue = (1.0 + np.count_nonzero(zmax >= observed)) / (1.0 + n_draws)
    k = int(np.floor(alpha * (1.0 + n_draws) + 1e-9)) - 1
    z_threshold = float(np.sort(zmax)[::-1][k]) if k >= 0 else np.inf
    return float(pvalue), z_threshold


def aggregated_result(sums, alpha, method, bandwidths, variance, rng, labels=None):
    """Decision of the relative test over a collection of kernels (max of the z-scores).

    Kernels under which the difference is degenerate (P and Q give the same Stein
    matrix to rounding) are left out of the maximum; if all are, the result is
    degenerate (no rejection).
    """
    n = sums.n
    check_decision_finite(sums.stat, sums.sigma)
    tol = 8.0 * _EPS * n * max(sums.scale, np.finfo(np.float64).tiny)
    ok = sums.sigma > tol
    z = np.zeros_like(sums.stat)
    z[ok] = np.sqrt(n) * sums.stat[ok] / sums.sigma[ok]
    stats, sigma = sums.stat, sums.sigma
    if not np.any(ok):
        k, pvalue, zthr, degenerate = 0, 1.0, np.inf, True
        # every variance vanished to rounding: report it as 0, and the differences
        # that vanished with it (the result is degenerate, not a statistic above 0)
        stats, sigma = _degenerate_values(stats, tol), np.zeros_like(sigma)
        if np.any(stats != 0.0):
            warnings.warn(
                "the variance of the relative statistic vanished under every kernel while "
                f"the statistic did not ({float(stats[np.argmax(np.abs(stats))]):.3g}); the "
                "normal approximation does not apply and the test does not reject.",
                RuntimeWarning,
                stacklevel=3,
            )
    else:
        idx = np.flatnonzero(ok)
        pvalue, zthr = max_z_decision(z[idx], sums.influence[idx], alpha, rng)
        k = int(idx[np.argmax(z[idx])])
        degenerate = False
    return RelativeTestResult(
        statistic=float(stats[k]),
        pvalue=float(pvalue),
        threshold=float(sigma[k] * zthr / np.sqrt(n)) if not degenerate else 0.0,
        reject=bool((not degenerate) and pvalue <= alpha),
        alpha=float(alpha),
        method=method,
        n_samples=n,
        discrepancy_p=float(sums.u_p[k]),
        discrepancy_q=float(sums.u_q[k]),
        sigma=float(sigma[k]),
        zscore=float(z[k]),
        variance=variance,
        bandwidth=float(bandwidths[k]),
        degenerate=degenerate,
        bandwidths=np.asarray(bandwidths, dtype=np.float64),
        zscores=z,
        statistics=stats,
        zscore_threshold=float(zthr),
        labels=None if labels is None else tuple(labels),
    )
