"""The tilted KSD test on models whose score fades or stays bounded in the tails.

For each model, its own samples (the level) and samples whose tails differ from it,
the rejection rates at alpha = 0.05 of the default ``KSDTest`` with ``tilt=0`` (the
plain kernel) and with ``tilt="auto"`` (the default: plain and tilted kernels
aggregated, the exponent from the model's tails, :mod:`skstein.gof._tilt`; printed
once per model, resolved on a sample of it), ``--trials`` samples of
``--n`` points each, for every dimension in ``--dims``:

* ``t3``: the product of Student-t(3) coordinates, against t(6) coordinates, N(0, 3 I)
  (the same variance, lighter tails) and the model scaled by 1.3;
* ``mvt3``: the multivariate (elliptical) Student-t(3), against N(0, 3 I);
* ``cauchy``: the product of Cauchy coordinates, against t(2);
* ``laplace``: the product of Laplace coordinates of unit variance, against N(0, I).

A Gaussian model takes exponent 0: the plain test, the same numbers.

Run: ``python benchmarks/bench_tilt.py [--dims 1 5 20] [--n 200] [--trials 200]
[--n-jobs -1]``
"""

import argparse
import warnings

import numpy as np

from skstein import KSDTest
from skstein.distributions import Distribution, Laplace, StudentT
from skstein.experiments import rejection_rate
from skstein.gof._tilt import resolve_tilt


class EllipticalT(Distribution):
    """The multivariate Student-t with ``df`` degrees of freedom, identity scale."""

    def __init__(self, dim, df):
        self.dim, self.df = dim, float(df)

    def _grad_logpdf(self, X):
        r2 = np.einsum("ij,ij->i", X, X)
        return -((self.df + self.dim) / (self.df + r2))[:, None] * X

    def _rvs(self, n, rng):
        g = rng.chisquare(self.df, size=(n, 1))
        return rng.standard_normal((n, self.dim)) / np.sqrt(g / self.df)


def cases(D):
    t3, cauchy, laplace, mvt = StudentT(D, 3.0), StudentT(D, 1.0), Laplace(D), EllipticalT(D, 3)
    return [
        ("t3", t3, [("model", t3.rvs),
                    ("t(6)", lambda n, r: r.standard_t(6.0, (n, D))),
                    ("N(0, 3I)", lambda n, r: np.sqrt(3.0) * r.standard_normal((n, D))),
                    ("scale 1.3", lambda n, r: 1.3 * r.standard_t(3.0, (n, D)))]),
        ("mvt3", mvt, [("model", mvt.rvs),
                       ("N(0, 3I)", lambda n, r: np.sqrt(3.0) * r.standard_normal((n, D)))]),
        ("cauchy", cauchy, [("model", cauchy.rvs),
                            ("t(2)", lambda n, r: r.standard_t(2.0, (n, D)))]),
        ("laplace", laplace, [("model", laplace.rvs),
                              ("N(0, I)", lambda n, r: r.standard_normal((n, D)))]),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", type=int, nargs="+", default=[1, 5, 20])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--n-jobs", type=int, default=-1)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    kw = dict(n_trials=args.trials, n_jobs=args.n_jobs, verbose=False)
    print(f"n = {args.n}, {args.trials} trials; rejection rates tilt=0 / tilt='auto'")
    for D in args.dims:
        for name, model, alts in cases(D):
            q = resolve_tilt(model, model.rvs(args.n, random_state=0), "auto")
            print(f"D = {D:3d} {name:8s} (exponent {0 if q is None else q.exponent:g})")
            for k, (label, data) in enumerate(alts):
                seed = args.seed + 100 * k
                rates = [rejection_rate(KSDTest(model, tilt=tilt), data, args.n,
                                        random_state=seed, **kw).rate
                         for tilt in (0.0, "auto")]
                print(f"    {label:10s} {rates[0]:.3f} / {rates[1]:.3f}", flush=True)


if __name__ == "__main__":
    main()
