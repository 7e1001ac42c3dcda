"""Gradients of the Stein discrepancies for model learning (skstein.learning)."""

from contextlib import nullcontext
from functools import partial

import numpy as np
import pytest

from _reference import imq_parts, rbf_parts, stein_matrix_loop
from skstein import ksd, max_sksd
from skstein._numba import numba_threads
from skstein._numba.learning import sliced_grad_upper
from skstein._numba.sliced import RBF, fast_exp_array, sliced_stein_rows
from skstein.discrepancy import sliced_value_and_grad
from skstein.distributions import Gaussian
from skstein.learning import (
    KSDLoss,
    MaxSKSDLoss,
    SteinGradient,
    ksd_value_and_grad,
    model_value_and_grad,
    sliced_ksd_value_and_grad,
)

KERNELS = [("rbf", None), ("imq", None), ("imq", {"beta": -0.3})]


def _parts(kernel, params, h):
    if kernel == "rbf":
        return partial(rbf_parts, h=h)
    beta = -0.5 if params is None else params["beta"]
    return partial(imq_parts, h=h, beta=beta)


def slow_ksd(X, S, kernel, params, h, statistic):
    H = stein_matrix_loop(X, S, _parts(kernel, params, h))
    n = X.shape[0]
    if statistic == "u":
        return (H.sum() - np.trace(H)) / (n * (n - 1))
    return H.sum() / n**2


def _kappa_1d(kernel, delta, h, beta):
    """1-D kernel and its derivatives in u_i, u_j and u_i u_j."""
    if kernel == "rbf":
        k = np.exp(-delta**2 / (2 * h**2))
        di = -delta / h**2 * k
        return k, di, -di, (1 / h**2 - delta**2 / h**4) * k
    base = 1 + delta**2 / h**2
    k = base**beta
    di = beta * base ** (beta - 1) * 2 * delta / h**2
    dij = -(2 * beta / h**2 * base ** (beta - 1)
            + 2 * beta * delta / h**2 * (beta - 1) * base ** (beta - 2) * 2 * delta / h**2)
    return k, di, -di, dij


def slow_sliced(X, S, G, R, h, kernel, params, statistic):
    """Sliced KSD by an explicit loop over pairs (i, j) and slices k."""
    beta = -0.5 if params is None else params.get("beta", -0.5)
    n = X.shape[0]
    G = G / np.linalg.norm(G, axis=1, keepdims=True)
    R = R / np.linalg.norm(R, axis=1, keepdims=True)
    total = 0.0
    for k in range(G.shape[0]):
        c = R[k] @ G[k]
        for i in range(n):
            for j in range(n):
                if statistic == "u" and i == j:
                    continue
                ui, uj = X[i] @ G[k], X[j] @ G[k]
                ai, aj = S[i] @ R[k], S[j] @ R[k]
                kk, di, dj, dij = _kappa_1d(kernel, ui - uj, h[k], beta)
                total += ai * aj * kk + ai * c * dj + aj * c * di + c * c * dij
    return total / (n * (n - 1) if statistic == "u" else n * n)


def _central_diff(f, A, eps=1e-5):
    """Central finite differences of the scalar f at every entry of A."""
    grad = np.empty_like(A)
    for idx in np.ndindex(A.shape):
        Ap, Am = A.copy(), A.copy()
        Ap[idx] += eps
        Am[idx] -= eps
        grad[idx] = (f(Ap) - f(Am)) / (2 * eps)
    return grad


