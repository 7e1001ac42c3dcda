r"""Ranking candidate sample sets by their Stein discrepancy to one model.

Which sampler setting, thinning or chain gives the sample closest to the target?
:func:`rank_samples` computes one discrepancy per candidate sample set (the KSD of a
:class:`~skstein.KSDTest`, or the sliced KSD of a fitted :class:`~skstein.MaxSKSDTest`
along its learned directions) and a bootstrap interval for each: the candidate's rows
(or groups of rows, e.g. whole chains) are resampled with replacement and the
statistic is recomputed exactly on every resample. Lower is better.

For the U-statistic of a resample with counts :math:`w_i` (:math:`n^* = \sum_i w_i`),
duplicated rows form pairs too:

.. math::

    U^* = \frac{\sum_{i, j} w_i w_j H_{ij} - \sum_i w_i H_{ii}}{n^*(n^* - 1)},
    \qquad V^* = \frac{\sum_{i,j} w_i w_j H_{ij}}{n^{*2}},

with :math:`H` the Stein matrix (diagonal included). All resamples of a candidate are
one pass of triangular BLAS products over its matrix (or over row blocks of it when it
does not fit in ``max_memory``). Duplicated rows bias the replicates upwards (a pair of
copies adds :math:`h(x, x) > 0`), so the replicates are re-centred on the estimate
(the bootstrap's bias estimate is subtracted) and the intervals are percentile
intervals of the re-centred replicates. They describe the statistic's sampling
variability, asymptotically normal when the sample does not come from the model, and
are only approximate for samples that fit the model very well, where the statistic
is degenerate.

With groups (e.g. the chain of each row of MCMC output) the statistic is by default
the mean Stein kernel over pairs of rows in *different* groups, :math:`\sum_{g \ne
g'} c_g c_{g'} B_{gg'} / \sum_{g \ne g'} c_g c_{g'} n_g n_{g'}` for group counts
:math:`c` (all ones for the estimate), with :math:`B_{gg'}` the sum of :math:`H` over
the pairs of groups :math:`g, g'` and :math:`n_g` their sizes: pairs within a chain
are dependent and measure its autocorrelation, not its marginal.
"""

import numbers
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import blas

from ._random import as_generator
from ._validation import check_positive_int, check_samples, evaluate_score
from .discrepancy import (
    DEFAULT_MAX_MEMORY,
    is_collection,
    resolve_bandwidth,
    resolve_sliced_bandwidth,
    sliced_stein_row_blocks,
    sliced_stein_sums,
    stein_row_blocks,
    stein_sums,
)
from .gof import KSDTest, MaxSKSDTest
from .gof._common import WHITEN_COVARIANCE
from .kernels import make_kernel, whitening

__all__ = ["rank_samples", "SampleRanking"]


def _readonly(a):
    a = np.array(a, dtype=np.float64, copy=True)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class SampleRanking:
    """Result of :func:`rank_samples`.

    Attributes
    ----------
    names : tuple
        The candidates, in the order given.
    values : ndarray (k,)
        The discrepancy of each candidate (lower is better).
    ci_low, ci_high : ndarray (k,)
        Percentile bootstrap interval of each value at level ``confidence``.
    ranks : ndarray of int (k,)
        1 for the lowest value.
    prob_best : ndarray (k,)
        Fraction of the bootstrap replicates in which the candidate has the lowest
        value (resamples of different candidates are independent).
    confidence : float
    method : str
    n_samples : ndarray of int (k,)
    bootstrap : ndarray (k, n_bootstrap)
        The re-centred replicates (left out of the repr).
    """

    names: tuple
    values: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    ranks: np.ndarray
    prob_best: np.ndarray
    confidence: float
    method: str
    n_samples: np.ndarray
    bootstrap: np.ndarray = field(repr=False)

    def __post_init__(self):
        for name in ("values", "ci_low", "ci_high", "prob_best", "bootstrap"):
            object.__setattr__(self, name, _readonly(getattr(self, name)))

    @property
    def best(self):
        """Name of the candidate with the lowest value."""
        return self.names[int(np.argmin(self.values))]

    @property
    def order(self):
        """Names from best to worst."""
        return tuple(self.names[i] for i in np.argsort(self.values, kind="stable"))

    def as_rows(self):
        """One dict per candidate (for tables and CSV files)."""
        cols = zip(self.names, self.values, self.ci_low, self.ci_high, self.ranks,
                   self.prob_best, self.n_samples)
        return [{"name": name, "value": float(v), "ci_low": float(lo), "ci_high": float(hi),
                 "rank": int(r), "prob_best": float(p), "n_samples": int(n)}
                for name, v, lo, hi, r, p, n in cols]


