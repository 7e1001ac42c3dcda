"""The maxSKSD goodness-of-fit test (sliced Stein kernels along learned directions)."""


from dataclasses import replace

import math
import numbers
from contextlib import contextmanager, nullcontext

import numpy as np
from sklearn.base import BaseEstimator

from .._bootstrap import (
    BOOTSTRAPS,
    auto_bootstrap,
    bootstrap_null,
    bootstrap_pvalue,
    bootstrap_threshold,
    bootstrap_weights,
)
from .._threads import single_blas
from .._xp import host_single_blas, namespace_of, to_host
from .._xp_sliced import on_device_of, xp_linear_forms, xp_sliced_sums_and_forms
from .._xp_stein import xp_check_samples, xp_evaluate_score
from .._random import as_generator
from .._result import GOFTestResult
from .._validation import (
    check_bool,
    check_choice,
    check_positive_float,
    check_positive_int,
    check_samples,
    check_whiten,
    evaluate_score,
)
from ..directions import (
    AUTO_STARTS,
    OPTIMIZERS,
    VARIANTS,
    _Adam,
    _ascent_step,
    _first_start,
    _from_whitened,
    _n_pairs,
    _to_whitened,
    search_directions,
    stein_moment_matrix,
)
from ..discrepancy import (
    DEFAULT_MAX_MEMORY,
    SteinSums,
    is_collection,
    linear_stein_upper_matrix,
    radial_scale,
    resolve_sliced_bandwidth,
    resolve_sliced_bandwidths,
    sliced_stein_sums,
    sliced_sums_and_forms,
    sliced_value_and_grad,
)
from ..distributions import rvs_kind
from ..kernels import auto_whitening, whitening
from ._base import (
    SteinTestMixin,
    aggregated_result,
    is_fitted,
    on_training_part,
    split_indices,
    train_count,
)
from ._common import WHITEN_COVARIANCE, SampleTestMethods, model_sample
from ._polynomial import LOW_DIMENSION_MIN_SAMPLES

__all__ = ["MaxSKSDTest", "combine_pvalues"]

#: The combinations of the folds' p-values of a cross-fitted test.
COMBINATIONS = ("bonferroni", "mean", "harmonic")


def combine_pvalues(pvalues, method="bonferroni"):
    r"""One p-value from K p-values, valid whatever their dependence.

    The merging functions of Vovk & Wang (2020), for p-values that are each valid
    but may depend on each other in any way (the folds of a cross-fitted test):

    * ``"bonferroni"``: :math:`K \min_k p_k`;
    * ``"mean"``: :math:`2 \cdot \frac1K \sum_k p_k`;
    * ``"harmonic"``: :math:`c_K \cdot K / \sum_k p_k^{-1}` with :math:`c_K = e \log K`
      for :math:`K \ge 3` and :math:`c_2 = 2` (for two p-values :math:`e \log 2 < 2`
      does not bound the harmonic mean's error; twice it does, since it is at least
      the minimum).

    Each is capped at 1; one p-value is returned as it is.

    Parameters
    ----------
    pvalues : array-like of shape (K,)
        The p-values, in [0, 1].
    method : {"bonferroni", "mean", "harmonic"}, default="bonferroni"

    Returns
    -------
    float

    References
    ----------
    .. [1] V. Vovk, R. Wang. "Combining p-values via averaging", Biometrika 107(4), 2020.

    Examples
    --------
    >>> from skstein.gof._maxsksd import combine_pvalues
    >>> combine_pvalues([0.01, 0.5], "bonferroni"), combine_pvalues([0.01, 0.5], "mean")
    (0.02, 0.51)
    """
    check_choice(method, "combine", COMBINATIONS)
    p = np.asarray(pvalues, dtype=np.float64).ravel()
    if p.size == 0 or not np.all((p >= 0) & (p <= 1)):
        raise ValueError(f"pvalues must be a non-empty array of values in [0, 1], "
                         f"got {pvalues!r}.")
    K = p.size
    if K == 1:
        return float(p[0])
    if method == "bonferroni":
        value = K * p.min()
    elif method == "mean":
        value = 2.0 * p.mean()
    else:
        factor = 2.0 if K == 2 else math.e * math.log(K)
        value = np.inf if np.any(p == 0) else factor * K / np.sum(1.0 / p)
        value = 0.0 if np.any(p == 0) else value
    return float(min(1.0, value))


def check_cv(cv):
    """``cv`` as a number of folds (an int of at least 2)."""
    if isinstance(cv, bool) or not isinstance(cv, numbers.Integral) or cv < 2:
        raise ValueError(f"cv must be None or an int of at least 2 (the number of folds), "
                         f"got {cv!r}.")
    return int(cv)


def crossfit_folds(n, n_folds, rng):
    """``n_folds`` disjoint sorted index arrays covering ``range(n)`` at random, sizes within 1."""
    perm = rng.permutation(n)
    return [np.sort(part) for part in np.array_split(perm, n_folds)]


def _n_train(train_size, n):
    """``train_size`` (a fraction of ``n`` or a number) as a number of samples, at least 2."""
    count = train_count(train_size, n)
    if isinstance(train_size, numbers.Integral) and count < 2:
        raise ValueError(f"train_size must be at least 2 learning points, got {train_size!r}.")
    return max(count, 2)


@contextmanager
def _on_fold(X_learn, n_folds):
    """Say where a ValueError raised while learning on one side of a fold comes from."""
    try:
        yield
    except ValueError as exc:
        raise ValueError(f"learning on the other folds of X (cv={n_folds}, "
                         f"{X_learn.shape[0]} samples): {exc}") from exc


def crossfit_result(results, combine, alpha):
    """The :class:`GOFTestResult` of a cross-fitted test from the folds' own results.

    ``pvalue`` is :func:`combine_pvalues` of the folds' p-values; ``statistic``,
    ``threshold``, ``bandwidth`` and ``null_distribution`` are those of the most
    significant fold (its own test, at the level it was run at: ``alpha / K`` for
    Bonferroni, where ``reject`` is then ``statistic > threshold``); ``statistics``,
    ``pvalues`` and ``bandwidths`` (one row per fold) hold every fold's.
    """
    K = len(results)
    pvalues = np.array([r.pvalue for r in results])
    pvalue = combine_pvalues(pvalues, combine)
    k = int(np.argmin(pvalues))
    best = results[k]
    bonferroni = combine == "bonferroni"
    return GOFTestResult(
        statistic=best.statistic, pvalue=pvalue,
        threshold=best.threshold,
        reject=bool(pvalue <= alpha), alpha=float(alpha),
        method=f"{best.method[:-1]}; {K}-fold cross-fitting, {combine} of the p-values)",
        n_samples=int(sum(r.n_samples for r in results)),
        bootstrap=best.bootstrap, n_bootstrap=best.n_bootstrap, bandwidth=best.bandwidth,
        null_distribution=best.null_distribution,
        bandwidths=np.stack([np.atleast_1d(r.bandwidth) for r in results]),
        statistics=np.array([r.statistic for r in results]),
        pvalues=pvalues,
        rejected=pvalues * K <= alpha if bonferroni else None,
        pvalue_threshold=alpha / K if bonferroni else None,
        labels=tuple(f"fold {j}" + (f": {r.labels[int(np.argmin(r.pvalues))]}"
                                    if r.labels is not None else "")
                     for j, r in enumerate(results)),
    )


#: ``moment="pooled"``: the shares of the level of the learned statistics and of the
#: whole sample's second and fourth moments (a weighted Bonferroni).
POOLED_SHARES = (0.5, 0.25, 0.25)


def pooled_result(learned, whole, alpha, folds=False, prefix="learned"):
    r"""The result of ``moment="pooled"``: the test of the learned statistics
    (``learned``, a split or a cross-fitted result, run at ``alpha / 2``) and the whole
    sample's tests (``whole``: the second and the fourth moments, each run at its
    share of :data:`POOLED_SHARES`), with the p-value :math:`\min(1, \min_k p_k /
    w_k)` over the parts' p-values :math:`p_k` and shares :math:`w_k` (Bonferroni with
    weights, valid whatever their dependence): it is at most ``alpha`` exactly when a
    part rejects at its own level. ``statistics``, ``pvalues``, ``bandwidths`` and
    ``labels`` hold the learned result's parts (its folds, or its most significant
    candidate) and then the whole sample's (rows of NaN bandwidths);
    ``pvalue_threshold`` is each part's level. ``folds``: ``learned`` is a
    cross-fitted result (:func:`crossfit_result`). ``prefix`` begins the label of
    ``learned``'s part (``"KSD"`` for :class:`~skstein.KSDTest` with ``moments=True``).
    """
    if folds:
        parts = list(zip(learned.statistics, learned.pvalues, learned.labels))
        levels = [learned.pvalue_threshold] * len(parts)
        rows = list(learned.bandwidths)
    else:
        label = prefix if learned.labels is None else \
            f"{prefix}: {learned.labels[int(np.argmin(learned.pvalues))]}"
        parts = [(learned.statistic, learned.pvalue, label)]
        levels = [learned.alpha]
        rows = [np.atleast_1d(learned.bandwidth)]
    for res in whole:
        parts.append((res.statistic, res.pvalue, f"all: {res.labels[0]}"))
        levels.append(res.alpha)
    width = max(len(r) for r in rows)  # the moments have no bandwidth: NaN rows
    rows = np.array([np.pad(np.asarray(r, dtype=float), (0, width - len(r)),
                            constant_values=np.nan) for r in rows]
                    + [np.full(width, np.nan)] * len(whole))
    tests = [learned, *whole]
    scaled = [min(1.0, r.pvalue / share) for r, share in zip(tests, POOLED_SHARES)]
    k = int(np.argmin(scaled))
    best = tests[k]
    thresholds = None if any(v is None for v in levels) else np.array(levels, dtype=float)
    pvalues = np.array([p for _, p, _ in parts])
    shares = ", ".join(f"{res.labels[0]} at alpha / {round(1 / w)}"
                       for res, w in zip(whole, POOLED_SHARES[1:]))
    if any(res.bootstrap == "monte-carlo" for res in whole):
        shares += ", calibrated on samples of the model"
    return GOFTestResult(
        statistic=best.statistic, pvalue=float(scaled[k]), threshold=best.threshold,
        reject=bool(scaled[k] <= alpha), alpha=float(alpha),
        method=f"{learned.method[:-1]} at alpha / 2; with the whole sample's {shares})",
        n_samples=whole[0].n_samples, bootstrap=learned.bootstrap,
        n_bootstrap=learned.n_bootstrap, bandwidth=best.bandwidth,
        null_distribution=best.null_distribution,
        statistics=np.array([t for t, _, _ in parts]), pvalues=pvalues, bandwidths=rows,
        rejected=None if thresholds is None else pvalues <= thresholds,
        pvalue_threshold=thresholds, labels=tuple(lab for _, _, lab in parts))


