"""Sliced Stein kernels against slow NumPy references (skstein._numba.sliced)."""

import numpy as np
import pytest

from skstein import ksd
from skstein._numba import numba_threads
from skstein.discrepancy import (
    check_directions,
    max_sksd,
    resolve_sliced_bandwidth,
    sliced_stein_row_blocks,
    sliced_stein_sums,
    sliced_value_and_grad,
)
from skstein.distributions import Gaussian, Laplace
from skstein.kernels import median_bandwidth_1d


def _kappa(kernel, delta, h, beta=-0.5):
    """1-D kernel and its derivatives in u_i, u_j, written directly in delta = u_i - u_j."""
    if kernel == "rbf":
        k = np.exp(-delta**2 / (2 * h**2))
        di = -delta / h**2 * k
        dij = (1 / h**2 - delta**2 / h**4) * k
        return k, di, -di, dij
    base = 1 + delta**2 / h**2
    k = base**beta
    di = beta * base ** (beta - 1) * 2 * delta / h**2
    dij = -(2 * beta / h**2 * base ** (beta - 1)
            + 2 * beta * delta / h**2 * (beta - 1) * base ** (beta - 2) * 2 * delta / h**2)
    return k, di, -di, dij


def slow_sliced_matrices(X, S, G, R, h, kernel="rbf", beta=-0.5):
    """(m, n, n) array of h_k(x_i, x_j) by an explicit double loop."""
    n = X.shape[0]
    m = G.shape[0]
    out = np.zeros((m, n, n))
    for k in range(m):
        c = R[k] @ G[k]
        for i in range(n):
            for j in range(n):
                ui, uj = X[i] @ G[k], X[j] @ G[k]
                ai, aj = S[i] @ R[k], S[j] @ R[k]
                kk, di, dj, dij = _kappa(kernel, ui - uj, h[k], beta)
                out[k, i, j] = ai * aj * kk + ai * c * dj + aj * c * di + c * c * dij
    return out


def _unit_rows(M):
    return M / np.linalg.norm(M, axis=1, keepdims=True)


