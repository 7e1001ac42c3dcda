"""Gaussian models."""

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular

from .._random import as_generator
from ._base import Distribution, check_dim, check_n

__all__ = ["Gaussian", "gaussian_diffusion"]


class Gaussian(Distribution):
    r"""Multivariate normal :math:`N(\mu, \Sigma)`.

    Parameters
    ----------
    mean : array-like of shape (d,)
    cov : float, array-like of shape (d,) or (d, d), default=1.0
        Covariance: a scalar (isotropic), a vector (diagonal) or a full
        symmetric positive-definite matrix.

    Attributes
    ----------
    dim : int
    """

    def __init__(self, mean, cov=1.0):
        mean = np.atleast_1d(np.asarray(mean, dtype=np.float64))
        if mean.ndim != 1:
            raise ValueError(f"mean must be a 1-D array, got shape {mean.shape}.")
        if not np.all(np.isfinite(mean)):
            raise ValueError("mean must be finite; it contains NaN or inf.")
        self.mean = mean
        self.dim = mean.size
        cov = np.asarray(cov, dtype=np.float64)
        if cov.ndim == 0:
            cov = np.full(self.dim, float(cov))
        if cov.ndim == 1:
            if cov.shape != (self.dim,) or not np.all(np.isfinite(cov)) or np.any(cov <= 0):
                raise ValueError(
                    f"a diagonal cov must be {self.dim} positive finite variances, got {cov!r}."
                )
            self._diag = True
        elif cov.ndim == 2:
            if cov.shape != (self.dim, self.dim) or not np.allclose(cov, cov.T):
                raise ValueError(f"cov must be a symmetric ({self.dim}, {self.dim}) matrix.")
            try:
                self._chol = cho_factor(cov, lower=True)
            except np.linalg.LinAlgError:
                raise ValueError("cov must be positive definite.") from None
            self._diag = False
        else:
            raise ValueError(f"cov must be a scalar, a vector or a matrix, got shape {cov.shape}.")
        self.cov = cov

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
        Z = X - self.mean
        if self._diag:
            return -Z / self.cov
        return -cho_solve(self._chol, Z.T).T

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
        Z = X - self.mean
        if self._diag:
            quad = np.sum(Z * Z / self.cov, axis=1)
            logdet = np.sum(np.log(self.cov))
        else:
            L = np.tril(self._chol[0])
            W = solve_triangular(L, Z.T, lower=True)
            quad = np.sum(W * W, axis=0)
            logdet = 2.0 * np.sum(np.log(np.diag(L)))
        return -0.5 * (quad + logdet + self.dim * np.log(2 * np.pi))

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
        n = check_n(n)
        rng = as_generator(random_state)
        E = rng.standard_normal((n, self.dim))
        if self._diag:
            return self.mean + E * np.sqrt(self.cov)
        return self.mean + E @ np.tril(self._chol[0]).T

    def __repr__(self):
        return f"Gaussian(dim={self.dim})"


def gaussian_diffusion(dim, variance=0.3, index=0):
    """The "diffusion" alternative: ``N(0, Sigma)``, ``Sigma = I`` except ``Sigma[index, index]``.

    Gong et al. (2021) test it against ``N(0, I)`` with ``variance=0.3``.

    Parameters
    ----------
    dim : int
        Dimension.
    variance : float, default=0.3
        The variance of coordinate ``index``.
    index : int, default=0
        The coordinate whose variance differs from 1.

    Returns
    -------
    Gaussian
    """
    dim = check_dim(dim)
    if not 0 <= index < dim:
        raise ValueError(f"index must be in [0, {dim}), got {index}.")
    cov = np.ones(dim)
    cov[index] = variance
    return Gaussian(np.zeros(dim), cov)
