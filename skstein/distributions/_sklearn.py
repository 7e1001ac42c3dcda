"""Distributions from fitted scikit-learn density estimators."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._validation import SUPPORTED_ESTIMATORS, SUPPORTED_SCALERS

from .discrete import BinaryRBM
from .gaussian import Gaussian
from .lda import LDA
from .mixture import AffineTransformed, GaussianMixture
from .ppca import PPCA

__all__ = ["from_estimator", "SUPPORTED_ESTIMATORS", "SUPPORTED_SCALERS"]



def from_estimator(estimator):
    """The model of a fitted scikit-learn density estimator, with its exact score.

    The returned distribution's ``grad_logpdf`` is the gradient of the estimator's
    ``score_samples`` and its ``logpdf`` equals ``score_samples`` (up to an additive
    constant for ``BayesianGaussianMixture``); ``rvs`` samples from it.

    Parameters
    ----------
    estimator : fitted estimator
        One of

        * ``sklearn.mixture.GaussianMixture`` (any ``covariance_type``) ->
          :class:`~skstein.distributions.GaussianMixture`;
        * ``sklearn.mixture.BayesianGaussianMixture`` -> a Gaussian mixture whose
          log density is ``score_samples`` up to a constant: the variational
          expectations in ``score_samples`` act as effective component weights
          :math:`\\propto \\exp(c_k) / \\det(\\Sigma_k)^{-1/2}`, with :math:`c_k`
          the component's log term at its mean; they differ slightly from
          ``weights_``, which ``BayesianGaussianMixture.sample`` uses;
        * ``sklearn.neighbors.KernelDensity`` with ``kernel="gaussian"`` and the
          Euclidean metric -> a Gaussian mixture centred on the training points
          (sample weights respected);
        * ``sklearn.decomposition.PCA`` -> its probabilistic PCA model
          (Tipping & Bishop), a :class:`~skstein.distributions.PPCA` with a mean (a
          :class:`~skstein.distributions.Gaussian` when ``noise_variance_`` is 0);
        * ``sklearn.decomposition.FactorAnalysis`` -> a
          :class:`~skstein.distributions.PPCA` with diagonal noise;
        * ``sklearn.neural_network.BernoulliRBM`` -> a discrete
          :class:`~skstein.distributions.BinaryRBM` on binary vectors, whose log
          ratios are exact differences of the estimator's free energy;
        * ``sklearn.decomposition.LatentDirichletAllocation`` -> a latent discrete
          :class:`~skstein.distributions.LDA` with topics ``components_`` normalised to
          sum to one (the mean of the fitted variational Dirichlet) and prior
          ``doc_topic_prior_``; its data are documents as rows of word ids (the
          estimator itself is fitted on their bag-of-words counts);
        * a ``sklearn.pipeline.Pipeline`` of elementwise-affine scalers
          (``StandardScaler``, ``MinMaxScaler`` without clipping, ``MaxAbsScaler``,
          ``RobustScaler``, or ``"passthrough"``) ending in one of the above ->
          :class:`~skstein.distributions.AffineTransformed`, the chain rule applied.
          As ``Pipeline.score_samples`` omits the Jacobian of the scalers, ``logpdf``
          differs from it by the constant :math:`\\sum_d \\log|a_d|`.

    Returns
    -------
    distribution
        A continuous model (with ``grad_logpdf``) or, for ``BernoulliRBM`` and
        ``LatentDirichletAllocation``, a discrete one (with ``n_values``; see
        :mod:`skstein.discrete`).

    Raises
    ------
    TypeError
        For an unsupported estimator or pipeline step.
    sklearn.exceptions.NotFittedError
        For an estimator that is not fitted.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.mixture import GaussianMixture
    >>> from skstein.distributions import from_estimator
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> model = from_estimator(GaussianMixture(2, random_state=0).fit(X))
    >>> model.grad_logpdf(X[:3]).shape
    (3, 2)
    """
    from sklearn.pipeline import Pipeline

    if isinstance(estimator, Pipeline):
        return _from_pipeline(estimator)
    name = type(estimator).__name__
    builder = _BUILDERS.get(_sklearn_class(estimator))
    if builder is None:
        raise TypeError(
            f"from_estimator supports fitted {', '.join(SUPPORTED_ESTIMATORS)} and Pipelines of "
            f"{', '.join(SUPPORTED_SCALERS)} ending in one of them; got {name}."
        )
    check_is_fitted(estimator)
    return builder(estimator)


def _sklearn_class(est):
    """The first scikit-learn class in the estimator's MRO (so subclasses work)."""
    for cls in type(est).__mro__:
        if cls.__module__.startswith("sklearn.") and cls.__name__ in SUPPORTED_ESTIMATORS:
            return cls.__name__
    return None


