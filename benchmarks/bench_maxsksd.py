"""Benchmark: one complete maxSKSD-g test, and the throughput of the sliced pass.

One complete test is ``MaxSKSDTest(model).test(X)`` on N = 1000 points in D = 100
dimensions (Laplace data, standard-normal model): the direction search on 200
points, the statistic and 1000 multinomial bootstrap draws on the other 800, and the
whole sample's second and fourth moments -- the settings of the ``gof-gaussian``
reproduction. Reported: the median wall time over ``--repeats`` runs (after one
warm-up run that also compiles), the same for the paper's test (``moment=False``:
the split alone), for the cross-fitted test (``cv=2``: two folds of 500 points, each
tested with directions learned on the other, each ascent on 200 of its points, and
the moments of all 1000), for the KSD test on all 1000 points (a baseline measured
in the same process) and for the maxSKSD-g test whose search starts from random
directions (100 steps), the peak
memory of the test (``tracemalloc`` peak of one call, and the process's peak RSS
measured in a fresh subprocess that runs only the test), and pair-evaluations per
second per core of the sliced passes with 1 and all numba threads. Last, the
``gof-rbm`` maxSKSD-rg protocol (D = 50, 50 free slices): the median time of one
``partial_fit`` step on 200 Gibbs states, 2000 of them, and the test on 800 points.

Run::

    python benchmarks/bench_maxsksd.py [--dim 100] [--repeats 7]
"""

import argparse
import json
import os
import subprocess
import sys
import time
import tracemalloc

import numpy as np


def _setup(dim, n):
    from skstein.distributions import Gaussian, Laplace

    model = Gaussian(np.zeros(dim))
    X = Laplace(dim).rvs(n, random_state=0)
    return model, X


def _median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), times


def bench_test(dim, n, repeats):
    from skstein import KSDTest, MaxSKSDTest

    model, X = _setup(dim, n)
    test = MaxSKSDTest(model, variant="g", n_bootstrap=1000, random_state=0)
    ksd = KSDTest(model, bandwidth="median", n_bootstrap=1000, random_state=0)
    crossfit = MaxSKSDTest(model, variant="g", cv=2, n_bootstrap=1000, random_state=0)
    # the paper's test: the split alone (no whole-sample moments)
    split = MaxSKSDTest(model, variant="g", moment=False, n_bootstrap=1000, random_state=0)
    res = test.test(X)  # warm-up (compilation, caches)
    res_cv = crossfit.test(X)
    split.test(X)
    ksd.test(X)
    t_max, times = _median_time(lambda: test.test(X), repeats)
    t_cv, _ = _median_time(lambda: crossfit.test(X), repeats)
    t_split, _ = _median_time(lambda: split.test(X), repeats)
    t_ksd, _ = _median_time(lambda: ksd.test(X), repeats)
    # the same test with the search started at random directions (100 Adam steps)
    rand = MaxSKSDTest(model, variant="g", init="random", max_iter=100, learning_rate=0.05,
                       patience=30, n_bootstrap=1000, random_state=0)
    res_rand = rand.test(X)
    t_rand, _ = _median_time(lambda: rand.test(X), max(1, repeats // 2))
    tracemalloc.start()
    test.test(X)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "maxsksd_g_test_median_s": t_max,
        "maxsksd_g_test_times_s": [round(t, 4) for t in times],
        "maxsksd_g_paper_split_test_median_s": t_split,
        "ratio_default_over_paper_split": t_max / t_split,
        "maxsksd_g_crossfit_test_median_s": t_cv,
        "ratio_crossfit_over_default": t_cv / t_max,
        "crossfit_reject": bool(res_cv.reject),
        "ksd_test_median_s": t_ksd,
        "ratio_maxsksd_over_ksd": t_max / t_ksd,
        "maxsksd_g_random_init_test_median_s": t_rand,
        "random_init_reject": bool(res_rand.reject),
        "tracemalloc_peak_MB": peak / 2**20,
        "reject": bool(res.reject),
        "pvalue": float(res.pvalue),
    }


def bench_pass(dim, repeats):
    import numba

    from skstein._numba import numba_threads
    from skstein.discrepancy import sliced_stein_sums, sliced_value_and_grad

    rng = np.random.default_rng(0)
    out = {}
    for threads in sorted({1, numba.config.NUMBA_NUM_THREADS}):
        with numba_threads(threads):
            for n, kind in ((800, "statistic+matrix"), (200, "value+gradients")):
                X = rng.standard_normal((n, dim))
                S = -X
                G = np.eye(dim)
                h = np.ones(dim)
                if kind == "statistic+matrix":
                    pairs = n * (n - 1) / 2 * dim  # upper triangle

                    def fn():
                        sliced_stein_sums(X, S, G, G, h, return_matrix=True)
                else:
                    pairs = n * (n - 1) * dim  # full rows

                    def fn():
                        sliced_value_and_grad(X, S, G, G, h)
                fn()
                t, _ = _median_time(fn, repeats)
                out[f"{kind} N={n} threads={threads}"] = {
                    "median_s": t,
                    "pair_evaluations_per_s_per_core": pairs / t / threads,
                }
    return out


def bench_stream(repeats):
    """The ``gof-rbm`` maxSKSD-rg protocol: partial_fit steps on 200 Gibbs states, then a test."""
    from skstein.experiments.gof_rbm import make_test, rbm_pair

    p, q = rbm_pair(0.01, 50, 40, seed=0, burn_in=2000)
    batches = list(q.gibbs_chains(200, 60, random_state=1))
    X = q.rvs(800, random_state=2)
    test = make_test("maxSKSD-rg", p, 1000).set_params(random_state=0)  # FULL settings
    test.partial_fit(batches[0])  # compile
    step_times = []
    for batch in batches[1:]:
        t0 = time.perf_counter()
        test.partial_fit(batch)
        step_times.append(time.perf_counter() - t0)
    test.test(X)
    t_test, _ = _median_time(lambda: test.test(X), repeats)
    step = float(np.median(step_times))
    return {
        "rbm_rg_partial_fit_median_ms": 1e3 * step,
        "rbm_rg_2000_steps_s": 2000 * step,
        "rbm_rg_test_800_median_s": t_test,
    }


def peak_rss_subprocess(dim, n):
    """Peak RSS (MB) of a fresh process that imports skstein and runs two tests."""
    code = f"""
import resource, numpy as np
from skstein import MaxSKSDTest
from skstein.distributions import Gaussian, Laplace
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
X = Laplace({dim}).rvs({n}, random_state=0)
t = MaxSKSDTest(Gaussian(np.zeros({dim})), n_bootstrap=1000, random_state=0)
t.test(X); t.test(X)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(base / 1024, peak / 1024)
"""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), env.get("PYTHONPATH", "")])
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True)
    base, peak = map(float, res.stdout.split())
    return {"rss_after_import_MB": base, "rss_peak_MB": peak}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    report = {"dim": args.dim, "n": args.n, "repeats": args.repeats,
              "cpu_count": os.cpu_count()}
    report.update(bench_test(args.dim, args.n, args.repeats))
    report["sliced_pass"] = bench_pass(args.dim, args.repeats)
    report.update(bench_stream(args.repeats))
    report.update(peak_rss_subprocess(args.dim, args.n))
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
