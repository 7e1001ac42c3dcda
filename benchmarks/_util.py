"""Small timing helpers shared by the benchmark scripts."""

import time

import numpy as np


def median_time(fn, repeat=15, warmup=2):
    """Median wall time of ``fn()`` in seconds over ``repeat`` runs after ``warmup`` runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), times
