r"""The Langevin Stein kernel and its bootstrap forms in any Array API namespace.

The same quantities as :func:`skstein.discrepancy.stein_sums_and_forms` (whose numba
pass is the CPU engine), written as dense array algebra so that they run where the
arrays live (a GPU with CuPy or PyTorch). For a block of rows ``a:b`` and its columns,
with centred points :math:`x`, scores :math:`s`, :math:`t = \|x_i - x_j\|^2` from the
norms and the Gram block, :math:`c = (s_i - s_j)^\top (x_i - x_j)`, and the radial
profile :math:`\kappa, \kappa', \kappa''` of each kernel (DESIGN section 3.2),

.. math::

    h_p(x_i, x_j) = \kappa\, s_i^\top s_j - 2\kappa' c - 2D\kappa' - 4t\kappa''

(zero on the diagonal). As on the CPU, a block of rows ``a:b`` takes the columns
``a:`` of the upper triangle, so each pair is computed once; its row and column sums
give the full rows. The ``L`` kernels of a collection are one ``(L, b - a, n - a)``
array per block, written in a few elementwise passes (their memory traffic is the
cost on a device); their bootstrap forms
:math:`\sum_{i \ne j} v_{mi} v_{mj} h_l(x_i, x_j)` are one batched product with the
weights (drawn on the host and copied over once, Rademacher signs as packed bits
unpacked there), in
:data:`skstein._bootstrap.FORM_DTYPE` on each kernel's block scaled by its largest
diagonal value, accumulated over blocks in double on the device, as on the CPU.
Temporaries stay within ``max_memory`` bytes (at least :data:`DEVICE_MAX_MEMORY`).
"""

import numpy as np

from ._bootstrap import FORM_DTYPE, PackedSigns
from ._validation import check_matrix_shape, resolve_score
from ._xp import check_same_namespace, to_host
from .discrepancy import DEFAULT_MAX_MEMORY, SteinSums, check_stein_finite

__all__ = ["xp_check_samples", "xp_evaluate_score", "xp_check_score_finite",
           "xp_sums_and_forms", "xp_stein_matrix", "DEVICE_MAX_MEMORY"]

#: Smallest memory budget (bytes) of a block on a device: a GPU runs a few large products
#: far faster than many small ones (at n = 20000 and 10 bandwidths the host's default of
#: 64 MiB would cut the matrices into 2500 blocks of 8 rows). A larger ``max_memory``
#: is used as given.
DEVICE_MAX_MEMORY = 2 * 2**30


def _float_dtype(xp, X):
    """X's dtype when it is a real floating type, else float64."""
    if X.dtype in (xp.float32, xp.float64):
        return X.dtype
    return xp.float64


def xp_check_samples(X, xp, name="X", min_samples=2):
    """Validate a sample of an Array API library: 2-D, real, finite, ``min_samples`` rows.

    Real floating arrays keep their precision (float32 data compute in float32);
    integer and boolean arrays become float64. Every error names ``name``.
    """
    check_matrix_shape(tuple(X.shape), name)
    if X.shape[0] < min_samples:
        raise ValueError(f"{name} has {X.shape[0]} sample(s) (shape={tuple(X.shape)}) while a "
                         f"minimum of {min_samples} is required.")
    kind = X.dtype
    if xp.isdtype(kind, "complex floating"):
        raise ValueError(f"Complex data not supported: {name} has dtype {kind}.")
    if not xp.isdtype(kind, ("real floating", "integral", "bool")):
        raise TypeError(f"{name} must hold real numbers, got dtype {kind}.")
    X = xp.astype(X, _float_dtype(xp, X))
    if not bool(xp.all(xp.isfinite(X))):
        raise ValueError(f"Input {name} contains NaN or infinity.")
    return X


def xp_evaluate_score(model, X, xp, name="model", check_finite=True):
    """The model's score at the rows of ``X``, validated, in ``X``'s namespace and dtype.

    The score sees a copy of ``X``. It must return an array of ``X``'s library and
    device and of its shape (a NumPy array for device data is an error naming the
    model, never a silent transfer), with finite values (checked unless
    ``check_finite`` is False: a loop that checks its results once per step, rather
    than wait for the device at every score, calls :func:`xp_check_score_finite`
    when that check fails).
    """
    score = resolve_score(model, name)
    dim = getattr(model, "dim", None)
    if dim is not None and not callable(dim) and int(dim) != X.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features but {name} is a distribution on "
                         f"{int(dim)} dimensions.")
    S = check_same_namespace(xp, X, score(xp.asarray(X, copy=True)), f"the score of {name}")
    if tuple(S.shape) != tuple(X.shape):
        raise ValueError(f"the score of {name} returned an array of shape {tuple(S.shape)} for "
                         f"X of shape {tuple(X.shape)}; it must return grad log p(x) for each "
                         "row of X.")
    S = xp.astype(S, X.dtype)
    if check_finite:
        xp_check_score_finite(S, xp, name)
    return S


