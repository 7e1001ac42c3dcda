import numpy as np
import pytest

from conftest import std_normal_score
from skstein import KSDTest
from skstein._bootstrap import (
    PackedSigns,
    bootstrap_draws,
    bootstrap_null,
    bootstrap_pvalue,
    bootstrap_threshold,
    bootstrap_weights,
    weight_columns,
)
from skstein.discrepancy import stein_row_blocks, stein_sums, stein_sums_and_forms
from skstein.gof._base import aggregated_result
from skstein.kernels import RBF
from _reference import assert_forms_close


def _sums(n=120, d=3):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    S = -X + 0.3 * rng.standard_normal((n, d))
    return X, S, stein_sums(X, S, RBF(1.5), return_matrix=True)


@pytest.mark.parametrize("method", ["multinomial", "rademacher"])
@pytest.mark.parametrize("statistic", ["u", "v"])
def test_null_equals_explicit_quadratic_forms(method, statistic):
    X, S, res = _sums()
    H = res.upper + res.upper.T
    if statistic == "v":
        H[np.diag_indices_from(H)] = res.diag
    V = bootstrap_weights(method, 120, 64, np.random.default_rng(5), statistic)
    ref = np.einsum("mi,ij,mj->m", V, H, V)
    got = bootstrap_null(res.upper, method, 64, np.random.default_rng(5), statistic=statistic,
                         diag=res.diag)
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-14)
    # the shared-Gram engine of the tests gives the same forms, whatever its block size
    for budget in (8 * 120 * 120 * 4, 8 * 120 * 7 * 4, 8 * 120):
        sums, forms = stein_sums_and_forms(X, S, [RBF(1.5)], V, max_memory=budget)
        if statistic == "v":
            forms[:, 0] += (V * V) @ sums[0].diag
        # single-precision products: error within 2^-20 of the sum of |terms|
        assert_forms_close(forms[:, 0], ref, V, H)
        assert sums[0].offdiag_sum == pytest.approx(res.offdiag_sum, rel=1e-12)
        np.testing.assert_allclose(sums[0].rowsums, res.rowsums, rtol=1e-10, atol=1e-12)
    blocks = stein_row_blocks(X, S, RBF(1.5), max_memory=3 * 8 * 120 * 25)
    blocked = bootstrap_null(blocks, method, 64, np.random.default_rng(5), statistic=statistic,
                             diag=res.diag, n=120)
    np.testing.assert_allclose(blocked, got, rtol=1e-10, atol=1e-14)


def test_weights_have_the_stated_distributions():
    rng = np.random.default_rng(0)
    W = bootstrap_weights("multinomial", 50, 4000, rng)
    counts = W * 50 + 1.0
    assert np.allclose(counts, np.round(counts)) and np.allclose(counts.sum(1), 50)
    # Mult(n; 1/n): each count has mean 1 and variance 1 - 1/n
    assert abs(counts.mean() - 1) < 0.01
    assert abs(counts.var() - (1 - 1 / 50)) < 0.03
    E = bootstrap_weights("rademacher", 50, 1000, rng, "u") * np.sqrt(50 * 49)
    assert set(np.unique(np.round(E, 12))) == {-1.0, 1.0}
    assert abs(E.mean()) < 0.01
    with pytest.raises(ValueError, match="bootstrap"):
        bootstrap_weights("poisson", 5, 5, rng)


