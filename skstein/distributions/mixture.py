"""Gaussian mixtures, and affine images of distributions (for scaler pipelines)."""

import numpy as np
from scipy.linalg import cholesky, solve_triangular
from scipy.special import logsumexp

from .._docstrings import fill_doc
from ._base import Distribution, rvs_kind

__all__ = ["GaussianMixture", "AffineTransformed"]

COVARIANCE_TYPES = ("full", "tied", "diag", "spherical")


def _responsibilities(log_joint):
    """Posterior component probabilities from the log joints ``log w_k + log N_k(x)`` (n, K)."""
    return np.exp(log_joint - logsumexp(log_joint, axis=1, keepdims=True))


@fill_doc
class GaussianMixture(Distribution):
    r"""Mixture of Gaussians :math:`p(x) = \sum_k w_k N(x; \mu_k, \Sigma_k)`.

    The score is :math:`\nabla\log p(x) = -\sum_k r_k(x)\,\Sigma_k^{-1}(x - \mu_k)` with
    responsibilities :math:`r_k(x) \propto w_k N(x; \mu_k, \Sigma_k)` (computed in
    log space, so far-away points do not underflow).

    Parameters
    ----------
    weights : array-like of shape (n_components,)
        Non-negative mixture weights (normalised to sum to one).
    means : array-like of shape (n_components, dim)
    covariances : array-like
        As in scikit-learn's ``GaussianMixture.covariances_``: ``(K, d, d)`` for
        ``"full"``, ``(d, d)`` for ``"tied"``, ``(K, d)`` for ``"diag"``, ``(K,)`` for
        ``"spherical"``.
    covariance_type : {"full", "tied", "diag", "spherical"}, default="full"

    Attributes
    ----------
    dim : int
    n_components : int

    Notes
    -----
    :meth:`logpdf` is the normalised log density.
    """

    def __init__(self, weights, means, covariances, covariance_type="full"):
        means = np.atleast_2d(np.asarray(means, dtype=np.float64))
        if means.ndim != 2:
            raise ValueError(f"means must be a 2-D array (n_components, dim), got shape "
                             f"{means.shape}.")
        K, d = means.shape
        weights = np.asarray(weights, dtype=np.float64).reshape(-1)
        if weights.shape != (K,) or np.any(weights < 0) or not np.all(np.isfinite(weights)) \
                or weights.sum() <= 0:
            raise ValueError(f"weights must be {K} non-negative finite numbers, got {weights!r}.")
        if covariance_type not in COVARIANCE_TYPES:
            raise ValueError(
                f"covariance_type must be one of {list(COVARIANCE_TYPES)}, "
                f"got {covariance_type!r}."
            )
        if not np.all(np.isfinite(means)):
            raise ValueError("means must be finite.")
        self.weights = weights / weights.sum()
        self.means = means
        self.covariance_type = covariance_type
        self.dim, self.n_components = d, K
        self.covariances = np.asarray(covariances, dtype=np.float64)
        # per component: lower Cholesky factor L_k of Sigma_k, as a (K, d, d) array
        cov = self.covariances
        expected = {"full": (K, d, d), "tied": (d, d), "diag": (K, d), "spherical": (K,)}
        if cov.shape != expected[covariance_type]:
            raise ValueError(
                f"covariances must have shape {expected[covariance_type]} for covariance_type="
                f"{covariance_type!r}, got {cov.shape}."
            )
        if covariance_type == "full":
            full = cov
        elif covariance_type == "tied":
            full = np.broadcast_to(cov, (K, d, d))
        elif covariance_type == "diag":
            full = np.einsum("kd,de->kde", cov, np.eye(d))
        else:
            full = cov[:, None, None] * np.eye(d)
        try:
            self._chol = np.array([cholesky(c, lower=True) for c in full])
        except np.linalg.LinAlgError:
            raise ValueError("covariances must be positive definite.") from None
        # precision Cholesky P_k = L_k^{-T}, so that Sigma_k^{-1} = P_k P_k^T
        self._prec_chol = np.array(
            [solve_triangular(L, np.eye(d), lower=True).T for L in self._chol])
        self._log_norm = (np.log(np.maximum(self.weights, np.finfo(float).tiny))
                          + np.log(np.diagonal(self._prec_chol, axis1=1, axis2=2)).sum(axis=1)
                          - 0.5 * d * np.log(2 * np.pi))

    def _component_terms(self, X):
        """Log joint ``log w_k + log N_k(x)`` (n, K) and whitened residuals (K, n, d)."""
        D = np.einsum("nd,kde->kne", X, self._prec_chol) \
            - np.einsum("kd,kde->ke", self.means, self._prec_chol)[:, None, :]
        log_joint = self._log_norm[None, :] - 0.5 * np.einsum("kne,kne->nk", D, D)
        return log_joint, D

    def _logpdf(self, X):
        return logsumexp(self._component_terms(X)[0], axis=1)

    def _grad_logpdf(self, X):
        log_joint, D = self._component_terms(X)
        R = _responsibilities(log_joint)
        # Sigma_k^{-1}(x - mu_k) = P_k P_k^T (x - mu_k) = P_k D_k
        return -np.einsum("nk,kne,kde->nd", R, D, self._prec_chol)

    def predict_proba(self, X):
        """Responsibilities :math:`r_k(x)` of the components at each row of ``X``.

        %(points_parameters)s

        Returns
        -------
        ndarray of shape (n, n_components)
        """
        log_joint, _ = self._component_terms(self._check_X(X))
        return _responsibilities(log_joint)

    def _rvs(self, n, rng):
        comp = rng.choice(self.n_components, size=n, p=self.weights)
        E = rng.standard_normal((n, self.dim))
        return self.means[comp] + np.einsum("nde,ne->nd", self._chol[comp], E)

    def __repr__(self):
        return (f"GaussianMixture(n_components={self.n_components}, dim={self.dim}, "
                f"covariance_type={self.covariance_type!r})")


