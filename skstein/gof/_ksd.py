"""The kernel Stein discrepancy goodness-of-fit test."""

import warnings

import numpy as np
from sklearn.base import BaseEstimator

from .._bootstrap import (
    BOOTSTRAPS,
    auto_bootstrap,
    bootstrap_draws,
    dense_weights,
)
from .._estimator import discrete_input_tags
from .._random import as_generator
from .._engines import ArrayAPIEngine, EngineMixin, EstimatorEngine, select_engine
from .._validation import (
    check_bandwidth_rule,
    check_bool,
    check_positive_int,
    check_whiten,
    resolve_score,
)
from ..discrepancy import DEFAULT_MAX_MEMORY, resolve_bandwidth, resolve_bandwidths
from ..kernels import (
    GRID_TOP,
    auto_whitening,
    blind_kernels,
    make_kernel,
    warn_vanishing_kernels,
    whitening,
)
from . import _discrete
from ._base import SteinTestMixin, aggregated_result, is_fitted
from ._common import (
    WHITEN_COVARIANCE,
    SampleTestMethods,
    check_monte_carlo,
    model_sample,
    simulated_null_result,
)
from ._maxsksd import (
    POOLED_SHARES,
    pooled_by_model_samples,
    pooled_fourth_test,
    pooled_monte_carlo,
    pooled_result,
    pooled_second_test,
)
from ._tilt import check_tilt, resolve_tilt

__all__ = ["KSDTest", "LangevinKSD", "DiscreteKSD", "select_ksd_engine"]


#: Width, in log-bandwidth, of the ``"centred"`` weights: a weight falls to
#: ``exp(-1/2)`` of its peak at four times (or a quarter of) the median heuristic.
CENTRED_WIDTH = np.log(4.0)


def centred_weights(bandwidths, centres):
    r"""Weights :math:`\propto \exp(-\log^2(h_l / c_l) / (2 \log^2 4))`, mean one.

    ``centres`` holds each bandwidth's median heuristic (of its geometry).
    """
    x = np.log(np.asarray(bandwidths, dtype=np.float64) / np.asarray(centres))
    w = np.exp(-0.5 * (x / CENTRED_WIDTH) ** 2)
    return w / w.mean()


def _check_bandwidth_weights(value):
    """``"uniform"``, ``"centred"`` or a positive float array (validated)."""
    if isinstance(value, str):
        if value not in ("uniform", "centred"):
            raise ValueError(f"bandwidth_weights must be 'uniform', 'centred' or an array of "
                             f"positive floats, got {value!r}.")
        return value
    try:
        w = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"bandwidth_weights must be 'uniform', 'centred' or an array of "
                        f"positive floats, got {value!r}.") from None
    if w.ndim != 1 or w.size == 0 or not (np.all(np.isfinite(w)) and np.all(w > 0)):
        raise ValueError(f"bandwidth_weights as an array must be 1-D, positive and finite, "
                         f"got {value!r}.")
    return w