def xp_check_score_finite(S, xp, name="model"):
    """Raise a ValueError naming ``name`` where the scores ``S`` are not finite."""
    if not bool(xp.all(xp.isfinite(S))):
        bad = int(xp.sum(xp.astype(~xp.all(xp.isfinite(S), axis=1), xp.int64)))
        raise ValueError(f"the score of {name} is not finite at {bad} of the {S.shape[0]} "
                         "rows of X.")


def _profile_params(kernels):
    """``(name, p0s, beta)``: the kernels' common base and per-kernel scale ``p0``.

    RBF: :math:`\\kappa = e^{-p_0 t}`, :math:`p_0 = 1/(2h^2)`; IMQ:
    :math:`\\kappa = (1 + p_0 t)^\\beta`, :math:`p_0 = 1/h^2`.
    """
    names = {k.name for k in kernels}
    betas = {getattr(k, "beta", None) for k in kernels}
    if len(names) != 1 or len(betas) != 1:
        raise ValueError("the kernels of a collection must share the base kernel.")
    name = names.pop()
    if name not in ("rbf", "imq"):
        raise ValueError(f"unsupported kernel {kernels[0]!r}")
    inv = np.array([(1.0 / k.bandwidth) / k.bandwidth for k in kernels])
    return name, (0.5 * inv if name == "rbf" else inv), betas.pop()


def _centred(xp, X, S):
    Xc = X - xp.mean(X, axis=0)
    return Xc, xp.sum(Xc * Xc, axis=1), xp.sum(S * Xc, axis=1)


def _grams(xp, Xc, S, nx, nsx, a, b, c):
    """``t``, ``S S^T`` and the cross term plus D for rows ``a:b``, columns ``c:``."""
    d = Xc.shape[1]
    Xa, Sa, Xt, St = Xc[a:b, :], S[a:b, :], Xc[c:, :], S[c:, :]
    t = Xa @ Xt.T
    t *= -2.0
    t += nx[a:b, None]
    t += nx[None, c:]
    t = xp.clip(t, 0.0, None)
    cross = Xa @ St.T
    cross += Sa @ Xt.T
    cross *= -1.0
    cross += nsx[a:b, None]
    cross += nsx[None, c:] + float(d)
    return t, Sa @ St.T, cross


def _stein_kernels(xp, t, SS, cross, name, beta, p0, scale):
    r"""The Stein kernels of scales ``p0`` (shape ``(L, 1, 1)``) times ``scale`` (same shape),
    ``(L,) + t.shape``, from the blocks of :func:`_grams` (``cross`` includes ``+D``).

    The profile written as few elementwise passes over the ``L`` stacked blocks (the
    cost on a device is their memory traffic):

    * RBF, :math:`\kappa = e^{-p t}`: :math:`h = \kappa\,(s s' + 2p\,(c - 2pt))`;
    * IMQ, :math:`\kappa = b^\beta`, :math:`b = 1 + pt`, :math:`u = 1/b`:
      :math:`h = \kappa\,(s s' + a u\,(c + \gamma t u))` with :math:`a = -2\beta p`,
      :math:`\gamma = 2(\beta - 1)p`; as :math:`\gamma t u = 2(\beta - 1)(1 - u)` and
      with the scale folded into the base, nine passes (twelve before),

    where :math:`c` is the cross term plus D; both equal
    :math:`\kappa s s' - 2\kappa' c - 4t\kappa''` (DESIGN section 3.2).
    """
    if name == "rbf":
        K = t[None, ...] * (-p0)
        if scale is not None:
            K += xp.log(scale)
        K = xp.exp(K)
        Q = t[None, ...] * (-2.0 * p0)
        Q += cross[None, ...]
        Q *= 2.0 * p0
    else:
        # sigma = scale^(1/beta) folds the scale into the base: B = sigma (1 + p t) gives
        # B^beta = scale kappa and 1 / B = u / sigma, so W = a / B with a = -2 beta p
        # sigma is -2 beta p u in one pass. Since p t u = 1 - u, the bracket
        # c + gamma t u is c + 2(beta - 1) + g u with g = -2(beta - 1), whose constant
        # joins the cross term once for all kernels: h = kappa (s s' + W (c - g
        # + (g sigma / a) W))
        sigma = 1.0 if scale is None else scale ** (1.0 / beta)
        B = t[None, ...] * (p0 * sigma)
        B += sigma
        K = B ** beta
        a = (-2.0 * beta) * p0 * sigma
        W = a / B
        g = -2.0 * (beta - 1.0)
        Q = W * (g * sigma / a)
        Q += (cross - g)[None, ...]
        Q *= W
    Q += SS[None, ...]
    Q *= K
    return Q


