"""Gaussian models."""

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular

from ._base import Distribution, check_dim

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

    Notes
    -----
    :meth:`logpdf` is the normalised log density.
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

    def _grad_logpdf(self, X):
        Z = X - self.mean
        if self._diag:
            return -Z / self.cov
        return -cho_solve(self._chol, Z.T).T

    def _logpdf(self, X):
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

    def _rvs(self, n, rng):
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
