r"""Row-parallel feature passes of the linear-time Stein statistics.

Every kernel here fills rows of a feature matrix: row ``i`` belongs to sample
:math:`x_i` (score :math:`s_i`), column ``j * D + a`` to feature ``j`` and coordinate
``a``. One ``prange`` iteration owns one output row, so the values do not depend on
the number of threads.

FSSD (Jitkrittum et al. 2017), test locations :math:`v_j`, radial base kernel with
profile :math:`\kappa(t)` (see :mod:`skstein.kernels`), :math:`r = x - v_j`,
:math:`t = \|r\|^2`:

.. math::

    \xi_{ija} = c\,[\kappa(t)\, s_{ia} + 2\kappa'(t)\, r_a],

with :math:`c = 1/\sqrt{DJ}`. Random-feature Stein discrepancies (Huggins & Mackey
2018) with features :math:`z_j`, in log scale because importance weights and kernel
values can each leave the range of a double:

* IMQ: :math:`\log|\Xi_{ij}| = \ell_j + \beta \log(c^2 + \|x_i - z_j\|^2) - M`,
  :math:`\Xi_{ija} = e^{\log|\Xi_{ij}|}\,[s_{ia} + 2\beta (x_{ia} - z_{ja})
  / (c^2 + \|x_i - z_j\|^2)]`;
* hyperbolic secant with exponential tilt (centre :math:`m`, tilt :math:`\tau`,
  rate :math:`\rho`): :math:`\log|\Xi_{ij}| = \ell_j + \tau \sum_a \sqrt{1 + (x_{ia} - m_a)^2}
  - \sum_a \log\cosh(\rho (x_{ia} - z_{ja})) - M`,
  :math:`\Xi_{ija} = e^{\log|\Xi_{ij}|}\,[s_{ia} + \tau u_a / \sqrt{1 + u_a^2}
  - \rho \tanh(\rho (x_{ia} - z_{ja}))]`, :math:`u = x_i - m`;
* random Fourier features :math:`(\omega_j, b_j)`:
  :math:`\Xi_{ija} = c\,[\cos(\omega_j^\top x_i + b_j)\, s_{ia}
  - \sin(\omega_j^\top x_i + b_j)\, \omega_{ja}]`.

:math:`\ell_j` holds the per-feature constants (importance weights) and :math:`M` a
common shift, so that the largest value is of order one; values below :math:`e^{-700}`
of it are set to zero.
"""

import numpy as np
from numba import njit, prange

from ._jit import PARALLEL

from .stein import radial_profile


#: Relative magnitudes below exp(-700) (about 1e-304) are set to zero rather than left
#: as subnormal numbers, which slow every later product down.
_LOG_TINY = -700.0


@njit(cache=True, inline="always")
def _log_cosh(y):
    y = abs(y)
    return y + np.log1p(np.exp(-2.0 * y)) - np.log(2.0)


@njit(cache=True, inline="always")
def _sq_dist(X, i, V, j, d):
    r""":math:`\|x_i - v_j\|^2`, coordinates summed in order."""
    t = 0.0
    for a in range(d):
        r = X[i, a] - V[j, a]
        t += r * r
    return t


@njit(cache=True, inline="always")
def _tilt_sum(X, i, center, d):
    r""":math:`\sum_a \sqrt{1 + (x_{ia} - m_a)^2}`, the tilt's sum of the sech features."""
    tx = 0.0
    for a in range(d):
        u = X[i, a] - center[a]
        tx += np.sqrt(1.0 + u * u)
    return tx


@njit(cache=True, inline="always")
def _minus_log_cosh(acc, X, i, Z, j, rate, d):
    r"""``acc`` minus :math:`\sum_a \log\cosh(\rho (x_{ia} - z_{ja}))`, summed in order."""
    for a in range(d):
        acc -= _log_cosh(rate * (X[i, a] - Z[j, a]))
    return acc


@njit(cache=True, parallel=PARALLEL)
def fssd_feature_rows(code, p0, p1, X, S, V, scale, out):
    """FSSD feature rows ``out[i, j*D + a] = scale * (kappa s_ia + 2 kappa' (x_ia - v_ja))``.

    ``X``, ``S``: (B, D) samples and scores; ``V``: (J, D) locations; ``out``: (B, J*D).
    """
    n, d = X.shape
    J = V.shape[0]
    for i in prange(n):
        for j in range(J):
            t = _sq_dist(X, i, V, j, d)
            k, k1, _ = radial_profile(code, t, p0, p1)
            base = j * d
            for a in range(d):
                out[i, base + a] = scale * (k * S[i, a] + 2.0 * k1 * (X[i, a] - V[j, a]))
    return out


