"""Time per iteration of SVGD and sliced SVGD, D = 100, at N = 100 and N = 1000 particles.

SVGD is compared with a straightforward NumPy implementation of the same step
(pairwise distances, RBF kernel with the median/log(N) bandwidth, two matrix
products, the RMSprop-like step of the original SVGD code), timed in the same
run. A time per iteration is the median over repeats of ``(t(2k) - t(k)) / k`` for
runs of ``k`` and ``2k`` iterations, so the once-per-run costs (validation, the
history record of the last iteration) drop out. Sliced SVGD includes its share of
the direction updates (``slice_steps`` ascent steps every ``slice_update_every``
iterations). The target is N(0, I) and its score evaluation is included in every
timing.

Run: ``python benchmarks/bench_svgd.py [--n 100 1000] [--d 100] [--iters 100]``
(``--iters`` at N = 100; it shrinks as 1/N above.)
"""

import argparse
import time

import numpy as np
from scipy.spatial.distance import pdist, squareform

from skstein import SVGD, SlicedSVGD
from skstein.distributions import Gaussian


def numpy_svgd(X, score, n_iter, step=0.1):
    hist = None
    for it in range(n_iter):
        S = score(X)
        d2 = squareform(pdist(X)) ** 2
        h2 = np.median(d2) / np.log(X.shape[0] + 1)
        K = np.exp(-d2 / h2)
        rep = -(K @ X - K.sum(1)[:, None] * X) * 2 / h2
        phi = (K @ S + rep) / X.shape[0]
        hist = phi**2 if it == 0 else 0.9 * hist + 0.1 * phi**2
        X = X + step * phi / (1e-6 + np.sqrt(hist))
    return X


def per_iter(fn, iters, repeat=5):
    fn(2)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(iters)
        t1 = time.perf_counter()
        fn(2 * iters)
        times.append((time.perf_counter() - t1 - (t1 - t0)) / iters)
    return float(np.median(times))


def scaling_rows(quick=False):
    """Rows for ``bench_scaling.py``: ``[(name, unit, setup)]``, ``setup() -> (fn, work)``.

    ``svgd-iter``: SVGD at N = 1000, D = 100; ``sliced-svgd-iter``: SlicedSVGD at
    N = 200, D = 100 (its default direction updates included). ``fn`` runs a fit of
    ``k`` iterations and ``work`` is ``k``, so the rate is iterations per second (the
    once-per-fit validation and last history record are inside the timing).
    ``svgd-step`` / ``sliced-svgd-step``: the same samplers, one iteration alone (the
    difference of fits of ``k + 1`` and 1 iterations).
    """
    d = 100
    target = Gaussian(np.zeros(d))
    big = 10**9

    def svgd():
        n, k = (250, 10) if quick else (1000, 10)
        X0 = 2 + np.sqrt(2) * np.random.default_rng(0).standard_normal((n, d))
        est = SVGD(target, n_iter=k, history_every=big)
        return (lambda: est.fit(X0)), k

    def sliced():
        n, k = (100, 10) if quick else (200, 20)
        X0 = 2 + np.sqrt(2) * np.random.default_rng(0).standard_normal((n, d))
        est = SlicedSVGD(target, n_iter=k, history_every=big)
        return (lambda: est.fit(X0)), k

    def step(cls, n, k):
        # fits of k + 1 and of 1 iterations: their difference is k iterations alone
        def setup():
            X0 = 2 + np.sqrt(2) * np.random.default_rng(0).standard_normal((n, d))
            longer = cls(target, n_iter=k + 1, history_every=big)
            one = cls(target, n_iter=1, history_every=big)
            return (lambda: longer.fit(X0)), k, (lambda: one.fit(X0))
        return setup

    return [("svgd-iter", "iter/s", svgd), ("sliced-svgd-iter", "iter/s", sliced),
            ("svgd-step", "iter/s", step(SVGD, 250 if quick else 1000, 10)),
            ("sliced-svgd-step", "iter/s", step(SlicedSVGD, 100 if quick else 200, 20))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-sliced", action="store_true", help="time SVGD and the baseline only")
    args = ap.parse_args()
    target = Gaussian(np.zeros(args.d))
    big = 10**9
    for n in args.n:
        X0 = 2 + np.sqrt(2) * np.random.default_rng(0).standard_normal((n, args.d))
        iters = max(2, args.iters * 100 // n)
        ours = per_iter(lambda k: SVGD(target, n_iter=k, history_every=big).fit(X0), iters,
                        args.repeat)
        base = per_iter(lambda k: numpy_svgd(X0, target.grad_logpdf, k), iters, args.repeat)
        print(f"N={n} D={args.d}, median of {args.repeat} repeats, {iters} iterations")
        print(f"  SVGD                   {ours * 1e3:8.3f} ms/iter")
        print(f"  NumPy SVGD baseline    {base * 1e3:8.3f} ms/iter   "
              f"baseline / SVGD {base / ours:5.2f}x")
        if args.no_sliced:
            continue
        sliced = per_iter(lambda k: SlicedSVGD(target, n_iter=k, history_every=big).fit(X0),
                          iters, args.repeat)
        frozen = per_iter(lambda k: SlicedSVGD(target, n_iter=k, history_every=big,
                                               slice_update_every=0).fit(X0), iters,
                          args.repeat)
        print(f"  SlicedSVGD             {sliced * 1e3:8.3f} ms/iter "
              f"({sliced / ours:4.1f}x SVGD; 1 ascent step every 10 iterations)")
        print(f"  SlicedSVGD, fixed G    {frozen * 1e3:8.3f} ms/iter ({frozen / ours:4.1f}x SVGD)")


if __name__ == "__main__":
    main()
