r"""Gradients of the Stein discrepancies in the scores and the points (model learning).

**KSD.** With :math:`r = x_i - x_j`, :math:`t = \|r\|^2`, :math:`c = (s_i - s_j)^\top r`
and the radial profile :math:`\kappa` of the base kernel (:mod:`skstein.kernels`),

.. math::

    h(i, j) = \kappa\, s_i^\top s_j - 2\kappa' c - 2D\kappa' - 4t\kappa'',

    \frac{\partial h}{\partial s_i} = \kappa\, s_j - 2\kappa' r, \qquad
    \frac{\partial h}{\partial x_i} = 2\omega\, r - 2\kappa' (s_i - s_j),

    \omega = \frac{\partial h}{\partial t}
    = \kappa' s_i^\top s_j - 2\kappa'' c - (2D + 4)\kappa'' - 4t\kappa'''.

:func:`stein_grad_block` turns Gram blocks into the three matrices
:math:`K = \kappa`, :math:`K' = \kappa'` and :math:`\Omega = \omega` (zero diagonal)
and their row sums; the caller finishes with BLAS products, e.g.
:math:`\sum_j \partial h(i,j)/\partial s_i = (K S)_i - 2(K'\mathbf 1)_i x_i + 2(K' X)_i`.

**Sliced KSD.** With the projections :math:`u_{ik} = x_i^\top g_k`,
:math:`a_{ik} = s_i^\top r_k`, :math:`c_k = r_k^\top g_k` and
:math:`\delta = u_{ik} - u_{jk}`, the pair terms are those of
:mod:`skstein._numba.sliced`: :math:`h_k`, :math:`\phi = \partial h_k/\partial\delta`,
:math:`\psi = \partial h_k / \partial c_k` and

.. math::

    \frac{\partial h_k}{\partial a_i} = K a_j - 2c\,\delta K', \qquad
    \frac{\partial h_k}{\partial a_j} = K a_i + 2c\,\delta K'.

:func:`sliced_grad_upper` visits each unordered pair once and adds its terms to
both rows (half the work of full rows), in parallel over tiles of row blocks whose
schedule depends on ``N`` only, so the numbers do not depend on the thread count.
No ``N x N x D`` array is formed anywhere.
"""

import numpy as np
from numba import njit, prange

from ._jit import PARALLEL
from .sliced import RBF, _imq_k, fast_exp
from .stein import radial_profile

__all__ = ["radial_profile3", "stein_grad_block", "sliced_grad_upper", "pair_blocks"]


@njit(cache=True, inline="always")
def radial_profile3(code, t, p0, p1):
    """kappa(t) and its first three derivatives (RBF p0 = 1/(2h^2); IMQ p0 = 1/h^2, p1 = beta)."""
    if code == RBF:
        k = np.exp(-t * p0)
        k1 = -p0 * k
        k2 = -p0 * k1
        return k, k1, k2, -p0 * k2
    k, k1, k2 = radial_profile(code, t, p0, p1)  # IMQ
    k3 = (p1 - 2.0) * p0 * k2 * (1.0 / (1.0 + t * p0))
    return k, k1, k2, k3


@njit(cache=True, parallel=PARALLEL)
def stein_grad_block(code, p0, p1, dim, G, SS, C, nx, nsx, row0, rowsum_h, rowsum_k1,
                     rowsum_w):
    r"""Overwrite Gram blocks with :math:`\Omega` (``G``), :math:`K` (``SS``), :math:`K'` (``C``).

    Full rows ``row0 .. row0 + B`` against all ``N`` columns; the diagonal entries
    (global ``j == i``) are set to zero in all three.

    Parameters
    ----------
    code, p0, p1, dim, nx, nsx, row0
        As in :func:`skstein._numba.stein.stein_block_into`: the base kernel (see
        :func:`radial_profile3`), the dimension D, ``||x_i||^2`` and ``s_i . x_i`` of
        all rows, and the global index of the block's first row.
    G, SS, C : float64 (B, N)
        ``X_a X^T``, ``S_a S^T`` and ``X_a S^T + S_a X^T`` of centred ``X``.
    rowsum_h, rowsum_k1, rowsum_w : float64 (B,)
        Outputs: row sums of :math:`h`, :math:`\kappa'` and :math:`\omega` (off-diagonal).
    """
    B, n = G.shape
    two_d4 = 2.0 * dim + 4.0
    two_d = 2.0 * dim
    for bi in prange(B):
        i = row0 + bi
        acc_h = 0.0
        acc_k1 = 0.0
        acc_w = 0.0
        for j in range(n):
            if j == i:
                G[bi, j] = 0.0
                SS[bi, j] = 0.0
                C[bi, j] = 0.0
                continue
            t = nx[i] + nx[j] - 2.0 * G[bi, j]
            if t < 0.0:
                t = 0.0
            cross = nsx[i] + nsx[j] - C[bi, j]
            ss = SS[bi, j]
            k, k1, k2, k3 = radial_profile3(code, t, p0, p1)
            acc_h += k * ss - 2.0 * k1 * cross - two_d * k1 - 4.0 * t * k2
            w = k1 * ss - 2.0 * k2 * cross - two_d4 * k2 - 4.0 * t * k3
            acc_k1 += k1
            acc_w += w
            G[bi, j] = w
            SS[bi, j] = k
            C[bi, j] = k1
        rowsum_h[bi] = acc_h
        rowsum_k1[bi] = acc_k1
        rowsum_w[bi] = acc_w
    return rowsum_h


