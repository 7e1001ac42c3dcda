"""skstein on a GPU (the Array API engine) against KSDAgg's JAX code and the CPU, one run.

The same data for everyone, generated here: ``X`` standard normal plus a shift of 0.2 in
its first coordinate, model N(0, I) (score ``-x``), at (n, d) = (1000, 100), (5000, 1) and
(20000, 10). Timed, median of ``--repeat`` runs after a warm-up (JIT compilation, caches,
device start-up) and with the device synchronised:

* ``skstein-gpu``: ``KSDTest(model, kernel="imq", bootstrap="rademacher",
  n_bootstrap=2000, n_bandwidths=10)`` on PyTorch (or CuPy) CUDA arrays under
  ``sklearn.config_context(array_api_dispatch=True)``, data float32 with TF32 off
  (true float32 products), float32 with TF32 on (the opt-in reduced precision), and
  float64;
* ``skstein-cpu``: the same test on NumPy data, the numba engine on all cores, for
  n up to ``--cpu-max-n`` (5000); above it, the device's float64 run is the reference
  that the other precisions' p-values are compared with;
* ``ksdagg-jax``: KSDAgg's ``ksdagg.jax.ksdagg`` (10 bandwidths, B1 = B2 = 2000 wild
  bootstrap draws) at JAX's default matrix precision and at ``"highest"``. Its code is
  not part of skstein: give the folder of a checkout of its public repository with
  ``--ksdagg PATH`` (the folder that holds the ``ksdagg`` package); without it those
  rows are skipped.

``maxsksd``: the default ``MaxSKSDTest`` at n = 1000, D = 100 on the CPU and with its
test stage on the device (float64; its directions are learned on the host either way).

For the samplers, one iteration at N = 1000 particles, D = 100 (the difference of fits
of k + 1 and 1 iterations over k, ``--sampler-iters`` k = 20 by default; no history
records but at the first and last iteration): ``SVGD`` and ``SlicedSVGD`` on
the CPU (float64) and on the device (float64 and float32), and a plain PyTorch SVGD
step (cdist, RBF, two products, float32) as the reference; then the CPU (float64) and
the device (float32) again with the default history records (``history_every=10``).

The p-values and decisions of each precision are compared with float64's; everything
is written to ``OUT/gpu.json`` and printed. With ``--profile``, the host's own time per
function of 20 sampler iterations on the device goes to ``OUT/sampler_host_profile.txt``
(where an iteration's host work goes: Python, launches, waits).

Run: ``SCIPY_ARRAY_API=1 python benchmarks/bench_gpu.py OUT [--ksdagg PATH] [--lib torch]
[--profile]``; ``--lib torch --device cpu --quick`` is a smoke run without a GPU.
"""

import argparse
import contextlib
import json
import os
import sys
import time
import traceback

os.environ.setdefault("SCIPY_ARRAY_API", "1")
# JAX takes 75% of the GPU's memory at its first use unless told not to; PyTorch shares it
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np  # noqa: E402

CASES = [(1000, 100), (5000, 1), (20000, 10)]
QUICK_CASES = [(300, 20), (600, 1)]


def data(n, d, seed=0):
    X = np.random.default_rng(seed).standard_normal((n, d))
    X[:, 0] += 0.2
    return X


def median_time(fn, repeat, sync):
    fn()
    sync()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        sync()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


class Neg:
    """The score of N(0, I), in the namespace of its input."""

    def grad_logpdf(self, X):
        return -X