class KSDTest(EngineMixin, SampleTestMethods, SteinTestMixin, BaseEstimator):
    r"""Kernel Stein discrepancy goodness-of-fit test.

    Tests H0: the sample comes from ``model`` against H1: it does not, using only the
    model's score :math:`\nabla \log p` (so ``model`` may be unnormalised). The
    statistic is the squared KSD (Liu, Lee & Jordan 2016; Chwialkowski, Strathmann &
    Gretton 2016) and its null distribution is bootstrapped.

    With ``bandwidth="aggregate"`` (or an array of bandwidths) the test runs at every
    bandwidth of a collection and aggregates them (KSDAgg, Schrab, Guedj & Gretton
    2022): all statistics share one bootstrap (the same weight draws), each gets its
    bootstrap p-value, and the test rejects when the smallest of them is below the
    level-corrected threshold that the same draws give for the minimum of ``L``
    p-values (see :func:`skstein._bootstrap.aggregate_minp`). The level is that of a
    single bootstrap test for any collection, without a data split, and the power
    follows the best bandwidth of the collection up to the price of the correction,
    which is small when neighbouring bandwidths give similar tests. The collection is
    :func:`skstein.kernels.bandwidth_grid`: ``n_bandwidths`` values in geometric
    progression from the 1st percentile of the pairwise distances (the scale of a
    cluster of the data) to twice the median heuristic (the scale of the data).

    The aggregated test is the default. Measured on the ``gof-gaussian`` cases
    (n = 1000, D from 2 to 100, 100 trials per point) its level stayed within three
    binomial standard deviations of 0.05 and its power was never below the
    median-heuristic test's beyond binomial error, and far above it where the median
    bandwidth is too wide (Laplace at D = 10: 1.00 against 0.24; a shrunk direction
    at D = 20: 1.00 against 0.61); on a mixture model it finds the cluster scale that
    the median misses. The correction is paid for every bandwidth, so where only the
    broad ones see the departure it can fall well below the median test: 0.27
    against 0.53 on a 1-D mixture with changed weights (user guide, "Bandwidths and
    aggregation"). It costs 3.2 to 5.3 times the single-bandwidth test at
    N = 1000, D = 100 and 4.5 to 7.9 times at N = 5000, D = 1, depending on the
    machine (ten statistics and their bootstrap forms, one set of draws;
    ``benchmarks/bench_aggregate.py``): the Gram products are shared, but each
    bandwidth's bootstrap forms take their own product of about N^2 x n_bootstrap
    operations.
    ``bandwidth="median"`` is the classic test.

    A radial kernel compares points by their Euclidean distance, so when the data's
    spread differs between directions the widest directions dominate it, and a
    difference along them is seen only at bandwidths where the narrow directions have
    averaged out. ``whiten=True`` runs the test in the coordinates that whiten the
    data (:func:`skstein.kernels.whitening`: a Mahalanobis kernel, the same
    hypothesis), ``whiten="aggregate"`` aggregates both geometries' collections in one
    test, and the default ``whiten="auto"`` does so when the data are anisotropic:
    when the Ledoit-Wolf covariance of the sample has a condition number of at least
    :data:`~skstein.kernels.AUTO_WHITEN_CONDITION` (4; isotropic samples of 30 points
    or more stay below 2.6), and only for the collection the library resolves
    (``bandwidth="aggregate"``: a single bandwidth, or one the user gives, keeps the
    data's units). Otherwise it is ``whiten=False``, with the same numbers.
    Measured (``n = 300``, 200 trials per rate, rates at ``alpha = 0.05``,
    binomial standard errors up to 0.035; D = 5 / 20): on a rotated Gaussian with
    variances from 0.1 to 10, a shift of half a standard deviation along the widest
    axis is rejected 0.10 / 0.07 in the data's coordinates and 1.00 / 1.00 whitened or
    aggregated; a variance 1.5 times larger along that axis 0.06 / 0.03, 0.52 / 0.05
    whitened and 0.42 / 0.03 aggregated. Whitening alone loses a mixture whose
    clusters are too wide (three clusters, variance 0.7 instead of 0.5): 0.83 / 0.48
    in the data's coordinates, 0.15 / 0.09 whitened and 0.75 / 0.37 aggregated. On
    isotropic alternatives the three agree within binomial error. Levels stayed
    within three binomial standard deviations of 0.05 on the rotated Gaussian, the
    mixture and a standard normal. (These rates were measured with the Ledoit-Wolf
    covariance; the whitened geometry now takes its held-out choice, ``whitening(X,
    covariance="held-out")``.) Aggregating both geometries costs 1.9 to 2.5 times the
    test in one geometry (``benchmarks/bench_aggregate.py``, N = 1000, D = 10 and 100).
    The default, measured on other seeds (``benchmarks/bench_whiten_auto.py``,
    ``whiten=False`` / default, D = 5 / 20): the widest-axis shift at condition number
    16 0.505 / 1.000 and 0.360 / 1.000, at 100 0.070 / 1.000 and 0.110 / 1.000; the
    wider clusters 0.825 / 0.795 and 0.885 / 0.815; the levels there 0.030-0.070;
    Student-t(5) data against N(0, I) the same numbers (no sample whitened). Where the
    scales differ by orders of magnitude (variances from e^-3.5 to e^3.5 along random
    axes, ``bench_unseen.py --part scales``) the held-out choice takes the sample
    covariance, whose whitened coordinates are white where Ledoit-Wolf's are not (user
    guide, "Bandwidths").

    Parameters
    ----------
    model : distribution or callable
        The model p: an object with ``grad_logpdf(X)`` or a callable ``X -> grad log p(X)``.
    kernel : {"rbf", "imq"}, default="rbf"
        Base kernel (see :mod:`skstein.kernels` for the conventions).
    bandwidth : "aggregate", "median", float or array-like, default="aggregate"
        ``"aggregate"``: the aggregated test over
        :func:`~skstein.kernels.bandwidth_grid` (for a discrete model, over
        :func:`skstein.discrete.discrete_bandwidth_grid` of the embedded distances);
        an array-like of floats: the aggregated test over those bandwidths;
        ``"median"``: the median heuristic; a float: that bandwidth. Collections and
        the median are resolved on the data given to :meth:`fit` (or to :meth:`test`
        when not fitted). A float, or a given collection, whose kernel vanishes
        between every two samples (a bandwidth on the wrong scale) warns.
    n_bandwidths : int, default=10
        Size of the collection for ``bandwidth="aggregate"``.
    kernel_params : dict, default=None
        Extra kernel parameters, e.g. ``{"beta": -0.5}`` for IMQ.
    statistic : {"u", "v"}, default="u"
        U-statistic (unbiased) or V-statistic.
    bootstrap : {"auto", "multinomial", "rademacher", "monte-carlo"}, default="auto"
        Null distribution by the multinomial bootstrap (Liu et al. 2016, Gong et al.
        2021 Eq. 13) or the wild (Rademacher) bootstrap (Chwialkowski et al. 2016).
        Both are asymptotic; the multinomial one runs a little liberal at about a
        hundred points and warns below 50, where it can reject a true model far more
        often than ``alpha`` (the Rademacher one held the level there; see the user
        guide's KSD page). ``"auto"``: the Rademacher draws for samples of fewer
        than :data:`~skstein._bootstrap.AUTO_RADEMACHER_BELOW` (120) points, the
        multinomial ones from there on (the result's ``bootstrap`` names the draws).
        On a 3-D mixture of three overlapping components at ``N = 100`` (10000 null
        trials) the default test rejected 0.057 with the multinomial draws (bound
        0.0565) and 0.048 with the Rademacher ones; on three alternatives at that size
        the Rademacher draws cost 0.03 of power. For a model with a sampler,
        ``"monte-carlo"`` computes the statistic in the same way on ``n_bootstrap``
        samples of ``model.rvs`` (unless fitted, the scales resolved on each: the
        bandwidths, and for a continuous model the whitening and the tilt's centre and
        scale, within the kernel families resolved on ``X``): a level exact for a
        fitted test and held at every size measured (from 10 points) for an unfitted
        one, at the cost of ``n_bootstrap`` passes (see the user guide's KSD page).
        For a discrete model ``"auto"`` takes it
        for the difference operator when the model samples exactly
        (:func:`~skstein.distributions.rvs_kind`): where a value is far rarer than its
        neighbour the difference score is heavy-tailed, and with the bootstrap the
        default test rejected true samples of a categorical model (three coordinates
        of five values, probabilities of Dirichlet(0.5)) in 0.375, 0.355, 0.15 and
        0.085 of 200 trials at 30, 100, 300 and 1000 points, where the Monte Carlo
        null held the level (``benchmarks/bench_discrete_null.py``).
    n_bootstrap : int, default=1000
        Number of bootstrap draws (shared by all bandwidths of a collection).
    alpha : float, default=0.05
        Significance level.
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the bootstrap (and the subsample of the bandwidth heuristics for more
        than 2000 samples).
    max_memory : int, default=64 MiB
        Memory budget in bytes for the Stein-kernel temporaries. The Stein matrix is
        never formed whole: it is computed by blocks of rows within this budget, and
        the results do not depend on it. Data on a device (the Array API engine) use
        at least 2 GiB, so that the device runs a few large products.
    operator : {None, "difference", "zanella-barker"}, default=None
        The Stein operator. None: the model decides; a discrete model (one with
        ``n_values``, e.g. :class:`~skstein.distributions.Categorical`) gets the
        Zanella-Barker operator, whose weights stay in [0, 1] where the difference
        score blows up, and a continuous model the Langevin operator. A discrete
        operator needs a discrete model and integer data; the kernels are then those
        of :mod:`skstein.discrete` (``"rbf"`` is the exponentiated Hamming kernel).
    whiten : bool, "aggregate" or "auto", default="auto"
        ``False``: the kernel acts on the data's coordinates. ``True``: on the whitened
        coordinates ``X @ A`` of :func:`~skstein.kernels.whitening` (the data's
        sample covariance or its Ledoit-Wolf estimate, whichever gives held-out rows
        the larger Gaussian likelihood: ``covariance="held-out"``), with the model's
        scores mapped by the chain rule;
        bandwidths, including a float, are then in whitened units. ``"aggregate"``:
        both geometries' kernels in one aggregated test (one bootstrap, the min-p
        correction over all of them), about twice the cost. ``"auto"``: ``"aggregate"``
        when the library resolves the collection (``bandwidth="aggregate"``) and the
        data are anisotropic (the condition number of their Ledoit-Wolf covariance is
        at least :data:`~skstein.kernels.AUTO_WHITEN_CONDITION`, 4, and they spread
        along every axis of it: :func:`~skstein.kernels.auto_whitening`), ``False``
        otherwise; ``geometries_`` (or a result's ``labels``) says which. The whitening
        (and the choice of ``"auto"``) is resolved on the data given to :meth:`fit`
        (or to :meth:`test` when not fitted), like the bandwidths. ``True`` and
        ``"aggregate"``: continuous models only; a discrete model takes ``"auto"`` as
        ``False``.
    bandwidth_weights : "uniform", "centred" or array-like, default="uniform"
        Weights of the bandwidths in the aggregated test (KSDAgg's weighted test;
        the level stays exact for any weights): bandwidth ``l`` rejects at ``w_l``
        times the common corrected level, the weights scaled to mean one.
        ``"centred"``: :math:`w_l \propto \exp(-\log^2(h_l / h_{med}) / (2 \log^2
        4))`, centred on the median heuristic of the data (of each geometry with
        ``whiten``), which gives back part of the power the uniform correction costs
        when only the broad bandwidths see the departure, for a small loss where
        only the small ones do (measured in the user guide, "Bandwidths and
        aggregation"); an array: one positive weight per kernel, in the order of
        ``bandwidth_`` (without the tilted kernels of ``tilt="auto"``, which take the
        same weights). Ignored for a single bandwidth; continuous models only.
    tilt : "auto" or float in [0, 2], default="auto"
        The exponent :math:`q` of a tilted base kernel :math:`w(x) k(x, y) w(y)`,
        :math:`w(x) = (1 + \|x - c\|^2 / \sigma^2)^{q/2}` (:math:`c` the sample's
        spatial median, :math:`\sigma` the median distance to it): the diffusion Stein
        operator that keeps the test's power in the tails of a model whose score
        fades there (see Notes). ``0``: the plain kernel. ``"auto"``: :math:`q = 1 -
        a` for a model score that grows like :math:`\|x\|^a` far beyond the sample,
        at most half the order of the model's moments (which keeps the tilted
        diagonal's mean finite), both probed at 10 and 100 times the sample's scale
        (:func:`skstein.gof._tilt.tail_probe`) and rounded to halves, in [0, 2]: 0 for
        a Gaussian, a mixture or any score that grows linearly (the plain test, the
        same numbers), 1 for a Laplace, 1.5 for a Student-t(3), 2 for a Student-t(6),
        0.5 for a Cauchy; 0 for fewer than 50 points
        (:data:`~skstein.gof._tilt.MIN_TILT_SAMPLES`: below it the weights rest on a
        handful of outer points: with the plain and tilted kernels, true Student-t(3)
        samples of 10 points had been rejected in 0.115 of 400 trials). Resolved on
        the data given to :meth:`fit` (or to :meth:`test` when not fitted);
        continuous models only (a discrete model takes ``"auto"`` as 0).
    moments : bool, default=False
        ``True``: :meth:`test` also compares the whole sample's second moments (every
        direction at once, the linear Stein kernel) and its fourth moment (the
        saturated radial test function) with the model's, the two whole-sample tests
        of :class:`MaxSKSDTest`'s default ``moment="pooled"`` (user guide,
        "Fourth moments in every direction"), and rejects when the KSD test rejects
        at ``alpha / 2`` or a moment test at ``alpha / 4`` (a weighted Bonferroni,
        valid whatever their dependence; the result's ``pvalue`` is the smallest
        p-value divided by its share, and ``labels``, ``statistics`` and
        ``pvalues`` hold the KSD test's most significant kernel and the two moment
        tests). The radial kernels barely see heavier or lighter tails, or a
        variance or a correlation, along directions that nobody names; the moments
        do. On random problems that no choice saw (``benchmarks/bench_unseen.py``,
        200 points, 200 trials a cell) rotated Student-t(10) data against a
        Student-t(4) model in six dimensions were found in 0.070 of the trials
        without and 1.00 with the moments, a variance of 1.5 along a random
        direction in D = 2 / 5 / 10 in 0.485 / 0.365 / 0.125 and 0.870 / 0.725 /
        0.390; the KSD part's halved level cost a mean shift of 0.25 some power
        (0.805 / 0.710 / 0.655 and 0.715 / 0.625 / 0.530); true samples were
        rejected in 0.030-0.040, and at 30 to 200 points in 0.0175-0.070 (the five
        random models at 30, 60 and 100 points, seed 2028, 200 trials each;
        Student-t(3) in one and five dimensions, a correlated two-dimensional
        Gaussian and Laplace, 400 trials each; these levels with the Ledoit-Wolf
        whitening). It costs 1.2 to 1.8 times the test
        without them (the second moments' bootstrap is a product of ``N^2`` terms
        per draw), and in one dimension below 500 points, where 1000 model samples
        calibrate the moments, 0.8 s against 0.025 s at 200 points. The
        user's choice, for departures of unknown kind; continuous models only. The
        moments' draws are their own (the KSD part gives the numbers it gives at
        ``alpha / 2`` without them); in one dimension below 500 points, and with
        ``bootstrap="monte-carlo"``, they are calibrated on samples of the model
        when it samples exactly, as in :class:`MaxSKSDTest`. They are computed on
        the host, whatever the data's library. :meth:`discrepancy` and
        :meth:`score` stay those of the KSD.

    Attributes
    ----------
    bandwidth_ : float or ndarray of shape (n_bandwidths,)
        The bandwidth, or the collection, resolved by :meth:`fit` (with
        ``whiten="aggregate"``, the Euclidean collection followed by the whitened one).
    kernel_ : RBF, IMQ or tuple of them
        The fitted base kernel (one per bandwidth of a collection, and per geometry
        with ``whiten="aggregate"``).
    geometries_ : tuple of str
        The geometry of each fitted kernel: ``"euclidean"`` or ``"whitened"``
        (continuous models).
    whitening_ : tuple (A, B) of ndarrays of shape (n_features, n_features) or None
        The fitted whitening of points (``X @ A``) and scores (``S @ B``); None for
        ``whiten=False``, and for ``"auto"`` when it kept the data's coordinates.
    bandwidth_weights_ : ndarray of shape (n_kernels,) or None
        The fitted weights of an aggregated test (mean one); None when uniform or
        for a single bandwidth.
    tilt_ : Tilt or None
        The fitted tilt (exponent, centre and scale of the weight), None for the plain
        kernel (continuous models).
    n_features_in_ : int
        Number of features seen in :meth:`fit`.
    operator_ : str
        With a discrete model: the operator used.
    engine_ : LangevinKSD or DiscreteKSD
        How the test computes, chosen by :meth:`fit` from the model and the data:
        the discrete operators for a discrete model; else the Langevin operator on
        the numba kernels for NumPy data, or with the data's own library and device
        for arrays of another Array API library (CuPy, PyTorch) under scikit-learn's
        ``array_api_dispatch`` (see the "Performance" guide). Every method calls it.

    Notes
    -----
    :meth:`fit` resolves the bandwidth or the collection (and the whitening) on the
    data it is given and chooses the engine; :meth:`test` then runs on any sample with
    those settings (unfitted, it resolves them on the sample it tests). For an
    aggregated test the result's ``pvalue`` and ``reject`` are those of the aggregated
    test; ``bandwidths``, ``statistics`` and ``pvalues`` hold each bandwidth's
    statistic and own p-value, ``rejected`` which bandwidths reject at the corrected
    per-bandwidth level ``pvalue_threshold``; ``statistic``, ``bandwidth``,
    ``threshold`` and ``null_distribution`` are those of the most significant
    bandwidth. With ``whiten="aggregate"``, ``labels`` names the geometry
    (``"euclidean"`` or ``"whitened"``) of each bandwidth. :meth:`discrepancy` is the
    squared KSD (the array of the statistics for a collection). :meth:`score` is the
    power criterion :math:`\mathrm{KSD}^2_U / \hat\sigma_{H_1}`
    (:meth:`skstein.discrepancy.SteinSums.power_criterion`), the largest over a
    collection, so ``GridSearchCV`` over ``bandwidth`` and ``kernel`` picks the most
    powerful test; a kernel that is below ``1e-12`` of its peak between every two
    points of the sample (a bandwidth far below the data's scale;
    :func:`skstein.kernels.blind_kernels`) sees nothing and scores ``-inf``, the worst
    score, so a search never picks it. When the bandwidths were fitted by a rule
    (``"median"``, ``"aggregate"``) and none of them sees a pair of the scored ``X``
    (``X`` on a scale far above the fitted data's), :meth:`score` raises a ValueError
    instead: the fitted test cannot measure ``X``.

    A model whose score fades in the tails (Student-t) or stays bounded (Laplace)
    gives test functions that vanish where the tails are, and the plain KSD misses
    tails lighter or heavier than the model's. With ``tilt="auto"`` such a model's
    test aggregates the plain kernels and the tilted ones (the same bandwidths; one
    bootstrap, the min-p correction over all: ``geometries_`` and a result's
    ``labels`` end in ``", tilted"`` for the latter), about twice the cost (1.8 times
    at N = 300 and 1000, D = 5). Measured (``benchmarks/bench_tilt.py``, N = 200,
    200 trials, plain / default): a Student-t(3) model in one dimension against
    t(6) data 0.065 / 0.295, Laplace against a Gaussian 0.64 / 0.70, the model
    scaled by 1.3 0.365 / 0.41; in five dimensions t(6) 0.07 / 0.13; in twenty
    every case within binomial error of the plain test, and a Cauchy model (tilt
    0.5, its moments allow little) as well. True samples were rejected at 0.020 to
    0.075 (Student-t(3), product and elliptical, Cauchy, Laplace; D = 1, 5, 20).

    See Also
    --------
    skstein.ksd : the statistic as a function.

    References
    ----------
    .. [1] Q. Liu, J. Lee, M. Jordan. "A Kernelized Stein Discrepancy for
       Goodness-of-fit Tests", ICML 2016.
    .. [2] K. Chwialkowski, H. Strathmann, A. Gretton. "A Kernel Test of Goodness of
       Fit", ICML 2016.
    .. [3] A. Schrab, B. Guedj, A. Gretton. "KSD Aggregated Goodness-of-fit Test",
       NeurIPS 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from skstein import KSDTest
    >>> from skstein.distributions import Gaussian
    >>> X = np.random.default_rng(0).laplace(size=(500, 2)) / np.sqrt(2)
    >>> result = KSDTest(Gaussian(np.zeros(2)), random_state=0).test(X)
    >>> bool(result.reject), result.bandwidths.shape
    (True, (10,))
    >>> median = KSDTest(Gaussian(np.zeros(2)), bandwidth="median", random_state=0).test(X)
    >>> bool(median.reject)
    True
    """

    def __init__(self, model, *, kernel="rbf", bandwidth="aggregate", n_bandwidths=10,
                 kernel_params=None, statistic="u", bootstrap="auto", n_bootstrap=1000,
                 alpha=0.05, random_state=None, max_memory=DEFAULT_MAX_MEMORY, operator=None,
                 whiten="auto", bandwidth_weights="uniform", tilt="auto", moments=False):
        self.model = model
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.n_bandwidths = n_bandwidths
        self.kernel_params = kernel_params
        self.statistic = statistic
        self.bootstrap = bootstrap
        self.n_bootstrap = n_bootstrap
        self.alpha = alpha
        self.random_state = random_state
        self.max_memory = max_memory
        self.operator = operator
        self.whiten = whiten
        self.bandwidth_weights = bandwidth_weights
        self.tilt = tilt
        self.moments = moments

    #: the accepted values of ``bootstrap``
    _bootstraps = BOOTSTRAPS + ("auto", "monte-carlo")

    def __sklearn_tags__(self):
        return discrete_input_tags(super().__sklearn_tags__(), self.model)

    def _bootstrap_kind(self, n):
        """The draws of a test of ``n`` points: ``bootstrap``, or for ``"auto"``
        :func:`~skstein._bootstrap.auto_bootstrap` of ``n``."""
        return auto_bootstrap(n) if self.bootstrap == "auto" else self.bootstrap

    def _aggregated(self):
        """Whether ``bandwidth`` asks for a collection."""
        b = self.bandwidth
        return (isinstance(b, str) and b == "aggregate") or (
            not isinstance(b, (str, bytes)) and np.ndim(b) > 0)

    def _check_discrete_weights(self):
        w = self.bandwidth_weights
        if not (isinstance(w, str) and w == "uniform"):
            raise ValueError(f"bandwidth_weights={w!r} is for continuous models; a discrete "
                             "model's collection is aggregated with uniform weights.")

    def _geometries(self):
        """The geometries the kernels may act in, from ``whiten``; ``"auto"`` adds the
        whitened one to the collection the library resolves (``bandwidth="aggregate"``),
        and :meth:`_resolve_kernels` keeps it only for anisotropic data."""
        if isinstance(self.whiten, str) and self.whiten == "auto":
            collection = isinstance(self.bandwidth, str) and self.bandwidth == "aggregate"
            return ("euclidean", "whitened") if collection else ("euclidean",)
        return check_whiten(self.whiten, auto=True)

    def _resolve_tilt(self, X, X_device=None):
        """The :class:`~skstein.gof._tilt.Tilt` of the test on ``X``, or None: for
        ``tilt="auto"``, only with the collection the library resolves
        (``bandwidth="aggregate"``, as ``whiten="auto"``) and of at least
        :data:`~skstein.gof._tilt.MIN_TILT_SAMPLES` rows. With ``X_device``, the
        model's score is probed on that device."""
        tilt = check_tilt(self.tilt)
        if isinstance(tilt, str) and not (isinstance(self.bandwidth, str)
                                          and self.bandwidth == "aggregate"):
            return None
        if X_device is None:
            return resolve_tilt(self.model, X, tilt)
        engine, raw = ArrayAPIEngine(), resolve_score(self.model, "model")
        return resolve_tilt(self.model, X, tilt,
                            lambda P: engine.host(raw(engine.like(P, X_device))))

    def _resolve_kernels(self, X, rng, X_device=None, like=None):
        """``(bandwidth_, kernel_, geometries_, whitening_, bandwidth_weights_, tilt_)``
        on ``X``.

        ``X`` is the host's copy; ``X_device``, the data on a device when given, serves
        the bandwidth heuristics of the unwhitened geometry (its distances are computed
        and sorted there; the same order statistics).

        ``kernel_`` is a tuple (one kernel per bandwidth and geometry) for a collection
        or ``whiten="aggregate"``; ``geometries_`` names the geometry of each kernel
        (``", tilted"`` appended for a tilted kernel: with ``tilt="auto"`` and a tilt,
        every kernel twice, plain and tilted); ``bandwidth_weights_`` is None for
        uniform weights or a single kernel.

        ``like``: the ``(geometries_, tilt_)`` of another sample, whose families (the
        geometries, the tilt's exponent, plain and tilted kernels) the kernels on ``X``
        keep, their scales (bandwidths, whitening, the tilt's centre and scale)
        resolved on ``X``: the Monte Carlo null's samples.
        """
        check_positive_int(self.n_bandwidths, "n_bandwidths")
        check_bandwidth_rule(self.bandwidth)
        rule = _check_bandwidth_weights(self.bandwidth_weights)
        geometries = self._geometries()
        if like is not None:
            geometries = tuple(dict.fromkeys(g.partition(", ")[0] for g in like[0]))
            white = whitening(X, WHITEN_COVARIANCE) if "whitened" in geometries else None
        elif "whitened" not in geometries:
            white = None
        elif isinstance(self.whiten, str) and self.whiten == "auto":
            white = auto_whitening(X, WHITEN_COVARIANCE)
            geometries = geometries if white is not None else ("euclidean",)
        else:
            white = whitening(X, WHITEN_COVARIANCE)
        hs, kernels, labels, centres = [], [], [], []
        for geometry in geometries:
            Xg = X @ white[0] if geometry == "whitened" else X
            Xh = Xg if geometry == "whitened" or X_device is None else X_device
            if self._aggregated():
                h = resolve_bandwidths(Xh, self.bandwidth, self.n_bandwidths, random_state=rng)
            else:
                h = np.array([resolve_bandwidth(Xh, self.bandwidth, random_state=rng)])
            if isinstance(rule, str) and rule == "centred":
                # the grid ends at GRID_TOP times the median heuristic; a given collection
                # (or a single bandwidth) is centred on the median heuristic of the data
                med = h[-1] / GRID_TOP if (isinstance(self.bandwidth, str) and h.size > 1) else \
                    resolve_bandwidth(Xh, "median", random_state=rng)
                centres.append(np.full(h.size, med))
            ks = [make_kernel(self.kernel, float(b), self.kernel_params) for b in h]
            if not isinstance(self.bandwidth, str):  # the user's scale: does it see pairs?
                warn_vanishing_kernels(Xg, ks)
            hs.append(h)
            kernels += ks
            labels += [geometry] * h.size
        h = np.concatenate(hs)
        kernels = tuple(kernels)
        if isinstance(rule, str) and rule == "uniform":
            weights = None
        elif isinstance(rule, str):
            weights = centred_weights(h, np.concatenate(centres))
        else:
            weights = rule
            if weights.shape != h.shape:
                raise ValueError(
                    f"bandwidth_weights must have one value per kernel ({h.size}: "
                    f"{len(geometries)} geometr{'ies' if len(geometries) > 1 else 'y'} x "
                    f"{h.size // len(geometries)} bandwidths), got {weights.size}.")
        if like is None:
            tilt, both = self._resolve_tilt(X, X_device), isinstance(self.tilt, str)
        else:  # the other sample's exponent (its tilt where X has no spread)
            tilt = like[1] and (resolve_tilt(self.model, X, like[1].exponent) or like[1])
            both = not all(g.endswith("tilted") for g in like[0])
        if tilt is not None and both:
            # "auto": the plain and the tilted kernels in one aggregated test
            h, kernels = np.concatenate([h, h]), kernels + kernels
            labels = labels + [f"{g}, tilted" for g in labels]
            weights = None if weights is None else np.concatenate([weights, weights])
        elif tilt is not None:
            labels = [f"{g}, tilted" for g in labels]
        if len(kernels) == 1 and not self._aggregated():
            return float(h[0]), kernels[0], tuple(labels), white, None, tilt
        return h, kernels, tuple(labels), white, weights, tilt

    def _select_engine(self, X):
        return select_ksd_engine(self, X)

    def _test(self, X):
        return self._engine(X).test(self, X)

    def _discrepancy(self, X):
        return self._engine(X).discrepancy(self, X)

    def _score(self, X):
        return self._engine(X).score(self, X)


