r"""The linear-time kernel Stein discrepancy test (Liu, Lee & Jordan 2016).

Functional layer and estimator. With :math:`m = \lfloor n/2 \rfloor` and the two halves
:math:`x_i` and :math:`x_{i+m}` (:math:`i = 1..m`, the last sample dropped when
:math:`n` is odd; kgof's ``LinearKernelSteinTest`` pairs them the same way),

.. math::

    \widehat{\mathrm{KSD}^2_l} = \frac{1}{m} \sum_{i=1}^m h_p(x_i, x_{i+m}),

an unbiased estimate of :math:`\mathrm{KSD}^2` from :math:`m` independent terms. Under
H0 the terms have mean zero, so :math:`z = \sqrt{m}\,\widehat{\mathrm{KSD}^2_l} / \hat s`
(:math:`\hat s` the sample standard deviation of the terms) is asymptotically standard
normal, and the test rejects for large :math:`z` (one-sided, p-value
:math:`1 - \Phi(z)`). kgof divides by the root mean square of the terms instead of their
standard deviation: the same under H0, a smaller :math:`z` under H1.
"""

import numpy as np
from scipy.stats import norm
from sklearn.base import BaseEstimator

from .._random import as_generator
from .._result import GOFTestResult
from .._validation import check_choice, check_samples, evaluate_score
from ..discrepancy import check_stein_finite, paired_stein_terms, resolve_bandwidth
from ..kernels import KERNELS, make_kernel
from ._base import BaselineTestMixin, is_fitted
from ._common import SampleTestMethods

__all__ = ["LinearKSDTest", "linear_ksd", "linear_stein_terms"]


def linear_stein_terms(X, S, kernel):
    r"""The :math:`m = \lfloor n/2 \rfloor` terms :math:`h_p(x_i, x_{i+m})` of validated
    ``X`` with scores ``S`` (``O(nD)`` time, ``O(n)`` extra memory)."""
    m = X.shape[0] // 2
    return paired_stein_terms(X[:m], X[m:2 * m], S[:m], S[m:2 * m], kernel)


