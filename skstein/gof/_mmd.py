r"""The MMD two-sample test as a goodness-of-fit test for models that can be sampled.

Functional layer and estimator. With the data :math:`x_1..x_n`, model samples
:math:`y_1..y_m` and a Gaussian kernel :math:`k(x, y) = \exp(-\|x - y\|^2 / (2h^2))`,

.. math::

    \widehat{\mathrm{MMD}^2_u} = \frac{1}{n(n-1)}\sum_{i \ne j} k(x_i, x_j)
    + \frac{1}{m(m-1)}\sum_{i \ne j} k(y_i, y_j) - \frac{2}{nm}\sum_{i,j} k(x_i, y_j)

(Gretton et al. 2012). Its null distribution is the permutation distribution: the
pooled sample is split at random into parts of sizes ``n`` and ``m`` and the statistic
recomputed, which gives a test of exact level. With :math:`K_0` the pooled kernel matrix
with zero diagonal, :math:`r = K_0 \mathbf{1}`, :math:`T = \mathbf{1}^\top r` and
:math:`e` the indicator of the first part, the three sums are
:math:`A = e^\top K_0 e`, :math:`C = e^\top r - A` and :math:`B = T - 2e^\top r + A`, so all
permutations cost one matrix product :math:`E K_0` (BLAS, in batches of draws).
"""

import numpy as np
from sklearn.base import BaseEstimator

from .._random import as_generator
from .._validation import check_positive_int, check_samples, sklearn_model_hint
from ..discrepancy import resolve_bandwidth
from ..distributions import rvs_kind
from ..kernels import RBF, inverse_square
from ._base import BaselineTestMixin, is_fitted
from ._common import SampleTestMethods, simulated_null_result

__all__ = ["MMDGOFTest", "mmd_u", "mmd_permutation_null"]


def _gram_zero_diag(Z, h, name="X"):
    with np.errstate(over="ignore", invalid="ignore"):
        sq = np.einsum("ij,ij->i", Z, Z)
    # the pooled squared norms bound every squared distance by 4 max(sq)
    if not np.isfinite(4.0 * sq.max(initial=0.0)):
        raise ValueError(f"{name}: the squared distances of the pooled sample overflow "
                         "float64; rescale the data.")
    D2 = sq[:, None] + sq[None, :] - 2.0 * (Z @ Z.T)
    np.maximum(D2, 0.0, out=D2)
    D2 *= -0.5 * inverse_square(h)
    K = np.exp(D2, out=D2)
    np.fill_diagonal(K, 0.0)
    return K


def _mmd_from_sums(A, B, C, n, m):
    return A / (n * (n - 1.0)) + B / (m * (m - 1.0)) - 2.0 * C / (n * m)


def mmd_u(X, Y, bandwidth):
    r"""Unbiased :math:`\widehat{\mathrm{MMD}^2_u}` of samples ``X`` (n, D) and ``Y`` (m, D)
    with the Gaussian kernel of bandwidth ``h``; ``n, m >= 2``."""
    X = check_samples(X, name="X")
    Y = check_samples(Y, name="Y")
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features but Y has {Y.shape[1]}.")
    h = RBF(bandwidth).bandwidth
    K0 = _gram_zero_diag(np.vstack([X, Y]), h, name="X and Y")
    return _pooled_mmd(K0, X.shape[0])


def _pooled_mmd(K0, n):
    m = K0.shape[0] - n
    A = float(K0[:n, :n].sum())
    B = float(K0[n:, n:].sum())
    C = float(K0[:n, n:].sum())
    return _mmd_from_sums(A, B, C, n, m)


def mmd_permutation_null(K0, n, n_permutations, rng, *, batch=128):
    """``n_permutations`` draws of the statistic under random splits of the pooled sample.

    ``K0`` is the pooled kernel matrix (zero diagonal) with the ``n`` data rows first.
    The splits come from ``rng`` in one piece, so the draws do not depend on ``batch``.
    """
    N = K0.shape[0]
    m = N - n
    r = K0.sum(axis=1)
    T = float(r.sum())
    labels = np.zeros(N)
    labels[:n] = 1.0
    E = rng.permuted(np.broadcast_to(labels, (n_permutations, N)), axis=1)
    out = np.empty(n_permutations)
    for a in range(0, n_permutations, batch):
        Eb = E[a:a + batch]
        P = Eb @ K0
        A = np.einsum("ij,ij->i", P, Eb)
        er = Eb @ r
        out[a:a + batch] = _mmd_from_sums(A, T - 2.0 * er + A, er - A, n, m)
    return out


def mmd_power_criterion(K0, n, eps=1e-10):
    r""":math:`\widehat{\mathrm{MMD}^2_u} / \sqrt{\hat\sigma^2_{H_1} + \epsilon}` from the
    first-order (Hoeffding) projections :math:`g_X(x_i) = 2(\bar k_X(x_i) - \bar k_Y(x_i))`,
    :math:`g_Y(y_j) = 2(\bar k_Y(y_j) - \bar k_X(y_j))` (each mean excluding the point
    itself): :math:`\hat\sigma^2_{H_1} = s^2(g_X) + \frac{n}{m} s^2(g_Y)`, the variance of
    :math:`\sqrt{n}\,\widehat{\mathrm{MMD}^2_u}`."""
    m = K0.shape[0] - n
    gx = 2.0 * (K0[:n, :n].sum(axis=1) / (n - 1.0) - K0[:n, n:].mean(axis=1))
    gy = 2.0 * (K0[n:, n:].sum(axis=1) / (m - 1.0) - K0[:n, n:].mean(axis=0))
    var = float(np.var(gx, ddof=1) + n / m * np.var(gy, ddof=1))
    return _pooled_mmd(K0, n) / np.sqrt(var + eps)


