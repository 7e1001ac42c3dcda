"""The finite set Stein discrepancy (FSSD) goodness-of-fit test."""

import numbers
import warnings

import numpy as np
from scipy.optimize import minimize
from scipy.spatial.distance import cdist
from sklearn.base import BaseEstimator

from .._random import as_generator
from .._validation import (
    caller_stacklevel,
    check_bool,
    check_choice,
    check_positive_float,
    check_positive_int,
    check_samples,
    evaluate_score,
)
from ..discrepancy import resolve_bandwidth
from ..features import (
    DEFAULT_FEATURE_MEMORY,
    check_locations,
    chi2_mixture_draws,
    fssd_criterion_and_grad,
    fssd_moments,
    fssd_power_criterion,
    gaussian_locations,
)
from ..kernels import KERNELS, VANISHING_KERNEL, check_bandwidth, make_kernel
from ._base import (BaselineTestMixin, is_fitted, on_training_part, split_sample,
                    train_count)
from ._common import SampleTestMethods, simulated_null_result

__all__ = ["FSSDTest"]

#: Bandwidth factors of the grid that starts FSSD-opt (kgof: squared widths times
#: 2^linspace(-3, 3, 5)).
_GRID_FACTORS = 2.0 ** np.linspace(-1.5, 1.5, 5)


