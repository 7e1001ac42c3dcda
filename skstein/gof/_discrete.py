"""The discrete-operator path of :class:`KSDTest` (models with ``n_values``).

:class:`~skstein.KSDTest` hands over here, at the top of ``fit``, ``test``,
``discrepancy`` and ``score``, when its model is discrete or ``operator`` names a
discrete Stein operator; the computation is :mod:`skstein.discrete`'s.
"""

import warnings

import numpy as np

from .._bootstrap import (
    BOOTSTRAPS,
    block_forms,
    bootstrap_forms,
    bootstrap_null,
    bootstrap_pvalue,
    bootstrap_threshold,
    bootstrap_weights,
)
from .._estimator import is_fitted
from .._random import as_generator
from .._result import GOFTestResult
from .._validation import check_alpha, check_choice, check_no_whiten, check_positive_int
from ..distributions import rvs_kind
from ..discrepancy import is_collection
from ..discrete import (
    DISCRETE_KERNELS,
    check_discrete_samples,
    discrete_kernel_collection,
    discrete_stein_row_blocks,
    discrete_stein_sums,
    discrete_stein_sums_many,
    has_exact_ratios,
    is_discrete_kernel,
    model_n_values,
    operator_coefficients,
    prepare_discrete,
    resolve_operator,
    shares_one_pass,
)
from ._base import aggregated_result
from ._common import check_monte_carlo, simulated_null_result

__all__ = ["discrete_operator", "resolve_kernel", "fit", "store_fit", "test", "discrepancy", "score"]


def discrete_operator(est):
    """The estimator's discrete operator, or None when its model is continuous."""
    return resolve_operator(est.model, getattr(est, "operator", None), "model")


def _check_params(est):
    check_no_whiten(est)
    check_choice(est.kernel, "kernel", tuple(DISCRETE_KERNELS))
    check_choice(est.statistic, "statistic", ("u", "v"))
    check_choice(est.bootstrap, "bootstrap", BOOTSTRAPS + ("auto", "monte-carlo"))
    check_monte_carlo(est)
    check_positive_int(est.n_bootstrap, "n_bootstrap")
    alpha = check_alpha(est.alpha)
    check_positive_int(est.max_memory, "max_memory")
    if est.n_bootstrap < int(np.ceil(1.0 / alpha)) - 1:
        warnings.warn(
            f"n_bootstrap={est.n_bootstrap} is too small to ever reject at alpha={alpha}; use "
            f"at least {int(np.ceil(1.0 / alpha)) - 1}.", UserWarning, stacklevel=4)
    if not has_exact_ratios(est.model):
        raise TypeError(
            f"KSDTest needs the exact probability ratios of a discrete model "
            f"(log_ratio(X, shift)); {type(est.model).__name__} has none. For a latent model "
            "whose ratios are estimated from posterior draws, compare two models with "
            "RelativeKSDTest.")


def resolve_kernel(est, X, rng, models=("model",)):
    """``(X, n_values, kernel)`` of the estimator's discrete kernel, resolved on ``X``.

    ``X`` is validated against each of the estimator's ``models`` (attribute names) in
    turn; the first resolves the bandwidth, the others take it. The kernel is a tuple
    for a bandwidth collection (``bandwidth="aggregate"``).
    """
    collection = is_collection(est.bandwidth)
    bandwidth = 1.0 if collection else est.bandwidth  # a collection is resolved below
    for name in models:
        X, nvals, kern = prepare_discrete(X, getattr(est, name), est.kernel, bandwidth,
                                          est.kernel_params, rng, name)
        bandwidth = kern.bandwidth
    if collection:
        kern = discrete_kernel_collection(X, est.kernel, nvals, est.n_bandwidths,
                                          est.kernel_params, rng)
    return X, nvals, kern


def fit(est, X):
    """Resolve the bandwidth (or the collection) of the discrete kernel on ``X``."""
    operator = discrete_operator(est)
    _check_params(est)
    rng = as_generator(est.random_state)
    X, _, kern = resolve_kernel(est, X, rng)
    return store_fit(est, X, operator, kern)


def store_fit(est, X, operator, kern):
    """Set on ``est`` what ``fit`` resolved on ``X``; returns ``est``.

    ``operator_``, ``kernel_`` (a tuple for a collection), ``bandwidth_`` (then an
    array, one per kernel) and ``n_features_in_``.
    """
    est.n_features_in_ = X.shape[1]
    est.operator_ = operator
    est.bandwidth_ = (np.array([k.bandwidth for k in kern]) if isinstance(kern, tuple)
                      else kern.bandwidth)
    est.kernel_ = kern
    return est


