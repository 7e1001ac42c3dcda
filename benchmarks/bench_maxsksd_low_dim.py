"""MaxSKSDTest in one and two dimensions: the whole sample's moments on model samples.

With ``moment="pooled"`` (the default) the test also tests the second and fourth
moments of its whole input. In one dimension below 500 points their bootstraps run
above their levels; ``bootstrap="auto"`` calibrates them on samples of the model
there, when the model samples exactly; in two dimensions it keeps the bootstrap-t.
Printed: rejection rates at alpha = 0.05, the test with the moments calibrated on model
samples in every dimension (in one dimension, the default test) / the same test with
``bootstrap="rademacher"`` everywhere (the moments' wild bootstrap-t), model N(0, I):
the level over ``--trials`` true samples, and the power over ``--power-trials`` samples
of unit-variance Student-t(5) coordinates. ``n_bootstrap`` is ``--draws``.

Run: ``python benchmarks/bench_maxsksd_low_dim.py [--n 20 30 60 120] [--d 1 2]
[--trials 600] [--power-trials 200] [--draws 199] [--seed 202]``
"""

import argparse
import warnings

import numpy as np

from skstein import MaxSKSDTest
from skstein.distributions import Gaussian, StudentT
from skstein.experiments import rejection_rate


class _MomentsOnModelSamples(MaxSKSDTest):
    """The default test, its whole-sample moments calibrated on model samples whatever
    the dimension."""

    def _pooled_monte_carlo(self, n, d):
        return self.bootstrap == "auto"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[20, 30, 60, 120])
    ap.add_argument("--d", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--trials", type=int, default=600)
    ap.add_argument("--power-trials", type=int, default=200)
    ap.add_argument("--draws", type=int, default=199)
    ap.add_argument("--seed", type=int, default=202)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    print("rate with the moments on model samples / with bootstrap='rademacher'")
    for d in args.d:
        model = Gaussian(np.zeros(d))
        t5 = StudentT(d, df=5.0, scale=np.sqrt(3.0 / 5.0))
        for n in args.n:
            rates = []
            for data, trials in ((model, args.trials), (t5, args.power_trials)):
                for cls, kw in ((_MomentsOnModelSamples, {}),
                                (MaxSKSDTest, dict(bootstrap="rademacher"))):
                    test = cls(model, n_bootstrap=args.draws, **kw)
                    rates.append(rejection_rate(test, data, n, n_trials=trials,
                                                random_state=args.seed, n_jobs=-1,
                                                verbose=False).rate)
            print(f"D = {d}, n = {n:>4}: level {rates[0]:.3f} / {rates[1]:.3f}, Student-t(5) "
                  f"{rates[2]:.3f} / {rates[3]:.3f}", flush=True)


if __name__ == "__main__":
    main()
