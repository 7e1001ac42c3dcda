"""The discrete KSD test's null: the wild bootstrap against the Monte Carlo null.

With the difference operator, the score :math:`p(x + e_j) / p(x) - 1` blows up at a
value far rarer than its neighbour, and the wild bootstrap of a few hundred points
misses what that heavy tail does to the statistic. Printed: the rejection rates of
true samples at alpha = 0.05 (``--trials`` samples each) of a categorical model whose
probabilities are drawn from Dirichlet(``--concentration``) (``--d`` coordinates of
``--values`` values, seeded by ``--seed``), for each size in ``--n``:

* the default test with ``bootstrap="multinomial"`` / ``"rademacher"`` ("auto"
  before the Monte Carlo null: Rademacher below 120 points, multinomial above), the
  aggregated bandwidths, 1000 draws;
* the Monte Carlo null (``bootstrap="auto"``, now) with the median bandwidth and 199
  model samples (an exact level whatever the bandwidth rule and the number of draws);
* the Zanella-Barker operator's default test, for comparison.

Run: ``python benchmarks/bench_discrete_null.py [--n 30 100 300 1000] [--d 3]
[--values 5] [--concentration 0.5] [--trials 200] [--seed 3] [--n-jobs -1]``
"""

import argparse
import warnings

import numpy as np

from skstein import KSDTest
from skstein._bootstrap import auto_bootstrap
from skstein.distributions import Categorical
from skstein.experiments import rejection_rate


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[30, 100, 300, 1000])
    ap.add_argument("--d", type=int, default=3)
    ap.add_argument("--values", type=int, default=5)
    ap.add_argument("--concentration", type=float, default=0.5)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--n-jobs", type=int, default=-1)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    rng = np.random.default_rng(args.seed)
    model = Categorical(rng.dirichlet(np.full(args.values, args.concentration), size=args.d))
    print(f"D = {args.d}, {args.values} values, Dirichlet({args.concentration:g}), "
          f"{args.trials} trials; levels: difference with the bootstrap / with the Monte "
          "Carlo null / Zanella-Barker")
    kw = dict(n_trials=args.trials, random_state=5, n_jobs=args.n_jobs, verbose=False)
    for n in args.n:
        wild = KSDTest(model, operator="difference", bootstrap=auto_bootstrap(n))
        exact = KSDTest(model, operator="difference", bandwidth="median", n_bootstrap=199)
        zb = KSDTest(model)
        rates = [rejection_rate(t, model, n, **kw).rate for t in (wild, exact, zb)]
        print(f"n = {n:5d}: " + " / ".join(f"{r:.3f}" for r in rates), flush=True)


if __name__ == "__main__":
    main()
