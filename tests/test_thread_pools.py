"""One thread pool at a time: BLAS at one thread inside skstein's computations.

OpenBLAS's threads keep polling for work after a multi-threaded product and take the
cores from numba's next parallel pass (``skstein._threads``). The public computations
therefore hold BLAS at one thread on host data (and give the caller's count back
afterwards); their products run on numba's threads with one-thread BLAS calls. The
bootstrap forms built that way must equal a slow NumPy version and give the same bits
for any number of threads.
"""

import os
import subprocess
import sys

import numba
import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from skstein import KSDTest, MaxSKSDTest, RelativeKSDTest, ksd, max_sksd
from skstein._bootstrap import block_forms, bootstrap_forms, bootstrap_weights, forms_block
from skstein._numba._blas import gemm_nt
from skstein._threads import _glibc, caller_blas, numba_threads, single_blas
from skstein._xp import host_single_blas
from skstein.distributions import Gaussian


def _blas_threads():
    counts = {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}
    assert len(counts) == 1, counts
    return counts.pop()


@pytest.fixture
def two_blas_threads():
    with threadpool_limits(2, user_api="blas"):
        if _blas_threads() != 2:
            pytest.skip("BLAS does not take two threads here")
        yield


def _upper(n, seed):
    H = np.random.default_rng(seed).standard_normal((n, n))
    return np.triu(H + H.T, 1)


@pytest.mark.parametrize("n, method, draws", [(1, "multinomial", 3), (2, "rademacher", 5),
                                              (31, "multinomial", 40),
                                              (97, "rademacher", 1),
                                              (800, "multinomial", 64),
                                              (2500, "rademacher", 20)])
def test_bootstrap_forms_equal_the_quadratic_forms(n, method, draws):
    U = _upper(n, n)
    rng = np.random.default_rng(1)
    V = bootstrap_weights(method, n, draws, rng) if n > 1 else rng.standard_normal((draws, 1))
    slow = np.array([v @ (U + U.T) @ v for v in V])
    got = bootstrap_forms(U, V)
    assert got.shape == (draws,)
    np.testing.assert_allclose(got, slow, rtol=1e-12, atol=1e-12 * np.abs(slow).max())


