"""How skstein's hot paths scale with cores: every row of the scaling table in one run.

For each thread count, numba and BLAS are limited to that many threads and the median
time of each workload is measured, with its speed-up over one thread. The rows:

* ``machine-exp``: a numba ``prange`` loop of ``exp`` over 2^26 values (what the machine
  itself gives an embarrassingly parallel kernel);
* ``machine-region``: 1000 back-to-back parallel regions of an empty ``prange`` loop
  (so its milliseconds are microseconds per region): what waking and joining the
  threads costs each pass, whatever its size (``skstein._threads.SPIN_COUNT``);
* ``machine-touch``: a numba ``prange`` loop writing 64 MB of fresh memory (a new
  anonymous mapping per call, 4 KB pages): the cost of first-touch page faults, which
  a workload pays wherever it writes an array that the allocator has just mapped (a
  ``MaxSKSDTest`` trial at D = 100 took about 6500 of them before skstein fixed glibc's
  malloc thresholds, ``SKSTEIN_MALLOC=0`` brings them back; ``--profile`` counts them);
* ``machine-sgemm``: float32 GEMM 4000 x 4000 times 4000 x 2000 (OpenBLAS), in GFlop/s;
* ``stein-pass``: the blocked Stein-kernel pass of the tests (sums, no matrix),
  N = 4000, D = 100; ``stein-matrix``: the same pass writing the strict upper
  triangle of the matrix too (``return_matrix=True``), same data;
* ``ksd-median``: ``KSDTest(bandwidth="median").test``, same data, 1000 draws;
* ``ksd-agg-5000x1`` / ``ksd-agg-1000x100``: the aggregated ``KSDTest`` (IMQ,
  Rademacher, 1000 draws) at n = 5000, d = 1 and n = 1000, d = 100;
* ``maxsksd-trial``: one default ``MaxSKSDTest`` trial (the paper's split) at D = 100,
  n = 1000; ``maxsksd-crossfit``: the same with ``cv=2, moment="pooled"`` (two folds
  and the whole sample's fourth moment);
* ``svgd-iter`` / ``sliced-svgd-iter``: rows added by the samplers' benchmark
  functions when present (``bench_svgd.scaling_rows``): fits of a few iterations;
  ``svgd-step`` / ``sliced-svgd-step``: the time of one iteration alone, the
  difference of fits of ``k + 1`` and 1 iterations over ``k`` (a row whose setup
  returns a third function is timed as the difference of the two);
* ``trials``: 160 trials of a small KSD test through ``rejection_rate`` with
  ``n_jobs`` equal to the thread count (processes, one thread each), against
  ``n_jobs=1``; worker start-up included. ``trials-warm``: the same again, on the
  workers that joblib keeps between calls (as in a power study's later settings).
  ``trials-warm-1core``: the warm times against ``n_jobs=1`` on one numba and BLAS
  thread. With ``n_jobs=1`` a trial runs on all of numba's threads, so ``trials``
  compares processes with threads, and its ratio falls as the kernels scale better
  (at most the thread count over one trial's own speed-up); this row is the workers'
  own efficiency.

Each row is printed and written to ``OUT/scaling.json`` (and ``OUT/scaling.csv``), with
the machine's CPU name and core count, so one run on a many-core machine gives the
whole table.

With ``--profile``, each workload is also run once under :mod:`cProfile` at one thread
and at the most threads, and ``OUT/profiles.txt`` lists, per workload, the time in
skstein's compiled kernels and elsewhere (Python, NumPy, one-thread BLAS: the serial
share, which bounds the speed-up) and the functions with the most own time at each
count side by side: a phase whose time does not shrink with the threads is what stops
the workload from scaling.

Run: ``python benchmarks/bench_scaling.py OUT [--threads 1 2 4 8 16] [--quick] [--profile]``
"""

import argparse
import csv
import json
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _util import median_time  # noqa: E402


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _exp_kernel():
    from numba import njit, prange

    @njit(parallel=True, cache=False)
    def exp_sum(x, out):
        for i in prange(x.shape[0]):
            out[i] = np.exp(-x[i])
        return out

    return exp_sum


