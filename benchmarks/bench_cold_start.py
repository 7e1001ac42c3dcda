"""Cold start: the first use of each test family, and ``skstein demo --quick``.

Numba compiles skstein's kernels on their first call and keeps them in its cache
(``NUMBA_CACHE_DIR``). Every measurement here runs in a fresh subprocess with its own
empty temporary cache directory, so it is what a user sees the first time:

* first use of each family: the seconds of one call (fit and test, or a short
  sampler run) on a small problem, timed inside the subprocess after the imports;
  with ``--warm`` the same call is timed once more in a second process on the same
  (now filled) cache;
* ``skstein demo --quick``: the wall time of the whole command the first time (empty
  cache) and the median of ``--repeat`` further runs (cache filled), and their ratio;
* ``python -c 'import skstein'``.

Run: ``python benchmarks/bench_cold_start.py [--repeat 3] [--warm] [--only NAME,...]``
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The first use of each family: setup code (not timed) and the timed call.
FAMILIES = {
    "KSDTest (median bandwidth)": (
        "from skstein import KSDTest\nfrom skstein.distributions import Gaussian\n"
        "X = np.random.default_rng(0).standard_normal((200, 5))\n"
        "test = KSDTest(Gaussian(np.zeros(5)), bandwidth='median', n_bootstrap=200,"
        " random_state=0)",
        "test.test(X)"),
    "KSDTest (aggregated)": (
        "from skstein import KSDTest\nfrom skstein.distributions import Gaussian\n"
        "X = np.random.default_rng(0).standard_normal((200, 5))\n"
        "test = KSDTest(Gaussian(np.zeros(5)), n_bootstrap=200, random_state=0)",
        "test.test(X)"),
    "MaxSKSDTest": (
        "from skstein import MaxSKSDTest\nfrom skstein.distributions import Gaussian\n"
        "X = np.random.default_rng(0).standard_normal((200, 5))\n"
        "test = MaxSKSDTest(Gaussian(np.zeros(5)), n_bootstrap=200, random_state=0)",
        "test.test(X)"),
    "RelativeKSDTest": (
        "from skstein import RelativeKSDTest\nfrom skstein.distributions import Gaussian\n"
        "X = np.random.default_rng(0).standard_normal((200, 5))\n"
        "test = RelativeKSDTest(Gaussian(np.zeros(5)), Gaussian(np.full(5, 0.3)),"
        " random_state=0)",
        "test.test(X)"),
    "SVGD": (
        "from skstein import SVGD\nfrom skstein.distributions import Gaussian\n"
        "X0 = np.random.default_rng(0).standard_normal((50, 5)) + 2\n"
        "est = SVGD(Gaussian(np.zeros(5)), n_iter=20, random_state=0)",
        "est.fit(X0)"),
    "SlicedSVGD": (
        "from skstein import SlicedSVGD\nfrom skstein.distributions import Gaussian\n"
        "X0 = np.random.default_rng(0).standard_normal((50, 5)) + 2\n"
        "est = SlicedSVGD(Gaussian(np.zeros(5)), n_iter=20, random_state=0)",
        "est.fit(X0)"),
    "KSDTest (discrete, Categorical)": (
        "from skstein import KSDTest\nfrom skstein.distributions import Categorical\n"
        "p = Categorical(np.random.default_rng(0).dirichlet(np.full(4, 2.0), size=6))\n"
        "X = p.rvs(200, random_state=1)\n"
        "test = KSDTest(p, n_bootstrap=200, random_state=0)",
        "test.test(X)"),
}

_TIMED = """
import time
import numpy as np
{setup}
t0 = time.perf_counter()
{call}
print("SECONDS", time.perf_counter() - t0)
"""


def _env(cache_dir=None):
    env = dict(os.environ)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    return env


def first_use(setup, call, warm=False):
    """Seconds of ``call`` in a fresh process on an empty numba cache (and on the filled one)."""
    code = _TIMED.format(setup=setup, call=call)
    with tempfile.TemporaryDirectory() as cache:
        times = []
        for _ in range(2 if warm else 1):
            res = subprocess.run([sys.executable, "-c", code], env=_env(cache),
                                 capture_output=True, text=True, check=True)
            times.append(float(res.stdout.split("SECONDS")[-1]))
    return times


def demo_times(repeat):
    """Wall seconds of ``skstein demo --quick``: the first run (empty cache), then ``repeat``."""
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
        times = []
        for _ in range(1 + repeat):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "skstein", "demo", "--quick", "--out", out],
                           env=_env(cache), check=True, capture_output=True)
            times.append(time.perf_counter() - t0)
    return times[0], times[1:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="demo runs on the filled cache")
    ap.add_argument("--warm", action="store_true",
                    help="also time each family's call in a second process (cache filled)")
    ap.add_argument("--only", default=None,
                    help="comma-separated family names (substrings); 'demo' for the demo only")
    args = ap.parse_args()
    only = args.only.split(",") if args.only else None

    def wanted(name):
        return only is None or any(o.lower() in name.lower() for o in only)

    print(f"fresh NUMBA_CACHE_DIR per measurement; python {sys.version.split()[0]}, "
          f"{os.cpu_count()} cores")
    for name, (setup, call) in FAMILIES.items():
        if not wanted(name):
            continue
        times = first_use(setup, call, args.warm)
        line = f"  {name:34s} first use {times[0]:6.2f} s"
        if args.warm:
            line += f"   cached {times[1]:6.2f} s"
        print(line, flush=True)
    if wanted("demo"):
        first, rest = demo_times(args.repeat)
        second = float(np.median(rest))
        print(f"skstein demo --quick: first run {first:.2f} s; cached median {second:.2f} s "
              f"(min {min(rest):.2f}, max {max(rest):.2f}, {args.repeat} runs); "
              f"ratio {first / second:.2f}")
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import skstein"], env=_env(), check=True)
    print(f"python -c 'import skstein': {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
