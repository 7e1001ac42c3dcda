import functools

import numpy as np
import pytest

from _reference import imq_parts, rbf_parts, stein_matrix_loop
from conftest import std_normal_score
from skstein import ksd, ksd_power_criterion, stein_matrix
from skstein._numba import numba_threads
from skstein.discrepancy import stein_row_blocks, stein_sums
from skstein.distributions import Gaussian
from skstein.kernels import IMQ, RBF

CASES = [
    (RBF(1.3), functools.partial(rbf_parts, h=1.3)),
    (IMQ(0.9), functools.partial(imq_parts, h=0.9, beta=-0.5)),
    (IMQ(1.7, beta=-0.3), functools.partial(imq_parts, h=1.7, beta=-0.3)),
]


def _data(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    S = -X + 0.4 * rng.standard_normal((n, d))
    return X, S


@pytest.mark.parametrize("kern,parts", CASES, ids=lambda c: repr(c) if not callable(c) else "")
@pytest.mark.parametrize("n,d", [(2, 1), (7, 3), (130, 2), (61, 12)])
def test_statistics_and_matrix_equal_double_loop(kern, parts, n, d):
    X, S = _data(n, d)
    H = stein_matrix_loop(X, S, parts)
    off = H - np.diag(np.diag(H))
    res = stein_sums(X, S, kern, return_matrix=True)
    np.testing.assert_allclose(res.upper + res.upper.T, off, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res.diag, np.diag(H), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(res.rowsums, off.sum(1), rtol=1e-10, atol=1e-11)
    assert res.statistic("u") == pytest.approx(off.sum() / (n * (n - 1)), rel=1e-10, abs=1e-12)
    assert res.statistic("v") == pytest.approx(H.sum() / n**2, rel=1e-10, abs=1e-12)
    assert np.allclose(np.tril(res.upper), 0.0)


@pytest.mark.parametrize("kern", [RBF(1.1), IMQ(1.4)], ids=repr)
def test_blockwise_equals_direct(kern):
    X, S = _data(203, 4)
    direct = stein_sums(X, S, kern, return_matrix=True)
    for budget in (3 * 8 * 203 * 1, 3 * 8 * 203 * 17, 10**9):
        blocked = stein_sums(X, S, kern, max_memory=budget)
        assert blocked.upper is None
        assert blocked.offdiag_sum == pytest.approx(direct.offdiag_sum, rel=1e-11)
        np.testing.assert_allclose(blocked.rowsums, direct.rowsums, rtol=1e-10, atol=1e-11)
    full = direct.upper + direct.upper.T
    rows = np.vstack([blk for _, _, blk in stein_row_blocks(X, S, kern, max_memory=3 * 8 * 203 * 10)])
    np.testing.assert_allclose(rows, full, rtol=1e-10, atol=1e-11)


def test_thread_count_does_not_change_results():
    X, S = _data(501, 5)
    kern = RBF(2.0)
    with numba_threads(1):
        a = stein_sums(X, S, kern, return_matrix=True)
        b = stein_sums(X, S, kern, max_memory=3 * 8 * 501 * 50)
    with numba_threads(2):
        c = stein_sums(X, S, kern, return_matrix=True)
        d = stein_sums(X, S, kern, max_memory=3 * 8 * 501 * 50)
    assert np.array_equal(a.upper, c.upper) and a.offdiag_sum == c.offdiag_sum
    assert np.array_equal(b.rowsums, d.rowsums) and b.offdiag_sum == d.offdiag_sum


def test_row_permutation_invariance():
    X, S = _data(150, 3)
    perm = np.random.default_rng(1).permutation(150)
    a = ksd(X, std_normal_score, bandwidth=1.0)
    b = ksd(X[perm], std_normal_score, bandwidth=1.0)
    assert a == pytest.approx(b, rel=1e-10)


def test_translation_far_from_origin_stays_accurate():
    X, _ = _data(80, 3)
    model = Gaussian(np.full(3, 1e4))
    far = ksd(X + 1e4, model, bandwidth=1.0)
    near = ksd(X, Gaussian(np.zeros(3)), bandwidth=1.0)
    assert far == pytest.approx(near, rel=1e-8)


@pytest.mark.parametrize("kernel", ["rbf", "imq"])
def test_stein_identity_u_statistic_is_centred_under_the_null(kernel):
    model = Gaussian(np.zeros(3))
    stats = [ksd(model.rvs(100, random_state=s), model, kernel=kernel, bandwidth=1.5)
             for s in range(200)]
    mean, se = np.mean(stats), np.std(stats) / np.sqrt(len(stats))
    assert abs(mean) < 3 * se
    # the V-statistic is biased upwards by the mean diagonal / n
    v = [ksd(model.rvs(100, random_state=s), model, kernel=kernel, bandwidth=1.5, statistic="v")
         for s in range(20)]
    assert np.mean(v) > 0


def test_ksd_detects_a_shifted_model():
    X = np.random.default_rng(0).standard_normal((400, 2))
    assert ksd(X, Gaussian(np.ones(2))) > 10 * abs(ksd(X, Gaussian(np.zeros(2))))


def test_stein_matrix_and_power_criterion_match_reference():
    X, _ = _data(40, 2)
    S = std_normal_score(X)
    H = stein_matrix(X, std_normal_score, bandwidth=0.8)
    ref = stein_matrix_loop(X, S, functools.partial(rbf_parts, h=0.8))
    np.testing.assert_allclose(H, ref, rtol=1e-10, atol=1e-12)
    off = ref - np.diag(np.diag(ref))
    u = off.sum() / (40 * 39)
    sigma2 = 4 * np.var(off.sum(1) / 39)
    crit = ksd_power_criterion(X, std_normal_score, bandwidth=0.8)
    assert crit == pytest.approx(u / np.sqrt(sigma2 + 1e-10), rel=1e-8)
    with pytest.raises(ValueError, match="X needs at least 3 samples"):
        ksd_power_criterion(X[:2], std_normal_score, bandwidth=0.8)


def test_ksd_statistic_needs_no_n_by_n_memory():
    # 3000 x 3000 floats would be 72 MB per matrix; the budget allows 30 rows at a time
    X, S = _data(3000, 2)
    res = stein_sums(X, S, RBF(1.0), max_memory=3 * 8 * 3000 * 30)
    ref = stein_sums(X, S, RBF(1.0), max_memory=10**9)
    assert res.offdiag_sum == pytest.approx(ref.offdiag_sum, rel=1e-10)


def test_functional_validation():
    X = np.random.default_rng(0).standard_normal((20, 2))
    with pytest.raises(ValueError, match="statistic"):
        ksd(X, std_normal_score, statistic="w")
    with pytest.raises(ValueError, match="kernel"):
        ksd(X, std_normal_score, kernel="gauss")
    with pytest.raises(ValueError, match="bandwidth"):
        ksd(X, std_normal_score, bandwidth="silverman")
    with pytest.raises(ValueError, match="bandwidth"):
        ksd(X, std_normal_score, bandwidth=0.0)
    with pytest.raises(TypeError, match="bandwidth"):
        ksd(X, std_normal_score, bandwidth=[1.0])
    with pytest.raises(ValueError, match="shape"):
        ksd(X, lambda Y: Y[:, :1])
    with pytest.raises(ValueError, match="not finite"):
        ksd(X, lambda Y: np.full_like(Y, np.nan))
    with pytest.raises(ValueError, match="2 dimensions|features"):
        ksd(X, Gaussian(np.zeros(3)))
    with pytest.raises(TypeError, match="model"):
        ksd(X, "normal")
