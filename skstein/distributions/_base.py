"""The distribution protocol.

A model ``p`` is anything with ``grad_logpdf(X) -> (n, d)``; a plain callable
``X -> grad log p(X)`` is accepted wherever a distribution is. The optional
members are ``logpdf(X)`` (unnormalised is fine), ``rvs(n, random_state)`` and
``dim``. :class:`Distribution` is a convenience base class, not a requirement.
"""

import numpy as np

from .._docstrings import fill_doc
from .._random import as_generator

__all__ = ["Distribution"]


@fill_doc
class SamplerMixin:
    """``rvs`` of the models: checks its arguments and calls the model's ``_rvs``."""

    def rvs(self, n, random_state=None):
        """Draw ``n`` samples.

        Parameters
        ----------
        n : int
            Number of samples.
        %(random_state_draws)s

        Returns
        -------
        ndarray of shape (n, dim)
            Float64 for continuous models, int64 for discrete ones.
        """
        return self._rvs(check_n(n), as_generator(random_state))

    def _rvs(self, n, rng):
        """``n`` draws (``n`` a checked positive int) from the generator ``rng``."""
        raise NotImplementedError(f"{type(self).__name__} has no sampler.")


@fill_doc
class Distribution(SamplerMixin):
    """Base class of skstein's distributions.

    Subclasses set ``dim`` and implement ``_grad_logpdf`` and, where they can,
    ``_logpdf`` and ``_rvs``: the public ``grad_logpdf``, ``logpdf`` and ``rvs``
    validate their arguments and call them. (A subclass may also override a public
    method directly.)
    """

    dim = None

    def grad_logpdf(self, X):
        r"""Score :math:`\nabla_x \log p(x)` at each row of ``X``.

        %(points_parameters)s

        Returns
        -------
        ndarray of shape (n, dim)
            The score :math:`\nabla_x \log p(x)` at each row.
        """
        return self._grad_logpdf(self._check_X(X))

    def logpdf(self, X):
        """Log density at each row of ``X``.

        Normalised where the model's normaliser is known (each model's class
        docstring says), otherwise up to an additive constant.

        %(points_parameters)s

        Returns
        -------
        ndarray of shape (n,)
        """
        return self._logpdf(self._check_X(X))

    # The public methods above validate their arguments once; subclasses implement
    # the computations below on validated arguments.
    def _grad_logpdf(self, X):
        """The score at the rows of a validated float64 array ``X`` of shape (n, dim)."""
        raise NotImplementedError

    def _logpdf(self, X):
        """The log density at the rows of a validated float64 array ``X`` of shape (n, dim)."""
        raise NotImplementedError(f"{type(self).__name__} has no logpdf.")

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
