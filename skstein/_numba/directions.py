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
"""

import numpy as np
from numba import njit, prange

from ._jit import PARALLEL

__all__ = ["cubic_slice_moments"]


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
