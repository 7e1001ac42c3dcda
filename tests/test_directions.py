"""Direction search (skstein.directions)."""

import numpy as np
import pytest

from skstein.directions import (
    _orthonormal_rows,
    _tangent_stiefel,
    _tangent_unit_rows,
    _unit_rows,
    search_directions,
)
from skstein.discrepancy import sliced_stein_sums, sliced_value_and_grad
from skstein.distributions import Gaussian, gaussian_diffusion


def _problem(n=40, d=4, m=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.linspace(0.5, 1.5, d)
    S = -X
    V = rng.standard_normal((m, d))
    W = rng.standard_normal((m, d))
    h = rng.uniform(0.6, 1.5, size=m)
    return X, S, V, W, h


@pytest.mark.parametrize("kernel", ["rbf", "imq"])
def test_gradient_through_unit_norm_parameterisation(kernel):
    # g = v / ||v||: d/dv of the objective is the tangent projection of the gradient / ||v||
    X, S, V, W, h = _problem()
    R = _unit_rows(W)

    def f(Vm):
        return sliced_stein_sums(X, S, _unit_rows(Vm), R, h, kernel=kernel).statistic()

    G = _unit_rows(V)
    _, gG, _ = sliced_value_and_grad(X, S, G, R, h, kernel=kernel)
    analytic = _tangent_unit_rows(gG, G) / np.linalg.norm(V, axis=1, keepdims=True)
    eps = 1e-6
    fd = np.zeros_like(V)
    for idx in np.ndindex(*V.shape):
        P, Q = V.copy(), V.copy()
        P[idx] += eps
        Q[idx] -= eps
        fd[idx] = (f(P) - f(Q)) / (2 * eps)
    np.testing.assert_allclose(analytic, fd, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("kernel", ["rbf", "imq"])
def test_slice_gradient_through_unit_norm_parameterisation(kernel):
    X, S, V, W, h = _problem(seed=1)
    G = _unit_rows(V)

    def f(Wm):
        return sliced_stein_sums(X, S, G, _unit_rows(Wm), h, kernel=kernel).statistic()

    R = _unit_rows(W)
    _, _, gR = sliced_value_and_grad(X, S, G, R, h, kernel=kernel, grad_slices=True)
    analytic = _tangent_unit_rows(gR, R) / np.linalg.norm(W, axis=1, keepdims=True)
    eps = 1e-6
    fd = np.zeros_like(W)
    for idx in np.ndindex(*W.shape):
        P, Q = W.copy(), W.copy()
        P[idx] += eps
        Q[idx] -= eps
        fd[idx] = (f(P) - f(Q)) / (2 * eps)
    np.testing.assert_allclose(analytic, fd, rtol=1e-6, atol=1e-9)


def test_stiefel_tangent_and_retraction():
    rng = np.random.default_rng(0)
    R = _orthonormal_rows(rng.standard_normal((3, 6)))
    np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-12)
    T = _tangent_stiefel(rng.standard_normal((3, 6)), R)
    A = T @ R.T
    np.testing.assert_allclose(A + A.T, 0, atol=1e-12)  # tangent: R T^T skew


def test_ascent_increases_training_objective():
    rng = np.random.default_rng(0)
    d = 5
    X = gaussian_diffusion(d, 0.3).rvs(200, random_state=rng)
    model = Gaussian(np.zeros(d))
    start = search_directions(X, model, init="random", max_iter=0, validation_fraction=0,
                              bandwidth=1.0, random_state=1)
    res = search_directions(X, model, init="random", max_iter=60, learning_rate=0.05,
                            validation_fraction=0, bandwidth=1.0, random_state=1)
    assert res.objective > start.objective
    assert res.n_iter >= 1
    np.testing.assert_allclose(np.linalg.norm(res.directions, axis=1), 1.0)
    gd = search_directions(X, model, init="random", max_iter=60, optimizer="gd",
                           learning_rate=1.0, schedule="constant", validation_fraction=0,
                           bandwidth=1.0, random_state=1)
    assert gd.objective > start.objective


def test_rg_slices_stay_orthonormal():
    rng = np.random.default_rng(1)
    X = gaussian_diffusion(6, 0.3).rvs(120, random_state=rng)
    res = search_directions(X, Gaussian(np.zeros(6)), variant="rg", n_slices=3, init="random",
                            max_iter=20, learning_rate=0.05, n_restarts=2, random_state=0)
    assert res.slices.shape == (3, 6) and res.directions.shape == (3, 6)
    np.testing.assert_allclose(res.slices @ res.slices.T, np.eye(3), atol=1e-10)
    np.testing.assert_allclose(np.linalg.norm(res.directions, axis=1), 1.0)
    assert res.bandwidth.shape == (3,)


def test_identity_init_zero_iterations_is_identity():
    X = np.random.default_rng(2).standard_normal((50, 4))
    res = search_directions(X, Gaussian(np.zeros(4)), init="identity", max_iter=0)
    np.testing.assert_array_equal(res.directions, np.eye(4))
    np.testing.assert_array_equal(res.slices, np.eye(4))
    assert res.n_iter == 0


def test_same_seed_same_directions():
    X = np.random.default_rng(3).standard_normal((80, 5))
    kw = dict(variant="rg", n_slices=2, init="random", max_iter=10, random_state=7)
    a = search_directions(X, Gaussian(np.zeros(5)), **kw)
    b = search_directions(X, Gaussian(np.zeros(5)), **kw)
    np.testing.assert_array_equal(a.directions, b.directions)
    np.testing.assert_array_equal(a.slices, b.slices)


def test_array_init():
    X = np.random.default_rng(4).standard_normal((60, 3))
    G0 = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    res = search_directions(X, Gaussian(np.zeros(3)), init=G0, max_iter=0)
    np.testing.assert_allclose(res.directions, _unit_rows(G0))
    R0 = np.eye(3)[:2]
    res = search_directions(X, Gaussian(np.zeros(3)), variant="rg", n_slices=2,
                            init=(R0, R0), max_iter=0)
    np.testing.assert_allclose(res.slices, R0)


def test_free_slices_turn_to_the_same_direction():
    # the score difference lies along v: free slices both turn towards v, while
    # orthonormal slices share it (sum of (r_k . v)^2 is at most 1)
    d = 5
    v = np.array([1.0, 1.0, 0.0, 0.0, 0.0]) / np.sqrt(2)
    X = np.random.default_rng(5).standard_normal((400, d)) + 0.8 * v
    kw = dict(variant="rg", n_slices=2, init="identity", max_iter=150, learning_rate=0.05,
              schedule="constant", patience=150, validation_fraction=0.0, random_state=0)
    free = search_directions(X, Gaussian(np.zeros(d)), orthogonal_slices=False, **kw)
    ortho = search_directions(X, Gaussian(np.zeros(d)), **kw)
    np.testing.assert_allclose(np.linalg.norm(free.slices, axis=1), 1.0)
    assert np.all(np.abs(free.slices @ v) > 0.9)
    np.testing.assert_allclose(ortho.slices @ ortho.slices.T, np.eye(2), atol=1e-10)
    assert free.objective > 1.3 * ortho.objective


def test_free_slices_keep_a_user_start():
    X = np.random.default_rng(4).standard_normal((60, 3))
    R0 = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])
    res = search_directions(X, Gaussian(np.zeros(3)), variant="rg", n_slices=2,
                            init=(R0, R0), max_iter=0, orthogonal_slices=False)
    np.testing.assert_allclose(res.slices, _unit_rows(R0))


