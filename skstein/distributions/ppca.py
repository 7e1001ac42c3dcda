r"""Probabilistic PCA (and factor analysis), a latent-variable model with exact scores."""

import numbers

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular

from .._docstrings import fill_doc
from .._random import as_generator
from ._base import Distribution, check_n
from .gaussian import Gaussian

__all__ = ["PPCA"]


@fill_doc
class PPCA(Distribution):
    r"""Probabilistic PCA: :math:`x = W z + \mu + \varepsilon`, :math:`z \sim N(0, I)`.

    With :math:`\varepsilon \sim N(0, \Psi)`, :math:`\Psi = \sigma^2 I` (PPCA) or a
    diagonal :math:`\Psi` (factor analysis), the model is a latent-variable model
    with everything in closed form:

    * marginal :math:`x \sim N(\mu, C)`, :math:`C = W W^\top + \Psi`, so the exact
      score is :math:`-C^{-1}(x - \mu)`;
    * conditional score :math:`\nabla_x \log p(x | z) = -\Psi^{-1}(x - W z - \mu)`;
    * posterior :math:`z | x \sim N(\Lambda^{-1} W^\top \Psi^{-1} (x - \mu), \Lambda^{-1})`,
      :math:`\Lambda = I + W^\top \Psi^{-1} W`.

    It implements the latent-variable protocol (``grad_logpdf_conditional``,
    ``sample_posterior``), so tests can estimate its score from posterior draws
    (as for models without a tractable marginal) and compare with the exact one.

    Parameters
    ----------
    W : array-like of shape (dim, latent_dim)
        The loading matrix.
    noise_variance : float or array-like of shape (dim,), default=1.0
        :math:`\sigma^2` (PPCA), or the diagonal of :math:`\Psi` (factor analysis).
    mean : array-like of shape (dim,), default=None
        :math:`\mu`; zero when None.
    sampler : "exact" or sampler object, default="exact"
        How :meth:`sample_posterior` draws :math:`z | x`: ``"exact"`` draws
        independent samples from the Gaussian posterior; a
        :class:`~skstein.samplers.MALA` or :class:`~skstein.samplers.HMC` runs one
        chain per data point, started at the sampler's ``init`` (the prior when None),
        and returns its successive states after ``burn_in`` steps.

    Attributes
    ----------
    dim : int
    latent_dim : int

    Notes
    -----
    :meth:`grad_logpdf` and :meth:`logpdf` are the exact (normalised) marginal ones;
    :meth:`rvs` draws through the latent variables.
    """

    def __init__(self, W, noise_variance=1.0, mean=None, sampler="exact"):
        W = np.asarray(W, dtype=np.float64)
        if W.ndim != 2 or not np.all(np.isfinite(W)):
            raise ValueError(
                f"W must be a finite 2-D array (dim, latent_dim), got shape {W.shape}.")
        self.W = W
        self.dim, self.latent_dim = W.shape
        psi = np.asarray(noise_variance, dtype=np.float64)
        if psi.ndim == 0:
            psi = np.full(self.dim, float(psi))
        if psi.shape != (self.dim,) or not np.all(np.isfinite(psi)) or np.any(psi <= 0):
            raise ValueError(
                f"noise_variance must be a positive float or {self.dim} positive variances, "
                f"got {noise_variance!r}."
            )
        self.noise_variance = noise_variance
        self._psi = psi
        mean = np.zeros(self.dim) if mean is None else np.asarray(mean, dtype=np.float64)
        if mean.shape != (self.dim,) or not np.all(np.isfinite(mean)):
            raise ValueError(
                f"mean must be a finite array of shape ({self.dim},), got {mean.shape}.")
        self.mean = mean
        if not (isinstance(sampler, str) and sampler == "exact") and not callable(
            getattr(sampler, "sample", None)
        ):
            raise TypeError(
                "sampler must be 'exact' or a sampler with a sample(target, Z0, n_samples, "
                f"random_state=...) method (skstein.samplers.MALA, HMC); got {sampler!r}."
            )
        self.sampler = sampler
        WtPinv = W.T / psi
        self._precision = np.eye(self.latent_dim) + WtPinv @ W  # Lambda
        self._prec_chol = cho_factor(self._precision, lower=True)
        self._WtPinv = WtPinv
        self._marginal = Gaussian(mean, W @ W.T + np.diag(psi))

    # -- marginal --------------------------------------------------------------
    def _grad_logpdf(self, X):
        return self._marginal.grad_logpdf(X)

    def _logpdf(self, X):
        return self._marginal.logpdf(X)

    def _rvs(self, n, rng):
        # through the latent variables
        Z = rng.standard_normal((n, self.latent_dim))
        E = rng.standard_normal((n, self.dim))
        return Z @ self.W.T + self.mean + E * np.sqrt(self._psi)

    @property
    def covariance(self):
        """The marginal covariance :math:`W W^\\top + \\Psi`."""
        return self._marginal.cov

    # -- latent-variable protocol ----------------------------------------------
    def grad_logpdf_conditional(self, X, Z):
        """Conditional score :math:`-\\Psi^{-1}(x_i - W z_i - \\mu)` of :math:`p(x_i | z_i)`.

        %(points_parameters)s
        Z : array-like of shape (n, latent_dim)
            Row ``i`` is the latent variable of ``x_i``.

        Returns
        -------
        ndarray of shape (n, dim)
        """
        X = self._check_X(X)
        Z = self._check_Z(Z, X.shape[0])
        return -(X - self.mean - Z @ self.W.T) / self._psi

    def posterior_mean_cov(self, X):
        """Posterior mean and covariance of the latent variable of each row of ``X``.

        %(points_parameters)s

        Returns
        -------
        mean : ndarray of shape (n, latent_dim)
        cov : ndarray of shape (latent_dim, latent_dim)
            Shared by all rows.
        """
        X = self._check_X(X)
        cov = cho_solve(self._prec_chol, np.eye(self.latent_dim))
        return cho_solve(self._prec_chol, self._WtPinv @ (X - self.mean).T).T, cov

    def posterior_target(self, X):
        """The MCMC target of the posteriors of the rows of ``X``.

        %(points_parameters)s

        Returns
        -------
        callable
            ``Z -> (log p(x_i, z_i) + const, grad_z)``, with row ``i`` of ``Z`` the
            latent variable of ``x_i``.
        """
        X = self._check_X(X)
        B = (X - self.mean) @ self._WtPinv.T  # W^T Psi^-1 (x - mu), per row
        P = self._precision

        def target(Z):
            PZ = Z @ P
            return np.einsum("ij,ij->i", Z, B - 0.5 * PZ), B - PZ

        return target

    def sample_posterior(self, X, n_samples, random_state=None, burn_in=0):
        """Draws of :math:`z_i | x_i` for every row of ``X``, shape ``(n_samples, n, latent_dim)``.

        With ``sampler="exact"`` the draws are independent (``burn_in`` is not
        needed and ignored); with an MCMC sampler they are the successive states of
        one chain per row, started at the sampler's ``init`` and returned after
        ``burn_in`` steps.

        Parameters
        ----------
        X : array-like of shape (n, dim)
            The observed points.
        n_samples : int
            Draws per row.
        %(random_state_draws)s
        burn_in : int, default=0
            MCMC steps discarded first.

        Returns
        -------
        ndarray of shape (n_samples, n, latent_dim)
        """
        X = self._check_X(X)
        n_samples = check_n(n_samples)
        if isinstance(burn_in, bool) or not isinstance(burn_in, numbers.Integral) or burn_in < 0:
            raise ValueError(f"burn_in must be a non-negative integer, got {burn_in!r}.")
        rng = as_generator(random_state)
        n, dz = X.shape[0], self.latent_dim
        if isinstance(self.sampler, str):
            mean, _ = self.posterior_mean_cov(X)
            L = np.tril(self._prec_chol[0])
            E = rng.standard_normal((n_samples * n, dz))
            # Lambda = L L^T, so L^-T e ~ N(0, Lambda^-1)
            noise = solve_triangular(L, E.T, lower=True, trans="T").T
            return mean[None] + noise.reshape(n_samples, n, dz)
        from ..samplers import initial_state

        init_rng, chain_rng = rng.spawn(2)
        Z0 = initial_state(getattr(self.sampler, "init", None), n, dz, init_rng)
        return self.sampler.sample(self.posterior_target(X), Z0, n_samples, burn_in=burn_in,
                                   random_state=chain_rng)

    def with_sampler(self, sampler):
        """A copy of this model whose posterior is drawn by ``sampler``.

        Parameters
        ----------
        sampler : "exact" or sampler
            As the ``sampler`` parameter of :class:`PPCA`.

        Returns
        -------
        PPCA
        """
        return PPCA(self.W, self.noise_variance, self.mean, sampler)

    def _check_Z(self, Z, n):
        Z = np.asarray(Z, dtype=np.float64)
        if Z.shape != (n, self.latent_dim):
            raise ValueError(f"Z must have shape ({n}, {self.latent_dim}), got {Z.shape}.")
        return Z

    def __repr__(self):
        return (f"PPCA(dim={self.dim}, latent_dim={self.latent_dim}, "
                f"sampler={self.sampler!r})")
