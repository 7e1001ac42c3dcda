r"""Relative goodness-of-fit tests: which of two models P and Q fits the data better.

The data :math:`x_1, \dots, x_n` come from an unknown R. With a discrepancy
:math:`D` to R, the tests decide

.. math::

    H_0: D(P, R) \le D(Q, R) \quad\text{(P is at least as good)} \qquad
    H_1: D(P, R) > D(Q, R) \quad\text{(Q is better)}

from the difference of two U-statistics on the same data,
:math:`\hat D_n = U_n(P) - U_n(Q)`, which is asymptotically normal with standard
deviation :math:`\sigma / \sqrt n` (both models wrong, the usual case).
H0 is rejected when :math:`\hat D_n \ge \hat\sigma z_{1-\alpha} / \sqrt n`;
the p-value is :math:`1 - \Phi(\sqrt n \hat D_n / \hat\sigma)`.

* :class:`RelativeKSDTest`: :math:`D` the squared KSD with the same kernel for both
  models (Kanagawa et al. 2023). A model may be a latent-variable model whose
  score is estimated from posterior draws (LKSD).
* :class:`RelativeMMDTest`: :math:`D` the squared MMD to samples of the two models
  (Bounliphone et al. 2016).

Variance of the KSD difference. With :math:`H = H^P - H^Q` the difference of the
Stein matrices, :math:`T = \sum_{i \ne j} H_{ij}` and row sums
:math:`r_i = \sum_{j \ne i} H_{ij}`:

* ``"jackknife"``: the leave-one-out statistics are
  :math:`\hat D_{-i} = (T - 2 r_i) / ((n-1)(n-2))` and
  :math:`\hat\sigma^2 = n \cdot \frac{n-1}{n} \sum_i (\hat D_{-i} - \bar D_{-\cdot})^2`;
* ``"ustat"``: :math:`\hat\sigma^2 = 4\,\mathrm{Var}_i[r_i / (n-1)]`, the plug-in
  estimate of the first-order (Hoeffding projection) variance.

Both need only :math:`T` and the row sums, which one Stein-kernel pass per model
gives (:func:`skstein.discrepancy.stein_sums`); no :math:`n \times n` array is formed.
"""

import inspect
import warnings

import numpy as np
from scipy.stats import norm
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted, validate_data

from ._random import as_generator
from ._result import RelativeTestResult
from ._validation import (
    check_alpha,
    check_choice,
    check_positive_int,
    check_samples,
    evaluate_score,
    resolve_score,
    warn_heavy_tails,
)
from .directions import search_directions
from .discrepancy import DEFAULT_MAX_MEMORY, resolve_bandwidth, sliced_stein_sums, stein_sums
from .kernels import KERNELS, RBF, make_kernel

__all__ = [
    "RelativeKSDTest",
    "RelativeMMDTest",
    "relative_ksd",
    "relative_variance",
    "latent_score",
    "VARIANCES",
    "DISCREPANCIES",
]

#: Variance estimators of the relative KSD test.
VARIANCES = ("jackknife", "ustat")
#: Discrepancies the relative KSD test accepts.
DISCREPANCIES = ("ksd", "maxsksd")
#: How a model's score is obtained.
MODEL_SCORES = ("auto", "exact", "posterior")

_EPS = np.finfo(np.float64).eps


# ---------------------------------------------------------------------------
# functional layer
# ---------------------------------------------------------------------------
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


def _decide(stat, sigma, n, alpha, scale):
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


