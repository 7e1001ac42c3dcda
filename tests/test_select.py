"""The selection behind the median heuristics (``skstein._numba.select``) against NumPy."""

import numpy as np
import pytest

from skstein._numba.select import select_kth, select_pair


@pytest.mark.parametrize("n", [1, 2, 3, 16, 17, 18, 100, 1001, 20000])
@pytest.mark.parametrize("kind", ["normal", "ties", "sorted", "reversed", "constant"])
def test_select_equals_numpy_partition(n, kind):
    rng = np.random.default_rng(n)
    a = {"normal": rng.standard_normal(n),
         "ties": rng.integers(0, 5, n).astype(float),
         "sorted": np.sort(rng.standard_normal(n)),
         "reversed": np.sort(rng.standard_normal(n))[::-1].copy(),
         "constant": np.full(n, 2.5)}[kind]
    ref = np.sort(a)
    for k in sorted({0, n // 2, (n - 1) // 2, n - 1}):
        b = a.copy()
        assert select_kth(b, k) == ref[k]
        # the partial order that np.partition promises
        assert np.all(b[:k] <= b[k]) and np.all(b[k + 1:] >= b[k])
        assert np.array_equal(np.sort(b), ref)  # a permutation of the input
        first, second = select_pair(a.copy(), k)
        assert first == ref[k] and second == ref[min(k + 1, n - 1)]


def test_select_ends_on_nan():
    a = np.array([3.0, np.nan, 1.0] * 20)
    select_kth(a, 30)  # unspecified value, but it returns


def test_select_random_sizes_ranks_and_ties():
    # every rank of many small arrays, with few or many distinct values: the value,
    # the partial order and the permutation, against NumPy's sort
    rng = np.random.default_rng(7)
    for _ in range(400):
        n = int(rng.integers(1, 120))
        a = rng.integers(0, int(rng.integers(1, 40)), n).astype(float)
        if rng.random() < 0.5:
            a += rng.standard_normal(n)
        ref = np.sort(a)
        k = int(rng.integers(0, n))
        b = a.copy()
        assert select_kth(b, k) == ref[k]
        assert np.all(b[:k] <= b[k]) and np.all(b[k + 1:] >= b[k])
        assert np.array_equal(np.sort(b), ref)


@pytest.mark.parametrize("seed", range(5))
def test_select_ends_on_nans_anywhere(seed):
    # NaNs in random places, as the pivot or not, or everywhere: it returns
    rng = np.random.default_rng(seed)
    for frac in (0.01, 0.3, 1.0):
        a = rng.standard_normal(500)
        a[rng.random(500) < frac] = np.nan
        for k in (0, 250, 499):
            select_kth(a.copy(), k)
            select_pair(a.copy(), k)


@pytest.mark.parametrize("kind", ["random", "sorted", "reversed", "organ", "valley", "runs",
                                  "pair distances", "few values"])
def test_select_splits_structured_input_well(kind):
    # quickselect with a poor pivot rule takes a number of passes proportional to n on
    # such input (a median of three took 187 ms on 100 000 reversed values); this one
    # stays within a few times log2(n), and each pass returns the right value
    from skstein._numba.select import select_passes

    m = 100_000
    rng = np.random.default_rng(3)
    half = np.arange(m // 2, dtype=float)
    grid = np.arange(448, dtype=float)
    a = {"random": rng.random(m),
         "sorted": np.arange(m, dtype=float),
         "reversed": np.arange(m, dtype=float)[::-1].copy(),
         "organ": np.concatenate([half, half[::-1]]),
         "valley": np.concatenate([half[::-1], half]),
         "runs": np.tile(np.arange(1000.0), 100),
         # the upper triangle, row by row, of the squared distances of a 1-D grid
         "pair distances": np.concatenate([(grid[i + 1:] - grid[i]) ** 2
                                           for i in range(grid.size - 1)]),
         "few values": rng.integers(0, 3, m).astype(float)}[kind]
    ref = np.sort(a)
    for k in (0, a.size // 4, (a.size - 1) // 2, a.size - 1):
        value, passes = select_passes(a.copy(), k)
        assert value == ref[k]
        assert passes <= 3 * np.log2(a.size) + 10, (kind, k, passes)
