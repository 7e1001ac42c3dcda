r"""Functional API: kernel Stein discrepancies of a sample to a model.

Arrays in, numbers out. The estimators in :mod:`skstein.gof` validate their
parameters and call these functions; the O(N^2) work runs in :mod:`skstein._numba`.

The KSD of a sample :math:`x_1, \dots, x_N` to a model :math:`p` with score
:math:`s_p = \nabla \log p` is built from the Stein kernel :math:`h_p` (see
:meth:`skstein.kernels.RBF.stein`):

.. math::

    \mathrm{KSD}^2_U = \frac{1}{N(N-1)} \sum_{i \ne j} h_p(x_i, x_j), \qquad
    \mathrm{KSD}^2_V = \frac{1}{N^2} \sum_{i, j} h_p(x_i, x_j).
"""

from dataclasses import dataclass

import numpy as np
from scipy.linalg import blas

from ._numba.stein import kernel_params, stein_block_inplace
from ._validation import check_choice, check_samples, evaluate_score
from .kernels import KERNELS, make_kernel, median_bandwidth

__all__ = ["ksd", "stein_matrix", "ksd_power_criterion", "resolve_bandwidth", "DEFAULT_MAX_MEMORY"]

#: Default memory budget (bytes) for the temporaries of one Stein-kernel pass.
DEFAULT_MAX_MEMORY = 64 * 2**20


@dataclass
class SteinSums:
    """Sufficient statistics of one Stein-kernel pass over a sample.

    Attributes
    ----------
    n : int
    offdiag_sum : float
        :math:`\\sum_{i \\ne j} h_p(x_i, x_j)`.
    diag : ndarray (n,)
        :math:`h_p(x_i, x_i)`.
    rowsums : ndarray (n,)
        :math:`\\sum_{j \\ne i} h_p(x_i, x_j)`.
    upper : ndarray (n, n) or None
        When asked for: the strictly upper triangle of the Stein matrix (zeros on and
        below the diagonal), as the C-ordered view of a Fortran array (what the
        bootstrap's triangular products use).
    """

    n: int
    offdiag_sum: float
    diag: np.ndarray
    rowsums: np.ndarray
    upper: np.ndarray = None

    def statistic(self, kind="u"):
        if kind == "u":
            return self.offdiag_sum / (self.n * (self.n - 1))
        return (self.offdiag_sum + float(np.sum(self.diag))) / self.n**2

    def power_criterion(self, eps=1e-10):
        r"""Studentised U-statistic :math:`\mathrm{KSD}^2_U / \sqrt{\sigma^2_{H_1} + \epsilon}`.

        :math:`\sigma^2_{H_1} = 4\,\mathrm{Var}_i[\frac{1}{N-1}\sum_{j \ne i} h_p(x_i, x_j)]`
        is the asymptotic variance of :math:`\sqrt{N}\,\mathrm{KSD}^2_U` under the
        alternative, so the criterion is proportional to the test's asymptotic power
        proxy (Jitkrittum et al. 2017; Liu et al. 2020).
        """
        sigma2 = 4.0 * float(np.var(self.rowsums / (self.n - 1)))
        return self.statistic("u") / np.sqrt(sigma2 + eps)


def _diagonal(kernel, S):
    """h_p(x_i, x_i) = kappa(0) ||s_i||^2 - 2 D kappa'(0)."""
    k0, k1, _ = kernel.profile(0.0)
    return float(k0) * np.einsum("ij,ij->i", S, S) - 2.0 * S.shape[1] * float(k1)