def _stein_block(xp, Xc, S, nx, nsx, a, b, p0, name, beta, scale=None, upper=False):
    """Rows ``a:b`` of the Stein matrices of the kernels with scales ``p0`` (shape (L, 1, 1)).

    Returns an ``(L, b - a, m)`` array: all columns (``m = n``) with zeros at ``(i, i)``,
    or with ``upper`` the columns ``a:`` (``m = n - a``) with zeros at and below the
    diagonal. ``scale`` (shape (L, 1, 1)) multiplies each kernel.
    """
    c = a if upper else 0
    t, SS, cross = _grams(xp, Xc, S, nx, nsx, a, b, c)
    H = _stein_kernels(xp, t, SS, cross, name, beta, p0, scale)
    del t, SS, cross
    # zero the diagonal (and, for upper, what lies below it): only the square (b - a)
    # columns of the block that hold row i's own index need it
    rows = xp.arange(b - a, device=_device(Xc))
    lo = 0 if upper else a
    keep = (rows[None, :] > rows[:, None]) if upper else (rows[None, :] != rows[:, None])
    H[:, :, lo:lo + b - a] = xp.where(keep[None, ...], H[:, :, lo:lo + b - a],
                                      xp.zeros_like(H[:1, :1, :1]))
    return H


def _device(A):
    import array_api_compat

    return array_api_compat.device(A)


