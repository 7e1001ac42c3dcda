"""The relative MMD test of Bounliphone et al. (2016)."""

import numpy as np
from sklearn.base import BaseEstimator

from .._docstrings import fill_doc
from .._estimator import is_fitted
from .._random import as_generator
from .._result import RelativeTestResult
from .._validation import (check_alpha, check_positive_int, check_samples,
                           sklearn_model_hint)
from .._xp import host_single_blas
from ..discrepancy import resolve_bandwidth
from ..distributions import rvs_kind
from ..gof._common import FitMethod
from ..kernels import RBF
from ._base import RelativeMixin
from ._stats import decide

__all__ = ["RelativeMMDTest"]


@fill_doc
class RelativeMMDTest(FitMethod, RelativeMixin, BaseEstimator):
    r"""Relative MMD test of Bounliphone et al. (2016): is model Q closer to the data than P.

    Tests H0: :math:`\mathrm{MMD}^2(P, R) \le \mathrm{MMD}^2(Q, R)` against H1: Q is
    closer, from samples :math:`Y^P \sim P` (size :math:`m_P`), :math:`Y^Q \sim Q`
    (size :math:`m_Q`) and the data :math:`X \sim R` (size :math:`n`), with a Gaussian
    kernel. The statistic is the difference of the unbiased estimates,
    :math:`\hat D = \widehat{\mathrm{MMD}}^2_u(Y^P, X) - \widehat{\mathrm{MMD}}^2_u(Y^Q, X)`.

    Variance estimator (first-order, from the Hoeffding projections of the three
    independent samples). With :math:`\bar k_A(y) = ` the mean kernel value of
    :math:`y` against sample :math:`A` (itself excluded),

    .. math::

        g_P(y) = 2\bar k_{Y^P}(y) - 2\bar k_X(y), \quad
        g_Q(y) = 2\bar k_{Y^Q}(y) - 2\bar k_X(y), \quad
        g_R(x) = 2\bar k_{Y^Q}(x) - 2\bar k_{Y^P}(x),

    :math:`\widehat{\mathrm{Var}}(\hat D) = s^2(g_P)/m_P + s^2(g_Q)/m_Q + s^2(g_R)/n`
    with :math:`s^2` the sample variances (ddof=1) over each sample. This is the
    leading term of the covariance of the two MMD estimates derived by Bounliphone
    et al.; the result's ``sigma`` is :math:`\sqrt{n\,\widehat{\mathrm{Var}}(\hat D)}`.
    H0 is rejected when :math:`\hat D / \widehat{\mathrm{Var}}^{1/2} \ge z_{1-\alpha}`.

    Parameters
    ----------
    model_p, model_q : distribution with ``rvs`` or array-like of shape (m, d)
        The models, as samplers (``rvs(n, random_state)``) or as samples already drawn.
    bandwidth : float or "median", default="median"
        Gaussian kernel bandwidth :math:`h` (:math:`k = \exp(-\|x-y\|^2/(2h^2))`);
        ``"median"`` uses the median heuristic on the data.
    n_model_samples : int, default=None
        Samples drawn from each model with ``rvs``; the data size when None.
    alpha : float, default=0.05
        Significance level.
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the model samples.

    Attributes
    ----------
    bandwidth_ : float
        The bandwidth resolved by :meth:`fit`.
    n_features_in_ : int

    References
    ----------
    .. [1] W. Bounliphone, E. Belilovsky, M. Blaschko, I. Antonoglou, A. Gretton.
       "A Test of Relative Similarity for Model Selection in Generative Models",
       ICLR 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from skstein import RelativeMMDTest
    >>> from skstein.distributions import Gaussian
    >>> X = np.random.default_rng(0).normal(size=(300, 2))
    >>> p, q = Gaussian(np.full(2, 1.0)), Gaussian(np.zeros(2))
    >>> bool(RelativeMMDTest(p, q, random_state=0).test(X).reject)
    True
    """

    def __init__(self, model_p, model_q, *, bandwidth="median", n_model_samples=None,
                 alpha=0.05, random_state=None):
        self.model_p = model_p
        self.model_q = model_q
        self.bandwidth = bandwidth
        self.n_model_samples = n_model_samples
        self.alpha = alpha
        self.random_state = random_state

    def _check_params(self):
        check_alpha(self.alpha)
        if self.n_model_samples is not None:
            check_positive_int(self.n_model_samples, "n_model_samples", minimum=3)
        for name in ("model_p", "model_q"):
            model = getattr(self, name)
            if rvs_kind(model) is None and not _is_sample_array(model):
                raise TypeError(
                    f"{name} must be a distribution with rvs(n, random_state) or a 2-D array of "
                    f"its samples; got {type(model).__name__}." + sklearn_model_hint(model, name)
                )

    def _fit(self, X):
        bw_rng = as_generator(self.random_state).spawn(1)[0]
        self.bandwidth_ = resolve_bandwidth(X, self.bandwidth, random_state=bw_rng)

    def _samples(self, model, name, n, d, rng):
        if _is_sample_array(model):
            Y = check_samples(model, name=name, min_samples=3)
        else:
            m = n if self.n_model_samples is None else self.n_model_samples
            Y = check_samples(model.rvs(m, random_state=rng), name=f"{name}.rvs(...)",
                              min_samples=3)
        if Y.shape[1] != d:
            raise ValueError(f"the samples of {name} have {Y.shape[1]} features, X has {d}.")
        return Y

    @host_single_blas
    def test(self, X):
        """Run the test on ``X`` (data from R).

        %(sample_parameters)s

        Returns
        -------
        RelativeTestResult
        """
        self._check_params()
        rng = as_generator(self.random_state)
        bw_rng, p_rng, q_rng = rng.spawn(3)
        if is_fitted(self):
            X = self._validate_X(X, reset=False)
            h = self.bandwidth_
        else:
            X = check_samples(X, min_samples=3)
            h = resolve_bandwidth(X, self.bandwidth, random_state=bw_rng)
        n, d = X.shape
        Yp = self._samples(self.model_p, "model_p", n, d, p_rng)
        Yq = self._samples(self.model_q, "model_q", n, d, q_rng)
        kern = RBF(h)
        mmd_p, mmd_q, stat, var = _relative_mmd(Yp, Yq, X, kern)
        sigma = float(np.sqrt(n * var))
        scale = 1.0  # Gaussian kernel values lie in [0, 1]
        zscore, pvalue, threshold, reject, degenerate, stat, sigma = decide(
            stat, sigma, n, self.alpha, scale)
        return RelativeTestResult(
            statistic=float(stat), pvalue=pvalue, threshold=threshold, reject=reject,
            alpha=float(self.alpha), method="relative MMD (rbf, projection variance)",
            n_samples=n, discrepancy_p=float(mmd_p), discrepancy_q=float(mmd_q),
            sigma=sigma, zscore=zscore, variance="projection", bandwidth=float(h),
            degenerate=degenerate,
        )


