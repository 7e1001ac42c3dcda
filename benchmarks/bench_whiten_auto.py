"""``whiten="auto"``, the default of ``KSDTest``, ``MaxSKSDTest`` and
``PolynomialKSDTest``, against the data's coordinates alone.

``KSDTest(whiten="auto")`` adds the whitened geometry to the aggregated collection
when the Ledoit-Wolf covariance of the tested sample has a condition number of at
least :data:`skstein.kernels.AUTO_WHITEN_CONDITION` (4), and is ``whiten=False``
otherwise (the same numbers); ``MaxSKSDTest(whiten="auto")`` searches in both
geometries when its training sample is anisotropic (``--test maxsksd``; the share
printed is then that of the whole samples, a guide to the training parts');
``PolynomialKSDTest(whiten="auto")`` takes the whitened coordinates alone there
(``--test polynomial``; a shift, which its kernel hardly sees, is no test of it; with
the coordinates learned on the tested sample, ``--reference sample``, the default
here, as the rates in its docstring were measured; ``--reference auto`` learns them
on the model's draws, the test's default, which
``benchmarks/bench_polynomial_reference.py`` compares).
Printed: rejection rates at alpha = 0.05 over ``--trials`` data sets of ``--n``
points in ``--d`` dimensions, for ``whiten=False`` and the default, and the share of
the data sets on which the default whitened.

Cases, models and data in a random rotation (``--seed``):

* ``rotated k``: a Gaussian with variances from ``1 / sqrt(k)`` to ``sqrt(k)``
  (condition number ``k``, spaced geometrically along the rotated axes); the data
  shifted by half a standard deviation along the widest axis (``shift wide``) or the
  narrowest (``shift narrow``), with 1.5 times the variance along the widest axis
  (``var wide``), or true samples (``level``);
* ``mixture``: three spherical clusters (weights 0.3 / 0.3 / 0.4, means (-2, -2),
  (2, 2), (2, -2) in the first two coordinates, variance 0.5), the data's clusters of
  variance 0.7 (``wide clusters``), or true samples;
* ``isotropic``: N(0, I) against unit-variance Student-t(5) coordinates, where the
  default whitens in no trial and gives the same numbers as ``whiten=False``.

Run: ``python benchmarks/bench_whiten_auto.py [--d 5] [--n 300] [--trials 200]
[--seed 808] [--conds 16 100] [--test ksd|maxsksd|polynomial] [--reference
sample|auto] [--n-jobs -1]``
"""

import argparse
import functools
import warnings

import numpy as np
from scipy.stats import ortho_group

from skstein import KSDTest, MaxSKSDTest, PolynomialKSDTest
from skstein.distributions import AffineTransformed, Gaussian, GaussianMixture, StudentT
from skstein.experiments import rejection_rate
from skstein.kernels import AUTO_WHITEN_CONDITION, whitening, whitening_condition


def rotated(d, cond, Q):
    """N(0, Q diag(v) Q^T) with variances ``v`` from cond^-1/2 to cond^1/2, and the
    standard deviations."""
    sd = cond ** (np.linspace(-0.25, 0.25, d))
    # x = Q diag(sd) y with y ~ N(0, I): AffineTransformed takes the map x -> y
    return AffineTransformed(Gaussian(np.zeros(d)), np.diag(1.0 / sd) @ Q.T, np.zeros(d)), sd


def mixture(d, variance):
    means = np.zeros((3, d))
    means[:, :2] = [[-2.0, -2.0], [2.0, 2.0], [2.0, -2.0]]
    return GaussianMixture([0.3, 0.3, 0.4], means, np.full(3, variance),
                           covariance_type="spherical")


def cases(d, Q, conds=(16.0, 100.0)):
    out = []
    for cond in conds:
        model, sd = rotated(d, cond, Q)
        wide, narrow = Q[:, -1], Q[:, 0]

        def shift(v, model=model):
            return lambda m, rng: model.rvs(m, random_state=rng) + v

        def stretch(m, rng, u=wide, model=model):
            X = model.rvs(m, random_state=rng)
            return X + (np.sqrt(1.5) - 1.0) * np.outer(X @ u, u)

        out += [(f"rotated {cond:g}, shift wide", model, shift(0.5 * sd[-1] * wide)),
                (f"rotated {cond:g}, shift narrow", model, shift(0.5 * sd[0] * narrow)),
                (f"rotated {cond:g}, var wide", model, stretch),
                (f"rotated {cond:g}, level", model, model)]
    model = mixture(d, 0.5)
    out += [("mixture, wide clusters", model, mixture(d, 0.7)),
            ("mixture, level", model, model)]
    t5 = StudentT(d, 5.0, scale=np.sqrt(3.0 / 5.0))
    out += [("isotropic, Student-t(5)", Gaussian(np.zeros(d)), t5)]
    return out


def whitened_share(data, n, trials, seed):
    """The share of data sets of the case on which ``whiten="auto"`` whitens."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(trials):
        X = data.rvs(n, random_state=rng) if hasattr(data, "rvs") else data(n, rng)
        hits += whitening_condition(whitening(X)) >= AUTO_WHITEN_CONDITION
    return hits / trials


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=5)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--seed", type=int, default=808)
    ap.add_argument("--test", choices=("ksd", "maxsksd", "polynomial"), default="ksd")
    ap.add_argument("--reference", choices=("sample", "auto"), default="sample",
                    help="PolynomialKSDTest's reference (--test polynomial only)")
    ap.add_argument("--conds", type=float, nargs="+", default=[16.0, 100.0],
                    help="condition numbers of the rotated Gaussians")
    ap.add_argument("--n-jobs", type=int, default=-1)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    Q = ortho_group.rvs(args.d, random_state=args.seed)
    kw = dict(n_trials=args.trials, random_state=args.seed, n_jobs=args.n_jobs, verbose=False)
    cls = {"ksd": KSDTest, "maxsksd": MaxSKSDTest, "polynomial": PolynomialKSDTest}[args.test]
    if args.test == "polynomial":
        cls = functools.partial(PolynomialKSDTest, reference=args.reference)
        cls.__name__ = f"PolynomialKSDTest(reference={args.reference!r})"
    print(f"{cls.__name__}, D = {args.d}, n = {args.n}, {args.trials} trials, "
          f"seed {args.seed}; "
          "rates with whiten=False / the default 'auto'; share of data sets whitened")
    for name, model, data in cases(args.d, Q, args.conds):
        off = rejection_rate(cls(model, whiten=False), data, args.n, **kw).rate
        auto = rejection_rate(cls(model), data, args.n, **kw).rate
        share = whitened_share(data, args.n, 50, args.seed + 1)
        print(f"{name:32s} {off:.3f} / {auto:.3f}   whitened {share:.2f}", flush=True)


if __name__ == "__main__":
    main()