def _mean_and_sd(H):
    """The mean and standard deviation (``ddof=1``) of the terms ``H``.

    Each term is finite; their sum or squares may still overflow float64 (X on a huge
    scale): then the clear error of :func:`~skstein.discrepancy.check_stein_finite`
    instead of an infinite threshold.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        stat = float(np.mean(H))
        sd = float(np.std(H, ddof=1))
    check_stein_finite(stat, sd)
    return stat, sd


def linear_ksd(X, model, *, kernel="rbf", bandwidth="median", kernel_params=None,
               random_state=None):
    r"""Linear-time KSD estimate :math:`\frac{1}{m}\sum_{i \le m} h_p(x_i, x_{i+m})`.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        At least 2 samples.
    model : distribution or callable
    kernel : {"rbf", "imq"}, default="rbf"
    bandwidth : float or "median", default="median"
    kernel_params : dict, default=None
    random_state : None, int or Generator
        Only used by the median heuristic's subsample when ``n > 2000``.

    Returns
    -------
    float
    """
    X = check_samples(X)
    check_choice(kernel, "kernel", KERNELS)
    kern = make_kernel(kernel, resolve_bandwidth(X, bandwidth, random_state=random_state),
                       kernel_params)
    S = evaluate_score(model, X)
    H = linear_stein_terms(X, S, kern)
    with np.errstate(over="ignore"):
        stat = float(np.mean(H))
    check_stein_finite(stat)
    return stat


class LinearKSDTest(SampleTestMethods, BaselineTestMixin, BaseEstimator):
    r"""Linear-time KSD goodness-of-fit test with a normal null (Liu et al. 2016).

    The statistic is the mean of :math:`h_p(x_i, x_{i+m})` over the pairs formed by the
    two halves of the sample (see :mod:`skstein.gof._linear`): :math:`O(nD)` time and
    memory. Its null distribution is asymptotically normal, with the variance estimated
    from the same terms, so no simulation is needed; the price is power: the statistic
    uses :math:`n/2` of the :math:`n(n-1)/2` pairs of :class:`KSDTest`. The normal
    approximation also needs many pairs: the terms are skewed, and at ``n = 1000`` the
    test is conservative (measured for N(0, I) in ``D = 2`` over 400 null trials per
    seed: rejection rates 1.3% and 3.8% at level 5%; 4.5% at ``n = 4000``; 4.8%, 5.5%
    and 4.8% at ``n = 20000``).

    Parameters
    ----------
    model : distribution or callable
        The model p: an object with ``grad_logpdf(X)`` or a callable ``X -> grad log p(X)``.
    kernel : {"rbf", "imq"}, default="rbf"
    bandwidth : float or "median", default="median"
    kernel_params : dict, default=None
    alpha : float, default=0.05
    random_state : None, int or numpy.random.Generator, default=None
        Only used by the median heuristic's subsample for more than 2000 samples.

    Attributes
    ----------
    bandwidth_ : float
    kernel_ : RBF or IMQ
    n_features_in_ : int

    Notes
    -----
    :meth:`fit` resolves the bandwidth. :meth:`test` needs at least 4 samples; in its
    result ``statistic`` is the mean of the ``m`` terms (:meth:`discrepancy`),
    ``threshold`` is :math:`z_{1-\alpha}\,\hat s/\sqrt{m}`, ``bootstrap`` is
    ``"normal"``, ``n_bootstrap`` is 0, ``null_distribution`` is empty and ``n_samples``
    counts the samples used (``2m``). :meth:`score` is the power criterion
    :math:`\widehat{\mathrm{KSD}^2_l} / \hat s`, the mean over the standard deviation of
    the terms (0 when they do not vary).

    See Also
    --------
    KSDTest : the quadratic-time test.

    References
    ----------
    .. [1] Q. Liu, J. Lee, M. Jordan. "A Kernelized Stein Discrepancy for
       Goodness-of-fit Tests", ICML 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from skstein import LinearKSDTest
    >>> from skstein.distributions import Gaussian
    >>> X = np.random.default_rng(0).normal(0.5, 1.0, size=(5000, 2))
    >>> bool(LinearKSDTest(Gaussian(np.zeros(2)), random_state=0).test(X).reject)
    True
    """

    def __init__(self, model, *, kernel="rbf", bandwidth="median", kernel_params=None,
                 alpha=0.05, random_state=None):
        self.model = model
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.kernel_params = kernel_params
        self.alpha = alpha
        self.random_state = random_state

    def _check_params(self):
        self._check_baseline_params()
        check_choice(self.kernel, "kernel", KERNELS)
        make_kernel(self.kernel, 1.0, self.kernel_params)

    def _fit(self, X):
        self.bandwidth_ = resolve_bandwidth(X, self.bandwidth,
                                            random_state=as_generator(self.random_state))
        self.kernel_ = make_kernel(self.kernel, self.bandwidth_, self.kernel_params)

    def _terms(self, X, min_samples=2):
        self._check_params()
        if is_fitted(self):
            X = self._validate_X(X, reset=False)
            kern = self.kernel_
        else:
            X = check_samples(X, min_samples=min_samples)
            h = resolve_bandwidth(X, self.bandwidth, random_state=as_generator(self.random_state))
            kern = make_kernel(self.kernel, h, self.kernel_params)
        if X.shape[0] < min_samples:
            raise ValueError(f"the linear-time test needs at least {min_samples} samples "
                             f"(two pairs); X has {X.shape[0]}.")
        S = evaluate_score(self.model, X, "model")
        return linear_stein_terms(X, S, kern), kern, X.shape[0]

    def _test(self, X):
        H, kern, _ = self._terms(X, min_samples=4)
        m = H.size
        stat, sd = _mean_and_sd(H)
        if sd > 0:
            pvalue = float(norm.sf(np.sqrt(m) * stat / sd))
            threshold = float(norm.isf(self.alpha) * sd / np.sqrt(m))
        else:  # every term equal: no variance to measure the statistic against
            pvalue = 1.0 if stat <= 0 else 0.0
            threshold = 0.0
        return GOFTestResult(
            statistic=stat,
            pvalue=pvalue,
            threshold=threshold,
            reject=bool(pvalue <= self.alpha),
            alpha=float(self.alpha),
            method=f"linear-time KSD ({kern.name}, normal null)",
            n_samples=2 * m,
            bootstrap="normal",
            n_bootstrap=0,
            bandwidth=kern.bandwidth,
            null_distribution=np.empty(0),
        )

    def _discrepancy(self, X):
        H = self._terms(X)[0]
        with np.errstate(over="ignore"):
            stat = float(np.mean(H))
        check_stein_finite(stat)
        return stat

    def _score(self, X):
        stat, sd = _mean_and_sd(self._terms(X, min_samples=4)[0])
        return float(stat / sd) if sd > 0 else 0.0