def _rows_per_block(n, L, n_draws, itemsize, max_memory):
    """Rows of a block whose temporaries (Gram blocks, the L kernels, the forms' products)
    fit in ``max_memory`` bytes; ``n`` is the block's number of columns."""
    per_row = itemsize * n * (6 + 4 * L) + 4 * L * (n + n_draws)
    return int(max(1, min(n, max_memory // max(1, per_row))))


def xp_sums_and_forms(X, S, kernels, V, *, max_memory=DEFAULT_MAX_MEMORY, weights=None):
    """:func:`skstein.discrepancy.stein_sums_and_forms` on arrays of any Array API library.

    ``X`` and ``S`` are validated arrays of one library and device (:func:`xp_check_samples`,
    :func:`xp_evaluate_score`); ``V`` is the host's ``(n_draws, n)`` weights or None.
    Returns NumPy: a :class:`~skstein.discrepancy.SteinSums` per kernel (float64 sums when
    ``X`` is float64) and the forms, shape ``(n_draws, n_kernels)``, or None.

    The pass runs over blocks of rows ``a:b`` and the columns ``a:`` of the upper
    triangle, as on the CPU: each pair once, in one Gram product per block, the ``L``
    kernels stacked, their forms one batched product with the weights (copied over
    once, in single precision, and transposed there). Row sums, totals and forms are
    accumulated on the device in double precision and copied back once. ``weights``
    (the host's ``(n,)`` array, or None) tilt every kernel, :math:`w_i w_j h_l(x_i, x_j)`,
    as on the CPU.
    """
    import array_api_compat

    xp = array_api_compat.array_namespace(X, S)
    device = _device(X)
    n, d = X.shape
    name, p0s, beta = _profile_params(kernels)
    L = len(kernels)
    Xc, nx, nsx = _centred(xp, X, S)
    p0 = xp.asarray(p0s, dtype=X.dtype, device=device)[:, None, None]
    # h_l(x_i, x_i) = kappa_l(0) ||s_i||^2 - 2 D kappa_l'(0), on the host
    ss = to_host(xp.sum(S * S, axis=1)).astype(np.float64)
    diags = []
    for k in kernels:
        k0, k1, _ = k.profile(0.0)
        diags.append(float(k0) * ss - 2.0 * d * float(k1))
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float64)
        diags = [dg * (weights * weights) for dg in diags]
        wd = xp.asarray(weights, dtype=X.dtype, device=device)
    dmax = np.array([dg.max() for dg in diags])
    scale = np.ones(L)
    usable = np.isfinite(dmax) & (dmax > 0)
    scale[usable] = 1.0 / dmax[usable]
    n_draws = 0 if V is None else V.shape[0]
    f64 = xp.float64
    fscale = None
    if V is not None:
        # the weights in the forms' precision, one row per draw: W[:, a:].T is the
        # (n - a, n_draws) operand of a transposed product (no copy)
        fdtype = getattr(xp, np.dtype(FORM_DTYPE).name)
        W, wscale = _device_weights(xp, V, fdtype, device)
        fscale = xp.asarray(scale, dtype=X.dtype, device=device)[:, None, None]
        forms = xp.zeros((L, n_draws), dtype=f64, device=device)
    itemsize = 8 if X.dtype == xp.float64 else 4
    budget = max(max_memory, DEVICE_MAX_MEMORY)
    R = xp.zeros((L, n), dtype=f64, device=device)
    a = 0
    while a < n:
        b = min(n, a + _rows_per_block(n - a, L, n_draws, itemsize, budget))
        H = _stein_block(xp, Xc, S, nx, nsx, a, b, p0, name, beta, fscale, upper=True)
        if weights is not None:
            H *= (wd[a:b, None] * wd[None, a:])[None, ...]
        R[:, a:b] += xp.astype(xp.sum(H, axis=2), f64)
        R[:, a:] += xp.astype(xp.sum(H, axis=1), f64)
        if V is not None:
            Hf = xp.astype(H, fdtype, copy=False)
            del H
            P = Hf @ W[:, a:].T                                 # (L, b - a, n_draws)
            del Hf
            forms += xp.astype(xp.sum(P * W[:, a:b].T[None, ...], axis=1), f64)
        a = b
    R = to_host(R) / (scale[:, None] if V is not None else 1.0)
    # each pair once in the upper triangle: its row and column sums give the full rows
    totals = R.sum(axis=1)
    check_stein_finite(totals)
    sums = [SteinSums(n, float(totals[li]), diags[li], R[li], None) for li in range(L)]
    if V is None:
        return sums, None
    return sums, ((2.0 * wscale * wscale) * to_host(forms) / scale[:, None]).T.copy()


def _device_weights(xp, V, dtype, device):
    r"""``(W, s)``: the weights ``V / s`` on ``device`` in ``dtype``, one row per draw.

    Packed Rademacher signs (:class:`~skstein._bootstrap.PackedSigns`) cross as their
    bytes (an eighth of a byte per weight) and become the signs :math:`\pm 1` there, with
    ``s`` their scale; a dense array crosses as it is (``s = 1``) and is cast there.
    """
    if not isinstance(V, PackedSigns):
        return xp.astype(xp.asarray(V, device=device), dtype), 1.0
    M, n = V.shape
    B = xp.asarray(V.bits, device=device)
    shifts = xp.asarray(np.arange(8, dtype=np.uint8), device=device)
    E = xp.bitwise_and(xp.bitwise_right_shift(B[:, :, None], shifts[None, None, :]),
                       xp.asarray(1, dtype=B.dtype, device=device))
    E = xp.reshape(E, (M, B.shape[1] * 8))[:, :n]
    W = xp.astype(E, dtype)
    W *= 2.0
    W -= 1.0
    return W, V.scale


def xp_stein_matrix(X, S, kernel):
    """The Stein matrix with its diagonal, ``(n, n)``, in ``X``'s namespace."""
    import array_api_compat

    xp = array_api_compat.array_namespace(X, S)
    name, p0s, beta = _profile_params((kernel,))
    Xc, nx, nsx = _centred(xp, X, S)
    p0 = xp.asarray(p0s, dtype=X.dtype, device=_device(X))[:, None, None]
    H = _stein_block(xp, Xc, S, nx, nsx, 0, X.shape[0], p0, name, beta)[0, ...]
    k0, k1, _ = kernel.profile(0.0)
    diag = float(k0) * xp.sum(S * S, axis=1) - 2.0 * X.shape[1] * float(k1)
    return H + xp.eye(X.shape[0], dtype=X.dtype, device=_device(X)) * diag[:, None]