def latent_score(model, X, n_posterior_samples=500, burn_in=200, random_state=None,
                 name="model"):
    r"""Score of a latent-variable model estimated from posterior draws.

    .. math::

        \hat s(x_i) = \frac1m \sum_{j=1}^m \nabla_x \log p(x_i \mid z_{ij}),

    with :math:`z_{ij}` the ``m`` posterior draws for :math:`x_i` that follow a
    burn-in of ``burn_in`` draws. A model whose ``sample_posterior`` accepts a
    ``burn_in`` keyword runs the burn-in itself (without storing it); otherwise
    ``burn_in + m`` draws are requested and the first ``burn_in`` discarded.

    Parameters
    ----------
    model : latent-variable distribution
        With ``grad_logpdf_conditional(X, Z)`` and ``sample_posterior(X, n_samples,
        random_state)`` (returning an array ``(n_samples, n, latent_dim)``).
    X : ndarray of shape (n, d)
    n_posterior_samples : int, default=500
        :math:`m`.
    burn_in : int, default=200
        Draws discarded first (for MCMC samplers; exact samplers need none).
    random_state : None, int or Generator
    name : str
        Name of the model in error messages.

    Returns
    -------
    ndarray of shape (n, d)
    """
    check_latent_model(model, name)
    m = check_positive_int(n_posterior_samples, "n_posterior_samples")
    burn_in = check_positive_int(burn_in, "burn_in", minimum=0)
    n = X.shape[0]
    if _accepts_keyword(model.sample_posterior, "burn_in"):
        draws = model.sample_posterior(X, m, random_state=random_state, burn_in=burn_in)
        first, expected = 0, m
    else:
        draws = model.sample_posterior(X, burn_in + m, random_state=random_state)
        first, expected = burn_in, burn_in + m
    draws = np.asarray(draws)
    if draws.ndim != 3 or draws.shape[:2] != (expected, n):
        raise ValueError(
            f"{name}.sample_posterior returned shape {draws.shape}; expected "
            f"({expected}, {n}, latent_dim)."
        )
    S = np.zeros(X.shape)
    for j in range(first, expected):
        S += model.grad_logpdf_conditional(X, draws[j])
    S /= m
    if S.shape != X.shape or not np.all(np.isfinite(S)):
        raise ValueError(
            f"the posterior-averaged score of {name} is not a finite array of shape {X.shape}."
        )
    warn_heavy_tails(S, name)
    return np.ascontiguousarray(S)


def _accepts_keyword(fn, keyword):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return keyword in params or any(p.kind is inspect.Parameter.VAR_KEYWORD
                                    for p in params.values())


def check_latent_model(model, name="model"):
    """Raise a TypeError naming ``name`` unless ``model`` has the latent-variable protocol."""
    missing = [m for m in ("grad_logpdf_conditional", "sample_posterior")
               if not callable(getattr(model, m, None))]
    if missing:
        raise TypeError(
            f"{name} must be a latent-variable model with grad_logpdf_conditional(X, Z) and "
            f"sample_posterior(X, n_samples, random_state) to use posterior scores; "
            f"{type(model).__name__} lacks {', '.join(missing)}."
        )


def _has_exact_score(model):
    return callable(getattr(model, "grad_logpdf", None)) or callable(model)


def _model_score(model, X, how, n_posterior_samples, burn_in, rng, name):
    """(scores, used_posterior) of one model on X."""
    if how == "auto":
        how = "exact" if _has_exact_score(model) else "posterior"
    if how == "exact":
        return evaluate_score(model, X, name), False
    return latent_score(model, X, n_posterior_samples, burn_in, rng, name), True


def _ksd_pair_sums(X, S_p, S_q, kernel, max_memory):
    """Sufficient statistics of the KSD difference by one Stein pass per model.

    Returns ``(U_p, U_q, T, r, scale)``: the two U-statistics, the off-diagonal total
    ``T`` and the row sums ``r`` of the difference of the Stein matrices, and the
    magnitude of the Stein-kernel values (for the rounding tolerance).
    """
    sp = stein_sums(X, S_p, kernel, max_memory=max_memory)
    sq = stein_sums(X, S_q, kernel, max_memory=max_memory)
    scale = max(float(np.mean(np.abs(sp.rowsums))), float(np.mean(np.abs(sq.rowsums))))
    scale /= X.shape[0] - 1
    return (sp.statistic("u"), sq.statistic("u"), sp.offdiag_sum - sq.offdiag_sum,
            sp.rowsums - sq.rowsums, scale)


def _result_from_sums(sums, n, variance, alpha, method, bandwidth):
    """The test's decision from ``(U_p, U_q, T, r, scale)`` of any U-statistic pair.

    Any discrepancy that is a U-statistic of a symmetric kernel (the KSD, a sliced
    KSD with directions fixed beforehand) enters here; only the sums differ.
    """
    u_p, u_q, total, rowsums, scale = sums
    stat = total / (n * (n - 1.0))
    sigma = relative_variance(rowsums, total, n, variance)
    zscore, pvalue, threshold, reject, degenerate = _decide(stat, sigma, n, alpha, scale)
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


def _relative_result(X, S_p, S_q, kernel, variance, alpha, max_memory, method):
    """Relative KSD test on validated ``X`` with the models' scores ``S_p``, ``S_q``."""
    sums = _ksd_pair_sums(X, S_p, S_q, kernel, max_memory)
    return _result_from_sums(sums, X.shape[0], variance, alpha, method, kernel.bandwidth)


