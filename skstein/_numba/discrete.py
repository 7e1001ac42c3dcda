r"""Row-parallel Stein kernel passes of the discrete Stein operators.

Samples are integer vectors :math:`x \in \{0, \dots, L_j - 1\}^D` with cyclic shifts
:math:`x \pm e_j` (coordinate ``j`` moved by one, modulo :math:`L_j`). The base kernel
is radial in an embedding :math:`\phi`: :math:`k(x, y) = \kappa(\|\phi(x) - \phi(y)\|^2)`,
with

* ``ONEHOT``: :math:`\phi(x) = (e_{x_1}, \dots, e_{x_D})`, so
  :math:`\|\phi(x) - \phi(y)\|^2 = 2 d_H(x, y)` (twice the Hamming distance);
* ``BOW``: the bag of words :math:`\phi(x) = c(x) = \sum_j e_{x_j} \in \mathbb{N}^L`
  (counts of each value; all coordinates share one vocabulary of size ``L``).

Both squared distances are integers, so :math:`\kappa` is read from a table ``ktab``
(``ktab[t] = kappa(t)``) built by the caller; the pass does no transcendental work.
A shift changes one coordinate, so the squared distance of shifted points follows
from the unshifted one in O(1): with :math:`d = d_H(x, y)` and
:math:`d_j = d - [x_j \ne y_j]`, :math:`d_H(x + s e_j, y + s' e_j) = d_j +
[x_j + s \ne y_j + s']`; with :math:`\delta = c(x) - c(y)`, :math:`u = x_j \to u'`
and :math:`v = y_j \to v'`,

.. math::

    \|c(x + s e_j) - c(y + s' e_j)\|^2 = t + 2(\delta_{u'} - \delta_u - \delta_{v'}
    + \delta_v) + 4 + 2(-[u' = v'] + [u' = v] + [u = v'] - [u = v])

when both move (and :math:`t + 2(\delta_{u'} - \delta_u) + 2`, resp.
:math:`t + 2(\delta_v - \delta_{v'}) + 2`, when one does).

Stein kernels, with :math:`k_{ab} = k(x + a e_j, y + b e_j)`:

* ``DIFFERENCE`` (Yang et al. 2018), scores :math:`s_j(x) = p(x + e_j)/p(x) - 1`
  (``A``), backward differences :math:`\Delta_j f(x) = f(x) - f(x - e_j)`:

  .. math::

      h(x, y) = \sum_j s_j(x) s_j(y) k_{00} + s_j(x)(k_{00} - k_{0-})
      + s_j(y)(k_{00} - k_{-0}) + k_{00} - k_{-0} - k_{0-} + k_{--}.

* ``BARKER`` (Zanella 2020 weights, Barker's rule), :math:`w_{s,j}(x) = p(x + s e_j)
  / (p(x) + p(x + s e_j))` (``A`` for :math:`s = +1`, ``B`` for :math:`s = -1`):

  .. math::

      h(x, y) = \sum_j \sum_{s, s' = \pm 1} w_{s,j}(x) w_{s',j}(y)
      [k_{ss'} - k_{s0} - k_{0s'} + k_{00}].

Each pair costs O(D) and no ``N x N x D`` array is formed. Parallel loops run over
rows, each iteration owning its output row, so results are bitwise identical for
any number of threads.
"""

import numpy as np
from numba import njit, prange

from ._jit import PARALLEL

DIFFERENCE = 0
BARKER = 1
ONEHOT = 0
BOW = 1


@njit(cache=True, inline="always")
def cyclic_shift(v, s, L):
    """``(v + s) mod L`` for ``v`` in ``{0, ..., L-1}`` and a step ``|s| <= L``."""
    w = v + s
    if w >= L:
        w -= L
    elif w < 0:
        w += L
    return w


@njit(cache=True, inline="always")
def _eq(a, b):
    return 1 if a == b else 0


@njit(cache=True, inline="always")
def _ne(a, b):
    return 0 if a == b else 1


