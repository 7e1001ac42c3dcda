"""Discrete models on {0, ..., L-1}^D: independent categoricals and the binary RBM.

A discrete model declares its domain with ``n_values`` and gives the probability
ratios of the discrete Stein operators through ``log_ratio(X, shift)`` (see
:mod:`skstein.discrete`). Samples are integer arrays of shape ``(n, dim)``.
"""

import numpy as np
from scipy.special import expit

from .._validation import check_positive_int, named_errors
from ._base import SamplerMixin

__all__ = ["DiscreteDistribution", "Categorical", "BinaryRBM"]


class DiscreteDistribution(SamplerMixin):
    """Base class of skstein's discrete models.

    Subclasses set ``dim`` and ``n_values`` and implement ``_log_ratio``; ``_logpmf``
    (unnormalised is fine) and ``_rvs`` where they can: the public ``log_ratio``,
    ``logpmf`` and ``rvs`` validate their arguments and call them. (A subclass may
    also override a public method directly.)
    """

    dim = None
    n_values = None

    def log_ratio(self, X, shift):
        """``log p(x + shift e_j) - log p(x)`` for each row and coordinate.

        ``shift`` is ``+1`` or ``-1`` and moves coordinate ``j`` cyclically.

        Parameters
        ----------
        X : array-like of int of shape (n, dim)
            Points of :math:`\\{0, \\dots, L-1\\}^D`, one per row.
        shift : {1, -1}
            Direction of the cyclic move of each coordinate.

        Returns
        -------
        ndarray of shape (n, dim)
            Entry ``(i, j)`` is :math:`\\log p(x_i + s e_j) - \\log p(x_i)`.
        """
        return self._log_ratio(self._check_X(X), self._check_shift(shift))

    def logpmf(self, X):
        """Log probability (possibly up to an additive constant) of each row of ``X``.

        Parameters
        ----------
        X : array-like of int of shape (n, dim)
            Points of :math:`\\{0, \\dots, L-1\\}^D`, one per row.

        Returns
        -------
        ndarray of shape (n,)
        """
        return self._logpmf(self._check_X(X))

    # The public methods above validate their arguments once; subclasses implement
    # the computations below on validated arguments.
    def _log_ratio(self, X, shift):
        """The log ratios at a validated int64 array ``X`` for a checked ``shift`` (+1 or -1)."""
        raise NotImplementedError

    def _logpmf(self, X):
        """The log probabilities of the rows of a validated int64 array ``X``."""
        raise NotImplementedError(f"{type(self).__name__} has no logpmf.")

    def _check_X(self, X):
        X = np.asarray(X)
        if X.dtype == bool:
            X = X.astype(np.int64)
        if X.ndim != 2 or X.shape[1] != self.dim:
            raise ValueError(f"X must have shape (n, {self.dim}) for {type(self).__name__}, "
                             f"got {X.shape}.")
        if not np.issubdtype(X.dtype, np.integer):
            if not (np.issubdtype(X.dtype, np.floating) and np.all(X == np.round(X))):
                raise ValueError(f"X must hold integers for {type(self).__name__}.")
        X = X.astype(np.int64)
        if np.any(X < 0) or np.any(X >= self.n_values):
            raise ValueError(f"X must hold values in {{0, ..., {self.n_values - 1}}} for "
                             f"{type(self).__name__}.")
        return X

    @staticmethod
    def _check_shift(shift):
        if isinstance(shift, bool) or shift not in (1, -1):
            raise ValueError(f"shift must be +1 or -1, got {shift!r}.")
        return int(shift)


class Categorical(DiscreteDistribution):
    r"""Independent categorical coordinates: :math:`p(x) = \prod_j \pi_{j, x_j}`.

    Parameters
    ----------
    probs : array-like of shape (D, L)
        Row ``j`` is the distribution of coordinate ``j`` over ``{0, ..., L-1}``:
        non-negative, summing to 1 (to within 1e-8; rows are then normalised exactly).
        Zeros are allowed; a sample with a zero-probability value is outside the model's
        support and is rejected by the tests.

    Attributes
    ----------
    dim : int
        ``D``.
    n_values : int
        ``L``.

    Examples
    --------
    >>> import numpy as np
    >>> from skstein.distributions import Categorical
    >>> p = Categorical([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]])
    >>> p.rvs(4, random_state=0).shape
    (4, 2)
    >>> np.exp(p.log_ratio([[0, 2]], 1))   # p(x + e_j) / p(x), cyclic
    array([[0.5  , 0.125]])
    """

    def __init__(self, probs):
        with named_errors("probs"):
            P = np.array(probs, dtype=np.float64)
        if P.ndim != 2 or P.shape[1] < 2:
            raise ValueError(f"probs must have shape (D, L) with L >= 2, got {P.shape}.")
        if not np.all(np.isfinite(P)) or np.any(P < 0):
            raise ValueError("probs must be finite and non-negative.")
        sums = P.sum(axis=1)
        if np.any(np.abs(sums - 1.0) > 1e-8):
            raise ValueError(f"each row of probs must sum to 1, got row sums {sums}.")
        P /= sums[:, None]
        self.probs = P
        self.dim, self.n_values = P.shape
        with np.errstate(divide="ignore"):
            self._logp = np.log(P)
        self._cum = np.cumsum(P, axis=1)

    def _log_ratio(self, X, shift):
        cols = np.arange(self.dim)[None, :]
        Xs = (X + shift) % self.n_values
        with np.errstate(invalid="ignore"):
            return self._logp[cols, Xs] - self._logp[cols, X]

    def _logpmf(self, X):
        return self._logp[np.arange(self.dim)[None, :], X].sum(axis=1)

    def _rvs(self, n, rng):
        # inversion of each coordinate's distribution function
        U = rng.random((n, self.dim))
        X = np.empty((n, self.dim), dtype=np.int64)
        for j in range(self.dim):
            X[:, j] = np.searchsorted(self._cum[j], U[:, j], side="right")
        return np.minimum(X, self.n_values - 1)

    def __repr__(self):
        return f"Categorical(dim={self.dim}, n_values={self.n_values})"


