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
by BLAS products over blocks of rows of the upper triangle (half the flops of the
full matrix). When ``H`` is given as row blocks, the forms are accumulated block by
block.

Several statistics calibrated on the same draws (one per bandwidth of a collection)
are aggregated by :func:`aggregate_minp`.
"""

import warnings
from dataclasses import dataclass

import numpy as np

from ._numba.bootstrap import (centred_counts, row_forms_blocks, transposed_into,
                               unpack_signs, unpack_signs_transposed, upper_forms_blocks)
from ._threads import single_blas
from ._validation import caller_stacklevel

__all__ = ["bootstrap_weights", "bootstrap_draws", "PackedSigns", "dense_weights",
           "weight_columns", "bootstrap_null", "bootstrap_forms", "bootstrap_pvalue",
           "bootstrap_threshold", "aggregate_minp", "AggregateDecision", "BOOTSTRAPS",
           "SMALL_SAMPLE", "warn_small_sample", "AUTO_RADEMACHER_BELOW", "auto_bootstrap"]

BOOTSTRAPS = ("multinomial", "rademacher")

#: below this many samples the multinomial bootstrap warns that its level is not held
SMALL_SAMPLE = 50

#: ``bootstrap="auto"`` (:class:`~skstein.KSDTest`, :class:`~skstein.MaxSKSDTest`,
#: :class:`~skstein.PerturbedKSDTest`): the Rademacher bootstrap where a statistic is
#: tested on fewer points than this (the part of a split not learned on, each fold, or
#: a fitted test's input), the multinomial one from there on (:func:`auto_bootstrap`)
AUTO_RADEMACHER_BELOW = 120


def auto_bootstrap(n_tested):
    """The draws of ``bootstrap="auto"`` for a statistic tested on ``n_tested`` points:
    ``"rademacher"`` below :data:`AUTO_RADEMACHER_BELOW`, else ``"multinomial"``.

    The centred multinomial weights make a test liberal at small samples (user guide:
    the KSD page, and "Small samples: which bootstrap"); the wild Rademacher ones hold
    the level there.
    """
    return "rademacher" if n_tested < AUTO_RADEMACHER_BELOW else "multinomial"


def warn_small_sample(method, n):
    """Warn when the multinomial bootstrap runs on fewer than :data:`SMALL_SAMPLE` points.

    Its level is asymptotic. Measured on a 2-D standard Gaussian sample from the model
    (``KSDTest``, 200 trials at alpha = 0.05): rejection rates 0.33 at n = 5, 0.11 at
    n = 10 and 0.04 at n = 20 with the aggregated bandwidths; 0.10, 0.065 and 0.045 with
    the median bandwidth. On a correlated 2-D Gaussian (2000 trials each, alpha + 3 sd =
    0.065): 0.060 / 0.055 / 0.053 at n = 30 / 40 / 50 with the aggregated bandwidths,
    0.071 / 0.066 / 0.061 with the median one (and at n = 20, in 5000 trials, 0.072 and
    0.083). The error grows at the smaller levels at which a test with several parts
    calibrates each part: ``MaxSKSDTest`` with multinomial draws (learned statistics at
    alpha / 2 on 80% of the points) rejected that model in 0.101 / 0.079 / 0.080 / 0.063
    of 1000 trials at n = 30 / 50 / 60 / 80 (alpha + 3 sd = 0.071), its learned part in
    0.046 at n = 30 to 60, against 0.025; its default (``bootstrap="auto"``) draws
    Rademacher weights below 150 points. The Rademacher bootstrap was conservative at
    these sizes (0.018-0.029 for ``KSDTest``). The warning points at the first caller
    outside the package.
    """
    if method != "multinomial" or n >= SMALL_SAMPLE:
        return
    warnings.warn(
        f"the multinomial bootstrap's level is asymptotic and not held with n={n} < "
        f"{SMALL_SAMPLE} samples: a true model can be rejected much more often than "
        f"alpha; bootstrap='rademacher' is conservative at small n.",
        UserWarning, stacklevel=caller_stacklevel())


@dataclass(frozen=True, eq=False)
class PackedSigns:
    r"""Rademacher bootstrap weights :math:`v_{mi} = s\,\epsilon_{mi}`, kept as sign bits.

    Bit ``i % 8`` of byte ``bits[m, i // 8]`` is set where :math:`\epsilon_{mi} = +1`.
    An eighth of a byte per weight: drawn as random bytes (a 32nd of the generator's
    output that one int32 draw per weight takes) and copied to a device as they are, where
    :mod:`skstein._xp_stein` unpacks them; :meth:`dense` and :func:`weight_columns`
    unpack them on the host.

    Attributes
    ----------
    bits : ndarray of uint8, shape (n_draws, ceil(n / 8))
    n : int
        Weights per draw.
    scale : float
        :math:`s`.
    """

    bits: np.ndarray
    n: int
    scale: float

    @property
    def shape(self):
        """``(n_draws, n)``, the shape of the dense weights."""
        return (self.bits.shape[0], self.n)

    def dense(self, dtype=np.float64):
        """The ``(n_draws, n)`` weights, in ``dtype``."""
        return unpack_signs(self.bits, self.scale, np.empty(self.shape, dtype=dtype))


def bootstrap_draws(method, n, n_draws, rng, statistic="u"):
    """The bootstrap weights of :func:`bootstrap_weights`, Rademacher ones packed.

    Returns a :class:`PackedSigns` for ``"rademacher"`` (``n_draws * ceil(n / 8)``
    random bytes from ``rng``), else the dense ``(n_draws, n)`` array. Warns below
    :data:`SMALL_SAMPLE` points with the multinomial bootstrap
    (:func:`warn_small_sample`).
    """
    warn_small_sample(method, n)
    if method == "multinomial":
        # Mult(n; 1/n, ..., 1/n) counts as histograms of n uniform indices per draw
        # (the same distribution as Generator.multinomial, several times faster)
        idx = rng.integers(0, n, size=(n_draws, n), dtype=np.int32)
        return centred_counts(idx, np.empty((n_draws, n)))
    if method == "rademacher":
        width = -(-n // 8)
        bits = np.frombuffer(rng.bytes(n_draws * width), dtype=np.uint8)
        scale = 1.0 / np.sqrt(n * (n - 1.0)) if statistic == "u" else 1.0 / n
        return PackedSigns(bits.reshape(n_draws, width), int(n), float(scale))
    raise ValueError(f"bootstrap must be one of {list(BOOTSTRAPS)}, got {method!r}.")


def bootstrap_weights(method, n, n_draws, rng, statistic="u"):
    """The ``(n_draws, n)`` matrix of centred bootstrap weights ``v``.

    The dense form of :func:`bootstrap_draws` (the same draws from ``rng``). Warns
    below :data:`SMALL_SAMPLE` points with the multinomial bootstrap
    (:func:`warn_small_sample`).
    """
    return dense_weights(bootstrap_draws(method, n, n_draws, rng, statistic))


def dense_weights(V):
    """``V`` as the dense ``(n_draws, n)`` float64 array (unpacked if packed)."""
    return V.dense() if isinstance(V, PackedSigns) else V


def weight_columns(V, dtype=None):
    """The weights with one column per draw, ``(n, n_draws)``, C-contiguous in ``dtype``
    (default :data:`FORM_DTYPE`): the operand of the forms' products. The values
    are those of ``V`` cast to ``dtype``; packed signs are unpacked straight into it."""
    dtype = FORM_DTYPE if dtype is None else dtype
    if isinstance(V, PackedSigns):
        M, n = V.shape
        return unpack_signs_transposed(V.bits, V.scale, np.empty((n, M), dtype=dtype))
    if V.size >= PARALLEL_TRANSPOSE_SIZE and V.dtype == np.float64 and V.flags.c_contiguous:
        # a transposed copy is a serial pass in NumPy (0.7 ms at 1000 x 1000)
        M, n = V.shape
        return transposed_into(V, np.empty((n, M), dtype=dtype))
    return np.ascontiguousarray(V.T, dtype=dtype)


#: Weights from which :func:`weight_columns` transposes on numba's threads.
PARALLEL_TRANSPOSE_SIZE = 2**16


def bootstrap_null(upper, method, n_draws, rng, *, statistic="u", diag=None, n=None):
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

    Notes
    -----
    With :math:`U` the strict upper triangle, :math:`v^\top H v = 2 v^\top U v +
    \sum_i H_{ii} v_i^2`; products over the upper triangle cost half the flops of the
    full matrix (:func:`bootstrap_forms`).
    """
    if statistic == "v" and diag is None:
        raise ValueError("the V-statistic bootstrap needs the diagonal of the Stein matrix.")
    if isinstance(upper, np.ndarray):
        n = upper.shape[0]
    V = bootstrap_weights(method, n, n_draws, rng, statistic)
    if isinstance(upper, np.ndarray):
        out = bootstrap_forms(upper, V)
    else:
        out = np.zeros(n_draws)
        for a, b, Hblk in upper:
            out += block_forms(Hblk, V, a, b)
    if statistic == "v":
        out += (V * V) @ diag
    return out


#: The most rows of an upper triangle per BLAS product in :func:`bootstrap_forms` (the
#: rows times the weights; wide enough for an efficient ``gemm``, measured faster than a
#: triangular ``trmm`` over the whole matrix at N = 1000).
FORM_BLOCK = 256

#: Rows of the Stein matrices per block in
#: :func:`skstein.discrepancy.stein_sums_and_forms` (the KSD tests' engine). A block of
#: rows ``a:b`` of every kernel, stacked, multiplies the weights of columns ``a:``, so
#: the part of its diagonal square below the diagonal (zeros) is wasted:
#: ``N * STACKED_FORM_BLOCK / 2`` of the ``N^2 / 2`` products, 26% at N = 1000 with
#: 256 rows and 6% with 64. The stacked product (10 kernels x 64 rows against the
#: weights) still runs at the machine's ``sgemm`` rate; the aggregated test ran 1.15
#: to 1.3 times faster with 64 rows than with 256 at N = 1000 (1.0 to 1.15 times from
#: N = 200 to 5000), the single-bandwidth test unchanged.
STACKED_FORM_BLOCK = 64

#: Precision of the weight-times-kernel products inside the forms of
#: :func:`skstein.discrepancy.stein_sums_and_forms` (the KSD tests' engine). A block
#: of ``STACKED_FORM_BLOCK`` rows of the Stein matrices times the weights is one single-
#: precision BLAS product (BLAS sums its terms in blocks), its dot with the weights
#: sums at most ``STACKED_FORM_BLOCK`` terms in single precision, and the blocks are
#: accumulated in double. Measured at N = 5000 (10 bandwidths, RBF and IMQ), a form
#: errs by at most 1.4e-9 of the sum of its absolute terms and 2e-6 of the null's
#: standard deviation; the tests bound the error by 2^-20 of the sum. The statistics
#: themselves stay in double precision.
FORM_DTYPE = np.float32


def bootstrap_forms(upper, V):
    r"""The off-diagonal quadratic forms :math:`2 v_m^\top U v_m` for the rows ``v_m`` of ``V``.

    ``upper`` holds the strict upper triangle ``U`` of a symmetric matrix with zero
    diagonal (zeros on and below the diagonal, as ``SteinSums.upper``). The forms are
    accumulated over blocks of rows ``a:b`` (:func:`forms_block`): :math:`2 \sum_I
    \mathrm{rowsum}((U_{I,a:} V_{:,a:}^\top) \odot V_{:,I}^\top)`, each block's product
    touching only the upper triangle, the blocks on numba's threads, each with one-thread
    BLAS (:func:`skstein._numba.bootstrap.upper_forms_blocks`; a product on BLAS's own
    threads left them polling beside numba's next pass). The same numbers for any
    number of threads; memory: per thread, one block's products.
    """
    n = upper.shape[0]
    V = np.ascontiguousarray(V, dtype=np.float64)
    block = forms_block(n)
    out = np.empty((-(-n // block), V.shape[0]))
    with single_blas():
        upper_forms_blocks(np.ascontiguousarray(upper, dtype=np.float64), V, block, out)
    return 2.0 * out.sum(axis=0)


def forms_block(n):
    """Rows per block of :func:`bootstrap_forms`: ``N / 64`` within [32, :data:`FORM_BLOCK`]
    (at N = 800, 25 blocks to share among the threads; 16-row products ran no faster on
    two threads than on one). A function of ``N`` alone, so the forms do not depend on
    the number of threads."""
    return int(max(32, min(FORM_BLOCK, -(-n // 64))))


def block_forms(H_rows, V, a, b):
    """Contribution of the full rows ``a:b`` of a zero-diagonal matrix to the forms
    ``v^T H v`` (``V`` has one row per draw).

    The rows are cut into blocks of :func:`forms_block` ``(N)`` rows, each block's
    product a one-thread BLAS call of a numba thread
    (:func:`skstein._numba.bootstrap.row_forms_blocks`): the same numbers for any
    number of threads.
    """
    n = V.shape[1]
    if H_rows.shape != (b - a, n):
        raise ValueError(f"H_rows must have shape {(b - a, n)}, got {H_rows.shape}.")
    V = np.ascontiguousarray(V, dtype=np.float64)
    H_rows = np.ascontiguousarray(H_rows, dtype=np.float64)
    block = forms_block(n)
    out = np.empty((-(-(b - a) // block), V.shape[0]))
    with single_blas():
        row_forms_blocks(H_rows, V, int(a), block, out)
    return out.sum(axis=0)


#: Draws within this fraction of the largest magnitude of the statistic and its draws
#: tie with the statistic: the bootstrap forms are single-precision products, so a draw
#: equal to the statistic in exact arithmetic (at very small n the wild bootstrap's
#: all-ones signs are a likely draw) may come out a rounding error below it.
TIE_TOLERANCE = 1e-6


def _snap_ties(statistic, null):
    """``null`` with the draws within :data:`TIE_TOLERANCE` of ``statistic`` set to it.

    ``statistic`` is a float and ``null`` shape ``(M,)``, or one statistic per column of
    an ``(M, L)`` null.
    """
    statistic = np.asarray(statistic, dtype=np.float64)
    null = np.asarray(null, dtype=np.float64)
    scale = np.maximum(np.abs(statistic), np.max(np.abs(null), axis=0, initial=0.0))
    # infinite draws (resamples of a studentised statistic's terms that are all equal)
    # tie with an equal infinite value only: inf - inf is NaN, which ties with nothing
    with np.errstate(invalid="ignore"):
        tied = (null == statistic) | (np.abs(null - statistic) <= TIE_TOLERANCE * scale)
    return np.where(tied, statistic, null)


def bootstrap_pvalue(statistic, null, *, snap_ties=True):
    """``(1 + #{B >= statistic}) / (1 + M)``: never zero, exact under exchangeability.

    Draws that tie with the statistic up to rounding count as ties (:data:`TIE_TOLERANCE`),
    unless ``snap_ties=False``: draws computed apart from the statistic (Monte Carlo
    samples of the model, a simulated limit) cannot reproduce it, and a tolerance
    relative to the largest draw would count every draw below it as a tie where the
    draws span orders of magnitude.
    """
    if snap_ties:
        null = _snap_ties(statistic, null)
    return (1.0 + np.count_nonzero(null >= statistic)) / (1.0 + null.size)


def bootstrap_threshold(null, alpha):
    """The rejection threshold matching :func:`bootstrap_pvalue`.

    ``statistic > threshold`` if and only if ``pvalue <= alpha`` (up to ties with the
    threshold itself); ``inf`` when ``n_draws`` is too small to ever reject at ``alpha``.
    At a level of 1 (the corrected level of an aggregated test whose draws all tie,
    e.g. a constant sample's zero statistics) it is the smallest draw.
    """
    k = int(np.floor(alpha * (1.0 + null.size) + 1e-9)) - 1  # most draws allowed >= stat
    if k < 0:
        return np.inf
    return float(np.sort(null)[::-1][min(k, null.size - 1)])


@dataclass(frozen=True)
class AggregateDecision:
    """The min-p aggregation of several tests calibrated on the same bootstrap draws.

    Attributes
    ----------
    pvalue : float
        P-value of the aggregated test.
    pvalues : ndarray (L,)
        Each test's own bootstrap p-value.
    level : float
        The per-test level after the correction: test ``l`` rejects when
        ``pvalues[l] < level``, or when ``pvalues[l] == level`` and its standardised
        statistic beats that of the critical bootstrap draw; the aggregated test
        rejects when one of them does.
    rejected : ndarray of bool (L,)
        Which tests reject at the corrected level.
    selected : int
        The most significant test (smallest p-value; ties go to the largest
        standardised statistic).
    levels : ndarray (L,)
        Each test's corrected level, ``level * weights`` (all equal to ``level``
        without weights).
    """

    pvalue: float
    pvalues: np.ndarray
    level: float
    rejected: np.ndarray
    selected: int
    levels: np.ndarray = None


def aggregate_minp(statistics, null, alpha, weights=None, *, snap_ties=True):
    r"""Min-p aggregation of ``L`` statistics whose nulls come from the same draws.

    ``statistics`` has shape ``(L,)``, ``null`` shape ``(M, L)``: draw ``m`` of every
    statistic comes from the same bootstrap weights, so the rows of
    ``T = [statistics; null]`` are ``M + 1`` exchangeable vectors under H0 (to the
    accuracy of the bootstrap). Each entry gets its p-value within its column,
    :math:`p_l(T_j) = \#\{k : T_{kl} \ge T_{jl}\} / (M + 1)`, and its standardised
    value :math:`z_l(T_j) = (T_{jl} - \bar T_l) / s_l` (mean and deviation over all
    ``M + 1`` rows). Row ``j`` is summarised by its most significant entry, ordering
    entries by smaller p-value first and larger ``z`` among equal p-values; the
    aggregated p-value is the share of rows at least as significant as the observed
    one, :math:`(1 + \#\{m \ge 1 : \text{row } m \succeq \text{row } 0\}) / (M + 1)`.

    This is the test of KSDAgg (Schrab, Guedj & Gretton 2022) with uniform weights,
    with the level correction computed exactly on the same draws instead of by
    bisection on a second set: since the ordering is a fixed function of the rows,
    the level is that of a single bootstrap test whatever ``L`` and however correlated
    the statistics. The ``z`` tie-break matters when ``L`` is not small against ``M``:
    p-values move in steps of ``1 / (M + 1)``, and without it the many rows whose
    minimum is the smallest step (each column's largest draw) would tie with every
    significant observation and the test could never reject. With ``L = 1`` it is
    the single test. Draws that tie with the statistic up to rounding count as ties
    (:data:`TIE_TOLERANCE`), unless ``snap_ties=False`` (draws computed apart from the
    statistics, as in :func:`bootstrap_pvalue`).

    ``weights`` (positive, shape ``(L,)``, scaled here to mean one) weight the
    entries as in KSDAgg's weighted test: entry ``l`` counts by :math:`p_l / w_l`, so
    test ``l`` rejects at ``w_l`` times the common corrected level. The ordering is
    still a fixed function of the rows, so the level is exact for any weights.
    """
    statistics = np.asarray(statistics, dtype=np.float64)
    null = np.asarray(null, dtype=np.float64)
    M, L = null.shape
    w = np.ones(L) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (L,) or not (np.all(np.isfinite(w)) and np.all(w > 0)):
        raise ValueError(f"weights must be {L} positive finite values, got {weights!r}.")
    w = w / w.mean()
    T = np.vstack([statistics[None, :], _snap_ties(statistics, null) if snap_ties else null])
    ranks = np.empty((M + 1, L))
    for col in range(L):
        srt = np.sort(T[:, col])
        # number of entries >= each value, itself included
        ranks[:, col] = (M + 1) - np.searchsorted(srt, T[:, col], side="left")
    ranks /= M + 1.0
    pvalues = ranks[0].copy()
    if weights is not None:
        ranks /= w
    # the z tie-break of the columns with finite entries (a studentised statistic's
    # draws can be infinite: its column then breaks no tie)
    finite = np.all(np.isfinite(T), axis=0)
    Tf = np.where(finite, T, 0.0)
    # each column scaled by a power of two near its largest magnitude: the same z to
    # the bit, without squares that overflow (statistics beyond 1e154)
    Tf = np.ldexp(Tf, -np.frexp(np.abs(Tf).max(axis=0))[1])
    sd = Tf.std(axis=0)
    z = np.where(finite & (sd > 0), (Tf - Tf.mean(axis=0)) / np.where(sd > 0, sd, 1.0), 0.0)
    # each row's most significant entry: smallest (weighted) p, then largest z
    q = ranks.min(axis=1)
    zq = np.where(ranks == q[:, None], z, -np.inf).max(axis=1)
    as_strong = (q[1:] < q[0]) | ((q[1:] == q[0]) & (zq[1:] >= zq[0]))
    pvalue = (1.0 + np.count_nonzero(as_strong)) / (M + 1.0)
    # the critical null row: test l rejects when its entry is more significant
    k = int(np.floor(alpha * (M + 1.0) + 1e-9)) - 1
    r0 = ranks[0]
    if k < 0:
        level, rejected = 0.0, np.zeros(L, dtype=bool)
    elif k >= M:
        level, rejected = 1.0, np.ones(L, dtype=bool)
    else:
        order = np.lexsort((-zq[1:], q[1:]))
        crit = order[k] + 1
        level = float(q[crit])
        rejected = (r0 < level) | ((r0 == level) & (z[0] > zq[crit]))
    best = np.flatnonzero(r0 == r0.min())
    # among them the largest z; z equal to rounding (entries whose statistics are one
    # another's multiples, e.g. the same directions in two coordinates) pick the first,
    # so that the statistic reported does not follow the last bits of the arithmetic
    zb = z[0, best]
    top = float(zb.max())
    selected = int(best[np.flatnonzero(zb >= top - TIE_TOLERANCE * max(abs(top), 1.0))[0]])
    return AggregateDecision(float(pvalue), pvalues, level, rejected, selected, level * w)
