r"""Functional API of the feature Stein discrepancies: FSSD and random-feature SDs.

Both statistics are means of a feature vector :math:`\tau(x) \in \mathbb{R}^{JD}` that has
zero expectation under the model, so they cost :math:`O(nJD)` time and, computed by
row blocks, :math:`O(nD)` memory beyond the :math:`(JD)^2` second-moment matrix that the
null distribution needs. The estimators in :mod:`skstein.gof` validate their parameters
and call these functions; the feature rows come from :mod:`skstein._numba.features`.

**FSSD** (Jitkrittum, Xu, Szabó, Fukumizu & Gretton 2017). For :math:`J` test locations
:math:`v_j` and a base kernel :math:`k` (RBF or IMQ, see :mod:`skstein.kernels`),
:math:`\xi(x, v) = k(x, v)\, s_p(x) + \nabla_x k(x, v) \in \mathbb{R}^D` and
:math:`\tau(x) = (\xi(x, v_1), \dots, \xi(x, v_J)) / \sqrt{DJ}`. Then

.. math::

    \mathrm{FSSD}^2 = \|\mathbb{E}_q \tau(x)\|^2, \qquad
    \widehat{\mathrm{FSSD}^2_u} = \frac{2}{n(n-1)} \sum_{i<j} \tau(x_i)^\top \tau(x_j).

Convention: :func:`fssd` and the estimators return :math:`\widehat{\mathrm{FSSD}^2_u}`
itself. kgof (``kgof.goftest.FSSD``) reports :math:`n\,\widehat{\mathrm{FSSD}^2_u}`;
divide its statistic by :math:`n` to compare. Under H0, :math:`n\,\widehat{\mathrm{FSSD}^2_u}
\to \sum_k \lambda_k (Z_k^2 - 1)` with :math:`\lambda_k` the eigenvalues of
:math:`\mathrm{Cov}_q[\tau(x)]` and :math:`Z_k` independent standard normals; the
null is simulated from that mixture with the covariance estimated on the tested sample
(kgof's ``FSSDH0SimCovObs``). Under H1, :math:`\sqrt{n}(\widehat{\mathrm{FSSD}^2_u} -
\mathrm{FSSD}^2) \to N(0, \sigma^2_{H_1})` with
:math:`\sigma^2_{H_1} = 4\,\mathrm{Var}_q[\tau(x)^\top \mu]`, :math:`\mu = \mathbb{E}_q\tau`;
the power criterion is :math:`\widehat{\mathrm{FSSD}^2_u} / \sqrt{\hat\sigma^2_{H_1} +
\lambda}`.

**RΦSD** (Huggins & Mackey 2018). For feature functions :math:`\Phi(x, z)`, features
:math:`z_1, \dots, z_J` drawn from an importance distribution :math:`\nu`, and
:math:`r \in \{1, 2\}`,

.. math::

    \mathrm{R\Phi SD}^2 = \sum_{a=1}^D \Big(\frac{1}{J} \sum_{j=1}^J
    \frac{|\mathbb{E}_q[s_{p,a}(x)\Phi(x, z_j) + \partial_a \Phi(x, z_j)]|^r}{\nu(z_j)}\Big)^{2/r},

estimated with the empirical mean of :math:`q` (a V-statistic, non-negative). Under H0,
:math:`\sqrt{n}` times the vector of empirical means tends to :math:`N(0, \Sigma)` and
:math:`n\,\mathrm{R\Phi SD}^2` to the same functional of that Gaussian vector; the null is
simulated by drawing the Gaussian vector (for :math:`r = 2` this is the weighted
chi-square mixture :math:`\sum_k \lambda_k Z_k^2`). :math:`\Sigma` is estimated on the
tested sample or, as in Huggins & Mackey's code, on samples drawn from the model.
:class:`~skstein.RFSDTest` can instead compute the statistic on samples of the model (a
Monte Carlo null, exact; its default for ``"l1-imq"``, whose Gaussian null is
miscalibrated at the sample sizes of practice).
Features (all centred at the data mean :math:`m`, settings of Huggins & Mackey's
goodness-of-fit experiments with :math:`\gamma = 1/4`):

* ``"l1-imq"`` (:math:`r = 1`): :math:`\Phi(x, z) = (c'^2 + \|x - z\|^2)^{\beta'}`,
  :math:`\nu` a multivariate Student t with ``nu_df`` degrees of freedom and scale
  :math:`c'/\sqrt{\mathrm{df}}`, where with :math:`\alpha = \gamma/3`,
  :math:`\xi = 4\alpha/(2 + \alpha)`: :math:`\beta' = -(D + \mathrm{df})/(2\xi)`,
  :math:`c' = (1 - \alpha/2)\,c/2`, :math:`c = 4\ell` (``ell`` the length scale,
  median distance by default).
* ``"l2-sechexp"`` (:math:`r = 2`): :math:`\Phi(x, z) = A(x) A(z) \prod_a
  \mathrm{sech}(\rho(x_a - z_a))` with the tilt
  :math:`A(x) = \exp(\tau \sum_a \sqrt{1 + (x_a - m_a)^2})`, :math:`\rho = 1/(\xi\ell)`
  (:math:`2/\ell` for :math:`D = 1`), :math:`\tau = \rho / (50\sqrt{\pi/2})`, and
  :math:`\nu` the product of hyperbolic secant laws of rate :math:`2\xi\rho`
  (density :math:`\propto \mathrm{sech}(2\xi\rho\,(z_a - m_a))`); :math:`\ell` is the
  median :math:`L^1` distance by default.
* ``"rff-gauss"``, ``"rff-cauchy"`` (:math:`r = 2`): random Fourier features
  :math:`\Phi(x, (\omega, b)) = \sqrt{2}\cos(\omega^\top x + b)`, :math:`b \sim U[0, 2\pi]`,
  with :math:`\nu` the spectral measure of the Gaussian kernel
  :math:`\exp(-\|x-y\|^2/(2\ell^2))` (:math:`\omega \sim N(0, \ell^{-2} I)`) or of the
  product Cauchy kernel :math:`\prod_a (1 + (x_a - y_a)^2/\ell^2)^{-1}`
  (:math:`\omega_a \sim \mathrm{Laplace}(0, 1/\ell)`), no importance weights: the
  statistic is the random-feature approximation of the KSD with that kernel.

Two departures from Huggins & Mackey's code, where it disagrees with the definitions
above: their Student-t sampler ignores the scale :math:`c'/\sqrt{\mathrm{df}}` that their
density uses, and their hyperbolic-secant sampler and density use rates that differ by
:math:`\pi/2` (with the density's sign flipped in the importance weights). Here the
features are drawn from exactly the :math:`\nu` whose density weights them.
"""