@njit(cache=True, inline="always")
def _difference_term(s, t, k00, km0, k0m, kmm):
    """Coordinate ``j``'s term of the difference operator's Stein kernel.

    ``s``, ``t``: the ratios of ``x`` and ``y``; ``kab``: the base kernel at ``x`` moved
    by ``a`` and ``y`` moved by ``b`` along ``e_j`` (``0``: not moved, ``m``: by -1).
    Both embeddings (one-hot and bag of words) call it with their kernel values.
    """
    return (s * t * k00 + s * (k00 - k0m) + t * (k00 - km0)
            + k00 - km0 - k0m + kmm)


@njit(cache=True, inline="always")
def _barker_term(wp, wm, vpw, vmw, kpp, kpm, kmp, kmm, kp0, km0, k0p, k0m, k00):
    """Coordinate ``j``'s term of the Zanella-Barker Stein kernel.

    ``wp``, ``wm``: the weights of the moves +1 and -1 of ``x``; ``vpw``, ``vmw``: those
    of ``y``; ``kab``: the base kernel at ``x`` moved by ``a`` and ``y`` moved by ``b``
    along ``e_j`` (``p``: +1, ``m``: -1, ``0``: not moved).
    """
    sa = wp + wm
    sb = vpw + vmw
    return (wp * (vpw * kpp + vmw * kpm) + wm * (vpw * kmp + vmw * kmm)
            - sb * (wp * kp0 + wm * km0) - sa * (vpw * k0p + vmw * k0m)
            + sa * sb * k00)


@njit(cache=True)
def pair_onehot(op, xi, xl, nvals, ai, bi, al, bl, ktab):
    """Stein kernel value of one pair for the one-hot (Hamming) embedding."""
    D = xi.shape[0]
    d = 0
    for j in range(D):
        d += _ne(xi[j], xl[j])
    k00 = ktab[2 * d]
    acc = 0.0
    for j in range(D):
        L = nvals[j]
        u = xi[j]
        v = xl[j]
        base = d - _ne(u, v)
        um = cyclic_shift(u, -1, L)
        vm = cyclic_shift(v, -1, L)
        if op == DIFFERENCE:
            km0 = ktab[2 * (base + _ne(um, v))]
            k0m = ktab[2 * (base + _ne(u, vm))]
            kmm = ktab[2 * (base + _ne(um, vm))]
            acc += _difference_term(ai[j], al[j], k00, km0, k0m, kmm)
        else:
            up = cyclic_shift(u, 1, L)
            vp = cyclic_shift(v, 1, L)
            kpp = ktab[2 * (base + _ne(up, vp))]
            kpm = ktab[2 * (base + _ne(up, vm))]
            kmp = ktab[2 * (base + _ne(um, vp))]
            kmm = ktab[2 * (base + _ne(um, vm))]
            kp0 = ktab[2 * (base + _ne(up, v))]
            km0 = ktab[2 * (base + _ne(um, v))]
            k0p = ktab[2 * (base + _ne(u, vp))]
            k0m = ktab[2 * (base + _ne(u, vm))]
            acc += _barker_term(ai[j], bi[j], al[j], bl[j], kpp, kpm, kmp, kmm, kp0, km0, k0p,
                                k0m, k00)
    return acc


@njit(cache=True, inline="always")
def _t_x(t, cx, cy, u, u2):
    """Squared BoW distance after moving one word of x from u to u2."""
    return t + 2 * ((cx[u2] - cy[u2]) - (cx[u] - cy[u])) + 2


@njit(cache=True, inline="always")
def _t_y(t, cx, cy, v, v2):
    """Squared BoW distance after moving one word of y from v to v2."""
    return t + 2 * ((cx[v] - cy[v]) - (cx[v2] - cy[v2])) + 2


@njit(cache=True, inline="always")
def _t_xy(t, cx, cy, u, u2, v, v2):
    """Squared BoW distance after moving u -> u2 in x and v -> v2 in y."""
    dot = (cx[u2] - cy[u2]) - (cx[u] - cy[u]) - (cx[v2] - cy[v2]) + (cx[v] - cy[v])
    sq = 4 + 2 * (-_eq(u2, v2) + _eq(u2, v) + _eq(u, v2) - _eq(u, v))
    return t + 2 * dot + sq