def _whole_result(est, stat, null, alpha, n, label, bootstrap, method):
    """The :class:`GOFTestResult` of one whole-sample moment test of ``est``."""
    pvalue = bootstrap_pvalue(stat, null)
    return GOFTestResult(
        statistic=float(stat), pvalue=float(pvalue),
        threshold=bootstrap_threshold(null, alpha), reject=bool(pvalue <= alpha),
        method=method + ")", alpha=float(alpha), n_samples=n, bootstrap=bootstrap,
        n_bootstrap=int(est.n_bootstrap), bandwidth=np.full(1, np.nan),
        null_distribution=null, labels=(label,))


def pooled_fourth_test(est, X, S, rng, alpha, bootstrap):
    """The fourth-moment test of the whole sample ``X`` (scores ``S``) alone, at
    ``alpha``: each half about the other half's mean
    (:func:`crossed_fourth_moment_terms`), the bootstrap-t of :class:`StudentisedMean`
    on its own draws of the kind ``bootstrap``. ``est`` gives ``n_bootstrap`` and
    ``statistic`` (:class:`MaxSKSDTest`, or :class:`~skstein.KSDTest` with
    ``moments=True``)."""
    part_rng, boot_rng = rng.spawn(2)
    xi = crossed_fourth_moment_terms(X, S, part_rng)
    V = bootstrap_weights(bootstrap, X.shape[0], est.n_bootstrap, boot_rng, est.statistic)
    null = studentised_null(xi, V, bootstrap)
    stat = StudentisedMean(xi).statistic()
    return _whole_result(
        est, stat, null, alpha, X.shape[0], FOURTH, bootstrap,
        f"fourth moment of all {X.shape[0]} samples, each half about the other's mean "
        f"(studentised, {bootstrap} bootstrap-t)")


def pooled_second_test(est, X, S, rng, alpha, bootstrap, device=None):
    """The second-moment test of the whole sample ``X`` (scores ``S``) alone, at
    ``alpha``: the U- or V-statistic of :func:`second_moment_sums` and its bootstrap of
    the kind ``bootstrap`` on its own draws (the forms on the device of ``device``, the
    sample there, when given). ``est`` gives ``n_bootstrap``, ``statistic`` and
    ``max_memory``."""
    with np.errstate(over="ignore", invalid="ignore"):  # overflow: checked in the sums
        parts = _second_moment_parts(X, S)
    sums = second_moment_sums(X, S, parts)
    n = X.shape[0]
    if device is not None:
        V = bootstrap_weights(bootstrap, n, est.n_bootstrap, rng, est.statistic)
        null = xp_linear_forms(*device, V, max_memory=est.max_memory)
        if est.statistic == "v":
            null += (V * V) @ sums.diag
    else:
        # the upper triangle (half the forms' products, on numba's threads) when it
        # fits, else full rows by blocks
        kernel = (second_moment_upper(X, S, parts) if 8 * n * n <= est.max_memory
                  else second_moment_blocks(X, S, est.max_memory, parts))
        null = bootstrap_null(kernel, bootstrap, est.n_bootstrap, rng,
                              statistic=est.statistic, diag=sums.diag, n=n)
    return _whole_result(
        est, sums.statistic(est.statistic), null, alpha, X.shape[0], SECOND, bootstrap,
        f"second moments of all {X.shape[0]} samples (linear Stein kernel, "
        f"{bootstrap} bootstrap)")


def pooled_monte_carlo(est, n, d):
    """Whether the whole sample's second and fourth moments are calibrated on samples
    of the model: with ``bootstrap="auto"``, in one dimension below
    ``LOW_DIMENSION_MIN_SAMPLES`` points, for a model that samples exactly (where their
    bootstraps run above their levels)."""
    return (est.bootstrap == "auto" and d == 1 and n < LOW_DIMENSION_MIN_SAMPLES
            and rvs_kind(est.model) == "exact")


def pooled_by_model_samples(est, X, S, second_rng, fourth_rng, model_rng):
    """The whole sample's second- and fourth-moment tests of ``est`` with Monte Carlo
    nulls: each statistic computed in the same way (the fourth moment's halves drawn
    afresh) on ``n_bootstrap`` samples of the model of the size of ``X``, each test at
    its share of ``est.alpha`` (:data:`POOLED_SHARES`)."""
    n, d = X.shape

    def statistics(Y, SY, split_rng):
        with np.errstate(over="ignore", invalid="ignore"):  # checked in the sums
            parts = _second_moment_parts(Y, SY)
        second = second_moment_sums(Y, SY, parts).statistic(est.statistic)
        fourth = StudentisedMean(crossed_fourth_moment_terms(Y, SY, split_rng))
        return second, fourth.statistic()

    observed = statistics(X, S, fourth_rng.spawn(2)[0])
    null = np.empty((int(est.n_bootstrap), 2))
    for b, child in enumerate(model_rng.spawn(int(est.n_bootstrap))):
        draw_rng, split_rng = child.spawn(2)
        null[b] = statistics(*model_sample(est.model, n, d, draw_rng), split_rng)
    if not np.all(np.isfinite(null)):
        raise ValueError("the moment statistics are not finite on some samples of "
                         "model.rvs; take bootstrap='rademacher'.")
    draws = f"Monte Carlo null of {int(est.n_bootstrap)} model samples"
    return [_whole_result(
                est, observed[0], null[:, 0], est.alpha * POOLED_SHARES[1], n, SECOND,
                "monte-carlo", f"second moments of all {n} samples (linear Stein "
                f"kernel, {draws}"),
            _whole_result(
                est, observed[1], null[:, 1], est.alpha * POOLED_SHARES[2], n, FOURTH,
                "monte-carlo", f"fourth moment of all {n} samples, each half about the "
                f"other's mean (studentised, {draws}")]


#: Labels of the candidates of ``moment=True``: the second moments along the learned
#: direction, and the fourth moments about the learning sample's mean.
MOMENT = "moment"
FOURTH = "fourth moment"
#: ``moment="pooled"``: the second and the fourth moments tested once on the whole sample.
POOLED = "pooled"
SECOND = "second moments"


def moment_direction(X, S):
    r"""The unit eigenvector ``u`` of the largest :math:`|\lambda|` of the Stein moment
    matrix of ``X`` (scores ``S``, :func:`~skstein.directions.stein_moment_matrix`).

    Along ``u`` the sample's second moments depart most from the model's: for a
    Gaussian model, the sample covariance differs most from the model's there.
    """
    evals, evecs = np.linalg.eigh(stein_moment_matrix(X, S))
    return np.ascontiguousarray(evecs[:, int(np.argmax(np.abs(evals)))])


def moment_sums(xi):
    r""":class:`~skstein.discrepancy.SteinSums` of the linear Stein kernel along ``u``,
    from its terms ``xi`` (:func:`moment_terms`).

    With :math:`\xi_i = (s_i^\top u)(x_i^\top u) + \|u\|^2` (Stein's operator applied
    to the test function :math:`x \mapsto (u^\top x) u`, zero in expectation under
    the model), the kernel is :math:`h(x_i, x_j) = \xi_i \xi_j`: its U-statistic
    estimates :math:`(E\,\xi)^2`, the maxSKSD of the single pair (slice ``u``,
    direction ``u``) with the linear kernel :math:`k(a, b) = ab` on the projections.
    """
    with np.errstate(over="ignore", invalid="ignore"):  # overflow: checked below
        total = float(xi.sum())
        sums = SteinSums(n=xi.shape[0], offdiag_sum=total * total - float(xi @ xi),
                         diag=xi * xi, rowsums=xi * (total - xi))
    _check_terms(np.isfinite(sums.offdiag_sum) and np.all(np.isfinite(sums.rowsums)))
    return sums


def _check_terms(finite):
    """A ValueError naming X unless ``finite``: the moment statistics' terms overflowed."""
    if not finite:
        raise ValueError("the Stein terms of the moment statistics overflow float64 on the "
                         "samples of X (X is too large for the model's scale); rescale X.")


def moment_terms(X, S, u):
    r"""The Stein terms :math:`\xi_i = (s_i^\top u)(x_i^\top u) + \|u\|^2`
    (see :func:`moment_sums`)."""
    return (S @ u) * (X @ u) + float(u @ u)


def _second_moment_parts(X, S):
    r"""``(Y, a, c0, diag)`` of :func:`second_moment_sums`: the centred points, the
    terms :math:`s_i^\top y_i`, the constant :math:`1 - 1/N` and the diagonal
    :math:`\|\xi_i\|_F^2`."""
    n, d = X.shape
    Y = X - X.mean(axis=0)
    a = np.einsum("ij,ij->i", S, Y)
    c0 = 1.0 - 1.0 / n
    diag = np.einsum("ij,ij->i", S, S) * np.einsum("ij,ij->i", Y, Y) + 2.0 * c0 * a \
        + c0 * c0 * d
    return Y, a, c0, diag


