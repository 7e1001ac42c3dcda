"""Why a CPU Stein pass stops scaling with cores: thread-pool experiments in one run.

The Stein pass alternates two thread pools: OpenBLAS forms the Gram blocks, numba's
pool evaluates the kernel on them. After a parallel call, idle OpenBLAS threads keep
polling for work for a while before they sleep, and numba's threads (OpenMP) can do
the same; on many cores each pool may then run beside the other's idle threads. The
rows below separate the causes, at N = 4000, D = 100 (RBF, median bandwidth), each
the median of ``--repeat`` calls at one thread and at the most threads:

* ``kernel-alone``: the numba kernel on Gram blocks formed beforehand, no BLAS call;
* ``kernel-after-blas``: the same kernel, timed alone, right after a multi-threaded
  BLAS product (whose threads may still be polling for work);
* ``two-pools``: the pass of ``skstein.discrepancy.stein_sums_and_forms`` with BLAS
  forming each block's Gram and weight products between numba's kernels (its path
  beyond the pooled pass's memory), 1000 multinomial draws;
* ``two-pools-blas1``: the same with BLAS held at one thread;
* ``pooled``: the library's default pass, numba's threads alone, each block's products
  a one-thread BLAS call of its own thread.

Then, in fresh processes, the ``two-pools`` and ``pooled`` rows again under environment
variants: ``OPENBLAS_THREAD_TIMEOUT=4`` (OpenBLAS threads poll for 2^4 cycles before
they sleep, instead of about 2^28), ``OMP_WAIT_POLICY=ACTIVE``.

Everything is printed and written to ``OUT/threads.json``.

Run: ``python benchmarks/bench_threads.py OUT [--threads 16] [--quick]``
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

from skstein._numba.stein import kernel_params  # noqa: E402


def setup(quick):
    from skstein import KSDTest
    from skstein.distributions import Gaussian

    n, d = (1000, 100) if quick else (4000, 100)
    X = np.random.default_rng(0).standard_normal((n, d))
    model = Gaussian(np.zeros(d))
    S = model.grad_logpdf(X)
    kern = KSDTest(model, bandwidth="median").fit(X).kernel_
    return X, S, kern


def rows(threads, repeat, quick, only=None):
    from threadpoolctl import threadpool_limits

    import skstein.discrepancy as disc
    from skstein._bootstrap import bootstrap_weights
    from skstein._numba.stein import stein_block_into
    from skstein._threads import blas_threads, numba_threads

    X, S, kern = setup(quick)
    n, d = X.shape
    code, p0, p1 = kernel_params(kern)
    Xc = X - X.mean(axis=0)
    nx = np.einsum("ij,ij->i", Xc, Xc)
    nsx = np.einsum("ij,ij->i", S, Xc)
    G0, SS, C = Xc @ Xc.T, S @ S.T, Xc @ S.T + S @ Xc.T
    out, rs = np.empty_like(G0), np.empty(n)
    A = np.random.default_rng(1).random((2000, 2000))
    V = bootstrap_weights("multinomial", n, 1000, np.random.default_rng(2))
    pooled = disc._pooled_pass

    def kernel():
        stein_block_into(code, p0, p1, d, G0, SS, C, nx, nsx, 0, 0, True, False, rs, out)

    def two_pools():
        disc._pooled_pass = lambda *args: None
        try:
            return disc.stein_sums_and_forms(X, S, [kern], V)
        finally:
            disc._pooled_pass = pooled

    def two_pools_blas1():
        with blas_threads(1):
            return two_pools()

    def pooled_pass():
        return disc.stein_sums_and_forms(X, S, [kern], V)

    a, b = two_pools()[0][0].offdiag_sum, pooled_pass()[0][0].offdiag_sum
    print(f"pooled total {b:.12e} vs two pools {a:.12e}", flush=True)
    cases = {"kernel-alone": (kernel, None), "kernel-after-blas": (kernel, lambda: A @ A),
             "two-pools": (two_pools, None), "two-pools-blas1": (two_pools_blas1, None),
             "pooled": (pooled_pass, None)}
    out_rows = []
    for name, (fn, before) in cases.items():
        if only and name not in only:
            continue
        base = None
        for t in threads:
            with numba_threads(t), threadpool_limits(t):
                fn()
                times = []
                for _ in range(repeat):
                    if before is not None:
                        before()
                    t0 = time.perf_counter()
                    fn()
                    times.append(time.perf_counter() - t0)
            sec = float(np.median(times))
            base = base or sec
            out_rows.append({"row": name, "threads": t, "ms": sec * 1e3, "speedup": base / sec,
                             "env": os.environ.get("BENCH_ENV", "default"),
                             "total_rel_diff": abs(a - b) / abs(a)})
            print(f"{out_rows[-1]['env']:28s} {name:18s} threads {t:3d}: {sec * 1e3:9.1f} ms"
                  f"   x{base / sec:5.2f}", flush=True)
    return out_rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--threads", type=int, default=None, help="the most threads (default: cores)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    most = args.threads or len(os.sched_getaffinity(0))
    threads = sorted({1, most})
    if args.child:
        print("ROWS " + json.dumps(rows(threads, args.repeat, args.quick, ("two-pools", "pooled"))))
        return
    os.makedirs(args.out, exist_ok=True)
    t0 = time.perf_counter()
    results = rows(threads, args.repeat, args.quick)
    for env in ({"OPENBLAS_THREAD_TIMEOUT": "4"}, {"OMP_WAIT_POLICY": "ACTIVE"}):
        label = ",".join(f"{k}={v}" for k, v in env.items())
        cmd = [sys.executable, __file__, args.out, "--child", "--threads", str(most),
               "--repeat", str(args.repeat)] + (["--quick"] if args.quick else [])
        proc = subprocess.run(cmd, env=dict(os.environ, BENCH_ENV=label, **env),
                              capture_output=True, text=True)
        for line in proc.stdout.splitlines():
            if line.startswith("ROWS "):
                results += json.loads(line[5:])
            else:
                print(line, flush=True)
        if proc.returncode:
            print(proc.stderr[-2000:], flush=True)
    with open(os.path.join(args.out, "threads.json"), "w") as f:
        json.dump({"cores": len(os.sched_getaffinity(0)), "seconds": time.perf_counter() - t0,
                   "rows": results}, f, indent=1)


if __name__ == "__main__":
    main()
