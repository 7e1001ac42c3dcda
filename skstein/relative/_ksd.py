"""The relative KSD test, with exact or posterior scores, KSD or maxSKSD."""

import numpy as np
from sklearn.base import BaseEstimator

from .._engines import EngineMixin, EstimatorEngine, select_engine
from .._estimator import discrete_input_tags, is_fitted
from .._random import as_generator
from .._result import RelativeTestResult
from .._validation import (
    check_alpha,
    check_bandwidth_rule,
    check_bool,
    check_choice,
    check_positive_int,
    check_whiten,
    resolve_score,
    sklearn_model_hint,
)
from .._xp import host_single_blas
from ..directions import _from_whitened, search_directions
from ..discrepancy import (
    DEFAULT_MAX_MEMORY,
    is_collection,
    resolve_bandwidth,
    resolve_bandwidths,
    resolve_sliced_bandwidth,
    sliced_stein_sums,
    stein_sums,
)
from ..gof._tilt import check_tilt, resolve_shared_tilt
from ..kernels import KERNELS, auto_whitening, bandwidth_factor_grid, make_kernel, whitening
from . import _discrete
from ._base import RelativeMixin, check_train_size, train_rows
from ._latent import MODEL_SCORES, check_latent_model, evaluate_model_score, has_exact_score
from ._stats import (
    VARIANCES,
    aggregated_result,
    combine_folds,
    concat_kernels,
    decide,
    difference_sums,
    result_from_sums,
)

__all__ = ["RelativeKSDTest", "relative_ksd", "DISCREPANCIES", "LangevinRelative",
           "DiscreteRelative", "select_relative_engine"]

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


def relative_ksd(X, model_p, model_q, *, kernel="imq", bandwidth="aggregate", n_bandwidths=10,
                 kernel_params=None, variance="jackknife", alpha=0.05, model_score="auto",
                 n_posterior_samples=500, burn_in=200, random_state=None,
                 max_memory=DEFAULT_MAX_MEMORY, whiten="auto", tilt="auto"):
    """Relative KSD test of ``model_p`` against ``model_q`` on the sample ``X``.

    The function behind :class:`RelativeKSDTest` (``discrepancy="ksd"``); the
    parameters mean what they mean there. Same ``random_state``, same result as the
    estimator.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The data, a sample of R.
    model_p, model_q : distribution, callable or latent-variable model
        The two candidate models. H0 says P is at least as good as Q.
    kernel : {"imq", "rbf"}, default="imq"
        Base kernel, shared by the two statistics (:class:`RelativeKSDTest` says
        what each found on random problems).
    bandwidth : "aggregate", "median", float or array-like, default="aggregate"
        The bandwidth rule or value, or a collection to aggregate over.
    n_bandwidths : int, default=10
        Size of the collection for ``bandwidth="aggregate"``.
    kernel_params : dict, default=None
        Extra kernel parameters, e.g. ``{"beta": -0.5}`` for IMQ.
    variance : {"jackknife", "ustat"}, default="jackknife"
        Estimator of the standard deviation of the difference.
    alpha : float, default=0.05
        Significance level.
    model_score : {"auto", "exact", "posterior"}, default="auto"
        How the models' scores are obtained.
    n_posterior_samples : int, default=500
        Posterior draws per data point for posterior scores.
    burn_in : int, default=200
        Leading posterior draws discarded.
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the posterior draws and the simulated threshold.
    max_memory : int, default=64 MiB
        Memory budget in bytes for the Stein-kernel temporaries.
    whiten : bool, "aggregate" or "auto", default="auto"
        The geometry of the kernels (see :class:`RelativeKSDTest`).
    tilt : "auto" or float, default="auto"
        The tilt of the kernels, shared by both models (see :class:`RelativeKSDTest`).

    Returns
    -------
    RelativeTestResult
    """
    test = RelativeKSDTest(model_p, model_q, kernel=kernel, bandwidth=bandwidth,
                           n_bandwidths=n_bandwidths, kernel_params=kernel_params,
                           variance=variance, alpha=alpha, model_score=model_score,
                           n_posterior_samples=n_posterior_samples, burn_in=burn_in,
                           random_state=random_state, max_memory=max_memory, whiten=whiten,
                           tilt=tilt)
    return test.test(X)


def _learn_directions(X, S, est, rng, white=None):
    """(G, R, h) of one model: maxSKSD directions learned on ``X`` with scores ``S``.

    With a whitening ``(A, B)`` of ``X`` the search runs on ``X @ A`` with scores
    ``S @ B`` and the pairs are mapped back to ``X``'s coordinates.
    """
    bandwidth = "median" if is_collection(est.bandwidth) else est.bandwidth
    if white is not None:
        X, S = X @ white[0], S @ white[1]
    res = search_directions(X, _FixedScores(S), variant=est.variant, n_slices=est.n_slices,
                            kernel=est.kernel, kernel_params=est.kernel_params,
                            bandwidth=bandwidth, random_state=rng)
    if white is not None:
        return _from_whitened(res.directions, res.slices, res.bandwidth, *white)
    return res.directions, res.slices, res.bandwidth