class LangevinKSD(EstimatorEngine):
    """:class:`KSDTest` for a continuous model (the Langevin Stein operator).

    Computes through ``compute``, a :class:`~skstein._engines.NumbaEngine` (NumPy data,
    numba kernels) or :class:`~skstein._engines.ArrayAPIEngine` (arrays of another
    library under scikit-learn's ``array_api_dispatch``). The whitening is resolved on
    the host and the bandwidth heuristics on the data's device (the same order
    statistics of the distances); the bootstrap weights are drawn on the host from the
    estimator's seed and cross as packed signs, so both give the same p-values.
    """

    def fit(self, est, X):
        est._check_common_params()
        check_bool(est.moments, "moments")
        check_monte_carlo(est)
        est._geometries()
        check_tilt(est.tilt)
        X = self.compute.validate(est, X, reset=True)
        rng = as_generator(est.random_state)
        (est.bandwidth_, est.kernel_, est.geometries_, est.whitening_,
         est.bandwidth_weights_, est.tilt_) = est._resolve_kernels(
            self.compute.host(X), rng, self.compute.on_device(X))

    def _tilted(self, tilt, X, S):
        """``(scores, weights)`` of a tilted kernel at ``X`` (``weights`` None without a
        tilt), in ``X``'s arrays; the weights on the host (the passes take them there)."""
        if tilt is None:
            return S, None
        St, w = tilt.apply(self.compute.host(X), self.compute.host(S))
        return self.compute.like(St, X), w

    def _prepare(self, est, X, rng, companions=()):
        """``(X, kernels, parts, bandwidth_weights, S)``: validated X, the fitted (or
        resolved) ``kernels``, ``(kernel_, geometries_, whitening_, tilt_)``, the
        geometries' parts, and the model's scores at X.

        Each part is ``((points, scores, weights), kernels, companions, maps, tilt)``
        for one label of ``geometries_`` (a geometry, tilted or not): the data and the
        model's scores (tilted, for a tilted part), or their whitened images, with the
        tilt's weights (None for a plain part), and the same for each array of
        ``companions`` (NumPy arrays of X's shape, paired row by row with X: their Stein
        sums and forms are added to X's, the statistic of the kernel :math:`h(x, y) +
        h(x', y')` on the pairs; the kernels are resolved on X alone); ``maps`` is
        None, or the matrices ``(A, B)`` that take points and scores into the geometry;
        ``tilt`` is the part's :class:`~skstein.gof._tilt.Tilt`, or None.
        """
        est._check_common_params()
        est._geometries()
        if is_fitted(est):
            X = self.compute.validate(est, X, reset=False)
            kern, labels, white = est.kernel_, est.geometries_, est.whitening_
            weights, tilt = est.bandwidth_weights_, est.tilt_
        else:
            check_tilt(est.tilt)
            X = self.compute.check_samples(X)
            _, kern, labels, white, weights, tilt = est._resolve_kernels(
                self.compute.host(X), rng, self.compute.on_device(X))
        S = self.compute.scores(est.model, X, "model")
        kernels = (kern, labels, white, tilt)
        return X, kernels, self._parts(est, X, S, kernels, companions), weights, S

    def _parts(self, est, X, S, kernels, companions=()):
        """The parts of :meth:`_prepare` for ``X`` and its scores ``S`` under
        ``kernels``, ``(kernel_, geometries_, whitening_, tilt_)``."""
        kern, labels, white, tilt = kernels
        pairs = [(C, self.compute.scores(est.model, C, "model")) for C in companions]
        if tilt is not None:  # the tilted parts' scores and weights
            tilted = (self._tilted(tilt, X, S),
                      [self._tilted(tilt, C, SC) for C, SC in pairs])
        kernels = kern if isinstance(kern, tuple) else (kern,)
        parts = []
        for label in dict.fromkeys(labels):
            ks = tuple(k for k, g in zip(kernels, labels) if g == label)
            geometry, _, tilt_label = label.partition(", ")
            if tilt_label:
                (Sx, wx), more = tilted
                points, cs = (X, Sx, wx), [(C,) + m for (C, _), m in zip(pairs, more)]
            else:
                points, cs = (X, S, None), [(C, SC, None) for C, SC in pairs]
            maps = None
            if geometry == "whitened":
                maps = A, B = tuple(self.compute.like(w, X) for w in white)
                points = (points[0] @ A, points[1] @ B, points[2])
                cs = [(C @ A, SC @ B, wc) for C, SC, wc in cs]
            parts.append((points, ks, cs, maps, tilt if tilt_label else None))
        return parts

    def _sums(self, est, points, ks, V):
        """The Stein sums and forms of the kernels ``ks`` on ``points``, ``(X, S,
        weights)`` of one geometry."""
        Xg, Sg, wg = points
        return self.compute.sums_and_forms(Xg, Sg, ks, V, max_memory=est.max_memory,
                                           weights=wg)

    def _part_sums(self, est, part, V):
        """The Stein sums of each kernel of a part and their forms for ``V`` (None: no
        forms), its companions' added."""
        points, ks, pairs, _, _ = part
        sums, null = self._sums(est, points, ks, V)
        for pair in pairs:
            more, more_null = self._sums(est, pair, ks, V)
            sums = [a + b for a, b in zip(sums, more)]
            if V is not None:
                null = null + more_null
        return sums, null

    def test(self, est, X, companions=()):
        rng = as_generator(est.random_state)
        bw_rng, boot_rng = rng.spawn(2)
        moments = check_bool(est.moments, "moments")
        if moments and companions:
            raise ValueError("moments=True tests the sample alone; it takes no companions.")
        X, kernels, parts, weights, S = self._prepare(est, X, bw_rng, companions)
        # moments=True: the KSD test at its share of the level, the moments beside it
        alpha = est.alpha * POOLED_SHARES[0] if moments else est.alpha
        kern, labels = kernels[:2]
        # kernels fitted on other data: does any see a pair of X? (the first rows settle
        # the usual case; only then is a device sample copied whole)
        if is_fitted(est) and all(blind_kernels(self.compute.host(pts[0][:100, :]), ks)[0].all()
                                  and blind_kernels(self.compute.host(pts[0]), ks)[0].all()
                                  for pts, ks, _, _, _ in parts):
            warn_vanishing_kernels(
                self.compute.host(parts[0][0][0]), parts[0][1], "bandwidth_",
                advice="X lies on a scale far above the data the test was fitted on; "
                       "rescale X, or fit the test on data of X's scale.")
        if est.bootstrap == "monte-carlo":
            check_monte_carlo(est)
            if companions:
                raise ValueError("bootstrap='monte-carlo' draws the model's samples alone; "
                                 "it takes no companions.")
            result = self._monte_carlo_test(est, X, kernels, parts, weights, boot_rng, alpha)
            return self._with_moments(est, X, S, result, rng, "monte-carlo") if moments \
                else result
        n = X.shape[0]
        kind = est._bootstrap_kind(n)
        V = bootstrap_draws(kind, n, est.n_bootstrap, boot_rng, est.statistic)
        sums, nulls = [], []
        for part in parts:
            part_sums, part_null = self._part_sums(est, part, V)
            sums += part_sums
            nulls.append(part_null)
        null = nulls[0] if len(nulls) == 1 else np.concatenate(nulls, axis=1)
        if est.statistic == "v":
            Vd = dense_weights(V)
            null += (Vd * Vd) @ np.stack([s.diag for s in sums], axis=1)
        stats = np.array([s.statistic(est.statistic) for s in sums])
        result = self._result(est, n, stats, null, kernels, parts, weights, kind,
                              f"{kind} bootstrap", alpha=alpha)
        return self._with_moments(est, X, S, result, rng, kind) if moments else result

    def _with_moments(self, est, X, S, result, rng, kind):
        """``moments=True``: the KSD test's ``result`` (at its share of the level) and
        the whole sample's second- and fourth-moment tests of :class:`MaxSKSDTest`,
        each at its share, combined by :func:`~skstein.gof._maxsksd.pooled_result`.
        Their draws are of the kind ``kind``, from children of ``rng`` that the KSD
        test does not use; computed on the host, with X's scores ``S``."""
        Xh, S = self.compute.host(X), self.compute.host(S)
        fourth_rng, second_rng, model_rng = rng.spawn(3)
        if kind == "monte-carlo" or pooled_monte_carlo(est, *Xh.shape):
            whole = pooled_by_model_samples(est, Xh, S, second_rng, fourth_rng, model_rng)
        else:
            whole = [pooled_second_test(est, Xh, S, second_rng,
                                        est.alpha * POOLED_SHARES[1], kind),
                     pooled_fourth_test(est, Xh, S, fourth_rng,
                                        est.alpha * POOLED_SHARES[2], kind)]
        return pooled_result(result, whole, est.alpha, prefix="KSD")

    def _result(self, est, n, stats, null, kernels, parts, weights, kind, null_name,
                independent=False, alpha=None):
        """The :class:`GOFTestResult` of the statistics ``stats`` against the draws
        ``null`` (one column per kernel); ``kind`` is the result's ``bootstrap``,
        ``null_name`` the method's name of the null. ``independent``: the draws were
        computed apart from the statistics (a Monte Carlo null). ``alpha``: the level
        (``est.alpha`` when None)."""
        kern, labels = kernels[:2]
        ks = tuple(k for _, part_ks, _, _, _ in parts for k in part_ks)
        method = f"KSD ({ks[0].name}, {est.statistic}-statistic, {null_name}"
        if len(parts) == 1 and labels[0].startswith("whitened"):
            method += ", whitened"
        tilts = [p[4] for p in parts if p[4] is not None]
        if tilts:
            both = "plain and " if len(tilts) < len(parts) else ""
            method += f", {both}tilted (q = {tilts[0].exponent:g})"
        common = dict(alpha=float(est.alpha if alpha is None else alpha), n_samples=n,
                      bootstrap=kind,
                      n_bootstrap=int(est.n_bootstrap))
        if not isinstance(kern, tuple):
            return simulated_null_result(stats[0], null[:, 0], method=method + ")",
                                         bandwidth=kern.bandwidth, independent=independent,
                                         **common)
        if len(parts) > 1:
            per = len(ks) // len(parts)
            families = "kernel families" if tilts else "geometries"  # the labels name them
            method += (f", aggregated over {len(parts)} {families} x {per} "
                       f"bandwidth{'s' if per > 1 else ''})")
            common["labels"] = labels
        else:
            method += f", aggregated over {len(ks)} bandwidths)"
        if weights is not None:
            method = method[:-1] + ", weighted)"
        return aggregated_result(stats, null, method, [k.bandwidth for k in ks],
                                 weights=weights, independent=independent, **common)

    def _monte_carlo_test(self, est, X, kernels, parts, weights, rng, alpha=None):
        """The test whose null is the statistic of each kernel on ``n_bootstrap`` samples
        of the model, computed as on X: under the fitted kernels, or (unfitted) under the
        kernel families resolved on X with their scales resolved on each sample."""
        n, d = X.shape
        fitted = is_fitted(est)
        stats = np.array([s.statistic(est.statistic) for part in parts
                          for s in self._part_sums(est, part, None)[0]])
        null = np.empty((int(est.n_bootstrap), stats.size))
        for b, child in enumerate(rng.spawn(int(est.n_bootstrap))):
            draw_rng, bw_rng = child.spawn(2)
            Y, SY = model_sample(est.model, n, d, draw_rng)
            kY = kernels
            if not fitted:  # the families of X, their scales resolved on Y
                with warnings.catch_warnings():  # any warning was given on X
                    warnings.simplefilter("ignore")
                    _, k, labels, white, _, tilt = est._resolve_kernels(
                        Y, bw_rng, like=kernels[1::2])
                kY = (k, labels, white, tilt)
            Y, SY = self.compute.like(Y, X), self.compute.like(SY, X)
            null[b] = [s.statistic(est.statistic)
                       for part in self._parts(est, Y, SY, kY)
                       for s in self._part_sums(est, part, None)[0]]
        return self._result(est, n, stats, null, kernels, parts, weights, "monte-carlo",
                            f"Monte Carlo null of {int(est.n_bootstrap)} model samples",
                            independent=True, alpha=alpha)

    def _all_sums(self, est, X, companions=()):
        _, (kern, *_), parts, _, _ = self._prepare(est, X, as_generator(est.random_state),
                                                companions)
        sums = [s for part in parts for s in self._part_sums(est, part, None)[0]]
        return sums, isinstance(kern, tuple)

    def discrepancy(self, est, X, companions=()):
        sums, aggregated = self._all_sums(est, X, companions)
        values = np.array([s.statistic(est.statistic) for s in sums])
        return values if aggregated else float(values[0])

    @staticmethod
    def _best_criterion(part_sums):
        """The largest power criterion over ``(sums, blind)`` of the parts. A kernel that
        sees no pair has criterion 0 whatever the data: the worst score, so that a
        search never prefers it to a kernel that sees something."""
        return max((float(s.power_criterion()) for sums, blind in part_sums
                    for s, b in zip(sums, blind) if not b), default=-np.inf)

    def _sums_and_blind(self, est, parts):
        return [(self._part_sums(est, part, None)[0],
                 blind_kernels(self.compute.host(part[0][0]), part[1])[0]) for part in parts]

    def score_companions(self, est, X, companion_sets):
        """:meth:`score` of ``X`` paired with each array of ``companion_sets`` in turn
        (one companion each); X's kernels, scores and Stein sums are computed once."""
        _, _, parts, _, _ = self._prepare(est, X, as_generator(est.random_state))
        base = self._sums_and_blind(est, parts)
        out = []
        for C in companion_sets:
            SC = self.compute.scores(est.model, C, "model")
            tilt = next((p[4] for p in parts if p[4] is not None), None)  # one at most
            tilted = None if tilt is None else self._tilted(tilt, C, SC)
            paired = []
            for (_, ks, _, maps, part_tilt), (sums, blind) in zip(parts, base):
                SCt, wc = (SC, None) if part_tilt is None else tilted
                Cg, SCg = (C, SCt) if maps is None else (C @ maps[0], SCt @ maps[1])
                more, _ = self._sums(est, (Cg, SCg, wc), ks, None)
                paired.append(([a + b for a, b in zip(sums, more)], blind))
            out.append(self._best_criterion(paired))
        return np.array(out)

    def score(self, est, X, companions=()):
        _, _, parts, _, _ = self._prepare(est, X, as_generator(est.random_state), companions)
        best = self._best_criterion(self._sums_and_blind(est, parts))
        if best == -np.inf and is_fitted(est) and isinstance(est.bandwidth, str):
            # bandwidths fitted by a rule to data of another scale: no search is
            # comparing bandwidths, the scored X is out of the fitted test's reach
            raise ValueError(
                f"every kernel fitted with bandwidth={est.bandwidth!r} (the largest "
                f"{float(np.max(est.bandwidth_)):.3g}) is below 1e-12 of its peak between "
                "every two rows of X: X lies on a scale far above the data the test was "
                "fitted on, and its score would be -inf whatever X is; rescale X or fit the "
                "test on data of X's scale.")
        return best