def second_moment_sums(X, S, parts=None):
    r""":class:`~skstein.discrepancy.SteinSums` of the linear Stein kernel: the
    second moments of the sample ``X`` (scores ``S``) in every direction at once.

    With :math:`y_i = x_i - \bar x` and the matrices :math:`\xi_i = s_i y_i^\top +
    (1 - 1/N) I` (Stein's operator applied to the linear test functions :math:`x
    \mapsto A (x - \bar x)`; their mean is zero under the model, the factor
    :math:`1 - 1/N` accounting for the centre's own point), the kernel is
    :math:`h(x_i, x_j) = \langle \xi_i, \xi_j \rangle_F = (s_i^\top s_j)(y_i^\top
    y_j) + (1 - 1/N)(s_i^\top y_i + s_j^\top y_j) + (1 - 1/N)^2 D`, the KSD of the
    linear kernel :math:`k(x, y) = (x - \bar x)^\top (y - \bar x)`. Its U-statistic
    estimates :math:`\|E\,\xi\|_F^2`, the squared Frobenius norm of the Stein moment
    matrix :math:`E[s(x)(x - \mu)^\top] + I`: for a Gaussian model
    :math:`I - \Sigma_p^{-1} \Sigma_q`, zero exactly when the sample's covariance is
    the model's. No direction is learned, so every point is tested. The sums take
    :math:`O(N D^2)` time; the bootstrap's forms use the kernel's upper triangle
    (:func:`second_moment_upper`) or, beyond the memory budget, its rows
    (:func:`second_moment_blocks`). ``parts``: :func:`_second_moment_parts` of ``X``
    and ``S`` when already computed.
    """
    with np.errstate(over="ignore", invalid="ignore"):  # overflow: the check below
        Y, a, c0, diag = _second_moment_parts(X, S) if parts is None else parts
        T = S.T @ Y
        T[np.diag_indices_from(T)] += X.shape[0] * c0  # the sum of the xi_i
        rowsums = np.einsum("ij,ij->i", S @ T, Y) + c0 * np.trace(T) - diag
        offdiag = float(np.sum(T * T) - diag.sum())
    if not (np.isfinite(offdiag) and np.all(np.isfinite(rowsums))):
        raise ValueError(f"the second moments of the {X.shape[0]} samples of X overflow "
                         f"float64 (the products of X and the model's scores are too large); "
                         f"rescale X.")
    return SteinSums(n=X.shape[0], offdiag_sum=offdiag, diag=diag, rowsums=rowsums)


def second_moment_upper(X, S, parts=None):
    """The strict upper triangle of the kernel of :func:`second_moment_sums` (zero on
    and below the diagonal, ``(N, N)``): the operand of
    :func:`~skstein._bootstrap.bootstrap_null` when it fits in memory. Its Gram
    products and its entries run on numba's threads (``parts``: as in
    :func:`second_moment_sums`)."""
    Y, a, c0, _ = _second_moment_parts(X, S) if parts is None else parts
    return linear_stein_upper_matrix(S, Y, a, c0, c0 * c0 * X.shape[1])


