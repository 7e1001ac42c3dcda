r"""Linear independent component analysis (ICA) with a closed-form score and parameter gradient.

The model is :math:`x = W z` with independent source coordinates :math:`z_d \sim p_z`
(Student-t or Laplace), parameterised by the unmixing matrix :math:`B = W^{-1}`:

.. math::

    \log p_B(x) = \sum_d \log p_z\big((Bx)_d\big) + \log|\det B|,
    \qquad s_B(x) = \nabla_x \log p_B(x) = B^\top \psi(Bx),

with :math:`\psi = (\log p_z)'` applied elementwise. The score does not involve the
determinant, so the Stein discrepancies see only the unnormalised part. Its
vector-Jacobian product in :math:`B` (the protocol of :mod:`skstein.learning`), for
:math:`V` with rows :math:`v_i` and :math:`Z = X B^\top`,

.. math::

    \sum_i \Big(\frac{\partial s_B(x_i)}{\partial B}\Big)^\top v_i
    = \psi(Z)^\top V + \big(\psi'(Z) \odot (V B^\top)\big)^\top X,

and the gradient of the mean log-likelihood (exact maximum likelihood) is
:math:`\frac1N \psi(Z)^\top X + B^{-\top}`.
"""

import numbers

import numpy as np
from scipy.special import gammaln

from .._docstrings import fill_doc
from .._random import as_generator
from .._validation import check_choice, check_positive_float
from ._base import Distribution, check_dim

__all__ = ["ICA"]

BASES = ("student-t", "laplace")


def _check_unmixing(B):
    B = np.array(B, dtype=np.float64, copy=True)
    if B.ndim != 2 or B.shape[0] != B.shape[1] or B.shape[0] < 1:
        raise ValueError(f"unmixing must be a square (D, D) matrix, got shape {B.shape}.")
    if not np.all(np.isfinite(B)):
        raise ValueError("unmixing must be finite.")
    sign, _ = np.linalg.slogdet(B)
    if sign == 0:
        raise ValueError("unmixing must be invertible.")
    return B