@pytest.mark.parametrize("kwargs,match", [
    (dict(variant="x"), "variant"),
    (dict(variant="rg", orthogonal_slices="no"), "orthogonal_slices"),
    (dict(optimizer="sgd"), "optimizer"),
    (dict(schedule="step"), "schedule"),
    (dict(learning_rate=0.0), "learning_rate"),
    (dict(max_iter=-1), "max_iter"),
    (dict(patience=0), "patience"),
    (dict(n_restarts=0), "n_restarts"),
    (dict(init="pca"), "init"),
    (dict(init=np.eye(2)), "init"),
    (dict(tol=-1.0), "tol"),
    (dict(validation_fraction=1.0), "validation_fraction"),
    (dict(variant="g", n_slices=2), "n_slices"),
    (dict(variant="rg", n_slices=9), "n_slices"),
    (dict(kernel="laplace"), "kernel"),
    (dict(bandwidth="scott"), "bandwidth"),
])
def test_validation_errors(kwargs, match):
    X = np.random.default_rng(0).standard_normal((30, 3))
    with pytest.raises((ValueError, TypeError), match=match):
        search_directions(X, Gaussian(np.zeros(3)), **kwargs)


# ---------------------------------------------------------------------------
# data-driven starts (init="auto")
# ---------------------------------------------------------------------------
def _spiked(n, d, seed, variance=0.2):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(d)
    v /= np.linalg.norm(v)
    Z = rng.standard_normal((n, d))
    return Z - (1.0 - np.sqrt(variance)) * np.outer(Z @ v, v), v


