"""The relative KSD test, with exact or posterior scores, KSD or maxSKSD."""

import numpy as np
from sklearn.base import BaseEstimator

from .._estimator import is_fitted
from .._random import as_generator
from .._validation import (
    check_alpha,
    check_choice,
    check_positive_int,
    check_samples,
    resolve_score,
)
from ..directions import search_directions
from ..discrepancy import DEFAULT_MAX_MEMORY, resolve_bandwidth, sliced_stein_sums, stein_sums
from ..kernels import KERNELS, make_kernel
from . import _discrete
from ._base import RelativeMixin, check_train_size, train_rows
from ._latent import MODEL_SCORES, check_latent_model, evaluate_model_score, has_exact_score
from ._stats import VARIANCES, result_from_sums

__all__ = ["RelativeKSDTest", "relative_ksd", "DISCREPANCIES"]

#: Discrepancies the relative KSD test accepts.
DISCREPANCIES = ("ksd", "maxsksd")


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


def _relative_result(X, S_p, S_q, kernel, variance, alpha, max_memory, method):
    """Relative KSD test on validated ``X`` with the models' scores ``S_p``, ``S_q``."""
    sums = _ksd_pair_sums(X, S_p, S_q, kernel, max_memory)
    return result_from_sums(sums, X.shape[0], variance, alpha, method, kernel.bandwidth)


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
    S_p, post_p = evaluate_model_score(model_p, X, model_score, n_posterior_samples,
                                       burn_in, p_rng, "model_p")
    S_q, post_q = evaluate_model_score(model_q, X, model_score, n_posterior_samples,
                                       burn_in, q_rng, "model_q")
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


class RelativeKSDTest(RelativeMixin, BaseEstimator):
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
    operator : {None, "difference", "zanella-barker"}, default=None
        The Stein operator. None: the models decide; discrete models (with
        ``n_values``, e.g. :class:`~skstein.distributions.Categorical` or the latent
        :class:`~skstein.distributions.LDA`) get the Zanella-Barker operator and
        continuous models the Langevin operator. With discrete models the data are
        integer arrays, ``kernel`` is one of :mod:`skstein.discrete`'s (``"imq"`` on
        one-hot codes by default, ``"imq-bow"`` on bag-of-words counts for documents),
        ``discrepancy`` must be ``"ksd"``, and a latent model's ratios are averaged over
        ``n_posterior_samples`` Gibbs sweeps after ``burn_in``.

    Attributes
    ----------
    bandwidth_ : float
        The bandwidth resolved by :meth:`fit`.
    kernel_ : RBF or IMQ
        The fitted base kernel.
    directions_ : tuple
        With ``discrepancy="maxsksd"``: ``((G_p, R_p, h_p), (G_q, R_q, h_q))``, each
        model's directions, slices and per-direction bandwidths learned by :meth:`fit`.
    operator_ : str
        With discrete models: the operator used.
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
                 train_size=0.2, random_state=None, max_memory=DEFAULT_MAX_MEMORY,
                 operator=None):
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
        self.operator = operator

    def _check_params(self):
        check_choice(self.discrepancy, "discrepancy", DISCREPANCIES)
        check_choice(self.variant, "variant", ("g", "rg"))
        check_train_size(self.train_size)
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
                                               and has_exact_score(model)):
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
        if _discrete.discrete_operator(self) is not None:
            return _discrete.fit(self, X)
        self._check_params()
        X = self._validate_X(X, reset=True)
        rngs = as_generator(self.random_state).spawn(4)
        self.bandwidth_ = resolve_bandwidth(X, self.bandwidth, random_state=rngs[0])
        self.kernel_ = make_kernel(self.kernel, self.bandwidth_, self.kernel_params)
        if self.discrepancy == "maxsksd":
            S_p, _ = self._model_score("model_p", X, rngs[1])
            S_q, _ = self._model_score("model_q", X, rngs[2])
            self.directions_ = tuple(_learn_directions(X, S, self, r)
                                     for S, r in zip((S_p, S_q), rngs[3].spawn(2)))
        return self

    def _model_score(self, name, X, rng):
        """(scores, used_posterior) of ``model_p`` or ``model_q`` on ``X``."""
        return evaluate_model_score(getattr(self, name), X, self.model_score,
                                    self.n_posterior_samples, self.burn_in, rng, name)

    def _scores(self, X):
        """Validated X, both models' scores, the kernel, and whether a posterior was used."""
        self._check_params()
        rng = as_generator(self.random_state)
        bw_rng, p_rng, q_rng = rng.spawn(3)
        if is_fitted(self):
            X = self._validate_X(X, reset=False)
            kern = self.kernel_
        else:
            X = check_samples(X, min_samples=3)
            h = resolve_bandwidth(X, self.bandwidth, random_state=bw_rng)
            kern = make_kernel(self.kernel, h, self.kernel_params)
        S_p, post_p = self._model_score("model_p", X, p_rng)
        S_q, post_q = self._model_score("model_q", X, q_rng)
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
        if _discrete.discrete_operator(self) is not None:
            return _discrete.test(self, X)
        X, S_p, S_q, kern, latent = self._scores(X)
        method = _method_name(self.discrepancy, kern, self.variance, latent)
        if self.discrepancy == "ksd":
            sums = _ksd_pair_sums(X, S_p, S_q, kern, self.max_memory)
            return result_from_sums(sums, X.shape[0], self.variance, self.alpha, method,
                                    kern.bandwidth)
        fitted = getattr(self, "directions_", None)
        if fitted is None:
            rng = as_generator(self.random_state).spawn(4)[3]
            n_train = train_rows(X.shape[0], self.train_size)
            perm = rng.permutation(X.shape[0])
            tr, te = perm[:n_train], perm[n_train:]
            fitted = tuple(_learn_directions(X[tr], S[tr], self, r)
                           for S, r in zip((S_p, S_q), rng.spawn(2)))
            X, S_p, S_q = X[te], S_p[te], S_q[te]
        sums = _maxsksd_pair_sums(X, S_p, S_q, fitted, self.kernel, self.kernel_params,
                                  self.max_memory)
        bandwidth = np.stack([fitted[0][2], fitted[1][2]])
        return result_from_sums(sums, X.shape[0], self.variance, self.alpha, method, bandwidth)

    def score(self, X, y=None):
        r"""The studentised difference :math:`\sqrt n\,\hat D_n / \hat\sigma` on ``X``.

        Positive values favour Q, negative values P; 0.0 when the variance is
        degenerate. ``GridSearchCV`` over ``bandwidth`` or ``kernel`` therefore picks
        the kernel under which Q's advantage is most significant.
        """
        return self.test(X).zscore
