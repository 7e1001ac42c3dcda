r"""The cubic Stein moment of the maxSKSD-g start, one slice per parallel iteration.

The ``"cubic"`` start of maxSKSD-g (:func:`skstein.directions._cubic_start`) looks, for
every slice :math:`k` (the axis :math:`e_k`), for the direction :math:`g_k` that
maximises the Stein moment with the test function :math:`\varphi(u) = u^3`,

.. math::

    f_k(g) = \frac1n \sum_{i=1}^n \left(s_{ik} u_i^3 + 3 g_k u_i^2\right),
    \qquad u_i = \tilde x_i^\top g,

(:math:`\tilde x_i` the standardised points, :math:`s_{ik}` the model's score, and
:math:`g_k` the ``k``-th entry of :math:`g`), by the fixed point
:math:`g \leftarrow \operatorname{sign}(f_k)\,\nabla f_k / \|\nabla f_k\|` with

.. math::

    \nabla f_k(g) = \frac1n \sum_{i=1}^n \left(3 s_{ik} u_i^2 + 6 g_k u_i\right) \tilde x_i
    + \frac3n \sum_{i=1}^n u_i^2 \; e_k.

:func:`cubic_slice_moments` evaluates :math:`f_k(g_k)` and :math:`\nabla f_k(g_k)` for all
slices at once. Its parallel loop runs over the slices, each iteration owning its
entry of ``values`` and its row of ``grad`` and summing over the points in a fixed
order, so the results are bitwise identical for any number of threads.

:func:`fastica_deflation` runs the deflationary FastICA of the ``"ica"`` start
(:func:`skstein.directions.independent_directions`): thousands of short fixed-point
steps, each one parallel pass over fixed blocks of rows.
"""

import numpy as np
from numba import njit, prange

from ._jit import PARALLEL
from .sliced import fast_exp

__all__ = ["cubic_slice_moments", "fastica_deflation"]


@njit(cache=True, parallel=PARALLEL)
def cubic_slice_moments(X, XT, ST, G, values, grad):
    r"""Values and gradients of the cubic Stein moments :math:`f_k(g_k)`, all slices.

    For slice ``k``, with ``g = G[k]`` and ``u = X @ g``,

    .. math::

        \mathrm{values}_k = \frac1n \sum_i s_{ik} u_i^3
        + 3 G_{kk} \frac1n \sum_i u_i^2,

        \mathrm{grad}_{k\cdot} = \frac1n \sum_i \left(3 s_{ik} u_i^2 + 6 G_{kk} u_i\right) x_i
        + 3 \left(\frac1n \sum_i u_i^2\right) e_k.

    Parameters
    ----------
    X : float64 array (n, d), C-contiguous
        The standardised points.
    XT : float64 array (d, n), C-contiguous
        ``X`` transposed (the projections are sums of its rows).
    ST : float64 array (d, n), C-contiguous
        The scores transposed: ``ST[k, i]`` is :math:`s_{ik}`.
    G : float64 array (d, d)
        One direction per slice (row ``k`` for slice ``k``).
    values : float64 array (d,)
        Output.
    grad : float64 array (d, d)
        Output, row ``k`` the gradient of slice ``k``.
    """
    d = G.shape[0]
    for kp in prange(d):
        _slice_moment(X, XT, ST, G, np.int64(kp), values, grad)
    return values, grad


@njit(cache=True)
def _slice_moment(X, XT, ST, G, k, values, grad):
    """Slice ``k`` of :func:`cubic_slice_moments` (compiled once, called from its loop)."""
    n, d = X.shape
    g = G[k]
    s = ST[k]
    u = np.zeros(n)
    for j in range(d):  # u = X @ g as a sum of the rows of XT (a vectorised update)
        gj = g[j]
        xj = XT[j]
        for i in range(n):
            u[i] += gj * xj[i]
    gkk = G[k, k]
    cube = 0.0
    square = 0.0
    row = grad[k]
    row[:] = 0.0
    for i in range(n):
        ui = u[i]
        su2 = s[i] * ui * ui
        cube += su2 * ui
        square += ui * ui
        c = 3.0 * su2 + 6.0 * gkk * ui
        xi = X[i]
        for j in range(d):
            row[j] += c * xi[j]
    inv = 1.0 / n
    for j in range(d):
        row[j] *= inv
    mean_square = square * inv
    row[k] += 3.0 * mean_square
    values[k] = cube * inv + 3.0 * gkk * mean_square


#: Rows per block of :func:`fastica_deflation`'s passes (fixed: the sums do not depend
#: on the number of threads).
ICA_BLOCK = 32