def _as_mapping(obj, what):
    """(names, values) of a dict or a sequence."""
    if isinstance(obj, dict):
        if not obj:
            raise ValueError(f"{what} must not be empty.")
        return tuple(obj), list(obj.values())
    if isinstance(obj, np.ndarray) and obj.ndim == 2:
        raise TypeError(f"{what} must be a dict or a sequence of sample arrays, got one array; "
                        "wrap it in a list.")
    try:
        items = list(obj)
    except TypeError:
        raise TypeError(
            f"{what} must be a dict or a sequence, got {type(obj).__name__}.") from None
    if not items:
        raise ValueError(f"{what} must not be empty.")
    return tuple(range(len(items))), items


def _per_candidate(obj, names, what):
    """``obj`` for each candidate: one shared object, a dict keyed like the samples, or a list."""
    if isinstance(obj, dict):
        missing = [n for n in names if n not in obj]
        if missing:
            raise ValueError(f"{what} has no entry for the candidates {missing}.")
        return [obj[n] for n in names]
    if isinstance(obj, (list, tuple)):
        if len(obj) != len(names):
            raise ValueError(f"{what} has {len(obj)} entries for {len(names)} candidates.")
        return list(obj)
    return [obj] * len(names)


def _check_one_kernel(test):
    """A ValueError when the KSD test ``test`` aggregates over several kernels."""
    h = getattr(test, "bandwidth_", None)
    if np.ndim(h if h is not None else 0) > 0 or (
            h is None and (is_collection(test.bandwidth) or np.ndim(test.bandwidth) > 0)):
        raise ValueError(
            "rank_samples needs one kernel, but the KSDTest aggregates over a bandwidth "
            "collection; give it bandwidth='median' or a float.")
    geometries = test._geometries()
    if len(geometries) > 1:
        raise ValueError(
            "rank_samples needs one kernel, but the KSDTest aggregates over two "
            "geometries (whiten='aggregate'); give it whiten=False or True.")
    return geometries


def _ksd_settings(test, X, rng):
    """The bandwidth and whitening (or None) of the KSD test ``test``: fitted, or
    resolved on ``X``; a ValueError when the test aggregates over several kernels."""
    geometries = _check_one_kernel(test)
    h = getattr(test, "bandwidth_", None)
    if h is not None:
        return h, getattr(test, "whitening_", None)
    # the whitening a KSDTest resolves on X (its covariance's held-out choice)
    white = whitening(X, WHITEN_COVARIANCE) if geometries[0] == "whitened" else None
    if white is not None:
        X = X @ white[0]
    return resolve_bandwidth(X, test.bandwidth, random_state=rng), white


def _stein_parts(test, X, rng, max_memory, settings=None):
    """(full Stein matrix or row-block factory, diagonal, method name); ``settings``:
    the KSD test's bandwidth and whitening, when they were resolved beforehand."""
    if isinstance(test, KSDTest):
        h, white = _ksd_settings(test, X, rng) if settings is None else settings
        S = evaluate_score(test.model, X, "model")
        if white is not None:
            X, S = X @ white[0], S @ white[1]
        kern = make_kernel(test.kernel, h, test.kernel_params)
        name = f"KSD ({kern.name}{', whitened' if white is not None else ''})"
        n = X.shape[0]
        if 8 * n * n <= max_memory:
            sums = stein_sums(X, S, kern, return_matrix=True)
            return sums.upper, sums.diag, name
        sums = stein_sums(X, S, kern, max_memory=max_memory)
        return (lambda: stein_row_blocks(X, S, kern, max_memory=max_memory)), sums.diag, name
    if isinstance(test, MaxSKSDTest):
        if not hasattr(test, "directions_"):
            raise ValueError("a MaxSKSDTest must be fitted (fit or partial_fit) before it can "
                             "rank samples: the discrepancy is taken along its directions.")
        G, R, h = test.directions_, test.slices_, test.bandwidth_
        if G.shape[1] != X.shape[1]:
            raise ValueError(f"the samples have {X.shape[1]} features but the test's "
                             f"directions have {G.shape[1]}.")
        if test.test_bandwidth is not None:
            h = resolve_sliced_bandwidth(X @ G.T, test.test_bandwidth, random_state=rng,
                                         samples=(X, G),
                                         name="test_bandwidth")
        S = evaluate_score(test.model, X, "model")
        n = X.shape[0]
        kw = dict(kernel=test.kernel, kernel_params=test.kernel_params)
        name = f"maxSKSD-{test.variant} ({test.kernel})"
        if 8 * n * n <= max_memory:
            sums = sliced_stein_sums(X, S, G, R, h, return_matrix=True, **kw)
            return sums.upper, sums.diag, name
        sums = sliced_stein_sums(X, S, G, R, h, max_memory=max_memory, **kw)
        return (lambda: sliced_stein_row_blocks(X, S, G, R, h, max_memory=max_memory, **kw)), \
            sums.diag, name
    raise TypeError(f"test must be a KSDTest or a fitted MaxSKSDTest, got {type(test).__name__}.")