def _is_sample_array(model):
    return isinstance(model, (np.ndarray, list)) and np.ndim(model) == 2


def _offdiag_mean_rows(K):
    """Per row, the mean of the off-diagonal entries of a square kernel matrix."""
    m = K.shape[0]
    return (K.sum(axis=1) - np.diag(K)) / (m - 1.0)


def _relative_mmd(Yp, Yq, X, kern):
    """(MMD_u^2(P), MMD_u^2(Q), difference, first-order variance of the difference)."""
    Kpp, Kqq, Kxx = kern(Yp, Yp), kern(Yq, Yq), kern(X, X)
    Kpx, Kqx = kern(Yp, X), kern(Yq, X)
    app, aqq, axx = _offdiag_mean_rows(Kpp), _offdiag_mean_rows(Kqq), _offdiag_mean_rows(Kxx)
    px_rows, qx_rows = Kpx.mean(axis=1), Kqx.mean(axis=1)
    px_cols, qx_cols = Kpx.mean(axis=0), Kqx.mean(axis=0)
    mmd_p = app.mean() + axx.mean() - 2.0 * px_rows.mean()
    mmd_q = aqq.mean() + axx.mean() - 2.0 * qx_rows.mean()
    g_p = 2.0 * app - 2.0 * px_rows
    g_q = 2.0 * aqq - 2.0 * qx_rows
    g_r = 2.0 * qx_cols - 2.0 * px_cols
    var = (np.var(g_p, ddof=1) / Yp.shape[0] + np.var(g_q, ddof=1) / Yq.shape[0]
           + np.var(g_r, ddof=1) / X.shape[0])
    return mmd_p, mmd_q, mmd_p - mmd_q, float(var)