def _is_sample_array(model):
    return isinstance(model, (np.ndarray, list, tuple)) and np.ndim(model) == 2


class MMDGOFTest(SampleTestMethods, BaselineTestMixin, BaseEstimator):
    r"""MMD two-sample test between the data and samples of the model, permutation null.

    The baseline for models that can be sampled but whose score is not used (Gretton et
    al. 2012): draws ``n_model_samples`` samples with ``model.rvs``, computes the
    unbiased :math:`\widehat{\mathrm{MMD}^2_u}` with a Gaussian kernel
    :math:`\exp(-\|x - y\|^2 / (2h^2))` and compares it with ``n_permutations`` random
    re-splits of the pooled sample (exact level). ``O((n + m)^2 D)`` time and
    ``O((n + m)^2)`` memory.

    Parameters
    ----------
    model : distribution with ``rvs(n, random_state)`` or array-like of shape (m, D)
        The model, as a sampler or as samples already drawn.
    n_model_samples : int, default=None
        Samples drawn from the model; the data size when None.
    bandwidth : float or "median", default="median"
        ``"median"``: median distance of the pooled sample (data and model samples,
        as in the authors' code of Gong et al. 2021; at most 2000 seeded rows).
    n_permutations : int, default=1000
    alpha : float, default=0.05
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the model samples, the median subsample and the permutations.

    Attributes
    ----------
    bandwidth_ : float
        Resolved by :meth:`fit` (on the data pooled with a model sample).
    n_features_in_ : int

    Notes
    -----
    :meth:`fit` resolves the bandwidth on the data pooled with a model sample.
    :meth:`discrepancy` is :math:`\widehat{\mathrm{MMD}^2_u}` between the data and a
    model sample; :meth:`score` the power criterion :math:`\widehat{\mathrm{MMD}^2_u} /
    \hat\sigma_{H_1}` (see ``mmd_power_criterion``). In the result of :meth:`test`,
    ``bootstrap`` is ``"permutation"`` and ``n_bootstrap`` the number of permutations.

    References
    ----------
    .. [1] A. Gretton, K. Borgwardt, M. Rasch, B. Schölkopf, A. Smola. "A Kernel
       Two-Sample Test", JMLR 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from skstein import MMDGOFTest
    >>> from skstein.distributions import Gaussian
    >>> X = np.random.default_rng(0).normal(0.5, 1.0, size=(300, 2))
    >>> bool(MMDGOFTest(Gaussian(np.zeros(2)), random_state=0).test(X).reject)
    True
    """

    def __init__(self, model, *, n_model_samples=None, bandwidth="median", n_permutations=1000,
                 alpha=0.05, random_state=None):
        self.model = model
        self.n_model_samples = n_model_samples
        self.bandwidth = bandwidth
        self.n_permutations = n_permutations
        self.alpha = alpha
        self.random_state = random_state

    def _check_params(self):
        if rvs_kind(self.model) is None and not _is_sample_array(self.model):
            raise TypeError(
                "model must be a distribution with rvs(n, random_state) or a 2-D array of its "
                f"samples; got {type(self.model).__name__}." + sklearn_model_hint(self.model))
        self._check_baseline_params(self.n_permutations, "n_permutations", needs_score=False)
        if self.n_model_samples is not None:
            check_positive_int(self.n_model_samples, "n_model_samples", minimum=2)
        if not isinstance(self.bandwidth, str):
            RBF(self.bandwidth)
        elif self.bandwidth != "median":
            raise ValueError(f"bandwidth must be a positive float or 'median', got "
                             f"{self.bandwidth!r}.")

    def _model_sample(self, n, d, rng):
        if _is_sample_array(self.model):
            Y = check_samples(self.model, name="model")
        else:
            m = n if self.n_model_samples is None else int(self.n_model_samples)
            Y = check_samples(self.model.rvs(m, random_state=rng), name="model.rvs(...)")
        if Y.shape[1] != d:
            raise ValueError(f"the samples of model have {Y.shape[1]} features, X has {d}.")
        return Y

    def _fit(self, X):
        sample_rng, bw_rng, _ = as_generator(self.random_state).spawn(3)
        Y = self._model_sample(X.shape[0], X.shape[1], sample_rng)
        self.bandwidth_ = resolve_bandwidth(np.vstack([X, Y]), self.bandwidth,
                                            random_state=bw_rng)

    def _pooled(self, X, rng):
        self._check_params()
        sample_rng, bw_rng, perm_rng = rng.spawn(3)
        if is_fitted(self):
            X = self._validate_X(X, reset=False)
        else:
            X = check_samples(X)
        Y = self._model_sample(X.shape[0], X.shape[1], sample_rng)
        Z = np.vstack([X, Y])
        h = self.bandwidth_ if is_fitted(self) else resolve_bandwidth(
            Z, self.bandwidth, random_state=bw_rng)
        return _gram_zero_diag(Z, h), X.shape[0], h, perm_rng

    def _test(self, X):
        K0, n, h, perm_rng = self._pooled(X, as_generator(self.random_state))
        stat = _pooled_mmd(K0, n)
        null = mmd_permutation_null(K0, n, int(self.n_permutations), perm_rng)
        return simulated_null_result(
            stat, null, alpha=self.alpha,
            method=f"MMD (rbf, {K0.shape[0] - n} model samples, permutation null)",
            n_samples=n, bootstrap="permutation", n_bootstrap=self.n_permutations,
            bandwidth=float(h))

    def _discrepancy(self, X):
        K0, n, _, _ = self._pooled(X, as_generator(self.random_state))
        return float(_pooled_mmd(K0, n))

    def _score(self, X):
        K0, n, _, _ = self._pooled(X, as_generator(self.random_state))
        return float(mmd_power_criterion(K0, n))