from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np
from scipy.linalg import blas
from scipy.special import gammaln

from ._threads import numba_threads
from ._numba.features import (
    fourier_feature_rows,
    fssd_feature_adjoint,
    fssd_feature_rows,
    imq_feature_rows,
    imq_log_magnitudes,
    sech_feature_rows,
    sech_log_magnitudes,
)
from ._numba.stein import kernel_params as _kernel_code
from ._random import as_generator
from ._validation import check_choice, check_positive_int, check_samples, evaluate_score
from .discrepancy import resolve_bandwidth
from .kernels import KERNELS, _positive_median, make_kernel

__all__ = [
    "FeatureMoments",
    "feature_moments",
    "fssd",
    "fssd_moments",
    "fssd_power_criterion",
    "fssd_criterion_and_grad",
    "chi2_mixture_null",
    "chi2_mixture_draws",
    "moments_functional_null",
    "gaussian_functional_null",
    "RandomFeatures",
    "RFSD_FEATURES",
    "draw_random_features",
    "rfsd",
    "rfsd_moments",
    "rfsd_functional",
    "gaussian_locations",
    "DEFAULT_FEATURE_MEMORY",
]

#: Memory budget (bytes) of one block of feature rows.
DEFAULT_FEATURE_MEMORY = 32 * 2**20

#: Below this many feature values a block runs on one thread: waking the pool costs
#: more than the work (values are identical either way).
SERIAL_FEATURE_VALUES = 2**16

RFSD_FEATURES = ("l1-imq", "l2-sechexp", "rff-gauss", "rff-cauchy")


def _threads(n_values):
    return numba_threads(1) if n_values < SERIAL_FEATURE_VALUES else nullcontext()


# ---------------------------------------------------------------------------
# Moments of feature rows
# ---------------------------------------------------------------------------