@njit(cache=True, parallel=PARALLEL)
def fssd_feature_adjoint(code, p0, p1, X, S, V, h, scale, G, grad_v, grad_h):
    r"""Pull an adjoint ``G`` of the feature rows back to the locations and the bandwidth.

    For :math:`\Xi = \texttt{fssd\_feature\_rows}(X, S, V)` and a matrix ``G`` of the
    same shape, writes :math:`\sum_{i,a} G_{i,ja} \partial \Xi_{i,ja} / \partial v_{jb}`
    into ``grad_v[j, b]`` and :math:`\sum_{i,a} G_{i,ja} \partial \Xi_{i,ja} / \partial h`
    into ``grad_h[j]``. With :math:`g = G_{i,j\cdot}`,

    .. math::

        \sum_a g_a \frac{\partial \xi_a}{\partial v_b} = -[2\kappa' g^\top s
        + 4\kappa'' g^\top r]\, r_b - 2\kappa' g_b, \qquad
        \sum_a g_a \frac{\partial \xi_a}{\partial h} = -\frac{2}{h}[t\kappa' g^\top s
        + 2(t\kappa'' + \kappa') g^\top r],

    the second because both kernels are scale families
    :math:`\kappa(t) = \varphi(t / h^2)`. One location per ``prange`` iteration.
    """
    n, d = X.shape
    J = V.shape[0]
    for j in prange(J):
        base = j * d
        acc_h = 0.0
        for b in range(d):
            grad_v[j, b] = 0.0
        for i in range(n):
            t = 0.0
            gs = 0.0
            gr = 0.0
            for a in range(d):
                r = X[i, a] - V[j, a]
                t += r * r
                g = G[i, base + a]
                gs += g * S[i, a]
                gr += g * r
            k, k1, k2 = radial_profile(code, t, p0, p1)
            coef = -(2.0 * k1 * gs + 4.0 * k2 * gr)
            for b in range(d):
                grad_v[j, b] += scale * (coef * (X[i, b] - V[j, b]) - 2.0 * k1 * G[i, base + b])
            acc_h += scale * (-2.0 / h) * (t * k1 * gs + 2.0 * (t * k2 + k1) * gr)
        grad_h[j] = acc_h
    return grad_v, grad_h


@njit(cache=True, parallel=PARALLEL)
def imq_log_magnitudes(X, Z, c2, beta, logc, out):
    """``out[i, j] = logc[j] + beta * log(c2 + ||x_i - z_j||^2)``; (B, J)."""
    n, d = X.shape
    J = Z.shape[0]
    for i in prange(n):
        for j in range(J):
            t = _sq_dist(X, i, Z, j, d)
            out[i, j] = logc[j] + beta * np.log(c2 + t)
    return out


@njit(cache=True, parallel=PARALLEL)
def imq_feature_rows(X, S, Z, c2, beta, logc, shift, out):
    """IMQ random-feature rows (see the module docstring); ``out``: (B, J*D)."""
    n, d = X.shape
    J = Z.shape[0]
    for i in prange(n):
        for j in range(J):
            t = _sq_dist(X, i, Z, j, d)
            base_t = c2 + t
            e = logc[j] + beta * np.log(base_t) - shift
            mag = np.exp(e) if e > _LOG_TINY else 0.0
            g = 2.0 * beta / base_t
            base = j * d
            for a in range(d):
                out[i, base + a] = mag * (S[i, a] + g * (X[i, a] - Z[j, a]))
    return out


@njit(cache=True, parallel=PARALLEL)
def sech_log_magnitudes(X, Z, center, tilt, rate, logc, out):
    """``out[i, j] = logc[j] + tilt sum_a sqrt(1 + u_a^2) - sum_a log cosh(rate (x_ia - z_ja))``
    with ``u = x_i - center``; (B, J)."""
    n, d = X.shape
    J = Z.shape[0]
    for i in prange(n):
        tx = _tilt_sum(X, i, center, d)
        for j in range(J):
            acc = logc[j] + tilt * tx
            acc = _minus_log_cosh(acc, X, i, Z, j, rate, d)
            out[i, j] = acc
    return out


@njit(cache=True, parallel=PARALLEL)
def sech_feature_rows(X, S, Z, center, tilt, rate, logc, shift, out):
    """Hyperbolic-secant random-feature rows with exponential tilt; ``out``: (B, J*D)."""
    n, d = X.shape
    J = Z.shape[0]
    for i in prange(n):
        tx = _tilt_sum(X, i, center, d)
        for j in range(J):
            acc = logc[j] + tilt * tx - shift
            acc = _minus_log_cosh(acc, X, i, Z, j, rate, d)
            mag = np.exp(acc) if acc > _LOG_TINY else 0.0
            base = j * d
            for a in range(d):
                u = X[i, a] - center[a]
                out[i, base + a] = mag * (S[i, a] + tilt * u / np.sqrt(1.0 + u * u)
                                          - rate * np.tanh(rate * (X[i, a] - Z[j, a])))
    return out


@njit(cache=True, parallel=PARALLEL)
def fourier_feature_rows(X, S, W, b, scale, out):
    """Random Fourier feature rows ``scale [cos(w_j.x + b_j) s_a - sin(w_j.x + b_j) w_ja]``."""
    n, d = X.shape
    J = W.shape[0]
    for i in prange(n):
        for j in range(J):
            arg = b[j]
            for a in range(d):
                arg += W[j, a] * X[i, a]
            c = scale * np.cos(arg)
            s = scale * np.sin(arg)
            base = j * d
            for a in range(d):
                out[i, base + a] = c * S[i, a] - s * W[j, a]
    return out


@njit(cache=True, parallel=PARALLEL)
def stein_pairs(code, p0, p1, X, Y, SX, SY, out):
    r"""Langevin Stein kernel of paired rows, :math:`h_p(x_i, y_i)`; ``out``: (B,).

    .. math::

        h_p(x, y) = \kappa\, s_x^\top s_y - 2\kappa' (s_x - s_y)^\top (x - y)
        - 2D\kappa' - 4t\kappa'', \qquad t = \|x - y\|^2.
    """
    n, d = X.shape
    for i in prange(n):
        t = 0.0
        ss = 0.0
        cross = 0.0
        for a in range(d):
            r = X[i, a] - Y[i, a]
            t += r * r
            ss += SX[i, a] * SY[i, a]
            cross += (SX[i, a] - SY[i, a]) * r
        k, k1, k2 = radial_profile(code, t, p0, p1)
        out[i] = k * ss - 2.0 * k1 * cross - 2.0 * d * k1 - 4.0 * t * k2
    return out