class FSSDTest(SampleTestMethods, BaselineTestMixin, BaseEstimator):
    r"""Finite set Stein discrepancy test (Jitkrittum et al. 2017), linear time.

    The statistic is the unbiased :math:`\widehat{\mathrm{FSSD}^2_u}` at ``J`` test
    locations :math:`v_j` (see :mod:`skstein.features`): the squared norm of the Stein
    witness evaluated at the locations, :math:`O(nJD)` time and :math:`O(nD)` memory
    beyond a :math:`(JD)^2` covariance (with fewer rows than that, :math:`n < JD`, the
    null's spectrum comes from the :math:`n \times n` Gram matrix of the feature rows
    instead, :math:`O(n^2 JD)` time). **Convention:** the statistic carries no factor
    :math:`n`; kgof reports :math:`n\,\widehat{\mathrm{FSSD}^2_u}`.

    Null distribution: under H0, :math:`n\,\widehat{\mathrm{FSSD}^2_u}` tends to the
    weighted chi-square mixture :math:`\sum_k \lambda_k (Z_k^2 - 1)`, with
    :math:`\lambda_k` the eigenvalues of the covariance of the feature vector; the test
    simulates ``n_simulate`` draws of it with the covariance estimated on the tested
    sample (kgof's ``FSSDH0SimCovObs``) and reports ``(1 + #{draws >= stat}) / (1 +
    n_simulate)``.

    ``optimize=False`` (FSSD-rand): the locations are ``n_locations`` draws from the
    Gaussian fitted to the data (mean and covariance), the bandwidth the median
    heuristic; the whole sample is tested. ``optimize=True`` (FSSD-opt): on a training
    split (``train_size``) the bandwidth is first chosen on the grid
    :math:`h_{\mathrm{med}} 2^t`, :math:`t \in \{-1.5, -0.75, 0, 0.75, 1.5\}` (kgof's grid
    of squared widths, :math:`h^2_{\mathrm{med}} 2^{2t}`), then the locations and the
    bandwidth ascend the power criterion
    :math:`\widehat{\mathrm{FSSD}^2_u} / \sqrt{\hat\sigma^2_{H_1} + \mathrm{reg}}` by L-BFGS-B
    with its exact gradient, the bandwidth kept within :math:`[0.1, 10]\,h_{\mathrm{med}}`
    and the locations within the data's bounding box widened by 10 standard deviations
    per coordinate; the rest of the sample is tested.

    Parameters
    ----------
    model : distribution or callable
        The model p: an object with ``grad_logpdf(X)`` or a callable ``X -> grad log p(X)``.
    n_locations : int, default=5
        Number of test locations ``J`` (ignored when ``locations`` is given).
    locations : array-like of shape (J, n_features), default=None
        Fixed test locations (the starting point when ``optimize=True``).
    optimize : bool, default=False
        Learn the locations and the bandwidth on a training split (FSSD-opt).
    kernel : {"rbf", "imq"}, default="rbf"
        Base kernel (see :mod:`skstein.kernels`; RBF is
        :math:`\exp(-\|x - y\|^2 / (2h^2))`, kgof's ``KGauss`` with ``sigma2`` :math:`= h^2`).
    bandwidth : float or "median", default="median"
        Kernel bandwidth ``h`` (the start when ``optimize=True``; with ``"median"`` the
        start is chosen on the grid above).
    kernel_params : dict, default=None
        ``{"beta": ...}`` for IMQ.
    train_size : float or int, default=0.2
        Part of the sample that learns the locations when ``optimize=True`` and the
        test is not fitted.
    max_iter : int, default=100
        L-BFGS-B iterations of FSSD-opt.
    tol : float, default=1e-5
        L-BFGS-B tolerance on the objective (``ftol``).
    reg : float, default=1e-2
        Regulariser added to :math:`\hat\sigma^2_{H_1}` in the power criterion (kgof's).
        It is absolute, while :math:`\hat\sigma^2_{H_1}` scales as the data's units to
        the power -4: for data far from unit scale, scale ``reg`` by ``scale**-4`` (or
        standardise the problem) to learn the same locations. The initial locations and
        the test at given locations do not depend on the units.
    n_simulate : int, default=3000
        Draws from the simulated null distribution.
    alpha : float, default=0.05
        Significance level.
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the locations, the split, the median subsample and the null draws.
    max_memory : int, default=32 MiB
        Bound on one block of feature rows; results do not depend on it.

    Attributes
    ----------
    locations_ : ndarray of shape (J, n_features)
        The test locations.
    bandwidth_ : float
    criterion_ : float
        Power criterion on the training sample (FSSD-opt: after the ascent).
    n_iter_ : int
        L-BFGS-B iterations taken (0 for FSSD-rand).
    n_features_in_ : int

    Notes
    -----
    :meth:`fit` chooses the test locations and the bandwidth: FSSD-rand draws the
    locations from the Gaussian fitted to the sample; FSSD-opt learns them on all of it
    (test afterwards on other samples). When fitted, :meth:`test` tests held-out data;
    otherwise FSSD-opt splits the sample. :meth:`discrepancy` is
    :math:`\widehat{\mathrm{FSSD}^2_u}` at the locations (no factor ``n``); :meth:`score`
    the power criterion :math:`\widehat{\mathrm{FSSD}^2_u} / \sqrt{\hat\sigma^2_{H_1} +
    \mathrm{reg}}`, what FSSD-opt maximises. In the result of :meth:`test`,
    ``statistic`` is :math:`\widehat{\mathrm{FSSD}^2_u}` (no factor ``n``),
    ``null_distribution`` holds the simulated draws divided by ``n``, ``bootstrap`` is
    ``"chi2-mixture"`` and ``n_bootstrap`` the number of draws.

    See Also
    --------
    skstein.features.fssd : the statistic as a function.
    RFSDTest : random-feature Stein discrepancies.

    References
    ----------
    .. [1] W. Jitkrittum, W. Xu, Z. Szabó, K. Fukumizu, A. Gretton. "A Linear-Time
       Kernel Goodness-of-Fit Test", NeurIPS 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from skstein import FSSDTest
    >>> from skstein.distributions import Gaussian
    >>> X = np.random.default_rng(0).laplace(size=(1000, 2)) / np.sqrt(2)
    >>> result = FSSDTest(Gaussian(np.zeros(2)), optimize=True, random_state=0).test(X)
    >>> bool(result.reject)
    True
    """

    def __init__(self, model, *, n_locations=5, locations=None, optimize=False, kernel="rbf",
                 bandwidth="median", kernel_params=None, train_size=0.2, max_iter=100,
                 tol=1e-5, reg=1e-2, n_simulate=3000, alpha=0.05, random_state=None,
                 max_memory=DEFAULT_FEATURE_MEMORY):
        self.model = model
        self.n_locations = n_locations
        self.locations = locations
        self.optimize = optimize
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.kernel_params = kernel_params
        self.train_size = train_size
        self.max_iter = max_iter
        self.tol = tol
        self.reg = reg
        self.n_simulate = n_simulate
        self.alpha = alpha
        self.random_state = random_state
        self.max_memory = max_memory

    def _check_params(self):
        self._check_baseline_params(self.n_simulate, "n_simulate")
        check_positive_int(self.n_locations, "n_locations")
        check_bool(self.optimize, "optimize")
        check_choice(self.kernel, "kernel", KERNELS)
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, numbers.Integral) \
                or self.max_iter < 0:
            raise ValueError(f"max_iter must be an integer >= 0, got {self.max_iter!r}.")
        # train_size, tol and reg are checked whether or not optimize uses them
        if isinstance(self.train_size, numbers.Integral) and not isinstance(self.train_size,
                                                                            bool):
            check_positive_int(self.train_size, "train_size", minimum=2)
        else:
            train_count(self.train_size, 1)  # a fraction in (0, 1)
        check_positive_float(self.tol, "tol")
        check_positive_float(self.reg, "reg")
        check_positive_int(self.max_memory, "max_memory")
        if isinstance(self.bandwidth, str):
            check_choice(self.bandwidth, "bandwidth", ("median",))
        else:
            check_bandwidth(self.bandwidth)
        make_kernel(self.kernel, 1.0, self.kernel_params)  # validates kernel_params

    # -- learning ---------------------------------------------------------

    def _learn(self, X, rng):
        """(locations, bandwidth, criterion, n_iter) from the training sample ``X``."""
        loc_rng, bw_rng = rng.spawn(2)
        median = isinstance(self.bandwidth, str)
        h = None if median else resolve_bandwidth(X, self.bandwidth)
        if median or self.optimize:
            try:
                h_med = resolve_bandwidth(X, "median", random_state=bw_rng)
            except ValueError:
                if median:
                    raise
                # the training rows coincide: the ascent's bounds about the given bandwidth
                h_med = h
        if median:
            h = h_med
        if self.locations is not None:
            V = check_locations(self.locations, X.shape[1])
        else:
            V = gaussian_locations(X, self.n_locations, loc_rng)
        S = evaluate_score(self.model, X, "model")
        if not self.optimize:
            kern = make_kernel(self.kernel, h, self.kernel_params)
            crit = fssd_power_criterion(fssd_moments(X, S, V, kern, max_memory=self.max_memory),
                                        self.reg)
            return V, h, float(crit), 0
        if median:
            grid = h * _GRID_FACTORS
            crits = [self._criterion(X, S, V, g)[0] for g in grid]
            h = float(grid[int(np.argmax(crits))])
        return self._ascend(X, S, V, h, h_med)

    def _criterion(self, X, S, V, h):
        return fssd_criterion_and_grad(X, S, V, h, kernel=self.kernel,
                                       kernel_params=self.kernel_params, reg=self.reg)

    def _ascend(self, X, S, V0, h0, h_med):
        J, d = V0.shape
        std = X.std(axis=0)
        lo = np.tile(X.min(axis=0) - 10.0 * std, J)
        hi = np.tile(X.max(axis=0) + 10.0 * std, J)
        log_lo, log_hi = np.log(0.1 * h_med), np.log(10.0 * h_med)
        x0 = np.concatenate([[np.clip(np.log(h0), log_lo, log_hi)], np.clip(V0.ravel(), lo, hi)])
        bounds = [(log_lo, log_hi)] + list(zip(lo, hi))

        def objective(x):
            h = float(np.exp(x[0]))
            V = np.ascontiguousarray(x[1:].reshape(J, d))
            value, gV, gh = self._criterion(X, S, V, h)
            return -value, -np.concatenate([[gh * h], gV.ravel()])

        value, grad = objective(x0)
        if not (np.isfinite(value) and np.all(np.isfinite(grad))):
            # the criterion overflows at the start: the ascent would wander off on NaN
            raise ValueError("the FSSD criterion is not finite on X at the starting "
                             "locations and bandwidth: the values of X or the scores of the "
                             "model overflow float64; rescale X.")
        if self.max_iter == 0:
            return np.ascontiguousarray(x0[1:].reshape(J, d)), float(np.exp(x0[0])), -value, 0
        # a small problem: waking BLAS threads at every L-BFGS-B step costs more than the
        # step (measured on 2 cores: an FSSD-opt test at n = 300, D = 2 took 68 ms, 15 ms
        # with one BLAS thread); fit and test hold BLAS at one thread (skstein._threads)
        res = minimize(objective, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                       options={"maxiter": int(self.max_iter), "ftol": float(self.tol),
                                "gtol": 1e-7})
        x = res.x
        return (np.ascontiguousarray(x[1:].reshape(J, d)), float(np.exp(x[0])), float(-res.fun),
                int(res.nit))

    def _fit(self, X):
        # the streams of an unfitted test(X), so that fit(X).test(X) repeats it for FSSD-rand
        prep_rng = as_generator(self.random_state).spawn(2)[0]
        V, h, crit, nit = self._learn(X, prep_rng.spawn(2)[1])
        self.locations_, self.bandwidth_, self.criterion_, self.n_iter_ = V, h, crit, nit

    def _prepare(self, X, rng):
        """Validated test sample, its scores, the locations and the kernel."""
        self._check_params()
        if is_fitted(self):
            X = self._validate_X(X, reset=False)
            V, h = self.locations_, self.bandwidth_
        else:
            opt = self.optimize
            X = check_samples(X, min_samples=4 if opt else 2)
            split_rng, learn_rng = rng.spawn(2)
            if opt:
                Xtr, X = split_sample(X, self.train_size, split_rng)
                with on_training_part(Xtr, self.train_size):
                    V, h, _, _ = self._learn(Xtr, learn_rng)
            else:
                V, h, _, _ = self._learn(X, learn_rng)
        if V.shape[1] != X.shape[1]:
            raise ValueError(f"X has {X.shape[1]} features but the locations have {V.shape[1]}.")
        S = evaluate_score(self.model, X, "model")
        return X, S, V, make_kernel(self.kernel, h, self.kernel_params)

    # -- testing ----------------------------------------------------------

    def _test(self, X):
        rng = as_generator(self.random_state)
        prep_rng, null_rng = rng.spawn(2)
        X, S, V, kern = self._prepare(X, prep_rng)
        if is_fitted(self):
            _warn_far_from_locations(X, V, kern)
        n = X.shape[0]
        mom = fssd_moments(X, S, V, kern, max_memory=self.max_memory)
        stat = mom.ustat()
        null = chi2_mixture_draws(mom.covariance_eigenvalues(), int(self.n_simulate),
                                  null_rng) / n
        name = "FSSD-opt" if self.optimize else "FSSD"
        return simulated_null_result(
            stat, null, alpha=self.alpha,
            method=f"{name} ({kern.name}, J={V.shape[0]}, chi2-mixture null)",
            n_samples=n, bootstrap="chi2-mixture", n_bootstrap=self.n_simulate,
            bandwidth=kern.bandwidth, independent=True)

    def _discrepancy(self, X):
        X, S, V, kern = self._prepare(X, as_generator(self.random_state).spawn(2)[0])
        return float(fssd_moments(X, S, V, kern, second=False,
                                  max_memory=self.max_memory).ustat())

    def _score(self, X):
        X, S, V, kern = self._prepare(X, as_generator(self.random_state).spawn(2)[0])
        mom = fssd_moments(X, S, V, kern, max_memory=self.max_memory)
        return float(fssd_power_criterion(mom, self.reg))


def _warn_far_from_locations(X, V, kern):
    """Warn when the kernel vanishes between every row of ``X`` and every location of
    ``V`` (below :data:`~skstein.kernels.VANISHING_KERNEL` of its peak): the features
    are then all zero and the test returns statistic 0 and p-value 1 whatever ``X`` is
    (locations and bandwidth fitted on data of a far smaller scale)."""
    t = float(cdist(X, V, "sqeuclidean").min())
    peak = float(kern.profile(np.zeros(1))[0][0])
    if float(kern.profile(np.array([t]))[0][0]) < VANISHING_KERNEL * peak:
        warnings.warn(
            f"the fitted kernel (bandwidth_={kern.bandwidth:.3g}) is below "
            f"{VANISHING_KERNEL:g} of its peak between every row of X and every test "
            f"location (the closest are {np.sqrt(t):.3g} apart), so the test cannot see "
            "anything: X lies far from the data the test was fitted on; rescale X, or fit "
            "the test on data of X's scale.", UserWarning, stacklevel=caller_stacklevel())
