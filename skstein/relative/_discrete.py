"""The discrete-operator path of :class:`RelativeKSDTest` (models with ``n_values``).

:class:`~skstein.RelativeKSDTest` hands over here, at the top of ``fit`` and
``test``, when its models are discrete or ``operator`` names a discrete Stein
operator. Latent discrete models (e.g. :class:`~skstein.distributions.LDA`) enter
through posterior estimates of their ratios (the LKSD test).
"""

import numpy as np

from .._estimator import is_fitted
from .._random import as_generator
from .._validation import check_alpha, check_choice, check_no_whiten, check_positive_int
from ..discrete import (
    DISCRETE_KERNELS,
    check_discrete_samples,
    discrete_stein_sums,
    discrete_stein_sums_many,
    is_discrete_kernel,
    is_discrete_model,
    model_n_values,
    operator_coefficients,
    resolve_operator,
    shares_one_pass,
)
from ..gof._discrete import resolve_kernel, store_fit
from ._latent import MODEL_SCORES
from ._stats import VARIANCES, aggregated_result, difference_sums, result_from_sums

__all__ = ["discrete_operator", "fit", "test", "relative_sums"]


def discrete_operator(est):
    """The estimator's discrete operator, or None when both models are continuous."""
    operator = getattr(est, "operator", None)
    discrete = [is_discrete_model(est.model_p), is_discrete_model(est.model_q)]
    if discrete[0] != discrete[1]:
        raise TypeError(
            "model_p and model_q must both be discrete (with n_values) or both continuous; "
            f"got {type(est.model_p).__name__} and {type(est.model_q).__name__}.")
    resolve_operator(est.model_q, operator, "model_q")
    return resolve_operator(est.model_p, operator, "model_p")


def _check_params(est):
    if est.discrepancy != "ksd":
        raise ValueError(f"discrepancy={est.discrepancy!r} is not available for discrete models; "
                         "use discrepancy='ksd'.")
    check_choice(est.kernel, "kernel", tuple(DISCRETE_KERNELS))
    check_choice(est.variance, "variance", VARIANCES)
    check_choice(est.model_score, "model_score", MODEL_SCORES)
    check_alpha(est.alpha)
    check_positive_int(est.n_posterior_samples, "n_posterior_samples")
    check_positive_int(est.burn_in, "burn_in", minimum=0)
    check_positive_int(est.max_memory, "max_memory")
    check_no_whiten(est)


def _n_values(est, d):
    nv_p = model_n_values(est.model_p, d, "model_p")
    nv_q = model_n_values(est.model_q, d, "model_q")
    if not np.array_equal(nv_p, nv_q):
        raise ValueError(f"model_p and model_q must have the same domain; their n_values are "
                         f"{nv_p} and {nv_q}.")
    return nv_p


def _prepare(est, X, rng, use_fitted=True):
    """``(X, n_values, kernel)``; the kernel is a tuple for a bandwidth collection."""
    X0 = check_discrete_samples(X, min_samples=3)
    nvals = _n_values(est, X0.shape[1])
    kern = getattr(est, "kernel_", None)
    if use_fitted and is_fitted(est) and is_discrete_kernel(kern):
        if X0.shape[1] != est.n_features_in_:
            raise ValueError(f"X has {X0.shape[1]} features, but {type(est).__name__} is "
                             f"expecting {est.n_features_in_} features as input.")
        return check_discrete_samples(X0, nvals, min_samples=3), nvals, kern
    X0, _, kern = resolve_kernel(est, X0, rng, models=("model_q", "model_p"))
    return X0, nvals, kern


def fit(est, X):
    """Resolve the bandwidth of the discrete kernel on ``X``; returns ``est``."""
    operator = discrete_operator(est)
    _check_params(est)
    rng = as_generator(est.random_state).spawn(4)[0]
    X, _, kern = _prepare(est, X, rng, use_fitted=False)
    return store_fit(est, X, operator, kern)


def relative_sums(X, C_p, C_q, kernel, operator, n_values, max_memory):
    """``(U_p, U_q, T, r, scale)`` of the difference of two discrete Stein matrices."""
    sp = discrete_stein_sums(X, C_p, kernel, operator, n_values, max_memory=max_memory)
    sq = discrete_stein_sums(X, C_q, kernel, operator, n_values, max_memory=max_memory)
    scale = max(float(np.mean(np.abs(sp.rowsums))), float(np.mean(np.abs(sq.rowsums))))
    scale /= X.shape[0] - 1
    return (sp.statistic("u"), sq.statistic("u"), sp.offdiag_sum - sq.offdiag_sum,
            sp.rowsums - sq.rowsums, scale)


def _collection_sums(X, C, kernels, operator, n_values, max_memory):
    """The ``SteinSums`` of each kernel of a collection: the one-hot kernels' passes in
    one pass over the pairs (:func:`~skstein.discrete.discrete_stein_sums_many`)."""
    if shares_one_pass(kernels):
        return discrete_stein_sums_many(X, C, kernels, operator, n_values,
                                        max_memory=max_memory)[0]
    return [discrete_stein_sums(X, C, k, operator, n_values, max_memory=max_memory)
            for k in kernels]


def test(est, X):
    """The relative discrete KSD test on ``X``."""
    operator = discrete_operator(est)
    _check_params(est)
    bw_rng, p_rng, q_rng, threshold_rng = as_generator(est.random_state).spawn(4)
    X, nvals, kern = _prepare(est, X, bw_rng)
    coefs, latent = [], False
    for name, rng in (("model_p", p_rng), ("model_q", q_rng)):
        C, post = operator_coefficients(getattr(est, name), X, operator,
                                        model_score=est.model_score,
                                        n_posterior_samples=est.n_posterior_samples,
                                        burn_in=est.burn_in, random_state=rng, name=name)
        coefs.append(C)
        latent = latent or post
    if isinstance(kern, tuple):  # a bandwidth collection: the max-z test
        method = (f"relative {'L' if latent else ''}KSD ({operator}, {kern[0].name}, "
                  f"{est.variance} variance, max over {len(kern)} bandwidths)")
        sums_p, sums_q = (_collection_sums(X, C, kern, operator, nvals, est.max_memory)
                          for C in coefs)
        return aggregated_result(difference_sums(sums_p, sums_q, est.variance), est.alpha,
                                 method, np.array([k.bandwidth for k in kern]), est.variance,
                                 threshold_rng)
    sums = relative_sums(X, coefs[0], coefs[1], kern, operator, nvals, est.max_memory)
    method = (f"relative {'L' if latent else ''}KSD ({operator}, {kern.name}, {est.variance} "
              "variance)")
    return result_from_sums(sums, X.shape[0], est.variance, est.alpha, method, kern.bandwidth)
