"""The distribution protocol.

A model ``p`` is anything with ``grad_logpdf(X) -> (n, d)``; a plain callable
``X -> grad log p(X)`` is accepted wherever a distribution is. The optional
members are ``logpdf(X)`` (unnormalised is fine), ``rvs(n, random_state)``, ``dim``
and ``rvs_kind``. :class:`Distribution` is a convenience base class, not a requirement.

``rvs_kind`` says how ``rvs`` samples: ``"exact"`` (independent draws at the cost of a
few operations each), ``"mcmc"`` (Markov chains: each draw costs many sweeps and is
approximate) or None (no sampler). A model without the attribute is taken as
``"exact"`` when it has a callable ``rvs`` and None otherwise (:func:`rvs_kind`).
Computations that draw many model samples only because it is cheap (the Monte Carlo
null that :class:`~skstein.RFSDTest` takes by default) skip a model whose samples
are not ``"exact"``.
"""

import numpy as np

from .._docstrings import fill_doc
from .._random import as_generator

__all__ = ["Distribution", "rvs_kind"]

RVS_KINDS = ("exact", "mcmc", None)
_MISSING = object()


def rvs_kind(model):
    """How ``model`` samples: ``"exact"``, ``"mcmc"`` or None.

    ``"exact"``: independent draws at the cost of a few operations each; ``"mcmc"``:
    Markov chains, each draw costing many sweeps and approximate (:class:`GaussBernRBM`,
    :class:`BinaryRBM`); None: no sampler. It is the model's ``rvs_kind`` attribute;
    without one, ``"exact"`` when the model has a callable ``rvs`` and None otherwise.
    Computations that draw many model samples only because it is cheap (the Monte
    Carlo null that :class:`~skstein.RFSDTest` takes by default) skip the models whose
    samples are not ``"exact"``; a model whose ``rvs`` runs a Markov chain should say
    so with ``rvs_kind = "mcmc"``.

    Parameters
    ----------
    model : distribution or callable

    Returns
    -------
    {"exact", "mcmc"} or None

    Raises a ValueError naming ``model.rvs_kind`` when the attribute holds anything
    else.

    Examples
    --------
    >>> import numpy as np
    >>> from skstein.distributions import Gaussian, GaussBernRBM, rvs_kind
    >>> rvs_kind(Gaussian(np.zeros(2))), rvs_kind(lambda X: -X)
    ('exact', None)
    >>> rvs_kind(GaussBernRBM(np.ones((2, 1)), np.zeros(2), np.zeros(1)))
    'mcmc'
    """
    kind = getattr(model, "rvs_kind", _MISSING)
    if kind is _MISSING:
        return "exact" if callable(getattr(model, "rvs", None)) else None
    if not (kind is None or (isinstance(kind, str) and kind in RVS_KINDS)):
        raise ValueError(f"model.rvs_kind must be 'exact', 'mcmc' or None, got {kind!r}.")
    return kind


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

    @property
    def rvs_kind(self):
        """``"exact"`` if the class implements a sampler, else None; a subclass whose
        sampler runs Markov chains sets ``rvs_kind = "mcmc"``."""
        cls = type(self)
        implemented = cls._rvs is not SamplerMixin._rvs or cls.rvs is not SamplerMixin.rvs
        return "exact" if implemented else None


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
