"""The Stein pass on numba's threads alone (``discrepancy._pooled_pass``).

It must give the sums of the pass whose Gram products BLAS forms between numba's
kernels (the path beyond its memory, forced here with a small ``max_memory``), and
the same bits for any number of threads.
"""

import functools

import numba
import numpy as np
import pytest

from _reference import imq_parts, rbf_parts, stein_matrix_loop
from skstein import discrepancy
from skstein._bootstrap import bootstrap_weights
from skstein._threads import numba_threads
from skstein.discrepancy import _pooled_pass, stein_sums, stein_sums_and_forms
from skstein.kernels import IMQ, RBF


def _case(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, 0.3 - X + 0.1 * rng.standard_normal((n, d))


def _rel(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


@pytest.mark.parametrize("n, d, kernels", [
    (300, 3, [RBF(h) for h in (0.3, 1.0, 3.0)]),
    (777, 1, [IMQ(h) for h in np.geomspace(0.1, 10, 10)]),
    (150, 20, [IMQ(2.0, beta=-0.3)]),
    (65, 2, [RBF(1.5)]),
])
def test_pooled_pass_equals_the_two_pool_pass(n, d, kernels):
    X, S = _case(n, d)
    V = bootstrap_weights("rademacher", n, 200, np.random.default_rng(1))
    pooled, fp = stein_sums_and_forms(X, S, kernels, V)
    # a budget too small for the pooled pass's column sums takes the other path
    assert _pooled_pass(X, S, np.ones(n), np.ones(n), 0, np.ones(len(kernels)), 0.0, d,
                        np.ones(len(kernels)), None, 16) is None
    other, fo = stein_sums_and_forms(X, S, kernels, V, max_memory=16)
    for a, b in zip(pooled, other):
        assert a.offdiag_sum == pytest.approx(b.offdiag_sum, rel=1e-12, abs=1e-12)
        assert _rel(a.rowsums, b.rowsums) < 1e-12
        np.testing.assert_array_equal(a.diag, b.diag)
    # the forms run in single precision on both paths, summed in other orders
    assert _rel(fp, fo) < 1e-5
    one = stein_sums(X, S, kernels[0])
    assert one.offdiag_sum == pytest.approx(pooled[0].offdiag_sum, rel=1e-12)
    assert _rel(one.rowsums, pooled[0].rowsums) < 1e-12


def test_pooled_pass_is_the_same_for_any_number_of_threads():
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one numba thread")
    X, S = _case(700, 4, seed=2)
    kernels = [IMQ(h) for h in (0.5, 1.0, 2.0)]
    V = bootstrap_weights("multinomial", 700, 150, np.random.default_rng(3))
    runs = []
    for t in (1, 2):
        with numba_threads(t):
            runs.append(stein_sums_and_forms(X, S, kernels, V))
    (s1, f1), (s2, f2) = runs
    np.testing.assert_array_equal(f1, f2)
    for a, b in zip(s1, s2):
        assert a.offdiag_sum == b.offdiag_sum
        np.testing.assert_array_equal(a.rowsums, b.rowsums)


@pytest.mark.parametrize("chunk", [1024, 40, 7])
@pytest.mark.parametrize("kernel, parts", [
    (RBF(1.3), functools.partial(rbf_parts, h=1.3)),
    (IMQ(0.8, beta=-0.3), functools.partial(imq_parts, h=0.8, beta=-0.3)),
])
def test_the_pass_writes_the_stein_matrix(monkeypatch, kernel, parts, chunk):
    # the matrix of ``return_matrix`` is written by the pooled pass's blocks; small
    # chunks put the diagonal inside, at the edge of and beyond a chunk
    monkeypatch.setattr(discrepancy, "POOLED_CHUNK", chunk)
    n, d = 90, 3
    X, S = _case(n, d, seed=4)
    H = stein_matrix_loop(X, S, lambda x, y: parts(x, y))
    np.fill_diagonal(H, 0.0)
    plain = stein_sums(X, S, kernel)
    upper = stein_sums(X, S, kernel, return_matrix=True)
    whole = stein_sums(X, S, kernel, return_matrix=True, mirror=True)
    np.testing.assert_allclose(upper.upper, np.triu(H, 1), rtol=1e-10, atol=1e-12)
    assert np.all(np.tril(upper.upper) == 0.0)
    np.testing.assert_array_equal(whole.upper, upper.upper + upper.upper.T)
    assert whole.upper.flags.c_contiguous
    for res in (upper, whole):  # the same bits as the pass without the matrix
        assert res.offdiag_sum == plain.offdiag_sum
        np.testing.assert_array_equal(res.rowsums, plain.rowsums)


def test_the_written_matrix_is_the_same_for_any_number_of_threads():
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one numba thread")
    X, S = _case(1300, 5, seed=5)
    runs = []
    for t in (1, 2):
        with numba_threads(t):
            runs.append(stein_sums(X, S, IMQ(1.0), return_matrix=True, mirror=True).upper)
    np.testing.assert_array_equal(runs[0], runs[1])