def _prepare(est, X, rng):
    """Validated X, n_values, kernel, operator and the operator's coefficients."""
    operator = discrete_operator(est)
    _check_params(est)
    kern = getattr(est, "kernel_", None)
    if is_fitted(est) and is_discrete_kernel(kern):
        X = check_discrete_samples(X)
        if X.shape[1] != est.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(est).__name__} is "
                             f"expecting {est.n_features_in_} features as input.")
        nvals = model_n_values(est.model, X.shape[1])
        X = check_discrete_samples(X, nvals)
    else:
        X, nvals, kern = resolve_kernel(est, X, rng)
    C, _ = operator_coefficients(est.model, X, operator, model_score="exact")
    return X, nvals, kern, operator, C


def null_kind(est, n, operator):
    """The null of a test of ``n`` points: ``bootstrap``; for ``"auto"`` the Monte Carlo
    null with the difference operator of a model that samples exactly (whose wild
    bootstrap runs far above its level where a state is much rarer than its neighbour),
    the draws of :func:`~skstein._bootstrap.auto_bootstrap` otherwise."""
    if est.bootstrap == "auto" and operator == "difference" \
            and rvs_kind(est.model) == "exact":
        return "monte-carlo"
    return est.bootstrap if est.bootstrap == "monte-carlo" else est._bootstrap_kind(n)


def test(est, X):
    """The discrete KSD test on ``X``: statistic, bootstrap null, decision."""
    rng = as_generator(est.random_state)
    bw_rng, boot_rng = rng.spawn(2)
    X, nvals, kern, operator, C = _prepare(est, X, bw_rng)
    if null_kind(est, X.shape[0], operator) == "monte-carlo":
        return _monte_carlo_test(est, X, nvals, kern, operator, C, boot_rng)
    if isinstance(kern, tuple):
        return _aggregated_test(est, X, nvals, kern, operator, C, boot_rng)
    n = X.shape[0]
    in_memory = 8 * n * n <= est.max_memory
    sums = discrete_stein_sums(X, C, kern, operator, nvals, return_matrix=in_memory,
                               max_memory=est.max_memory)
    stat = sums.statistic(est.statistic)
    if in_memory:
        H = sums.upper
    else:
        H = discrete_stein_row_blocks(X, C, kern, operator, nvals, max_memory=est.max_memory)
    kind = est._bootstrap_kind(n)
    null = bootstrap_null(H, kind, est.n_bootstrap, boot_rng,
                          statistic=est.statistic, diag=sums.diag, n=n)
    pvalue = bootstrap_pvalue(stat, null)
    return GOFTestResult(
        statistic=float(stat),
        pvalue=float(pvalue),
        threshold=bootstrap_threshold(null, est.alpha),
        reject=bool(pvalue <= est.alpha),
        alpha=float(est.alpha),
        method=(f"discrete KSD ({operator}, {kern.name}, {est.statistic}-statistic, "
                f"{kind} bootstrap)"),
        n_samples=n,
        bootstrap=kind,
        n_bootstrap=int(est.n_bootstrap),
        bandwidth=kern.bandwidth,
        null_distribution=null,
    )


def _aggregated_test(est, X, nvals, kernels, operator, C, boot_rng):
    """The test over a bandwidth collection: one bootstrap, min-p level correction."""
    n = X.shape[0]
    kind = est._bootstrap_kind(n)
    V = bootstrap_weights(kind, n, est.n_bootstrap, boot_rng, est.statistic)
    if shares_one_pass(kernels):  # the one-hot kernels' passes share one pass over the pairs
        many, null = discrete_stein_sums_many(X, C, kernels, operator, nvals, V,
                                              max_memory=est.max_memory)
        stats = np.array([sums.statistic(est.statistic) for sums in many])
        if est.statistic == "v":
            null += (V * V) @ np.column_stack([sums.diag for sums in many])
    else:
        stats, null = _kernel_by_kernel(est, X, nvals, kernels, operator, C, V)
    method = (f"discrete KSD ({operator}, {kernels[0].name}, {est.statistic}-statistic, "
              f"{kind} bootstrap, aggregated over {len(kernels)} bandwidths)")
    return aggregated_result(stats, null, method, [kern.bandwidth for kern in kernels],
                             alpha=est.alpha,
                             n_samples=n, bootstrap=kind,
                             n_bootstrap=int(est.n_bootstrap))