def _gaussian_mixture(est):
    return GaussianMixture(est.weights_, est.means_, est.covariances_, est.covariance_type)


def _bayesian_gaussian_mixture(est):
    base = GaussianMixture(np.ones(est.means_.shape[0]), est.means_, est.covariances_,
                           est.covariance_type)
    # score_samples(x) = logsumexp_k(c_k - ||P_k^T (x - mu_k)||^2 / 2): c_k is the k-th
    # weighted log term at mu_k. As a Gaussian mixture: log w_k = c_k - log det P_k + const.
    # (scikit-learn exposes these terms only through its private estimator method.)
    terms = est._estimate_weighted_log_prob(est.means_)
    c = np.diagonal(terms).copy()
    logdet = np.log(np.diagonal(base._prec_chol, axis1=1, axis2=2)).sum(axis=1)
    logw = c - logdet
    w = np.exp(logw - logw.max())
    return GaussianMixture(w, est.means_, est.covariances_, est.covariance_type)


def _kernel_density(est):
    if est.kernel != "gaussian":
        raise TypeError(
            "from_estimator supports KernelDensity with kernel='gaussian' only, "
            f"got {est.kernel!r}."
        )
    if est.metric != "euclidean":
        raise TypeError(f"from_estimator supports KernelDensity with the euclidean metric only, "
                        f"got {est.metric!r}.")
    data = np.asarray(est.tree_.data, dtype=np.float64)
    sw = est.tree_.sample_weight
    weights = np.ones(data.shape[0]) if sw is None else np.asarray(sw, dtype=np.float64)
    h2 = float(est.bandwidth_) ** 2
    return GaussianMixture(weights, data, np.full(data.shape[0], h2), "spherical")


def _pca(est):
    sigma2 = float(est.noise_variance_)
    if sigma2 <= 0:
        return Gaussian(est.mean_, est.get_covariance())
    components = est.components_
    exp_var = est.explained_variance_
    if est.whiten:
        components = components * np.sqrt(exp_var[:, None])
    # PCA.get_covariance() = components^T diag(max(exp_var - sigma2, 0)) components + sigma2 I
    W = components.T * np.sqrt(np.maximum(exp_var - sigma2, 0.0))
    return PPCA(W, sigma2, mean=est.mean_)


def _factor_analysis(est):
    return PPCA(est.components_.T, est.noise_variance_, mean=est.mean_)


def _bernoulli_rbm(est):
    return BinaryRBM(est.components_, est.intercept_hidden_, est.intercept_visible_)


def _latent_dirichlet_allocation(est):
    return LDA(est.components_, est.doc_topic_prior_)


_BUILDERS = {
    "GaussianMixture": _gaussian_mixture,
    "BayesianGaussianMixture": _bayesian_gaussian_mixture,
    "KernelDensity": _kernel_density,
    "PCA": _pca,
    "FactorAnalysis": _factor_analysis,
    "BernoulliRBM": _bernoulli_rbm,
    "LatentDirichletAllocation": _latent_dirichlet_allocation,
}


def _scaler_affine(step, d):
    """(a, b) with transform(x) = a * x + b for a fitted elementwise-affine scaler."""
    name = type(step).__name__
    check_is_fitted(step)
    ones, zeros = np.ones(d), np.zeros(d)
    if name == "StandardScaler":
        a = ones if step.scale_ is None else 1.0 / step.scale_
        b = -step.mean_ * a if step.with_mean else zeros
        return a, b
    if name == "MinMaxScaler":
        if step.clip:
            raise TypeError(
                "MinMaxScaler(clip=True) is not affine; from_estimator needs clip=False.")
        return step.scale_, step.min_
    if name == "MaxAbsScaler":
        return 1.0 / step.scale_, zeros
    if name == "RobustScaler":
        a = ones if step.scale_ is None else 1.0 / step.scale_
        b = zeros if step.center_ is None else -step.center_ * a
        return a, b
    raise TypeError(
        "from_estimator supports Pipelines whose transforming steps are "
        f"{', '.join(SUPPORTED_SCALERS)}"
        f" or 'passthrough'; got {name}."
    )


def _from_pipeline(pipe):
    steps = [s for _, s in pipe.steps]
    base = from_estimator(steps[-1])
    if getattr(base, "n_values", None) is not None:
        raise TypeError(f"from_estimator does not support Pipelines ending in the discrete model "
                        f"{type(steps[-1]).__name__}; give the fitted estimator itself.")
    d = getattr(base, "dim", None)
    a, b = np.ones(d), np.zeros(d)
    for step in steps[:-1]:
        if step is None or (isinstance(step, str) and step == "passthrough"):
            continue
        a_k, b_k = _scaler_affine(step, d)
        a, b = a_k * a, a_k * b + b_k
    return AffineTransformed(base, a, b)