@fill_doc
class ICA(Distribution):
    r"""Linear ICA model :math:`x = W z` with independent Student-t or Laplace sources.

    Parameters
    ----------
    unmixing : array-like of shape (D, D)
        The unmixing matrix :math:`B = W^{-1}` (the model's parameter); it may be
        reassigned (``model.unmixing = B``) between calls during training.
    base : {"student-t", "laplace"}, default="student-t"
        Source density :math:`p_z`: Student-t with ``df`` degrees of freedom and unit
        scale, or Laplace with unit scale (:math:`e^{-|z|}/2`).
    df : float, default=5.0
        Degrees of freedom of the Student-t sources.

    Attributes
    ----------
    dim : int
        ``D``.

    Notes
    -----
    The score is :math:`B^\top \psi(Bx)`, :meth:`logpdf` the normalised
    :math:`\sum_d \log p_z((Bx)_d) + \log|\det B|` and :meth:`rvs` draws :math:`x = W z`.
    The Laplace score :math:`-\mathrm{sign}(z)` is discontinuous at 0 (reported as 0
    there) and its derivative is zero elsewhere, so the second term of the
    vector-Jacobian product vanishes for Laplace sources.

    Examples
    --------
    >>> import numpy as np
    >>> from skstein.distributions import ICA
    >>> model = ICA.random(3, random_state=0)
    >>> X = model.rvs(5, random_state=1)
    >>> model.grad_logpdf(X).shape, model.grad_logpdf_vjp(X, np.ones((5, 3))).shape
    ((5, 3), (3, 3))
    """

    def __init__(self, unmixing, base="student-t", df=5.0):
        self.unmixing = _check_unmixing(unmixing)
        self.base = check_choice(base, "base", BASES)
        self.df = check_positive_float(df, "df")
        self.dim = self.unmixing.shape[0]

    @classmethod
    def random(cls, dim, *, scale=1.0, max_condition=None, base="student-t", df=5.0,
               random_state=None, max_tries=1000):
        r"""A model with a random unmixing matrix, :math:`B_{ij} \sim N(0, \text{scale}^2)`.

        Matrices are drawn until the condition number of :math:`B` is below
        ``max_condition`` (default: ``dim``), the protocol of Gong et al. (2021) for
        the true and the initial ICA parameters.

        Parameters
        ----------
        dim : int
        scale : float, default=1.0
        max_condition : float, default=None
            ``None``: ``dim`` (for ``dim = 1``, no constraint).
        base, df : see :class:`ICA`
        random_state : None, int or Generator
        max_tries : int, default=1000

        Returns
        -------
        ICA
        """
        dim = check_dim(dim)
        scale = check_positive_float(scale, "scale")
        if max_condition is None:
            max_condition = float(dim) if dim > 1 else np.inf
        elif isinstance(max_condition, bool) or not isinstance(max_condition, numbers.Real) \
                or not max_condition > 1:
            raise ValueError(f"max_condition must be a float > 1, got {max_condition!r}.")
        rng = as_generator(random_state)
        for _ in range(int(max_tries)):
            B = scale * rng.standard_normal((dim, dim))
            if np.linalg.cond(B) < max_condition:
                return cls(B, base=base, df=df)
        raise RuntimeError(f"no {dim} x {dim} matrix with condition number below "
                           f"{max_condition} in {max_tries} draws.")

    @property
    def mixing(self):
        """The mixing matrix :math:`W = B^{-1}`."""
        return np.linalg.inv(self.unmixing)

    def _psi(self, Z, derivative=False):
        """Source score psi(z) (and psi'(z)) elementwise."""
        if self.base == "laplace":
            psi = -np.sign(Z)
            return (psi, np.zeros_like(Z)) if derivative else psi
        nu = self.df
        q = nu + Z * Z
        psi = -(nu + 1.0) * Z / q
        if not derivative:
            return psi
        return psi, -(nu + 1.0) * (nu - Z * Z) / (q * q)

    def _source_logpdf(self, Z):
        if self.base == "laplace":
            return -np.abs(Z) - np.log(2.0)
        nu = self.df
        c = gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * np.log(nu * np.pi)
        return c - (nu + 1) / 2 * np.log1p(Z * Z / nu)

    def sources(self, X):
        """The unmixed sources :math:`Z = X B^\\top`.

        %(points_parameters)s

        Returns
        -------
        ndarray of shape (n, dim)
        """
        return self._check_X(X) @ self.unmixing.T

    def _grad_logpdf(self, X):
        return self._psi(X @ self.unmixing.T) @ self.unmixing

    def _logpdf(self, X):
        _, logdet = np.linalg.slogdet(self.unmixing)
        return self._source_logpdf(X @ self.unmixing.T).sum(axis=1) + logdet

    def grad_logpdf_vjp(self, X, V):
        r"""Vector-Jacobian product of the score with respect to the unmixing matrix.

        %(points_parameters)s
        V : array-like of shape (n, dim)
            Cotangents of the scores, e.g. ``dL/dS`` of a Stein loss.

        Returns
        -------
        ndarray of shape (dim, dim)
            :math:`\sum_i (\partial s_B(x_i)/\partial B)^\top v_i`.
        """
        X = self._check_X(X)
        V = np.asarray(V, dtype=np.float64)
        if V.shape != X.shape:
            raise ValueError(f"V must have the shape of X {X.shape}, got {V.shape}.")
        B = self.unmixing
        psi, dpsi = self._psi(X @ B.T, derivative=True)
        out = psi.T @ V
        if self.base != "laplace":
            out += (dpsi * (V @ B.T)).T @ X
        return out

    def grad_loglik(self, X):
        """Gradient of the mean log-likelihood of ``X`` in the unmixing matrix.

        %(points_parameters)s

        Returns
        -------
        ndarray of shape (dim, dim)
        """
        X = self._check_X(X)
        B = self.unmixing
        return self._psi(X @ B.T).T @ X / X.shape[0] + np.linalg.inv(B).T

    def _rvs(self, n, rng):
        if self.base == "laplace":
            Z = rng.laplace(0.0, 1.0, size=(n, self.dim))
        else:
            Z = rng.standard_t(self.df, size=(n, self.dim))
        return np.linalg.solve(self.unmixing, Z.T).T

    def __repr__(self):
        extra = f", df={self.df:g}" if self.base == "student-t" else ""
        return f"ICA(dim={self.dim}, base={self.base!r}{extra})"