def torch_lib(device="cuda"):
    import torch

    dev = torch.device(device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    name = torch.cuda.get_device_name(0) if dev.type == "cuda" else f"torch {device}"

    def move(A, dtype):
        return torch.asarray(A, dtype=getattr(torch, dtype), device=dev)

    def tf32(on):
        torch.set_float32_matmul_precision("high" if on else "highest")
        torch.backends.cuda.matmul.allow_tf32 = on

    return move, sync, tf32, name


def cupy_lib():
    import cupy

    def move(A, dtype):
        return cupy.asarray(A, dtype=dtype)

    def tf32(on):
        # CuPy reads CUPY_TF32 when it starts; the mode cannot change within one run
        if on != (os.environ.get("CUPY_TF32", "0") == "1"):
            raise RuntimeError("set CUPY_TF32 before starting for CuPy's TF32 mode")

    return (move, lambda: cupy.cuda.Device().synchronize(), tf32,
            cupy.cuda.runtime.getDeviceProperties(0)["name"].decode())


def bench_ksd(args, move, sync, tf32, rows):
    import sklearn

    from skstein import KSDTest

    def test():
        return KSDTest(Neg(), kernel="imq", bootstrap="rademacher", n_bootstrap=2000,
                       n_bandwidths=10, random_state=0)

    for n, d in CASES:
        X = data(n, d)
        ref = None
        if n <= args.cpu_max_n:
            t, ref = median_time(lambda: test().test(X), max(1, args.repeat // 3), lambda: None)
            rows.append(dict(what="ksd", n=n, d=d, who="skstein-cpu", precision="float64 "
                             "(forms float32)", seconds=t, pvalue=ref.pvalue, reject=ref.reject))
            print(rows[-1], flush=True)
        for dtype, tf in (("float64", False), ("float32", False), ("float32", True)):
            try:
                tf32(tf)
            except RuntimeError as exc:
                print(f"skip {dtype} tf32={tf}: {exc}")
                continue
            Xd = move(X, dtype)
            try:
                with sklearn.config_context(array_api_dispatch=True):
                    t, res = median_time(lambda: test().test(Xd), args.repeat, sync)
            except Exception:  # noqa: BLE001 (one failed case must not stop the others)
                traceback.print_exc()
                continue
            if ref is None:   # above --cpu-max-n: the device's float64 run is the reference
                ref = res
            rows.append(dict(what="ksd", n=n, d=d, who="skstein-gpu",
                             precision=f"{dtype}{' tf32' if tf else ''}", seconds=t,
                             pvalue=res.pvalue, reject=res.reject,
                             pvalue_diff=abs(res.pvalue - ref.pvalue),
                             same_decision=res.reject == ref.reject,
                             max_stat_rel_diff=float(np.max(np.abs(res.statistics - ref.statistics)
                                                     / np.abs(ref.statistics)))))
            print(rows[-1], flush=True)
        tf32(False)
    if args.profile and args.lib == "torch" and args.device == "cuda":
        try:
            profile_torch(args, move, test)
        except Exception as exc:  # noqa: BLE001 (a profile must not stop the benchmark)
            print(f"profile failed: {exc!r}", flush=True)


def profile_torch(args, move, test):
    """The device's own times of the operations of the largest and the smallest case
    (float32, TF32 off), and the host's of the smallest."""
    import sklearn
    import torch

    tables = []
    for n, d in (CASES[-1], CASES[0]):
        Xd = move(data(n, d), "float32")
        with sklearn.config_context(array_api_dispatch=True):
            test().test(Xd)
            torch.cuda.synchronize()
            acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
            with torch.profiler.profile(activities=acts) as prof:
                test().test(Xd)
                torch.cuda.synchronize()
        for key in ("self_cuda_time_total", "self_device_time_total", "cuda_time_total"):
            try:
                table = prof.key_averages().table(sort_by=key, row_limit=30)
                break
            except Exception:  # noqa: BLE001 (the key's name changed across releases)
                continue
        tables.append(f"KSDTest aggregated, n = {n}, d = {d}, float32, TF32 off\n{table}\n")
    # the host's side of the smallest case: what the device waits for between its work
    import cProfile
    import io
    import pstats

    n0, d0 = CASES[0]
    X0 = move(data(n0, d0), "float32")
    with sklearn.config_context(array_api_dispatch=True):
        test().test(X0)
        prof_host = cProfile.Profile()
        prof_host.enable()
        test().test(X0)
        torch.cuda.synchronize()
        prof_host.disable()
    buf = io.StringIO()
    pstats.Stats(prof_host, stream=buf).sort_stats("tottime").print_stats(25)
    with open(os.path.join(args.out, "gpu_profile.txt"), "w") as f:
        f.write("\n".join(tables) + "\n")
        f.write(f"host profile (cProfile), n = {n0}, d = {d0}, float32\n{buf.getvalue()}\n")
    print(tables[-1][-3000:], flush=True)


def bench_maxsksd(args, move, sync, rows):
    """The default ``MaxSKSDTest`` (split, pooled moments, 1000 draws) at n = 1000,
    D = 100: on the CPU, and with its test stage on the device (float64)."""
    import sklearn

    from skstein import MaxSKSDTest

    n, d = (300, 20) if args.quick else (1000, 100)
    X = data(n, d)

    def test():
        return MaxSKSDTest(Neg(), random_state=0)

    t, ref = median_time(lambda: test().test(X), max(1, args.repeat // 3), lambda: None)
    rows.append(dict(what="maxsksd", n=n, d=d, who="skstein-cpu", precision="float64",
                     seconds=t, pvalue=ref.pvalue, reject=ref.reject))
    print(rows[-1], flush=True)
    Xd = move(X, "float64")
    with sklearn.config_context(array_api_dispatch=True):
        t, res = median_time(lambda: test().test(Xd), max(1, args.repeat // 3), sync)
    rows.append(dict(what="maxsksd", n=n, d=d, who="skstein-gpu",
                     precision="float64 (test stage on the device)", seconds=t,
                     pvalue=res.pvalue, reject=res.reject,
                     pvalue_diff=abs(res.pvalue - ref.pvalue),
                     max_stat_rel_diff=float(np.max(np.abs(res.statistics - ref.statistics)
                                                    / np.abs(ref.statistics)))))
    print(rows[-1], flush=True)


def bench_ksdagg(args, rows):
    if not args.ksdagg:
        print("no --ksdagg folder: KSDAgg-JAX rows skipped")
        return
    sys.path.insert(0, args.ksdagg)
    import jax
    import jax.numpy as jnp
    from ksdagg.jax import ksdagg

    for n, d in CASES:
        X = data(n, d)
        Xj = jnp.asarray(X, dtype=jnp.float32)
        Sj = -Xj
        for precision in ("default", "highest"):
            def run():
                ctx = (contextlib.nullcontext() if precision == "default"
                       else jax.default_matmul_precision(precision))
                with ctx:
                    # B1 = B2 = 2000 are its defaults; passed explicitly they would be
                    # traced by its jit (they are not among its static arguments)
                    return ksdagg(Xj, Sj, number_bandwidths=10, return_dictionary=True)

            def sync():
                pass

            def timed():
                out = run()
                jax.block_until_ready(out[0])
                return out

            t, (reject, info) = median_time(timed, args.repeat, sync)
            rows.append(dict(what="ksd", n=n, d=d, who="ksdagg-jax", precision=precision,
                             seconds=t, reject=bool(reject)))
            print(rows[-1], flush=True)


def torch_svgd_step(torch):
    """A plain SVGD step: median bandwidth, RBF kernel from cdist, two products."""

    def step(Z, score, lr=0.1):
        D2 = torch.cdist(Z, Z) ** 2
        h = torch.median(D2) / np.log(Z.shape[0] + 1.0)
        K = torch.exp(-D2 / h)
        phi = (K @ score(Z) + (2.0 / h) * (Z * K.sum(1, keepdim=True) - K @ Z)) / Z.shape[0]
        return Z + lr * phi

    return step


def bench_svgd(args, move, sync, rows):
    import sklearn

    from skstein import SVGD, SlicedSVGD

    n, d = 1000, 100
    X0 = np.random.default_rng(0).standard_normal((n, d)) * 0.1 + 1.0
    cases = (("cpu", "float64", None), ("gpu", "float64", None), ("gpu", "float32", None),
             ("cpu", "float64", 10), ("gpu", "float32", 10))
    for cls in (SVGD, SlicedSVGD):
        for where, dtype, every in cases:
            Z = X0 if where == "cpu" else move(X0, dtype)

            def run(k):
                # None: the iterations alone, no history record; 10: the default records
                # (k + 1 iterations record k / 10 more than 1 does: one per 10 iterations)
                with sklearn.config_context(array_api_dispatch=(where == "gpu")):
                    return cls(Neg(), n_iter=k, random_state=0,
                               history_every=every or 10**9).fit(Z)

            k = args.sampler_iters
            try:
                t1, _ = median_time(lambda: run(1), 3, sync)
                t2, _ = median_time(lambda: run(k + 1), 3, sync)
            except Exception:  # noqa: BLE001 (one failed case must not stop the others)
                traceback.print_exc()
                continue
            rows.append(dict(what="sampler", who=f"{cls.__name__}-{where}", dtype=dtype, n=n,
                             d=d, history_every=every, seconds_per_iteration=(t2 - t1) / k))
            print(rows[-1], flush=True)
            if args.profile and where == "gpu" and dtype == "float32" and every is None:
                host_profile(args.out, f"{cls.__name__}, 20 iterations, N = {n}, D = {d}, "
                             "float32 on the device", lambda: (run(21), sync()))
    try:
        import torch
    except ImportError:
        return
    if not torch.cuda.is_available():
        return
    step = torch_svgd_step(torch)
    Z = torch.asarray(X0, dtype=torch.float32, device="cuda")
    t, _ = median_time(lambda: step(Z, lambda A: -A), args.repeat, torch.cuda.synchronize)
    rows.append(dict(what="sampler", who="plain-torch-svgd-step-float32", n=n, d=d,
                     seconds_per_iteration=t))
    print(rows[-1], flush=True)


def host_profile(out, title, fn):
    """Append the host's own time per function of one call of ``fn`` (cProfile) to
    ``OUT/sampler_host_profile.txt``: where a device iteration's host time goes."""
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(30)
    with open(os.path.join(out, "sampler_host_profile.txt"), "a") as f:
        f.write(f"== {title}\n{buf.getvalue()}\n")


def strict_lib():
    """array-api-strict on the CPU: a smoke run of this script where no GPU is at hand."""
    import array_api_strict as xs

    def tf32(on):
        if on:
            raise RuntimeError("no TF32 mode in array-api-strict")

    return (lambda A, dtype: xs.asarray(A, dtype=getattr(xs, dtype))), (lambda: None), tf32, \
        "array-api-strict (CPU)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--ksdagg", default=None, help="folder holding KSDAgg's ksdagg package")
    ap.add_argument("--lib", choices=("torch", "cupy", "strict"), default="torch")
    ap.add_argument("--device", default="cuda",
                    help="PyTorch device (\"cpu\" for a smoke run without a GPU)")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="small cases (a smoke run)")
    parts_names = ("ksd", "ksdagg", "svgd", "maxsksd")
    ap.add_argument("--skip", nargs="*", default=(), choices=parts_names)
    ap.add_argument("--order", nargs="+", default=parts_names, choices=parts_names,
                    help="the parts, in this order")
    ap.add_argument("--cpu-max-n", type=int, default=5000,
                    help="larger cases skip the CPU; the device's float64 run is their "
                         "reference")
    ap.add_argument("--sampler-iters", type=int, default=20,
                    help="a sampler iteration is the difference of fits of this many "
                         "plus one and one iteration, divided by this many")
    ap.add_argument("--profile", action="store_true",
                    help="PyTorch: write OUT/gpu_profile.txt, the device's time per operation "
                         "on the largest and the smallest case, and the host's on the smallest; "
                         "any library: OUT/sampler_host_profile.txt, the host's time of 20 "
                         "sampler iterations on the device in float32")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.quick:
        CASES[:] = QUICK_CASES
    libs = {"torch": lambda: torch_lib(args.device), "cupy": cupy_lib, "strict": strict_lib}
    move, sync, tf32, device = libs[args.lib]()
    rows = []
    print(f"device: {device}; library {args.lib}; cores {len(os.sched_getaffinity(0))}")
    def ksdagg_rows():
        if args.lib == "torch" and args.device == "cuda":
            import torch

            torch.cuda.empty_cache()
        bench_ksdagg(args, rows)

    parts = {"ksd": lambda: bench_ksd(args, move, sync, tf32, rows), "ksdagg": ksdagg_rows,
             "svgd": lambda: bench_svgd(args, move, sync, rows),
             "maxsksd": lambda: bench_maxsksd(args, move, sync, rows)}
    try:
        for name in args.order:
            if name in args.skip:
                continue
            try:   # each part on its own: a failure is printed, the next part runs
                parts[name]()
            except Exception:  # noqa: BLE001
                traceback.print_exc()
    finally:
        with open(os.path.join(args.out, "gpu.json"), "w") as f:
            json.dump({"device": device, "library": args.lib, "rows": rows}, f, indent=1,
                      default=str)


if __name__ == "__main__":
    main()