@njit(cache=True)
def pair_bow(op, xi, xl, L, ai, bi, al, bl, ktab, nci, ncl, cx, cy):
    """Stein kernel value of one pair for the bag-of-words embedding.

    ``cx`` holds the counts of ``xi`` (filled by the caller), ``cy`` is zero scratch
    of length ``L``; it is filled with the counts of ``xl`` and cleared again.
    """
    D = xi.shape[0]
    for j in range(D):
        cy[xl[j]] += 1
    cross = 0
    for j in range(D):
        cross += cx[xl[j]]
    t = nci + ncl - 2 * cross
    k00 = ktab[t]
    acc = 0.0
    for j in range(D):
        u = xi[j]
        v = xl[j]
        um = cyclic_shift(u, -1, L)
        vm = cyclic_shift(v, -1, L)
        if op == DIFFERENCE:
            km0 = ktab[_t_x(t, cx, cy, u, um)]
            k0m = ktab[_t_y(t, cx, cy, v, vm)]
            kmm = ktab[_t_xy(t, cx, cy, u, um, v, vm)]
            acc += _difference_term(ai[j], al[j], k00, km0, k0m, kmm)
        else:
            up = cyclic_shift(u, 1, L)
            vp = cyclic_shift(v, 1, L)
            kpp = ktab[_t_xy(t, cx, cy, u, up, v, vp)]
            kpm = ktab[_t_xy(t, cx, cy, u, up, v, vm)]
            kmp = ktab[_t_xy(t, cx, cy, u, um, v, vp)]
            kmm = ktab[_t_xy(t, cx, cy, u, um, v, vm)]
            kp0 = ktab[_t_x(t, cx, cy, u, up)]
            km0 = ktab[_t_x(t, cx, cy, u, um)]
            k0p = ktab[_t_y(t, cx, cy, v, vp)]
            k0m = ktab[_t_y(t, cx, cy, v, vm)]
            acc += _barker_term(ai[j], bi[j], al[j], bl[j], kpp, kpm, kmp, kmm, kp0, km0, k0p,
                                k0m, k00)
    for j in range(D):
        cy[xl[j]] = 0
    return acc


@njit(cache=True)
def _pair(op, emb, X, nvals, A, B, ktab, nc, cx, cy, i, c):
    if emb == ONEHOT:
        return pair_onehot(op, X[i], X[c], nvals, A[i], B[i], A[c], B[c], ktab)
    return pair_bow(op, X[i], X[c], nvals[0], A[i], B[i], A[c], B[c], ktab, nc[i], nc[c],
                    cx, cy)


@njit(cache=True)
def _row(op, emb, X, nvals, A, B, ktab, nc, cx, cy, bi, row0, col0, upper, out, rowsum):
    i = row0 + bi
    M = out.shape[1]
    start = 0
    if upper:
        start = min(max(i - col0 + 1, 0), M)
        for bj in range(start):
            out[bi, bj] = 0.0
    if emb == BOW:
        for j in range(X.shape[1]):
            cx[X[i, j]] += 1
    acc = 0.0
    for bj in range(start, M):
        c = col0 + bj
        if c == i:
            out[bi, bj] = 0.0
            continue
        h = _pair(op, emb, X, nvals, A, B, ktab, nc, cx, cy, i, c)
        out[bi, bj] = h
        acc += h
    if emb == BOW:
        for j in range(X.shape[1]):
            cx[X[i, j]] = 0
    rowsum[bi] = acc