def relative_ksd(X, model_p, model_q, *, kernel="imq", bandwidth="median", kernel_params=None,
                 variance="jackknife", alpha=0.05, model_score="auto", n_posterior_samples=500,
                 burn_in=200, random_state=None, max_memory=DEFAULT_MAX_MEMORY):
    """Relative KSD test of ``model_p`` against ``model_q`` on the sample ``X``.

    The function behind :class:`RelativeKSDTest`; parameters as there.

    Returns
    -------
    RelativeTestResult
    """
    X = check_samples(X, min_samples=3)
    check_choice(kernel, "kernel", KERNELS)
    check_choice(variance, "variance", VARIANCES)
    check_choice(model_score, "model_score", MODEL_SCORES)
    alpha = check_alpha(alpha)
    rng = as_generator(random_state)
    bw_rng, p_rng, q_rng = rng.spawn(3)
    h = resolve_bandwidth(X, bandwidth, random_state=bw_rng)
    kern = make_kernel(kernel, h, kernel_params)
    S_p, post_p = _model_score(model_p, X, model_score, n_posterior_samples, burn_in, p_rng,
                               "model_p")
    S_q, post_q = _model_score(model_q, X, model_score, n_posterior_samples, burn_in, q_rng,
                               "model_q")
    return _relative_result(X, S_p, S_q, kern, variance, alpha, max_memory,
                            _method_name("ksd", kern, variance, post_p or post_q))


def _maxsksd_pair_sums(X_te, S_p, S_q, fitted, kernel, kernel_params, max_memory):
    """Sums of the maxSKSD difference on held-out rows, each model with its directions.

    ``fitted`` is ``((G_p, R_p, h_p), (G_q, R_q, h_q))``; returns the tuple of
    :func:`_ksd_pair_sums`.
    """
    sums = [sliced_stein_sums(X_te, S, G, R, h, kernel=kernel, kernel_params=kernel_params,
                              max_memory=max_memory)
            for S, (G, R, h) in zip((S_p, S_q), fitted)]
    sp, sq = sums
    scale = max(float(np.mean(np.abs(sp.rowsums))), float(np.mean(np.abs(sq.rowsums))))
    scale /= X_te.shape[0] - 1
    return (sp.statistic("u"), sq.statistic("u"), sp.offdiag_sum - sq.offdiag_sum,
            sp.rowsums - sq.rowsums, scale)


def _learn_directions(X, S, est, rng):
    """(G, R, h) of one model: maxSKSD directions learned on ``X`` with scores ``S``."""
    res = search_directions(X, _FixedScores(S), variant=est.variant, n_slices=est.n_slices,
                            kernel=est.kernel, kernel_params=est.kernel_params,
                            bandwidth=est.bandwidth, random_state=rng)
    return res.directions, res.slices, res.bandwidth


class _FixedScores:
    """A model whose score at the rows it was built for is already known."""

    def __init__(self, S):
        self.S = S

    def grad_logpdf(self, X):
        if X.shape != self.S.shape:
            raise ValueError("scores were precomputed for another sample.")
        return self.S


def _method_name(discrepancy, kern, variance, latent):
    name = {"ksd": "KSD", "maxsksd": "maxSKSD"}[discrepancy]
    if latent:
        name = "L" + name
    return f"relative {name} ({kern.name}, {variance} variance)"


# ---------------------------------------------------------------------------
# estimators
# ---------------------------------------------------------------------------
def _is_fitted(est):
    try:
        check_is_fitted(est)
    except NotFittedError:
        return False
    return True


class _RelativeMixin:
    _required_parameters = ["model_p", "model_q"]

    def _check_model_dims(self):
        n_features = getattr(self, "n_features_in_", None)
        for name in ("model_p", "model_q"):
            dim = _model_dim(getattr(self, name))
            if dim is not None and n_features is not None and dim != n_features:
                raise ValueError(
                    f"X has {n_features} features but {name} is a distribution on {dim} "
                    "dimensions."
                )

    def _validate_X(self, X, reset):
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=3, reset=reset)
        if reset:
            self._check_model_dims()
        return X

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        return tags


def _check_train_size(train_size):
    if isinstance(train_size, bool) or not isinstance(train_size, (int, float, np.floating)) \
            or not 0.0 < float(train_size) < 1.0:
        raise ValueError(f"train_size must be a float in (0, 1), got {train_size!r}.")
    return float(train_size)


