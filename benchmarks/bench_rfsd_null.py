"""RFSDTest's two nulls: level and power, Gaussian null against Monte Carlo null.

Model N(0, I) in ``D`` dimensions, 10 features, level 5%. For each ``D,n`` cell the
script prints the rejection rate of ``n_trials`` samples of the model (the level) and of
four alternatives (the power): unit-variance Laplace, Student t with 5 degrees of
freedom scaled to unit variance, N(0, I) shifted by 0.3 along one axis, and N(0, 1.44 I)
(standard deviation 1.2). The nulls:
``gaussian/data`` (the Gaussian limit, covariance from the tested sample),
``gaussian/model`` (covariance from 5000 + 500 D model samples, Huggins & Mackey's
protocol) and ``monte-carlo`` (the statistic on ``--draws`` model samples, exact
level). The last column is the median seconds of one test. The 3-standard-deviation
band of a level estimate is printed with each cell.

Run: ``python benchmarks/bench_rfsd_null.py [--feature l1-imq] [--cells 5,200 20,500]
[--trials 200] [--draws 99] [--seed 4242] [--nulls monte-carlo]``
"""

import argparse

import numpy as np

from skstein import RFSDTest
from skstein.distributions import Gaussian, Laplace, StudentT
from skstein.experiments import rejection_rate


def _alternatives(d):
    shift = np.zeros(d)
    shift[0] = 0.3
    return {
        "null": Gaussian(np.zeros(d)),
        "laplace": Laplace(d),
        "student5": StudentT(d, df=5.0, scale=np.sqrt(3.0 / 5.0)),
        "shift0.3": Gaussian(shift),
        "scale1.2": Gaussian(np.zeros(d), 1.44),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--feature", default="l1-imq")
    ap.add_argument("--cells", nargs="+", default=["2,100", "5,200", "20,500"])
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--draws", type=int, default=99)
    ap.add_argument("--seed", type=int, default=4242)
    ap.add_argument("--nulls", nargs="+", default=None,
                    help="run only these nulls (default: all three)")
    args = ap.parse_args()
    print(f"{'D':>3} {'n':>5} {'data':>9} {'null':>15} {'rate':>6} {'s/test':>7}")
    for cell in args.cells:
        d, n = (int(v) for v in cell.split(","))
        model = Gaussian(np.zeros(d))
        band = 3 * np.sqrt(0.05 * 0.95 / args.trials)
        nulls = {
            "gaussian/data": dict(null="gaussian"),
            "gaussian/model": dict(null="gaussian", null_samples=5000 + 500 * d),
            "monte-carlo": dict(null="monte-carlo", n_simulate=args.draws),
        }
        if args.nulls is not None:
            nulls = {k: v for k, v in nulls.items() if k in args.nulls}
        for data_name, data in _alternatives(d).items():
            for null_name, kw in nulls.items():
                test = RFSDTest(model, feature=args.feature, **kw)
                rr = rejection_rate(test, data, n, n_trials=args.trials,
                                    random_state=args.seed, n_jobs=1, verbose=False)
                extra = f"  (level band 0.05 +- {band:.3f})" if data_name == "null" else ""
                print(f"{d:>3} {n:>5} {data_name:>9} {null_name:>15} {rr.rate:>6.3f} "
                      f"{np.median(rr.seconds):>7.3f}{extra}", flush=True)


if __name__ == "__main__":
    main()