@njit(cache=True, parallel=PARALLEL)
def discrete_stein_block(op, emb, X, nvals, A, B, ktab, nc, row0, col0, upper, out, rowsum):
    """Fill ``out`` with Stein kernel values of rows ``row0 + bi`` and columns ``col0 + bj``.

    Parameters
    ----------
    op : int
        ``DIFFERENCE`` or ``BARKER``.
    emb : int
        ``ONEHOT`` or ``BOW``.
    X : int64 (N, D)
        Samples, values in ``[0, nvals[j])``.
    nvals : int64 (D,)
        Number of values of each coordinate (for ``BOW`` all equal: the vocabulary).
    A, B : float64 (N, D)
        ``DIFFERENCE``: the scores (``A``; ``B`` unused). ``BARKER``: the weights of the
        forward (``A``) and backward (``B``) shifts.
    ktab : float64 (T,)
        The radial profile at integer squared distances, ``ktab[t] = kappa(t)``.
    nc : int64 (N,)
        ``BOW``: squared norms of the count vectors (unused for ``ONEHOT``).
    row0, col0 : int
        Global index of the first row and column of the block.
    upper : bool
        Compute only entries with global column ``> `` row (others set to zero);
        otherwise every entry but the diagonal (set to zero).
    out : float64 (B, M)
        Output block.
    rowsum : float64 (B,)
        Output: sum of the computed entries of each row.

    Notes
    -----
    In ``upper`` mode the rows hold decreasing numbers of pairs; the parallel loop runs
    over pairs of rows ``(p, B - 1 - p)`` so every iteration does about the same work.
    The row function is compiled once for both modes (row index int64, ``upper`` a
    run-time flag).
    """
    nb = out.shape[0]
    scratch = nvals[0] if emb == BOW else 1
    steps = (nb + 1) // 2 if upper else nb
    for p in prange(steps):
        cx = np.zeros(scratch, np.int64)
        cy = np.zeros(scratch, np.int64)
        bi = np.int64(p)
        _row(op, emb, X, nvals, A, B, ktab, nc, cx, cy, bi, row0, col0, upper, out, rowsum)
        q = nb - 1 - bi
        if upper and q != bi:
            _row(op, emb, X, nvals, A, B, ktab, nc, cx, cy, q, row0, col0, upper, out, rowsum)
    return rowsum


@njit(cache=True, parallel=PARALLEL)
def discrete_stein_diag(op, emb, X, nvals, A, B, ktab, nc, out):
    """``out[i] = h(x_i, x_i)``, arguments as in :func:`discrete_stein_block`."""
    n = X.shape[0]
    scratch = nvals[0] if emb == BOW else 1
    for ip in prange(n):
        i = np.int64(ip)
        cx = np.zeros(scratch, np.int64)
        cy = np.zeros(scratch, np.int64)
        if emb == BOW:
            for j in range(X.shape[1]):
                cx[X[i, j]] += 1
        out[i] = _pair(op, emb, X, nvals, A, B, ktab, nc, cx, cy, i, i)
    return out


@njit(cache=True, inline="always")
def _split(same, apart, agree, w):
    """``(same, apart)`` with ``w`` added to ``same`` where the shifted values agree,
    else to ``apart``."""
    if agree:
        return same + w, apart
    return same, apart + w


@njit(cache=True)
def onehot_coefficients(op, xi, xl, nvals, ai, bi, al, bl, c):
    r"""The Hamming distance ``d`` of one pair, and in ``c`` the coefficients of
    :math:`\kappa(2(d - 1))`, :math:`\kappa(2d)` and :math:`\kappa(2(d + 1))` in its Stein
    kernel value (one-hot embedding).

    A shift moves one coordinate, so every kernel value of :func:`pair_onehot` is the
    profile at one of these three distances, and the pair's Stein kernel value is
    linear in them: ``c[0] kappa(2(d-1)) + c[1] kappa(2d) + c[2] kappa(2(d+1))``, with
    coefficients that do not depend on the bandwidth (``c[0]`` is zero when ``d = 0``).
    Coordinate ``j``'s kernel values sit at distance ``d_j + [shifted values differ]``
    with ``d_j = d - [x_j != y_j]``: its terms whose shifted values agree go to ``d_j``,
    the others to ``d_j + 1`` (the unshifted value ``k00`` is at ``d``).
    """
    D = xi.shape[0]
    d = 0
    for j in range(D):
        d += _ne(xi[j], xl[j])
    cm = 0.0
    c0 = 0.0
    cp = 0.0
    for j in range(D):
        L = nvals[j]
        u = xi[j]
        v = xl[j]
        um = cyclic_shift(u, -1, L)
        vm = cyclic_shift(v, -1, L)
        same = 0.0   # the coefficients of this coordinate's values at d_j
        apart = 0.0  # ... and at d_j + 1
        if op == DIFFERENCE:
            s = ai[j]
            t = al[j]
            c0 += s * t + s + t + 1.0   # k00, at distance d
            same, apart = _split(same, apart, u == vm, -s - 1.0)
            same, apart = _split(same, apart, um == v, -t - 1.0)
            same, apart = _split(same, apart, um == vm, 1.0)
        else:
            up = cyclic_shift(u, 1, L)
            vp = cyclic_shift(v, 1, L)
            wp = ai[j]
            wm = bi[j]
            vpw = al[j]
            vmw = bl[j]
            sa = wp + wm
            sb = vpw + vmw
            c0 += sa * sb   # k00, at distance d
            same, apart = _split(same, apart, up == vp, wp * vpw)
            same, apart = _split(same, apart, up == vm, wp * vmw)
            same, apart = _split(same, apart, um == vp, wm * vpw)
            same, apart = _split(same, apart, um == vm, wm * vmw)
            same, apart = _split(same, apart, up == v, -sb * wp)
            same, apart = _split(same, apart, um == v, -sb * wm)
            same, apart = _split(same, apart, u == vp, -sa * vpw)
            same, apart = _split(same, apart, u == vm, -sa * vmw)
        if u == v:   # d_j = d
            c0 += same
            cp += apart
        else:        # d_j = d - 1
            cm += same
            c0 += apart
    c[0] = cm
    c[1] = c0
    c[2] = cp
    return d