class DiscreteKSD(EstimatorEngine):
    """:class:`KSDTest` for a discrete model (difference or Zanella-Barker operator):
    the computation of :mod:`skstein.gof._discrete`, on NumPy data."""

    def _check(self, est, X):
        self.host_only(X, "a discrete model")
        est._check_discrete_weights()
        if not isinstance(check_tilt(est.tilt), str) and est.tilt != 0:
            raise ValueError(f"tilt={est.tilt!r} is for continuous models; a discrete model "
                             "takes tilt='auto' or 0 (no tilt).")
        if check_bool(est.moments, "moments"):
            raise ValueError("moments=True is for continuous models: the moment tests "
                             "need the model's score.")

    def fit(self, est, X):
        self._check(est, X)
        _discrete.fit(est, X)

    def test(self, est, X):
        self._check(est, X)
        return _discrete.test(est, X)

    def discrepancy(self, est, X):
        self._check(est, X)
        return _discrete.discrepancy(est, X)

    def score(self, est, X):
        self._check(est, X)
        return _discrete.score(est, X)


def select_ksd_engine(est, X):
    """The engine of :class:`KSDTest` for its model and data ``X``: discrete models get
    :class:`DiscreteKSD`, continuous ones :class:`LangevinKSD` on the compute engine of
    ``X`` (:func:`skstein._engines.select_engine`)."""
    if _discrete.discrete_operator(est) is not None:
        return DiscreteKSD()
    return LangevinKSD(select_engine(X))