def _block_rows(n_rows, n_cols, max_memory, n_arrays=3):
    return int(max(1, min(n_rows, max_memory // max(1, n_arrays * 8 * n_cols))))


def stein_sums(X, S, kernel, *, return_matrix=False, max_memory=DEFAULT_MAX_MEMORY):
    """One Stein-kernel pass over validated arrays ``X`` and scores ``S``.

    With ``return_matrix`` the strict upper triangle of the Stein matrix is formed
    (``SteinSums.upper``), using ``3 N^2`` floats of memory at the peak. Otherwise the pass runs over blocks of rows of the
    upper triangle, with temporaries bounded by ``max_memory`` bytes.
    """
    n, d = X.shape
    Xc = X - X.mean(axis=0)  # h_p is translation invariant; centring keeps the Gram trick accurate
    nx = np.einsum("ij,ij->i", Xc, Xc)
    nsx = np.einsum("ij,ij->i", S, Xc)
    code, p0, p1 = kernel_params(kernel)
    diag = _diagonal(kernel, S)

    if return_matrix:
        # symmetric Gram matrices by syrk / syr2k (half the flops of gemm); each is the
        # C-ordered view of a Fortran array whose upper triangle holds the values
        XF, SF = np.asfortranarray(Xc), np.asfortranarray(S)
        G = blas.dsyrk(1.0, XF, lower=1).T
        SS = blas.dsyrk(1.0, SF, lower=1).T
        C = blas.dsyr2k(1.0, XF, SF, lower=1).T
        rowsum = np.empty(n)
        stein_block_inplace(code, p0, p1, d, G, SS, C, nx, nsx, 0, 0, True, False, rowsum)
        del SS, C
        rowsums = rowsum + G.sum(axis=0)
        return SteinSums(n, 2.0 * float(np.sum(rowsum)), diag, rowsums, G)

    rowsums = np.zeros(n)
    total = 0.0
    rows = _block_rows(n, n, max_memory)
    for a in range(0, n, rows):
        b = min(n, a + rows)
        Xa, Sa = Xc[a:b], S[a:b]
        Xt, St = Xc[a:], S[a:]
        G = Xa @ Xt.T
        SS = Sa @ St.T
        C = Xa @ St.T
        C += Sa @ Xt.T
        rowsum = np.empty(b - a)
        stein_block_inplace(code, p0, p1, d, G, SS, C, nx, nsx, a, a, True, False, rowsum)
        rowsums[a:b] += rowsum
        rowsums[a:] += G.sum(axis=0)
        total += 2.0 * float(np.sum(rowsum))
    return SteinSums(n, total, diag, rowsums, None)


def stein_row_blocks(X, S, kernel, *, max_memory=DEFAULT_MAX_MEMORY):
    """Yield ``(a, b, H[a:b])``: full rows of the Stein matrix (zero diagonal) by blocks.

    For bootstraps whose Stein matrix does not fit in ``max_memory``.
    """
    n, d = X.shape
    Xc = X - X.mean(axis=0)
    nx = np.einsum("ij,ij->i", Xc, Xc)
    nsx = np.einsum("ij,ij->i", S, Xc)
    code, p0, p1 = kernel_params(kernel)
    rows = _block_rows(n, n, max_memory)
    for a in range(0, n, rows):
        b = min(n, a + rows)
        G = Xc[a:b] @ Xc.T
        SS = S[a:b] @ S.T
        C = Xc[a:b] @ S.T
        C += S[a:b] @ Xc.T
        rowsum = np.empty(b - a)
        stein_block_inplace(code, p0, p1, d, G, SS, C, nx, nsx, a, 0, False, False, rowsum)
        yield a, b, G


def resolve_bandwidth(X, bandwidth, *, random_state=None, max_points=2000):
    """A positive float bandwidth, or the median heuristic of ``X`` for ``"median"``."""
    if isinstance(bandwidth, str):
        if bandwidth != "median":
            raise ValueError(f"bandwidth must be a positive float or 'median', got {bandwidth!r}.")
        return median_bandwidth(X, max_points=max_points, random_state=random_state)
    if isinstance(bandwidth, bool) or not np.isscalar(bandwidth):
        raise TypeError(f"bandwidth must be a positive float or 'median', got {bandwidth!r}.")
    bandwidth = float(bandwidth)
    if not (np.isfinite(bandwidth) and bandwidth > 0):
        raise ValueError(f"bandwidth must be a positive finite float or 'median', got {bandwidth!r}.")
    return bandwidth


def _prepare(X, model, kernel, bandwidth, kernel_params, random_state):
    X = check_samples(X)
    check_choice(kernel, "kernel", KERNELS)
    h = resolve_bandwidth(X, bandwidth, random_state=random_state)
    kern = make_kernel(kernel, h, kernel_params)
    S = evaluate_score(model, X)
    return X, S, kern


def ksd(X, model, *, kernel="rbf", bandwidth="median", kernel_params=None, statistic="u",
        random_state=None, max_memory=DEFAULT_MAX_MEMORY):
    """Squared kernel Stein discrepancy of the sample ``X`` to ``model``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    model : distribution or callable
        An object with ``grad_logpdf(X)`` or a callable returning the score
        ``grad log p`` at each row of ``X``.
    kernel : {"rbf", "imq"}, default="rbf"
    bandwidth : float or "median", default="median"
    kernel_params : dict, default=None
        Extra kernel parameters (``{"beta": -0.5}`` for IMQ).
    statistic : {"u", "v"}, default="u"
        Unbiased U-statistic (can be negative) or V-statistic (non-negative, biased).
    random_state : None, int or Generator
        Only used by the median heuristic's subsample when ``n > 2000``.
    max_memory : int, default=64 MiB
        Bound on the temporaries of the pass; no ``n x n`` array is formed, so the
        statistic works for very large ``n`` in ``O(n^2 d)`` time.

    Returns
    -------
    float
    """
    check_choice(statistic, "statistic", ("u", "v"))
    X, S, kern = _prepare(X, model, kernel, bandwidth, kernel_params, random_state)
    return stein_sums(X, S, kern, max_memory=max_memory).statistic(statistic)


def ksd_power_criterion(X, model, *, kernel="rbf", bandwidth="median", kernel_params=None,
                        random_state=None, eps=1e-10, max_memory=DEFAULT_MAX_MEMORY):
    """Test-power criterion ``KSD_U^2 / sqrt(sigma_H1^2 + eps)`` (higher = more power).

    See :meth:`SteinSums.power_criterion`. Parameters as in :func:`ksd`.
    """
    X, S, kern = _prepare(X, model, kernel, bandwidth, kernel_params, random_state)
    return stein_sums(X, S, kern, max_memory=max_memory).power_criterion(eps)


def stein_matrix(X, model, *, kernel="rbf", bandwidth="median", kernel_params=None,
                 random_state=None):
    """The Stein kernel matrix ``H[i, j] = h_p(x_i, x_j)``, diagonal included.

    Uses ``O(n^2)`` memory. Parameters as in :func:`ksd`.
    """
    X, S, kern = _prepare(X, model, kernel, bandwidth, kernel_params, random_state)
    res = stein_sums(X, S, kern, return_matrix=True)
    H = res.upper + res.upper.T
    H[np.diag_indices_from(H)] = res.diag
    return H