def _rotated_laplace(n, d, seed):
    rng = np.random.default_rng(seed)
    W = np.linalg.qr(rng.standard_normal((d, d)))[0]
    return rng.laplace(scale=2**-0.5, size=(n, d)) @ W.T, W.T


def test_stein_moment_matrix_vanishes_under_the_model():
    from skstein.directions import stein_moment_matrix

    X = np.random.default_rng(0).standard_normal((20000, 4)) * 2.0 + 1.0
    M = stein_moment_matrix(X, -(X - 1.0) / 4.0)  # model N(1, 4 I)
    np.testing.assert_allclose(M, 0.0, atol=0.05)
    Y, v = _spiked(20000, 4, 1, variance=0.3)
    M = stein_moment_matrix(Y, -Y)  # I - Cov(Y) = 0.7 v v^T
    np.testing.assert_allclose(M, 0.7 * np.outer(v, v), atol=0.05)


@pytest.mark.parametrize("variant", ["g", "rg"])
def test_search_recovers_a_planted_low_variance_direction(variant):
    d = 12
    X, v = _spiked(400, d, 3)
    res = search_directions(X, Gaussian(np.zeros(d)), variant=variant,
                            n_slices=3 if variant == "rg" else None, random_state=0)
    spectral = dict((c[0], c) for c in res.candidates)["spectral"]
    G, R = spectral[1], spectral[2]
    if variant == "rg":
        assert np.max(np.abs(R @ v)) > 0.9 and np.max(np.abs(G @ v)) > 0.9
    else:  # every slice d turns towards v, weighted by v_d
        heavy = np.abs(v) > 0.3
        assert np.all(np.abs(G[heavy] @ v) > 0.8)
    # the axis-only search does not find it
    ident = search_directions(X, Gaussian(np.zeros(d)), variant="rg", n_slices=3,
                              init="identity", random_state=0)
    assert np.max(np.abs(ident.slices @ v)) < 0.8


def test_search_recovers_a_rotated_heavy_tailed_direction():
    d = 8
    X, W = _rotated_laplace(600, d, 4)
    res = search_directions(X, Gaussian(np.zeros(d)), variant="rg", n_slices=4,
                            random_state=0)
    cubic = dict((c[0], c) for c in res.candidates)["cubic"]
    # each cubic direction lies close to one of the Laplace directions
    cos = np.abs(cubic[1] @ W.T).max(axis=1)
    assert np.median(cos) > 0.85, cos


def test_identity_start_stays_optimal_on_factorised_cases():
    from skstein import MaxSKSDTest
    from skstein.distributions import Laplace

    d = 20
    X = Laplace(d).rvs(1000, random_state=5)
    test = MaxSKSDTest(Gaussian(np.zeros(d)), random_state=0).fit(X[:200])
    assert test.directions_ is dict((c[0], c[1]) for c in test.candidates_)["identity"]
    assert np.all(np.abs(np.diag(test.directions_)) > 0.9)  # refined, still the axes
    res = test.test(X[200:])
    k = res.labels.index("identity")
    assert res.pvalues[k] == res.pvalues.min() and res.reject


def test_search_does_not_depend_on_threads():
    from skstein._numba import numba_threads

    X, _ = _spiked(300, 10, 6)
    kw = dict(variant="rg", n_slices=3, random_state=2)
    with numba_threads(1):
        a = search_directions(X, Gaussian(np.zeros(10)), **kw)
    with numba_threads(2):
        b = search_directions(X, Gaussian(np.zeros(10)), **kw)
    for (na, Ga, Ra, ha), (nb, Gb, Rb, hb) in zip(a.candidates, b.candidates):
        assert na == nb
        np.testing.assert_array_equal(Ga, Gb)
        np.testing.assert_array_equal(Ra, Rb)
        np.testing.assert_array_equal(ha, hb)