def _train_rows(n, train_size):
    """Rows of ``n`` used to learn maxSKSD directions (at least 4, leaving at least 4)."""
    n_train = int(round(_check_train_size(train_size) * n))
    if n_train < 4 or n - n_train < 4:
        raise ValueError(f"train_size={train_size} leaves fewer than 4 rows for learning the "
                         f"directions or for the test (n_samples={n}).")
    return n_train


def _model_dim(model):
    dim = getattr(model, "dim", None)
    if dim is None or callable(dim):
        if isinstance(model, np.ndarray) and model.ndim == 2:
            return model.shape[1]
        return None
    return int(dim)


class RelativeKSDTest(_RelativeMixin, BaseEstimator):
    r"""Relative kernel Stein discrepancy test: is model Q a better fit than model P?

    Tests H0: :math:`\mathrm{KSD}^2(P, R) \le \mathrm{KSD}^2(Q, R)` against
    H1: Q is closer to the data distribution R, from the difference of the two
    KSD U-statistics on the same data, with the same kernel and bandwidth for both
    (Kanagawa, Jitkrittum, Mackey, Fukumizu & Gretton). Only the models' scores are
    needed, so both may be unnormalised. A latent-variable model whose marginal
    score is intractable enters through its posterior: its score at :math:`x_i` is the
    mean of :math:`\nabla_x \log p(x_i | z_{ij})` over ``n_posterior_samples`` draws
    after ``burn_in`` (the LKSD test).

    Parameters
    ----------
    model_p, model_q : distribution, callable or latent-variable model
        The two candidate models. H0 says P is at least as good as Q.
    discrepancy : {"ksd", "maxsksd"}, default="ksd"
        The discrepancy compared. ``"maxsksd"`` compares the models' maxSKSD (Gong et
        al. 2021): each model's test directions are learned on a training part of the
        data (``train_size``, or all of the data given to :meth:`fit`) and the
        difference is computed on the rest, which keeps the test's power in high
        dimensions where the KSD's fades. ``bandwidth`` then applies per direction
        (``"median"``: on the projections).
    kernel : {"imq", "rbf"}, default="imq"
        Base kernel, shared by the two statistics.
    bandwidth : float or "median", default="median"
        Kernel bandwidth; ``"median"`` uses the median heuristic on the data given to
        :meth:`fit` (or to :meth:`test` when not fitted).
    kernel_params : dict, default=None
        Extra kernel parameters, e.g. ``{"beta": -0.5}`` for IMQ.
    variance : {"jackknife", "ustat"}, default="jackknife"
        Estimator of the standard deviation of the difference: the leave-one-out
        jackknife of the U-statistic difference, or the U-statistic (first-order
        projection) variance formula. See :mod:`skstein.relative`.
    alpha : float, default=0.05
        Significance level.
    model_score : {"auto", "exact", "posterior"}, default="auto"
        How the models' scores are obtained: ``"exact"`` calls ``grad_logpdf``;
        ``"posterior"`` averages ``grad_logpdf_conditional`` over posterior draws
        (``sample_posterior``); ``"auto"`` uses the exact score of a model that has
        one and the posterior route otherwise.
    n_posterior_samples : int, default=500
        Posterior draws per data point for posterior scores.
    burn_in : int, default=200
        Leading posterior draws discarded (MCMC burn-in).
    variant : {"g", "rg"}, default="g"
        maxSKSD variant (``discrepancy="maxsksd"`` only), see :class:`skstein.MaxSKSDTest`.
    n_slices : int, default=None
        Number of slices for ``variant="rg"``.
    train_size : float, default=0.2
        Fraction of the data that learns the directions when :meth:`test` is called
        on an unfitted maxSKSD test.
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the posterior draws (and the median heuristic's subsample for more
        than 2000 samples).
    max_memory : int, default=64 MiB
        Memory budget in bytes for the Stein-kernel temporaries.

    Attributes
    ----------
    bandwidth_ : float
        The bandwidth resolved by :meth:`fit`.
    kernel_ : RBF or IMQ
        The fitted base kernel.
    directions_ : tuple
        With ``discrepancy="maxsksd"``: ``((G_p, R_p, h_p), (G_q, R_q, h_q))``, each
        model's directions, slices and per-direction bandwidths learned by :meth:`fit`.
    n_features_in_ : int
        Number of features seen in :meth:`fit`.

    See Also
    --------
    RelativeMMDTest : the same question answered with samples of the models.
    skstein.KSDTest : goodness-of-fit test of one model.

    Notes
    -----
    When the two models give the same Stein matrix on the data (for instance
    ``model_p is model_q``) the variance is zero; the test then reports
    ``degenerate=True``, a p-value of 1 and does not reject.

    When P and Q are much closer to each other than to R (for instance the same
    latent model on both sides, its scores estimated from independent posterior
    draws) the first-order part of the difference nearly vanishes. Both variance
    estimates then count the second-order part of the U-statistic twice, so the
    studentised difference has a standard deviation below one (about 0.7 when the
    difference is fully degenerate) and the test is conservative: its rejection
    rate under H0 stays at or below ``alpha``.

    References
    ----------
    .. [1] H. Kanagawa, W. Jitkrittum, L. Mackey, K. Fukumizu, A. Gretton. "A Kernel
       Stein Test for Comparing Latent Variable Models", JRSS B, 2023.

    Examples
    --------
    >>> import numpy as np
    >>> from skstein import RelativeKSDTest
    >>> from skstein.distributions import Gaussian
    >>> X = np.random.default_rng(0).normal(size=(300, 2))
    >>> p, q = Gaussian(np.full(2, 1.0)), Gaussian(np.full(2, 0.1))
    >>> bool(RelativeKSDTest(p, q).test(X).reject)   # Q = N(0.1, I) is better
    True
    >>> bool(RelativeKSDTest(q, p).test(X).reject)
    False
    """

    def __init__(self, model_p, model_q, *, discrepancy="ksd", kernel="imq", bandwidth="median",
                 kernel_params=None, variance="jackknife", alpha=0.05, model_score="auto",
                 n_posterior_samples=500, burn_in=200, variant="g", n_slices=None,
                 train_size=0.2, random_state=None, max_memory=DEFAULT_MAX_MEMORY):
        self.model_p = model_p
        self.model_q = model_q
        self.discrepancy = discrepancy
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.kernel_params = kernel_params
        self.variance = variance
        self.alpha = alpha
        self.model_score = model_score
        self.n_posterior_samples = n_posterior_samples
        self.burn_in = burn_in
        self.variant = variant
        self.n_slices = n_slices
        self.train_size = train_size
        self.random_state = random_state
        self.max_memory = max_memory

    def _check_params(self):
        check_choice(self.discrepancy, "discrepancy", DISCREPANCIES)
        check_choice(self.variant, "variant", ("g", "rg"))
        _check_train_size(self.train_size)
        check_choice(self.kernel, "kernel", KERNELS)
        check_choice(self.variance, "variance", VARIANCES)
        check_choice(self.model_score, "model_score", MODEL_SCORES)
        check_alpha(self.alpha)
        check_positive_int(self.n_posterior_samples, "n_posterior_samples")
        check_positive_int(self.burn_in, "burn_in", minimum=0)
        check_positive_int(self.max_memory, "max_memory")
        for name in ("model_p", "model_q"):
            model = getattr(self, name)
            if self.model_score == "exact" or (self.model_score == "auto"
                                               and _has_exact_score(model)):
                resolve_score(model, name)
            else:
                check_latent_model(model, name)

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
        self._check_params()
        X = self._validate_X(X, reset=True)
        rngs = as_generator(self.random_state).spawn(4)
        self.bandwidth_ = resolve_bandwidth(X, self.bandwidth, random_state=rngs[0])
        self.kernel_ = make_kernel(self.kernel, self.bandwidth_, self.kernel_params)
        if self.discrepancy == "maxsksd":
            S_p, _ = _model_score(self.model_p, X, self.model_score, self.n_posterior_samples,
                                  self.burn_in, rngs[1], "model_p")
            S_q, _ = _model_score(self.model_q, X, self.model_score, self.n_posterior_samples,
                                  self.burn_in, rngs[2], "model_q")
            self.directions_ = tuple(_learn_directions(X, S, self, r)
                                     for S, r in zip((S_p, S_q), rngs[3].spawn(2)))
        return self

    def _scores(self, X):
        """Validated X, both models' scores, the kernel, and whether a posterior was used."""
        self._check_params()
        rng = as_generator(self.random_state)
        bw_rng, p_rng, q_rng = rng.spawn(3)
        if _is_fitted(self):
            X = self._validate_X(X, reset=False)
            kern = self.kernel_
        else:
            X = check_samples(X, min_samples=3)
            h = resolve_bandwidth(X, self.bandwidth, random_state=bw_rng)
            kern = make_kernel(self.kernel, h, self.kernel_params)
        S_p, post_p = _model_score(self.model_p, X, self.model_score, self.n_posterior_samples,
                                   self.burn_in, p_rng, "model_p")
        S_q, post_q = _model_score(self.model_q, X, self.model_score, self.n_posterior_samples,
                                   self.burn_in, q_rng, "model_q")
        return X, S_p, S_q, kern, post_p or post_q

    def test(self, X):
        """Run the test on ``X``.

        With ``discrepancy="maxsksd"``, unless :meth:`fit` learned the directions,
        ``X`` is split (``train_size``): each model's directions are learned on the
        first part and the test runs on the rest.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data from the unknown distribution R (at least 3 rows; at least 8 for an
            unfitted maxSKSD test).

        Returns
        -------
        RelativeTestResult
        """
        X, S_p, S_q, kern, latent = self._scores(X)
        method = _method_name(self.discrepancy, kern, self.variance, latent)
        if self.discrepancy == "ksd":
            sums = _ksd_pair_sums(X, S_p, S_q, kern, self.max_memory)
            return _result_from_sums(sums, X.shape[0], self.variance, self.alpha, method,
                                     kern.bandwidth)
        fitted = getattr(self, "directions_", None)
        if fitted is None:
            rng = as_generator(self.random_state).spawn(4)[3]
            n_train = _train_rows(X.shape[0], self.train_size)
            perm = rng.permutation(X.shape[0])
            tr, te = perm[:n_train], perm[n_train:]
            fitted = tuple(_learn_directions(X[tr], S[tr], self, r)
                           for S, r in zip((S_p, S_q), rng.spawn(2)))
            X, S_p, S_q = X[te], S_p[te], S_q[te]
        sums = _maxsksd_pair_sums(X, S_p, S_q, fitted, self.kernel, self.kernel_params,
                                  self.max_memory)
        bandwidth = np.stack([fitted[0][2], fitted[1][2]])
        return _result_from_sums(sums, X.shape[0], self.variance, self.alpha, method, bandwidth)

    def score(self, X, y=None):
        r"""The studentised difference :math:`\sqrt n\,\hat D_n / \hat\sigma` on ``X``.

        Positive values favour Q, negative values P; 0.0 when the variance is
        degenerate. ``GridSearchCV`` over ``bandwidth`` or ``kernel`` therefore picks
        the kernel under which Q's advantage is most significant.
        """
        return self.test(X).zscore