def _problem(n, d, m, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    S = -X + 0.3 * rng.standard_normal((n, d))
    G = _unit_rows(rng.standard_normal((m, d)))
    R = _unit_rows(rng.standard_normal((m, d)))
    h = rng.uniform(0.5, 2.0, size=m)
    return X, S, G, R, h


KERNEL_CASES = [("rbf", None), ("imq", None), ("imq", {"beta": -0.3})]


@pytest.mark.parametrize("kernel,params", KERNEL_CASES)
@pytest.mark.parametrize("n,d,m", [(2, 1, 1), (7, 3, 2), (40, 5, 5), (67, 4, 3)])
@pytest.mark.parametrize("shared", [False, True])
def test_sliced_sums_match_double_loop(kernel, params, n, d, m, shared):
    X, S, G, R, h = _problem(n, d, m)
    if shared:  # every slice along one direction, one bandwidth: the shared-direction pass
        G = np.repeat(G[:1], m, axis=0)
        h = np.full(m, h[0])
    beta = -0.5 if params is None else params["beta"]
    ref = slow_sliced_matrices(X, S, G, R, h, kernel, beta)
    off = ref.copy()
    idx = np.arange(n)
    off[:, idx, idx] = 0.0
    for return_matrix, budget in [(True, 2**28), (False, 2**28), (False, 8)]:
        sums = sliced_stein_sums(X, S, G, R, h, kernel=kernel, kernel_params=params,
                                 return_matrix=return_matrix, max_memory=budget)
        np.testing.assert_allclose(sums.pair_sums, off.sum(axis=(1, 2)), rtol=1e-10,
                                   atol=1e-12)
        np.testing.assert_allclose(sums.rowsums, off.sum(axis=(0, 2)), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(sums.diag, ref[:, idx, idx].sum(axis=0), rtol=1e-12)
        np.testing.assert_allclose(sums.pair_diag, ref[:, idx, idx].sum(axis=1), rtol=1e-12)
        v = (ref.sum() / n**2)
        np.testing.assert_allclose(sums.statistic("v"), v, rtol=1e-10, atol=1e-14)
        if return_matrix:
            np.testing.assert_allclose(sums.upper, np.triu(off.sum(axis=0), 1), rtol=1e-10,
                                       atol=1e-14)
    blocks = list(sliced_stein_row_blocks(X, S, G, R, h, kernel=kernel, kernel_params=params,
                                          max_memory=8 * 3 * n))
    full = np.concatenate([b[2] for b in blocks])
    np.testing.assert_allclose(full, off.sum(axis=0), rtol=1e-10, atol=1e-14)


def test_stein_kernel_symmetry():
    X, S, G, R, h = _problem(30, 4, 3, seed=1)
    ref = slow_sliced_matrices(X, S, G, R, h)
    np.testing.assert_allclose(ref, ref.transpose(0, 2, 1), atol=1e-13)


def test_d1_equals_ksd():
    rng = np.random.default_rng(2)
    X = rng.laplace(size=(150, 1))
    model = Gaussian(np.zeros(1))
    for kernel in ("rbf", "imq"):
        for stat in ("u", "v"):
            a = max_sksd(X, model, kernel=kernel, bandwidth=0.7, statistic=stat)
            b = ksd(X, model, kernel=kernel, bandwidth=0.7, statistic=stat)
            assert a == pytest.approx(b, rel=1e-10)
    # the median heuristics agree too
    assert max_sksd(X, model) == pytest.approx(ksd(X, model), rel=1e-10)


def test_identity_directions_sum_of_marginal_ksds():
    # maxSKSD-g with G = R = I is the sum of 1-D KSDs of the coordinates (factorised model)
    rng = np.random.default_rng(3)
    X = rng.laplace(size=(120, 3))
    model = Gaussian(np.zeros(3))
    h = np.array([0.5, 0.8, 1.3])
    total = max_sksd(X, model, bandwidth=h)
    marg = sum(ksd(X[:, [k]], Gaussian(np.zeros(1)), bandwidth=h[k]) for k in range(3))
    assert total == pytest.approx(marg, rel=1e-10)


def test_thread_count_does_not_change_results(monkeypatch):
    import skstein.discrepancy as disc

    monkeypatch.setattr(disc, "SERIAL_PAIR_EVALUATIONS", 0)  # always the parallel path
    X, S, G, R, h = _problem(301, 6, 5, seed=4)
    out = []
    for threads in (1, 2):
        with numba_threads(threads):
            sums = sliced_stein_sums(X, S, G, R, h, return_matrix=True)
            rows = sliced_stein_sums(X, S, G, R, h, max_memory=8)
            vals, gG, gR = sliced_value_and_grad(X, S, G, R, h, grad_slices=True)
            blocks = np.concatenate([b[2] for b in sliced_stein_row_blocks(
                X, S, G, R, h, max_memory=8 * 301 * 40)])
            med = median_bandwidth_1d(X @ G.T)
        out.append((sums.upper, sums.rowsums, rows.rowsums, vals, gG, gR, blocks, med))
    for a, b in zip(*out):
        assert np.array_equal(a, b)


def test_permutation_invariance():
    X, S, G, R, h = _problem(50, 3, 2, seed=5)
    perm = np.random.default_rng(0).permutation(50)
    a = sliced_stein_sums(X, S, G, R, h).statistic()
    b = sliced_stein_sums(X[perm], S[perm], G, R, h).statistic()
    assert a == pytest.approx(b, rel=1e-12)


def _fd_grad(f, M, eps=1e-6):
    g = np.zeros_like(M)
    for idx in np.ndindex(*M.shape):
        P, Q = M.copy(), M.copy()
        P[idx] += eps
        Q[idx] -= eps
        g[idx] = (f(P) - f(Q)) / (2 * eps)
    return g


@pytest.mark.parametrize("kernel,params", KERNEL_CASES)
def test_gradients_match_finite_differences(kernel, params):
    X, S, G, R, h = _problem(35, 4, 3, seed=6)
    vals, gG, gR = sliced_value_and_grad(X, S, G, R, h, kernel=kernel, kernel_params=params,
                                         grad_slices=True)
    kw = dict(kernel=kernel, kernel_params=params)
    # Euclidean gradients (rows not renormalised inside the objective)
    fG = _fd_grad(lambda M: sliced_stein_sums(X, S, M, R, h, **kw).statistic(), G)
    fR = _fd_grad(lambda M: sliced_stein_sums(X, S, G, M, h, **kw).statistic(), R)
    np.testing.assert_allclose(gG, fG, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(gR, fR, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(vals.sum(), sliced_stein_sums(X, S, G, R, h, **kw).statistic(),
                               rtol=1e-12)


def test_median_bandwidth_1d_matches_numpy():
    rng = np.random.default_rng(7)
    U = rng.standard_normal((61, 4))
    U[:, 3] = np.repeat([0.0, 1.0], [40, 21])  # median of |differences| is zero
    iu, ju = np.triu_indices(61, 1)
    expect = []
    for k in range(4):
        dd = np.abs(U[iu, k] - U[ju, k])
        med = np.median(dd)
        expect.append(med if med > 0 else np.median(dd[dd > 0]))
    np.testing.assert_allclose(median_bandwidth_1d(U), expect, rtol=1e-14)
    with pytest.raises(ValueError, match="explicit bandwidth"):
        median_bandwidth_1d(np.ones((5, 2)))


def test_max_sksd_validation():
    X = np.random.default_rng(0).standard_normal((20, 3))
    model = Gaussian(np.zeros(3))
    with pytest.raises(ValueError, match="directions"):
        max_sksd(X, model, directions=np.eye(2))
    with pytest.raises(ValueError, match="directions"):
        max_sksd(X, model, directions=np.eye(3)[:2])
    with pytest.raises(ValueError, match="slices"):
        max_sksd(X, model, slices=np.zeros((2, 3)))
    with pytest.raises(ValueError, match="bandwidth"):
        max_sksd(X, model, bandwidth=[1.0, 2.0])
    with pytest.raises(ValueError, match="bandwidth"):
        max_sksd(X, model, bandwidth=-1.0)
    with pytest.raises(ValueError, match="bandwidth"):
        max_sksd(X, model, bandwidth="silverman")
    with pytest.raises(ValueError, match="kernel"):
        max_sksd(X, model, kernel="gauss")
    with pytest.raises(ValueError, match="statistic"):
        max_sksd(X, model, statistic="w")
    with pytest.raises(ValueError, match="features"):
        max_sksd(X, Laplace(2))
    G = check_directions([[3.0, 4.0, 0.0]], "directions", 3)
    np.testing.assert_allclose(G, [[0.6, 0.8, 0.0]])
    assert resolve_sliced_bandwidth(X[:, :2], 2.0).tolist() == [2.0, 2.0]


def test_max_sksd_return_pairs():
    X = np.random.default_rng(0).laplace(size=(100, 3))
    stat, pairs, h = max_sksd(X, Gaussian(np.zeros(3)), return_pairs=True)
    assert pairs.shape == (3,) and h.shape == (3,)
    assert stat == pytest.approx(pairs.sum())


def test_fast_exp_accuracy_and_underflow():
    from skstein._numba.sliced import fast_exp_array

    x = np.concatenate([np.linspace(-760.0, 709.0, 400001), -np.logspace(-20, 2.85, 20000),
                        np.logspace(-20, 2.85, 20000), [0.0, -708.3, -708.2999]])
    y = fast_exp_array(x, np.empty_like(x))
    ref = np.exp(x)
    normal = x >= -708.3
    rel = np.abs(y[normal] - ref[normal]) / ref[normal]
    assert rel.max() < 1e-15
    # below the normal range: exactly zero (the true value is below 2.5e-308)
    assert np.all(y[~normal] == 0.0)
    assert np.all(ref[~normal] < 2.5e-308)
    assert fast_exp_array(np.array([0.0]), np.empty(1))[0] == 1.0


@pytest.mark.parametrize("n", [2, 3, 4, 11, 60])
def test_median_bandwidth_1d_ties_and_odd_even(n):
    rng = np.random.default_rng(n)
    iu, ju = np.triu_indices(n, 1)
    for trial in range(10):
        U = rng.standard_normal((n, 2))
        if trial % 2 == 0:
            U = np.round(U, 1)  # many ties
        dd = [np.abs(U[iu, k] - U[ju, k]) for k in range(2)]
        if any(not np.any(d > 0) for d in dd):
            continue
        expect = [np.median(d) if np.median(d) > 0 else np.median(d[d > 0]) for d in dd]
        np.testing.assert_array_equal(median_bandwidth_1d(U), expect)


def _columns_with_ties(n, rng):
    """Columns of n points: normal, rounded (ties), mostly equal, tiny, wide, integer."""
    cols = [rng.standard_normal(n), np.round(rng.standard_normal(n), 1),
            np.round(0.2 * rng.standard_normal(n)), rng.standard_normal(n) * 1e-300,
            rng.laplace(size=n) * 1e6, rng.integers(0, 3, n).astype(float),
            np.repeat([0.0, 1.0], [n - n // 3, n // 3]), np.full(n, 3.0)]
    return np.stack(cols, axis=1)


def _numpy_pair_median(u):
    """numpy.median of |u_i - u_j|, i < j (of the positive ones if that is 0; -1 if none)."""
    iu, ju = np.triu_indices(u.size, 1)
    dd = np.abs(u[iu] - u[ju])
    if not np.any(dd > 0):
        return -1.0
    med = np.median(dd)
    return med if med > 0 else np.median(dd[dd > 0])


@pytest.mark.parametrize("n", [2, 3, 4, 25, 50, 128, 129, 200])
def test_median_abs_diff_columns_against_numpy(n):
    # up to 128 points (8128 pairs) the differences are listed and counted; beyond, the
    # sorted columns are counted by two pointers: both give numpy's median, bit for bit
    from skstein._numba.sliced import LISTED_PAIRS, median_abs_diff_columns

    assert (n * (n - 1) // 2 <= LISTED_PAIRS) == (n <= 128)
    rng = np.random.default_rng(n)
    for _ in range(3):
        U = _columns_with_ties(n, rng)
        got = median_abs_diff_columns(U, np.empty(U.shape[1]))
        np.testing.assert_array_equal(got, [_numpy_pair_median(U[:, k])
                                            for k in range(U.shape[1])])


@pytest.mark.parametrize("n", [2, 5, 50, 200])
@pytest.mark.parametrize("q", [0.01, 0.3, 0.5, 1.0])
def test_quantile_abs_diff_columns_against_numpy(n, q):
    from skstein._numba.sliced import quantile_abs_diff_columns

    U = _columns_with_ties(n, np.random.default_rng(n + 1))
    got = quantile_abs_diff_columns(U, q, np.empty(U.shape[1]))
    iu, ju = np.triu_indices(n, 1)
    for k in range(U.shape[1]):
        pos = np.sort(np.abs(U[iu, k] - U[ju, k]))
        pos = pos[pos > 0]
        want = -1.0 if pos.size == 0 else pos[max(1, int(np.ceil(q * pos.size))) - 1]
        assert got[k] == want


@pytest.mark.parametrize("n", [5, 200])
def test_column_medians_refuse_non_finite_values(n):
    # their bisections on the value would never end on a NaN
    from skstein._numba.sliced import median_abs_diff_columns, quantile_abs_diff_columns

    U = np.random.default_rng(0).standard_normal((n, 3))
    for bad in (np.nan, np.inf):
        U[1, 2] = bad
        with pytest.raises(ValueError, match="not finite"):
            median_abs_diff_columns(U, np.empty(3))
        with pytest.raises(ValueError, match="not finite"):
            quantile_abs_diff_columns(U, 0.5, np.empty(3))


def test_median_abs_diff_columns_rank_search_paths():
    # the rank search ends by a count that splits the two middle ranks, by an isolated
    # pair of ranks, or on adjacent floats (all differences in the bracket equal)
    from skstein._numba.sliced import _median_abs_diff, _pair_ranks

    u = np.array([0.0, 1.0, 3.0, 7.0])  # differences 1, 2, 3, 4, 6, 7: median 3.5
    assert _median_abs_diff(u, np.empty(0)) == 3.5
    d = np.abs(np.subtract.outer(u, u))[np.triu_indices(4, 1)]
    assert _median_abs_diff(u, d) == 3.5
    for k in range(1, 7):
        for dd in (d, np.empty(0)):
            a, b = _pair_ranks(u, dd, k, min(k + 1, 6), 0, 7.0)
            want = np.sort(d)
            assert (a, b) == (want[k - 1], want[min(k, 5)])
    x = np.nextafter(1.0, 2.0)
    u = np.array([0.0, 1.0, 1.0, x, x, 2.0])  # many equal differences next to each other
    iu, ju = np.triu_indices(u.size, 1)
    d = np.abs(u[iu] - u[ju])
    assert _median_abs_diff(u, d) == _median_abs_diff(u, np.empty(0)) == _numpy_pair_median(u)