@njit(cache=True)
def _multi_row(op, X, nvals, A, B, ktabs, c, bi, row0, out, rowsum):
    """Row ``bi`` of :func:`onehot_stein_multi_block` (columns ``row0 + bi + 1`` on)."""
    i = row0 + bi
    K = ktabs.shape[0]
    n = X.shape[0]
    width = out.shape[2]
    start = i - row0 + 1   # the first column (relative to row0) above the diagonal
    for k in range(K):
        for bj in range(min(start, width)):
            out[k, bi, bj] = 0.0
        rowsum[k, bi] = 0.0
    for col in range(i + 1, n):
        d = onehot_coefficients(op, X[i], X[col], nvals, A[i], B[i], A[col], B[col], c)
        lo = 2 * d - 2 if d > 0 else 0
        bj = col - row0
        for k in range(K):
            h = c[0] * ktabs[k, lo] + c[1] * ktabs[k, 2 * d] + c[2] * ktabs[k, 2 * d + 2]
            out[k, bi, bj] = h
            rowsum[k, bi] += h


@njit(cache=True, parallel=PARALLEL)
def onehot_stein_multi_block(op, X, nvals, A, B, ktabs, row0, out, rowsum):
    """Rows ``row0 + bi`` of the strict upper triangle of the one-hot Stein matrix under
    each kernel of ``ktabs`` at once, from column ``row0`` on.

    Each pair's bandwidth-free coefficients (:func:`onehot_coefficients`) are computed
    once and combined with every kernel's profile: the cost of one kernel's pass plus
    three products per pair and kernel.

    Parameters
    ----------
    op, X, nvals, A, B
        As in :func:`discrete_stein_block` (one-hot embedding).
    ktabs : float64 (K, T)
        The profile of each kernel at the integer squared distances ``0, ..., T - 1``
        (``T >= 2 D + 3``).
    row0 : int
        Global index of the block's first row (and column).
    out : float64 (K, B, N - row0)
        Output: ``out[k, bi, bj]`` is kernel ``k``'s Stein value of rows ``row0 + bi``
        and ``row0 + bj`` for ``bj > bi``, zero elsewhere.
    rowsum : float64 (K, B)
        Output: each row's sum.

    Notes
    -----
    Rows are taken in pairs ``(p, B - 1 - p)`` to even the work, as in
    :func:`discrete_stein_block`; each iteration owns its rows, so the results are the
    same for any number of threads.
    """
    nb = out.shape[1]
    steps = (nb + 1) // 2
    for p in prange(steps):
        c = np.zeros(3)
        bi = np.int64(p)
        _multi_row(op, X, nvals, A, B, ktabs, c, bi, row0, out, rowsum)
        q = nb - 1 - bi
        if q != bi:
            _multi_row(op, X, nvals, A, B, ktabs, c, q, row0, out, rowsum)
    return rowsum
