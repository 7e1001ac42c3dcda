"""The distribution protocol.

A model ``p`` is anything with ``grad_logpdf(X) -> (n, d)``; a plain callable
``X -> grad log p(X)`` is accepted wherever a distribution is. The optional
members are ``logpdf(X)`` (unnormalised is fine), ``rvs(n, random_state)`` and
``dim``. :class:`Distribution` is a convenience base class, not a requirement.
"""

import numpy as np

__all__ = ["Distribution"]


class Distribution:
    """Base class of skstein's distributions.

    Subclasses implement ``grad_logpdf`` and, where they can, ``logpdf`` and
    ``rvs``; they set ``dim``.
    """

    dim = None

    def grad_logpdf(self, X):
        """Score ``grad_x log p(x)`` at each row of ``X``.

        Parameters
        ----------
        X : array-like of shape (n, dim)
            Points, one per row.

        Returns
        -------
        ndarray of shape (n, dim)
        """
        raise NotImplementedError

    def logpdf(self, X):
        """Log density (possibly up to an additive constant) at each row of ``X``.

        Parameters
        ----------
        X : array-like of shape (n, dim)
            Points, one per row.

        Returns
        -------
        ndarray of shape (n,)
        """
        raise NotImplementedError(f"{type(self).__name__} has no logpdf.")

    def rvs(self, n, random_state=None):
        """Draw ``n`` samples.

        Parameters
        ----------
        n : int
            Number of samples.
        random_state : None, int or numpy.random.Generator, default=None
            Seed or generator of the draws.

        Returns
        -------
        ndarray of shape (n, dim)
        """
        raise NotImplementedError(f"{type(self).__name__} has no sampler.")

    def __call__(self, X):
        return self.grad_logpdf(X)

    def _check_X(self, X):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1 and self.dim is not None:
            X = X.reshape(-1, self.dim)
        if X.ndim != 2 or (self.dim is not None and X.shape[1] != self.dim):
            raise ValueError(
                f"X must have shape (n, {self.dim}) for {type(self).__name__}, got {X.shape}."
            )
        return X


def check_n(n):
    import numbers

    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}.")
    return int(n)


def check_dim(dim):
    import numbers

    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or dim < 1:
        raise ValueError(f"dim must be a positive integer, got {dim!r}.")
    return int(dim)