@njit(cache=True, parallel=PARALLEL)
def fastica_deflation(Z, W0, max_iter, tol):
    r"""Deflationary FastICA with the log-cosh contrast on whitened points ``Z``.

    For each start ``W0[q]`` in turn: remove its part along the directions found
    before, normalise, and iterate :math:`w \leftarrow E[z \tanh(w^\top z)] - E[1 -
    \tanh^2(w^\top z)]\, w`, deflated and normalised after every step, at most
    ``max_iter`` steps, until :math:`1 - |w_{new}^\top w| <` ``tol`` (or the step
    vanishes). Each step is one parallel pass over blocks of :data:`ICA_BLOCK` rows,
    whose partial sums are added in block order.

    Parameters
    ----------
    Z : float64 (n, r), C-contiguous
    W0 : float64 (k, r)
        The random starts, ``k <= r``.
    max_iter : int
    tol : float

    Returns
    -------
    float64 (k, r)
        The unit directions found, in the whitened coordinates.
    """
    n, r = Z.shape
    k = W0.shape[0]
    nb = (n + ICA_BLOCK - 1) // ICA_BLOCK
    found = np.zeros((k, r))
    ZT = np.ascontiguousarray(Z.T)
    part = np.empty((nb, r))
    curv = np.empty(nb)
    # the serial steps are calls of compiled helpers: an array expression here would be
    # compiled as one more function of its own (numba's parallel pipeline)
    for q in range(k):
        w = W0[q].copy()
        _deflate(found, q, w)
        _normalise(w)
        new = np.empty(r)
        for _ in range(max_iter):
            for bp in prange(nb):
                b = np.int64(bp)
                curv[b] = _ica_block(Z, ZT, w, b * ICA_BLOCK,
                                     min(n, (b + 1) * ICA_BLOCK), part[b])
            _fixed_point(part, curv, n, w, new)
            _deflate(found, q, new)
            if _normalise(new) == 0:
                break
            moved = 1.0 - abs(_dot(new, w))
            w, new = new, w
            if moved < tol:
                break
        found[q] = w
    return found


@njit(cache=True)
def _fixed_point(part, curv, n, w, new):
    """``new = (sum of the blocks' parts) / n - (sum of curv) / n * w``, blocks in order."""
    r = w.shape[0]
    new[:] = 0.0
    c = 0.0
    for b in range(part.shape[0]):
        row = part[b]
        for a in range(r):
            new[a] += row[a]
        c += curv[b]
    c /= n
    for a in range(r):
        new[a] = new[a] / n - c * w[a]


@njit(cache=True)
def _dot(x, y):
    s = 0.0
    for a in range(x.shape[0]):
        s += x[a] * y[a]
    return s


@njit(cache=True)
def _normalise(w):
    """Divide ``w`` by its norm in place (unless zero); returns the norm."""
    norm = np.sqrt(_dot(w, w))
    if norm != 0:
        for a in range(w.shape[0]):
            w[a] /= norm
    return norm


@njit(cache=True, fastmath={"contract"})
def _ica_block(Z, ZT, w, lo, hi, acc):
    """Rows ``lo:hi``: ``acc = sum_i z_i tanh(w.z_i)``; returns ``sum_i (1 - tanh^2)``.

    The projections accumulate over the columns of ``ZT`` (``Z`` transposed), and the
    hyperbolic tangents come from :func:`_tanh`: loops that vectorise.
    """
    r = Z.shape[1]
    u = np.zeros(hi - lo)
    for a in range(r):
        col = ZT[a, lo:hi]
        wa = w[a]
        for i in range(hi - lo):
            u[i] += col[i] * wa
    curv = 0.0
    for i in range(hi - lo):
        t = _tanh(u[i])
        u[i] = t
        curv += 1.0 - t * t
    acc[:] = 0.0
    for i in range(hi - lo):
        t = u[i]
        z = Z[lo + i]
        for a in range(r):
            acc[a] += t * z[a]
    return curv


@njit(cache=True, inline="always")
def _tanh(u):
    """tanh(u) from one :func:`~skstein._numba.sliced.fast_exp` (branch-free)."""
    e = fast_exp(-2.0 * abs(u))
    t = (1.0 - e) / (1.0 + e)
    return t if u >= 0.0 else -t


@njit(cache=True)
def _deflate(found, q, w):
    """``w -= F^T (F w)`` with ``F`` the first ``q`` rows of ``found``, in place."""
    r = w.shape[0]
    coef = np.zeros(q)
    for j in range(q):
        s = 0.0
        for a in range(r):
            s += found[j, a] * w[a]
        coef[j] = s
    for j in range(q):
        for a in range(r):
            w[a] -= found[j, a] * coef[j]