def _softplus(A):
    return np.logaddexp(0.0, A)


class BinaryRBM(DiscreteDistribution):
    r"""Restricted Boltzmann machine with binary visible and hidden units.

    The model of scikit-learn's ``BernoulliRBM``: with weights :math:`W`
    (``components``, shape ``(n_hidden, D)``), hidden intercepts :math:`c` and visible
    intercepts :math:`b`, the free energy of :math:`v \in \{0, 1\}^D` is
    :math:`F(v) = -b^\top v - \sum_k \log(1 + e^{c_k + W_k v})` and
    :math:`p(v) \propto e^{-F(v)}`. The normaliser is intractable; the ratios of the
    discrete Stein operators are exact: flipping unit ``j`` (the shift ``+1`` and ``-1``
    coincide for ``L = 2``),

    .. math::

        \log\frac{p(v')}{p(v)} = b_j \Delta_j + \sum_k \mathrm{softplus}(a_k + \Delta_j W_{kj})
        - \mathrm{softplus}(a_k), \qquad a = W v + c, \ \Delta_j = 1 - 2 v_j.

    Parameters
    ----------
    components : array-like of shape (n_hidden, D)
    intercept_hidden : array-like of shape (n_hidden,)
    intercept_visible : array-like of shape (D,)
    burn_in : int, default=1000
        Block-Gibbs sweeps before :meth:`rvs` returns a chain's state.

    Attributes
    ----------
    dim : int
    n_values : int
        2.

    See Also
    --------
    skstein.distributions.from_estimator : builds this model from a fitted
        ``sklearn.neural_network.BernoulliRBM``.
    """

    n_values = 2

    rvs_kind = "mcmc"

    def __init__(self, components, intercept_hidden, intercept_visible, burn_in=1000):
        with named_errors("components"):
            W = np.asarray(components, dtype=np.float64)
        with named_errors("intercept_hidden"):
            c = np.asarray(intercept_hidden, dtype=np.float64)
        with named_errors("intercept_visible"):
            b = np.asarray(intercept_visible, dtype=np.float64)
        if W.ndim != 2 or c.shape != (W.shape[0],) or b.shape != (W.shape[1],):
            raise ValueError("components must be (n_hidden, D), intercept_hidden (n_hidden,) and "
                             f"intercept_visible (D,); got {W.shape}, {c.shape}, {b.shape}.")
        if not (np.all(np.isfinite(W)) and np.all(np.isfinite(b)) and np.all(np.isfinite(c))):
            raise ValueError("the RBM parameters must be finite.")
        self.components = np.ascontiguousarray(W)
        self.intercept_hidden = c
        self.intercept_visible = b
        self.dim = W.shape[1]
        self.burn_in = check_positive_int(burn_in, "burn_in", minimum=0)

    def _hidden_input(self, V):
        """The hidden units' inputs :math:`W v + c` (n, n_hidden) at float visible states ``V``."""
        return V @ self.components.T + self.intercept_hidden

    def _logpmf(self, X):
        V = X.astype(np.float64)
        return V @ self.intercept_visible + _softplus(self._hidden_input(V)).sum(axis=1)

    def _log_ratio(self, X, shift):
        V = X.astype(np.float64)
        A = self._hidden_input(V)
        base = _softplus(A).sum(axis=1)
        delta = 1.0 - 2.0 * V
        out = delta * self.intercept_visible
        for j in range(self.dim):
            out[:, j] += _softplus(A + delta[:, j:j + 1] * self.components[:, j]).sum(axis=1)
            out[:, j] -= base
        return out

    def _rvs(self, n, rng):
        # n block-Gibbs chains from uniform starts, burn_in sweeps
        W, b = self.components, self.intercept_visible
        V = (rng.random((n, self.dim)) < 0.5).astype(np.float64)
        for _ in range(self.burn_in):
            Hd = (rng.random((n, W.shape[0])) < expit(self._hidden_input(V))).astype(np.float64)
            V = (rng.random((n, self.dim)) < expit(Hd @ W + b)).astype(np.float64)
        return V.astype(np.int64)

    def __repr__(self):
        return f"BinaryRBM(dim={self.dim}, n_hidden={self.components.shape[0]})"
