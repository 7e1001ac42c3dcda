"""Benchmark: one ICA training step by maxSKSD (with its ascent step on G) against one by KSD.

The ``ica`` reproduction's step at D = 100 with a batch of 100 points: the model's
scores, the loss and its gradient in the scores (closed forms, :mod:`skstein.learning`),
the vector-Jacobian product into the unmixing matrix and one Adam step on it; for
maxSKSD-g (V-statistic) also the Adam ascent step on the directions G, which shares
the loss's pass over the pairs. The two steps are timed alternately in one process
(same machine state), on the same sequence of batches, after a warm-up; reported are
the medians over ``--repeats`` steps and their ratio (target: maxSKSD within 3x KSD),
with the bandwidths re-estimated every 10 steps (the ``ica`` setting) and every step,
and the maximum-likelihood step as a floor. ``--whiten`` chooses the coordinates:
``data`` (default, the ``ica`` setting) trains the model of the whitened data
``X @ A``, ``A = whitening(X)[0]``, with plain losses; ``loss`` keeps the data and the
unmixing matrix and passes ``whiten=A`` to the losses (four more D x D products a
step); ``none`` is the paper's protocol. Everything runs on one numba and one BLAS
thread (as inside the reproduction's parallel trials); each step is timed by the wall
clock and by the thread's CPU time, which other processes on a shared machine do not
inflate. Also reported: the passes alone (CPU time), and the peak memory
(``tracemalloc``) of one maxSKSD step.

Run::

    python benchmarks/bench_learning.py [--dim 100] [--batch 100] [--repeats 300]
        [--whiten {data,loss,none}]
"""

import argparse
import json
import os
import time
import tracemalloc

import numpy as np


def _steppers(dim, batch, every, whiten="data"):
    from skstein.directions import _Adam
    from skstein.distributions import ICA
    from skstein.kernels import whitening
    from skstein.learning import KSDLoss, MaxSKSDLoss

    truth = ICA.random(dim, random_state=0)
    X = truth.rvs(50 * batch, random_state=1)
    B0 = ICA.random(dim, scale=1 / np.sqrt(dim), random_state=2).unmixing
    A = whitening(X)[0]
    if whiten == "data":  # the model of X @ A from the same initial model
        X, B0 = X @ A, np.linalg.solve(A, B0.T).T
    batches = [X[i * batch:(i + 1) * batch] for i in range(50)]
    white = A if whiten == "loss" else False

    def make(kind):
        model = ICA(B0)
        opt = _Adam(B0.shape, 0.9, 0.99)
        loss = {"KSD": KSDLoss(bandwidth_every=every, whiten=white),
                "maxSKSD": MaxSKSDLoss(statistic="v", betas=(0.9, 0.99),
                                       bandwidth_every=every, whiten=white),
                "MLE": None}[kind]
        state = {"t": 0}

        def step():
            xb = batches[state["t"] % len(batches)]
            state["t"] += 1
            if loss is None:
                grad = -model.grad_loglik(xb)
            else:
                _, grad = loss.model_value_and_grad(model, xb)
            model.unmixing = model.unmixing - 1e-3 * opt.step(grad)

        return step

    return {kind: make(kind) for kind in ("KSD", "maxSKSD", "MLE")}, batches


def _quartiles_ms(times):
    return [1e3 * float(q) for q in np.quantile(times, [0.25, 0.75])]


def bench_steps(dim, batch, repeats, every, whiten="data"):
    steppers, _ = _steppers(dim, batch, every, whiten)
    for fn in steppers.values():  # warm-up: compilation, caches, first bandwidths
        for _ in range(3 * every):
            fn()
    wall = {k: [] for k in steppers}
    cpu = {k: [] for k in steppers}
    for _ in range(repeats):
        for kind, fn in steppers.items():
            c0, t0 = time.thread_time(), time.perf_counter()
            fn()
            wall[kind].append(time.perf_counter() - t0)
            cpu[kind].append(time.thread_time() - c0)
    out = {"bandwidth_every": every}
    for clock, times in (("wall", wall), ("cpu", cpu)):
        med = {k: float(np.median(v)) for k, v in times.items()}
        out[clock] = {
            "ksd_step_median_ms": 1e3 * med["KSD"],
            "maxsksd_step_median_ms": 1e3 * med["maxSKSD"],
            "mle_step_median_ms": 1e3 * med["MLE"],
            "ratio_maxsksd_over_ksd": med["maxSKSD"] / med["KSD"],
            "ksd_step_q25_q75_ms": _quartiles_ms(times["KSD"]),
            "maxsksd_step_q25_q75_ms": _quartiles_ms(times["maxSKSD"]),
        }
    return out


def bench_pass(dim, batch, repeats):
    """The value-and-gradient passes alone, on the same batch."""
    from skstein.distributions import ICA
    from skstein.learning import ksd_value_and_grad, sliced_ksd_value_and_grad

    model = ICA.random(dim, random_state=0)
    X = model.rvs(batch, random_state=1)
    S = ICA.random(dim, scale=1 / np.sqrt(dim), random_state=2).grad_logpdf(X)
    h = np.ones(dim)

    def sliced():
        sliced_ksd_value_and_grad(X, S, bandwidth=h, statistic="v", grad_directions=True)

    def ksd():
        ksd_value_and_grad(X, S, bandwidth=1.0)

    out = {}
    for name, fn in (("sliced_pass_cpu_ms", sliced), ("ksd_pass_cpu_ms", ksd)):
        fn()
        ts = []
        for _ in range(repeats):
            t0 = time.thread_time()
            fn()
            ts.append(time.thread_time() - t0)
        out[name] = 1e3 * float(np.median(ts))
    pairs = batch * (batch - 1) / 2 * dim
    out["sliced_cpu_ns_per_pair_and_direction"] = 1e6 * out["sliced_pass_cpu_ms"] / pairs
    return out


def peak_memory(dim, batch, whiten="data"):
    steppers, _ = _steppers(dim, batch, 1, whiten)
    steppers["maxSKSD"]()
    tracemalloc.start()
    steppers["maxSKSD"]()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"maxsksd_step_tracemalloc_peak_MB": peak / 2**20,
            "N_x_N_x_D_array_would_be_MB": 8 * batch * batch * dim / 2**20}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--whiten", choices=("data", "loss", "none"), default="data",
                        help="data: train on whitened data (the ica setting); loss: the "
                             "losses' whiten option; none: the paper's coordinates")
    args = parser.parse_args(argv)
    from threadpoolctl import threadpool_limits

    from skstein._numba import numba_threads

    report = {"dim": args.dim, "batch": args.batch, "repeats": args.repeats,
              "whiten": args.whiten,
              "cpu_count": os.cpu_count(), "threads": 1,
              "loadavg_1min_at_start": os.getloadavg()[0]}
    # one numba and one BLAS thread (as in the parallel trials of the reproduction), so the
    # thread's CPU time is the whole cost of a step even on a machine shared with others
    with numba_threads(1), threadpool_limits(limits=1):
        report["every_10"] = bench_steps(args.dim, args.batch, args.repeats, 10, args.whiten)
        report["every_1"] = bench_steps(args.dim, args.batch, args.repeats, 1, args.whiten)
        report["passes"] = bench_pass(args.dim, args.batch, args.repeats)
        report.update(peak_memory(args.dim, args.batch, args.whiten))
    report["loadavg_1min_at_end"] = os.getloadavg()[0]
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