def _quadratic_forms(upper, W, batch=256):
    """``w^T H w`` for every row ``w`` of ``W``: H = U + U^T from the strict upper triangle."""
    n_draws = W.shape[0]
    out = np.empty(n_draws)
    if isinstance(upper, np.ndarray):
        L = upper.T
        if not L.flags.f_contiguous:
            L = np.asfortranarray(L)
        for a in range(0, n_draws, batch):
            Wb = W[a:a + batch]
            Rm = blas.dtrmm(1.0, L, Wb.T, side=0, lower=1)
            out[a:a + batch] = 2.0 * np.einsum("ij,ji->i", Wb, Rm)
        return out
    out[:] = 0.0
    for a, b, Hblk in upper():
        out += np.einsum("ij,ij->i", W @ Hblk.T, W[:, a:b])
    return out


def _replicates(upper, diag, W, kind):
    """The U- or V-statistic of the resample with counts ``W[b]``, for every row ``b``."""
    quad = _quadratic_forms(upper, W) + (W * W) @ diag
    tot = W.sum(axis=1)
    if kind == "u":
        with np.errstate(invalid="ignore", divide="ignore"):
            return (quad - W @ diag) / (tot * (tot - 1.0))
    return quad / (tot * tot)


def _group_counts(groups, n_draws, rng):
    """``(n_draws, g)`` counts of whole groups drawn with replacement, and each row's group."""
    labels, inverse = np.unique(groups, return_inverse=True)
    g = labels.size
    if g < 2:
        raise ValueError("groups must contain at least 2 distinct labels.")
    idx = rng.integers(0, g, size=(n_draws, g))
    return np.stack([np.bincount(row, minlength=g) for row in idx]).astype(np.float64), inverse


def _counts(n, groups, n_draws, rng):
    """``(n_draws, n)`` resampling counts: rows, or whole groups, drawn with replacement."""
    if groups is None:
        idx = rng.integers(0, n, size=(n_draws, n))
        return np.stack([np.bincount(row, minlength=n) for row in idx]).astype(np.float64)
    C, inverse = _group_counts(groups, n_draws, rng)
    return C[:, inverse]


def _group_sums(upper, inverse, n_groups):
    """``B[g, h]``: the sum of ``H[i, j]`` over rows ``i`` of group ``g`` and ``j`` of ``h``,
    for ``g != h`` (the diagonal of ``B`` is set to zero: pairs within a group are left out).
    """
    A = np.zeros((inverse.size, n_groups))
    A[np.arange(inverse.size), inverse] = 1.0
    if isinstance(upper, np.ndarray):
        B = A.T @ (upper @ A)
        B = B + B.T
    else:
        B = np.zeros((n_groups, n_groups))
        for a, b, Hblk in upper():
            B += A[a:b].T @ (Hblk @ A)
    np.fill_diagonal(B, 0.0)
    return B


