"""Slow, obviously-correct NumPy references for the tests."""

import numpy as np


def rbf_parts(x, y, h):
    """k, grad_x k, grad_y k, tr grad_x grad_y k for the RBF kernel, written out."""
    r = x - y
    d = x.size
    k = np.exp(-r @ r / (2 * h * h))
    gx = -r / h**2 * k
    gy = r / h**2 * k
    tr = k * (d / h**2 - r @ r / h**4)
    return k, gx, gy, tr


def imq_parts(x, y, h, beta):
    r = x - y
    d = x.size
    base = 1 + r @ r / h**2
    k = base**beta
    gx = 2 * beta / h**2 * base ** (beta - 1) * r
    gy = -gx
    # d/dy_l of gx_l = 2b/h^2 [ (b-1) base^(b-2) (-2 r_l / h^2) r_l - base^(b-1) ]
    tr = 2 * beta / h**2 * ((beta - 1) * base ** (beta - 2) * (-2 / h**2) * (r @ r)
                            - d * base ** (beta - 1))
    return k, gx, gy, tr


def stein_pair(x, y, sx, sy, parts):
    k, gx, gy, tr = parts(x, y)
    return k * sx @ sy + sx @ gy + sy @ gx + tr


def stein_matrix_loop(X, S, parts):
    n = X.shape[0]
    H = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            H[i, j] = stein_pair(X[i], X[j], S[i], S[j], parts)
    return H


def assert_forms_close(got, ref, V, H):
    """Bootstrap forms from single-precision products against exact ``v^T H v``.

    A product accumulated in float32 errs by at most a small multiple of the unit
    roundoff (2^-24) times the sum of the absolute terms; allow 2^-20 of that sum.
    """
    scale = np.einsum("mi,ij,mj->m", np.abs(V), np.abs(H), np.abs(V))
    err = np.abs(np.asarray(got) - ref)
    assert np.all(err <= 2.0**-20 * scale), float(np.max(err / scale))