@pytest.mark.parametrize("n", [1, 7, 8, 9, 61])
def test_packed_signs_unpack_to_the_bits_they_hold(n):
    P = bootstrap_draws("rademacher", n, 9, np.random.default_rng(3), "v")
    assert isinstance(P, PackedSigns) and P.shape == (9, n) and P.scale == 1.0 / n
    # slow reference: bit i % 8 of byte i // 8, set for +1
    ref = np.empty((9, n))
    for m in range(9):
        for i in range(n):
            ref[m, i] = P.scale if (int(P.bits[m, i // 8]) >> (i % 8)) & 1 else -P.scale
    assert np.array_equal(P.dense(), ref)
    assert np.array_equal(bootstrap_weights("rademacher", n, 9, np.random.default_rng(3), "v"),
                          ref)
    cols = weight_columns(P)
    assert cols.dtype == np.float32 and cols.flags.c_contiguous
    assert np.array_equal(cols, ref.T.astype(np.float32))
    assert np.array_equal(weight_columns(ref), cols)


def test_packed_signs_are_fair_and_independent():
    E = bootstrap_draws("rademacher", 37, 20000, np.random.default_rng(1)).dense()
    E = np.sign(E)
    # each sign +-1 with probability 1/2 (3 standard deviations of 740000 signs) ...
    assert abs(E.mean()) < 3 / np.sqrt(E.size)
    # ... and uncorrelated across weights of a draw, bits of one byte included
    C = (E.T @ E) / E.shape[0]
    off = C[~np.eye(37, dtype=bool)]
    assert np.abs(off).max() < 4.5 / np.sqrt(E.shape[0])


def test_forms_of_packed_signs_equal_those_of_their_dense_weights():
    X, S, _ = _sums(150, 4)
    kernels = [RBF(0.7), RBF(2.0)]
    P = bootstrap_draws("rademacher", 150, 40, np.random.default_rng(2))
    sums_p, forms_p = stein_sums_and_forms(X, S, kernels, P)
    sums_d, forms_d = stein_sums_and_forms(X, S, kernels, P.dense())
    assert np.array_equal(forms_p, forms_d)
    assert [s.offdiag_sum for s in sums_p] == [s.offdiag_sum for s in sums_d]


def test_v_statistic_requires_diagonal():
    _, _, res = _sums(20)
    with pytest.raises(ValueError, match="diagonal"):
        bootstrap_null(res.upper, "multinomial", 5, np.random.default_rng(0), statistic="v")


def test_pvalue_and_threshold_agree():
    null = np.random.default_rng(0).standard_normal(999)
    for alpha in (0.01, 0.05, 0.1):
        thr = bootstrap_threshold(null, alpha)
        for stat in np.linspace(-1, 4, 201):
            assert (bootstrap_pvalue(stat, null) <= alpha) == (stat > thr)
    assert bootstrap_pvalue(1e9, null) == pytest.approx(1 / 1000)
    assert bootstrap_pvalue(-1e9, null) == 1.0
    assert bootstrap_threshold(null[:10], 0.05) == np.inf
    # the corrected level of an aggregated test whose draws all tie is 1: the
    # threshold is then the smallest draw, and such a test does not reject
    assert bootstrap_threshold(null[:50], 1.0) == null[:50].min()
    res = aggregated_result(np.zeros(3), np.zeros((50, 3)), "tied", np.ones(3), alpha=0.025,
                            n_samples=2, bootstrap="multinomial", n_bootstrap=50)
    assert res.pvalue == 1.0 and not res.reject and res.threshold == 0.0


def test_draws_equal_to_the_statistic_up_to_rounding_are_ties():
    # two points: the wild bootstrap's draws are +-T exactly, so p is about 1/2 (the
    # aggregated test's at least that); the single-precision forms put the +T draws a
    # rounding error below T, and both tests rejected with p = 1/(M + 1)
    X = np.random.default_rng(0).standard_normal((2, 1))
    for bandwidth in ("aggregate", 1.0):
        res = KSDTest(std_normal_score, bandwidth=bandwidth, bootstrap="rademacher",
                      random_state=0).test(X)
        assert res.statistic > 0 and res.pvalue > 0.4, (bandwidth, res.pvalue)
    assert bootstrap_pvalue(1.0, np.array([1.0 - 1e-9, -1.0])) == 2.0 / 3.0
    assert bootstrap_pvalue(1.0, np.array([1.0 - 1e-3, -1.0])) == 1.0 / 3.0


@pytest.mark.slow
def test_rademacher_level_at_three_points():
    # 0.10 of 200 trials before draws tied with the statistic up to rounding counted
    trials, alpha = 200, 0.05
    rejections = sum(
        KSDTest(std_normal_score, bootstrap="rademacher", random_state=k)
        .test(np.random.default_rng([3, k]).standard_normal((3, 2))).reject
        for k in range(trials))
    assert rejections / trials <= alpha + 3 * np.sqrt(alpha * (1 - alpha) / trials)