@njit(cache=True, inline="always", fastmath={"contract"})
def _pair_terms(t, d, kk, k1, k2, k3, ck, ai, aj):
    """(h, phi, psi, dh/da_i, dh/da_j) of one pair and one slice."""
    dif = ai - aj
    e = 2.0 * k1 + 4.0 * t * k2
    cdk1 = ck * d * k1
    h = kk * ai * aj - 2.0 * cdk1 * dif - ck * ck * e
    phi = (2.0 * d * k1 * ai * aj - 2.0 * ck * dif * (k1 + 2.0 * t * k2)
           - ck * ck * d * (12.0 * k2 + 8.0 * t * k3))
    psi = -2.0 * d * k1 * dif - 2.0 * ck * e
    return h, phi, psi, kk * aj - 2.0 * cdk1, kk * ai + 2.0 * cdk1


@njit(cache=True, fastmath={"contract"})
def _pairs_of_row(code, half, p1, p0, c, U, A, i, j0, j1, s0, s1, hrow, psirow, rho, beta,
                  with_beta):
    """Pairs ``(i, j)`` for ``j0 <= j < j1`` (``j != i``) and slices ``s0 <= k < s1``:
    terms added to rows ``i`` and ``j``.

    ``h`` and ``psi`` of each unordered pair go to row ``i`` only (``hrow``, ``psirow``),
    ``phi`` and, with ``with_beta``, the ``a`` derivatives to both rows. Compiled once
    (not inlined) for the one parallel loop of :func:`sliced_grad_upper`; the indices
    are int64.
    ``with_beta`` is the same for every pair of a call: it picks one of two RBF loops.
    """
    # unsigned bounds: the compiler drops the negative-index checks and vectorises (with
    # signed bounds from arguments the loop ran 4 to 8 times slower)
    u0, u1 = np.uint64(s0), np.uint64(s1)
    ui = U[i]
    ai = A[i]
    h_i = hrow[i]
    psi_i = psirow[i]
    rho_i = rho[i]
    beta_i = beta[i]
    for j in range(j0, j1):
        uj = U[j]
        aj = A[j]
        rho_j = rho[j]
        beta_j = beta[j]
        if code == RBF:
            # the same terms with K = E, K' = -qE, K'' = q^2 E, K''' = -q^3 E written
            # out (w = 1 - 2tq): fewer operations in the hot loop
            # two loops: a with_beta test inside the loop compiles to masked loads and
            # stores of beta on every element, even when it is False. The shared body is
            # written twice on purpose: as an inline helper taking the rows and k it gave
            # the same bits but did not vectorise (4x slower at N = 50, 6400 columns)
            if with_beta:
                for k in range(u0, u1):
                    d = ui[k] - uj[k]
                    q = p0[k]
                    ck = c[k]
                    tq = d * d * q
                    e = fast_exp(-tq)
                    w = 1.0 - 2.0 * tq
                    dif = ai[k] - aj[k]
                    aa = ai[k] * aj[k]
                    cd = ck * d
                    eq = e * q
                    h_i[k] += e * aa + 2.0 * eq * (cd * dif + ck * ck * w)
                    psi_i[k] += 2.0 * eq * (d * dif + 2.0 * ck * w)
                    phi = eq * (2.0 * ck * dif * w - 2.0 * d * aa - cd * ck * q * (4.0 * w + 8.0))
                    rho_i[k] += phi
                    rho_j[k] -= phi
                    beta_i[k] += e * aj[k] + 2.0 * eq * cd
                    beta_j[k] += e * ai[k] - 2.0 * eq * cd
            else:
                for k in range(u0, u1):
                    d = ui[k] - uj[k]
                    q = p0[k]
                    ck = c[k]
                    tq = d * d * q
                    e = fast_exp(-tq)
                    w = 1.0 - 2.0 * tq
                    dif = ai[k] - aj[k]
                    aa = ai[k] * aj[k]
                    cd = ck * d
                    eq = e * q
                    h_i[k] += e * aa + 2.0 * eq * (cd * dif + ck * ck * w)
                    psi_i[k] += 2.0 * eq * (d * dif + 2.0 * ck * w)
                    phi = eq * (2.0 * ck * dif * w - 2.0 * d * aa - cd * ck * q * (4.0 * w + 8.0))
                    rho_i[k] += phi
                    rho_j[k] -= phi
        else:
            for k in range(u0, u1):
                d = ui[k] - uj[k]
                t = d * d
                q = p0[k]
                base = 1.0 + t * q
                kk = _imq_k(base, p1, half)
                ib = 1.0 / base
                k1 = p1 * q * kk * ib
                k2 = (p1 - 1.0) * q * k1 * ib
                k3 = (p1 - 2.0) * q * k2 * ib
                h, phi, psi, bi, bj = _pair_terms(t, d, kk, k1, k2, k3, c[k], ai[k], aj[k])
                h_i[k] += h
                psi_i[k] += psi
                rho_i[k] += phi
                rho_j[k] -= phi
                if with_beta:
                    beta_i[k] += bi
                    beta_j[k] += bj


