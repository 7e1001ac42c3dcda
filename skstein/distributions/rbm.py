"""Gauss-Bernoulli restricted Boltzmann machine."""

import numpy as np

from .._docstrings import fill_doc
from .._numba.rbm import gauss_bernoulli_gibbs
from .._random import as_generator
from .._validation import check_positive_int
from ._base import Distribution, check_n

__all__ = ["GaussBernRBM"]


@fill_doc
class GaussBernRBM(Distribution):
    r"""Gauss-Bernoulli RBM with visible :math:`x \in R^{d_x}`, hidden :math:`h \in \{-1, 1\}^{d_h}`.

    .. math::

        p(x, h) \propto \exp\left(\tfrac12 x^\top B h + b^\top x + c^\top h
        - \tfrac12 \|x\|^2\right),

    so that, summing out :math:`h`,

    .. math::

        \log p(x) = b^\top x - \tfrac12\|x\|^2
        + \sum_k \log 2\cosh\left(\tfrac12 B_{:k}^\top x + c_k\right) - \log Z,
        \qquad
        \nabla \log p(x) = b - x + \tfrac12 B \tanh\left(\tfrac12 B^\top x + c\right).

    The normaliser :math:`Z` is intractable, which is what makes the RBM a standard
    benchmark for Stein tests (Liu et al. 2016; Jitkrittum et al. 2017; Gong et al.
    2021).

    Parameters
    ----------
    B : array-like (dx, dh)
    b : array-like (dx,)
    c : array-like (dh,)
    burn_in : int, default=2000
        Gibbs sweeps before a chain's state is returned by :meth:`rvs`.

    Attributes
    ----------
    dim : int
        ``dx``.

    Notes
    -----
    :meth:`logpdf` omits :math:`\log Z`.
    """

    rvs_kind = "mcmc"

    def __init__(self, B, b, c, burn_in=2000):
        B = np.asarray(B, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        c = np.asarray(c, dtype=np.float64)
        if B.ndim != 2 or b.shape != (B.shape[0],) or c.shape != (B.shape[1],):
            raise ValueError(
                f"B must be (dx, dh), b (dx,) and c (dh,); got {B.shape}, {b.shape}, {c.shape}."
            )
        if not (np.all(np.isfinite(B)) and np.all(np.isfinite(b)) and np.all(np.isfinite(c))):
            raise ValueError("B, b and c must be finite.")
        self.B, self.b, self.c = np.ascontiguousarray(B), b, c
        self.dim = B.shape[0]
        self.burn_in = check_positive_int(burn_in, "burn_in", minimum=0)

    def _activation(self, X):
        return 0.5 * (X @ self.B) + self.c

    def _grad_logpdf(self, X):
        return self.b - X + 0.5 * np.tanh(self._activation(X)) @ self.B.T

    def _logpdf(self, X):
        A = self._activation(X)
        return X @ self.b - 0.5 * np.sum(X * X, axis=1) + np.sum(np.logaddexp(A, -A), axis=1)

    def _start(self, n, rng):
        """Chain starts: random hidden signs, then one draw of the visibles."""
        h0 = rng.integers(0, 2, size=(n, self.B.shape[1])) * 2.0 - 1.0
        return self.b + 0.5 * h0 @ self.B.T + rng.standard_normal((n, self.B.shape[0]))

    def rvs(self, n, random_state=None, *, chunk=100):
        """Draw ``n`` samples from ``n`` independent block-Gibbs chains after ``burn_in`` sweeps.

        All randomness is drawn in NumPy from ``random_state`` (``chunk`` sweeps at a
        time), so samples do not depend on the number of threads.

        Parameters
        ----------
        n : int
            Number of samples (chains).
        %(random_state_draws)s
        chunk : int, default=100
            Sweeps whose random numbers are drawn at once (bounds memory).

        Returns
        -------
        ndarray of shape (n, dim)
        """
        n = check_n(n)
        rng = as_generator(random_state)
        dx, dh = self.B.shape
        X = self._start(n, rng)
        BT = np.ascontiguousarray(self.B.T)
        done = 0
        while done < self.burn_in:
            steps = min(chunk, self.burn_in - done)
            U = rng.random((steps, n, dh))
            E = rng.standard_normal((steps, n, dx))
            gauss_bernoulli_gibbs(X, self.B, BT, self.b, self.c, U, E)
            done += steps
        return X

    def gibbs_chains(self, n, n_sweeps, random_state=None):
        """Iterate over the states of ``n`` block-Gibbs chains, one sweep at a time.

        The chains start as in :meth:`rvs` (``burn_in`` is not applied) and the
        iterator yields a copy of the ``(n, dx)`` state after each of ``n_sweeps``
        sweeps: the burn-in states, for training on pseudo-samples as in
        ``MaxSKSDTest.partial_fit``.

        Parameters
        ----------
        n : int
            Number of chains.
        n_sweeps : int
            Number of sweeps (states yielded).
        %(random_state_draws)s

        Yields
        ------
        ndarray of shape (n, dim)
            The state of the chains after each sweep.

        Examples
        --------
        >>> import numpy as np
        >>> from skstein.distributions import GaussBernRBM
        >>> rbm = GaussBernRBM(np.ones((3, 2)), np.zeros(3), np.zeros(2))
        >>> [X.shape for X in rbm.gibbs_chains(4, 2, random_state=0)]
        [(4, 3), (4, 3)]
        """
        n = check_n(n)
        n_sweeps = check_positive_int(n_sweeps, "n_sweeps", minimum=0)
        return self._sweeps(n, n_sweeps, as_generator(random_state))

    def _sweeps(self, n, n_sweeps, rng):
        dx, dh = self.B.shape
        X = self._start(n, rng)
        BT = np.ascontiguousarray(self.B.T)
        for _ in range(n_sweeps):
            U = rng.random((1, n, dh))
            E = rng.standard_normal((1, n, dx))
            gauss_bernoulli_gibbs(X, self.B, BT, self.b, self.c, U, E)
            yield X.copy()

    def __repr__(self):
        return f"GaussBernRBM(dx={self.B.shape[0]}, dh={self.B.shape[1]}, burn_in={self.burn_in})"
