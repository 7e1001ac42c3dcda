"""Random-feature Stein discrepancy tests (Huggins & Mackey 2018), random-Fourier-feature KSD."""

import copy

import numpy as np
from sklearn.base import BaseEstimator

from .._random import as_generator
from .._validation import (
    check_choice,
    check_positive_float,
    check_positive_int,
    check_samples,
    evaluate_score,
)
from ..distributions import rvs_kind
from ..features import (
    DEFAULT_FEATURE_MEMORY,
    RFSD_FEATURES,
    draw_random_features,
    gaussian_functional_null,
    moments_functional_null,
    rfsd_functional,
    rfsd_log_shift,
    rfsd_moments,
    rfsd_value,
    resolve_feature_scale,
)
from ._base import BaselineTestMixin, is_fitted
from ._common import SampleTestMethods, model_sample, simulated_null_result

__all__ = ["RFSDTest"]

RFSD_NULLS = ("gaussian", "monte-carlo")
# Student-t importance distribution: heavy-tailed rows, whose Gaussian null is unreliable
_MONTE_CARLO_FEATURES = ("l1-imq",)
N_GAUSSIAN = 3000
N_MONTE_CARLO = 499
#: rows of the model sample whose median distance an unfitted test with the Monte Carlo
#: null gives every sample's features (the median heuristic reads at most 1000 rows)
REFERENCE_ROWS = 1000