class _FixedScores:
    """A model whose score at the rows it was built for is already known."""

    def __init__(self, S):
        self.S = S

    def grad_logpdf(self, X):
        if X.shape != self.S.shape:
            raise ValueError("scores were precomputed for another sample.")
        return self.S


def _method_name(discrepancy, kernel, variance, latent, n_kernels=1, n_folds=1, geometries=1,
                 whitened=False, shared=False, tilt=None, plain=False):
    name = {"ksd": "KSD", "maxsksd": "maxSKSD"}[discrepancy]
    if latent:
        name = "L" + name
    if plain:  # the tilted kernels are a second family of each geometry
        geometries //= 2
    extra = ", whitened" if whitened and geometries == 1 else ""
    if tilt is not None:
        extra += f", {'plain and ' if plain else ''}tilted (q = {tilt.exponent:g})"
    if shared:
        extra += ", shared directions"
    if n_kernels > 1:
        what = "bandwidths" if discrepancy == "ksd" else "bandwidth factors"
        if plain:  # each bandwidth twice
            what = "kernels"
        if geometries > 1:
            what += f" in {geometries} geometries"
        extra += f", max over {n_kernels} {what}"
    if n_folds > 1:
        extra += f", {n_folds}-fold cross-fit"
    return f"relative {name} ({kernel}, {variance} variance{extra})"