def _problem(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    S = -X + 0.4 * rng.standard_normal((n, d))
    return X, S


# --- KSD -----------------------------------------------------------------------------


@pytest.mark.parametrize("kernel,params", KERNELS)
@pytest.mark.parametrize("statistic", ["u", "v"])
def test_ksd_value_matches_reference_and_ksd(kernel, params, statistic):
    X, S = _problem(23, 3)
    res = ksd_value_and_grad(X, S, kernel=kernel, bandwidth=1.3, kernel_params=params,
                             statistic=statistic)
    ref = slow_ksd(X, S, kernel, params, 1.3, statistic)
    assert isinstance(res, SteinGradient) and res.bandwidth == 1.3
    np.testing.assert_allclose(res.value, ref, rtol=1e-10, atol=1e-12)
    model = lambda Z: S  # noqa: E731  (the scores of these rows)
    np.testing.assert_allclose(res.value, ksd(X, model, kernel=kernel, bandwidth=1.3,
                                              kernel_params=params, statistic=statistic),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kernel,params", KERNELS)
@pytest.mark.parametrize("statistic", ["u", "v"])
def test_ksd_gradients_match_finite_differences(kernel, params, statistic):
    X, S = _problem(9, 3, seed=1)
    h = 1.1
    res = ksd_value_and_grad(X, S, kernel=kernel, bandwidth=h, kernel_params=params,
                             statistic=statistic)

    def f_s(Sp):
        return ksd_value_and_grad(X, Sp, kernel=kernel, bandwidth=h, kernel_params=params,
                                  statistic=statistic).value

    def f_x(Xp):
        return slow_ksd(Xp, S, kernel, params, h, statistic)

    np.testing.assert_allclose(res.grad_scores, _central_diff(f_s, S), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(res.grad_points, _central_diff(f_x, X), rtol=1e-6, atol=1e-8)


def test_ksd_gradients_do_not_depend_on_blocks_or_threads():
    X, S = _problem(57, 4, seed=2)
    ref = ksd_value_and_grad(X, S, bandwidth=0.9)
    for budget in (8, 3 * 8 * 57 * 5, 2**26):
        got = ksd_value_and_grad(X, S, bandwidth=0.9, max_memory=budget)
        np.testing.assert_allclose(got.value, ref.value, rtol=1e-12)
        np.testing.assert_allclose(got.grad_scores, ref.grad_scores, rtol=1e-11, atol=1e-14)
        np.testing.assert_allclose(got.grad_points, ref.grad_points, rtol=1e-11, atol=1e-14)
    big = _problem(400, 3, seed=3)  # above the serial threshold: the parallel row pass
    with numba_threads(1):
        a = ksd_value_and_grad(*big, bandwidth=1.0)
    b = ksd_value_and_grad(*big, bandwidth=1.0)
    assert a.value == b.value
    assert np.array_equal(a.grad_scores, b.grad_scores)
    assert np.array_equal(a.grad_points, b.grad_points)


def test_ksd_gradient_vanishes_in_sum_over_translations():
    # the KSD is translation invariant in X (scores fixed): sum_i dL/dx_i = 0
    X, S = _problem(30, 3, seed=4)
    res = ksd_value_and_grad(X, S, bandwidth=1.0)
    np.testing.assert_allclose(res.grad_points.sum(axis=0), 0.0, atol=1e-12)


# --- sliced KSD ------------------------------------------------------------------------


def _sliced_problem(n, d, m, seed=0):
    X, S = _problem(n, d, seed)
    rng = np.random.default_rng(seed + 100)
    G = rng.standard_normal((m, d))
    R = rng.standard_normal((m, d))
    h = rng.uniform(0.6, 1.8, size=m)
    return X, S, G / np.linalg.norm(G, axis=1, keepdims=True), \
        R / np.linalg.norm(R, axis=1, keepdims=True), h


@pytest.mark.parametrize("kernel,params", KERNELS)
@pytest.mark.parametrize("statistic", ["u", "v"])
def test_sliced_value_matches_reference(kernel, params, statistic):
    X, S, G, R, h = _sliced_problem(11, 3, 2)
    res = sliced_ksd_value_and_grad(X, S, G, R, kernel=kernel, bandwidth=h,
                                    kernel_params=params, statistic=statistic)
    ref = slow_sliced(X, S, G, R, h, kernel, params, statistic)
    np.testing.assert_allclose(res.value, ref, rtol=1e-10, atol=1e-12)
    model = lambda Z: S  # noqa: E731
    np.testing.assert_allclose(res.value, max_sksd(X, model, directions=G, slices=R,
                                                   kernel=kernel, bandwidth=h,
                                                   kernel_params=params, statistic=statistic),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kernel,params", KERNELS)
@pytest.mark.parametrize("statistic", ["u", "v"])
def test_sliced_gradients_match_finite_differences(kernel, params, statistic):
    X, S, G, R, h = _sliced_problem(8, 3, 2, seed=5)
    kw = dict(kernel=kernel, bandwidth=h, kernel_params=params, statistic=statistic)
    res = sliced_ksd_value_and_grad(X, S, G, R, grad_directions=True, grad_slices=True, **kw)

    def value(Xp=X, Sp=S, Gp=G, Rp=R):
        # unnormalised G, R: the gradient is with respect to the unit rows, and
        # perturbing a unit row along itself changes nothing after normalisation
        return slow_sliced(Xp, Sp, Gp, Rp, h, kernel, params, statistic)

    np.testing.assert_allclose(res.grad_scores, _central_diff(lambda A: value(Sp=A), S),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(res.grad_points, _central_diff(lambda A: value(Xp=A), X),
                               rtol=1e-6, atol=1e-8)

    def tangent(grad, M):
        return grad - np.sum(grad * M, axis=1, keepdims=True) * M

    fd_g = _central_diff(lambda A: value(Gp=A), G)
    fd_r = _central_diff(lambda A: value(Rp=A), R)
    # finite differences see the normalisation, i.e. the tangent part of the gradient
    np.testing.assert_allclose(tangent(res.grad_directions, G), fd_g, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tangent(res.grad_slices, R), fd_r, rtol=1e-6, atol=1e-8)


def test_sliced_gradients_in_directions_match_the_search_gradients():
    X, S, G, R, h = _sliced_problem(40, 5, 3, seed=6)
    values, gG, gR = sliced_value_and_grad(X, S, G, R, h, grad_slices=True)
    res = sliced_ksd_value_and_grad(X, S, G, R, bandwidth=h, grad_directions=True,
                                    grad_slices=True)
    np.testing.assert_allclose(res.value, values.sum(), rtol=1e-11)
    np.testing.assert_allclose(res.grad_directions, gG, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(res.grad_slices, gR, rtol=1e-9, atol=1e-13)


@pytest.mark.parametrize("code,p1", [(0, 0.0), (1, -0.5), (1, -0.3)])
def test_symmetric_pass_matches_row_pass(code, p1):
    X, S, G, R, h = _sliced_problem(37, 6, 4, seed=7)
    U, A = np.ascontiguousarray(X @ G.T), np.ascontiguousarray(S @ R.T)
    c = np.einsum("kd,kd->k", R, G)
    p0 = 1 / (2 * h**2) if code == 0 else 1 / h**2
    n, m = U.shape
    rows, rho, beta, psi = (np.empty((n, m)) for _ in range(4))
    sliced_stein_rows(code, p0, p1, U, A, c, 0, True, False, np.empty((1, 1)), rows, rho,
                      beta, psi)
    hs, ps = np.empty(m), np.empty(m)
    rho2, beta2 = np.empty((n, m)), np.empty((n, m))
    sliced_grad_upper(code, p0, p1, U, A, c, hs, rho2, beta2, ps)
    np.testing.assert_allclose(2 * hs, rows.sum(axis=0), rtol=1e-11)
    np.testing.assert_allclose(2 * ps, psi.sum(axis=0), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rho2, rho, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(beta2, beta, rtol=1e-10, atol=1e-12)
    # without beta: the other outputs bit for bit, beta left at zero
    hs3, ps3 = np.empty(m), np.empty(m)
    rho3, beta3 = np.empty((n, m)), np.full((n, m), np.nan)
    sliced_grad_upper(code, p0, p1, U, A, c, hs3, rho3, beta3, ps3, False)
    assert np.array_equal(hs3, hs) and np.array_equal(ps3, ps) and np.array_equal(rho3, rho2)
    assert not beta3.any()
    # ranges of slices per tile (for threads beyond the tiles): the same bits
    for chunks in (2, 3, m):
        hs4, ps4 = np.empty(m), np.empty(m)
        rho4, beta4 = np.empty((n, m)), np.empty((n, m))
        sliced_grad_upper(code, p0, p1, U, A, c, hs4, rho4, beta4, ps4, True, chunks)
        for a, b in ((hs4, hs), (ps4, ps), (rho4, rho2), (beta4, beta2)):
            assert np.array_equal(a, b)


def test_slice_chunks_fill_the_threads_turns():
    from skstein._numba.learning import (CHUNK_BALANCE, MIN_CHUNK_SLICES, pair_blocks,
                                         slice_chunks)

    assert slice_chunks(1000, 100, 16) == 1          # 16 tiles a round
    assert slice_chunks(200, 100, 2) == 1            # 6 tiles: 3 full turns of 2
    tiles = pair_blocks(200) // 2
    for threads in (3, 4, 16, 64):
        nk = slice_chunks(200, 100, threads)
        items = nk * tiles
        fill = items / (threads * -(-items // threads))
        assert fill >= CHUNK_BALANCE and 100 // nk >= MIN_CHUNK_SLICES
        # the fewest ranges that do so
        assert all(k * tiles / (threads * -(-(k * tiles) // threads)) < CHUNK_BALANCE
                   for k in range(1, nk))
    assert slice_chunks(200, 100, 16) == 5           # 30 items, 2 turns of 16: not 3 (18)
    assert slice_chunks(200, 12, 16) == 12 // MIN_CHUNK_SLICES


@pytest.mark.parametrize("n", [2, 3, 33, 64, 97, 1100])
def test_tiled_pass_covers_every_pair_once_for_any_thread_count(n):
    # the row blocks and round-robin tiles depend on n alone: every unordered pair is
    # visited once (checked against the full-row pass) and the numbers are bitwise the
    # same on one thread and on all of them
    from skstein._numba.learning import pair_blocks

    assert pair_blocks(n) % 2 == 0
    m = 3
    X, S, G, R, h = _sliced_problem(n, 4, m, seed=9)
    U, A = np.ascontiguousarray(X @ G.T), np.ascontiguousarray(S @ R.T)
    c = np.einsum("kd,kd->k", R, G)
    p0 = 1 / (2 * h**2)
    rows, rho, beta, psi = (np.empty((n, m)) for _ in range(4))
    sliced_stein_rows(RBF, p0, 0.0, U, A, c, 0, True, False, np.empty((1, 1)), rows, rho,
                      beta, psi)
    outs = []
    for threads in (1, None):
        hs, ps = np.empty(m), np.empty(m)
        rho2, beta2 = np.empty((n, m)), np.empty((n, m))
        with numba_threads(threads) if threads else nullcontext():
            sliced_grad_upper(RBF, p0, 0.0, U, A, c, hs, rho2, beta2, ps)
        outs.append((hs, ps, rho2, beta2))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
    hs, ps, rho2, beta2 = outs[0]
    np.testing.assert_allclose(2 * hs, rows.sum(axis=0), rtol=1e-10)
    np.testing.assert_allclose(2 * ps, psi.sum(axis=0), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(rho2, rho, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(beta2, beta, rtol=1e-9, atol=1e-12)


def test_fast_exp_under_contraction_is_accurate():
    # the symmetric pass is compiled with FMA contraction; its exp must stay accurate
    from numba import njit

    from skstein._numba.sliced import fast_exp

    @njit(fastmath={"contract"})
    def contracted(x, out):
        for i in range(x.size):
            out[i] = fast_exp(x[i])
        return out

    x = np.concatenate([-np.linspace(0, 745, 200001), [-708.2, -708.4, -1e-300]])
    out = contracted(x, np.empty_like(x))
    ref = np.exp(x)
    kept = x >= -708.3  # below, fast_exp gives exactly 0 (e^x < 2.5e-308)
    assert np.max(np.abs(out[kept] - ref[kept]) / ref[kept]) < 1e-14
    assert np.all(out[~kept] == 0.0) and np.all(ref[~kept] < 2.6e-308)
    np.testing.assert_array_equal(out[kept] > 0, True)
    plain = fast_exp_array(x, np.empty_like(x))
    np.testing.assert_allclose(out, plain, rtol=1e-14, atol=0)
    # and the pass itself: one pair, one slice, against the formula with np.exp
    U = np.array([[0.0], [3.0]])
    A = np.array([[0.5], [-1.0]])
    hs, ps = np.empty(1), np.empty(1)
    rho, beta = np.empty((2, 1)), np.empty((2, 1))
    sliced_grad_upper(RBF, np.array([0.5]), 0.0, U, A, np.array([1.0]), hs, rho, beta, ps)
    d, q = -3.0, 0.5
    e = np.exp(-d * d * q)
    w = 1 - 2 * d * d * q
    ref_h = e * (-0.5) + 2 * e * q * (d * 1.5 + w)
    np.testing.assert_allclose(hs[0], ref_h, rtol=1e-14)


# --- losses and the model protocol -------------------------------------------------------


class _GaussianMean:
    """N(mu, I) with parameter mu: score -(x - mu), d s_i / d mu = I."""

    def __init__(self, mu):
        self.mu = np.asarray(mu, dtype=float)
        self.dim = self.mu.size

    def grad_logpdf(self, X):
        return self.mu - X

    def grad_logpdf_vjp(self, X, V):
        return V.sum(axis=0)


@pytest.mark.parametrize("loss", [KSDLoss(bandwidth=1.0), KSDLoss(statistic="v"),
                                  MaxSKSDLoss(bandwidth=1.0, statistic="u")])
def test_model_gradient_matches_finite_differences(loss):
    from sklearn.base import clone

    X = np.random.default_rng(9).standard_normal((30, 3)) + 0.5
    mu = np.array([0.1, -0.2, 0.3])

    def value(m):
        return model_value_and_grad(clone(loss), _GaussianMean(m), X)[0]

    val, grad = model_value_and_grad(clone(loss), _GaussianMean(mu), X)
    np.testing.assert_allclose(val, value(mu))
    np.testing.assert_allclose(grad, _central_diff(value, mu), rtol=1e-6, atol=1e-9)


def test_training_the_mean_by_either_loss_finds_it():
    rng = np.random.default_rng(10)
    data = rng.standard_normal((2000, 3)) + np.array([1.0, -2.0, 0.5])
    for loss in (KSDLoss(), KSDLoss(kernel="imq", statistic="v"),
                 MaxSKSDLoss(random_state=0, learning_rate=0.01)):
        model = _GaussianMean(np.zeros(3))
        path = []
        for step in range(400):  # SGD with a decaying step, Polyak average of the last half
            batch = data[rng.choice(2000, 100, replace=False)]
            _, g = loss.model_value_and_grad(model, batch)
            model.mu = model.mu - 0.5 / (1 + step / 50) * g
            path.append(model.mu)
        np.testing.assert_allclose(np.mean(path[200:], axis=0), data.mean(axis=0), atol=0.1)


def test_maxsksd_loss_ascends_its_directions():
    # data with one heavy-tailed direction against a standard normal model: the
    # directions move and the held-out sliced KSD along them grows
    rng = np.random.default_rng(11)
    d = 4
    Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    Z = rng.standard_normal((4000, d))
    Z[:, 0] = rng.laplace(size=4000) / np.sqrt(2)
    X = Z @ Q.T
    loss = MaxSKSDLoss(learning_rate=0.05, statistic="u", random_state=0)
    start = loss.value_and_grad(X[:200], -X[:200], update=False).value
    assert loss.n_iter_ == 0
    for t in range(100):
        batch = X[200 + 30 * t: 230 + 30 * t]
        res = loss.value_and_grad(batch, -batch)
        assert res.grad_directions.shape == (d, d)
    end = loss.value_and_grad(X[:200], -X[:200], update=False).value
    assert loss.n_iter_ == 100
    assert end > 2 * start
    assert not np.allclose(loss.directions_, np.eye(d))
    np.testing.assert_allclose(np.linalg.norm(loss.directions_, axis=1), 1.0)


def test_maxsksd_loss_rg_and_n_ascent():
    X = np.random.default_rng(12).standard_normal((40, 5))
    loss = MaxSKSDLoss(variant="rg", n_slices=2, n_ascent=3, learning_rate=0.01,
                       random_state=0)
    res = loss.value_and_grad(X, -0.5 * X)
    assert loss.slices_.shape == (2, 5) and res.grad_slices.shape == (2, 5)
    np.testing.assert_allclose(loss.slices_ @ loss.slices_.T, np.eye(2), atol=1e-12)
    # same seed, same numbers
    again = MaxSKSDLoss(variant="rg", n_slices=2, n_ascent=3, learning_rate=0.01,
                        random_state=0)
    assert again.value_and_grad(X, -0.5 * X).value == res.value
    np.testing.assert_array_equal(again.directions_, loss.directions_)


def test_bandwidth_every_keeps_the_bandwidth_between_estimates():
    rng = np.random.default_rng(13)
    loss = KSDLoss(bandwidth_every=3)
    mloss = MaxSKSDLoss(bandwidth_every=3)
    seen, mseen = [], []
    for t in range(6):
        X = rng.standard_normal((30, 2)) * (1 + t)
        loss.value_and_grad(X, -X)
        mloss.value_and_grad(X, -X)
        seen.append(loss.bandwidth_)
        mseen.append(mloss.bandwidth_.copy())
    assert seen[0] == seen[1] == seen[2] != seen[3] == seen[4] == seen[5]
    assert np.array_equal(mseen[0], mseen[2]) and not np.array_equal(mseen[2], mseen[3])


def test_validation_errors():
    X = np.zeros((5, 2)) + np.arange(5)[:, None]
    with pytest.raises(ValueError, match="S must have the shape"):
        ksd_value_and_grad(X, np.zeros((5, 3)), bandwidth=1.0)
    with pytest.raises(ValueError, match="statistic"):
        ksd_value_and_grad(X, X, statistic="w")
    with pytest.raises(ValueError):
        ksd_value_and_grad(X, np.full((5, 2), np.nan), bandwidth=1.0)
    with pytest.raises(ValueError, match="directions"):
        sliced_ksd_value_and_grad(X, X, np.ones((2, 3)))
    with pytest.raises(ValueError, match="betas"):
        MaxSKSDLoss(betas=(0.9, 1.5)).value_and_grad(X, X)
    loss = MaxSKSDLoss()
    loss.value_and_grad(X, X)
    with pytest.raises(ValueError, match="features"):
        loss.value_and_grad(np.ones((5, 3)) * np.arange(5)[:, None], np.ones((5, 3)))
    with pytest.raises(TypeError, match="grad_logpdf_vjp"):
        model_value_and_grad(KSDLoss(), Gaussian(np.zeros(2)), X)


def test_ascent_first_order_evaluates_at_the_updated_directions():
    rng = np.random.default_rng(14)
    X = rng.standard_normal((40, 3))
    S = -0.5 * X
    first = MaxSKSDLoss(order="ascent-first", learning_rate=0.05, bandwidth=1.0)
    res = first.value_and_grad(X, S)
    simul = MaxSKSDLoss(learning_rate=0.05, bandwidth=1.0)
    r0 = simul.value_and_grad(X, S)
    # same single ascent step from the identity: the same directions afterwards
    np.testing.assert_allclose(first.directions_, simul.directions_)
    # ascent-first evaluated there; simultaneous evaluated at the identity
    at_new = sliced_ksd_value_and_grad(X, S, simul.directions_, bandwidth=1.0, statistic="v")
    at_old = sliced_ksd_value_and_grad(X, S, np.eye(3), bandwidth=1.0, statistic="v")
    np.testing.assert_allclose(res.value, at_new.value, rtol=1e-12)
    np.testing.assert_allclose(r0.value, at_old.value, rtol=1e-12)
    np.testing.assert_allclose(res.grad_scores, at_new.grad_scores, rtol=1e-12)
    assert res.value > r0.value
    with pytest.raises(ValueError, match="order"):
        MaxSKSDLoss(order="later").value_and_grad(X, S)


# --- losses in whitened coordinates -------------------------------------------------


def _correlated_batch(seed, n=40):
    rng = np.random.default_rng(seed)
    L = np.array([[3.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.2, 0.1]])
    X = rng.standard_normal((n, 3)) @ L.T
    return X, -0.7 * X + 0.1 * rng.standard_normal((n, 3))


@pytest.mark.parametrize("make", [partial(KSDLoss, bandwidth=1.3),
                                  partial(KSDLoss, statistic="v"),
                                  partial(MaxSKSDLoss, bandwidth=0.8, statistic="u"),
                                  partial(MaxSKSDLoss, variant="rg", n_slices=2)])
def test_whitened_loss_is_the_loss_of_the_mapped_batch(make):
    from skstein.kernels import whitening

    X, S = _correlated_batch(20)
    A, B = whitening(X)
    white = make(whiten=A, random_state=0)
    plain = make(random_state=0)
    for _ in range(3):  # the directions of MaxSKSDLoss move alike in both
        res = white.value_and_grad(X, S)
        ref = plain.value_and_grad(X @ A, S @ np.linalg.inv(A).T)
        np.testing.assert_allclose(res.value, ref.value, rtol=1e-10)
        np.testing.assert_allclose(res.grad_scores, ref.grad_scores @ B.T, rtol=1e-8,
                                   atol=1e-12)
        np.testing.assert_allclose(res.grad_points, ref.grad_points @ A.T, rtol=1e-8,
                                   atol=1e-12)
    np.testing.assert_allclose(white.whitening_[1], B, rtol=1e-10)
    if hasattr(white, "directions_"):
        np.testing.assert_allclose(white.directions_, plain.directions_, rtol=1e-8)


@pytest.mark.parametrize("loss", [KSDLoss(bandwidth=1.0, whiten=True),
                                  MaxSKSDLoss(bandwidth=1.0, statistic="u", whiten=True)])
def test_whitened_gradients_match_finite_differences(loss):
    from sklearn.base import clone

    X, S = _correlated_batch(21, n=25)
    first = clone(loss)
    kw = {} if isinstance(loss, KSDLoss) else {"update": False}
    res = first.value_and_grad(X, S, **kw)
    A = first.whitening_[0]
    np.testing.assert_allclose(first.whitening_[0] @ first.whitening_[1].T, np.eye(3),
                               atol=1e-12)

    def value(Xv, Sv):  # the same map A, whatever the evaluated batch
        return clone(loss).set_params(whiten=A).value_and_grad(Xv, Sv, **kw).value

    E = np.random.default_rng(22).standard_normal(X.shape)
    eps = 1e-6
    fd_s = (value(X, S + eps * E) - value(X, S - eps * E)) / (2 * eps)
    fd_x = (value(X + eps * E, S) - value(X - eps * E, S)) / (2 * eps)
    np.testing.assert_allclose(np.sum(res.grad_scores * E), fd_s, rtol=1e-6)
    np.testing.assert_allclose(np.sum(res.grad_points * E), fd_x, rtol=1e-6)


def test_whiten_true_keeps_the_first_batch_map_and_bad_maps_are_refused():
    X, S = _correlated_batch(23)
    loss = MaxSKSDLoss(whiten=True)
    loss.value_and_grad(X, S)
    A = loss.whitening_[0].copy()
    loss.value_and_grad(3.0 * X, S / 3.0)
    np.testing.assert_array_equal(loss.whitening_[0], A)
    for bad, match in [("aggregate", "got 'aggregate'"), (np.eye(2), r"shape \(2, 2\)"),
                       (np.zeros((3, 3)), "singular"),
                       (np.full((3, 3), np.nan), "non-finite"), (None, "got None")]:
        for make in (KSDLoss, MaxSKSDLoss):
            with pytest.raises(ValueError, match="whiten must be True, False or an "
                                                 "invertible array of shape \\(3, 3\\)"):
                make(whiten=bad).value_and_grad(X, S)
            with pytest.raises(ValueError, match=match):
                make(whiten=bad).value_and_grad(X, S)
    loss = KSDLoss(whiten=True)
    loss.value_and_grad(X, S)
    with pytest.raises(ValueError, match="features"):
        loss.value_and_grad(X[:, :2], S[:, :2])
    # a first batch that cannot be whitened leaves the loss unstarted
    same = np.ones((5, 3))
    for make in (KSDLoss, MaxSKSDLoss):
        loss = make(whiten=True)
        with pytest.raises(ValueError, match="cannot be whitened"):
            loss.value_and_grad(same, -same)
        assert loss.value_and_grad(X, S).grad_scores.shape == X.shape
