"""PolynomialKSDTest.test speed against KSDTest on the same data, in the same run.

The polynomial test forms its Stein matrix by blocks of 32 rows of its upper triangle
on numba's threads (four one-thread Gram products and the kernel per block) and draws
1000 bootstrap forms (beyond ``max_memory``, 64 MiB or N = 2896, the forms of each
block of rows as it is formed); ``--degrees 1 3`` times the aggregated test of those
degrees as well. Both polynomial tests learn their coordinates on the tested
sample alone (``reference="sample"``, one pass; the default aggregate with the
model's draws costs two). The KSD tests
are the one-bandwidth test (``bandwidth="median"``) and the default aggregated test
(10 bandwidths), both on numba's threads. Data: N(0, I) with unit-variance Laplace
along one random direction; model N(0, I). Medians of ``--repeat`` runs of one process.

Run: ``python benchmarks/bench_polynomial.py [--n 1000 5000] [--d 10 100] [--repeat 5]``
"""

import argparse

import numpy as np

from _util import median_time
from skstein import KSDTest, PolynomialKSDTest
from skstein.distributions import Gaussian


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 5000])
    ap.add_argument("--d", type=int, nargs="+", default=[10, 100])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--degrees", type=int, nargs="*", default=[])
    args = ap.parse_args()
    extra = f" {'degrees ' + ','.join(map(str, args.degrees)):>15}" if args.degrees else ""
    print(f"{'n':>6} {'d':>4} {'polynomial':>11} {'KSD median':>11} {'KSD aggregated':>15}"
          + extra)
    for n in args.n:
        for d in args.d:
            rng = np.random.default_rng(0)
            v = np.linalg.qr(rng.standard_normal((d, d)))[0][:, 0]
            Z = rng.standard_normal((n, d))
            X = Z + np.outer(rng.laplace(scale=2**-0.5, size=n) - Z @ v, v)
            model = Gaussian(np.zeros(d))
            tests = [PolynomialKSDTest(model, random_state=0, reference="sample"),
                     KSDTest(model, bandwidth="median", random_state=0),
                     KSDTest(model, random_state=0)]
            if args.degrees:
                tests.append(PolynomialKSDTest(model, degree=tuple(args.degrees),
                                               random_state=0, reference="sample"))
            times = [median_time(lambda t=t: t.test(X), repeat=args.repeat, warmup=1)[0]
                     for t in tests]
            more = f" {times[3]:>14.3f}s" if args.degrees else ""
            print(f"{n:>6} {d:>4} {times[0]:>10.3f}s {times[1]:>10.3f}s {times[2]:>14.3f}s"
                  + more, flush=True)


if __name__ == "__main__":
    main()
