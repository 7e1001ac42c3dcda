"""``PolynomialKSDTest``'s coordinates learned on the tested sample, on the model's
draws, or both.

An unfitted test learns its kernel's coordinates (centre, scale, whitening and
saturation radius) on a reference sample: the sample it tests (``reference="sample"``),
``max(1000, n)`` draws of the model (``reference="model"``), or both, aggregated
(``"aggregate"``, which ``"auto"``, the default, takes for a model that samples
exactly). Printed: rejection rates at alpha = 0.05 over ``--trials`` data sets of
``--n`` points in ``--d`` dimensions, ``"sample"`` / ``"model"`` / ``"aggregate"``,
all with ``whiten="auto"``, every cell on the same data sets (``rejection_rate`` with
one seed), and the median time of one test.

Cases, in a random rotation (``--seed``), with the models of
``benchmarks/bench_whiten_auto.py``:

* ``rotated 100``: a Gaussian of condition number 100; the data with 1.5 times the
  variance along the widest axis (``var wide``), with unit-variance Laplace
  coordinates along a random direction of the model's standardised coordinates
  (``laplace direction``), or true samples (``level``);
* ``mixture``: three spherical clusters of variance 0.5, the data's of variance 0.7
  (``wide clusters``), or true samples;
* ``isotropic, Student-t(5)``: N(0, I) against unit-variance Student-t(5) coordinates.

Run: ``python benchmarks/bench_polynomial_reference.py [--d 5 20 50] [--n 300]
[--trials 200] [--seed 808] [--n-jobs -1]``
"""

import argparse
import warnings

import numpy as np
from scipy.stats import ortho_group

from bench_whiten_auto import mixture, rotated
from skstein import PolynomialKSDTest
from skstein.distributions import Gaussian, StudentT
from skstein.experiments import rejection_rate


def cases(d, Q, rng):
    model, sd = rotated(d, 100.0, Q)
    wide = Q[:, -1]
    v = rng.standard_normal(d)
    v /= np.linalg.norm(v)

    def stretch(m, g):
        X = model.rvs(m, random_state=g)
        return X + (np.sqrt(1.5) - 1.0) * np.outer(X @ wide, wide)

    def laplace(m, g):
        Z = g.standard_normal((m, d))  # standardised coordinates: x = Q diag(sd) z
        Z += np.outer(g.laplace(0.0, 2 ** -0.5, m) - Z @ v, v)
        return (Z * sd) @ Q.T

    t5 = StudentT(d, 5.0, scale=np.sqrt(3.0 / 5.0))
    return [("rotated 100, var wide", model, stretch),
            ("rotated 100, laplace direction", model, laplace),
            ("rotated 100, level", model, model),
            ("mixture, wide clusters", mixture(d, 0.5), mixture(d, 0.7)),
            ("mixture, level", mixture(d, 0.5), mixture(d, 0.5)),
            ("isotropic, Student-t(5)", Gaussian(np.zeros(d)), t5)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, nargs="+", default=[5, 20, 50])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--seed", type=int, default=808)
    ap.add_argument("--n-jobs", type=int, default=-1)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    kw = dict(n_trials=args.trials, random_state=args.seed, n_jobs=args.n_jobs, verbose=False)
    print(f"PolynomialKSDTest, n = {args.n}, {args.trials} trials, seed {args.seed}; "
          "rates with reference='sample' / 'model' / 'aggregate'; median seconds per test")
    for d in args.d:
        Q = ortho_group.rvs(d, random_state=args.seed)
        for name, model, data in cases(d, Q, np.random.default_rng(args.seed)):
            rates, secs = [], []
            for reference in ("sample", "model", "aggregate"):
                r = rejection_rate(PolynomialKSDTest(model, reference=reference), data,
                                   args.n, **kw)
                rates.append(r.rate)
                secs.append(float(np.median(r.seconds)))
            print(f"D = {d:3d}  {name:32s} " + " / ".join(f"{r:.3f}" for r in rates)
                  + "   " + " / ".join(f"{t:.3f}" for t in secs) + " s", flush=True)


if __name__ == "__main__":
    main()