def test_bootstrap_forms_are_the_same_for_any_number_of_threads():
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one numba thread")
    n = 1100
    assert -(-n // forms_block(n)) > 2  # several blocks to share
    U = _upper(n, 5)
    V = bootstrap_weights("multinomial", n, 300, np.random.default_rng(6))
    runs = []
    for t in (1, 2):
        with numba_threads(t):
            runs.append(bootstrap_forms(U, V))
    np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.parametrize("n, a, b", [(1, 0, 1), (40, 0, 40), (40, 13, 14), (700, 0, 700),
                                     (700, 250, 633)])
def test_block_forms_equal_the_rows_share_of_the_quadratic_forms(n, a, b):
    U = _upper(n, n + 1)
    H = U + U.T
    V = np.random.default_rng(2).standard_normal((37, n))
    slow = np.array([v[a:b] @ H[a:b] @ v for v in V])
    got = block_forms(H[a:b], V, a, b)
    np.testing.assert_allclose(got, slow, rtol=1e-12, atol=1e-12 * np.abs(slow).max())
    with pytest.raises(ValueError, match="H_rows"):
        block_forms(H[a:b, 1:], V, a, b)


def test_block_forms_are_the_same_for_any_number_of_threads():
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one numba thread")
    n = 1100
    U = _upper(n, 7)
    H = U + U.T
    V = bootstrap_weights("rademacher", n, 200, np.random.default_rng(8))
    runs = []
    for t in (1, 2):
        with numba_threads(t):
            runs.append(block_forms(H[100:900], V, 100, 900))
    np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.parametrize("m, k, n, skip", [(5, 7, 3, 0), (32, 500, 40, 300), (1, 1, 1, 0),
                                           (9, 4, 6, 2)])
def test_gemm_on_spaced_rows(m, k, n, skip):
    rng = np.random.default_rng(2)
    big = rng.standard_normal((m + 3, k + skip))
    A = big[2:2 + m, skip:]  # rows spaced by k + skip
    B = rng.standard_normal((n, k + 2 * skip))[:, skip:skip + k]  # spaced by k + 2 skip
    C = rng.standard_normal((m, n))
    want = A @ B.T + 0.5 * C
    gemm_nt(A, B, C, 0.5)
    np.testing.assert_allclose(C, want, rtol=1e-12, atol=1e-12)
    Bc = np.ascontiguousarray(B)  # contiguous rows, as in the Stein pass
    C2 = np.empty((m, n))
    gemm_nt(np.ascontiguousarray(A), Bc, C2, 0.0)
    np.testing.assert_allclose(C2, A @ B.T, rtol=1e-12, atol=1e-12)


def test_single_blas_holds_one_thread_and_gives_the_callers_back(two_blas_threads):
    with single_blas():
        assert _blas_threads() == 1
        with single_blas():  # nested: no change
            assert _blas_threads() == 1
        with caller_blas():
            assert _blas_threads() == 2
        assert _blas_threads() == 1
    assert _blas_threads() == 2
    with caller_blas():  # outside a block: nothing to give back
        assert _blas_threads() == 2


def _recording(model, seen):
    def score(X):
        seen.append(_blas_threads())
        return model.grad_logpdf(X)
    return score


def test_public_computations_hold_blas_at_one_thread(two_blas_threads):
    d = 3
    X = np.random.default_rng(3).standard_normal((120, d))
    model = Gaussian(np.zeros(d))
    seen = []
    score = _recording(model, seen)
    KSDTest(score, n_bootstrap=50, random_state=0).test(X)
    KSDTest(score, bandwidth="aggregate", n_bootstrap=50, random_state=0).fit(X).test(X)
    MaxSKSDTest(score, n_bootstrap=50, max_iter=2, random_state=0).test(X)
    ksd(X, score)
    max_sksd(X, score)
    RelativeKSDTest(score, Gaussian(np.ones(d)), random_state=0).test(X)
    assert len(seen) >= 6 and set(seen) == {1}
    assert _blas_threads() == 2


def test_device_arrays_keep_the_callers_blas_threads(two_blas_threads):
    xps = pytest.importorskip("array_api_strict")
    seen = []

    @host_single_blas
    def method(self, X):
        seen.append(_blas_threads())

    method(None, xps.asarray(np.zeros((3, 2))))
    method(None, np.zeros((3, 2)))
    assert seen == [2, 1]


@pytest.mark.parametrize("m, k, n", [(3, 4, 5), (300, 80, 90), (1000, 100, 30)])
def test_product_nt_equals_numpy_for_any_number_of_threads(m, k, n):
    from skstein.kernels import POOLED_PRODUCT_MADDS, product_nt

    rng = np.random.default_rng(m)
    A, B = rng.standard_normal((m, k)), rng.standard_normal((n, k))
    runs = []
    for t in (1, 2):
        with numba_threads(t):
            runs.append(product_nt(A, B))
    np.testing.assert_allclose(runs[0], A @ B.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(runs[0], runs[1])
    assert runs[0].flags.c_contiguous
    if m * k * n >= POOLED_PRODUCT_MADDS:  # the pooled path, on column blocks too
        np.testing.assert_allclose(product_nt(A[:, 5:], B[:, 5:]), A[:, 5:] @ B[:, 5:].T,
                                   rtol=1e-12, atol=1e-12)


def test_single_blas_blocks_ending_out_of_order_in_threads_restore_the_count(
        two_blas_threads):
    # BLAS's thread count is one setting of the process; blocks of two Python threads
    # that end in another order than they began must not leave it at one thread
    import threading

    inside = threading.Barrier(2)
    first_out = threading.Event()

    def first():
        with single_blas():
            inside.wait()
        first_out.set()

    def second():
        with single_blas():
            inside.wait()
            first_out.wait()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert _blas_threads() == 2


def test_pairwise_distances_of_pooled_gram_products_for_any_number_of_threads():
    # the Gram product of the distances runs on numba's threads by row blocks fixed by
    # the shape: the same bits on one thread and on all, and pdist's values
    from scipy.spatial.distance import pdist

    from skstein._threads import numba_threads
    from skstein.kernels import POOLED_PRODUCT_MADDS, pairwise_distances_condensed

    X = np.random.default_rng(3).standard_normal((300, 40)) + 5.0
    X[7] = X[3]                                  # a repeated row: an exact zero
    assert 300 * 40 * 300 >= POOLED_PRODUCT_MADDS
    with numba_threads(1):
        one = pairwise_distances_condensed(X)
    assert np.array_equal(pairwise_distances_condensed(X), one)
    np.testing.assert_allclose(one, pdist(X), rtol=1e-12)
    assert one[np.flatnonzero(pdist(X) == 0)].max() == 0.0


def test_shared_direction_pass_for_any_number_of_threads():
    # one direction for every slice: one parallel pass over rows from a few thousand
    # pairs on, each row in a fixed order, so one thread and all give the same bits
    from skstein.discrepancy import (SERIAL_PAIR_EVALUATIONS, SHARED_PAIR_WEIGHT,
                                     sliced_stein_sums)

    rng = np.random.default_rng(8)
    n, d = 150, 6
    assert n * n * SHARED_PAIR_WEIGHT >= SERIAL_PAIR_EVALUATIONS
    X = rng.standard_normal((n, d))
    S = -X + 0.2 * rng.standard_normal((n, d))
    g = rng.standard_normal(d)
    g /= np.linalg.norm(g)
    G, R = np.tile(g, (d, 1)), np.eye(d)
    runs = []
    for threads in (1, None):
        with numba_threads(threads) if threads else single_blas():
            runs.append(sliced_stein_sums(X, S, G, R, np.full(d, 0.8), return_matrix=True))
    a, b = runs
    assert a.offdiag_sum == b.offdiag_sum
    assert np.array_equal(a.upper, b.upper) and np.array_equal(a.pair_sums, b.pair_sums)


@pytest.mark.parametrize("given, expected", [
    ({}, ("PASSIVE", "10000")),
    ({"OMP_WAIT_POLICY": "ACTIVE"}, ("ACTIVE", None)),
    ({"GOMP_SPINCOUNT": "7"}, ("PASSIVE", "7")),
])
def test_importing_sets_the_openmp_wait_unless_the_user_did(given, expected):
    """Idle OpenMP threads sleep after a short poll (``skstein._threads.SPIN_COUNT``);
    a wait policy or spin count the user set is left as it is."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(given)
    code = ("import os, skstein._threads as t; "
            "print(os.environ.get('OMP_WAIT_POLICY'), os.environ.get('GOMP_SPINCOUNT'), "
            "t.SPIN_COUNT)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out[:2] == [str(e) for e in expected]
    assert int(out[2]) == 10000


_GLIBC = sys.platform.startswith("linux") and _glibc()


@pytest.mark.skipif(not _GLIBC, reason="glibc's malloc only")
@pytest.mark.parametrize("given, tuned", [
    ({}, True),
    ({"SKSTEIN_MALLOC": "0"}, False),
    ({"MALLOC_TOP_PAD_": "131072"}, False),
    ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=131072"}, False),
])
def test_importing_sets_the_allocator_unless_the_user_did(given, tuned):
    """glibc's malloc keeps arrays up to 32 MiB on the heap and up to 64 MiB of free
    heap (``skstein._threads.MALLOC_TUNED``); a malloc setting of the user, or
    ``SKSTEIN_MALLOC=0``, leaves it alone. Tuned, a process that allocates and frees
    three 16 MiB arrays again and again takes its page faults once (untuned, glibc's
    dynamic thresholds after a first 20 MiB array hand the 48 MiB back each time)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MALLOC_") and k not in ("SKSTEIN_MALLOC", "GLIBC_TUNABLES")}
    env.update(given)
    code = ("import resource, numpy as np, skstein._threads as t\n"
            "first = np.ones(20 * 2**17)\n"
            "del first\n"
            "def faults():\n"
            "    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
            "counts = []\n"
            "for _ in range(4):\n"
            "    f0 = faults()\n"
            "    arrays = [np.ones(2**21) for _ in range(3)]\n"
            "    del arrays\n"
            "    counts.append(faults() - f0)\n"
            "print(t.MALLOC_TUNED, max(counts[1:]))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out[0] == str(tuned)
    if tuned:  # untuned, the memory goes back each round: 1500 faults a round with
        # the huge pages NumPy asks for, 12288 with 4 KiB pages
        assert int(out[1]) < 100


@pytest.mark.parametrize("shape, first, chunk", [((1000, 100), False, 8192),
                                                 ((333, 101), True, 64), ((7, 3), False, 5)])
def test_parallel_adagrad_step_equals_the_serial_one(shape, first, chunk):
    # the same bits (steps, accumulators, maxima, NaN included) by ranges on any threads
    from skstein._numba.svgd import adagrad_step, adagrad_step_chunks

    rng = np.random.default_rng(shape[0])
    arrays = [rng.standard_normal(shape), rng.standard_normal(shape), rng.random(shape),
              rng.standard_normal(shape)]
    if shape == (7, 3):
        arrays[0][4, 1] = np.nan
    ref = [a.copy() for a in arrays]
    ref_max = adagrad_step(ref[0], ref[1], 10.0, ref[2], first, 0.1, ref[3])
    for t in (1, 2):
        got = [a.copy() for a in arrays]
        with numba_threads(t):
            got_max = adagrad_step_chunks(got[0], got[1], 10.0, got[2], first, 0.1, got[3],
                                          chunk)
        np.testing.assert_array_equal(np.array(got_max), np.array(ref_max))
        for g, r in zip(got, ref):
            np.testing.assert_array_equal(g, r)
    assert np.isnan(ref_max[0]) == (shape == (7, 3))


@pytest.mark.parametrize("shape", [(300, 300), (1000, 77), (5, 20000)])
def test_weight_columns_transpose_dense_weights_exactly(shape):
    from skstein._bootstrap import weight_columns

    V = np.random.default_rng(shape[1]).standard_normal(shape)
    for t in (1, 2):
        with numba_threads(t):
            for dtype in (np.float32, np.float64):
                got = weight_columns(V, dtype)
                assert got.dtype == dtype and got.flags.c_contiguous
                np.testing.assert_array_equal(got, V.T.astype(dtype))