#: Most row blocks of the tiled symmetric pass (an even number).
MAX_PAIR_BLOCKS = 32


@njit(cache=True)
def pair_blocks(n):
    """Number of row blocks of :func:`sliced_grad_upper`: even, fixed by ``n`` alone."""
    return 2 * max(1, min(MAX_PAIR_BLOCKS // 2, n // 32))


#: Fewest slices in a range of :func:`slice_chunks`.
MIN_CHUNK_SLICES = 8


#: :func:`slice_chunks` takes the fewest ranges whose items fill the threads' turns at
#: least this well (items / (threads x turns)).
CHUNK_BALANCE = 0.9


@njit(cache=True)
def slice_chunks(n, m, threads):
    """Ranges of slices per tile of :func:`sliced_grad_upper`: the fewest that give
    the ``pair_blocks(n) // 2`` tiles of a round, cut into them, items that fill the
    threads' turns at least :data:`CHUNK_BALANCE` of the way (18 items for 16 threads
    take two turns, as 32 would: 30 take them nearly full), each range at least
    :data:`MIN_CHUNK_SLICES` slices (shorter loops cost a serial pass up to twice its
    time at N = 200); the best balance found when none does. The ranges split disjoint
    columns, so every output entry receives its terms in the same order whatever their
    number: the results do not depend on ``threads``."""
    tiles = pair_blocks(n) // 2
    most = max(1, m // MIN_CHUNK_SLICES)
    best, best_fill = 1, 0.0
    for nk in range(1, most + 1):
        items = tiles * nk
        turns = -(-items // threads)
        fill = items / (threads * turns)
        if fill >= CHUNK_BALANCE:
            return nk
        if fill > best_fill + 1e-12:
            best, best_fill = nk, fill
    return best


@njit(cache=True, inline="always")
def round_robin(r, s, nb):
    """Tile ``s`` of round ``r`` of a round-robin over ``nb`` (even) blocks: ``(I, J)``.

    Over the rounds ``r = 0 .. nb - 2`` every pair of distinct blocks meets exactly
    once, and within a round each block is in exactly one tile (the circle method).
    """
    if s == 0:
        return r, nb - 1
    return (r + s) % (nb - 1), (r - s + nb - 1) % (nb - 1)


@njit(cache=True, inline="always")
def tile(r, item, nk, n, m, nb):
    """Item ``item`` of round ``r`` of the tiled symmetric passes (``nb`` row blocks,
    tiles cut into ``nk`` ranges of slices): ``(i0, i1, j0, j1, s0, s1)``, its rows,
    its columns (``j0 = -1``: a diagonal tile, each row ``i`` from ``i + 1``) and its
    slices. Round 0 holds the ``nb`` diagonal tiles, rounds ``1 .. nb - 1`` the
    :func:`round_robin` tiles; the tiles of a round touch disjoint rows."""
    t = np.int64(item) // nk
    ch = np.int64(item) % nk
    if r == 0:
        bi, bj = t, t
    else:
        bi, bj = round_robin(r - 1, t, nb)
    return (bi * n // nb, (bi + 1) * n // nb, -1 if r == 0 else bj * n // nb,
            (bj + 1) * n // nb, ch * m // nk, (ch + 1) * m // nk)


@njit(cache=True, parallel=PARALLEL, fastmath={"contract"})
def sliced_grad_upper(code, p0, p1, U, A, c, hsum, rho, beta, psisum, with_beta=True,
                      chunks=1):
    r"""Sliced Stein kernels and their derivatives over the pairs ``i < j``, both rows filled.

    For each pair ``k`` and row ``i`` (sums over all ``j != i``):

    .. math::

        \rho_{ik} = \sum_j \phi_k(i, j), \qquad
        \beta_{ik} = \sum_j \partial h_k(i, j) / \partial a_i,

    and per pair :math:`\mathrm{hsum}_k = \sum_{i<j} h_k(i, j)`,
    :math:`\mathrm{psisum}_k = \sum_{i<j} \psi_k(i, j)` (half the ordered-pair sums).
    Each unordered pair is evaluated once and added to both rows, using
    :math:`\phi_k(j, i) = -\phi_k(i, j)`.

    The rows are cut into :func:`pair_blocks` blocks (a number fixed by ``N``) and
    the tiles of block pairs are visited in round-robin rounds: the tiles of one
    round touch disjoint rows and run in parallel, the rounds one after another. Where
    a round has fewer tiles than threads (a small ``N``), each tile is further cut into
    :func:`slice_chunks` ranges of slices (disjoint columns), so that every thread has
    work.
    Every output row receives its terms in one fixed order, so the result is bitwise
    the same for any number of threads.

    Parameters
    ----------
    code : int
        0 for RBF, 1 for IMQ.
    p0 : float64 (m,)
        Per-pair profile scale (RBF ``1/(2 h_k^2)``, IMQ ``1/h_k^2``).
    p1 : float
        IMQ exponent (ignored for RBF).
    U, A : float64 (N, m), C-contiguous
        ``X G^T`` and ``S R^T``.
    c : float64 (m,)
        ``r_k . g_k``.
    hsum, psisum : float64 (m,)
        Outputs.
    rho, beta : float64 (N, m)
        Outputs (``beta`` is left at zero unless ``with_beta``).
    with_beta : bool, default=True
        Whether to accumulate ``beta``: only the slices' gradient needs it, and it is a
        fifth of the pair work.
    chunks : int, default=1
        Ranges of slices per tile (:func:`slice_chunks` for the threads at hand); the
        results do not depend on it.
    """
    n, m = U.shape
    half = p1 == -0.5
    nb = pair_blocks(n)
    nk = max(1, chunks)
    hrow = np.zeros((n, m))
    psirow = np.zeros((n, m))
    rho[:, :] = 0.0
    beta[:, :] = 0.0
    # round 0: the diagonal tiles; rounds 1 .. nb - 1: the round-robin tiles. One
    # parallel loop and one call site, so the pair kernel is compiled into it once.
    # each tile is cut into nk ranges of slices: disjoint columns of the outputs, so
    # a round has ntiles * nk independent items (a small N gives few tiles)
    for r in range(nb):
        ntiles = nb if r == 0 else nb // 2
        for item in prange(ntiles * nk):
            i0, i1, j0, j1, s0, s1 = tile(r, item, nk, n, m, nb)
            for i in range(i0, i1):
                _pairs_of_row(code, half, p1, p0, c, U, A, i, i + 1 if j0 < 0 else j0, j1,
                              s0, s1, hrow, psirow, rho, beta, with_beta)
    hsum[:] = 0.0
    psisum[:] = 0.0
    for i in range(n):
        for k in range(m):
            hsum[k] += hrow[i, k]
            psisum[k] += psirow[i, k]
    return hsum
