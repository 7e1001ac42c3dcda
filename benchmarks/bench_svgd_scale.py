"""The step size against the target's scale: SVGD and sliced SVGD on N(0, s^2 I).

AdaGrad's steps (the default rule, also Adam's) are normalised by a running average
of the field's square, so each moves every coordinate by about ``step_size``, in the
units of x, whatever the scores, and they do not shrink as the particles settle.
The particles start at the target's scale (s N(0, I) + s, seed 1) and move
``--iters`` steps with the default ``step_size=0.1``, with ``step_size = s / 10``,
with ``step_scale="spread"`` (the step relative to the particles' standard deviation
along each coordinate) and, for SVGD, with ``whiten=True`` (steps in the coordinates
that whiten the particles, so relative to their spread). Printed: the error of the
particle mean per coordinate and the particle variance, both relative to the
target's (0 and 1 are exact).

Run: ``python benchmarks/bench_svgd_scale.py [--d 5] [--n 100] [--iters 1000]``
"""

import argparse

import numpy as np

from skstein import SVGD, SlicedSVGD
from skstein.distributions import Gaussian


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=5)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--scales", type=float, nargs="+", default=[1e-3, 1e-2, 1e-1, 1.0, 1e2])
    args = ap.parse_args()
    d, n = args.d, args.n
    print(f"{'s':>6} {'sampler':>10} {'step_size':>14} {'mean error / s':>14} "
          f"{'variance / s^2':>14}")
    for s in args.scales:
        X0 = s * np.random.default_rng(1).standard_normal((n, d)) + s
        target = Gaussian(np.zeros(d), s**2)
        spread = {"step_scale": "spread"}
        runs = [("SVGD", SVGD, 0.1, {}), ("SVGD", SVGD, s / 10, {}),
                ("SVGD", SVGD, 0.1, {"whiten": True}), ("SVGD", SVGD, 0.1, spread),
                ("SlicedSVGD", SlicedSVGD, 0.1, {}), ("SlicedSVGD", SlicedSVGD, s / 10, {}),
                ("SlicedSVGD", SlicedSVGD, 0.1, spread)]
        for name, cls, step, kw in runs:
            est = cls(target, n_iter=args.iters, step_size=step, random_state=0, **kw)
            X = est.fit(X0).particles_
            label = f"{step:.3g}" + "".join(f" {v if v != True else k}" for k, v in kw.items())
            err = np.linalg.norm(X.mean(axis=0)) / np.sqrt(d) / s
            var = X.var(axis=0, ddof=1).mean() / s**2
            print(f"{s:>6g} {name:>10} {label:>14} {err:>14.3f} {var:>14.3f}", flush=True)


if __name__ == "__main__":
    main()