def _cubic_reference(Xs, S, G):
    """The cubic Stein moments of all slices in NumPy (the formula before the kernel)."""
    n = Xs.shape[0]
    U = Xs @ G.T
    grad = 3.0 * ((S * U * U).T @ Xs) / n
    grad[np.diag_indices_from(grad)] += 3.0 * np.mean(U * U, axis=0)
    grad += 6.0 * np.diag(G)[:, None] * (U.T @ Xs) / n
    values = np.mean(S * U**3, axis=0) + 3.0 * np.diag(G) * np.mean(U * U, axis=0)
    return values, grad


def _cubic_problem(n, d, seed):
    from skstein.directions import _standardised

    rng = np.random.default_rng(seed)
    X = rng.laplace(size=(n, d)) @ rng.standard_normal((d, d))
    S = -X + 0.3 * rng.standard_normal((n, d))
    G = _unit_rows(rng.standard_normal((d, d)))
    Xs, scale = _standardised(X)
    return Xs, S * scale, G


@pytest.mark.parametrize("n, d", [(57, 7), (300, 20), (2, 3)])
def test_cubic_moments_kernel_matches_numpy(n, d):
    from skstein.directions import _cubic_gradients_per_slice

    Xs, S, G = _cubic_problem(n, d, seed=n)
    values, grad = _cubic_gradients_per_slice(Xs, S, G)
    ref_values, ref_grad = _cubic_reference(Xs, S, G)
    np.testing.assert_allclose(values, ref_values, rtol=1e-10,
                               atol=1e-10 * np.abs(ref_values).max())
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-10, atol=1e-10 * np.abs(ref_grad).max())
    # the gradient is that of the values: central differences along every row at once
    # (value k depends on row k of G only)
    V = np.random.default_rng(1).standard_normal((d, d))
    eps = 1e-6
    up, _ = _cubic_gradients_per_slice(Xs, S, G + eps * V)
    down, _ = _cubic_gradients_per_slice(Xs, S, G - eps * V)
    np.testing.assert_allclose((up - down) / (2 * eps), np.einsum("kd,kd->k", grad, V),
                               rtol=1e-6, atol=1e-6 * np.abs(grad).max())


def test_cubic_moments_kernel_does_not_depend_on_threads():
    import numba

    from skstein.directions import _cubic_gradients_per_slice

    Xs, S, G = _cubic_problem(200, 33, seed=3)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = _cubic_gradients_per_slice(Xs, S, G)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = _cubic_gradients_per_slice(Xs, S, G)
    finally:
        numba.set_num_threads(old)
    np.testing.assert_array_equal(one[0], two[0])
    np.testing.assert_array_equal(one[1], two[1])


def test_cubic_start_follows_the_numpy_iteration(monkeypatch):
    import skstein.directions as directions

    X, _ = _rotated_laplace(400, 12, 5)
    rng = np.random.default_rng(0)
    G, R = directions._cubic_start(X, -X, "g", 12, rng, False)
    monkeypatch.setattr(directions, "_cubic_gradients_per_slice",
                        lambda Xs, S, G, transposed=None: _cubic_reference(Xs, S, G))
    G_ref, _ = directions._cubic_start(X, -X, "g", 12, rng, False)
    np.testing.assert_allclose(G, G_ref, atol=1e-10)
    np.testing.assert_array_equal(R, np.eye(12))


def test_moments_that_overflow_name_X():
    # the Stein moment matrix and the covariance behind the data-driven starts: an
    # overflow is a ValueError naming X, not numpy's "Eigenvalues did not converge"
    from skstein.directions import independent_directions, stein_moment_matrix

    X = np.zeros((9, 4))
    X[0, 0], X[0, 3] = 1.7e308, 2.0
    with pytest.raises(ValueError, match="moment matrix of X"):
        stein_moment_matrix(X, -X)
    with pytest.raises(ValueError, match="covariance of X"):
        independent_directions(X, 2, np.random.default_rng(0))