class RelativeMMDTest(_RelativeMixin, BaseEstimator):
    r"""Relative MMD test of Bounliphone et al. (2016): is model Q closer to the data than P?

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
            if not callable(getattr(model, "rvs", None)) and not _is_sample_array(model):
                raise TypeError(
                    f"{name} must be a distribution with rvs(n, random_state) or a 2-D array of "
                    f"its samples; got {type(model).__name__}."
                )

    def fit(self, X, y=None):
        """Resolve the bandwidth on ``X``; returns ``self``."""
        self._check_params()
        X = self._validate_X(X, reset=True)
        bw_rng = as_generator(self.random_state).spawn(1)[0]
        self.bandwidth_ = resolve_bandwidth(X, self.bandwidth, random_state=bw_rng)
        return self

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

    def test(self, X):
        """Run the test on ``X`` (data from R); returns a :class:`RelativeTestResult`."""
        self._check_params()
        rng = as_generator(self.random_state)
        bw_rng, p_rng, q_rng = rng.spawn(3)
        if _is_fitted(self):
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
        zscore, pvalue, threshold, reject, degenerate = _decide(stat, sigma, n, self.alpha, scale)
        return RelativeTestResult(
            statistic=float(stat), pvalue=pvalue, threshold=threshold, reject=reject,
            alpha=float(self.alpha), method="relative MMD (rbf, projection variance)",
            n_samples=n, discrepancy_p=float(mmd_p), discrepancy_q=float(mmd_q),
            sigma=sigma, zscore=zscore, variance="projection", bandwidth=float(h),
            degenerate=degenerate,
        )

    def score(self, X, y=None):
        """The studentised difference (positive values favour Q)."""
        return self.test(X).zscore


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

