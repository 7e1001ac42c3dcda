r"""Bayesian neural-network regression with SVGD and sliced SVGD.

:class:`BNNRegressor` fits the one-hidden-layer network of Liu & Wang (2016), the
model of Gong et al. (2021, appendix J.5, Table 5): its posterior (a
:class:`skstein.distributions.BNNPosterior`) is represented by particles moved with
:class:`skstein.SVGD` or :class:`skstein.SlicedSVGD`, and predictions average over
the particles.
"""

import math

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from ._progress import check_verbose, progress_bar
from ._random import as_generator
from ._validation import check_choice, check_positive_float, check_positive_int
from .distributions.bnn import BNNPosterior, mixture_log_predictive
from .svgd import SVGD, SlicedSVGD

__all__ = ["BNNRegressor"]

SAMPLERS = ("sliced-svgd", "svgd")
#: sampler parameters that BNNRegressor sets itself
_OWN = ("target", "n_particles", "n_iter", "step_size", "optimizer", "history_every",
        "random_state", "verbose")


class _Monitored:
    """The posterior's score, counting iterations into a progress bar.

    Once per epoch the bar shows the running training RMSE (original units) of the
    particles' mean prediction on the last batch.
    """

    def __init__(self, posterior, bar, per_epoch, y_scale, on_epoch=None):
        self.posterior, self.bar, self.per_epoch = posterior, bar, per_epoch
        self.y_scale, self.dim, self.calls = y_scale, posterior.dim, 0
        self.on_epoch = on_epoch

    def grad_logpdf(self, theta):
        if self.on_epoch is not None and self.calls and self.calls % self.per_epoch == 0:
            # the particles after a whole number of epochs (before the next step)
            self.on_epoch(self.posterior, self.calls // self.per_epoch, theta)
        S = self.posterior.grad_logpdf(theta)
        self.calls += 1
        if self.calls % self.per_epoch == 0:
            resid = self.posterior.last_residuals_.mean(axis=0)
            rmse = float(np.sqrt(np.mean(resid ** 2))) * self.y_scale
            self.bar.set_postfix_str(f"train RMSE {rmse:.4g}")
            self.bar.update(1)
        return S


class BNNRegressor(RegressorMixin, BaseEstimator):
    r"""Bayesian neural-network regressor fitted by SVGD or sliced SVGD.

    The model of Liu & Wang (2016): one hidden layer of ``n_hidden`` ReLU units,
    Gaussian likelihood with precision :math:`\gamma`, Gaussian weights with
    precision :math:`\lambda`, Gamma(1, 0.1) priors on both, sampled as
    :math:`\log\gamma` and :math:`\log\lambda` (see
    :class:`skstein.distributions.BNNPosterior` for the score). ``fit``
    standardises the inputs and the target, moves ``n_particles`` particles with
    mini-batch scores (the batch likelihood scaled by ``n / batch``) and
    Liu & Wang's AdaGrad rule, and keeps them; predictions are mapped back to the
    target's units.

    The protocol of the reference code is kept: a development set (``validation_fraction``
    of the rows, at most 500) is held out of training, and after training each
    particle's :math:`\gamma` is replaced by the inverse of its mean squared error
    there (the reference keeps whichever of the two fits the development set better,
    and this maximum-likelihood value always does); the initial
    :math:`\gamma` of each particle is the inverse mean squared error of its initial
    network (a first fit to the data).

    Parameters
    ----------
    n_hidden : int, default=50
        Hidden units.
    sampler : {"sliced-svgd", "svgd"}, default="sliced-svgd"
        :class:`skstein.SlicedSVGD` (along the coordinate axes, directions learned
        as the particles move) or :class:`skstein.SVGD` (RBF kernel, median
        bandwidth).
    n_particles : int, default=50
        Particles (networks); at least 2.
    batch_size : int, default=100
        Rows per score evaluation; shrinks to the training rows when there are fewer.
    n_epochs : int, default=500
        Passes over the training rows; each has ``ceil(n_train / batch)`` iterations.
        (Liu & Wang run 2000 iterations of batch 100, about 500 epochs on Boston.)
    step_size : float, default=1e-3
        The AdaGrad master step size of the reference code.
    validation_fraction : float in [0, 1), default=0.1
        Share of the rows held out as the development set (at most 500 rows; none
        when it would leave fewer than 2 training rows or hold none out).
    init_scale : float, default=1.0
        Multiplies the initial network weights of Liu & Wang's draw (the initial
        :math:`\gamma` is then fitted to these networks). Gong et al.'s UCI script
        starts from nearly collapsed particles, ``init_scale=1e-8``.
    sampler_params : dict, default=None
        Further parameters of the sampler (for example
        ``{"bandwidth": "median-log", "repulsion_warmup": 5000}`` for
        :class:`skstein.SlicedSVGD`); not those that ``BNNRegressor`` sets itself
        (``n_particles``, ``step_size``, ...). Sliced SVGD runs along the
        coordinate axes (``slices="axes"``) unless ``sampler_params`` says otherwise.
        ``step_scale`` stays ``"absolute"``: the initial particles share their biases.
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the split, the initial particles, the batch order and the sampler.
    verbose : int, bool or "auto", default=False
        A progress bar over the epochs with the running training RMSE.

    Attributes
    ----------
    particles_ : ndarray of shape (n_particles, n_params)
        The particles, in the standardised units of the data (layout of
        :class:`skstein.distributions.BNNPosterior`).
    posterior_ : BNNPosterior
        The target of the particles (standardised training rows).
    sampler_ : SVGD or SlicedSVGD
        The fitted particle sampler.
    x_mean_, x_scale_ : ndarray of shape (n_features,)
    y_mean_, y_scale_ : float
        The standardisation of inputs and target.
    n_iter_ : int
        Sampler iterations run.
    n_features_in_ : int

    See Also
    --------
    skstein.SVGD, skstein.SlicedSVGD

    References
    ----------
    Liu, Q. and Wang, D. (2016). Stein variational gradient descent. NeurIPS.
    Gong, W., Li, Y. and Hernández-Lobato, J. M. (2021). Sliced kernelized Stein
    discrepancy. ICLR, appendix J.5.

    Examples
    --------
    >>> import numpy as np
    >>> from skstein import BNNRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-2, 2, size=(200, 1))
    >>> y = np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(200)
    >>> reg = BNNRegressor(n_hidden=20, n_particles=10, n_epochs=100, step_size=1e-2,
    ...                    random_state=0).fit(X, y)
    >>> mean, std = reg.predict(X[:3], return_std=True)
    >>> mean.shape, bool(np.all(std > 0))
    ((3,), True)
    """

    def __init__(self, *, n_hidden=50, sampler="sliced-svgd", n_particles=50, batch_size=100,
                 n_epochs=500, step_size=1e-3, validation_fraction=0.1, init_scale=1.0,
                 sampler_params=None, random_state=None, verbose=False):
        self.n_hidden = n_hidden
        self.sampler = sampler
        self.n_particles = n_particles
        self.batch_size = batch_size
        self.n_epochs = n_epochs
        self.step_size = step_size
        self.validation_fraction = validation_fraction
        self.init_scale = init_scale
        self.sampler_params = sampler_params
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags

    def _check_params(self):
        check_positive_int(self.n_hidden, "n_hidden")
        check_choice(self.sampler, "sampler", SAMPLERS)
        check_positive_int(self.n_particles, "n_particles", minimum=2)
        check_positive_int(self.batch_size, "batch_size")
        check_positive_int(self.n_epochs, "n_epochs", minimum=0)
        check_positive_float(self.step_size, "step_size")
        frac = self.validation_fraction
        if isinstance(frac, bool) or not isinstance(frac, (int, float, np.floating)) or not (
                0 <= frac < 1):
            raise ValueError(f"validation_fraction must be a float in [0, 1), got {frac!r}.")
        check_positive_float(self.init_scale, "init_scale")
        params = {} if self.sampler_params is None else self.sampler_params
        if not isinstance(params, dict):
            raise TypeError(f"sampler_params must be a dict or None, got {params!r}.")
        own = sorted(set(params) & set(_OWN))
        if own:
            raise ValueError(f"sampler_params must not set {own}: BNNRegressor sets them "
                             "(use its own parameters).")
        cls = SVGD if self.sampler == "svgd" else SlicedSVGD
        unknown = sorted(set(params) - set(cls(None).get_params()))
        if unknown:
            raise ValueError(f"sampler_params: {unknown} are not parameters of "
                             f"{cls.__name__}.")
        if params.get("step_scale", "absolute") != "absolute":
            raise ValueError("sampler_params: step_scale must be 'absolute' here: Liu & "
                             "Wang's initial particles share their biases (zero), and "
                             "steps relative to the particles' spread would never move "
                             "them.")
        check_verbose(self.verbose)

    @staticmethod
    def _check_y(y):
        """``y`` as 1-D: a column vector with scikit-learn's warning, more columns refused
        with an error naming ``y``."""
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] != 1 or y.ndim > 2:
            raise ValueError(f"y must be 1-D (one target per row), got shape {y.shape}; "
                             "BNNRegressor fits a single output.")
        return column_or_1d(y, warn=True) if y.ndim == 2 else y

    def fit(self, X, y):
        """Move the particles to the posterior given the training data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite inputs.
        y : array-like of shape (n_samples,)
            Finite targets (a column vector is accepted with scikit-learn's warning).

        Returns
        -------
        self
        """
        self._check_params()
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64, multi_output=True)
        y = self._check_y(y)
        rng = as_generator(self.random_state)
        seeds = rng.integers(0, 2**32, size=4)
        n = X.shape[0]
        n_dev = min(int(round(self.validation_fraction * n)), 500)
        if n_dev < 1 or n - n_dev < 2:
            n_dev = 0
        order = np.random.default_rng(seeds[0]).permutation(n)
        train, dev = order[:n - n_dev], order[n - n_dev:]
        Xt, yt = X[train], y[train]
        self.x_mean_ = Xt.mean(axis=0)
        scale = Xt.std(axis=0)
        self.x_scale_ = np.where(scale > 0, scale, 1.0)
        self.y_mean_ = float(yt.mean())
        ys = float(yt.std())
        self.y_scale_ = ys if ys > 0 else 1.0
        Xs = (Xt - self.x_mean_) / self.x_scale_
        ysd = (yt - self.y_mean_) / self.y_scale_
        post = BNNPosterior(Xs, ysd, n_hidden=self.n_hidden, batch_size=self.batch_size,
                            random_state=np.random.default_rng(seeds[1]))
        theta0 = post.initial_particles(self.n_particles, np.random.default_rng(seeds[2]),
                                        scale=self.init_scale)
        per_epoch = math.ceil(Xs.shape[0] / post.batch_size)
        n_iter = self.n_epochs * per_epoch
        with progress_bar(self.n_epochs, verbose=self.verbose, desc="BNNRegressor",
                          unit="epoch") as bar:
            # _epoch_callback(posterior, epoch, particles): set by experiments that
            # follow a fit
            target = _Monitored(post, bar, per_epoch, self.y_scale_,
                                getattr(self, "_epoch_callback", None))
            common = dict(n_particles=self.n_particles, n_iter=n_iter,
                          step_size=self.step_size, optimizer="adagrad",
                          history_every=max(n_iter, 1), random_state=int(seeds[3]))
            if self.sampler == "svgd":
                sampler = SVGD(target, **common, **(self.sampler_params or {}))
            else:
                sampler = SlicedSVGD(target, **common,
                                     **{"slices": "axes", **(self.sampler_params or {})})
            sampler.fit(theta0)  # BLAS on one thread inside (skstein._threads)
        theta = np.array(sampler.particles_)
        if n_dev:
            theta[:, -2] = self._adjust_gamma(post, theta, X[dev], y[dev])
        sampler.target = post
        self.particles_, self.posterior_, self.sampler_ = theta, post, sampler
        self.n_iter_ = n_iter
        return self

    def _adjust_gamma(self, post, theta, X_dev, y_dev):
        """Each particle's log gamma after the reference's development-set step.

        The reference keeps the better, on the development set, of the particle's
        precision and the inverse of its development mean squared error; the latter
        maximises the Gaussian log-likelihood in gamma, so the step sets each
        particle's precision to it.
        """
        Xs = (X_dev - self.x_mean_) / self.x_scale_
        ys = (y_dev - self.y_mean_) / self.y_scale_
        mse = np.mean((post.predict(theta, Xs) - ys[None, :]) ** 2, axis=1)
        return -np.log(np.maximum(mse, 1e-12))

    def _outputs(self, X):
        """Particle predictions (K, n) in the target's units."""
        check_is_fitted(self, "particles_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        Xs = (X - self.x_mean_) / self.x_scale_
        return self.posterior_.predict(self.particles_, Xs) * self.y_scale_ + self.y_mean_

    def predict(self, X, return_std=False):
        """Mean of the posterior predictive (the particles' mean prediction).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        return_std : bool, default=False
            Also return the predictive standard deviation of the particle mixture:
            the spread of the networks' outputs and the noise :math:`1/\\gamma`.

        Returns
        -------
        y_mean : ndarray of shape (n_samples,)
        y_std : ndarray of shape (n_samples,), only when ``return_std``
        """
        pred = self._outputs(X)
        mean = pred.mean(axis=0)
        if not return_std:
            return mean
        noise = np.mean(np.exp(-self.particles_[:, -2])) * self.y_scale_ ** 2
        return mean, np.sqrt(pred.var(axis=0) + noise)

    def sample_y(self, X, n_samples=1, random_state=None):
        """Draws from the posterior predictive at each row of ``X``.

        Each draw picks a particle at random and adds its Gaussian noise.

        Parameters
        ----------
        X : array-like of shape (n_samples_X, n_features)
        n_samples : int, default=1
        random_state : None, int or numpy.random.Generator, default=None

        Returns
        -------
        ndarray of shape (n_samples_X, n_samples)
        """
        n_samples = check_positive_int(n_samples, "n_samples")
        pred = self._outputs(X)
        rng = as_generator(random_state)
        k = rng.integers(0, pred.shape[0], size=(pred.shape[1], n_samples))
        sd = self.y_scale_ * np.exp(-0.5 * self.particles_[:, -2])
        rows = np.arange(pred.shape[1])[:, None]
        return pred.T[rows, k] + sd[k] * rng.standard_normal(k.shape)

    def log_predictive(self, X, y):
        """Mean test log-likelihood under the particle mixture.

        :math:`\\frac1n \\sum_i \\log \\frac1K \\sum_k N(y_i; f_k(x_i), \\sigma_y^2 /
        \\gamma_k)`, in the units of ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        float
        """
        pred = self._outputs(X)
        y = self._check_y(y).astype(np.float64)
        if y.shape[0] != pred.shape[1] or not np.all(np.isfinite(y)):
            raise ValueError(f"y must hold {pred.shape[1]} finite values, one per row of X.")
        return mixture_log_predictive(pred, self.particles_[:, -2], y, self.y_scale_)
