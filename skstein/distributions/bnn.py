r"""Posterior of a one-hidden-layer Bayesian neural network for regression.

The model of Liu & Wang (2016), which Gong et al. (2021, appendix J.5) follow. A
particle is :math:`\theta = (W_1, b_1, w_2, b_2, \log\gamma, \log\lambda)` with
:math:`W_1 \in \mathbb{R}^{d \times H}`, :math:`b_1, w_2 \in \mathbb{R}^H`,
:math:`b_2 \in \mathbb{R}`, flattened in that order (``W_1`` row-major), so a
particle has :math:`P + 2` coordinates with :math:`P = dH + 2H + 1` weights.

.. math::

    f_\theta(x) &= \mathrm{relu}(x W_1 + b_1)^\top w_2 + b_2, \\
    y \mid x, \theta &\sim N(f_\theta(x), 1/\gamma), \qquad
    w \sim N(0, I_P / \lambda), \qquad \gamma, \lambda \sim \mathrm{Gamma}(a_0, b_0)

(shape :math:`a_0`, rate :math:`b_0`). The density in the log parameters includes
the Jacobian: :math:`\log p(\log\gamma) = a_0 \log\gamma - b_0\gamma + \mathrm{const}`.
On a batch :math:`B` of the :math:`n` training rows the log posterior is estimated by
the prior plus :math:`n/|B|` times the batch log-likelihood, whose score is, with
residuals :math:`r_i = y_i - f_\theta(x_i)` and :math:`c = n/|B|`,

.. math::

    \nabla_w &= c\gamma \sum_{i \in B} r_i \nabla_w f_\theta(x_i) - \lambda w, \\
    \partial_{\log\gamma} &= c\Big(\frac{|B|}{2} - \frac{\gamma}{2}\sum_{i\in B} r_i^2\Big)
        + a_0 - b_0\gamma, \\
    \partial_{\log\lambda} &= \frac P2 - \frac\lambda2 \|w\|^2 + a_0 - b_0\lambda,

with the network's gradients by hand (ReLU: the hidden unit's gradient passes where
its pre-activation is positive), batched over particles with matrix products.
"""

import numpy as np
from scipy.special import logsumexp

from .._random import as_generator
from .._validation import check_positive_float, check_positive_int
from ._base import Distribution

__all__ = ["BNNPosterior"]

_LOG_2PI = float(np.log(2.0 * np.pi))


