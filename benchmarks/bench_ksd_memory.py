"""Peak memory and time of the KSD statistic at N = 50,000, D = 10.

Runs the statistic in a fresh subprocess and reports the growth of the peak
resident set size over the baseline after imports and data creation (Linux
``ru_maxrss``), and the peak of NumPy allocations traced by ``tracemalloc``.

Run: ``python benchmarks/bench_ksd_memory.py [--n 50000] [--d 10]``
"""

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time, tracemalloc
import numpy as np
from skstein import ksd
from skstein.distributions import Gaussian
n, d = int(sys.argv[1]), int(sys.argv[2])
X = np.random.default_rng(0).standard_normal((n, d))
model = Gaussian(np.zeros(d))
ksd(X[:200], model)  # load the compiled kernels
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tracemalloc.start()
t0 = time.perf_counter()
value = ksd(X, model, bandwidth="median", random_state=0)
elapsed = time.perf_counter() - t0
traced = tracemalloc.get_traced_memory()[1]
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps(dict(value=value, seconds=elapsed, rss_base_mb=base / 1024,
                      rss_peak_mb=peak / 1024, traced_peak_mb=traced / 2**20)))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--d", type=int, default=10)
    args = ap.parse_args()
    out = subprocess.run([sys.executable, "-c", CHILD, str(args.n), str(args.d)],
                         capture_output=True, text=True, check=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"KSD statistic N={args.n} D={args.d}: {r['seconds']:.2f} s, value {r['value']:.3e}")
    print(f"  peak RSS {r['rss_peak_mb']:.0f} MB (baseline after imports and data "
          f"{r['rss_base_mb']:.0f} MB, growth {r['rss_peak_mb'] - r['rss_base_mb']:.0f} MB)")
    print(f"  peak traced NumPy allocations during the call {r['traced_peak_mb']:.0f} MB")
    print(f"  (an N x N float64 matrix would be {8 * args.n**2 / 2**20:.0f} MB)")


if __name__ == "__main__":
    main()