def _touch_kernel():
    from numba import njit, prange

    @njit(parallel=True, cache=False)
    def touch(x):
        for i in prange(x.shape[0] // 512):
            x[512 * i] = 1.0
        return x

    return touch


def _fresh_touch(f, nbytes):
    """Write one float per 4 KB page of a new anonymous mapping of ``nbytes``."""
    import mmap

    m = mmap.mmap(-1, nbytes)
    try:
        x = np.frombuffer(m, dtype=np.float64)
        f(x)
        del x
    finally:
        m.close()


def _region_kernel():
    from numba import njit, prange

    @njit(parallel=True, cache=False)
    def regions(x, count):
        for _ in range(count):
            for i in prange(x.shape[0]):
                x[i] += 1.0
        return x

    return regions


def workloads(quick):
    """``[(name, unit, setup)]``; ``setup()`` returns ``(fn, work)``: the call to time and
    the amount of work per call (for rates), or None."""
    from skstein import KSDTest, MaxSKSDTest
    from skstein.discrepancy import stein_sums
    from skstein.distributions import Gaussian, Laplace

    scale = 4 if quick else 1

    def machine_exp():
        f = _exp_kernel()
        x = np.random.default_rng(0).random(2**26 // scale)
        out = np.empty_like(x)
        f(x[:10], out[:10])
        return (lambda: f(x, out)), None

    def machine_region():
        f = _region_kernel()
        x = np.zeros(64)
        f(x, 1)
        return (lambda: f(x, 1000)), None

    def machine_touch():
        f = _touch_kernel()
        _fresh_touch(f, 2**20)
        return (lambda: _fresh_touch(f, 2**26)), None

    def machine_sgemm():
        m = 4000 // scale
        rng = np.random.default_rng(0)
        A = rng.random((m, m), dtype=np.float32)
        B = rng.random((m, m // 2), dtype=np.float32)
        return (lambda: A @ B), 2.0 * m * m * (m // 2) / 1e9

    def stein_pass(matrix):
        def setup():
            n, d = 4000 // scale, 100
            X = np.random.default_rng(0).standard_normal((n, d))
            model = Gaussian(np.zeros(d))
            S = model.grad_logpdf(X)
            kern = KSDTest(model, bandwidth="median").fit(X).kernel_
            return ((lambda: stein_sums(X, S, kern, return_matrix=matrix)),
                    n * (n - 1) / 2 / 1e6)
        return setup

    def ksd_median():
        n, d = 4000 // scale, 100
        X = np.random.default_rng(0).standard_normal((n, d))
        test = KSDTest(Gaussian(np.zeros(d)), bandwidth="median", n_bootstrap=1000,
                       random_state=0).fit(X)
        return (lambda: test.test(X)), None

    def ksd_agg(n, d):
        def setup():
            X = Laplace(d).rvs(n // scale, random_state=0)
            test = KSDTest(Gaussian(np.zeros(d)), kernel="imq", bootstrap="rademacher",
                           n_bootstrap=1000, random_state=0)
            return (lambda: test.test(X)), None
        return setup

    def maxsksd_trial(**kw):
        def setup():
            d = 100
            X = Laplace(d).rvs(1000, random_state=0)
            test = MaxSKSDTest(Gaussian(np.zeros(d)), variant="g", random_state=0, **kw)
            return (lambda: test.test(X)), None
        return setup

    rows = [("machine-exp", "ms", machine_exp), ("machine-region", "ms", machine_region),
            ("machine-touch", "ms", machine_touch), ("machine-sgemm", "GFlop/s", machine_sgemm),
            ("stein-pass", "M pairs/s", stein_pass(False)),
            ("stein-matrix", "M pairs/s", stein_pass(True)), ("ksd-median", "ms", ksd_median),
            ("ksd-agg-5000x1", "ms", ksd_agg(5000, 1)),
            ("ksd-agg-1000x100", "ms", ksd_agg(1000, 100)),
            ("maxsksd-trial", "ms", maxsksd_trial()),
            ("maxsksd-crossfit", "ms", maxsksd_trial(cv=2, moment="pooled"))]
    try:
        from bench_svgd import scaling_rows
    except ImportError:
        scaling_rows = None
    if scaling_rows is not None:
        rows += list(scaling_rows(quick))
    return rows


#: Key of :func:`own_times`'s total over the compiled kernels.
KERNELS = "(compiled kernels)"


def own_times(fn):
    """``{function: own seconds}`` of one call of ``fn`` under cProfile, and under
    :data:`KERNELS` the sum over skstein's compiled kernels (the dispatchers of
    ``skstein/_numba``)."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    stats = pstats.Stats(prof).stats
    kernels = os.sep + os.path.join("skstein", "_numba") + os.sep
    out = {KERNELS: 0.0}
    for (file, line, func), (_, _, tottime, _, _) in stats.items():
        key = f"{os.path.basename(file)}:{line}({func})" if line else func
        out[key] = out.get(key, 0.0) + tottime
        if kernels in file:
            out[KERNELS] += tottime
    return out


def profile_table(name, fn, low, high, top=15):
    """Lines comparing the own time of ``fn``'s functions at ``low`` and ``high`` threads."""
    from threadpoolctl import threadpool_limits

    from skstein._threads import numba_threads

    import resource

    times, faults = {}, {}
    for t in (low, high):
        with numba_threads(t), threadpool_limits(t):
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            times[t] = own_times(fn)
            faults[t] = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    # own time of the compiled kernels against the rest: Python, NumPy, one-thread BLAS,
    # the serial share of the workload
    kern = {t: times[t].pop(KERNELS) for t in times}
    total = {t: sum(v.values()) for t, v in times.items()}
    keys = sorted(times[low], key=lambda k: -times[low][k])[:top]
    lines = [f"== {name}: {total[low] * 1e3:.1f} ms at {low} thread(s), "
             f"{total[high] * 1e3:.1f} ms at {high} (x{total[low] / total[high]:.2f})",
             f"   in compiled kernels {kern[low] * 1e3:.1f} -> {kern[high] * 1e3:.1f} ms; "
             f"elsewhere {(total[low] - kern[low]) * 1e3:.1f} -> "
             f"{(total[high] - kern[high]) * 1e3:.1f} ms "
             f"({(total[low] - kern[low]) / total[low]:.0%} of the one-thread time); "
             f"{faults[low]} -> {faults[high]} page faults",
             f"{'own ms @' + str(low):>12s} {'own ms @' + str(high):>12s} {'speed-up':>8s}  function"]
    for k in keys:
        a, b = times[low][k], times[high].get(k, 0.0)
        ratio = f"{a / b:8.2f}" if b > 0 else f"{'-':>8s}"
        lines.append(f"{a * 1e3:12.2f} {b * 1e3:12.2f} {ratio}  {k}")
    return lines


def _trial_rate(n_jobs, n_trials, threads=None):
    """Seconds for ``n_trials`` trials of a KSD test of about 30 ms on one core
    (``threads``: numba and BLAS threads of the calling process, default as they are)."""
    from threadpoolctl import threadpool_limits

    from skstein import KSDTest
    from skstein._threads import numba_threads
    from skstein.distributions import Gaussian, Laplace
    from skstein.experiments import rejection_rate

    test = KSDTest(Gaussian(np.zeros(10)), bandwidth="median", n_bootstrap=1000,
                   random_state=0)
    with numba_threads(threads), threadpool_limits(threads):
        t0 = time.perf_counter()
        rejection_rate(test, Laplace(10), 1000, n_trials=n_trials, random_state=0,
                       n_jobs=n_jobs, verbose=False)
        return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", help="folder for scaling.json and scaling.csv")
    ap.add_argument("--threads", type=int, nargs="+", default=None,
                    help="thread counts (default: 1, 2, 4, ... up to the cores)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--trials", type=int, default=160)
    ap.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    ap.add_argument("--only", nargs="*", default=None, help="names of the rows to run")
    ap.add_argument("--profile", action="store_true",
                    help="also write OUT/profiles.txt: own time per function, 1 vs most threads")
    args = ap.parse_args()
    import numba
    from threadpoolctl import threadpool_limits

    from skstein._threads import numba_threads

    cores = len(os.sched_getaffinity(0))
    threads = args.threads or [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= cores]
    threads = [t for t in threads if t <= numba.config.NUMBA_NUM_THREADS]
    os.makedirs(args.out, exist_ok=True)
    from skstein._threads import MALLOC_TUNED

    machine = {"cpu": cpu_name(), "cores": cores, "numba_threads": numba.config.NUMBA_NUM_THREADS,
               "numpy": np.__version__, "numba": numba.__version__,
               "malloc_tuned": MALLOC_TUNED}
    print(f"{machine['cpu']}; {cores} cores; numba {numba.__version__}, numpy {np.__version__}; "
          f"malloc thresholds {'fixed' if MALLOC_TUNED else 'glibc dynamic'}")
    results = []
    profiles = []
    for name, unit, setup in workloads(args.quick):
        if args.only and name not in args.only:
            continue
        fn, work, *rest = setup()
        minus = rest[0] if rest else None
        base = None
        for t in threads:
            with numba_threads(t), threadpool_limits(t):
                sec, _ = median_time(fn, args.repeat, warmup=1)
                if minus is not None:   # a difference of two runs: the fixed part cancels
                    sec -= median_time(minus, args.repeat, warmup=1)[0]
            base = base or sec
            rate = (work / sec) if work is not None else None
            row = {"row": name, "threads": t, "seconds": sec, "speedup": base / sec,
                   "rate": rate, "unit": unit}
            results.append(row)
            shown = f"{rate:9.1f} {unit}" if rate is not None else f"{sec * 1e3:9.1f} ms"
            print(f"{name:18s} threads {t:3d}: {shown}   x{base / sec:5.2f}", flush=True)
            write(args.out, machine, results)
        if args.profile and len(threads) > 1 and not name.startswith("machine"):
            profiles += profile_table(name, fn, threads[0], threads[-1]) + [""]
            with open(os.path.join(args.out, "profiles.txt"), "w") as f:
                f.write("\n".join(profiles))
    if not args.only or "trials" in args.only:
        # "trials": the first call at each n_jobs (workers start, load the numba cache);
        # "trials-warm": a second call, on the workers joblib keeps for the next one
        one = _trial_rate(1, args.trials)
        one_warm = _trial_rate(1, args.trials)
        for t in threads:
            cold = one if t == 1 else _trial_rate(t, args.trials)
            warm = one_warm if t == 1 else _trial_rate(t, args.trials)
            for name, sec, base in (("trials", cold, one), ("trials-warm", warm, one_warm)):
                results.append({"row": name, "threads": t, "seconds": sec,
                                "speedup": base / sec, "rate": None, "unit": "s"})
                print(f"{name:18s} n_jobs  {t:3d}: {sec:9.2f} s    x{base / sec:5.2f}",
                      flush=True)
            write(args.out, machine, results)
        # the same warm trials against one process on one core: with n_jobs=1 the trials
        # run on all the numba threads, so the rows above compare processes with threads
        core = _trial_rate(1, args.trials, threads=1)
        for t in threads:
            warm = next(r["seconds"] for r in results
                        if r["row"] == "trials-warm" and r["threads"] == t)
            results.append({"row": "trials-warm-1core", "threads": t, "seconds": warm,
                            "speedup": core / warm, "rate": None, "unit": "s"})
            print(f"{'trials-warm-1core':18s} n_jobs  {t:3d}: {warm:9.2f} s    x{core / warm:5.2f}"
                  f"   (one process on one core: {core:.2f} s)", flush=True)
        write(args.out, machine, results)
    write(args.out, machine, results)


def write(out, machine, results):
    """The rows so far to ``out/scaling.json`` and ``out/scaling.csv``."""
    with open(os.path.join(out, "scaling.json"), "w") as f:
        json.dump({"machine": machine, "rows": results}, f, indent=1)
    if not results:
        return
    with open(os.path.join(out, "scaling.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(results[0]))
        w.writeheader()
        w.writerows(results)


if __name__ == "__main__":
    main()
