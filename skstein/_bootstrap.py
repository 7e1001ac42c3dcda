r"""Bootstrap null distributions of degenerate Stein U- and V-statistics.

Given the Stein matrix :math:`H` (zero diagonal for the U-statistic), each draw
is a quadratic form :math:`B_m = v_m^\top H v_m`:

* ``"multinomial"`` (Liu, Lee & Jordan 2016; Gong et al. 2021, Eq. 13):
  :math:`w \sim \mathrm{Mult}(N; 1/N, \dots, 1/N)/N`, :math:`v = w - 1/N`.
* ``"rademacher"`` (wild bootstrap, Chwialkowski et al. 2016):
  :math:`v = \epsilon / \sqrt{N(N-1)}` (U) or :math:`\epsilon / N` (V),
  :math:`\epsilon_i = \pm 1`.

All draws come from the caller's generator in NumPy, so the null distribution
does not depend on the number of threads. The ``M`` quadratic forms are one pass
over ``H``: ``B = rowsum((V H) * V)`` with ``V`` the ``M x N`` weight matrix, done
by BLAS in batches of draws (``batch``) whose size changes nothing but memory.
When ``H`` is given as row blocks, the forms are accumulated block by block. In memory,
only the upper triangle is used (a triangular product, half the flops).
"""

import numpy as np
from scipy.linalg import blas

from ._numba.bootstrap import centred_counts

__all__ = ["bootstrap_weights", "bootstrap_null", "bootstrap_pvalue", "bootstrap_threshold",
           "BOOTSTRAPS"]

BOOTSTRAPS = ("multinomial", "rademacher")


def bootstrap_weights(method, n, n_draws, rng, statistic="u"):
    """The ``(n_draws, n)`` matrix of centred bootstrap weights ``v``."""
    if method == "multinomial":
        # Mult(n; 1/n, ..., 1/n) counts as histograms of n uniform indices per draw
        # (the same distribution as Generator.multinomial, several times faster)
        idx = rng.integers(0, n, size=(n_draws, n), dtype=np.int32)
        return centred_counts(idx, np.empty((n_draws, n)))
    if method == "rademacher":
        E = rng.integers(0, 2, size=(n_draws, n)).astype(np.float64)
        E *= 2.0
        E -= 1.0
        scale = 1.0 / np.sqrt(n * (n - 1.0)) if statistic == "u" else 1.0 / n
        E *= scale
        return E
    raise ValueError(f"bootstrap must be one of {list(BOOTSTRAPS)}, got {method!r}.")


def bootstrap_null(upper, method, n_draws, rng, *, statistic="u", diag=None, n=None,
                   batch=256):
    r"""Draw ``n_draws`` bootstrap replicates of the statistic under the null.

    Parameters
    ----------
    upper : ndarray (n, n) or iterable of (a, b, H[a:b])
        The strict upper triangle of the Stein matrix as returned by
        :func:`skstein.discrepancy.stein_sums` (``SteinSums.upper``), or full row
        blocks of the Stein matrix with zero diagonal (then ``n`` is required).
    method : {"multinomial", "rademacher"}
    n_draws : int
    rng : numpy.random.Generator
    statistic : {"u", "v"}
        For ``"v"`` the diagonal ``diag`` of the Stein matrix enters the forms.
    diag : ndarray (n,), optional
        Required for ``statistic="v"``.
    batch : int, default=256
        Draws per BLAS call; bounds memory at ``batch * n`` floats. The weights are
        drawn in one piece first, so the result does not depend on ``batch``.

    Notes
    -----
    With :math:`U` the strict upper triangle, :math:`v^\top H v = 2 v^\top U v +
    \sum_i H_{ii} v_i^2`; the triangular product ``U V^T`` (BLAS ``trmm``) costs half
    the flops of the general product.
    """
    if statistic == "v" and diag is None:
        raise ValueError("the V-statistic bootstrap needs the diagonal of the Stein matrix.")
    if isinstance(upper, np.ndarray):
        n = upper.shape[0]
        V = bootstrap_weights(method, n, n_draws, rng, statistic)
        out = np.empty(n_draws)
        L = upper.T  # Fortran-ordered lower triangle L = U^T
        if not L.flags.f_contiguous:
            L = np.asfortranarray(L)
        for a in range(0, n_draws, batch):
            Vb = V[a:a + batch]
            # (V U)^T = L V^T, with V^T a Fortran view of the C-ordered V
            R = blas.dtrmm(1.0, L, Vb.T, side=0, lower=1)
            out[a:a + batch] = 2.0 * np.einsum("ij,ji->i", Vb, R)
    else:
        V = bootstrap_weights(method, n, n_draws, rng, statistic)
        out = np.zeros(n_draws)
        for a, b, Hblk in upper:
            out += np.einsum("ij,ij->i", V @ Hblk.T, V[:, a:b])
    if statistic == "v":
        out += (V * V) @ diag
    return out


def bootstrap_pvalue(statistic, null):
    """``(1 + #{B >= statistic}) / (1 + M)``: never zero, exact under exchangeability."""
    return (1.0 + np.count_nonzero(null >= statistic)) / (1.0 + null.size)


def bootstrap_threshold(null, alpha):
    """The rejection threshold matching :func:`bootstrap_pvalue`.

    ``statistic > threshold`` if and only if ``pvalue <= alpha`` (up to ties with the
    threshold itself); ``inf`` when ``n_draws`` is too small to ever reject at ``alpha``.
    """
    k = int(np.floor(alpha * (1.0 + null.size) + 1e-9)) - 1  # most draws allowed >= stat
    if k < 0:
        return np.inf
    return float(np.sort(null)[::-1][k])
