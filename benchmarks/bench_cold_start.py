"""Cold start: ``skstein demo --quick`` in a fresh process, numba cache warm.

The first run fills the numba cache (and is reported separately); the median of
the following runs is the cold-start time of a user's second invocation.

Run: ``python benchmarks/bench_cold_start.py [--repeat 5]``
"""

import argparse
import subprocess
import sys
import tempfile
import time

import numpy as np


def run_once(out):
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "skstein", "demo", "--quick", "--out", out],
                   check=True, capture_output=True)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as out:
        first = run_once(out)
        times = [run_once(out) for _ in range(args.repeat)]
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import skstein"], check=True)
    imp = time.perf_counter() - t0
    print(f"skstein demo --quick: first run {first:.2f} s; warm-cache median {np.median(times):.2f} s "
          f"(min {min(times):.2f}, max {max(times):.2f}, {args.repeat} runs)")
    print(f"python -c 'import skstein': {imp:.2f} s")


if __name__ == "__main__":
    main()