def _kernel_sums(est, X, C, kernels, operator, nvals):
    """The ``SteinSums`` of each kernel on ``X`` (one pass where the kernels share one)."""
    if shares_one_pass(kernels):
        return discrete_stein_sums_many(X, C, kernels, operator, nvals,
                                        max_memory=est.max_memory)[0]
    return [discrete_stein_sums(X, C, k, operator, nvals, max_memory=est.max_memory)
            for k in kernels]


def _statistics(est, X, C, kernels, operator, nvals):
    """The statistic of each kernel on ``X``."""
    return np.array([sums.statistic(est.statistic)
                     for sums in _kernel_sums(est, X, C, kernels, operator, nvals)])


def _monte_carlo_test(est, X, nvals, kern, operator, C, rng):
    """The test whose null is the statistic on ``n_bootstrap`` samples of the model,
    each computed as on ``X`` (an unfitted test resolves its bandwidths on each): an
    exact level at any ``n``."""
    n, d = X.shape
    kernels = kern if isinstance(kern, tuple) else (kern,)
    fixed = is_fitted(est) and is_discrete_kernel(getattr(est, "kernel_", None))
    stats = _statistics(est, X, C, kernels, operator, nvals)
    null = np.empty((int(est.n_bootstrap), len(kernels)))
    for b, child in enumerate(rng.spawn(int(est.n_bootstrap))):
        draw_rng, bw_rng = child.spawn(2)
        Y = check_discrete_samples(est.model.rvs(n, random_state=draw_rng), nvals,
                                   name="model.rvs(...)")
        if Y.shape != (n, d):
            raise ValueError(f"model.rvs({n}) returned shape {Y.shape}; the Monte Carlo "
                             f"null needs ({n}, {d}).")
        kY = kernels
        if not fixed:
            _, _, kY = resolve_kernel(est, Y, bw_rng)
            kY = kY if isinstance(kY, tuple) else (kY,)
        CY, _ = operator_coefficients(est.model, Y, operator, model_score="exact")
        null[b] = _statistics(est, Y, CY, kY, operator, nvals)
    name = (f"discrete KSD ({operator}, {kernels[0].name}, {est.statistic}-statistic, "
            f"Monte Carlo null of {int(est.n_bootstrap)} model samples")
    fields = dict(n_samples=n, bootstrap="monte-carlo", n_bootstrap=int(est.n_bootstrap))
    if not isinstance(kern, tuple):
        return simulated_null_result(stats[0], null[:, 0], alpha=est.alpha,
                                     method=name + ")", bandwidth=kern.bandwidth,
                                     independent=True, **fields)
    return aggregated_result(stats, null, name + f", aggregated over {len(kernels)} "
                             "bandwidths)", [k.bandwidth for k in kernels], alpha=est.alpha,
                             independent=True, **fields)


def _kernel_by_kernel(est, X, nvals, kernels, operator, C, V):
    """The statistic and bootstrap forms of each kernel, one pass each."""
    n = X.shape[0]
    in_memory = 8 * n * n <= est.max_memory
    stats = np.empty(len(kernels))
    null = np.zeros((V.shape[0], len(kernels)))
    for li, kern in enumerate(kernels):
        sums = discrete_stein_sums(X, C, kern, operator, nvals, return_matrix=in_memory,
                                   max_memory=est.max_memory)
        stats[li] = sums.statistic(est.statistic)
        if in_memory:
            null[:, li] = bootstrap_forms(sums.upper, V)
        else:
            for a, b, H in discrete_stein_row_blocks(X, C, kern, operator, nvals,
                                                     max_memory=est.max_memory):
                null[:, li] += block_forms(H, V, a, b)
        if est.statistic == "v":
            null[:, li] += (V * V) @ sums.diag
    return stats, null


def _sums(est, X):
    """The discrete ``SteinSums`` of each kernel (one unless a collection)."""
    X, nvals, kern, operator, C = _prepare(est, X, as_generator(est.random_state))
    kernels = kern if isinstance(kern, tuple) else (kern,)
    return _kernel_sums(est, X, C, kernels, operator, nvals), isinstance(kern, tuple)


def discrepancy(est, X):
    """The squared discrete KSD of ``X`` to the model (an array for a collection)."""
    sums, aggregated = _sums(est, X)
    values = np.array([s.statistic(est.statistic) for s in sums])
    return values if aggregated else float(values[0])


def score(est, X):
    """The power criterion of the discrete KSD on ``X`` (the largest over a collection)."""
    sums, _ = _sums(est, X)
    return float(max(s.power_criterion() for s in sums))
