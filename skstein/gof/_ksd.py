"""The kernel Stein discrepancy goodness-of-fit test."""

from sklearn.base import BaseEstimator

from .._bootstrap import bootstrap_null, bootstrap_pvalue, bootstrap_threshold
from .._random import as_generator
from .._result import GOFTestResult
from .._validation import check_samples, evaluate_score
from ..discrepancy import DEFAULT_MAX_MEMORY, resolve_bandwidth, stein_row_blocks, stein_sums
from ..kernels import make_kernel
from . import _discrete
from ._base import SteinTestMixin, is_fitted

__all__ = ["KSDTest"]


class KSDTest(SteinTestMixin, BaseEstimator):
    r"""Kernel Stein discrepancy goodness-of-fit test.

    Tests H0: the sample comes from ``model`` against H1: it does not, using only the
    model's score :math:`\nabla \log p` (so ``model`` may be unnormalised). The
    statistic is the squared KSD (Liu, Lee & Jordan 2016; Chwialkowski, Strathmann &
    Gretton 2016) and its null distribution is bootstrapped.

    Parameters
    ----------
    model : distribution or callable
        The model p: an object with ``grad_logpdf(X)`` or a callable ``X -> grad log p(X)``.
    kernel : {"rbf", "imq"}, default="rbf"
        Base kernel (see :mod:`skstein.kernels` for the conventions).
    bandwidth : float or "median", default="median"
        Kernel bandwidth; ``"median"`` uses the median heuristic on the data given to
        :meth:`fit` (or to :meth:`test` when not fitted).
    kernel_params : dict, default=None
        Extra kernel parameters, e.g. ``{"beta": -0.5}`` for IMQ.
    statistic : {"u", "v"}, default="u"
        U-statistic (unbiased) or V-statistic.
    bootstrap : {"multinomial", "rademacher"}, default="multinomial"
        Null distribution by the multinomial bootstrap (Liu et al. 2016, Gong et al.
        2021 Eq. 13) or the wild (Rademacher) bootstrap (Chwialkowski et al. 2016).
    n_bootstrap : int, default=1000
        Number of bootstrap draws.
    alpha : float, default=0.05
        Significance level.
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the bootstrap (and the median heuristic's subsample for more than 2000
        samples).
    max_memory : int, default=64 MiB
        Memory budget in bytes for the Stein-kernel temporaries. Beyond it the Stein
        matrix is recomputed by row blocks, so results do not depend on it.
    operator : {None, "difference", "zanella-barker"}, default=None
        The Stein operator. None: the model decides; a discrete model (one with
        ``n_values``, e.g. :class:`~skstein.distributions.Categorical`) gets the
        Zanella-Barker operator, whose weights stay in [0, 1] where the difference
        score blows up, and a continuous model the Langevin operator. A discrete
        operator needs a discrete model and integer data; the kernels are then those
        of :mod:`skstein.discrete` (``"rbf"`` is the exponentiated Hamming kernel).

    Attributes
    ----------
    bandwidth_ : float
        The bandwidth resolved by :meth:`fit`.
    kernel_ : RBF or IMQ
        The fitted base kernel.
    n_features_in_ : int
        Number of features seen in :meth:`fit`.
    operator_ : str
        With a discrete model: the operator used.

    See Also
    --------
    skstein.ksd : the statistic as a function.

    References
    ----------
    .. [1] Q. Liu, J. Lee, M. Jordan. "A Kernelized Stein Discrepancy for
       Goodness-of-fit Tests", ICML 2016.
    .. [2] K. Chwialkowski, H. Strathmann, A. Gretton. "A Kernel Test of Goodness of
       Fit", ICML 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from skstein import KSDTest
    >>> from skstein.distributions import Gaussian
    >>> X = np.random.default_rng(0).laplace(size=(500, 2)) / np.sqrt(2)
    >>> result = KSDTest(Gaussian(np.zeros(2)), random_state=0).test(X)
    >>> bool(result.reject)
    True
    """

    def __init__(self, model, *, kernel="rbf", bandwidth="median", kernel_params=None,
                 statistic="u", bootstrap="multinomial", n_bootstrap=1000, alpha=0.05,
                 random_state=None, max_memory=DEFAULT_MAX_MEMORY,
                 operator=None):
        self.model = model
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.kernel_params = kernel_params
        self.statistic = statistic
        self.bootstrap = bootstrap
        self.n_bootstrap = n_bootstrap
        self.alpha = alpha
        self.random_state = random_state
        self.max_memory = max_memory
        self.operator = operator

    def fit(self, X, y=None):
        """Resolve the bandwidth on ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        if _discrete.discrete_operator(self) is not None:
            return _discrete.fit(self, X)
        self._check_common_params()
        X = self._validate_X(X, reset=True)
        rng = as_generator(self.random_state)
        self.bandwidth_ = resolve_bandwidth(X, self.bandwidth, random_state=rng)
        self.kernel_ = make_kernel(self.kernel, self.bandwidth_, self.kernel_params)
        return self

    def _prepare(self, X, rng):
        """Validated X, its scores, and the kernel (fitted, or resolved on X)."""
        self._check_common_params()
        if is_fitted(self):
            X = self._validate_X(X, reset=False)
            kern = self.kernel_
        else:
            X = check_samples(X)
            h = resolve_bandwidth(X, self.bandwidth, random_state=rng)
            kern = make_kernel(self.kernel, h, self.kernel_params)
        S = evaluate_score(self.model, X, "model")
        return X, S, kern

    def test(self, X):
        """Run the test on ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        GOFTestResult
        """
        if _discrete.discrete_operator(self) is not None:
            return _discrete.test(self, X)
        rng = as_generator(self.random_state)
        bw_rng, boot_rng = rng.spawn(2)
        X, S, kern = self._prepare(X, bw_rng)
        n = X.shape[0]
        in_memory = 3 * 8 * n * n <= self.max_memory
        sums = stein_sums(X, S, kern, return_matrix=in_memory, max_memory=self.max_memory)
        stat = sums.statistic(self.statistic)
        if in_memory:
            H = sums.upper
        else:
            H = stein_row_blocks(X, S, kern, max_memory=self.max_memory)
        null = bootstrap_null(H, self.bootstrap, self.n_bootstrap, boot_rng,
                              statistic=self.statistic, diag=sums.diag, n=n)
        pvalue = bootstrap_pvalue(stat, null)
        return GOFTestResult(
            statistic=float(stat),
            pvalue=float(pvalue),
            threshold=bootstrap_threshold(null, self.alpha),
            reject=bool(pvalue <= self.alpha),
            alpha=float(self.alpha),
            method=f"KSD ({kern.name}, {self.statistic}-statistic, {self.bootstrap} bootstrap)",
            n_samples=n,
            bootstrap=self.bootstrap,
            n_bootstrap=int(self.n_bootstrap),
            bandwidth=kern.bandwidth,
            null_distribution=null,
        )

    def discrepancy(self, X):
        """The squared KSD of ``X`` to the model (the test statistic)."""
        if _discrete.discrete_operator(self) is not None:
            return _discrete.discrepancy(self, X)
        X, S, kern = self._prepare(X, as_generator(self.random_state))
        return stein_sums(X, S, kern, max_memory=self.max_memory).statistic(self.statistic)

    def score(self, X, y=None):
        r"""Test-power criterion on ``X``: :math:`\mathrm{KSD}^2_U / \hat\sigma_{H_1}`.

        Higher means more power to reject; ``GridSearchCV`` over ``bandwidth`` and
        ``kernel`` therefore picks the most powerful test. See
        :meth:`skstein.discrepancy.SteinSums.power_criterion`.
        """
        if _discrete.discrete_operator(self) is not None:
            return _discrete.score(self, X)
        X, S, kern = self._prepare(X, as_generator(self.random_state))
        return float(stein_sums(X, S, kern, max_memory=self.max_memory).power_criterion())