def second_moment_blocks(X, S, max_memory=DEFAULT_MAX_MEMORY, parts=None):
    """The rows of the kernel of :func:`second_moment_sums` with a zero diagonal, by
    blocks ``(a, b, H[a:b])`` of at most about ``max_memory`` bytes each (the operand
    of :func:`~skstein._bootstrap.bootstrap_null`; ``parts``: as in
    :func:`second_moment_sums`)."""
    n = X.shape[0]
    Y, a, c0, _ = _second_moment_parts(X, S) if parts is None else parts
    rows = int(max(1, min(n, max_memory // (16 * n))))
    for lo in range(0, n, rows):
        hi = min(n, lo + rows)
        H = (S[lo:hi] @ S.T) * (Y[lo:hi] @ Y.T)
        H += c0 * (a[lo:hi, None] + a[None, :]) + c0 * c0 * X.shape[1]
        H[np.arange(hi - lo), np.arange(lo, hi)] = 0.0
        yield lo, hi, H


def fourth_moment_terms(X, S, c, radii=None):
    r"""The Stein terms of the test function :math:`x \mapsto g(\|y\|^2)\, y`,
    :math:`y = x - c`: :math:`\xi_i = g(r_i^2) (s_i^\top y_i + D) + 2 r_i^2
    g'(r_i^2)`, :math:`r_i^2 = \|y_i\|^2`.

    ``radii=None``: the cubic :math:`g(r^2) = r^2`, :math:`\xi_i = (s_i^\top y_i + D +
    2) \|y_i\|^2`. ``radii=(m, w)`` (:func:`radial_scale` of a reference sample about
    ``c``): the cubic saturated ``w`` away from ``m``, :math:`g(r^2) = m + w
    \tanh((r^2 - m) / w)` (:math:`g = m` when ``w`` is 0), which follows :math:`r^2`
    near ``m`` and stays within ``w`` of it.

    Their mean is zero under the model for any fixed centre ``c`` and fixed ``g``
    (Stein's identity; the divergence of the test function is :math:`D g + 2 r^2 g'`).
    Their mean compares the sample's spread of radii (its kurtosis in every direction
    at once) with the model's, and does not change under a rotation of the data and the
    model together, so it needs no learned direction. For a standard normal model and a
    sample of unit-variance Laplace coordinates in any basis, the cubic gives
    :math:`E\,\xi = -3D`.

    Why it saturates: the cubic's terms grow like :math:`r^4`, whose tails a
    bootstrap-t of a few hundred terms cannot calibrate. Whitened, about the other
    half's mean (as :func:`crossed_fourth_moment_terms`), the cubic rejected a true
    standard normal model in D = 2 in 0.058 of 400 trials at level 0.0125 with N =
    100, and a product of Student-t(3) coordinates (whose cubic terms have no variance)
    in 0.13 at N = 300 (D = 2) and 0.060 (D = 5); saturated at :func:`radial_scale`'s
    width, 0.020 (600 trials), 0.015, and at D = 5 0.013 / 0.023 with N = 200 / 1000
    (600 / 300 trials; the bounds are 0.026-0.032). Below about 50 points no width
    tried held the level in D = 2 (0.032 at N = 50, 0.038 at N = 30; two standard
    deviations, 0.030 and 0.035), where the multinomial bootstrap warns anyway
    (:func:`~skstein._bootstrap.warn_small_sample`). What it costs and
    gains at level 0.0125 against a standard normal model: rotated unit-variance Laplace
    coordinates at D = 100, N = 1000, 0.83 against the cubic's 0.87 (two standard
    deviations: 0.76; 100 trials).
    """
    Y = X - c
    r2 = np.einsum("ij,ij->i", Y, Y)
    sy = np.einsum("ij,ij->i", S, Y)
    d = X.shape[1]
    if radii is None:
        return (sy + (d + 2.0)) * r2
    m, w = radii
    if not w > 0:
        return m * (sy + d)
    th = np.tanh((r2 - m) / w)
    return (m + w * th) * (sy + d) + 2.0 * r2 * (1.0 - th * th)


def fourth_reference(reference):
    r"""``(A, B, c, radii)`` of :func:`whitened_fourth_moment_terms`: the Ledoit-Wolf
    whitening of ``reference`` (:func:`~skstein.kernels.whitening`), its mean ``c``
    mapped by ``A`` and the :func:`radial_scale` of its mapped rows about it."""
    A, B = whitening(reference)
    c = reference.mean(axis=0) @ A
    return A, B, c, radial_scale(reference @ A - c)


def whitened_fourth_moment_terms(X, S, reference):
    r""":func:`fourth_moment_terms` in the coordinates that whiten ``reference``: about
    its mean, with the points mapped by its Ledoit-Wolf whitening ``A`` and the scores
    by ``B`` (:func:`~skstein.kernels.whitening`; the score of the mapped model), the
    test function saturated by the spread of the reference's squared radii there
    (:func:`fourth_reference`).

    Stein's identity holds in any fixed linear coordinates and for any fixed test
    function, so the terms keep mean zero under the model when ``reference`` does not
    contain the points. In the data's own coordinates the terms of a model with unequal
    variances are products of quadratic forms in two metrics (:math:`s^\top y` weighs
    the narrow directions, :math:`\|y\|^2` the wide ones) and far heavier-tailed: for a
    rotated Gaussian model with variances 0.1 to 10 (D = 5, N = 150) the bootstrap-t of
    the cubic alone rejected a true model in 0.05 of 1200 trials at level 0.025, and in
    0.027 whitened.
    """
    A, B, c, radii = fourth_reference(reference)
    return fourth_moment_terms(X @ A, S @ B, c, radii)


def crossed_fourth_moment_terms(X, S, rng):
    r""":func:`whitened_fourth_moment_terms` of every point by a reference it does not
    enter: the sample is cut at random into two halves (``rng``), and each half's terms
    are taken about the other half's mean, in the coordinates that whiten it.

    The terms then have mean zero under the model exactly, as about fixed centre and
    coordinates. About the mean of all points, each term's centre depends on the point
    itself, and the mean of the terms shifts by about :math:`D/N` times their curvature
    in the centre: at D = 50, N = 300 the bootstrap-t of the fourth moment alone
    rejected a standard normal sample in 0.050 of 300 trials at level 0.025 about the
    sample's mean, 0.030 about the other half's, 0.037 about the true mean.
    """
    xi = np.empty(X.shape[0])
    halves = crossfit_folds(X.shape[0], 2, rng)
    for k, part in enumerate(halves):
        other = X[halves[1 - k]]
        try:
            xi[part] = whitened_fourth_moment_terms(X[part], S[part], other)
        except ValueError as exc:
            raise ValueError(f"the fourth moment takes each half of X about the other half, "
                             f"in the coordinates that whiten it; in a half of "
                             f"{other.shape[0]} samples: {exc}") from exc
    return xi


class StudentisedMean:
    r"""The bootstrap-t statistic of terms :math:`\xi` with mean zero under the model:
    :math:`t^2 = N \bar\xi^2 / \hat\sigma^2` (``statistic()``), whatever ``kind``.

    The fourth-moment terms are strongly skewed in low dimensions, where the
    multiplier bootstrap of :math:`(\sum_i \xi_i)^2` and the normal approximation of
    ``t`` both reject too often under the model (0.09 instead of 0.05 at D = 5,
    N = 100 for a standard normal model, 0.12-0.14 for Student-t models); the
    bootstrap-t (:func:`studentised_null`) held 0.05-0.08 there. ``diag`` is zero: the
    V-statistic's diagonal term does not apply. Terms that are all equal have no spread
    to studentise by: the statistic is then 0.
    """

    def __init__(self, xi):
        self.n = xi.shape[0]
        self.diag = np.zeros(self.n)
        with np.errstate(over="ignore", invalid="ignore"):  # overflow: checked below
            m = float(xi.mean())
            var = float(xi.var(ddof=1))
        _check_terms(np.isfinite(m) and np.isfinite(var))
        # terms all equal (two points, a constant sample): no spread to studentise by,
        # no evidence measured; the statistic is 0 and the test does not reject
        self.value = self.n * m * m / var if var > 0 else 0.0

    def statistic(self, kind="u"):
        return self.value


def studentised_null(xi, V, bootstrap):
    r"""The bootstrap-t draws :math:`t^{*2}` of :class:`StudentisedMean`, one per row of
    the weights ``V``: :math:`t^* = (\bar\xi^* - \bar\xi) / (\hat\sigma^* /
    \sqrt{N^*})` on the resample (of size :math:`N^*`) whose counts are ``N V + 1``
    (``"multinomial"``: the test's draws are the centred counts over ``N``) or ``1 +
    sign(V)`` (``"rademacher"``: each point dropped or doubled, a resample without the
    multinomial's third moment, so only first-order accurate). A resample of equal
    terms gives :math:`t^{*2} = \infty` (counted against the statistic).
    """
    n = xi.shape[0]
    W = n * V + 1.0 if bootstrap == "multinomial" else 1.0 + np.sign(V)
    size = W.sum(axis=1)  # n for the multinomial's resamples
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = W @ xi / size
        var = (W @ (xi * xi) - size * mean * mean) / (size - 1.0)
        t2 = size * (mean - xi.mean()) ** 2 / var
    return np.where(var > 0, t2, np.inf)


def _linear_terms(name, G, R, X, S):
    """The terms of a candidate without a bandwidth: for :data:`FOURTH`,
    :func:`fourth_moment_terms` about the centre ``G[0]`` in the coordinates ``X @ A``,
    scores ``S @ B``, saturated by ``radii`` (``(A, B, radii) = R``, from
    :func:`fourth_reference` of the learning sample); else :func:`moment_terms` along
    ``G[0]``."""
    if name == FOURTH:
        A, B, radii = R
        return fourth_moment_terms(X @ A, S @ B, G[0] @ A, radii)
    return moment_terms(X, S, G[0])


class _WhitenedScore:
    """The model's score in the whitened coordinates ``z = x A``: ``s(z B^T) B``."""

    def __init__(self, model, B):
        self.model, self.B = model, B

    def __call__(self, Z):
        return evaluate_score(self.model, Z @ self.B.T, "model") @ self.B


class MaxSKSDTest(SampleTestMethods, SteinTestMixin, BaseEstimator):
    r"""The maxSKSD goodness-of-fit test (Gong, Li & Hernández-Lobato 2021, Algorithm 1).

    The statistic is the sliced kernel Stein discrepancy along learned directions:
    for ``m`` pairs of a slice :math:`r_k` (which component of the score is tested)
    and a test direction :math:`g_k` (along which a 1-D kernel compares samples),

    .. math::

        \mathrm{SKSD}^2 = \sum_k \frac{1}{N(N-1)} \sum_{i \ne j} h_k(x_i, x_j),

    see :func:`skstein.max_sksd`. Because every kernel is one-dimensional, the test
    keeps its power in high dimensions where the KSD with a ``D``-dimensional kernel
    loses it. :meth:`fit` learns the directions (and, for ``variant="rg"``, the
    slices) by gradient ascent on a training sample
    (:func:`skstein.directions.search_directions`); :meth:`test` then runs the
    bootstrap test on a *different* sample. When not fitted, :meth:`test` learns
    and tests on its own input: by default on one split (``train_size`` learns the
    directions, the rest is tested: Algorithm 1 of the paper), and beside it the
    second and the fourth moments of the whole sample in every direction at once
    (``moment="pooled"``), which need no learned direction: they find departures
    that a few hundred learning points do not reveal (heavier tails, or a change of
    variance, along unknown directions in 50 or more dimensions). ``moment=False``
    is the paper's test; see the Notes for what each setting gives up.
    :meth:`partial_fit` trains instead on a stream of batches, one ascent step per
    batch, for when fresh samples are cheap (e.g. MCMC chains during burn-in).

    Parameters
    ----------
    model : distribution or callable
        The model p: an object with ``grad_logpdf(X)`` or a callable ``X -> grad log p(X)``.
    variant : {"g", "rg"}, default="g"
        ``"g"``: slices are the coordinate axes, one learned direction per axis
        (maxSKSD-g). ``"rg"``: ``n_slices`` learned orthonormal slices with their
        learned directions (maxSKSD-rg).
    n_slices : int, default=None
        Number of slices for ``"rg"`` (default ``min(n_features, 10)``); must be
        None (or ``n_features``) for ``"g"``.
    kernel : {"rbf", "imq"}, default="rbf"
        1-D base kernel.
    bandwidth : "median", float or array-like of shape (m,), default="median"
        Per-pair bandwidths; ``"median"``: median heuristic of the training
        projections, fixed in :meth:`fit` (along a direction where the training rows
        coincide up to rounding, such as an axis on which X is constant, the median
        of the other directions' bandwidths).
    test_bandwidth : None, "median", "aggregate", float or array-like, default=None
        Bandwidths of :meth:`test`, :meth:`discrepancy` and :meth:`score`.
        ``None``: those learned with the directions (``bandwidth_``); ``"median"``:
        the median heuristic of the tested sample's projections; a float or an array
        of shape (m,): fixed. ``"aggregate"``: the aggregated test (as in
        :class:`KSDTest`, one bootstrap shared by all, min-p level correction) over
        the median bandwidths of the tested projections times ``n_bandwidths``
        common factors of :func:`~skstein.kernels.bandwidth_factor_grid` (from the
        cluster scale of the projected data to twice the median); an array of shape
        (L, m): aggregated over its rows. The directions are learned with
        ``bandwidth``: a smooth kernel suits the ascent, while the structure that
        tells sample and model apart may sit at a finer scale along the learned
        directions (``gof-rbm``), which the aggregated test finds without a choice.
    n_bandwidths : int, default=10
        Number of factors for ``test_bandwidth="aggregate"``.
    kernel_params : dict, default=None
        ``{"beta": ...}`` for IMQ.
    init : {"auto", "identity", "random"} or array-like, default="auto"
        Start of the direction search (see :func:`~skstein.directions.search_directions`):
        ``"auto"`` starts from the coordinate axes and from two data-driven sets of
        directions (Stein moments of the training part, which point at departures
        from the model along any direction) and keeps what does best on held-out
        training points; :meth:`partial_fit` starts a stream at the axes.
    starts : sequence of str, default=None
        With ``init="auto"``: which starts, among ``"identity"``, ``"spectral"``,
        ``"spectral-top"`` and ``"spectral-bottom"`` (maxSKSD-g only), ``"cubic"`` and
        ``"ica"`` (directions of extreme non-Gaussianity of the training sample,
        :func:`~skstein.directions.independent_directions`, where the Stein moments are
        largest); ``None``: those of :data:`~skstein.directions.AUTO_STARTS` (all but
        ``"ica"``, which needs more training points than a fifth of a few hundred),
        with ``"ica"`` added when the test cross-fits (``cv``).
    optimizer : {"adam", "gd"}, default="adam"
    learning_rate : float, default=0.01
    schedule : {"cosine", "constant"}, default="cosine"
    max_iter : int, default=20
        Ascent steps per restart (0 keeps the initial directions).
    tol : float, default=1e-3
    patience : int, default=10
    n_restarts : int, default=1
    bandwidth_every : int, default=10
        With ``bandwidth="median"``: steps between re-estimates of the bandwidths
        during the ascent (:meth:`fit`) or :meth:`partial_fit` calls between
        re-estimates on the current batch.
    validation_fraction : float, default=0.25
        Part of the training sample used to select the iterate of each pair.
    batch_size : int, default=None
        Minibatch size of the ascent (``None``: exact full-batch gradients).
    orthogonal_slices : bool, default=True
        For ``"rg"``: keep the learned slices orthonormal, or (``False``) only of
        unit norm, so that each pair ascends on its own and several slices may turn
        to the same informative direction (as in the paper's RBM experiment). With
        ``n_slices = n_features`` orthonormal slices span every direction, so only
        free slices can concentrate on a few.
    train_size : float or int, default=0.2
        Part of the sample that :meth:`test` uses to learn directions when the test
        is not fitted (fraction in (0, 1) or a number of samples). With ``cv``: the
        number of learning points (the same fraction of the whole sample, or a number
        of at least 2) that the ascent from the axes and the selection among starts
        use, at a cost that grows as its square; the data-driven starts, whose cost
        grows linearly, use every learning point.
    cv : None or int, default=None
        Cross-fitting of :meth:`test` (and of :meth:`discrepancy` and :meth:`score`)
        when the test is not fitted: the sample is cut at random into ``cv`` folds;
        fold ``k`` is tested with directions learned on the other ``cv - 1``, so every
        point learns in ``cv - 1`` splits and is tested in one, and the ``cv``
        p-values are combined into one (``combine``). ``None``: one split
        (``train_size``), Algorithm 1 of the paper. A fitted test ignores ``cv``.
    combine : {"bonferroni", "mean", "harmonic"}, default="bonferroni"
        How the folds' p-values are combined (:func:`combine_pvalues`): ``cv`` times
        the smallest, twice the mean, or the harmonic mean times :math:`e \log K`,
        each valid whatever the dependence between the folds (each fold's directions
        depend on points that other folds test, so the p-values depend on each other
        in a way that no joint bootstrap accounts for).
    moment : bool or "pooled", default="pooled"
        Also test the linear Stein statistic along the direction ``u`` where the
        learning sample's second moments depart most from the model's: the
        eigenvector of the largest :math:`|\lambda|` of its Stein moment matrix
        (:func:`~skstein.directions.stein_moment_matrix`). The statistic is the
        U-statistic of :math:`\xi_i \xi_j` with :math:`\xi_i = (s_i^\top
        u)(x_i^\top u) + 1`, whose mean is zero under the model (Stein's identity
        for the test function :math:`x \mapsto (u^\top x) u`): the maxSKSD of the
        single pair (slice ``u``, direction ``u``) with the linear kernel
        :math:`k(a, b) = ab` on the projections. It is aggregated with the sliced
        statistics in the same bootstrap (label ``"moment"``; its bandwidth row is
        NaN), studentised like the fourth moment below (the multinomial bootstrap of
        its U-statistic rejected true models in 0.038 / 0.021 of 3000 trials at level
        0.0125 with 75 / 250 terms, where a fold of ``cv=2`` tests; the bootstrap-t
        0.014 / 0.014), and learned by :meth:`fit` (kept in ``candidates_``), on the
        split or on each fold's learning side. A change of variance along one direction
        shows in one of the slices of maxSKSD-rg, whose 1-D RBF kernels dilute it;
        the linear kernel along ``u`` tests it directly. It costs one
        eigendecomposition of a ``D x D`` matrix per learning sample.

        A second statistic, ``"fourth moment"``, compares the spread of the radii, the
        fourth moments in every direction at once: the mean of the Stein terms
        :math:`\xi_i = g(r_i^2) (s_i^\top y_i + D) + 2 r_i^2 g'(r_i^2)` of the test
        function :math:`x \mapsto g(\|y\|^2)\, y`, :math:`y = x - c`, :math:`r_i^2 =
        \|y_i\|^2`, ``c`` the learning sample's mean, in the coordinates that whiten
        the learning sample (:func:`whitened_fourth_moment_terms`: a model with unequal
        variances makes the terms far heavier-tailed in its own coordinates, and their
        test too liberal). :math:`g` follows the cubic :math:`g(r^2) = r^2` within
        :math:`\sqrt{2 \ln n}` standard deviations of the ``n`` learning points'
        squared radii, about the range they span, and saturates beyond
        (:func:`fourth_moment_terms`, :func:`radial_scale`): the cubic's terms
        grow like :math:`r^4`, and their test rejected true models far too often at
        small N in low dimensions and for models without fourth moments. The terms are
        studentised and calibrated by a bootstrap-t on the test's own
        draws (:class:`StudentisedMean`, :func:`studentised_null`; second-order
        accurate with the multinomial bootstrap, first-order with ``"rademacher"``).
        It does not change under a rotation, so heavier or lighter tails than the
        model's show in it whatever their directions, where a search for them from a
        few hundred points fails (Laplace coordinates in a random basis of 100
        dimensions). In a result its statistic is
        :math:`t^2`; its value in :meth:`discrepancy` is, as for ``"moment"``, the
        U-statistic of :math:`\xi_i \xi_j`. ``candidates_`` holds ``u`` and ``c`` as
        the one-row ``G`` of the two (and ``(A, B, radii)``, the whitening and the
        squared radii's mean and standard deviation, as the fourth
        moment's ``R``). See ``gof-rotated`` for what they earn with ``cv=2``. With
        ``True`` and ``cv``, each fold tests its own fourth moment, which needs large
        folds: with folds of 75 points it rejected true models in 0.11-0.12 of 200
        trials at level 0.05 (``"pooled"``: 0.07-0.08); use ``"pooled"`` there.

        ``"pooled"`` (the default): a test that learns on its own input (a split, or
        ``cv`` folds) also tests two statistics that need no learned direction once,
        on the whole sample, instead of in each fold: the second moments in every
        direction (label ``"second moments"``, :func:`second_moment_sums`: the
        U-statistic of the linear Stein kernel :math:`\langle \xi_i, \xi_j
        \rangle_F`, :math:`\xi_i = s_i (x_i - \bar x)^\top + (1 - 1/N) I`, which
        estimates the squared Frobenius norm of the Stein moment matrix; for a
        Gaussian model, of :math:`I - \Sigma_p^{-1} \Sigma_q`), calibrated by the
        test's bootstrap, and the fourth moment above. The learned statistics (with
        the second-moment direction) are tested at ``alpha / 2`` and each whole-sample
        statistic at ``alpha / 4`` (:data:`POOLED_SHARES`); the p-value is
        :math:`\min(1, 2 p_{learned}, 4 p_{second}, 4 p_{fourth})` (Bonferroni with
        weights, valid whatever their dependence). For the fourth moment the sample
        is cut into two halves and each half's terms are taken about the other half's
        mean, in the coordinates that whiten it (:func:`crossed_fourth_moment_terms`):
        about the mean of all points the test rejected a true model twice as often as
        its level at D = 50, N = 300. The result's ``labels`` and ``pvalues`` end with
        ``"all: second moments"`` and ``"all: fourth moment"``. A fitted test tests the
        second-moment direction and the fourth moment with its other candidates, as
        with ``True``. With ``bootstrap="auto"``, in one dimension below
        ``LOW_DIMENSION_MIN_SAMPLES`` (500) points and for a model that samples exactly
        (:func:`~skstein.distributions.rvs_kind` ``"exact"``), these two statistics
        are calibrated instead on ``n_bootstrap`` samples of the model, on which they
        are computed in the same way (an exact level; the method name ends "calibrated
        on samples of the model"). There their bootstraps ran above their levels: the
        default test rejected 0.110, 0.105 and 0.070 of 600 true samples of 20, 30 and
        60 points with the bootstrap-t, 0.042, 0.040 and 0.037 so calibrated, and
        Student-t(5) data 0.065-0.125 either way at 120 points
        (``benchmarks/bench_maxsksd_low_dim.py``). In two dimensions the bootstrap-t
        held the level (0.042-0.060 at 20-120 points) and found Student-t(5) data more
        often at 20-60 points (0.105-0.130 against 0.080-0.095 so calibrated), so it
        stays there. ``False``: none of
        these statistics (the sliced statistics alone, as in the paper).
    statistic : {"u", "v"}, default="u"
    bootstrap : {"auto", "multinomial", "rademacher"}, default="auto"
        As in :class:`KSDTest`. With ``moment``, it also draws the studentised
        statistics' bootstrap-t resamples (multinomial counts, or each point dropped or
        doubled). ``"auto"``: ``"rademacher"`` where the learned statistics are tested
        on fewer than :data:`~skstein._bootstrap.AUTO_RADEMACHER_BELOW` (120) points
        (the part of a split not learned on: samples of fewer than 150 points by
        default; each of the ``cv`` folds; a fitted test's input), ``"multinomial"``
        from there on; the result's ``bootstrap`` names the one drawn. The multinomial
        bootstrap centres its weights, which under the model takes out of its draws the
        part of the statistic's spread that moves with the statistic itself; with a few
        dozen points it runs liberal, the more so at the smaller levels of the parts
        (alpha / 2, alpha / 4). The Rademacher (wild) bootstrap leaves it in and held the level at
        every size measured, a little conservative, at some cost in power (0.02-0.04 at
        N = 100-120, 0.01-0.02 at N = 800-1000, on the same data). Null trials of the
        default test with the multinomial draws: 0.071-0.079 at N = 60 (a rotated
        Gaussian in D = 4, a 2-D mixture; alpha + 3 sd = 0.071), 0.065 / 0.061 for a
        correlated 2-D Gaussian at N = 80 / 100 (3000 trials, bound 0.062), within the
        bound from 150 points on in every case; with the Rademacher ones 0.025-0.058.
        On models and seeds that had no part in choosing the size (1000 null trials
        each, D = 2-50, N = 90-150), the default rejected 0.033-0.056, the multinomial
        draws 0.048-0.078. User guide: "Small samples: which bootstrap".
    n_bootstrap : int, default=1000
    alpha : float, default=0.05
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the split, the direction search and the bootstrap.
    max_memory : int, default=64 MiB
        Memory budget for the ``N x N`` Stein matrix of the bootstrap; beyond it the
        matrix is recomputed by row blocks (same results).
    whiten : bool, "aggregate" or "auto", default="auto"
        ``False``: directions are learned in the data's coordinates. ``True``: in the
        coordinates ``X @ A`` that whiten the training sample
        (:func:`~skstein.kernels.whitening`, with the held-out choice between its
        sample and Ledoit-Wolf covariances, as for :class:`KSDTest`), with the
        model's score mapped to them; the learned pairs are then mapped back to the
        data's coordinates (the same statistics, so the same hypothesis), where the
        slices are no longer unit vectors. A float ``bandwidth`` is then in whitened
        units. Where the data's spread differs by orders of magnitude between
        directions, the ascent in the data's coordinates is led by the narrow ones and
        misses a departure along a wide one: a half-sd shift along the widest axis of a
        rotated Gaussian with variances 0.1 to 10 (n = 300, 200 trials) is rejected
        0.085 / 0.05 by the maxSKSD-g test with ``whiten=False`` at D = 5 / 20.
        ``"aggregate"``: both searches, their candidates aggregated in one test, for 1.7
        to 2 times the time; it rejects that shift 0.995 / 0.71 and kept within 0.08 of
        ``False`` on a mixture (0.955 against 0.985 at D = 20, where whitening alone
        gives 0.11), on Student-t data and on an isotropic variance change (these with
        the Ledoit-Wolf covariance). ``"auto"``: ``"aggregate"`` when the bandwidths
        follow a rule (``bandwidth="median"``) and the training sample is anisotropic
        (the condition number of its Ledoit-Wolf covariance is at least
        :data:`~skstein.kernels.AUTO_WHITEN_CONDITION`, 4, and it spreads along every
        axis of it: :func:`~skstein.kernels.auto_whitening`, as for :class:`KSDTest`),
        ``False`` otherwise, with the same numbers; the candidates' names say which.
        :meth:`partial_fit` takes ``False``, ``True`` (the whitening of the first
        batch, or of :meth:`fit`) or ``"auto"`` (one ascent in the data's
        coordinates).

    Attributes
    ----------
    directions_ : ndarray of shape (m, n_features)
        Learned unit-norm test directions ``G`` (with ``init="auto"``, those of the
        candidate with the best held-out power criterion).
    slices_ : ndarray of shape (m, n_features)
        Slices ``R`` (the identity for ``variant="g"``; with ``whiten=True``, the
        images ``B r'`` of the unit slices learned in whitened coordinates).
    bandwidth_ : ndarray of shape (m,)
        Per-pair bandwidths.
    candidates_ : tuple of (str, ndarray, ndarray, ndarray)
        Every candidate set ``(start, G, R, bandwidths)`` of the search; :meth:`test`
        aggregates over them (one entry unless ``init="auto"`` or
        ``whiten="aggregate"``). Sets learned in whitened coordinates are named
        ``"<start>, whitened"``; with ``whiten="aggregate"``, ``directions_`` are
        those of the Euclidean search.
    whitening_ : tuple (A, B) of ndarrays of shape (n_features, n_features) or None
        The whitening of the training sample (or first batch); None for
        ``whiten=False``, and for ``"auto"`` when it kept the data's coordinates.
    n_iter_ : int
        Ascent steps taken by :meth:`fit`'s search, or by :meth:`partial_fit`
        calls since the first.
    n_features_in_ : int

    Notes
    -----
    :meth:`fit` learns the test directions (and slices) on the training sample it is
    given; :meth:`test` then tests held-out data (when not fitted, Algorithm 1 on a
    split). With several candidate sets of directions (``init="auto"``) or a collection
    of test bandwidths, the test aggregates over all of them: one bootstrap shared by
    every statistic and the min-p level correction of :class:`KSDTest`'s aggregated test
    (exact level, power of the best). In the result, ``bandwidth`` holds the per-pair
    bandwidths and ``n_samples`` counts the samples the statistic was computed on; an
    aggregated result carries each statistic's bandwidth row (``bandwidths``, shape
    (L, m)), statistic, own p-value and decision, and ``labels`` naming its candidate
    set (and bandwidth factor).

    With ``cv`` (not fitted), the result is that of the cross-fitted test: ``pvalue``
    is the combination of the folds' p-values, which ``pvalues`` holds (one per
    fold, each that of the fold's own test, aggregated over its candidates) with
    ``statistics`` and ``bandwidths`` (each fold's most significant statistic and its
    bandwidth row); ``labels`` name each fold and its most significant candidate;
    ``statistic``, ``threshold``, ``bandwidth`` and ``null_distribution`` are those of
    the most significant fold, whose own test ran at level ``alpha / cv`` for
    ``combine="bonferroni"`` (then ``reject`` is ``statistic > threshold``) and at
    ``alpha`` otherwise; ``n_samples`` is the whole sample. Measured on ``gof-rotated``
    (see its module docstring): the folds' data-driven starts see ``(cv - 1) / cv`` of
    the sample instead of ``train_size``, which is what finds heavy tails along
    random directions in 50 dimensions, and Bonferroni was the combination with the
    most power there. With ``moment="pooled"`` the result ends with the whole
    sample's second- and fourth-moment tests (see ``moment``). Cross-fitting costs
    about ``cv`` searches (each ascent on ``train_size`` points).

    Which to use. The default (a split, ``moment="pooled"``) learns directions on
    ``train_size`` of the sample and tests the rest at ``alpha / 2``, and tests the
    whole sample's second and fourth moments at ``alpha / 4`` each. The whole-sample
    statistics find what 200 learning points cannot reveal (heavier tails, or a
    change of variance, along unknown directions in 50 or more dimensions), and the
    second moments see the faint departures of ``gof-rbm`` better than the learned
    directions do; the user guide's "The split, the folds and the pooled moments" has
    the tables. ``moment=False`` is the paper's test (the split alone, at ``alpha``).
    ``cv=2`` cross-fits the learned part: each half at ``alpha / 4``.

    :meth:`discrepancy` is the sliced KSD along the fitted directions (the test
    statistic); when not fitted, the directions are learned on the ``train_size``
    split (or the folds) and the values are computed on the tested parts, as in
    :meth:`test`. For an aggregated test it is the array of its statistics (candidate
    sets of directions, times bandwidth factors), in the order of the result's
    ``labels``; cross-fitted, the statistics of every fold, fold after fold; then, with
    ``moment="pooled"``, the whole sample's second and fourth moments.

    :meth:`score` is the test-power criterion :math:`\mathrm{SKSD}^2_U /
    \hat\sigma_{H_1}` (see :meth:`skstein.discrepancy.SteinSums.power_criterion`; for
    an aggregated test, the largest criterion over the collection): ``GridSearchCV``
    over ``bandwidth``, ``kernel`` or ``n_slices`` fits the directions on each training
    fold and scores them on the held-out fold.

    On a GPU: :meth:`test` takes arrays of another Array API library (CuPy, PyTorch)
    under scikit-learn's ``array_api_dispatch``, with a model whose score returns
    arrays of that library. The directions are learned on a host copy; the sliced
    statistics' sums and bootstrap forms and the second moments' forms run on the
    device, with the same p-values as on the CPU (the user guide's "Performance" page).
    :meth:`fit` takes such data too (scored on the device, learned on a host copy);
    :meth:`partial_fit` takes NumPy data.

    See Also
    --------
    KSDTest : the test with a D-dimensional kernel.
    skstein.max_sksd : the statistic as a function.

    References
    ----------
    .. [1] W. Gong, Y. Li, J. M. Hernández-Lobato. "Sliced Kernelized Stein
       Discrepancy", ICLR 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from skstein import MaxSKSDTest
    >>> from skstein.distributions import Gaussian
    >>> X = np.random.default_rng(0).laplace(size=(500, 20)) / np.sqrt(2)
    >>> result = MaxSKSDTest(Gaussian(np.zeros(20)), random_state=0).test(X)
    >>> bool(result.reject)
    True
    """

    _bootstraps = BOOTSTRAPS + ("auto",)

    def __init__(self, model, *, variant="g", n_slices=None, kernel="rbf", bandwidth="median",
                 test_bandwidth=None, n_bandwidths=10, kernel_params=None, init="auto",
                 starts=None, optimizer="adam",
                 learning_rate=0.01, schedule="cosine", max_iter=20, tol=1e-3, patience=10,
                 n_restarts=1, bandwidth_every=10, validation_fraction=0.25, batch_size=None,
                 orthogonal_slices=True, train_size=0.2, cv=None, combine="bonferroni",
                 moment="pooled", statistic="u",
                 bootstrap="auto", n_bootstrap=1000, alpha=0.05, random_state=None,
                 max_memory=DEFAULT_MAX_MEMORY, whiten="auto"):
        self.model = model
        self.variant = variant
        self.n_slices = n_slices
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.test_bandwidth = test_bandwidth
        self.n_bandwidths = n_bandwidths
        self.kernel_params = kernel_params
        self.init = init
        self.starts = starts
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.schedule = schedule
        self.max_iter = max_iter
        self.tol = tol
        self.patience = patience
        self.n_restarts = n_restarts
        self.bandwidth_every = bandwidth_every
        self.validation_fraction = validation_fraction
        self.batch_size = batch_size
        self.orthogonal_slices = orthogonal_slices
        self.train_size = train_size
        self.cv = cv
        self.combine = combine
        self.moment = moment
        self.statistic = statistic
        self.bootstrap = bootstrap
        self.n_bootstrap = n_bootstrap
        self.alpha = alpha
        self.random_state = random_state
        self.max_memory = max_memory
        self.whiten = whiten

    def _search(self, X, rng, ascent_size=None, starts=None, S=None):
        """The direction search in each geometry of ``whiten``, and the whitening.

        Returns ``(result, whitening)``: whitened candidates are mapped back to the
        data's coordinates (:func:`_from_whitened`) and named ``"<start>, whitened"``;
        with ``whiten="aggregate"`` the result is the Euclidean search's, with the
        whitened candidates after its own. ``S``: the model's scores at ``X`` when
        already computed.
        """
        geometries = self._geometries()
        if "whitened" not in geometries:
            white = None
        elif self._auto_whiten():
            white = auto_whitening(X, WHITEN_COVARIANCE)
            geometries = geometries if white is not None else ("euclidean",)
        else:
            white = whitening(X, WHITEN_COVARIANCE)
        results = []
        for geometry in geometries:
            if geometry == "euclidean":
                results.append(self._search_in(X, self.model, rng, ascent_size, starts, S))
                continue
            A, B = white
            res = self._search_in(X @ A, _WhitenedScore(self.model, B), rng, ascent_size,
                                  starts, None if S is None else S @ B)
            G, R, h = _from_whitened(res.directions, res.slices, res.bandwidth, A, B)
            candidates = tuple((f"{name}, whitened",) + _from_whitened(Gc, Rc, hc, A, B)
                               for name, Gc, Rc, hc in res.candidates)
            results.append(replace(res, directions=G, slices=R, bandwidth=h,
                                   candidates=candidates))
        res = results[0]
        if len(results) > 1:
            res = replace(res, n_iter=sum(r.n_iter for r in results),
                          candidates=sum((r.candidates for r in results), ()))
        return res, white

    def _auto_whiten(self):
        return isinstance(self.whiten, str) and self.whiten == "auto"

    def _geometries(self):
        """The geometries the search may run in, from ``whiten``: ``"auto"`` adds the
        whitened one where the bandwidths follow a rule (``bandwidth="median"``), and
        :meth:`_search` keeps it only for anisotropic training data."""
        if self._auto_whiten():
            rule = isinstance(self.bandwidth, str)
            return ("euclidean", "whitened") if rule else ("euclidean",)
        return check_whiten(self.whiten, auto=True)

    def _search_in(self, X, model, rng, ascent_size=None, starts=None, S=None):
        return search_directions(
            X, model, variant=self.variant, n_slices=self.n_slices, kernel=self.kernel,
            kernel_params=self.kernel_params, bandwidth=self.bandwidth, init=self.init,
            starts=self.starts if starts is None else starts, ascent_size=ascent_size,
            optimizer=self.optimizer, learning_rate=self.learning_rate,
            schedule=self.schedule, max_iter=self.max_iter, tol=self.tol,
            patience=self.patience, n_restarts=self.n_restarts,
            bandwidth_every=self.bandwidth_every, validation_fraction=self.validation_fraction,
            batch_size=self.batch_size, orthogonal_slices=self.orthogonal_slices,
            random_state=rng, scores=S)

    def _check_params(self):
        """The checks run by :meth:`fit` and :meth:`test`: those shared by the Stein tests,
        and ``cv`` and ``combine`` (checked whether or not they are used)."""
        self._check_common_params()
        if self.cv is not None:
            check_cv(self.cv)
        check_choice(self.combine, "combine", COMBINATIONS)

    @host_single_blas
    def fit(self, X, y=None):
        xp = namespace_of(X)
        if xp is None:
            return super().fit(X, y)
        # device data: validated and scored on the device, learned on host copies (with
        # BLAS at one thread, as for NumPy data)
        self._check_params()
        Xh, Sh, _ = self._device_copies(X, xp, min_samples=2)
        with single_blas():
            self._fit(self._validate_X(Xh, reset=True), Sh)
        return self

    fit.__doc__ = SampleTestMethods.fit.__doc__

    def _fit(self, X, S=None):
        S = self._scores(X) if S is None else S
        res, self.whitening_ = self._search(X, as_generator(self.random_state), S=S)
        self.directions_ = res.directions
        self.slices_ = res.slices
        self.bandwidth_ = res.bandwidth
        self.candidates_ = res.candidates + self._moment_candidates(X, S)
        self.n_iter_ = res.n_iter
        self._ascent = None

    @host_single_blas
    def partial_fit(self, X, y=None):
        """One ascent step of the directions (and slices) on the batch ``X``.

        Streaming training for when fresh samples are cheap and one training sample
        is not enough: e.g. the states of MCMC chains during their burn-in, or a
        data stream. Each call evaluates the exact gradient of the sliced KSD
        U-statistic on ``X`` and takes one Adam (or plain) step of size
        ``learning_rate``, projected onto the constraint as in
        :func:`~skstein.directions.search_directions`; the optimiser state carries
        over between calls. The first call starts from ``init`` (or from the
        directions of an earlier :meth:`fit`). ``max_iter``, ``schedule``,
        ``tol``, ``patience``, ``n_restarts``, ``validation_fraction`` and
        ``batch_size`` apply to :meth:`fit` only.

        With ``bandwidth="median"`` the bandwidths are the median heuristic of the
        current batch's projections, re-estimated on the first call and then every
        ``bandwidth_every`` calls; ``bandwidth_`` holds those of the last step.

        Test afterwards on samples that no batch contained.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The batch (at least 2 samples).
        y : ignored

        Returns
        -------
        self
        """
        self._check_common_params()
        check_choice(self.variant, "variant", VARIANTS)
        check_choice(self.optimizer, "optimizer", OPTIMIZERS)
        lr = check_positive_float(self.learning_rate, "learning_rate")
        orthogonal = check_bool(self.orthogonal_slices, "orthogonal_slices")
        # "auto": one ascent in the data's coordinates
        geometries = ("euclidean",) if self._auto_whiten() else check_whiten(self.whiten)
        if len(geometries) > 1:
            raise ValueError("whiten='aggregate' needs fit: partial_fit follows one ascent, "
                             "in one geometry; give whiten=False or True.")
        state = getattr(self, "_ascent", None)
        fitted = is_fitted(self)
        X = self._validate_X(X, reset=not fitted)
        every = check_positive_int(self.bandwidth_every, "bandwidth_every")
        median = isinstance(self.bandwidth, str)
        if state is None:
            d = X.shape[1]
            m = _n_pairs(self.variant, self.n_slices, d)
            rng = as_generator(self.random_state)
            white = None
            if geometries[0] == "whitened":
                white = getattr(self, "whitening_", None) if fitted else None
                white = white if white is not None else whitening(X, WHITEN_COVARIANCE)
            if fitted:
                G, R = self.directions_, self.slices_
                if white is not None:
                    G, R, _ = _to_whitened(G, R, None, *white)
            else:
                G, R = _first_start(self.init, self.variant, m, d, rng, orthogonal)
            h = None if median else resolve_sliced_bandwidth(np.empty((0, m)), self.bandwidth)
            adam = self.optimizer == "adam"
            state = {
                "rng": rng,
                "white": white,
                "opt_g": _Adam(G.shape, scale_free=True) if adam else None,
                "opt_r": _Adam(R.shape, scale_free=True) if adam and self.variant == "rg"
                else None,
            }
            self.n_iter_ = 0
            self.whitening_ = white
        else:
            G, R, h = state["G"], state["R"], state["h"]
        white = state["white"]
        S = evaluate_score(self.model, X, "model")
        if white is not None:
            X, S = X @ white[0], S @ white[1]
        if median and (h is None or self.n_iter_ % every == 0):
            h = resolve_sliced_bandwidth(X @ G.T, self.bandwidth, random_state=state["rng"],
                                         samples=(X, G))
        learn_r = self.variant == "rg"
        _, gG, gR = sliced_value_and_grad(X, S, G, R, h, kernel=self.kernel,
                                          kernel_params=self.kernel_params,
                                          grad_slices=learn_r)
        G, R = _ascent_step(G, R, gG, gR if learn_r else None, state["opt_g"],
                            state["opt_r"], lr, orthogonal)
        state["G"], state["R"], state["h"] = G, R, h
        if white is not None:
            G, R, h = _from_whitened(G, R, h, *white)
        self.directions_, self.slices_, self.bandwidth_ = G, R, h
        self.candidates_ = (("stream" if white is None else "stream, whitened", G, R, h),)
        self.n_iter_ += 1
        self._ascent = state
        return self

    def _scores(self, X):
        """The model's scores at the rows of ``X``: evaluated once per sample, then
        shared by the search, the moment candidates and the tests of its parts."""
        return evaluate_score(self.model, X, "model")

    def _moment_mode(self):
        """``moment`` checked: False, True or ``"pooled"``."""
        if isinstance(self.moment, str):
            if self.moment != POOLED:
                raise ValueError(f"moment must be a bool or {POOLED!r}, got {self.moment!r}.")
            return POOLED
        return check_bool(self.moment, "moment")

    def _moment_candidates(self, X, S, learning=False):
        """``((MOMENT, u, u, None), (FOURTH, c, (A, B, radii), None))`` learned on ``X``
        (with scores ``S``) when ``moment``: ``u`` the moment direction and ``c`` the
        mean, each a (1, D) row, ``(A, B)`` the whitening of ``X`` and ``radii`` the
        :func:`radial_scale` of its whitened rows (:func:`fourth_reference`); else
        ``()``.
        ``learning``: ``X`` is the learning side of a test's own split or folds, where
        ``moment="pooled"`` leaves the fourth moment to the whole sample
        (:meth:`_pooled_fourth`, beside :meth:`_pooled_second`)."""
        mode = self._moment_mode()
        if not mode:
            return ()
        u = moment_direction(X, S)[None, :]
        if learning and mode == POOLED:
            return ((MOMENT, u, u.copy(), None),)
        A, B, _, radii = fourth_reference(X)
        c = X.mean(axis=0)[None, :]
        return ((MOMENT, u, u.copy(), None), (FOURTH, c, (A, B, radii), None))

    def _pooled(self):
        """Whether :meth:`test` tests the second and fourth moments once on its whole
        input."""
        return self._moment_mode() == POOLED and not is_fitted(self)

    def _pooled_fourth(self, X, S, rng, alpha, bootstrap):
        return pooled_fourth_test(self, X, S, rng, alpha, bootstrap)

    def _pooled_second(self, X, S, rng, alpha, bootstrap, device=None):
        return pooled_second_test(self, X, S, rng, alpha, bootstrap, device)

    def _prepare(self, X, rng, S=None):
        """Validated test sample, its scores and the statistics to compute.

        Returns ``(X, S, specs)`` with ``specs`` a list of ``(label, G, R, rows)``: each
        candidate set of directions (fitted, or learned on a split) with its
        bandwidth rows (one row, or the collection of ``test_bandwidth``). Not fitted,
        a given ``S`` holds the scores of ``X``, the validated whole sample.
        """
        self._check_common_params()
        if is_fitted(self):
            X = self._validate_X(X, reset=False)
            candidates = getattr(self, "candidates_", None) or (
                ("given", self.directions_, self.slices_, self.bandwidth_),)
            return X, self._scores(X) if S is None else S, self._specs(X, candidates, rng)
        if S is None:
            X = check_samples(X, min_samples=4)
            S = self._scores(X)
        split_rng, search_rng = rng.spawn(2)
        learn, test = split_indices(X.shape[0], self.train_size, split_rng)
        Xtr, Str = X[learn], S[learn]
        with on_training_part(Xtr, self.train_size):
            candidates = self._search(Xtr, search_rng, S=Str)[0].candidates
            candidates += self._moment_candidates(Xtr, Str, learning=True)
        return X[test], S[test], self._specs(X[test], candidates, rng)

    def _specs(self, X, candidates, rng):
        """``(label, G, R, rows)`` of every candidate set, tested on ``X``."""
        tb = self.test_bandwidth
        collection = is_collection(tb) or (tb is not None and not isinstance(tb, str)
                                           and np.ndim(tb) == 2)
        if collection:
            check_positive_int(self.n_bandwidths, "n_bandwidths")
        specs = []
        for name, G, R, h in candidates:
            if h is None:  # a moment candidate: no bandwidth
                rows = None
            elif collection:
                rows = resolve_sliced_bandwidths(X @ G.T, tb, self.n_bandwidths,
                                                 random_state=rng, name="test_bandwidth",
                                                 samples=(X, G))
            elif tb is not None:
                rows = resolve_sliced_bandwidth(X @ G.T, tb, random_state=rng,
                                                name="test_bandwidth",
                                                samples=(X, G))[None, :]
            else:
                rows = np.asarray(h)[None, :]
            specs.append((name, G, R, rows))
        return specs

    def _cross_fitted(self):
        """Whether :meth:`test` cross-fits: ``cv`` given and the test not fitted."""
        return self.cv is not None and not is_fitted(self)

    def _prepare_folds(self, X, rng, S=None):
        """``[(X_k, S_k, specs_k)]``: each fold tested with directions learned on the others
        (a given ``S`` holds the scores of ``X``, the validated whole sample)."""
        K = check_cv(self.cv)
        if S is None:
            X = check_samples(X, min_samples=2 * K)
            S = self._scores(X)
        split_rng, *fold_rngs = rng.spawn(K + 1)
        folds = crossfit_folds(X.shape[0], K, split_rng)
        ascent_size = _n_train(self.train_size, X.shape[0])
        starts = self.starts
        if starts is None and self.variant in AUTO_STARTS:
            starts = AUTO_STARTS[self.variant] + ("ica",)  # the folds learn on enough points
        out = []
        for test_idx, fold_rng in zip(folds, fold_rngs):
            search_rng, spec_rng = fold_rng.spawn(2)
            learn = np.ones(X.shape[0], dtype=bool)
            learn[test_idx] = False
            Xtr, Str = X[learn], S[learn]
            with _on_fold(Xtr, K):
                candidates = self._search(Xtr, search_rng, ascent_size, starts,
                                          Str)[0].candidates
                candidates += self._moment_candidates(Xtr, Str, learning=True)
            out.append((X[test_idx], S[test_idx],
                         self._specs(X[test_idx], candidates, spec_rng)))
        return out

    def _all_sums(self, X):
        """SlicedSteinSums of every statistic, and whether the test aggregates."""
        rng = as_generator(self.random_state).spawn(2)[0]
        X, S, device = self._whole_sample(X)  # device data: on host copies
        with single_blas() if device is not None else nullcontext():
            if self._cross_fitted():
                parts = self._prepare_folds(X, rng, S)
            else:
                parts = [self._prepare(X, rng, S)]
            sums = [moment_sums(_linear_terms(name, G, R, Xp, Sp)) if rows is None else
                    sliced_stein_sums(Xp, Sp, G, R, hk, kernel=self.kernel,
                                      kernel_params=self.kernel_params,
                                      max_memory=self.max_memory)
                    for Xp, Sp, specs in parts for name, G, R, rows in specs
                    for hk in ([None] if rows is None else rows)]
        if self._pooled():  # the whole sample's second and fourth moments, last (as in test)
            part_rng = as_generator(self.random_state).spawn(3)[2].spawn(2)[0]
            sums.append(second_moment_sums(X, S))
            sums.append(moment_sums(crossed_fourth_moment_terms(X, S, part_rng)))
        return sums, len(sums) > 1

    def _whole_sample(self, X):
        """``(X, S, device)``: a test that learns on its own input validates it and
        evaluates the model's score on all of it once; a fitted test returns
        ``(X, None, None)``, ``X`` validated against the fit.

        Data of another Array API library under scikit-learn's dispatch (a GPU) are
        validated and scored there, and ``X`` and ``S`` are their float64 host copies
        (the learning runs on the host); ``device`` is ``(X, S)`` on the device, where
        :meth:`_bootstrap_test` and :meth:`_pooled_second` compute their ``N^2``
        parts. Else ``device`` is None.
        """
        self._check_params()
        fitted = is_fitted(self)
        K = check_cv(self.cv) if self._cross_fitted() else 2
        min_samples = 2 if fitted else max(4, 2 * K)
        xp = namespace_of(X)
        if xp is not None:
            return self._device_copies(X, xp, min_samples, check_features=fitted)
        if fitted:  # validated against the fit (a list has no shape to size the bootstrap)
            return self._validate_X(X, reset=False), None, None
        X = check_samples(X, min_samples=min_samples)
        return X, self._scores(X), None

    def _device_copies(self, X, xp, min_samples, check_features=False):
        """``(X, S, (Xd, Sd))`` of device data ``X`` (namespace ``xp``): validated and
        scored on the device (``Xd``, ``Sd``), with their float64 host copies."""
        Xd = xp_check_samples(X, xp, min_samples=min_samples)
        if check_features and Xd.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {Xd.shape[1]} features, but {type(self).__name__} "
                             f"is expecting {self.n_features_in_} features as input.")
        Sd = xp_evaluate_score(self.model, Xd, xp, "model")
        host = [np.ascontiguousarray(to_host(A), dtype=np.float64) for A in (Xd, Sd)]
        return host[0], host[1], (Xd, Sd)

    def _test(self, X):
        rng = as_generator(self.random_state)
        prep_rng, boot_rng = rng.spawn(2)
        pooled = self._pooled()
        # moment="pooled": half the level to the learned statistics, a quarter each to
        # the whole sample's second and fourth moments (a weighted Bonferroni, valid
        # under any dependence)
        alpha = self.alpha * POOLED_SHARES[0] if pooled else self.alpha
        X, S, device = self._whole_sample(X)
        bootstrap = self._bootstrap_kind(X.shape[0])
        # device data: the learning on the host copies holds BLAS at one thread, as for
        # NumPy data (the decorator of test leaves device arrays alone)
        with single_blas() if device is not None else nullcontext():
            return self._test_parts(X, S, device, prep_rng, boot_rng, alpha, pooled, rng,
                                    bootstrap)

    def _bootstrap_kind(self, n):
        """The bootstrap that :meth:`test` draws for a sample of ``n`` points: ``bootstrap``,
        or for ``"auto"`` the Rademacher one where the learned statistics are tested on
        fewer than :data:`~skstein._bootstrap.AUTO_RADEMACHER_BELOW` points (the part of
        a split not learned on, each of the ``cv`` folds, a fitted test's input), else
        the multinomial one."""
        if self.bootstrap != "auto":
            return self.bootstrap
        if is_fitted(self):
            tested = n
        elif self._cross_fitted():
            tested = n // check_cv(self.cv)
        else:
            tested = n - train_count(self.train_size, n)
        return auto_bootstrap(tested)

    def _test_parts(self, X, S, device, prep_rng, boot_rng, alpha, pooled, rng, bootstrap):
        """:meth:`_test` after :meth:`_whole_sample`, with draws of the kind ``bootstrap``."""
        if self._cross_fitted():
            result = self._crossfit_test(X, prep_rng, boot_rng, alpha, S, device, bootstrap)
        else:
            Xp, Sp, specs = self._prepare(X, prep_rng, S)
            result = self._bootstrap_test(Xp, Sp, specs, boot_rng, alpha, device, bootstrap)
        if not pooled:
            return result
        fourth_rng, second_rng = rng.spawn(2)
        if device is None and self._pooled_monte_carlo(*X.shape):
            whole = self._pooled_by_model_samples(X, S, second_rng, fourth_rng,
                                                  rng.spawn(1)[0])
        else:
            whole = [self._pooled_second(X, S, second_rng, self.alpha * POOLED_SHARES[1],
                                         bootstrap, device),
                     self._pooled_fourth(X, S, fourth_rng, self.alpha * POOLED_SHARES[2],
                                         bootstrap)]
        return pooled_result(result, whole, self.alpha, folds=self._cross_fitted())

    def _pooled_monte_carlo(self, n, d):
        return pooled_monte_carlo(self, n, d)

    def _pooled_by_model_samples(self, X, S, second_rng, fourth_rng, model_rng):
        return pooled_by_model_samples(self, X, S, second_rng, fourth_rng, model_rng)

    def _crossfit_test(self, X, prep_rng, boot_rng, alpha, S, device, bootstrap):
        """The cross-fitted test at ``alpha``: one test per fold, their p-values combined
        (``device``: see :meth:`_whole_sample`; ``bootstrap``: the kind of the draws,
        :meth:`_bootstrap_kind`)."""
        self._check_common_params()
        combine = check_choice(self.combine, "combine", COMBINATIONS)
        parts = self._prepare_folds(X, prep_rng, S)
        # Bonferroni: each fold tested at alpha / K, so that its threshold is the combination's
        level = alpha / len(parts) if combine == "bonferroni" else alpha
        results = [self._bootstrap_test(Xk, Sk, specs, rng, level, device, bootstrap)
                   for (Xk, Sk, specs), rng in zip(parts, boot_rng.spawn(len(parts)))]
        return crossfit_result(results, combine, alpha)

    def _bootstrap_test(self, X, S, specs, boot_rng, alpha, device, bootstrap):
        """The bootstrap test of the statistics ``specs`` on ``X`` (aggregated if several).

        With ``device`` (:meth:`_whole_sample`), the sliced statistics' sums and forms are
        computed on its device, from ``X`` and ``S`` copied there. ``bootstrap``: the kind
        of the draws (:meth:`_bootstrap_kind`)."""
        n = X.shape[0]
        V = bootstrap_weights(bootstrap, n, self.n_bootstrap, boot_rng, self.statistic)
        sums, nulls, rows_all, labels = [], [], [], []
        for name, G, R, rows in specs:
            if rows is None:  # a moment candidate: the bootstrap-t of its terms' mean
                xi = _linear_terms(name, G, R, X, S)
                sums.append(StudentisedMean(xi))
                nulls.append(studentised_null(xi, V, bootstrap)[:, None])
                rows_all.append(None)
                labels.append(name)
                continue
            if device is None:
                s, null = sliced_sums_and_forms(X, S, G, R, rows, V, kernel=self.kernel,
                                                kernel_params=self.kernel_params,
                                                max_memory=self.max_memory)
            else:
                s, null = xp_sliced_sums_and_forms(
                    on_device_of(X, device[0]), on_device_of(S, device[0]), G, R, rows, V,
                    kernel=self.kernel, kernel_params=self.kernel_params,
                    max_memory=self.max_memory)
            sums += s
            nulls.append(null)
            rows_all.append(rows)
            labels += [name if len(rows) == 1 else f"{name}, factor {k}"
                       for k in range(len(rows))]
        null = np.concatenate(nulls, axis=1)
        width = max((r.shape[1] for r in rows_all if r is not None), default=1)
        rows_all = np.concatenate([np.full((1, width), np.nan) if r is None else r
                                   for r in rows_all], axis=0)
        if self.statistic == "v":
            null += (V * V) @ np.stack([s.diag for s in sums], axis=1)
        stats = np.array([s.statistic(self.statistic) for s in sums])
        method = (f"maxSKSD-{self.variant} ({self.kernel}, {self.statistic}-statistic, "
                  f"{bootstrap} bootstrap")
        common = dict(alpha=float(alpha), n_samples=n, bootstrap=bootstrap,
                      n_bootstrap=int(self.n_bootstrap))
        if len(stats) == 1:
            pvalue = bootstrap_pvalue(stats[0], null[:, 0])
            return GOFTestResult(
                statistic=float(stats[0]), pvalue=float(pvalue),
                threshold=bootstrap_threshold(null[:, 0], alpha),
                reject=bool(pvalue <= alpha), method=method + ")",
                bandwidth=rows_all[0], null_distribution=null[:, 0], **common)
        what = []
        if len(specs) > 1:
            what.append(f"{len(specs)} direction sets")
        factors = [len(rows) for _, _, _, rows in specs if rows is not None]
        if factors and factors[0] > 1:
            what.append(f"{factors[0]} bandwidth factors")
        return aggregated_result(stats, null,
                                 method + ", aggregated over " + " x ".join(what) + ")",
                                 rows_all, labels=tuple(labels), **common)

    def _discrepancy(self, X):
        sums, aggregated = self._all_sums(X)
        values = np.array([s.statistic(self.statistic) for s in sums])
        return values if aggregated else float(values[0])

    def _score(self, X):
        sums, _ = self._all_sums(X)
        return float(max(s.power_criterion() for s in sums))