class AffineTransformed(Distribution):
    r"""The distribution of :math:`x` when :math:`y = a \odot x + b` (or :math:`y = A x + b`)
    follows ``base``.

    The change of variables gives :math:`\log p_x(x) = \log p_y(a \odot x + b) +
    \sum_d \log|a_d|` and, by the chain rule, :math:`\nabla\log p_x(x) = a \odot
    \nabla\log p_y(a \odot x + b)`; with a square matrix :math:`A`, :math:`\log p_x(x)
    = \log p_y(A x + b) + \log|\det A|` and :math:`\nabla\log p_x(x) = A^\top
    \nabla\log p_y(A x + b)`. The elementwise form is the model of a scikit-learn
    ``Pipeline`` of elementwise-affine scalers ending in a density estimator; the matrix
    form turns a model with independent coordinates (:class:`StudentT`, :class:`Laplace`)
    into one whose heavy tails lie along any directions: with :math:`A = W^\top` for an
    orthogonal :math:`W`, :math:`x = W (y - b)`.

    Parameters
    ----------
    base : distribution
        The distribution of :math:`y`.
    scale : array-like of shape (dim,) or (dim, dim)
        :math:`a` (non-zero), or the invertible matrix :math:`A`.
    shift : array-like of shape (dim,)
        :math:`b`.

    Notes
    -----
    :meth:`logpdf` is normalised if the base's is. :meth:`rvs` maps the base's draws
    (from the same generator) back through the inverse affine map.
    """

    def __init__(self, base, scale, shift):
        scale = np.asarray(scale)
        shift = np.asarray(shift)
        for name, value in (("scale", scale), ("shift", shift)):
            if value.dtype.kind not in "biuf":
                raise TypeError(f"{name} must be real numbers, got dtype {value.dtype}.")
        scale = scale.astype(np.float64)
        shift = shift.astype(np.float64)
        dim = getattr(base, "dim", None)
        if dim is None:
            dim = scale.shape[0] if scale.ndim else shift.size
        dim = int(dim)
        if scale.ndim == 2:
            if scale.shape != (dim, dim):
                raise ValueError(f"scale as a matrix must have shape ({dim}, {dim}), the "
                                 f"base's dimension, got {scale.shape}.")
        elif scale.ndim > 2 or (scale.ndim == 1 and scale.size not in (1, dim)):
            raise ValueError(f"scale must be a number or have shape ({dim},) or ({dim}, "
                             f"{dim}), got shape {scale.shape}.")
        if shift.ndim > 1 or (shift.ndim == 1 and shift.size not in (1, dim)):
            raise ValueError(f"shift must be a number or have shape ({dim},), got shape "
                             f"{shift.shape}.")
        if not (np.all(np.isfinite(scale)) and np.all(np.isfinite(shift))):
            raise ValueError("scale and shift must be finite.")
        if scale.ndim < 2:
            scale = np.broadcast_to(scale, (dim,)).copy()
            if np.any(scale == 0):
                raise ValueError("scale must be non-zero.")
            self._logdet = float(np.sum(np.log(np.abs(scale))))
        else:
            sign, logdet = np.linalg.slogdet(scale)
            # a matrix is taken as invertible when its inverse keeps some digits
            if sign == 0 or np.linalg.cond(scale) > 1e12:
                raise ValueError("scale as a matrix must be invertible (condition number "
                                 "below 1e12).")
            self._logdet = float(logdet)
            scale = scale.copy()
        shift = np.broadcast_to(shift, (dim,)).copy()
        self.base, self.scale, self.shift, self.dim = base, scale, shift, dim

    def _forward(self, X):
        if self.scale.ndim == 2:
            return X @ self.scale.T + self.shift
        return X * self.scale + self.shift

    def _grad_logpdf(self, X):
        G = self.base.grad_logpdf(self._forward(X))
        if self.scale.ndim == 2:
            return G @ self.scale
        return self.scale * G

    def _logpdf(self, X):
        return self.base.logpdf(self._forward(X)) + self._logdet

    @property
    def rvs_kind(self):
        """The base's :func:`~skstein.distributions.rvs_kind`."""
        return rvs_kind(self.base)

    def _rvs(self, n, rng):
        Y = np.asarray(self.base.rvs(n, random_state=rng), dtype=np.float64)
        if self.scale.ndim == 2:
            return np.linalg.solve(self.scale, (Y - self.shift).T).T
        return (Y - self.shift) / self.scale

    def __repr__(self):
        return f"AffineTransformed({self.base!r}, dim={self.dim})"