class RelativeKSDTest(EngineMixin, RelativeMixin, BaseEstimator):
    r"""Relative kernel Stein discrepancy test: is model Q a better fit than model P.

    Tests H0: :math:`\mathrm{KSD}^2(P, R) \le \mathrm{KSD}^2(Q, R)` against
    H1: Q is closer to the data distribution R, from the difference of the two
    KSD U-statistics on the same data, with the same kernel and bandwidth for both
    (Kanagawa, Jitkrittum, Mackey, Fukumizu & Gretton). Only the models' scores are
    needed, so both may be unnormalised. A latent-variable model whose marginal
    score is intractable enters through its posterior: its score at :math:`x_i` is the
    mean of :math:`\nabla_x \log p(x_i | z_{ij})` over ``n_posterior_samples`` draws
    after ``burn_in`` (the LKSD test).

    **Bandwidth without a split** (the default, ``bandwidth="aggregate"``): the
    difference is computed under each of ``n_bandwidths`` bandwidths of
    :func:`skstein.kernels.bandwidth_grid` (from the cluster scale of the data to
    twice the median distance), giving studentised differences
    :math:`z_1, \dots, z_L`. These are asymptotically jointly normal, with a
    correlation estimated from the same row sums (the correlation of the Hoeffding
    projections), and H0 is rejected when :math:`\max_l z_l` exceeds the
    ``1 - alpha`` quantile of the maximum of that normal, obtained by simulation.
    The hypotheses are then H0: P is at least as good as Q under every bandwidth of
    the collection, against H1: Q is better under at least one; the level is
    asymptotically ``alpha`` at the boundary (a tie under the bandwidth with the
    largest z) and below it inside H0, with no data split and no Bonferroni
    correction. A single bandwidth (``"median"`` or a float) gives the plain test.

    Parameters
    ----------
    model_p, model_q : distribution, callable or latent-variable model
        The two candidate models. H0 says P is at least as good as Q.
    discrepancy : {"ksd", "maxsksd"}, default="ksd"
        The discrepancy compared. ``"maxsksd"`` compares the models' maxSKSD (Gong et
        al. 2021), which keeps the test's power in high dimensions where the KSD's
        fades: each model's test directions are learned on part of the data and the
        difference is computed on the rest (see Notes for the cross-fitting that
        keeps the level). ``bandwidth`` then applies per direction.
    kernel : {"imq", "rbf"}, default="imq"
        Base kernel, shared by the two statistics. On random problems that no choice
        saw (``benchmarks/bench_relative_unseen.py``, two seeds; user guide,
        "Relative tests") ``"rbf"`` found a candidate whose spread was 1.5 times the
        truth's along one direction more often (0.14 against 0.015 and 0.25 against
        0.12 at 200 points), and both held the level at ties; IMQ found shifts of
        the heaviest tails a little more often (0.80 against 0.755).
    bandwidth : "aggregate", "median", float or array-like, default="aggregate"
        ``"aggregate"``: the aggregated test over a bandwidth collection (above; for
        maxSKSD, the per-direction median bandwidths of the tested projections times
        the factors of :func:`skstein.kernels.bandwidth_factor_grid`, shared by both
        models; for discrete models, :func:`skstein.discrete.discrete_bandwidth_grid`
        on the embedded distances); an array-like: aggregated over those bandwidths
        (continuous KSD only);
        ``"median"``: the median heuristic (per direction for maxSKSD); a float: that
        bandwidth. Resolved on the data given to :meth:`fit` (or to :meth:`test` when
        not fitted).
    n_bandwidths : int, default=10
        Size of the collection for ``bandwidth="aggregate"``.
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
    cross_fit : bool, default=True
        Unfitted maxSKSD test: split the data in two halves, learn each model's
        directions on each half and compute the difference on the other, and combine
        the two (see Notes). ``False``: one split, ``train_size`` to learn and the
        rest to test (Algorithm 1 of Gong et al.).
    train_size : float, default=0.2
        With ``cross_fit=False``: fraction of the data that learns the directions
        when :meth:`test` is called on an unfitted maxSKSD test.
    shared_directions : bool, default=True
        maxSKSD only. ``True``: both models' sliced discrepancies are taken along the
        union of the two models' learned directions, so that the two statistics
        share their projections and their difference is paired, as the KSD
        comparison's is (see Notes). ``False``: each model's along its own learned
        directions.
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the posterior draws, the split and the direction search, the
        simulation of the aggregated threshold (and the subsample of the bandwidth
        heuristics for more than 2000 samples).
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
    whiten : bool, "aggregate" or "auto", default="auto"
        ``False``: the kernels act on the data's coordinates. ``True``: on the
        coordinates ``X @ A`` that whiten the data
        (:func:`~skstein.kernels.whitening`, Ledoit-Wolf covariance), with both
        models' scores mapped to them (``S @ B``): a Mahalanobis kernel fitted to the
        data, the same kernel for both models; for maxSKSD, each model's directions
        are learned there and mapped back. A float ``bandwidth`` is then in whitened
        units. ``"aggregate"`` (KSD only): both geometries' kernels in one max-z
        test, H0 then saying that P is at least as good as Q under all of them
        (``labels`` of the result names each kernel's geometry). Where the data's
        spread differs by orders of magnitude between directions, a Euclidean kernel
        hardly sees a misfit along the wide ones. ``"auto"``: where the data are
        anisotropic (a Ledoit-Wolf condition number of at least 4, without flat axes:
        :func:`~skstein.kernels.auto_whitening`, the rule of :class:`~skstein.KSDTest`),
        ``"aggregate"`` for the KSD's ``bandwidth="aggregate"``, and for the maxSKSD
        comparison each model's directions learned in both coordinates, their union
        (whitening alone loses a mixture comparison there); ``False`` otherwise (the
        same numbers), and for a discrete model. Measured
        (``benchmarks/bench_relative_whiten.py``: a rotated Gaussian of condition
        number 100, Q the truth, 100 trials), ``False`` / ``"auto"``: P with 1.3 times
        the variance along the narrowest axis was preferred at 0.23 / 0.35 (D = 5,
        n = 200) and 0.20 / 0.31 (D = 20, n = 300) by the KSD comparison, 0.08 / 0.11
        and 0.06 / 0.13 by the maxSKSD one; along the widest axis 0.41 / 0.43, 0.43 /
        0.41, 0.11 / 0.27 and 0.04 / 0.20; a three-cluster mixture with clusters of
        variance 0.6 against 0.5, 0.23 / 0.25, 0.14 / 0.20, 0.25 / 0.24 and 0.45 /
        0.66; shifts of a fifth of a standard deviation 0.36-0.56 either way; two
        mirror-image models (a tie) 0.04-0.05. ``True`` and ``"aggregate"``:
        continuous models only.
    tilt : "auto" or float in [0, 2], default="auto"
        The exponent :math:`q` of a tilted base kernel :math:`w(x) k(x, y) w(y)`,
        shared by both models (the KSD comparison only), with the weight of
        :class:`~skstein.KSDTest`: :math:`w(x) = (1 + \|x - c\|^2 / \sigma^2)^{q/2}`,
        :math:`c` the data's spatial median and :math:`\sigma` the median distance to
        it. It lets the comparison see the models' tails, where a heavy-tailed
        model's score fades (see Notes). ``0``: the plain kernels. ``"auto"``, with
        ``bandwidth="aggregate"`` and models whose exact scores the probe can
        evaluate far out: the smaller of the two models' exponents of
        :class:`~skstein.KSDTest`'s rule, at most half the data's order of moments
        (:func:`skstein.gof._tilt.tail_index`, rounded to an integer), and the
        max-z test over the plain and the tilted kernels (``geometries_`` and the
        result's ``labels`` end in ``", tilted"`` for the latter); 0, the plain
        test with the same numbers, where either model's score grows linearly (a
        Gaussian, a mixture), for posterior scores and for fewer than 50 points
        (:data:`~skstein.gof._tilt.MIN_TILT_SAMPLES`). A number tilts every kernel.
        Resolved on the data given to :meth:`fit` (or to :meth:`test` when not
        fitted); continuous models only.

    Attributes
    ----------
    bandwidth_ : float or ndarray
        The bandwidth (or collection) resolved by :meth:`fit` for the KSD.
    kernel_ : RBF, IMQ or tuple of them
        The fitted base kernel(s) for the KSD.
    geometries_ : tuple of str
        For the KSD: the geometry (``"euclidean"`` or ``"whitened"``) of each
        fitted kernel.
    whitening_ : tuple (A, B) of ndarrays of shape (n_features, n_features) or None
        The whitening of the data given to :meth:`fit`; None for ``whiten=False``,
        and for ``"auto"`` when it kept the data's coordinates.
    tilt_ : Tilt or None
        The fitted tilt (exponent, centre and scale of the weight) shared by both
        models, None for the plain kernels.
    engine_ : LangevinRelative or DiscreteRelative
        How the test computes, chosen by :meth:`fit` from the models and the data:
        the discrete operators for discrete models; else the Langevin operator on the
        numba kernels for NumPy data, or, for arrays of another Array API library
        (CuPy, PyTorch) under scikit-learn's ``array_api_dispatch``, with that
        library on the data's device (the KSD comparison with exact scores; the
        maxSKSD comparison and posterior scores need NumPy data).
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
    rate under H0 stays at or below ``alpha``. The aggregated test inherits this:
    each :math:`z_l` is conservative, and the maximum is calibrated for unit
    variances, so near such a tie it rejects less often than ``alpha``.

    The maxSKSD comparison learns directions, and a search on finite data finds
    each model's best directions only approximately: each model's statistic is a
    lower bound of its maxSKSD whose shortfall varies from one search to another.
    Learned on one small training split (Algorithm 1), that luck reads as a
    difference between the models and inflates the rejection rate at a tie (0.11 at
    a symmetric tie, n = 500, against 0.05). The unfitted test therefore cross-fits:
    the directions learned on each half are evaluated on the other half, the two
    differences are averaged (weighted by size) and their variances pooled, so
    every point is tested once, each search sees half of the data, and the luck of
    two independent searches averages out.

    Both models' sliced discrepancies are then taken along the union of the two
    learned sets of directions (``shared_directions=True``, the default), so that
    their difference is paired, as the KSD comparison's is; H0 is that P's sliced
    discrepancy along those directions is at most Q's. Along its own directions
    (``shared_directions=False``) each model's statistic has projections of its own,
    so the noise of the two statistics does not cancel in their difference, and the
    comparison loses power, most of all where the models differ in how they spread
    the data rather than where they put it; H0 is then that P's maxSKSD is at most
    Q's, each estimated along the directions the search finds from half of the data.
    Measured (``benchmarks/bench_relative_shared.py``, n = 300, 100 trials, own /
    shared):
    with data N(0, I), P of variance 1.5 and Q of 1.2 along one direction, 0.18 /
    0.76 at D = 3, 0.14 / 0.70 at D = 5 and 0.06 / 0.48 at D = 10; P of variance 1.6
    along one direction and Q of 1.3 along another, 0.06 / 0.17, 0.05 / 0.18 and 0.02
    / 0.11; means 0.5 u and 0.3 w, 0.59 / 0.80, 0.46 / 0.61 and 0.54 / 0.72. At ties by
    symmetry (means 0.4 u and -0.4 u; variance 1.3 along u and along w; means 0.3 u
    and -0.3 u on Student-t(5) data) the shared test rejected 0.00-0.07 of 100 trials
    (0.005-0.050 of 200 at D = 3 and 10, another seed), its own-directions counterpart
    0.00-0.07. On the cases of the ``relative-ppca`` reproduction (PPCA models in 100
    dimensions, another seed than its report's; ``--ppca``), the H1 case was rejected
    at 0.00 / 0.27 (n = 100) and 0.79 / 1.00 (n = 300), the tie at 0.00 / 0.04 and
    0.00 / 0.05, and the H0 case where P is better at 0.00 / 0.00 and 0.01 / 0.00.
    At the tie of means 0.4 u and -0.4 u (D = 5, n = 200, 400 trials) the shared
    test rejected 0.040-0.045 with its defaults, ``variant="rg"``, one split
    (``cross_fit=False``) and median bandwidths. On mixtures of two components at
    2 u and -2 u with data weighted 0.5 / 0.5 (D = 5, n = 200, 200 trials), P and Q
    weighted 0.7 / 0.3 and 0.55 / 0.45 were told apart at 0.015 / 0.075, and mirror
    images (0.6 / 0.4 and 0.4 / 0.6) at 0.010 / 0.020.

    The plain kernel's test functions fade where a heavy-tailed model's score does,
    so candidates that differ in their tails are told apart slowly; ``tilt="auto"``
    adds the tilted kernels of :class:`~skstein.KSDTest`, one weight for both models.
    Its centre is the data's spatial median: at a tie by symmetry a weight centred
    off the symmetry favours one side (with the mean of Cauchy data as the centre,
    the tie below was rejected in 0.225 of 200 trials at n = 1000). Measured
    (``benchmarks/bench_relative_tilt.py``, products of coordinates, n = 300, 200
    trials, ``tilt=0`` / default), with Student-t(4) data, Q the truth: P a t(2)
    0.29 / 0.53 (D = 1) and 0.235 / 0.505 (D = 5), P the truth scaled by 1.3 0.58 /
    0.79 and 0.815 / 0.89, P a t(10) 0.075 / 0.05 and 0.30 / 0.34 (0.42 / 0.655 at
    n = 1000, D = 1), P the truth shifted by 0.2 0.42 / 0.385 and 0.95 / 0.965 (the
    larger maximum's price). Ties by symmetry (t(3) tails on one side and t(10) on
    the other against the mirror image, on t(5) and on Cauchy data; t(3) models
    shifted either way on t(3) data) were rejected at 0.025-0.065, and at
    0.015-0.070 for n = 100 and 1000. In rotated coordinates scaled by 1, 3 and 9 (D
    = 3, ``--rotated``) the ties gave 0.035-0.070, t(2) 0.29 / 0.48 and t(10) 0.08 /
    0.045.

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

    def __init__(self, model_p, model_q, *, discrepancy="ksd", kernel="imq",
                 bandwidth="aggregate", n_bandwidths=10, kernel_params=None,
                 variance="jackknife", alpha=0.05, model_score="auto", n_posterior_samples=500,
                 burn_in=200, variant="g", n_slices=None, cross_fit=True, train_size=0.2,
                 shared_directions=True, random_state=None, max_memory=DEFAULT_MAX_MEMORY,
                 operator=None, whiten="auto", tilt="auto"):
        self.model_p = model_p
        self.model_q = model_q
        self.discrepancy = discrepancy
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.n_bandwidths = n_bandwidths
        self.kernel_params = kernel_params
        self.variance = variance
        self.alpha = alpha
        self.model_score = model_score
        self.n_posterior_samples = n_posterior_samples
        self.burn_in = burn_in
        self.variant = variant
        self.n_slices = n_slices
        self.cross_fit = cross_fit
        self.train_size = train_size
        self.shared_directions = shared_directions
        self.random_state = random_state
        self.max_memory = max_memory
        self.operator = operator
        self.whiten = whiten
        self.tilt = tilt

    def __sklearn_tags__(self):
        return discrete_input_tags(super().__sklearn_tags__(), self.model_p, self.model_q)

    def _check_params(self):
        check_choice(self.discrepancy, "discrepancy", DISCREPANCIES)
        check_choice(self.variant, "variant", ("g", "rg"))
        check_train_size(self.train_size)
        check_bool(self.cross_fit, "cross_fit")
        check_bool(self.shared_directions, "shared_directions")
        check_choice(self.kernel, "kernel", KERNELS)
        check_choice(self.variance, "variance", VARIANCES)
        check_choice(self.model_score, "model_score", MODEL_SCORES)
        check_alpha(self.alpha)
        check_positive_int(self.n_bandwidths, "n_bandwidths")
        check_positive_int(self.n_posterior_samples, "n_posterior_samples")
        check_positive_int(self.burn_in, "burn_in", minimum=0)
        check_positive_int(self.max_memory, "max_memory")
        if self.n_slices is not None:  # checked whatever the discrepancy: a typo surfaces
            check_positive_int(self.n_slices, "n_slices")
        if not _is_auto(self.whiten) and len(check_whiten(self.whiten, auto=True)) > 1 \
                and self.discrepancy == "maxsksd":
            raise ValueError("whiten='aggregate' is for discrepancy='ksd'; the maxSKSD "
                             "comparison takes whiten=False, True or 'auto'.")
        tilt = check_tilt(self.tilt)
        if not isinstance(tilt, str) and tilt > 0 and self.discrepancy == "maxsksd":
            raise ValueError(f"tilt={self.tilt!r} is for discrepancy='ksd'; the maxSKSD "
                             "comparison takes tilt='auto' or 0 (no tilt).")
        if self.discrepancy == "maxsksd" and not isinstance(self.bandwidth, str) \
                and np.ndim(self.bandwidth) > 0:
            raise ValueError("bandwidth as an array is for discrepancy='ksd'; the maxSKSD "
                             "comparison takes 'aggregate', 'median' or a float.")
        for name in ("model_p", "model_q"):
            model = getattr(self, name)
            # a scikit-learn estimator gets the exact-score message (from_estimator)
            if self.model_score == "exact" or sklearn_model_hint(model) or (
                    self.model_score == "auto" and has_exact_score(model)):
                resolve_score(model, name)
            else:
                check_latent_model(model, name)

    def _resolve_tilt(self, X, compute, X_device=None):
        """The :class:`~skstein.gof._tilt.Tilt` both models' kernels share on ``X``, or
        None. ``tilt="auto"`` tilts only the collection the library resolves
        (``bandwidth="aggregate"``) and only models whose exact scores the probe can
        evaluate far out (:func:`~skstein.gof._tilt.resolve_shared_tilt`); with
        ``X_device``, they are probed on that device."""
        tilt = check_tilt(self.tilt)
        names = ("model_p", "model_q")
        if isinstance(tilt, str) and not (
                isinstance(self.bandwidth, str) and self.bandwidth == "aggregate"
                and all(self.model_score == "exact" or (
                    self.model_score == "auto" and has_exact_score(getattr(self, name)))
                        for name in names)):
            return None
        models = tuple(getattr(self, name) for name in names)
        if not isinstance(tilt, str):
            return resolve_shared_tilt(models, X, tilt)
        if X_device is None:
            scores = tuple(resolve_score(m, name) for m, name in zip(models, names))
        else:
            scores = tuple(
                lambda P, m=m, name=name: compute.host(
                    compute.scores(m, compute.like(P, X_device), name))
                for m, name in zip(models, names))
        return resolve_shared_tilt(models, X, tilt, scores)

    def _rngs(self):
        """Independent streams: bandwidth, P's scores, Q's scores, directions, threshold."""
        return as_generator(self.random_state).spawn(5)

    def _check_engine(self, compute):
        """``compute`` when it can run this comparison: the Array API engine computes the
        KSD comparison with exact scores; the maxSKSD one and posterior scores run on
        the CPU."""
        if compute.name == "numba":
            return compute
        if self.discrepancy != "ksd":
            raise ValueError("X must be a NumPy array for discrepancy='maxsksd': its "
                             "direction search runs on the CPU.")
        for name in ("model_p", "model_q"):
            model = getattr(self, name)
            if self.model_score == "posterior" or (
                    self.model_score == "auto" and not has_exact_score(model)):
                raise ValueError(f"X must be a NumPy array for {name}'s posterior scores: "
                                 "the posterior draws of a latent-variable model are made "
                                 "on the CPU.")
        return compute

    def _select_engine(self, X):
        return select_relative_engine(self, X)

    def _model_score(self, name, X, rng, compute=None):
        """(scores, used_posterior) of ``model_p`` or ``model_q`` on ``X``."""
        if compute is not None and compute.name != "numba":
            return compute.scores(getattr(self, name), X, name), False
        return evaluate_model_score(getattr(self, name), X, self.model_score,
                                    self.n_posterior_samples, self.burn_in, rng, name)

    @host_single_blas
    def test(self, X):
        """Run the test on ``X``.

        With ``discrepancy="maxsksd"``, unless :meth:`fit` learned the directions,
        the directions are learned on part of ``X`` (``cross_fit``, ``train_size``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data from the unknown distribution R (at least 3 rows; at least 8 for an
            unfitted maxSKSD test).

        Returns
        -------
        RelativeTestResult
        """
        return self._engine(X).test(self, X)

    def _folds(self, X, S_p, S_q, rng, fitted):
        """``[(test rows, ((G_p, R_p, h_p), (G_q, R_q, h_q))), ...]`` of the maxSKSD test."""
        n = X.shape[0]
        if fitted:
            return [(np.arange(n), self._evaluated(self.directions_),
                     self.whitening_ is not None)]
        perm = rng.permutation(n)
        if self.cross_fit:
            if n < 8:
                raise ValueError(f"the cross-fitted maxSKSD test needs at least 8 samples, X "
                                 f"has {n}.")
            halves = (np.sort(perm[:n // 2]), np.sort(perm[n // 2:]))
            splits = [(halves[0], halves[1]), (halves[1], halves[0])]
        else:
            n_train = train_rows(n, self.train_size)
            splits = [(np.sort(perm[:n_train]), np.sort(perm[n_train:]))]
        out = []
        for (tr, te), r in zip(splits, rng.spawn(len(splits))):
            white = self._search_whitening(X[tr])
            directions = tuple(self._directions(X[tr], S[tr], ri, white)
                               for S, ri in zip((S_p, S_q), r.spawn(2)))
            out.append((te, self._evaluated(directions), white is not None))
        return out

    def _directions(self, X, S, rng, white):
        """(G, R, h) of one model on ``X``: learned in the coordinates of ``white``;
        with ``whiten="auto"`` and a whitening, the union of the pairs learned in the
        data's coordinates and in the whitened ones."""
        if white is None or not _is_auto(self.whiten):
            return _learn_directions(X, S, self, rng, white)
        plain = _learn_directions(X, S, self, rng)
        white = _learn_directions(X, S, self, rng.spawn(1)[0], white)
        return (np.vstack([plain[0], white[0]]), np.vstack([plain[1], white[1]]),
                np.concatenate([np.atleast_1d(plain[2]), np.atleast_1d(white[2])]))

    def _search_whitening(self, X):
        """The whitening of ``X`` the maxSKSD direction search runs in, or None:
        ``"auto"`` takes it for an anisotropic ``X`` (:func:`~skstein.kernels.auto_whitening`)."""
        if _is_auto(self.whiten):
            return auto_whitening(X)
        return whitening(X) if self.whiten else None

    def _evaluated(self, directions):
        """The directions along which each model is evaluated: its own, or, with
        ``shared_directions``, the union of both models' for both."""
        if not self.shared_directions:
            return directions
        (Gp, Rp, hp), (Gq, Rq, hq) = directions
        union = (np.vstack([Gp, Gq]), np.vstack([Rp, Rq]),
                 np.concatenate([np.atleast_1d(hp), np.atleast_1d(hq)]))
        return union, union


class LangevinRelative(EstimatorEngine):
    """:class:`RelativeKSDTest` for continuous models (the Langevin Stein operator).

    Computes through ``compute``, a :class:`~skstein._engines.NumbaEngine` or (for the
    KSD comparison with exact scores) an :class:`~skstein._engines.ArrayAPIEngine`.
    """

    def fit(self, est, X):
        est._check_params()
        compute = self.compute
        X = compute.validate(est, X, reset=True, min_samples=3)
        rngs = est._rngs()
        est.tilt_ = None
        if est.discrepancy == "ksd":
            (est.bandwidth_, est.kernel_, est.geometries_, est.whitening_,
             est.tilt_) = _resolve_kernels(compute.host(X), est, rngs[0], compute,
                                           compute.on_device(X))
        else:
            S_p, _ = est._model_score("model_p", X, rngs[1])
            S_q, _ = est._model_score("model_q", X, rngs[2])
            est.whitening_ = est._search_whitening(X)
            est.directions_ = tuple(est._directions(X, S, r, est.whitening_)
                                    for S, r in zip((S_p, S_q), rngs[3].spawn(2)))

    def test(self, est, X):
        est._check_params()
        rngs = est._rngs()
        fitted = is_fitted(est)
        compute = self.compute
        if fitted:
            X = compute.validate(est, X, reset=False, min_samples=3)
        else:
            X = compute.check_samples(X, min_samples=3)
        S_p, post_p = est._model_score("model_p", X, rngs[1], compute)
        S_q, post_q = est._model_score("model_q", X, rngs[2], compute)
        latent = post_p or post_q
        if est.discrepancy == "ksd":
            if fitted:
                bandwidth, kern = est.bandwidth_, est.kernel_
                labels, white, tilt = est.geometries_, est.whitening_, est.tilt_
            else:
                bandwidth, kern, labels, white, tilt = _resolve_kernels(
                    compute.host(X), est, rngs[0], compute, compute.on_device(X))
            kernels = kern if isinstance(kern, tuple) else (kern,)
            if tilt is not None:  # both models' scores tilted by one weight
                Xh = compute.host(X)
                (Tp, w), (Tq, _) = (tilt.apply(Xh, compute.host(S)) for S in (S_p, S_q))
                tilted = (compute.like(Tp, X), compute.like(Tq, X), w)
            parts = []
            for label in dict.fromkeys(labels):
                ks = tuple(k for k, g in zip(kernels, labels) if g == label)
                geometry, _, tilt_label = label.partition(", ")
                Sp, Sq, w = tilted if tilt_label else (S_p, S_q, None)
                if geometry == "whitened":
                    A, B = (compute.like(m, X) for m in white)
                    coords = (X @ A, Sp @ B, Sq @ B)
                else:
                    coords = (X, Sp, Sq)
                parts.append(_ksd_difference(*coords, ks, est.variance, est.max_memory,
                                             compute, weights=w))
            sums = concat_kernels(parts)
            plain = tilt is not None and not all(g.endswith("tilted") for g in labels)
            method = _method_name("ksd", kernels[0].name, est.variance, latent, len(kernels),
                                  geometries=len(parts), whitened=white is not None,
                                  tilt=tilt, plain=plain)
            return _decision(sums, est.alpha, method, np.atleast_1d(bandwidth),
                             isinstance(kern, tuple), est.variance, rngs[4],
                             labels=labels if len(parts) > 1 else None)
        folds = est._folds(X, S_p, S_q, rngs[3], fitted)
        parts = [_maxsksd_difference(X[te], S_p[te], S_q[te], directions, est, r)
                 for (te, directions, _), r in zip(folds, rngs[0].spawn(len(folds)))]
        sums = combine_folds([p[0] for p in parts])
        factors = parts[0][1]
        aggregated = is_collection(est.bandwidth)
        method = _method_name("maxsksd", est.kernel, est.variance, latent, len(factors),
                              len(folds), whitened=any(f[2] for f in folds),
                              shared=bool(est.shared_directions))
        return _decision(sums, est.alpha, method, factors, aggregated, est.variance,
                         rngs[4])


class DiscreteRelative(EstimatorEngine):
    """:class:`RelativeKSDTest` for discrete models (:mod:`skstein.relative._discrete`),
    on NumPy data."""

    def _check(self, est, X):
        self.host_only(X, "discrete models")
        tilt = check_tilt(est.tilt)
        if not isinstance(tilt, str) and tilt > 0:
            raise ValueError(f"tilt={est.tilt!r} is for continuous models; discrete models "
                             "take tilt='auto' or 0 (no tilt).")

    def fit(self, est, X):
        self._check(est, X)
        _discrete.fit(est, X)

    def test(self, est, X):
        self._check(est, X)
        return _discrete.test(est, X)


def select_relative_engine(est, X):
    """The engine of :class:`RelativeKSDTest` for its models and ``X``: discrete models get
    :class:`DiscreteRelative`, continuous ones :class:`LangevinRelative` on the compute
    engine of ``X`` (which must be the CPU's for the maxSKSD comparison and for posterior
    scores)."""
    if _discrete.discrete_operator(est) is not None:
        return DiscreteRelative()
    return LangevinRelative(est._check_engine(select_engine(X)))


def _is_auto(whiten):
    return isinstance(whiten, str) and whiten == "auto"


def _resolve_kernels(X, est, rng, compute, X_device=None):
    """``(bandwidth_, kernel_, geometries_, whitening_, tilt_)`` of a relative KSD test on
    ``X`` (the host's copy; ``X_device``, the data on a device, where the models' scores
    are probed for the tilt).

    A bandwidth collection, or ``whiten="aggregate"``, gives an array of bandwidths
    and a tuple of kernels (the Euclidean ones first), ``geometries_`` names the
    geometry of each (``", tilted"`` appended for a tilted kernel: with ``tilt="auto"``
    and a tilt, every kernel twice, plain and tilted), ``whitening_`` is
    :func:`~skstein.kernels.whitening` of ``X`` (None without whitened kernels) and
    ``tilt_`` the :class:`~skstein.gof._tilt.Tilt` shared by both models, or None.
    """
    b = est.bandwidth
    check_bandwidth_rule(b)
    if _is_auto(est.whiten):  # the whitened kernels join the library's own collection
        aggregate = isinstance(b, str) and b == "aggregate"
        white = auto_whitening(X) if aggregate else None
        geometries = ("euclidean", "whitened") if white is not None else ("euclidean",)
    else:
        geometries = check_whiten(est.whiten, auto=True)
        white = whitening(X) if "whitened" in geometries else None
    collection = is_collection(b) or (not isinstance(b, str) and np.ndim(b) > 0)
    hs, labels = [], []
    for geometry in geometries:
        Xg = X @ white[0] if geometry == "whitened" else X
        if collection:
            h = resolve_bandwidths(Xg, b, est.n_bandwidths, random_state=rng)
        else:
            h = np.array([resolve_bandwidth(Xg, b, random_state=rng)])
        hs.append(h)
        labels += [geometry] * h.size
    h = np.concatenate(hs)
    kernels = tuple(make_kernel(est.kernel, float(v), est.kernel_params) for v in h)
    tilt = est._resolve_tilt(X, compute, X_device)
    if tilt is not None and isinstance(est.tilt, str):
        # "auto": the plain and the tilted kernels in one max-z test
        h, kernels = np.concatenate([h, h]), kernels + kernels
        labels = labels + [f"{g}, tilted" for g in labels]
    elif tilt is not None:
        labels = [f"{g}, tilted" for g in labels]
    if len(kernels) == 1 and not collection:
        return float(h[0]), kernels[0], tuple(labels), white, tilt
    return h, kernels, tuple(labels), white, tilt


def _ksd_difference(X, S_p, S_q, kernels, variance, max_memory, compute, weights=None):
    """:class:`DifferenceSums` of the KSD difference under each kernel (Gram blocks shared),
    computed by the engine ``compute``; ``weights``: a tilt's, on the host (the scores
    are then the tilted ones)."""
    kw = dict(max_memory=max_memory, weights=weights)
    sums_p, _ = compute.sums_and_forms(X, S_p, kernels, None, **kw)
    sums_q, _ = compute.sums_and_forms(X, S_q, kernels, None, **kw)
    return difference_sums(sums_p, sums_q, variance)


def _maxsksd_difference(X, S_p, S_q, directions, est, rng):
    """(DifferenceSums, factors) of the maxSKSD difference on held-out rows.

    Each model is taken along its directions in ``directions`` (its own, or both
    along the union: ``_evaluated``) with their per-direction bandwidths; with
    ``bandwidth="aggregate"`` both are the medians of the tested projections times
    common factors from the pooled projections of both models.
    """
    (Gp, Rp, hp), (Gq, Rq, hq) = directions
    Up, Uq = X @ Gp.T, X @ Gq.T
    if is_collection(est.bandwidth):
        factors = bandwidth_factor_grid(np.hstack([Up, Uq]), est.n_bandwidths,
                                        random_state=rng)
        hp = resolve_sliced_bandwidth(Up, "median", random_state=rng, samples=(X, Gp))
        hq = resolve_sliced_bandwidth(Uq, "median", random_state=rng, samples=(X, Gq))
    else:
        factors = np.ones(1)
    kw = dict(kernel=est.kernel, kernel_params=est.kernel_params, max_memory=est.max_memory)
    sums_p = [sliced_stein_sums(X, S_p, Gp, Rp, c * hp, **kw) for c in factors]
    sums_q = [sliced_stein_sums(X, S_q, Gq, Rq, c * hq, **kw) for c in factors]
    reported = factors if is_collection(est.bandwidth) else (
        factors if isinstance(est.bandwidth, str) else np.array([float(est.bandwidth)]))
    return difference_sums(sums_p, sums_q, est.variance), reported


def _decision(sums, alpha, method, bandwidths, aggregated, variance, rng, labels=None):
    """The result: the plain normal test for one kernel, the max-z test for a collection."""
    if aggregated:
        return aggregated_result(sums, alpha, method, bandwidths, variance, rng, labels=labels)
    n = sums.n
    zscore, pvalue, threshold, reject, degenerate, stat, sigma = decide(
        float(sums.stat[0]), float(sums.sigma[0]), n, alpha, sums.scale)
    return RelativeTestResult(
        statistic=stat, pvalue=pvalue, threshold=threshold, reject=reject,
        alpha=float(alpha), method=method, n_samples=n, discrepancy_p=float(sums.u_p[0]),
        discrepancy_q=float(sums.u_q[0]), sigma=sigma, zscore=zscore,
        variance=variance, bandwidth=float(bandwidths[0]), degenerate=degenerate)
