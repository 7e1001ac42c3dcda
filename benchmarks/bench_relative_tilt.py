"""The relative KSD test with the tilted kernel, on models that differ in their tails.

For each case, data, model P and model Q, the rejection rates at alpha = 0.05 of the
default ``RelativeKSDTest`` (H1: Q fits better) with ``tilt=0`` (the plain kernels)
and with ``tilt="auto"`` (the default: plain and tilted kernels in one max-z test, the
exponent from both models' tails, at most half the data's order of moments,
:func:`skstein.gof._tilt.resolve_shared_tilt`; the exponent resolved on one sample is
printed), ``--trials`` samples of ``--n`` points each, for every dimension in
``--dims``. Every model is a product over the coordinates:

* Q better (the power): Student-t(4) data, Q the truth and P a Student-t(10), a
  Student-t(2), the truth scaled by 1.3, or the truth shifted by 0.2;
* ties by symmetry (the level): P has Student-t(3) tails to the left and t(10) tails
  to the right, Q the mirror image, on Student-t(5) data and on Cauchy data (heavier
  than both models: the data's bound on the exponent applies); and P, Q Student-t(3)
  shifted by 0.3 and -0.3 on Student-t(3) data.

``--rotated``: the same models at D = 3 in coordinates scaled by 1, 3 and 9 and
rotated (the data and both models alike; the default then adds whitened kernels):
the ties on Student-t(5) and Cauchy data, and Student-t(4) data against t(2) and t(10).

Run: ``python benchmarks/bench_relative_tilt.py [--dims 1 5] [--n 300] [--trials 200]
[--n-jobs -1] [--rotated]``
"""

import argparse
import warnings

import numpy as np
from scipy.stats import special_ortho_group

from skstein import RelativeKSDTest
from skstein.distributions import Distribution, StudentT
from skstein.experiments import rejection_rate


class TwoPieceT(Distribution):
    """Product of coordinates with Student-t(``left``) tails below 0 and t(``right``)
    tails above (the two halves joined continuously at 0; the score only)."""

    def __init__(self, dim, left, right):
        self.dim, self.left, self.right = dim, float(left), float(right)

    def _grad_logpdf(self, X):
        nu = np.where(X < 0.0, self.left, self.right)
        return -(nu + 1.0) * X / (nu + X * X)


def cases(D):
    t4 = StudentT(D, 4.0)

    def student(df):
        return lambda n, r: r.standard_t(df, (n, D))

    return [
        ("Q better", [
            ("t(4) data, P t(10)", student(4.0), StudentT(D, 10.0), t4),
            ("t(4) data, P t(2)", student(4.0), StudentT(D, 2.0), t4),
            ("t(4) data, P x 1.3", student(4.0), StudentT(D, 4.0, scale=1.3), t4),
            ("t(4) data, P + 0.2", student(4.0), StudentT(D, 4.0, loc=0.2), t4)]),
        ("ties", [
            ("t(5) data, tails 3|10 vs 10|3", student(5.0), TwoPieceT(D, 3, 10),
             TwoPieceT(D, 10, 3)),
            ("Cauchy data, tails 3|10 vs 10|3", student(1.0), TwoPieceT(D, 3, 10),
             TwoPieceT(D, 10, 3)),
            ("t(3) data, t(3) + 0.3 vs - 0.3", student(3.0), StudentT(D, 3.0, loc=0.3),
             StudentT(D, 3.0, loc=-0.3))]),
    ]


class Mapped:
    """The model of ``x = z A`` for ``z`` from ``base``: the score ``s(x A^-1) A^-T``."""

    def __init__(self, base, A):
        self.base, self.inv = base, np.linalg.inv(A)

    def grad_logpdf(self, X):
        return self.base.grad_logpdf(X @ self.inv) @ self.inv.T


def rotated_cases():
    D = 3
    A = np.diag([1.0, 3.0, 9.0]) @ special_ortho_group.rvs(D, random_state=4)

    def student(df):
        return lambda n, r: r.standard_t(df, (n, D)) @ A

    left, right = Mapped(TwoPieceT(D, 3, 10), A), Mapped(TwoPieceT(D, 10, 3), A)
    t4 = Mapped(StudentT(D, 4.0), A)
    return [("rotated, D = 3", [
        ("t(5) data, tails 3|10 vs 10|3", student(5.0), left, right),
        ("Cauchy data, tails 3|10 vs 10|3", student(1.0), left, right),
        ("t(4) data, P t(2)", student(4.0), Mapped(StudentT(D, 2.0), A), t4),
        ("t(4) data, P t(10)", student(4.0), Mapped(StudentT(D, 10.0), A), t4)])]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", type=int, nargs="+", default=[1, 5])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--n-jobs", type=int, default=-1)
    ap.add_argument("--rotated", action="store_true")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    kw = dict(n_trials=args.trials, n_jobs=args.n_jobs, verbose=False)
    print(f"n = {args.n}, {args.trials} trials; rejection rates tilt=0 / tilt='auto'")
    groups = rotated_cases() if args.rotated else [
        (f"D = {D}, {group}", rows) for D in args.dims for group, rows in cases(D)]
    for group, rows in groups:
        print(group)
        for k, (label, data, P, Q) in enumerate(rows):
            seed = args.seed + 100 * k
            test = RelativeKSDTest(P, Q)
            tilt = test.fit(data(args.n, np.random.default_rng(seed))).tilt_
            rates = [rejection_rate(test.set_params(tilt=t), data, args.n,
                                    random_state=seed, **kw).rate
                     for t in (0.0, "auto")]
            q = 0 if tilt is None else tilt.exponent
            print(f"    {label:34s} (exponent {q:g})  {rates[0]:.3f} / {rates[1]:.3f}",
                  flush=True)


if __name__ == "__main__":
    main()