class BNNPosterior(Distribution):
    r"""Posterior of a one-hidden-layer ReLU network's weights and precisions.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Training inputs (the regressor standardises them first).
    y : array-like of shape (n_samples,)
        Training targets.
    n_hidden : int, default=50
        Hidden ReLU units :math:`H`.
    a0, b0 : float, default=1.0, 0.1
        Shape and rate of the Gamma priors on :math:`\gamma` and :math:`\lambda`.
    batch_size : int, default=None
        Rows per score evaluation. ``None`` (or at least ``n_samples``) uses every row;
        otherwise each call of :meth:`grad_logpdf` takes the next batch of a stream
        that visits the rows in a fresh random order every pass, and scales the
        batch log-likelihood by ``n_samples / batch``.
    random_state : None, int or numpy.random.Generator, default=None
        Seed of the batch order.

    Attributes
    ----------
    dim : int
        :math:`dH + 2H + 1 + 2`.
    n_weights : int
        :math:`P = dH + 2H + 1`.

    Notes
    -----
    :meth:`logpdf` is the full-data log posterior up to an additive constant (with
    ``rows``, its batch estimate); :meth:`grad_logpdf` is its gradient. The
    particles of :meth:`initial_particles` follow Liu & Wang (2016): weights
    :math:`N(0, 1/(d+1))` and :math:`N(0, 1/(H+1))`, zero biases, :math:`\lambda` drawn
    from a Gamma distribution of shape ``a0`` and *scale* ``b0`` (as the reference code
    draws it; mean 0.1, against the prior's mean 10: the step size of 1e-3 moves
    :math:`\log\lambda` by at most about 2 in 2000 iterations, so the start
    matters) and :math:`\gamma` set to the inverse mean squared error of the initial
    network on up to 1000 training rows.

    Examples
    --------
    >>> import numpy as np
    >>> from skstein.distributions import BNNPosterior
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((30, 2)); y = X[:, 0] - X[:, 1]
    >>> post = BNNPosterior(X, y, n_hidden=4)
    >>> theta = post.initial_particles(3, random_state=0)
    >>> post.grad_logpdf(theta).shape
    (3, 19)
    """

    def __init__(self, X, y, *, n_hidden=50, a0=1.0, b0=0.1, batch_size=None,
                 random_state=None):
        X = np.array(X, dtype=np.float64, order="C")
        y = np.array(y, dtype=np.float64).ravel()
        if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
            raise ValueError(f"X must be a non-empty 2-D array, got shape {X.shape}.")
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"y has {y.shape[0]} values for {X.shape[0]} rows of X.")
        if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
            raise ValueError("X and y must be finite.")
        self.X, self.y = X, y
        self.n_hidden = check_positive_int(n_hidden, "n_hidden")
        self.a0 = check_positive_float(a0, "a0")
        self.b0 = check_positive_float(b0, "b0")
        n = X.shape[0]
        if batch_size is None:
            batch_size = n
        self.batch_size = min(check_positive_int(batch_size, "batch_size"), n)
        self._rng = as_generator(random_state)
        self._order, self._pos = np.arange(n), n
        d, H = X.shape[1], self.n_hidden
        self.n_features = d
        self.n_weights = d * H + 2 * H + 1
        self.dim = self.n_weights + 2

    # ---------------------------------------------------------------- layout
    def unpack(self, theta):
        r"""Views ``(W1, b1, w2, b2, log_gamma, log_lambda)`` of particles ``theta``.

        Parameters
        ----------
        theta : ndarray of shape (k, dim)
            Particles, one per row: the :math:`P` weights (``W1`` row-major, ``b1``,
            ``w2``, ``b2``), then :math:`\log\gamma` and :math:`\log\lambda`.

        Returns
        -------
        tuple of ndarray
            Views of shapes ``(k, d, H)``, ``(k, H)``, ``(k, H)``, ``(k,)``, ``(k,)``
            and ``(k,)``.
        """
        k, d, H = theta.shape[0], self.n_features, self.n_hidden
        W1 = theta[:, :d * H].reshape(k, d, H)
        b1 = theta[:, d * H:d * H + H]
        w2 = theta[:, d * H + H:d * H + 2 * H]
        return W1, b1, w2, theta[:, self.n_weights - 1], theta[:, -2], theta[:, -1]

    def _check_theta(self, theta):
        theta = np.asarray(theta, dtype=np.float64)
        if theta.ndim != 2 or theta.shape[1] != self.dim:
            raise ValueError(f"theta must have shape (k, {self.dim}), got {theta.shape}.")
        return theta

    def _forward(self, theta, X):
        W1, b1, w2, b2, _, _ = self.unpack(theta)
        pre = np.matmul(X, W1)  # (k, n, H)
        pre += b1[:, None, :]
        hidden = np.maximum(pre, 0.0, out=pre)
        out = np.matmul(hidden, w2[:, :, None])[..., 0] + b2[:, None]
        return out, hidden

    def predict(self, theta, X):
        """Network outputs ``f_k(x_i)`` of each particle at each row of ``X``.

        Parameters
        ----------
        theta : array-like of shape (k, dim)
            Particles, one per row.
        X : array-like of shape (n, n_features)
            Inputs, one per row, on the scale the posterior was built with.

        Returns
        -------
        ndarray of shape (k, n)
        """
        theta = self._check_theta(theta)
        X = np.asarray(X, dtype=np.float64)
        return self._forward(theta, X)[0]

    # ---------------------------------------------------------------- batches
    def next_batch(self):
        """Row indices of the next batch of the stream (see ``batch_size``)."""
        n, m = self.X.shape[0], self.batch_size
        if m >= n:
            return None
        if self._pos + m > n:
            self._order, self._pos = self._rng.permutation(n), 0
        rows = self._order[self._pos:self._pos + m]
        self._pos += m
        return rows

    def _data(self, rows):
        if rows is None:
            return self.X, self.y
        rows = np.asarray(rows)
        return self.X[rows], self.y[rows]

    # ---------------------------------------------------------------- density
    def logpdf(self, theta, rows=None):
        """Log posterior up to a constant (a batch estimate for given ``rows``).

        Parameters
        ----------
        theta : array-like of shape (k, dim)
        rows : array of int, default=None
            Training rows of the batch; ``None`` uses all of them.

        Returns
        -------
        ndarray of shape (k,)
        """
        theta = self._check_theta(theta)
        X, y = self._data(rows)
        c = self.X.shape[0] / X.shape[0]
        out, _ = self._forward(theta, X)
        log_g, log_l = theta[:, -2], theta[:, -1]
        g, lam = np.exp(log_g), np.exp(log_l)
        sq = np.sum((y[None, :] - out) ** 2, axis=1)
        loglik = 0.5 * X.shape[0] * (log_g - _LOG_2PI) - 0.5 * g * sq
        wsq = np.sum(theta[:, :self.n_weights] ** 2, axis=1)
        P = self.n_weights
        logprior_w = 0.5 * P * (log_l - _LOG_2PI) - 0.5 * lam * wsq
        hyper = self.a0 * (log_g + log_l) - self.b0 * (g + lam)
        return c * loglik + logprior_w + hyper

    def grad_logpdf(self, theta, rows=None):
        """Score of the log posterior at each particle (module docstring).

        Parameters
        ----------
        theta : array-like of shape (k, dim)
        rows : array of int, default=None
            Training rows of the batch. ``None`` takes the next batch of the stream
            (all rows when ``batch_size`` covers the data).

        Returns
        -------
        ndarray of shape (k, dim)
        """
        theta = self._check_theta(theta)
        if rows is None:
            rows = self.next_batch()
        X, y = self._data(rows)
        m, k = X.shape[0], theta.shape[0]
        c = self.X.shape[0] / m
        W1, b1, w2, b2, log_g, log_l = self.unpack(theta)
        g, lam = np.exp(log_g), np.exp(log_l)
        out, hidden = self._forward(theta, X)
        resid = y[None, :] - out  # (k, m)
        self.last_residuals_ = resid
        dout = (c * g)[:, None] * resid  # d loglik / d f
        grad = np.empty_like(theta)
        d, H = self.n_features, self.n_hidden
        dh = dout[:, :, None] * w2[:, None, :]  # (k, m, H)
        dh *= hidden > 0.0  # ReLU: the gradient passes where the unit is active
        grad[:, :d * H] = np.matmul(X.T, dh).reshape(k, d * H)
        grad[:, d * H:d * H + H] = dh.sum(axis=1)
        grad[:, d * H + H:d * H + 2 * H] = np.matmul(dout[:, None, :], hidden)[:, 0, :]
        grad[:, self.n_weights - 1] = dout.sum(axis=1)
        grad[:, :self.n_weights] -= lam[:, None] * theta[:, :self.n_weights]
        sq = np.sum(resid * resid, axis=1)
        grad[:, -2] = c * (0.5 * m - 0.5 * g * sq) + self.a0 - self.b0 * g
        wsq = np.sum(theta[:, :self.n_weights] ** 2, axis=1)
        grad[:, -1] = 0.5 * self.n_weights - 0.5 * lam * wsq + self.a0 - self.b0 * lam
        return grad

    # ---------------------------------------------------------------- particles
    def initial_particles(self, n_particles, random_state=None, scale=1.0):
        r"""Liu & Wang's initial particles (class Notes).

        Parameters
        ----------
        n_particles : int
        random_state : None, int or numpy.random.Generator
        scale : float, default=1.0
            Multiplies the weights (before :math:`\log\gamma` is fitted to the
            initial networks); ``1e-8`` is the nearly collapsed start of Gong et al.'s
            UCI script.

        Returns
        -------
        ndarray of shape (n_particles, dim)
        """
        k = check_positive_int(n_particles, "n_particles")
        rng = as_generator(random_state)
        d, H = self.n_features, self.n_hidden
        theta = np.zeros((k, self.dim))
        scale = check_positive_float(scale, "scale")
        # (a scale of 1 divides exactly as Liu & Wang's draw)
        theta[:, :d * H] = rng.standard_normal((k, d * H)) / (np.sqrt(d + 1) / scale)
        theta[:, d * H + H:d * H + 2 * H] = rng.standard_normal((k, H)) / (
            np.sqrt(H + 1) / scale)
        # as the reference code draws it: numpy's gamma(a0, b0) takes b0 as the scale
        theta[:, -1] = np.log(rng.gamma(self.a0, self.b0, size=k))
        n = self.X.shape[0]
        rows = rng.choice(n, size=min(n, 1000), replace=False)
        out, _ = self._forward(theta, self.X[rows])
        mse = np.mean((out - self.y[rows][None, :]) ** 2, axis=1)
        theta[:, -2] = -np.log(np.maximum(mse, 1e-12))
        return theta

    rvs_kind = None

    def _rvs(self, n, rng):
        raise NotImplementedError("BNNPosterior has no exact sampler; use SVGD or "
                                  "SlicedSVGD with initial_particles.")


def mixture_log_predictive(pred, log_gamma, y, scale=1.0):
    r"""Mean over the rows of :math:`\log \frac1K \sum_k N(y_i; f_k(x_i), s^2/\gamma_k)`.

    ``pred`` of shape ``(K, n)`` holds the particles' predictions in the units of
    ``y``, ``log_gamma`` their precisions in standardised units, ``scale`` :math:`s`
    the target's standard deviation.
    """
    var = (scale ** 2) / np.exp(log_gamma)[:, None]
    logp = -0.5 * (np.log(2.0 * np.pi * var) + (y[None, :] - pred) ** 2 / var)
    return float(np.mean(logsumexp(logp, axis=0) - np.log(pred.shape[0])))


def particle_sum_distance(theta):
    r""":math:`\sum_{i<j} \|\theta_i - \theta_j\|` of the rows of ``theta``."""
    from scipy.spatial.distance import pdist

    theta = np.asarray(theta, dtype=np.float64)
    return float(np.sum(pdist(theta))) if theta.shape[0] > 1 else 0.0

