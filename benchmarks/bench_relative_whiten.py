"""``RelativeKSDTest(whiten="auto")``, the default, against the data's coordinates.

Two models of a rotated Gaussian R = N(0, Q diag(v) Q^T) with variances ``v`` from
``cond^-1/2`` to ``cond^1/2`` (spaced geometrically along the rotated axes): Q = R
itself (the truth) and P off along one axis, so that H0 (P at least as good as Q) is
false and the rate printed is the power; or P and Q mirror images (a tie, H0 true at
its boundary: the rate printed is the level).

Cases: ``shift narrow`` / ``shift wide``: P's mean moved by a fifth of a standard
deviation along the narrowest / widest axis; ``var narrow`` / ``var wide``: P's
variance along that axis 1.3 times R's; ``tie``: P and Q shifted by plus and minus
half a standard deviation along the narrowest axis; ``mixture``: R = Q three
spherical clusters (weights 0.3 / 0.3 / 0.4, means (-2, -2), (2, 2), (2, -2) in the
first two coordinates, variance 0.5; anisotropic through the clusters' spread, so
the default whitens), P the same with clusters of variance 0.6.

Printed: rejection rates at alpha = 0.05 over ``--trials`` data sets of ``--n``
points in ``--d`` dimensions, for ``whiten=False`` and the default, with the KSD
comparison (``--discrepancy ksd``) or the maxSKSD one.

Run: ``python benchmarks/bench_relative_whiten.py [--d 5] [--n 200] [--cond 100]
[--trials 100] [--seed 808] [--discrepancy ksd|maxsksd] [--n-jobs -1]``
"""

import argparse
import warnings

import numpy as np
from scipy.stats import ortho_group

from skstein import RelativeKSDTest
from skstein.distributions import Gaussian, GaussianMixture
from skstein.experiments import run_trials


class Shifted:
    """``model`` moved by ``v``."""

    def __init__(self, model, v):
        self.model, self.v = model, v

    def grad_logpdf(self, X):
        return self.model.grad_logpdf(X - self.v)


def models(case, d, cond, seed):
    """(R, P, Q) of ``case``."""
    if case == "mixture":
        means = np.zeros((3, d))
        means[:, :2] = [[-2.0, -2.0], [2.0, 2.0], [2.0, -2.0]]
        truth, wide = (GaussianMixture([0.3, 0.3, 0.4], means, np.full(3, v),
                                       covariance_type="spherical") for v in (0.5, 0.6))
        return truth, wide, truth
    Q = ortho_group.rvs(d, random_state=seed)
    var = cond ** np.linspace(-0.5, 0.5, d)
    truth = Gaussian(np.zeros(d), (Q * var) @ Q.T)
    sd = np.sqrt(var)
    kind, _, where = case.partition(" ")
    axis = 0 if where == "narrow" else d - 1
    if kind == "shift":
        return truth, Shifted(truth, 0.2 * sd[axis] * Q[:, axis]), truth
    if kind == "var":
        v = var.copy()
        v[axis] *= 1.3
        return truth, Gaussian(np.zeros(d), (Q * v) @ Q.T), truth
    step = 0.5 * sd[0] * Q[:, 0]
    return truth, Shifted(truth, step), Shifted(truth, -step)


def trial(seed, case, d, cond, model_seed, n, discrepancy, whiten):
    warnings.simplefilter("ignore")
    data, p, q = models(case, d, cond, model_seed)
    rng = np.random.default_rng(seed)
    X = data.rvs(n, random_state=rng)
    test = RelativeKSDTest(p, q, discrepancy=discrepancy, random_state=rng)
    if whiten is not None:
        test.set_params(whiten=whiten)
    return test.test(X).pvalue


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=5)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--cond", type=float, default=100.0)
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--seed", type=int, default=808)
    ap.add_argument("--discrepancy", choices=("ksd", "maxsksd"), default="ksd")
    ap.add_argument("--n-jobs", type=int, default=-1)
    args = ap.parse_args()
    print(f"RelativeKSDTest({args.discrepancy!r}), D = {args.d}, n = {args.n}, condition "
          f"number {args.cond:g}, {args.trials} trials, seed {args.seed}; rejection rates "
          "with whiten=False / the default 'auto'")
    for case in ("shift narrow", "shift wide", "var narrow", "var wide", "tie", "mixture"):
        rates = []
        for whiten in (False, None):
            p = np.array(run_trials(trial, args.trials, args=(case, args.d, args.cond,
                                                               args.seed, args.n,
                                                               args.discrepancy, whiten),
                                    random_state=args.seed, n_jobs=args.n_jobs,
                                    verbose=False))
            rates.append(np.mean(p <= 0.05))
        print(f"{case:14s} {rates[0]:.3f} / {rates[1]:.3f}", flush=True)


if __name__ == "__main__":
    main()
