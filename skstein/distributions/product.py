"""Product (independent-coordinate) distributions used as benchmark alternatives."""

import numpy as np
from scipy.special import gammaln

from .._validation import check_positive_float
from ._base import Distribution, check_dim

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
    reported as 0 there. :meth:`logpdf` is the normalised log density.
    """

    def __init__(self, dim, loc=0.0, scale=2**-0.5):
        self.dim = check_dim(dim)
        self.loc = float(loc)
        self.scale = check_positive_float(scale, "scale")

    def _grad_logpdf(self, X):
        return -np.sign(X - self.loc) / self.scale

    def _logpdf(self, X):
        return -np.sum(np.abs(X - self.loc), axis=1) / self.scale - self.dim * np.log(2 * self.scale)

    def _rvs(self, n, rng):
        return rng.laplace(self.loc, self.scale, size=(n, self.dim))

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

    Notes
    -----
    :meth:`logpdf` is the normalised log density.
    """

    def __init__(self, dim, df, loc=0.0, scale=1.0):
        self.dim = check_dim(dim)
        self.df = check_positive_float(df, "df")
        self.loc = float(loc)
        self.scale = check_positive_float(scale, "scale")

    def _grad_logpdf(self, X):
        Z = (X - self.loc) / self.scale
        return -(self.df + 1.0) * Z / (self.df + Z * Z) / self.scale

    def _logpdf(self, X):
        Z = (X - self.loc) / self.scale
        nu = self.df
        c = gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * np.log(nu * np.pi) - np.log(self.scale)
        return np.sum(c - (nu + 1) / 2 * np.log1p(Z * Z / nu), axis=1)

    def _rvs(self, n, rng):
        return self.loc + self.scale * rng.standard_t(self.df, size=(n, self.dim))

    def __repr__(self):
        return f"StudentT(dim={self.dim}, df={self.df:g}, loc={self.loc}, scale={self.scale:g})"
