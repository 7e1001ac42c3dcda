"""Product (independent-coordinate) distributions used as benchmark alternatives."""

import numpy as np
from scipy.special import gammaln

from .._random import as_generator
from .._validation import check_positive_float
from ._base import Distribution, check_dim, check_n

__all__ = ["Laplace", "StudentT"]


class Laplace(Distribution):
    r"""Product of independent Laplace coordinates, density :math:`\prod_d e^{-|x_d - \mu|/b}/(2b)`.

    Parameters
    ----------
    dim : int
    loc : float, default=0.0
    scale : float, default=1/sqrt(2)
        The scale :math:`b`; the default gives unit variance per coordinate
        (:math:`2b^2 = 1`), the alternative of Gong et al. (2021).

    Notes
    -----
    The score :math:`-\mathrm{sign}(x - \mu)/b` is discontinuous at the mode; it is
    reported as 0 there.
    """

    def __init__(self, dim, loc=0.0, scale=2**-0.5):
        self.dim = check_dim(dim)
        self.loc = float(loc)
        self.scale = check_positive_float(scale, "scale")

    def grad_logpdf(self, X):
        r"""Score :math:`\nabla_x \log p(x)` at each row of ``X``.

        Parameters
        ----------
        X : array-like of shape (n, dim)
            Points, one per row.

        Returns
        -------
        ndarray of shape (n, dim)
            The score :math:`\nabla_x \log p(x)` at each row.
        """
        X = self._check_X(X)
        return -np.sign(X - self.loc) / self.scale

    def logpdf(self, X):
        """Normalised log density at each row of ``X``.

        Parameters
        ----------
        X : array-like of shape (n, dim)
            Points, one per row.

        Returns
        -------
        ndarray of shape (n,)
        """
        X = self._check_X(X)
        return -np.sum(np.abs(X - self.loc), axis=1) / self.scale - self.dim * np.log(2 * self.scale)

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
        rng = as_generator(random_state)
        return rng.laplace(self.loc, self.scale, size=(check_n(n), self.dim))

    def __repr__(self):
        return f"Laplace(dim={self.dim}, loc={self.loc}, scale={self.scale:.6g})"


class StudentT(Distribution):
    r"""Product of independent Student-t coordinates with ``df`` degrees of freedom.

    Parameters
    ----------
    dim : int
    df : float
        Degrees of freedom (> 0). The variance per coordinate is
        ``scale**2 * df / (df - 2)`` for ``df > 2``.
    loc : float, default=0.0
    scale : float, default=1.0
    """

    def __init__(self, dim, df, loc=0.0, scale=1.0):
        self.dim = check_dim(dim)
        self.df = check_positive_float(df, "df")
        self.loc = float(loc)
        self.scale = check_positive_float(scale, "scale")

    def grad_logpdf(self, X):
        r"""Score :math:`\nabla_x \log p(x)` at each row of ``X``.

        Parameters
        ----------
        X : array-like of shape (n, dim)
            Points, one per row.

        Returns
        -------
        ndarray of shape (n, dim)
            The score :math:`\nabla_x \log p(x)` at each row.
        """
        Z = (self._check_X(X) - self.loc) / self.scale
        return -(self.df + 1.0) * Z / (self.df + Z * Z) / self.scale

    def logpdf(self, X):
        """Normalised log density at each row of ``X``.

        Parameters
        ----------
        X : array-like of shape (n, dim)
            Points, one per row.

        Returns
        -------
        ndarray of shape (n,)
        """
        Z = (self._check_X(X) - self.loc) / self.scale
        nu = self.df
        c = gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * np.log(nu * np.pi) - np.log(self.scale)
        return np.sum(c - (nu + 1) / 2 * np.log1p(Z * Z / nu), axis=1)

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
        rng = as_generator(random_state)
        return self.loc + self.scale * rng.standard_t(self.df, size=(check_n(n), self.dim))

    def __repr__(self):
        return f"StudentT(dim={self.dim}, df={self.df:g}, loc={self.loc}, scale={self.scale:g})"
