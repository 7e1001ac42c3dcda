"""How the numba Stein pass and a whole KSDTest scale with cores.

For each thread count, numba and BLAS are limited to that many threads and the
median time of (a) the Stein-kernel pass that forms the matrix and (b) a whole
``KSDTest.test`` with 1000 bootstrap draws is printed, with the speed-up over one
thread. Pair-evaluations per second count the ``N (N - 1) / 2`` kernel pairs.

Run: ``python benchmarks/bench_scaling.py [--n 2000] [--d 100] [--threads 1 2 4 8 16]``
"""

import argparse
import os

import numba
import numpy as np
from threadpoolctl import threadpool_limits

from _util import median_time
from skstein import KSDTest
from skstein._numba import numba_threads
from skstein.discrepancy import stein_sums
from skstein.distributions import Gaussian


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((args.n, args.d))
    model = Gaussian(np.zeros(args.d))
    S = model.grad_logpdf(X)
    test = KSDTest(model, bandwidth="median", n_bootstrap=1000, random_state=0).fit(X)
    kern = test.kernel_
    pairs = args.n * (args.n - 1) / 2
    print(f"N={args.n} D={args.d}; cpus available {len(os.sched_getaffinity(0))}, "
          f"numba max threads {numba.config.NUMBA_NUM_THREADS}")
    base = None
    for t in args.threads:
        if t > numba.config.NUMBA_NUM_THREADS:
            continue
        with numba_threads(t), threadpool_limits(t):
            ts, _ = median_time(lambda: stein_sums(X, S, kern, return_matrix=True), args.repeat)
            tt, _ = median_time(lambda: test.test(X), args.repeat)
        base = base or (ts, tt)
        print(f"threads {t:2d}: Stein pass {ts * 1e3:7.1f} ms ({pairs / ts / 1e6:6.1f} M pairs/s, "
              f"x{base[0] / ts:4.1f})   KSDTest.test {tt * 1e3:7.1f} ms (x{base[1] / tt:4.1f})")


if __name__ == "__main__":
    main()
