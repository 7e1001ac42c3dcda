import numpy as np
import pytest

from skstein.kernels import (IMQ, RBF, bandwidth_grid, make_kernel, median_bandwidth,
                             median_bandwidth_1d, pairwise_distances_condensed)

KERNELS = [RBF(0.7), RBF(2.5), IMQ(1.3), IMQ(0.8, beta=-0.3)]


@pytest.mark.parametrize("kern", KERNELS, ids=repr)
def test_profile_derivatives_match_finite_differences(kern):
    t = np.linspace(0.0, 6.0, 25) + 0.05
    eps = 1e-5
    k, k1, k2 = kern.profile(t)
    kp, k1p, _ = kern.profile(t + eps)
    km, k1m, _ = kern.profile(t - eps)
    np.testing.assert_allclose(k1, (kp - km) / (2 * eps), rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(k2, (k1p - k1m) / (2 * eps), rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("kern", KERNELS, ids=repr)
def test_gradients_match_finite_differences(kern, rng):
    X = rng.standard_normal((4, 3))
    Y = rng.standard_normal((5, 3))
    eps = 1e-6
    G = kern.grad_x(X, Y)
    GY = kern.grad_y(X, Y)
    for d in range(3):
        E = np.zeros(3)
        E[d] = eps
        fd = (kern(X + E, Y) - kern(X - E, Y)) / (2 * eps)
        np.testing.assert_allclose(G[:, :, d], fd, rtol=1e-6, atol=1e-9)
        fdy = (kern(X, Y + E) - kern(X, Y - E)) / (2 * eps)
        np.testing.assert_allclose(GY[:, :, d], fdy, rtol=1e-6, atol=1e-9)
    # trace of the cross Hessian: d/dy_l of grad_x_l
    tr = np.zeros((4, 5))
    for d in range(3):
        E = np.zeros(3)
        E[d] = eps
        tr += (kern.grad_x(X, Y + E)[:, :, d] - kern.grad_x(X, Y - E)[:, :, d]) / (2 * eps)
    np.testing.assert_allclose(kern.trace_grad_xy(X, Y), tr, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("kern", KERNELS, ids=repr)
def test_stein_kernel_matches_its_definition(kern, rng):
    X, Y = rng.standard_normal((6, 4)), rng.standard_normal((3, 4))
    SX, SY = rng.standard_normal((6, 4)), rng.standard_normal((3, 4))
    ref = (kern(X, Y) * (SX @ SY.T)
           + np.einsum("id,ijd->ij", SX, kern.grad_y(X, Y))
           + np.einsum("jd,ijd->ij", SY, kern.grad_x(X, Y))
           + kern.trace_grad_xy(X, Y))
    np.testing.assert_allclose(kern.stein(X, Y, SX, SY), ref, rtol=1e-12, atol=1e-12)


def test_rbf_and_imq_conventions():
    x, y = np.array([[0.0, 0.0]]), np.array([[3.0, 4.0]])
    assert RBF(2.0)(x, y)[0, 0] == pytest.approx(np.exp(-25 / 8))
    assert IMQ(2.0)(x, y)[0, 0] == pytest.approx((1 + 25 / 4) ** -0.5)
    assert IMQ(2.0, beta=-0.25)(x, y)[0, 0] == pytest.approx((1 + 25 / 4) ** -0.25)


def test_median_bandwidth_is_median_of_pairwise_distances(rng):
    X = rng.standard_normal((41, 3))
    d = [np.linalg.norm(X[i] - X[j]) for i in range(41) for j in range(i + 1, 41)]
    assert median_bandwidth(X) == pytest.approx(np.median(d), rel=1e-12)


@pytest.mark.parametrize("n, d", [(2, 1), (7, 3), (60, 1), (129, 40)])
def test_pairwise_distances_match_the_loop(rng, n, d):
    # offset data and near-repeated rows: where the Gram identity cancels
    X = 50.0 + rng.standard_normal((n, d))
    X[-1] = X[0]
    if n > 3:
        X[1] = X[2] + 1e-7
    expect = [np.sqrt(np.sum((X[i] - X[j]) ** 2)) for i in range(n) for j in range(i + 1, n)]
    got = pairwise_distances_condensed(X)
    np.testing.assert_allclose(got, expect, rtol=1e-10, atol=0)
    assert got[n - 2] == 0.0  # the repeated pair (0, n - 1) is exactly zero


def test_median_bandwidth_subsample_is_seeded(rng):
    X = rng.standard_normal((300, 2))
    a = median_bandwidth(X, max_points=50, random_state=1)
    b = median_bandwidth(X, max_points=50, random_state=1)
    c = median_bandwidth(X, max_points=50, random_state=2)
    assert a == b and a != c
    assert abs(a - median_bandwidth(X)) < 0.3


def test_median_bandwidth_ignores_repeated_rows_and_rejects_constant_data():
    X = np.zeros((10, 2))
    X[0] = 1.0
    assert median_bandwidth(X) == pytest.approx(np.sqrt(2))
    with pytest.raises(ValueError, match="all samples coincide"):
        median_bandwidth(np.ones((5, 2)))


def test_median_bandwidth_1d_per_column(rng):
    U = rng.standard_normal((30, 3)) * [1.0, 5.0, 0.1]
    h = median_bandwidth_1d(U)
    for k in range(3):
        assert h[k] == pytest.approx(median_bandwidth(U[:, [k]]))


def test_make_kernel_and_bad_parameters():
    assert make_kernel("imq", 2.0, {"beta": -0.3}) == IMQ(2.0, beta=-0.3)
    assert make_kernel("rbf", 2.0) == RBF(2.0)
    with pytest.raises(ValueError, match="kernel must be one of"):
        make_kernel("laplace", 1.0)
    with pytest.raises(ValueError, match="kernel_params"):
        make_kernel("rbf", 1.0, {"beta": -0.5})
    with pytest.raises(ValueError, match="beta"):
        IMQ(1.0, beta=0.5)
    with pytest.raises(ValueError, match="bandwidth"):
        RBF(-1.0)
    with pytest.raises(TypeError, match="bandwidth"):
        RBF("1")


@pytest.mark.parametrize("kind", ["exponential", "sorted", "ties", "reversed", "constant"])
def test_bracketed_selection_equals_partition(kind):
    from skstein._numba.distances import select_ranks

    m = 300_001
    d = np.random.default_rng(1).exponential(size=m)
    if kind == "sorted":
        d.sort()
    elif kind == "ties":
        d = np.round(d, 1)
    elif kind == "reversed":
        d = np.sort(d)[::-1].copy()
    elif kind == "constant":
        d[:] = 2.5
    for ranks in ([m // 2], [0, 1, m // 2 - 1, m // 2], [3000, 3001], [m - 2, m - 1]):
        ranks = np.array(ranks)
        out = np.full(ranks.size, np.nan)
        if select_ranks(d, ranks, out):
            np.testing.assert_array_equal(out, np.partition(d, ranks)[ranks])
        else:   # more than two separate brackets: the caller partitions
            assert len(ranks) > 2


def test_bandwidth_heuristics_equal_numpy_order_statistics():
    from skstein.kernels import (GRID_QUANTILE, GRID_TOP, MIN_BANDWIDTH, _finite_distances,
                                 _subsample)

    rng = np.random.default_rng(4)
    for n, d in [(3000, 5), (1500, 60), (2500, 1), (40, 3)]:
        X = rng.standard_normal((n, d))
        if d == 1:
            X[:300] = X[0]   # zero distances: the quantile of the positive ones
        dist = _finite_distances(_subsample(X, 2000, 3))
        med = float(np.median(dist))
        low = max(float(np.quantile(dist[dist > 0], GRID_QUANTILE)), MIN_BANDWIDTH)
        ref = np.geomspace(min(low, med), GRID_TOP * med, 10)
        np.testing.assert_array_equal(bandwidth_grid(X, random_state=3), ref)
        assert median_bandwidth(X, random_state=3) == med


def test_whitening_far_from_unit_scale():
    # the Ledoit-Wolf shrinkage squares the covariance (fourth powers of X): X is
    # scaled by a power of two first, so the result scales exactly, and data at 1e150
    # are whitened where the shrinkage alone returned NaN
    from skstein.kernels import whitening

    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3)) @ np.array([[1.0, 0.5, 0.0], [0.0, 2.0, 0.3], [0.0, 0.0, 0.5]])
    A, B = whitening(X)
    for s in (2.0**100, 2.0**-120):
        A2, B2 = whitening(X * s)
        np.testing.assert_array_equal(A2 * s, A)
        np.testing.assert_array_equal(B2 / s, B)
    A3, _ = whitening(X * 1e150)
    np.testing.assert_allclose(A3 * 1e150, A, rtol=1e-12)
    X[0] = 1e300
    with pytest.raises(ValueError, match="covariance of X overflows"):
        whitening(X)
