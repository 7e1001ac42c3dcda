"""PolynomialKSDTest in one and two dimensions: the Monte Carlo null against the bootstrap.

Below ``LOW_DIMENSION_MIN_SAMPLES`` (500) points in one or two dimensions the wild
bootstrap of the polynomial test rejects true models more often than ``alpha``;
``bootstrap="auto"`` takes the Monte Carlo null there (the statistic on samples of the
model, coordinates learned on each) when the model samples exactly. Printed: rejection
rates at alpha = 0.05 over ``--trials`` data sets, Monte Carlo null / wild bootstrap
(Rademacher below 120 points, multinomial above), model N(0, I):

* ``null``: the data are N(0, I) (the rate is the level);
* ``t5``: unit-variance Student-t(5) coordinates (heavier tails: the power);
* ``t5 u``: N(0, I) with one random direction's coordinate a unit-variance
  Student-t(5) (two dimensions only).

Run: ``python benchmarks/bench_polynomial_null.py [--n 30 50 100 300] [--d 1 2]
[--trials 400] [--draws 199] [--seed 3] [--reference sample|auto]`` (``--draws``: model
samples or bootstrap draws per test; ``--reference``: where the coordinates are
learned, by default the tested sample, as the rates in the test's docstring were
measured; ``auto`` is the test's default, the model's draws.)
"""

import argparse
import warnings

import numpy as np

from skstein import PolynomialKSDTest
from skstein.distributions import Gaussian, StudentT
from skstein.experiments import rejection_rate


class _OneDirectionT5:
    """N(0, I) with the coordinate along ``u`` replaced by a unit-variance t5."""

    def __init__(self, u):
        self.u = u

    def rvs(self, n, random_state=None):
        rng = np.random.default_rng(random_state)
        Z = rng.standard_normal((n, self.u.size))
        t = rng.standard_t(5.0, size=n) * np.sqrt(3.0 / 5.0)
        return Z + np.outer(t - Z @ self.u, self.u)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[30, 50, 100, 300])
    ap.add_argument("--d", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--trials", type=int, default=400)
    ap.add_argument("--draws", type=int, default=199)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--reference", choices=("sample", "auto"), default="sample")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    print(f"{args.trials} trials, {args.draws} draws: rate with the Monte Carlo null / the "
          "wild bootstrap")
    for d in args.d:
        model = Gaussian(np.zeros(d))
        data = {"null": model, "t5": StudentT(d, df=5.0, scale=np.sqrt(3.0 / 5.0))}
        if d >= 2:
            u = np.random.default_rng(7).standard_normal(d)
            data["t5 u"] = _OneDirectionT5(u / np.linalg.norm(u))
        for n in args.n:
            wild = "rademacher" if n < 120 else "multinomial"
            cells = []
            for name, dist in data.items():
                rates = [rejection_rate(
                    PolynomialKSDTest(model, bootstrap=kind, n_bootstrap=args.draws,
                                      reference=args.reference), dist,
                    n, n_trials=args.trials, random_state=args.seed, n_jobs=-1,
                    verbose=False).rate for kind in ("monte-carlo", wild)]
                cells.append(f"{name} {rates[0]:.3f} / {rates[1]:.3f}")
            print(f"D = {d}, n = {n:>4}: " + ", ".join(cells), flush=True)


if __name__ == "__main__":
    main()