@dataclass
class FeatureMoments:
    r"""Sums of the feature rows :math:`\tau(x_i) \in \mathbb{R}^p` of one pass.

    Attributes
    ----------
    n : int
    total : ndarray (p,)
        :math:`\sum_i \tau(x_i)`.
    sq_norm_sum : float
        :math:`\sum_i \|\tau(x_i)\|^2`.
    second : ndarray (p, p) or None
        :math:`\sum_i \tau(x_i)\tau(x_i)^\top` when asked for (formed on first use
        when the rows are kept).
    rows : ndarray (n, p) or None
        The rows themselves, kept instead of ``second`` when there are fewer rows than
        features (``n < p``): the covariance then has rank below ``n``, and its
        spectrum (:meth:`covariance_eigenvalues`) comes from the ``n x n`` Gram matrix
        of the centred rows, not from a ``p x p`` matrix.

    Every sum is finite (a ValueError otherwise): an overflow in the data, the scores
    or the features never reaches a statistic.
    """

    n: int
    total: np.ndarray
    sq_norm_sum: float
    second: np.ndarray = None
    rows: np.ndarray = None

    def __post_init__(self):
        _check_features_finite(self.total, self.sq_norm_sum,
                               () if self.second is None else self.second)

    def _second(self):
        if self.second is None and self.rows is not None:
            self.second = self.rows.T @ self.rows
        return self.second

    @property
    def mean(self):
        return self.total / self.n

    def ustat(self):
        r""":math:`\frac{1}{n(n-1)} \sum_{i \ne j} \tau(x_i)^\top \tau(x_j)`."""
        n = self.n
        with np.errstate(over="ignore", invalid="ignore"):
            value = (float(self.total @ self.total) - self.sq_norm_sum) / (n * (n - 1.0))
        _check_features_finite(value)
        return value

    def covariance(self):
        """Sample covariance of the rows (``ddof=1``), as ``numpy.cov``."""
        mu = self.mean
        with np.errstate(over="ignore", invalid="ignore"):
            cov = (self._second() - self.n * np.outer(mu, mu)) / (self.n - 1.0)
        _check_features_finite(cov)
        return cov

    def covariance_eigenvalues(self):
        """The eigenvalues of :meth:`covariance` over its non-negligible components,
        ascending, negative rounding errors set to zero (those of :func:`_psd_eigh`),
        from the ``n x n`` Gram matrix of the centred rows when the rows are kept: the
        ``k - n`` further eigenvalues of ``k`` active components are zero."""
        if self.rows is None:
            return _psd_eigh(self.covariance())[0]
        Fc, _, top = self._active_centred()
        n, k = Fc.shape
        if k == 0:
            return np.zeros(0)
        gram = _small_gram(Fc, top)
        lam = np.zeros(k)
        lam[k - gram.shape[0]:] = np.clip(np.linalg.eigvalsh(gram), 0.0, None)
        return lam

    def _active_centred(self):
        """The kept rows, centred, on the components whose variance exceeds
        :data:`NEGLIGIBLE_VARIANCE` times the largest (as :func:`_psd_eigh` keeps them),
        the mask of those components and the largest variance."""
        n, mu = self.n, self.mean
        with np.errstate(over="ignore", invalid="ignore"):
            Fc = self.rows - mu
            var = np.einsum("ij,ij->j", Fc, Fc) / (n - 1.0)
        _check_features_finite(var)
        top = float(var.max()) if var.size else 0.0
        active = var > NEGLIGIBLE_VARIANCE * top if top > 0 else np.zeros(var.size, bool)
        return Fc[:, active], active, top

    def h1_variance(self):
        r""":math:`4(\frac{1}{n}\sum_i (\tau_i^\top \bar\tau)^2 - \|\bar\tau\|^4)`: the
        variance of :math:`\sqrt{n}` times the U-statistic under H1 (kgof's convention)."""
        mu = self.mean
        with np.errstate(over="ignore", invalid="ignore"):
            if self.rows is not None:
                proj = self.rows @ mu
                m2 = float(proj @ proj) / self.n
            else:
                m2 = float(mu @ (self.second @ mu)) / self.n
            sq = float(mu @ mu)
        try:
            var = 4.0 * (m2 - sq ** 2)
        except OverflowError:  # a Python float's ** raises where numpy's gives inf
            var = np.inf
        _check_features_finite(var)
        return max(var, 0.0)


def _small_gram(Fc, top):
    """The smaller of ``Fc Fc^T`` and ``Fc^T Fc`` over ``n - 1`` (the covariance of the
    centred rows ``Fc``, or their Gram matrix), entries below ``1e-200`` times the
    largest variance ``top`` set to zero (subnormals: see :func:`_psd_eigh`)."""
    n, k = Fc.shape
    with np.errstate(over="ignore", invalid="ignore"):
        gram = (Fc @ Fc.T if k > n else Fc.T @ Fc) / (n - 1.0)
    _check_features_finite(gram)
    gram[np.abs(gram) < 1e-200 * top] = 0.0
    return gram


def _check_features_finite(*values):
    """A ValueError naming X unless every feature sum or moment given is finite."""
    if not all(np.all(np.isfinite(v)) for v in values):
        raise ValueError(
            "the Stein features are not finite on X: the values of X, the scores of the "
            "model or the features' scale (bandwidth) overflow float64; rescale X or "
            "choose another bandwidth.")