def _between_replicates(B, sizes, C):
    """Mean Stein kernel over pairs of rows in different groups, for group counts ``C``."""
    P = np.outer(sizes, sizes)
    np.fill_diagonal(P, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.einsum("bg,gh,bh->b", C, B, C) / np.einsum("bg,gh,bh->b", C, P, C)


def _check_groups(grp, n, name, pairs):
    """The group labels of candidate ``name`` (``n`` rows) as an array; a ValueError naming
    ``groups`` for a wrong shape, a missing (NaN or None) label, or two groups with
    ``pairs="between-groups"``."""
    grp = np.asarray(grp)
    if grp.shape != (n,):
        raise ValueError(f"groups of candidate {name!r} must have shape ({n},), got "
                         f"{grp.shape}.")
    if grp.dtype.kind in "fc":
        missing = np.isnan(grp)
    elif grp.dtype == object:
        missing = np.array([g is None or (isinstance(g, numbers.Number) and g != g)
                            for g in grp], dtype=bool)
    else:
        missing = np.zeros(n, dtype=bool)
    if np.any(missing):
        raise ValueError(f"groups of candidate {name!r} has {int(missing.sum())} missing "
                         "(NaN or None) labels; every row needs the label of its group.")
    if pairs == "between-groups" and np.unique(grp).size == 2:
        # a resample of two groups has pairs between them only when it draws each once:
        # the original sample, so every replicate would equal the estimate
        raise ValueError(
            f"groups of candidate {name!r} has 2 distinct labels: with pairs between groups "
            "every resample of 2 groups that has such pairs is the original sample, so the "
            "bootstrap interval would have zero width. Give at least 3 groups, or "
            "pairs='all'.")
    return grp


def rank_samples(samples, test, *, statistic=None, n_bootstrap=1000, confidence=0.95,
                 groups=None, pairs=None, random_state=None, max_memory=DEFAULT_MAX_MEMORY):
    """Rank candidate sample sets by their Stein discrepancy to one model, with intervals.

    Parameters
    ----------
    samples : dict or sequence of array-like of shape (n_i, n_features)
        The candidates (e.g. the output of a sampler at several step sizes); a dict
        names them.
    test : KSDTest or fitted MaxSKSDTest, or a dict / sequence of them
        Defines the model and the discrepancy. One test is used for every candidate;
        a dict (keyed like ``samples``) or a sequence gives each candidate its own,
        e.g. a :class:`~skstein.MaxSKSDTest` whose directions were learned on that
        candidate's burn-in (:meth:`~skstein.MaxSKSDTest.partial_fit`). A KSD test
        needs one bandwidth (``bandwidth="median"`` or a float; the default
        ``"aggregate"`` is refused: a ranking compares one kernel's values), and
        uses its fitted bandwidth (and whitening, for ``whiten=True``). Unfitted, one
        test shared by all candidates resolves ``bandwidth`` (and the whitening) once,
        on the candidates pooled, so that every candidate is measured with the same
        kernel; a test per candidate resolves them on its own candidate. A maxSKSD
        test uses its directions, slices and bandwidths (``test_bandwidth`` applies).
    statistic : {"u", "v"}, default=None
        ``None``: each test's own ``statistic``.
    n_bootstrap : int, default=1000
        At least 2.
    confidence : float in (0, 1), default=0.95
    groups : None, array-like, dict or sequence, default=None
        Resampling units: ``None`` resamples rows; otherwise labels of shape
        ``(n_i,)`` per candidate (one array for all when the candidates have the same
        size, or a dict / sequence like ``samples``), and whole groups are resampled.
        Use the chain index for MCMC output, whose rows within a chain are dependent.
        No label may be missing (NaN or None); with pairs between groups a candidate
        needs at least 3 groups (a bootstrap over 2 has nothing to vary).
    pairs : {"all", "between-groups"}, default=None
        Which pairs of rows the statistic averages. ``"all"``: the U- or V-statistic
        of the whole sample. ``"between-groups"`` (the default when ``groups`` is
        given): only pairs of rows from different groups, the mean of
        :math:`h_p(x_i, x_j)` over them, which is then the same for ``statistic="u"``
        and ``"v"``. For independent chains it estimates the discrepancy of the
        samples' marginal without bias, however strongly the states within a chain
        are correlated. Pairs of nearby states of one chain add about
        :math:`h_p(x, x) > 0` each, so over all pairs a slowly mixing sampler looks
        worse than its marginal is: on the ``sghmc-stepsize`` target (100 chains of
        15 states, development seeds) the KSD's within-chain pairs averaged 35 to 68,
        against -0.2 to 13 for the pairs between chains.
    random_state : None, int or Generator
        Seeds the resamples (and the median heuristic's subsample).
    max_memory : int, default=64 MiB
        Beyond it the Stein matrices are recomputed by row blocks (same numbers).

    Returns
    -------
    SampleRanking

    Examples
    --------
    >>> import numpy as np
    >>> from skstein import KSDTest, rank_samples
    >>> from skstein.distributions import Gaussian
    >>> rng = np.random.default_rng(0)
    >>> candidates = {"scale 1.0": rng.standard_normal((300, 2)),
    ...               "scale 1.5": 1.5 * rng.standard_normal((300, 2))}
    >>> ranking = rank_samples(candidates, KSDTest(Gaussian(np.zeros(2)), bandwidth="median"),
    ...                        n_bootstrap=200, random_state=0)
    >>> ranking.best
    'scale 1.0'
    """
    names, arrays = _as_mapping(samples, "samples")
    tests = _per_candidate(test, names, "test")
    for t in tests:
        if not isinstance(t, (KSDTest, MaxSKSDTest)):
            raise TypeError(f"test must be a KSDTest or a fitted MaxSKSDTest, got "
                            f"{type(t).__name__}.")
    # one replicate re-centred on the estimate is the estimate: a zero-width interval
    n_bootstrap = check_positive_int(n_bootstrap, "n_bootstrap", minimum=2)
    if isinstance(confidence, bool) or not isinstance(confidence, numbers.Real) \
            or not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}.")
    if statistic is not None and statistic not in ("u", "v"):
        raise ValueError(f"statistic must be None, 'u' or 'v', got {statistic!r}.")
    if groups is None:
        group_list = [None] * len(names)
    elif isinstance(groups, (dict, list, tuple)) and not (
            isinstance(groups, (list, tuple)) and len(groups) > 0
            and np.ndim(groups[0]) == 0):
        group_list = _per_candidate(groups, names, "groups")
    else:
        group_list = [groups] * len(names)
    if pairs is None:
        pairs = "all" if groups is None else "between-groups"
    if pairs not in ("all", "between-groups"):
        raise ValueError(f"pairs must be None, 'all' or 'between-groups', got {pairs!r}.")
    if pairs == "between-groups" and groups is None:
        raise ValueError("pairs='between-groups' needs groups (e.g. the chain of each row).")
    rng = as_generator(random_state)
    streams = rng.spawn(len(names))
    arrays = [check_samples(X, name=f"samples[{name!r}]") for name, X in zip(names, arrays)]
    group_list = [None if grp is None else _check_groups(grp, X.shape[0], name, pairs)
                  for name, X, grp in zip(names, arrays, group_list)]
    for name, X in zip(names, arrays):
        if X.shape[1] != arrays[0].shape[1]:
            raise ValueError(f"samples[{name!r}] has {X.shape[1]} features, "
                             f"samples[{names[0]!r}] {arrays[0].shape[1]}.")
    shared = None
    values, boots, methods, sizes = [], [], set(), []
    for k, (name, X, t, grp) in enumerate(zip(names, arrays, tests, group_list)):
        n = X.shape[0]
        kind = statistic if statistic is not None else t.statistic
        bw_rng, boot_rng = streams[k].spawn(2)
        if k == 0 and isinstance(test, KSDTest):
            # one kernel for all: resolved on the pooled candidates, with the first
            # candidate's stream (which its own resolution would have used)
            _check_one_kernel(test)  # the test's own settings: no sample to name
            try:
                shared = _ksd_settings(test, np.concatenate(arrays), bw_rng)
            except ValueError as exc:  # the messages call the sample X
                raise ValueError(f"on the samples pooled: {exc}") from exc
        try:
            upper, diag, method = _stein_parts(t, X, bw_rng, max_memory, shared)
        except ValueError as exc:  # say which candidate (the messages call it X)
            raise ValueError(f"on samples[{name!r}]: {exc}") from exc
        methods.add(method + (", pairs between groups" if pairs == "between-groups" else ""))
        if pairs == "between-groups":
            C, inverse = _group_counts(grp, n_bootstrap, boot_rng)
            B = _group_sums(upper, inverse, C.shape[1])
            sizes_g = np.bincount(inverse).astype(np.float64)
            value = _between_replicates(B, sizes_g, np.ones((1, C.shape[1])))[0]
            boot = _between_replicates(B, sizes_g, C)
        else:
            W = _counts(n, grp, n_bootstrap, boot_rng)
            value = _replicates(upper, diag, np.ones((1, n)), kind)[0]
            boot = _replicates(upper, diag, W, kind)
        # resamples with duplicated rows are biased upwards (a duplicate pair adds h(x, x));
        # the replicates are re-centred on the estimate, so they measure its spread
        boot = boot - (np.nanmean(boot) - value)
        values.append(value)
        boots.append(boot)
        sizes.append(n)
    values = np.array(values)
    boots = np.vstack(boots)
    alpha = 1.0 - confidence
    lo = np.nanquantile(boots, alpha / 2, axis=1)
    hi = np.nanquantile(boots, 1 - alpha / 2, axis=1)
    ranks = np.empty(len(names), dtype=int)
    ranks[np.argsort(values, kind="stable")] = np.arange(1, len(names) + 1)
    winners = np.argmin(np.where(np.isnan(boots), np.inf, boots), axis=0)
    prob_best = np.bincount(winners, minlength=len(names)) / float(n_bootstrap)
    return SampleRanking(names=names, values=values, ci_low=lo, ci_high=hi, ranks=ranks,
                         prob_best=prob_best, confidence=float(confidence),
                         method=", ".join(sorted(methods)), n_samples=np.array(sizes),
                         bootstrap=boots)