class RFSDTest(SampleTestMethods, BaselineTestMixin, BaseEstimator):
    r"""Random-feature Stein discrepancy test (Huggins & Mackey 2018), near-linear time.

    The statistic is :math:`\mathrm{R\Phi SD}^2 = \sum_a (\frac{1}{J} \sum_j
    |\mathbb{E}_n[T_a \Phi(x, z_j)]|^r / \nu(z_j))^{2/r}` for ``J`` features
    :math:`z_j \sim \nu` (see :mod:`skstein.features` for the feature families and their
    settings), computed in :math:`O(nJD)` time and :math:`O(nD)` memory beyond a
    :math:`(JD)^2` covariance (for the Gaussian null from the tested sample with
    :math:`n < JD`, an :math:`n \times n` Gram matrix of the feature rows instead):

    * ``feature="l1-imq"``: :math:`r = 1`, IMQ feature functions with a Student-t
      importance distribution (Huggins & Mackey's "L1 IMQ");
    * ``feature="l2-sechexp"``: :math:`r = 2`, hyperbolic secant feature functions with
      an exponential tilt (their "L2 SechExp");
    * ``feature="rff-gauss"`` / ``"rff-cauchy"``: :math:`r = 2` with random Fourier
      features of the Gaussian / product-Cauchy kernel: the random-feature
      approximation of the KSD with that kernel (their "Gauss RFF" and "Cauchy RFF").
      Random-Fourier-feature KSD is an option of this class rather than a class of its
      own because it is exactly an :math:`L^2` random-feature Stein discrepancy with
      :math:`\Phi(x, (\omega, b)) = \sqrt{2}\cos(\omega^\top x + b)` and :math:`\nu` the
      kernel's spectral measure: same statistic, same null, same estimator.

    Null distribution, ``null="monte-carlo"``: the statistic is computed in the same way
    on ``n_simulate`` samples of size ``n`` from ``model.rvs``, and the p-value is
    :math:`(1 + \#\{T_b \ge T\}) / (1 + B)`. A fitted test uses its features on every
    sample. An unfitted one draws each sample's features as it draws those of ``X``:
    from the same random stream, centred at that sample's mean, at one length scale for
    all (``bandwidth`` if a float, else the median distance of ``REFERENCE_ROWS``
    (1000) further samples of the model). Under H0 the ``B + 1`` samples are
    exchangeable, so the level is exact at every ``n`` and ``D``. The length scale is
    not each sample's own: the L1 IMQ statistic scales as a high power of it (the
    exponent :math:`\beta'` below), so with each sample's median distance the test saw
    mostly the sample's spread. A sample with standard deviation 1.2 against N(0, I)
    was then never rejected (0 of 200 at ``D = 2``, 5 and 20), and unit-variance
    Laplace data, whose median distance is smaller, were rejected for that reason. Nor
    are the features centred at the model's mean: data far from it then fall between
    them (a shift of 5 in every coordinate at ``D = 3``, ``n = 100`` was rejected in 6
    of 30 trials that way, and in all 30 as here). Bumps at the model's length scale
    can still miss data far wider than the model, whose points lie between them: a
    standard deviation of 10 (and a mean of 1 in every coordinate) at ``D = 20``,
    ``n = 100`` was rejected in 12 of 30 trials (and at ``D = 3`` in 18 of 30). The
    cost is ``n_simulate`` times that of the statistic (``B = 499`` by default: 0.2-0.3
    s at ``D = 5``, ``n = 200`` and 0.7-1.1 s at ``D = 20``, ``n = 1000`` on a 2-core
    machine, against 0.002 s and 0.007 s for the Gaussian null).

    Null distribution, ``null="gaussian"``: under H0 the vector :math:`g =
    \sqrt{n}\,\mathbb{E}_n[\Xi]` of weighted feature means tends to :math:`N(0, \Sigma)`
    and :math:`n\,\mathrm{R\Phi SD}^2 = F(g)` (with :math:`F(g) = \sum_a (\sum_j
    |g_{ja}|^r)^{2/r}`) to :math:`F(G)`, :math:`G \sim N(0, \Sigma)`. The test draws
    ``n_simulate`` such :math:`G` from the eigendecomposition of an estimate of
    :math:`\Sigma` (for :math:`r = 2`, the weighted chi-square mixture
    :math:`\sum_k \lambda_k Z_k^2`), as Huggins & Mackey's ``RFDH0SimCovDrawV``.
    :math:`\Sigma` is the covariance of the feature rows on the tested sample
    (``null_samples=None``) or on ``null_samples`` draws from ``model.rvs`` (their
    code's choice: 5000 draws, plus 500 per dimension for L1 IMQ). Their code then
    tests at lowered nominal levels tuned on null trials up to ``D = 20``; this class
    does not: ``reject`` is ``pvalue <= alpha``. It needs only the score and costs
    little beyond the statistic.

    ``null="auto"`` (the default) takes the Monte Carlo null for ``"l1-imq"`` when the
    model samples exactly (:func:`~skstein.distributions.rvs_kind` ``"exact"``: not
    the Gibbs chains of :class:`~skstein.distributions.GaussBernRBM`, whose 499 samples
    of 1000 points in 50 dimensions would take 20 minutes) and ``null_samples`` is not
    set, and the Gaussian null otherwise. The reason: L1 IMQ's Student-t importance
    distribution, with 0.5 degrees of freedom, puts features far in the tails with
    weights :math:`1/\nu(z_j)` that span many orders of magnitude (1e6 to 1e28 for
    ten features in ``D = 5``), so the feature rows are heavy-tailed, their sample
    covariance is a poor estimate of :math:`\Sigma` and the Gaussian limit a poor
    guide at the sample sizes of practice.
    At ``gamma = 0.25`` the IMQ exponent :math:`\beta' = -(D + \mathrm{df})/0.32` makes
    each feature a sharp bump, whose sample mean is dominated by the few samples near
    :math:`z_j`. For a model with a score only, L1 IMQ keeps the Gaussian null and its
    errors; ``"rff-gauss"`` or ``"l2-sechexp"`` is then the calibrated choice.

    Measured with N(0, I) as model, 10 features, level 5% (the last rows with
    ``benchmarks/bench_rfsd_null.py``, 200 trials per cell):

    * L1 IMQ, Gaussian null, rejection rate on null samples: 6-10% in ``D = 2`` (300
      trials each at ``n = 500`` and 2000, covariance from the data or from model
      samples), 10-12% at ``n = 50``, 100 and 300 (400 trials each), 16-18.5% in
      ``D = 5`` at ``n = 200`` and 2000, 11.3% (300 trials) in ``D = 20`` at
      ``n = 1000``; but 0.3% in ``D = 50`` at ``n = 300``, where the covariance of model
      samples gave 8.5% instead; with ``gamma = 1``, 4.3-6% in ``D = 2``.
    * L1 IMQ, Monte Carlo null (``B = 99``, 200 trials each): 5.0%, 6.0%, 6.0% and 5.5%
      at ``(D, n)`` = (2, 100), (5, 200), (20, 500) and (50, 300).
    * L1 IMQ, power, in the same cells: against unit-variance Laplace data it rejected
      0.285, 0.205, 0.125 and 0.10 with the Monte Carlo null, against unit-variance
      Student-t(5) data 0.19, 0.195, 0.17 and 0.115, against a mean shift of 0.3 along
      one axis, which the bumps far out in the tails barely see, 0.22, 0.065, 0.07 and
      0.055, and against N(0, 1.44 I) 0.335, 0.32, 0.38 and 0.355. With the Gaussian
      null, at ``D = 20``, the Laplace and Student-t data were rejected at 0.045 and
      0.04 (the data's covariance) and at 0.20 and 0.22 (the model's, which rejected
      0.105 of null samples).
    * L2 SechExp, whose secant importance distribution has exponential tails, keeps the
      Gaussian null: 7.0% at ``D = 20``, ``n = 1000`` (300 trials), 2.0% at ``D = 20``,
      ``n = 500``, 5.5% at ``D = 5``, ``n = 200``, and 2.3-3.8% in ``D = 2`` at
      ``n = 50`` to 300 (400 trials each). Its Monte Carlo null (``null="monte-carlo"``)
      held the level too (5.5% and 7.0% at ``D = 5`` and 20) and had more power at
      ``D = 20``, ``n = 500`` against the Laplace, Student-t and wider data (0.185,
      0.24 and 0.97, against 0.025, 0.02 and 0.345 with the Gaussian null), less
      against the mean shift (0.405 against 0.475); at ``D = 5``, ``n = 200``, 0.205,
      0.105, 0.10 and 0.375 against 0.185, 0.17, 0.185 and 0.055.
    * The random Fourier features, bounded, keep the Gaussian null: 4.5% (Gaussian,
      400 trials) and 3.3% (Cauchy, 300) at ``D = 20``, ``n = 1000``; 3.3-5.0% in
      ``D = 2`` at ``n = 50`` to 300 (400 trials each).

    Parameters
    ----------
    model : distribution or callable
        The model p: an object with ``grad_logpdf(X)`` (and ``rvs(n, random_state)`` for
        the Monte Carlo null or ``null_samples``) or a callable ``X -> grad log p(X)``.
    feature : {"l1-imq", "l2-sechexp", "rff-gauss", "rff-cauchy"}, default="l1-imq"
    n_features : int, default=10
        Number of random features ``J`` (Huggins & Mackey's experiments: 10).
    bandwidth : float or "median", default="median"
        Length scale :math:`\ell` of the features: IMQ constant :math:`c = 4\ell`,
        secant rate :math:`1/(\xi\ell)`, Fourier kernel bandwidth :math:`\ell`.
        ``"median"``: median :math:`L^2` distance (:math:`L^1` for ``"l2-sechexp"``)
        of at most 1000 rows of the data (of ``REFERENCE_ROWS`` samples of the model
        for an unfitted test with the Monte Carlo null).
    gamma : float, default=0.25
        Huggins & Mackey's :math:`\gamma \in (0, 1]`, which sets the IMQ exponent and the
        secant rates.
    nu_df : float, default=0.5
        Degrees of freedom of the Student-t importance distribution (``"l1-imq"``).
    null : {"auto", "monte-carlo", "gaussian"}, default="auto"
        How the null distribution is simulated (above): from samples of the model (exact
        level, needs ``model.rvs``) or from the Gaussian limit of the feature means.
    null_samples : int, default=None
        With the Gaussian null: estimate :math:`\Sigma` on this many samples of
        ``model.rvs`` instead of on the tested sample.
    n_simulate : int, default=None
        Draws from the simulated null distribution: model samples for the Monte Carlo
        null (default 499), Gaussian vectors for the Gaussian null (default 3000).
    alpha : float, default=0.05
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the features, the model samples and the null draws.
    max_memory : int, default=32 MiB
        Bound on one block of feature rows; results do not depend on it.

    Attributes
    ----------
    features_ : skstein.features.RandomFeatures
        The drawn features (centred at the mean of the data given to :meth:`fit`).
    bandwidth_ : float
        The length scale :math:`\ell`.
    n_features_in_ : int

    Notes
    -----
    :meth:`fit` draws the random features, centred and scaled on the sample.
    :meth:`discrepancy` is :math:`\mathrm{R\Phi SD}^2` with the features :meth:`test`
    uses (the fitted ones, or drawn on the sample given as the test draws them: at
    the model's length scale for the Monte Carlo null, at the sample's for the
    Gaussian null); it can underflow to 0 or overflow to ``inf`` in high dimension.
    :meth:`score` is the power criterion :math:`\mathrm{R\Phi SD}^2 /
    \hat\sigma_{H_1}`, where :math:`\hat\sigma^2_{H_1} = \nabla F(\bar\Xi)^\top
    \hat\Sigma\, \nabla F(\bar\Xi)` is the delta-method variance of
    :math:`\sqrt{n}\,\mathrm{R\Phi SD}^2` under H1 (:math:`\nabla F = 2\bar\Xi` for
    :math:`r = 2`, :math:`2 (\sum_j |\bar\Xi_{ja}|)\,\mathrm{sign}(\bar\Xi_{ja})` for
    :math:`r = 1`); the ratio does not depend on the rescaling of the features and is 0
    when the variance vanishes.

    In the result of :meth:`test`, ``statistic`` is :math:`\mathrm{R\Phi SD}^2` (a
    V-statistic, no factor ``n``), ``null_distribution`` the statistics of the model
    samples (Monte Carlo null, ``bootstrap="monte-carlo"``) or the simulated draws divided
    by ``n`` (Gaussian null, ``bootstrap`` ``"gaussian-functional"``, or
    ``"chi2-mixture"`` for :math:`r = 2`), ``bandwidth`` the length scale :math:`\ell`.
    When the discrepancy leaves the range of a double (``"l1-imq"`` or ``"l2-sechexp"``
    in high dimension, where importance weights and kernel values span hundreds of
    orders of magnitude), ``statistic``, ``threshold`` and ``null_distribution`` are all
    reported multiplied by a common factor :math:`e^{-2M}` named in ``method``;
    ``pvalue`` and ``reject`` do not depend on it.

    See Also
    --------
    skstein.features.rfsd : the statistic as a function.
    FSSDTest : Stein features at a finite set of test locations.

    References
    ----------
    .. [1] J. H. Huggins, L. Mackey. "Random Feature Stein Discrepancies",
       NeurIPS 2018.
    .. [2] A. Rahimi, B. Recht. "Random Features for Large-Scale Kernel Machines",
       NeurIPS 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from skstein import RFSDTest
    >>> from skstein.distributions import Gaussian
    >>> X = np.random.default_rng(0).normal(0.3, 1.0, size=(1000, 2))
    >>> test = RFSDTest(Gaussian(np.zeros(2)), feature="rff-gauss", random_state=0)
    >>> bool(test.test(X).reject)
    True
    """

    def __init__(self, model, *, feature="l1-imq", n_features=10, bandwidth="median",
                 gamma=0.25, nu_df=0.5, null="auto", null_samples=None, n_simulate=None,
                 alpha=0.05, random_state=None, max_memory=DEFAULT_FEATURE_MEMORY):
        self.model = model
        self.feature = feature
        self.n_features = n_features
        self.bandwidth = bandwidth
        self.gamma = gamma
        self.nu_df = nu_df
        self.null = null
        self.null_samples = null_samples
        self.n_simulate = n_simulate
        self.alpha = alpha
        self.random_state = random_state
        self.max_memory = max_memory

    def _null_kind(self):
        """The null this test simulates: ``"gaussian"`` or ``"monte-carlo"``."""
        if self.null != "auto":
            return self.null
        if (self.feature in _MONTE_CARLO_FEATURES and self.null_samples is None
                and rvs_kind(self.model) == "exact"):
            return "monte-carlo"
        return "gaussian"

    def _n_draws(self, kind):
        if self.n_simulate is not None:
            return self.n_simulate
        return N_MONTE_CARLO if kind == "monte-carlo" else N_GAUSSIAN

    def _check_params(self):
        check_choice(self.null, "null", ("auto",) + RFSD_NULLS)
        kind = self._null_kind()
        self._check_baseline_params(self._n_draws(kind), "n_simulate")
        check_choice(self.feature, "feature", RFSD_FEATURES)
        check_positive_int(self.n_features, "n_features")
        gamma = check_positive_float(self.gamma, "gamma")
        if gamma > 1.0:
            raise ValueError(f"gamma must be in (0, 1], got {self.gamma!r}.")
        check_positive_float(self.nu_df, "nu_df")
        check_positive_int(self.max_memory, "max_memory")
        if isinstance(self.bandwidth, str):
            if self.bandwidth != "median":
                raise ValueError(
                    f"bandwidth must be a positive float or 'median', got {self.bandwidth!r}.")
        else:
            check_positive_float(self.bandwidth, "bandwidth")
        if self.null_samples is not None:
            check_positive_int(self.null_samples, "null_samples", minimum=2)
            if kind == "monte-carlo":
                raise ValueError("null_samples sets the covariance of the Gaussian null; "
                                 "null='monte-carlo' has none. Leave null_samples=None or "
                                 "take null='gaussian'.")
            if rvs_kind(self.model) is None:
                raise TypeError("null_samples needs a model with an rvs(n, random_state) "
                                f"method; {type(self.model).__name__} has none.")
        if kind == "monte-carlo" and rvs_kind(self.model) is None:
            raise TypeError("null='monte-carlo' draws samples from the model, which needs "
                            "an rvs(n, random_state) method; "
                            f"{type(self.model).__name__} has none.")

    def _draw(self, X, rng, bandwidth=None):
        return draw_random_features(self.feature, X, int(self.n_features), rng,
                                    bandwidth=self.bandwidth if bandwidth is None else bandwidth,
                                    gamma=float(self.gamma), nu_df=float(self.nu_df))

    def _fit(self, X):
        rng = as_generator(self.random_state)
        self.features_ = self._draw(X, rng.spawn(1)[0])
        self.bandwidth_ = self.features_.scale

    def _model_scale(self, d, rng):
        """The length scale of every sample's features in an unfitted test with the
        Monte Carlo null: ``bandwidth`` if a float, else the median distance of
        ``REFERENCE_ROWS`` samples of the model."""
        if not isinstance(self.bandwidth, str):
            return float(self.bandwidth)
        reference = model_sample(self.model, REFERENCE_ROWS, d, rng)[0]
        return resolve_feature_scale(reference, self.feature, "median", random_state=rng)

    def _prepare(self, X, rngs):
        """The validated sample, the model's scores there and the features: the fitted
        ones, else drawn on ``X`` (``rngs[0]``), at the length scale of a sample of the
        model (``rngs[3]``) for the Monte Carlo null, at that of ``X`` for the Gaussian
        null."""
        self._check_params()
        if is_fitted(self):
            X = self._validate_X(X, reset=False)
            feats = self.features_
        else:
            X = check_samples(X)
            scale = None
            if self._null_kind() == "monte-carlo":
                scale = self._model_scale(X.shape[1], rngs[3])
            feats = self._draw(X, rngs[0], scale)
        if feats.Z.shape[1] != X.shape[1]:
            raise ValueError(f"X has {X.shape[1]} features but the random features have "
                             f"{feats.Z.shape[1]}.")
        S = evaluate_score(self.model, X, "model")
        return X, S, feats

    def _statistic(self, X, S, feats):
        r""":math:`\mathrm{R\Phi SD}^2` times :math:`e^{-2M}`, and the shift :math:`M`."""
        shift = rfsd_log_shift(X, feats, max_memory=self.max_memory)
        mom = rfsd_moments(X, S, feats, shift, second=False, max_memory=self.max_memory)
        return rfsd_value(mom, feats, shift)[0], shift

    def _test(self, X):
        rngs = as_generator(self.random_state).spawn(4)
        model_rng, null_rng = rngs[1], rngs[2]
        # the Monte Carlo null draws each sample's features as those of X are drawn
        redraw = None if is_fitted(self) else copy.deepcopy(rngs[0])
        X, S, feats = self._prepare(X, rngs)
        if self._null_kind() == "monte-carlo":
            return self._monte_carlo_test(X, S, feats, redraw, model_rng)
        n, d = X.shape
        shift = rfsd_log_shift(X, feats, max_memory=self.max_memory)
        if self.null_samples is not None:
            X0, S0 = model_sample(self.model, self.null_samples, d, model_rng)
            shift = max(shift, rfsd_log_shift(X0, feats, max_memory=self.max_memory))
            mom = rfsd_moments(X, S, feats, shift, second=False, max_memory=self.max_memory)
            cov = rfsd_moments(X0, S0, feats, shift, max_memory=self.max_memory).covariance()
        else:
            mom = rfsd_moments(X, S, feats, shift, max_memory=self.max_memory)
            cov = None
        stat = rfsd_value(mom, feats, shift)[0]
        n_draws = int(self._n_draws("gaussian"))
        if cov is None:  # the data's covariance, from the rows when n < J D
            null = moments_functional_null(mom, feats.order, feats.n_features, d, n_draws,
                                           null_rng) / n
        else:
            null = gaussian_functional_null(cov, feats.order, feats.n_features, d, n_draws,
                                            null_rng) / n
        null_name = "chi2-mixture" if feats.order == 2 else "gaussian-functional"
        cov_name = ("data" if self.null_samples is None
                    else f"{int(self.null_samples)} model samples")
        return self._result(stat, null, shift, n, feats, null_name,
                            f"{null_name} null, covariance from {cov_name}")

    def _monte_carlo_test(self, X, S, feats, redraw, model_rng):
        """The statistic of ``X`` against its values on samples of the model, with the
        fitted features or with features drawn on each sample from the same stream
        (``redraw``) at the length scale of those of ``X``."""
        n, d = X.shape
        n_draws = int(self._n_draws("monte-carlo"))
        stat, shift = self._statistic(X, S, feats)
        log_null = np.empty(n_draws)
        for b, child in enumerate(model_rng.spawn(n_draws)):
            Y, SY = model_sample(self.model, n, d, child)
            fY = feats if redraw is None else self._draw(Y, copy.deepcopy(redraw), feats.scale)
            value, shift_y = self._statistic(Y, SY, fY)
            with np.errstate(divide="ignore"):
                log_null[b] = np.log(value) + 2.0 * shift_y
        with np.errstate(over="ignore", under="ignore"):
            null = np.exp(log_null - 2.0 * shift)
        drawn = ("fitted features" if redraw is None
                 else f"features drawn on each sample at length scale {feats.scale:.4g}")
        return self._result(stat, null, shift, n, feats, "monte-carlo",
                            f"Monte Carlo null: {n_draws} model samples of size {n}, {drawn}")

    def _result(self, stat, null, shift, n, feats, bootstrap, describe):
        """The result, in the unit :math:`e^{2M}` restores where it can (class Notes)."""
        factor = _restoring_factor(shift, stat, null)
        note = ""
        if factor is None:
            note = f", reported times exp({-2.0 * shift:.6g})"
            factor = 1.0
        return simulated_null_result(
            stat, null, alpha=self.alpha,
            method=f"RFSD ({self.feature}, J={feats.n_features}, {describe}{note})",
            n_samples=n, bootstrap=bootstrap, n_bootstrap=null.size,
            bandwidth=float(feats.scale), factor=factor, independent=True)

    def _discrepancy(self, X):
        X, S, feats = self._prepare(X, as_generator(self.random_state).spawn(4))
        stat, shift = self._statistic(X, S, feats)
        with np.errstate(over="ignore", under="ignore"):
            return float(stat * np.exp(2.0 * shift))

    def _score(self, X):
        X, S, feats = self._prepare(X, as_generator(self.random_state).spawn(4))
        shift = rfsd_log_shift(X, feats, max_memory=self.max_memory)
        mom = rfsd_moments(X, S, feats, shift, max_memory=self.max_memory)
        d = X.shape[1]
        J = feats.n_features
        mu = mom.mean
        value = float(rfsd_functional(mu[None, :], feats.order, J, d)[0])
        if feats.order == 2:
            grad = 2.0 * mu
        else:
            M = mu.reshape(J, d)
            grad = (2.0 * np.abs(M).sum(axis=0)[None, :] * np.sign(M)).ravel()
        var = float(grad @ mom.covariance() @ grad)
        return value / np.sqrt(var) if var > 0 else 0.0


def _restoring_factor(shift, stat, null):
    """``exp(2 shift)`` if it restores finite, non-degenerate values, else None."""
    if shift == 0.0:
        return 1.0
    with np.errstate(over="ignore", under="ignore"):
        factor = float(np.exp(2.0 * shift))
        ok = np.isfinite(factor) and factor > 0
        if ok:
            vals = np.concatenate([[stat], null]) * factor
            scaled = np.concatenate([[stat], null])
            ok = np.all(np.isfinite(vals)) and np.all((vals != 0) | (scaled == 0))
    return factor if ok else None
