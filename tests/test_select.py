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