def test_heldout_points_that_coincide_along_an_axis_take_the_training_bandwidth():
    # integer data: the two held-out points of a 9-point sample agree in some coordinate
    # (one time in seven each); before, the median of their differences along that axis
    # was undefined and the search, and MaxSKSDTest on it, failed
    from skstein import MaxSKSDTest
    from skstein.directions import _heldout_bandwidth
    from skstein.kernels import median_bandwidth_1d

    rng = np.random.default_rng(3)
    X = rng.integers(-3, 4, size=(9, 6)).astype(float)
    Xv = np.array([[0.0, 1, 2, 3, -1, 2], [0.0, 2, 2, 1, 1, -3]])  # equal in 0 and 2
    G = np.eye(6)
    h = _heldout_bandwidth(X, Xv, G, np.random.default_rng(0))
    h_train = median_bandwidth_1d(X)
    np.testing.assert_array_equal(h[[0, 2]], h_train[[0, 2]])
    np.testing.assert_array_equal(h[[1, 3, 4, 5]], median_bandwidth_1d(Xv[:, [1, 3, 4, 5]]))
    # directions that separate the held-out points: their own medians, as before
    Gr = np.linalg.qr(np.random.default_rng(1).normal(size=(6, 6)))[0]
    np.testing.assert_array_equal(_heldout_bandwidth(X, Xv, Gr, np.random.default_rng(0)),
                                  median_bandwidth_1d(Xv @ Gr.T))

    data = np.random.default_rng(5)
    for seed in range(6):
        Xi = data.integers(-3, 4, size=(60, 17))
        result = MaxSKSDTest(Gaussian(np.zeros(17)), random_state=seed).test(Xi)
        assert np.isfinite(result.statistic) and 0 < result.pvalue <= 1


def test_cubic_start_is_a_stein_moment_in_any_units():
    # the cubic moment on standardised data takes the scores of the standardised model
    # (the data's times their scale): zero in expectation under the model, and the
    # start does not depend on the units of X (before, it did)
    from skstein.directions import _cubic_start

    rng = np.random.default_rng(6)
    Q = np.linalg.qr(rng.standard_normal((6, 6)))[0]
    Y = rng.standard_normal((4000, 6))
    Y[:, 0] = rng.laplace(size=4000) / np.sqrt(2)
    X = Y @ Q.T
    starts = [_cubic_start(X * s, -X / s, "g", 6, np.random.default_rng(0), False)[0]
              for s in (1e-3, 1.0, 250.0)]
    for G in starts[1:]:
        np.testing.assert_allclose(G, starts[0], atol=1e-8)
    # under the model N(0, I) the moments of Gaussian data are zero to sampling error
    Z = np.random.default_rng(1).standard_normal((20000, 6)) * 7.0
    Zs = (Z - Z.mean(axis=0)) / np.sqrt(np.mean((Z - Z.mean(axis=0)) ** 2))
    scale = np.sqrt(np.mean((Z - Z.mean(axis=0)) ** 2))
    values, _ = _cubic_reference(Zs, -Z / 49.0 * scale, np.eye(6))
    assert np.max(np.abs(values)) < 0.2  # sd about 0.06 at this size; 2.6 without the scale


def test_direction_search_and_tests_do_not_depend_on_units():
    # data and model rescaled by s: the same directions, statistics scaled by 1 / s^2
    # and the same p-values (before: the cubic start took the data's scores on
    # standardised data, Adam's and the power criterion's guards were absolute, and at
    # s = 1e6 the ascent from the axes stalled)
    from skstein import MaxSKSDTest, RelativeKSDTest
    from skstein.directions import search_directions

    rng = np.random.default_rng(0)
    D = 6
    Q = np.linalg.qr(rng.normal(size=(D, D)))[0]
    Y = rng.normal(size=(240, D))
    Y[:, 0] = rng.laplace(size=240) / np.sqrt(2)
    X = Y @ Q.T
    out = {}
    for s in (1e-6, 1.0, 1e6):
        model = Gaussian(np.zeros(D), s**2)
        res = search_directions(X * s, model, init="identity", random_state=0)
        auto = search_directions(X * s, model, random_state=0)
        gof = MaxSKSDTest(model, random_state=0).test(X * s)
        rel = RelativeKSDTest(model, Gaussian(np.zeros(D), (1.05 * s) ** 2),
                              discrepancy="maxsksd", random_state=0).test(X * s)
        out[s] = (res.objective * s**2, res.directions, auto.start, gof.pvalue, rel.pvalue)
    # far from unit scale the gradients are brought to unit scale by a power of two
    # (so to within a factor of 2 of each other); near it they are not, so Adam's guard
    # (1e-8) weighs a little differently there
    np.testing.assert_allclose(out[1e6][0], out[1e-6][0], rtol=1e-6)
    for s in (1e-6, 1e6):
        np.testing.assert_allclose(out[s][0], out[1.0][0], rtol=1e-3)
        np.testing.assert_allclose(out[s][1], out[1.0][1], atol=1e-3)
        assert out[s][2] == out[1.0][2]
        assert out[s][3] == out[1.0][3] and out[s][4] == out[1.0][4]