def _block_rows(n, p, max_memory):
    return int(max(1, min(n, max_memory // max(1, 8 * p))))


def feature_moments(rows, n, p, *, second=True, max_memory=DEFAULT_FEATURE_MEMORY):
    """Accumulate :class:`FeatureMoments` over row blocks.

    ``rows(a, b, out)`` fills ``out`` (shape ``(b - a, p)``) with the feature rows of
    samples ``a .. b``. Blocks have at most ``max_memory`` bytes; the second-moment
    matrix is summed by BLAS (``syrk``) block after block, in a fixed order. With
    fewer rows than features (``n < p``) the rows themselves are kept instead, which
    take less memory than the ``p x p`` matrix (:class:`FeatureMoments`).
    """
    block = _block_rows(n, p, max_memory)
    total = np.zeros(p)
    sq = 0.0
    keep = second and n < p
    S2 = np.zeros((p, p), order="F") if second and not keep else None
    kept = np.empty((n, p)) if keep else None
    buf = None if keep else np.empty((block, p))
    for a in range(0, n, block):
        b = min(n, a + block)
        F = rows(a, b, kept[a:b] if keep else buf[: b - a])
        if keep and not np.shares_memory(F, kept):
            kept[a:b] = F
        total += F.sum(axis=0)
        sq += float(np.einsum("ij,ij->", F, F))
        if S2 is not None:
            # F^T F in the upper triangle of S2 (F is C-ordered, i.e. F^T is Fortran)
            S2 = blas.dsyrk(1.0, F.T, beta=1.0, c=S2, trans=0, lower=0, overwrite_c=1)
    if S2 is not None:
        S2 = np.triu(S2) + np.triu(S2, 1).T
    return FeatureMoments(n, total, sq, S2, rows=kept)


# ---------------------------------------------------------------------------
# Null distributions
# ---------------------------------------------------------------------------


#: Components whose variance is below this fraction of the largest are left out of the
#: simulated null (their contribution is below double precision of the rest).
NEGLIGIBLE_VARIANCE = 1e-20


def _psd_eigh(cov):
    """Eigen-decomposition of the non-negligible block of ``cov``.

    Returns ``(lam, U, active)``: eigenvalues (negative rounding errors set to zero) and
    eigenvectors of ``cov[active][:, active]``, with ``active`` the components whose
    variance exceeds :data:`NEGLIGIBLE_VARIANCE` times the largest. Entries below
    ``1e-200`` times the largest variance are set to zero first: with rescaled
    random features they are subnormal numbers, on which LAPACK runs a hundred times
    slower (an eigendecomposition of size 600 took 3.7 s).
    """
    cov = 0.5 * (cov + cov.T)
    diag = np.diag(cov)
    top = float(diag.max()) if diag.size else 0.0
    if not top > 0:
        return np.zeros(0), np.zeros((0, 0)), np.zeros(cov.shape[0], dtype=bool)
    active = diag > NEGLIGIBLE_VARIANCE * top
    sub = cov[np.ix_(active, active)]
    sub[np.abs(sub) < 1e-200 * top] = 0.0
    lam, U = np.linalg.eigh(sub)
    return np.clip(lam, 0.0, None), U, active


def chi2_mixture_null(cov, n_draws, rng, *, centred=True, batch=512):
    r"""Draws of the weighted chi-square mixture :math:`\sum_k \lambda_k (Z_k^2 - 1)`.

    Without centring, :math:`\sum_k \lambda_k Z_k^2`. :math:`\lambda_k` are the
    eigenvalues of ``cov`` (negative rounding errors set to zero). The normals come
    from ``rng`` in one piece, so the draws do not depend on ``batch``.

    Parameters
    ----------
    cov : ndarray of shape (p, p)
        Covariance whose eigenvalues weight the chi-squares.
    n_draws : int
        Number of draws.
    rng : numpy.random.Generator
        Source of the normals.
    centred : bool, default=True
        Subtract 1 from each :math:`Z_k^2`.
    batch : int, default=512
        Draws evaluated at once (bounds memory; the draws do not depend on it).

    Returns
    -------
    ndarray of shape (n_draws,)
    """
    return chi2_mixture_draws(_psd_eigh(cov)[0], n_draws, rng, centred=centred, batch=batch)


def chi2_mixture_draws(lam, n_draws, rng, *, centred=True, batch=512):
    r""":func:`chi2_mixture_null` from the eigenvalues ``lam`` (e.g.
    :meth:`FeatureMoments.covariance_eigenvalues`): the same draws as from a covariance
    with that spectrum."""
    E = rng.standard_normal((n_draws, lam.size))
    out = np.empty(n_draws)
    for a in range(0, n_draws, batch):
        Eb = E[a:a + batch]
        out[a:a + batch] = (Eb * Eb - 1.0) @ lam if centred else (Eb * Eb) @ lam
    return out


def rfsd_functional(G, order, n_features, dim):
    r""":math:`\sum_a (\sum_j |G_{ja}|^r)^{2/r}` of each row of ``G`` (shape ``(m, J D)``)."""
    G = np.abs(np.asarray(G).reshape(-1, n_features, dim))
    if order == 2:
        return np.einsum("mja,mja->m", G, G)
    inner = G.sum(axis=1) if order == 1 else (G**order).sum(axis=1) ** (1.0 / order)
    return np.einsum("ma,ma->m", inner, inner)


def gaussian_functional_null(cov, order, n_features, dim, n_draws, rng, *, batch=512):
    r"""Draws of :math:`\sum_a (\sum_j |G_{ja}|^r)^{2/r}`, :math:`G \sim N(0, \mathrm{cov})`.

    For ``order=2`` this is the weighted chi-square mixture :math:`\sum_k \lambda_k Z_k^2`
    (:func:`chi2_mixture_null`); otherwise :math:`G = U \Lambda^{1/2} Z` from the
    eigendecomposition of ``cov``. The normals come from ``rng`` in one piece.

    Parameters
    ----------
    cov : ndarray of shape (J * D, J * D)
        Covariance of the Gaussian :math:`G`.
    order : {1, 2}
        The exponent :math:`r`.
    n_features : int
        :math:`J`, the number of features.
    dim : int
        :math:`D`, the data dimension.
    n_draws : int
        Number of draws.
    rng : numpy.random.Generator
        Source of the normals.
    batch : int, default=512
        Draws evaluated at once (bounds memory; the draws do not depend on it).

    Returns
    -------
    ndarray of shape (n_draws,)
    """
    if order == 2:
        return chi2_mixture_null(cov, n_draws, rng, centred=False, batch=batch)
    lam, U, active = _psd_eigh(cov)
    root = U * np.sqrt(lam)  # columns scaled: G = E @ root.T
    return _functional_draws(root, active, order, n_features, dim, n_draws, rng, batch)


def _functional_draws(root, active, order, n_features, dim, n_draws, rng, batch):
    """The draws of :func:`gaussian_functional_null` from a factor ``root`` (``k x r``,
    ``r <= k``) of the covariance of the ``k`` active components: ``E`` has ``k`` columns
    (the eigenvalues' count), of which the last ``r`` (the largest eigenvalues, ascending)
    multiply ``root``."""
    k, r = root.shape
    E = rng.standard_normal((n_draws, k))
    out = np.empty(n_draws)
    G = np.zeros((min(batch, n_draws), active.size))
    for a in range(0, n_draws, batch):
        Eb = E[a:a + batch, k - r:]
        Gb = G[: Eb.shape[0]]
        Gb[:, active] = Eb @ root.T
        out[a:a + batch] = rfsd_functional(Gb, order, n_features, dim)
    return out


def moments_functional_null(moments, order, n_features, dim, n_draws, rng, *, batch=512):
    r""":func:`gaussian_functional_null` of ``moments.covariance()``; with the rows kept
    (:class:`FeatureMoments`, ``n < p``) from the ``n x n`` Gram matrix of the centred
    rows, never forming the ``p x p`` covariance: the eigenvectors of its non-zero
    eigenvalues scaled by their roots are :math:`F_c^\top V / \sqrt{n - 1}`."""
    if order == 2:
        return chi2_mixture_draws(moments.covariance_eigenvalues(), n_draws, rng,
                                  centred=False, batch=batch)
    if moments.rows is None:
        return gaussian_functional_null(moments.covariance(), order, n_features, dim,
                                        n_draws, rng, batch=batch)
    Fc, active, top = moments._active_centred()
    n, k = Fc.shape
    if k == 0:
        return np.zeros(n_draws)
    lam, V = np.linalg.eigh(_small_gram(Fc, top))
    if k <= n:
        root = V * np.sqrt(np.clip(lam, 0.0, None))
    else:
        root = (Fc.T @ V) / np.sqrt(n - 1.0)
        root[:, lam <= 0.0] = 0.0
    _check_features_finite(root)
    return _functional_draws(root, active, order, n_features, dim, n_draws, rng, batch)


# ---------------------------------------------------------------------------
# FSSD
# ---------------------------------------------------------------------------


def gaussian_locations(X, n_locations, rng, reg=1e-6):
    """``n_locations`` draws from the Gaussian fitted to the rows of ``X`` (mean, covariance
    plus ``reg`` times its mean variance on the diagonal, as kgof's ``fit_gaussian_draw``
    but relative, so the draws scale with the data)."""
    X = np.asarray(X, dtype=np.float64)
    d = X.shape[1]
    mean = X.mean(axis=0)
    cov = np.cov(X, rowvar=False).reshape(d, d) if X.shape[0] > 1 else np.zeros((d, d))
    scale = np.trace(cov) / d
    cov = cov + reg * (scale if scale > 0 else 1.0) * np.eye(d)
    L = np.linalg.cholesky(0.5 * (cov + cov.T))
    E = rng.standard_normal((n_locations, d))
    return np.ascontiguousarray(mean + E @ L.T)


def _fssd_rows(X, S, V, kernel):
    code, p0, p1 = _kernel_code(kernel)
    d = X.shape[1]
    scale = 1.0 / np.sqrt(d * V.shape[0])

    def rows(a, b, out):
        with _threads(out.size):
            return fssd_feature_rows(code, p0, p1, X[a:b], S[a:b], V, scale, out)

    return rows


def fssd_feature_matrix(X, S, V, kernel):
    r"""The ``(n, J D)`` matrix of FSSD feature rows :math:`\tau(x_i)` (small inputs)."""
    out = np.empty((X.shape[0], V.shape[0] * X.shape[1]))
    return _fssd_rows(X, S, V, kernel)(0, X.shape[0], out)


def fssd_moments(X, S, V, kernel, *, second=True, max_memory=DEFAULT_FEATURE_MEMORY):
    """:class:`FeatureMoments` of the FSSD feature rows of validated ``X``, scores ``S``."""
    p = V.shape[0] * X.shape[1]
    return feature_moments(_fssd_rows(X, S, V, kernel), X.shape[0], p, second=second,
                           max_memory=max_memory)


def fssd_power_criterion(moments, reg=1e-2):
    r""":math:`\widehat{\mathrm{FSSD}^2_u} / \sqrt{\hat\sigma^2_{H_1} + \mathrm{reg}}` (kgof's)."""
    return moments.ustat() / np.sqrt(moments.h1_variance() + reg)


def check_locations(V, dim, name="locations"):
    """Validate a ``(J, dim)`` array of test locations."""
    V = check_samples(V, name=name, min_samples=1)
    if V.shape[1] != dim:
        raise ValueError(f"{name} must have {dim} columns (the dimension of X), got shape "
                         f"{V.shape}.")
    return np.ascontiguousarray(V)


def fssd(X, model, *, locations, kernel="rbf", bandwidth="median", kernel_params=None,
         random_state=None, max_memory=DEFAULT_FEATURE_MEMORY):
    r"""Unbiased squared finite set Stein discrepancy :math:`\widehat{\mathrm{FSSD}^2_u}`.

    No factor :math:`n`: kgof's ``FSSD.compute_stat`` returns ``n`` times this value.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    model : distribution or callable
        An object with ``grad_logpdf(X)`` or a callable ``X -> grad log p(X)``.
    locations : array-like of shape (n_locations, n_features)
        The test locations :math:`v_j`.
    kernel : {"rbf", "imq"}, default="rbf"
    bandwidth : float or "median", default="median"
    kernel_params : dict, default=None
    random_state : None, int or Generator
        Only used by the median heuristic's subsample when ``n > 2000``.
    max_memory : int, default=32 MiB
        Bound on one block of feature rows; the result does not depend on it.

    Returns
    -------
    float
    """
    X = check_samples(X)
    check_choice(kernel, "kernel", KERNELS)
    V = check_locations(locations, X.shape[1])
    kern = make_kernel(kernel, resolve_bandwidth(X, bandwidth, random_state=random_state),
                       kernel_params)
    S = evaluate_score(model, X)
    return fssd_moments(X, S, V, kern, second=False, max_memory=max_memory).ustat()


def fssd_criterion_and_grad(X, S, V, bandwidth, kernel="rbf", kernel_params=None, reg=1e-2):
    r"""FSSD power criterion and its gradient in the locations and the bandwidth.

    With :math:`T` the ``(n, JD)`` feature rows, :math:`\bar\tau` their mean,
    :math:`\mu_u = \widehat{\mathrm{FSSD}^2_u}`, :math:`a_i = \tau_i^\top\bar\tau` and
    :math:`\sigma^2 = \frac{4}{n}\sum_i a_i^2 - 4\|\bar\tau\|^4`, the criterion is
    :math:`\mu_u / s`, :math:`s = \sqrt{\sigma^2 + \mathrm{reg}}`, and its derivative in
    the row :math:`\tau_i` is

    .. math::

        \frac{1}{s}\Big(\frac{2\bar\tau}{n-1} - \frac{2\tau_i}{n(n-1)}\Big)
        - \frac{\mu_u}{2 s^3}\Big(\frac{8}{n}\big(a_i\bar\tau + \tfrac{1}{n} T^\top a\big)
        - \frac{16}{n}\|\bar\tau\|^2 \bar\tau\Big),

    pulled back to the locations and the bandwidth by
    :func:`skstein._numba.features.fssd_feature_adjoint`. Holds the ``(n, JD)`` rows in
    memory (meant for the training sample of FSSD-opt).

    Returns
    -------
    value : float
    grad_locations : ndarray (J, D)
    grad_bandwidth : float
    """
    kern = make_kernel(kernel, bandwidth, kernel_params)
    code, p0, p1 = _kernel_code(kern)
    n, d = X.shape
    J = V.shape[0]
    scale = 1.0 / np.sqrt(d * J)
    T = np.empty((n, J * d))
    with _threads(T.size):
        fssd_feature_rows(code, p0, p1, X, S, V, scale, T)
    mu = T.mean(axis=0)
    mu2 = float(mu @ mu)
    sq = np.einsum("ij,ij->i", T, T)
    stat = n / (n - 1.0) * mu2 - sq.mean() / (n - 1.0)
    a = T @ mu
    var = max(4.0 * float(np.mean(a * a)) - 4.0 * mu2 * mu2, 0.0)
    s = np.sqrt(var + reg)
    dstat = (2.0 / (n - 1.0)) * mu[None, :] - (2.0 / (n * (n - 1.0))) * T
    dvar = (8.0 / n) * (a[:, None] * mu[None, :] + (T.T @ a)[None, :] / n) \
        - (16.0 / n) * mu2 * mu[None, :]
    G = np.ascontiguousarray(dstat / s - stat / (2.0 * s**3) * dvar)
    gV = np.empty((J, d))
    gh = np.empty(J)
    with _threads(T.size):
        fssd_feature_adjoint(code, p0, p1, X, S, V, float(bandwidth), scale, G, gV, gh)
    return stat / s, gV, float(gh.sum())


# ---------------------------------------------------------------------------
# Random-feature Stein discrepancies
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RandomFeatures:
    r"""Drawn features of a random-feature Stein discrepancy.

    Attributes
    ----------
    kind : str
        One of :data:`RFSD_FEATURES`.
    order : int
        :math:`r`: 1 for ``"l1-imq"``, 2 otherwise.
    Z : ndarray (J, D)
        Feature locations :math:`z_j` (frequencies :math:`\omega_j` for Fourier features).
    log_coef : ndarray (J,)
        Per-feature log constants: :math:`-\log(J\nu(z_j))/r` (plus :math:`\log A(z_j)`
        for ``"l2-sechexp"``); phases :math:`b_j` for Fourier features.
    center : ndarray (D,)
        The data mean the features are centred at.
    scale : float
        The length scale :math:`\ell` the features were drawn with.
    c2, beta : float
        ``"l1-imq"``: :math:`c'^2` and :math:`\beta'`.
    tilt, rate : float
        ``"l2-sechexp"``: :math:`\tau` and :math:`\rho`.
    """

    kind: str
    order: int
    Z: np.ndarray
    log_coef: np.ndarray
    center: np.ndarray
    scale: float
    c2: float = 0.0
    beta: float = 0.0
    tilt: float = 0.0
    rate: float = 0.0

    @property
    def n_features(self):
        return self.Z.shape[0]


def _imq_constants(dim, gamma, nu_df):
    alpha = gamma / 3.0
    xi = 4.0 * alpha / (2.0 + alpha)
    return alpha, xi, -(dim + nu_df) / (2.0 * xi)


def _sech_xi(gamma):
    alpha = gamma / 3.0
    return 4.0 * alpha / (2.0 + alpha)


def median_l1_distance(X, *, max_points=1000, random_state=None):
    """Median of the pairwise :math:`L^1` distances (seeded subsample of ``max_points``).

    As :func:`skstein.kernels.median_bandwidth`: zero distances are ignored if the median
    would otherwise be zero, and a ValueError names ``X`` if all rows coincide or the
    distances overflow.
    """
    from scipy.spatial.distance import pdist

    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2:
        raise ValueError(f"the median L1 distance needs at least 2 samples of X, got shape "
                         f"{X.shape}.")
    if X.shape[0] > max_points:
        rng = as_generator(random_state)
        X = X[np.sort(rng.choice(X.shape[0], size=max_points, replace=False))]
    with np.errstate(over="ignore", invalid="ignore"):
        d = pdist(X, metric="cityblock")
    if not np.all(np.isfinite(d)):
        raise ValueError("the pairwise distances of X overflow float64 (its values are too "
                         "large); rescale X.")
    return _positive_median(d)


def resolve_feature_scale(X, kind, bandwidth, *, random_state=None):
    r"""The length scale :math:`\ell` of a random-feature family: ``bandwidth`` if a
    positive float, else the median :math:`L^2` distance (:math:`L^1` for
    ``"l2-sechexp"``), computed on at most 1000 (seeded) rows as Huggins & Mackey."""
    if isinstance(bandwidth, str) and bandwidth == "median" and kind == "l2-sechexp":
        return median_l1_distance(X, random_state=random_state)
    return resolve_bandwidth(X, bandwidth, random_state=random_state, max_points=1000)


def draw_random_features(kind, X, n_features, rng, *, bandwidth="median", gamma=0.25,
                         nu_df=0.5):
    r"""Draw the ``n_features`` features of a random-feature Stein discrepancy.

    Parameters
    ----------
    kind : {"l1-imq", "l2-sechexp", "rff-gauss", "rff-cauchy"}
    X : ndarray (n, D)
        The data: its mean centres the features, its median distance sets the scale
        when ``bandwidth="median"``.
    n_features : int
        :math:`J`.
    rng : numpy.random.Generator
    bandwidth : float or "median"
        The length scale :math:`\ell` (see the module docstring).
    gamma : float, default=0.25
        Huggins & Mackey's :math:`\gamma \in (0, 1]` (``"l1-imq"``, ``"l2-sechexp"``).
    nu_df : float, default=0.5
        Degrees of freedom of the Student-t importance distribution (``"l1-imq"``).

    Returns
    -------
    RandomFeatures

    Raises a ValueError naming ``bandwidth`` when the features at the length scale
    overflow float64 (for a scale near the float64 range).
    """
    check_choice(kind, "feature", RFSD_FEATURES)
    ell = resolve_feature_scale(X, kind, bandwidth, random_state=rng)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        feats = _draw_features(kind, X, n_features, rng, ell, gamma, nu_df)
    values = (feats.Z, feats.log_coef, feats.c2, feats.beta, feats.tilt, feats.rate)
    if not all(np.all(np.isfinite(v)) for v in values):
        raise ValueError(f"the random features at the length scale {ell:.3g} (bandwidth) "
                         "overflow float64; give a bandwidth nearer the scale of X.")
    return feats


def _draw_features(kind, X, n_features, rng, ell, gamma, nu_df):
    """The features of :func:`draw_random_features` at the resolved length scale ``ell``."""
    n, d = X.shape
    J = n_features
    center = X.mean(axis=0)
    if kind == "l1-imq":
        alpha, xi, beta = _imq_constants(d, gamma, nu_df)
        c = 4.0 * ell
        cp = (1.0 - alpha / 2.0) * c / 2.0
        s2 = cp * cp / nu_df  # squared scale of the t distribution
        E = rng.standard_normal((J, d))
        w = rng.chisquare(nu_df, size=J) / nu_df
        Z = center + np.sqrt(s2) * E / np.sqrt(w)[:, None]
        maha = np.sum((Z - center) ** 2, axis=1) / s2
        log_nu = (gammaln(0.5 * (nu_df + d)) - gammaln(0.5 * nu_df)
                  - 0.5 * d * np.log(np.pi * nu_df * s2)
                  - 0.5 * (nu_df + d) * np.log1p(maha / nu_df))
        log_coef = -(log_nu + np.log(J))
        return RandomFeatures(kind, 1, np.ascontiguousarray(Z), log_coef, center, ell,
                              c2=cp * cp, beta=beta)
    if kind == "l2-sechexp":
        xi = _sech_xi(gamma)
        rate = 1.0 / (xi * ell) if d > 1 else 2.0 / ell
        tilt = rate / (50.0 * np.sqrt(np.pi / 2.0))
        nu_rate = 2.0 * xi * rate
        U = rng.random((J, d))
        U = np.clip(U, 1e-300, 1.0 - 1e-16)
        Zc = np.log(np.tan(0.5 * np.pi * U)) / nu_rate
        Z = center + Zc
        log_cosh = np.abs(nu_rate * Zc) + np.log1p(np.exp(-2.0 * np.abs(nu_rate * Zc))) \
            - np.log(2.0)
        log_nu = np.sum(np.log(nu_rate / np.pi) - log_cosh, axis=1)
        tz = tilt * np.sum(np.sqrt(1.0 + Zc * Zc), axis=1)
        log_coef = -0.5 * (log_nu + np.log(J)) + tz
        return RandomFeatures(kind, 2, np.ascontiguousarray(Z), log_coef, center, ell,
                              tilt=tilt, rate=rate)
    # random Fourier features
    if kind == "rff-gauss":
        W = rng.standard_normal((J, d)) / ell
    else:
        W = rng.laplace(scale=1.0 / ell, size=(J, d))
    b = rng.uniform(0.0, 2.0 * np.pi, size=J)
    return RandomFeatures(kind, 2, np.ascontiguousarray(W), b, center, ell)


def rfsd_log_shift(X, feats, *, max_memory=DEFAULT_FEATURE_MEMORY):
    """The largest log magnitude of a feature value over the rows of ``X`` (0 for RFF)."""
    if feats.kind.startswith("rff"):
        return 0.0
    n = X.shape[0]
    J = feats.n_features
    block = _block_rows(n, J, max_memory)
    out = np.empty((block, J))
    best = -np.inf
    for a in range(0, n, block):
        b = min(n, a + block)
        buf = out[: b - a]
        with _threads(buf.size * X.shape[1]):
            if feats.kind == "l1-imq":
                imq_log_magnitudes(X[a:b], feats.Z, feats.c2, feats.beta, feats.log_coef, buf)
            else:
                sech_log_magnitudes(X[a:b], feats.Z, feats.center, feats.tilt, feats.rate,
                                    feats.log_coef, buf)
        best = max(best, float(buf.max()))
    return best


def _rfsd_rows(X, S, feats, shift):
    J = feats.n_features
    d = X.shape[1]
    if feats.kind == "l1-imq":
        def fill(a, b, out):
            return imq_feature_rows(X[a:b], S[a:b], feats.Z, feats.c2, feats.beta,
                                    feats.log_coef, shift, out)
    elif feats.kind == "l2-sechexp":
        def fill(a, b, out):
            return sech_feature_rows(X[a:b], S[a:b], feats.Z, feats.center, feats.tilt,
                                     feats.rate, feats.log_coef, shift, out)
    else:
        scale = np.sqrt(2.0 / J)

        def fill(a, b, out):
            return fourier_feature_rows(X[a:b], S[a:b], feats.Z, feats.log_coef, scale, out)

    def rows(a, b, out):
        with _threads(out.size * (1 if feats.kind.startswith("rff") else d)):
            return fill(a, b, out)

    return rows, J * d


def rfsd_moments(X, S, feats, shift, *, second=True, max_memory=DEFAULT_FEATURE_MEMORY):
    r""":class:`FeatureMoments` of the random-feature rows times :math:`e^{-\mathrm{shift}}`."""
    rows, p = _rfsd_rows(X, S, feats, shift)
    return feature_moments(rows, X.shape[0], p, second=second, max_memory=max_memory)


def rfsd_value(moments, feats, shift):
    r""":math:`\mathrm{R\Phi SD}^2` (V-statistic) from the moments of features scaled by
    :math:`e^{-\mathrm{shift}}`; the scaled value is returned with the log factor
    :math:`2\,\mathrm{shift}` that restores it."""
    d = feats.Z.shape[1]
    scaled = float(rfsd_functional(moments.mean[None, :], feats.order, feats.n_features,
                                   d)[0])
    return scaled, 2.0 * shift


def rfsd(X, model, *, feature="l1-imq", n_features=10, bandwidth="median", gamma=0.25,
         nu_df=0.5, random_state=None, max_memory=DEFAULT_FEATURE_MEMORY):
    r"""Random-feature Stein discrepancy :math:`\mathrm{R\Phi SD}^2` of ``X`` to ``model``.

    Draws ``n_features`` features (see :func:`draw_random_features` and the module
    docstring) with ``random_state`` and returns the V-statistic. For ``"l1-imq"`` and
    ``"l2-sechexp"`` in high dimension the value can leave the range of a double (it
    is computed in a rescaled form and multiplied back at the end); the tests work on
    the rescaled form, so their p-values are unaffected.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    model : distribution or callable
    feature : {"l1-imq", "l2-sechexp", "rff-gauss", "rff-cauchy"}, default="l1-imq"
    n_features : int, default=10
    bandwidth : float or "median", default="median"
    gamma, nu_df : float
        See :func:`draw_random_features`.
    random_state : None, int or Generator
    max_memory : int, default=32 MiB

    Returns
    -------
    float
    """
    X = check_samples(X)
    check_choice(feature, "feature", RFSD_FEATURES)
    n_features = check_positive_int(n_features, "n_features")
    rng = as_generator(random_state)
    feats = draw_random_features(feature, X, n_features, rng, bandwidth=bandwidth,
                                 gamma=gamma, nu_df=nu_df)
    S = evaluate_score(model, X)
    shift = rfsd_log_shift(X, feats, max_memory=max_memory)
    mom = rfsd_moments(X, S, feats, shift, second=False, max_memory=max_memory)
    scaled, log_factor = rfsd_value(mom, feats, shift)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        value = float(scaled * np.exp(log_factor))
    if not np.isfinite(value):
        raise ValueError("the RPhiSD of X is beyond the float64 range (its features span more "
                         "than float64 holds); rescale X or choose another bandwidth.")
    return value
