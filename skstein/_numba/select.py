"""Order statistics by selection, compiled small.

numba's ``np.partition`` and ``np.sort`` are general implementations (any ``kth``
array, its validation, several dtypes) whose compilation took about 7 of the 24
seconds of ``SVGD``'s first use on a 2-core machine. The median heuristics need one or
two order statistics of a float array at a time, which a quickselect of a few loops
gives: the same values (an order statistic is a value, whichever algorithm finds it).
"""

from numba import njit

#: Ranges of at most this many values are finished by insertion sort.
INSERTION_MAX = 16


@njit(cache=True, inline="always")
def _median_of_three(a, lo, hi):
    """The median of ``a[lo]``, ``a[(lo + hi) // 2]`` and ``a[hi]`` (one of the three)."""
    x = a[lo]
    y = a[(lo + hi) >> 1]
    z = a[hi]
    return max(min(x, y), min(max(x, y), z))


@njit(cache=True)
def select_kth(a, k):
    """The ``k``-th smallest value of the 1-D float array ``a`` (0-based), in place.

    ``a`` is reordered so that ``a[:k] <= a[k] <= a[k + 1:]``. Quickselect around a
    median of three, with partitions that have no branch on the data (Lomuto's scheme,
    every element swapped and the boundary moved by the comparison): the values below
    the pivot to the front, then, if ``k`` lies beyond them, the values equal to it, so
    ties never slow it down; insertion sort below :data:`INSERTION_MAX` values. On
    random values a branch that depends on the data is mispredicted half the time: at
    4950 values (the pairs of 100 particles) this takes 14 us where Hoare's scheme took
    50 us; on sorted or constant input, which a predictor learns, both take a few us.
    For finite values; with a NaN every pass still shrinks the range or returns, but the
    value returned is unspecified.
    """
    lo = 0
    hi = a.size - 1
    while hi - lo > INSERTION_MAX:
        pivot = _median_of_three(a, lo, hi)
        s = lo
        for i in range(lo, hi + 1):  # a[lo:s] < pivot <= a[s:i]
            v = a[i]
            a[i] = a[s]
            a[s] = v
            s += v < pivot
        if k < s:
            hi = s - 1
            continue
        e = s
        for i in range(s, hi + 1):  # a[s:e] == pivot < a[e:i]
            v = a[i]
            a[i] = a[e]
            a[e] = v
            e += v <= pivot
        if k < e or e == s:  # e == s only for a NaN pivot
            return pivot
        lo = e
    for i in range(lo + 1, hi + 1):
        v = a[i]
        j = i - 1
        while j >= lo and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v
    return a[k]


@njit(cache=True)
def select_pair(a, k):
    """The order statistics ``k`` and ``k + 1`` of ``a`` (the second equals the first
    when ``k`` is the last index), reordering ``a`` in place."""
    first = select_kth(a, k)
    second = first
    if k + 1 < a.size:
        second = a[k + 1]
        for i in range(k + 2, a.size):
            second = min(second, a[i])
    return first, second
