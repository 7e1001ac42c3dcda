"""Order statistics by selection, compiled small.

numba's ``np.partition`` and ``np.sort`` are general implementations (any ``kth``
array, its validation, several dtypes) whose compilation took about 7 of the 24
seconds of ``SVGD``'s first use on a 2-core machine. The median heuristics need one or
two order statistics of a float array at a time, which a quickselect of a few loops
gives: the same values (an order statistic is a value, whichever algorithm finds it).
"""

import numpy as np
from numba import njit

#: Ranges of at most this many values are finished by insertion sort.
INSERTION_MAX = 16


@njit(cache=True)
def select_kth(a, k):
    """The ``k``-th smallest value of the 1-D float array ``a`` (0-based), in place.

    ``a`` is reordered so that ``a[:k] <= a[k] <= a[k + 1:]`` (quickselect: Hoare
    partitions around a median of three, insertion sort below :data:`INSERTION_MAX`
    values). For finite values; a NaN stops every scan, so the loops end, but the value
    returned is then unspecified.
    """
    lo = 0
    hi = a.size - 1
    while hi - lo > INSERTION_MAX:
        mid = (lo + hi) >> 1
        if a[mid] < a[lo]:
            a[mid], a[lo] = a[lo], a[mid]
        if a[hi] < a[lo]:
            a[hi], a[lo] = a[lo], a[hi]
        if a[hi] < a[mid]:
            a[hi], a[mid] = a[mid], a[hi]
        pivot = a[mid]
        i = lo
        j = hi
        while i <= j:
            while a[i] < pivot:
                i += 1
            while a[j] > pivot:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return a[k]
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
