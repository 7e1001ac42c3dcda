"""Benchmark distributions: products of independent coordinates, and the banana."""

import numpy as np
from scipy.special import gammaln

from .._validation import check_positive_float, named_errors
from ._base import Distribution, check_dim

__all__ = ["Laplace", "StudentT", "Banana"]


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


class Banana(Distribution):
    r"""The twisted Gaussian ("banana") of Haario, Saksman & Tamminen (1999).

    With :math:`y \sim N(0, \operatorname{diag}(s^2, 1, \dots, 1))`, the point is
    :math:`x = R^\top z`, where :math:`z = y` except :math:`z_2 = y_2 + b (y_1^2 -
    s^2)`: the second coordinate bends along a parabola in the first, and the others
    stay independent standard normal. Every coordinate of :math:`z` has mean 0; the
    variances are :math:`s^2`, :math:`1 + 2 b^2 s^4` and 1. The dependence of
    :math:`z_2` on :math:`z_1` is nonlinear (they are uncorrelated), so no change of
    coordinates makes the model factorise: a benchmark for tests and samplers beyond
    Gaussian geometry.

    Parameters
    ----------
    dim : int
        At least 2.
    curvature : float, default=1.0
        The bend :math:`b` (0 gives a Gaussian; any sign).
    scale : float, default=1.0
        The standard deviation :math:`s` of the first coordinate. Haario et al. take
        :math:`s = 10` and :math:`b = 0.03` or 0.1.
    rotation : array-like of shape (dim, dim), default=None
        An orthogonal matrix :math:`R` (rows orthonormal); None is the identity, the
        bend in the plane of the first two axes.

    Notes
    -----
    The change from :math:`y` to :math:`z` has unit Jacobian, so :meth:`logpdf` is
    the normalised log density :math:`\log N(y; 0, \operatorname{diag}(s^2, 1,
    \dots, 1))` with :math:`y_2 = z_2 - b (z_1^2 - s^2)`.
    """

    def __init__(self, dim, curvature=1.0, scale=1.0, rotation=None):
        self.dim = check_dim(dim)
        if self.dim < 2:
            raise ValueError(f"dim must be at least 2 for Banana, got {dim!r}.")
        with named_errors("curvature"):
            self.curvature = float(curvature)
        if not np.isfinite(self.curvature):
            raise ValueError(f"curvature must be finite, got {curvature!r}.")
        self.scale = check_positive_float(scale, "scale")
        if rotation is None:
            self.rotation = None
        else:
            with named_errors("rotation"):
                R = np.array(rotation, dtype=np.float64)
            if R.shape != (self.dim, self.dim) or not np.all(np.isfinite(R)) \
                    or not np.allclose(R @ R.T, np.eye(self.dim), atol=1e-8):
                raise ValueError(f"rotation must be an orthogonal ({self.dim}, {self.dim}) "
                                 f"matrix, got shape {R.shape}.")
            self.rotation = R

    def coordinate_variances(self):
        r"""The variances of the coordinates :math:`z = R x`: :math:`s^2`, :math:`1 + 2 b^2
        s^4`, then ones (of :math:`x` itself without a rotation).

        Returns
        -------
        ndarray of shape (dim,)
        """
        v = np.ones(self.dim)
        v[0] = self.scale ** 2
        v[1] = 1.0 + 2.0 * self.curvature ** 2 * self.scale ** 4
        return v

    def _to_z(self, X):
        return X if self.rotation is None else X @ self.rotation.T

    def _from_z(self, Z):
        return Z if self.rotation is None else Z @ self.rotation

    def _residual(self, Z):
        return Z[:, 1] - self.curvature * (Z[:, 0] ** 2 - self.scale ** 2)

    def _grad_logpdf(self, X):
        Z = self._to_z(X)
        r = self._residual(Z)
        G = -Z
        G[:, 0] = -Z[:, 0] / self.scale ** 2 + 2.0 * self.curvature * r * Z[:, 0]
        G[:, 1] = -r
        return self._from_z(G)

    def _logpdf(self, X):
        Z = self._to_z(X)
        r = self._residual(Z)
        quad = (Z[:, 0] / self.scale) ** 2 + r ** 2 + np.sum(Z[:, 2:] ** 2, axis=1)
        return -0.5 * quad - 0.5 * self.dim * np.log(2 * np.pi) - np.log(self.scale)

    def _rvs(self, n, rng):
        Z = rng.standard_normal((n, self.dim))
        Z[:, 0] *= self.scale
        Z[:, 1] += self.curvature * (Z[:, 0] ** 2 - self.scale ** 2)
        return self._from_z(Z)

    def __repr__(self):
        rot = "" if self.rotation is None else ", rotation=..."
        return (f"Banana(dim={self.dim}, curvature={self.curvature:.6g}, "
                f"scale={self.scale:.6g}{rot})")
