"""Every goodness-of-fit test, at its defaults, on random problems that no choice saw.

The problems are drawn from ``--seed`` (rotations from the Haar measure, scales, means
and covariances at random), so another seed gives other problems of the same kinds;
no setting of any test was chosen on them. Each cell is the rejection rate at alpha =
0.05 over ``--trials`` samples of ``--n`` points (``rejection_rate``, seeded).

``nulls``: true samples of five models. A rate above alpha plus three binomial
standard deviations is marked ``<``.

* ``t(4), rotated, D=6``: Student-t(4) coordinates, scaled by factors from e^-1 to e,
  rotated;
* ``mixture, D=5``: three Gaussian components (weights 0.5, 0.3, 0.2), random means and
  covariances;
* ``banana, D=3``: :class:`~skstein.distributions.Banana` (curvature 0.7), rotated;
* ``Laplace, rotated, D=8``: unit-variance Laplace coordinates, rotated and shifted;
* ``Gaussian, D=40``: a random mean and covariance.

``departures``: data that differ from the model (the power).

* from each model above: Student-t(10) coordinates for the t(4) model; the mixture
  with its first two weights swapped (0.3, 0.5, 0.2); the banana with curvature 1.0;
  Student-t(5) coordinates of unit variance for the Laplace model; the Gaussian with
  its variance multiplied by 1.6 along one of its principal axes (the middle one);
* from N(0, I) at every D of ``--dims``, along random unit vectors ``u``, ``v``: a
  mean shift of 0.25 along ``u``; a variance of 1.5 along ``u``; a correlation of 0.3
  between ``u`` and ``v``; rotated unit-variance Laplace coordinates; and, for the
  model with two components at +-2u (identity covariances, equal weights), data
  whose components have covariance 0.7 I.

``modes``: at every D of ``--dims``, a model of three unit-variance Gaussian components
of equal weights, 3 apart along random orthonormal directions; its true samples (a
null), data whose weights are 0.5 / 0.3 / 0.2, and data from two of its three
components (a mode missing).

``scales``: at every D of ``--dims``, a Gaussian model with variances from e^-3.5 to
e^3.5 (log-uniform) along random orthonormal axes and a random mean; its true
samples, a mean shift of half a standard deviation along its widest axis and along
its narrowest, and the variance along its narrowest axis times 1.8.

Tests (``--tests``, default all but ``RFSD``, whose Monte Carlo null costs about 500
statistics a test): ``KSD``, ``KSD+moments`` (``KSDTest(moments=True)``), ``MaxSKSD``,
``Poly`` (:class:`PolynomialKSDTest`),
``FSSD``, ``Linear`` (:class:`LinearKSDTest`), ``Perturbed``, ``MMD``
(:class:`MMDGOFTest`), ``RFSD``, and, not in the default list, ``KSD-whitened``:
``KSDTest(whiten=True)``, the whitened geometry alone.

Run: ``python benchmarks/bench_unseen.py [--part nulls departures modes scales] [--seed 2027]
[--n 200] [--trials 200] [--dims 2 5 10] [--tests KSD MaxSKSD ...] [--n-jobs -1]``
"""

import argparse
import time
from functools import partial
import warnings

import numpy as np
from scipy.stats import special_ortho_group

import skstein as sk
from skstein import distributions as dist
from skstein.experiments import rejection_rate

TESTS = {
    "KSD": sk.KSDTest,
    "KSD+moments": partial(sk.KSDTest, moments=True),
    "MaxSKSD": sk.MaxSKSDTest,
    "Poly": sk.PolynomialKSDTest,
    "FSSD": sk.FSSDTest,
    "Linear": sk.LinearKSDTest,
    "Perturbed": sk.PerturbedKSDTest,
    "MMD": sk.MMDGOFTest,
    "RFSD": sk.RFSDTest,
    "KSD-whitened": partial(sk.KSDTest, whiten=True),
}


def scaled_rotation(D, rng):
    """``diag(e^-u) R^T``: a Haar rotation ``R`` and scales ``e^-u``, ``u`` uniform on
    [-1, 1] (drawn first), the map of the rotated Student-t models."""
    return np.diag(np.exp(-rng.uniform(-1.0, 1.0, D))) @ special_ortho_group.rvs(
        D, random_state=rng).T


def random_models(rng):
    """``[(name, model, departure)]``: the five random models and their departures."""
    def rotation(D):
        return special_ortho_group.rvs(D, random_state=rng)

    out = []
    D = 6
    A = scaled_rotation(D, rng)
    out.append(("t(4), rotated, D=6",
                dist.AffineTransformed(dist.StudentT(D, 4.0), A, np.zeros(D)),
                dist.AffineTransformed(dist.StudentT(D, 10.0), A, np.zeros(D))))
    D = 5
    means = rng.normal(0.0, 2.5, (3, D))
    covs = []
    for _ in range(3):
        B = rng.normal(size=(D, D))
        covs.append(B @ B.T / D + 0.3 * np.eye(D))
    covs = np.array(covs)
    out.append(("mixture, D=5",
                dist.GaussianMixture(np.array([0.5, 0.3, 0.2]), means, covs),
                dist.GaussianMixture(np.array([0.3, 0.5, 0.2]), means, covs)))
    R = rotation(3)
    out.append(("banana, D=3", dist.Banana(3, curvature=0.7, rotation=R),
                dist.Banana(3, curvature=1.0, rotation=R)))
    D = 8
    R, b = rotation(D), rng.normal(size=D)
    out.append(("Laplace, rotated, D=8",
                dist.AffineTransformed(dist.Laplace(D), R.T, b),
                dist.AffineTransformed(dist.StudentT(D, 5.0, scale=np.sqrt(3.0 / 5.0)),
                                       R.T, b)))
    D = 40
    B = rng.normal(size=(D, D))
    cov = B @ B.T / D + 0.1 * np.eye(D)
    mean = rng.normal(size=D)
    w, V = np.linalg.eigh(cov)
    v = V[:, D // 2]
    out.append(("Gaussian, D=40", dist.Gaussian(mean, cov),
                dist.Gaussian(mean, cov + 0.6 * w[D // 2] * np.outer(v, v))))
    return out


def standard_departures(D, rng):
    """``[(name, model, data)]``: the departures from N(0, I) (or the two-component
    model) along random directions in ``D`` dimensions."""
    R = special_ortho_group.rvs(D, random_state=rng) if D > 1 else np.ones((1, 1))
    u, v = R[:, 0], R[:, 1]
    eye = np.eye(D)
    normal = dist.Gaussian(np.zeros(D))
    two = np.stack([2.0 * u, -2.0 * u])

    def mixture(scale):
        return dist.GaussianMixture(np.array([0.5, 0.5]), two, np.array([scale * eye] * 2))

    return [
        ("shift 0.25", normal, dist.Gaussian(0.25 * u)),
        ("variance 1.5", normal, dist.Gaussian(np.zeros(D), eye + 0.5 * np.outer(u, u))),
        ("correlation 0.3", normal,
         dist.Gaussian(np.zeros(D), eye + 0.3 * (np.outer(u, v) + np.outer(v, u)))),
        ("Laplace, rotated", normal, dist.AffineTransformed(dist.Laplace(D), R.T, np.zeros(D))),
        ("mixture widths 0.7", mixture(1.0), mixture(0.7)),
    ]


def mode_departures(D, rng):
    """``[(name, model, data)]``: three equal, well-separated components, their true
    samples, other weights, and a component missing."""
    centres = 3.0 * special_ortho_group.rvs(D, random_state=rng)[:, :3].T
    covs = np.array([np.eye(D)] * 3)
    model = dist.GaussianMixture(np.full(3, 1.0 / 3.0), centres, covs)
    return [
        ("null", model, model),
        ("weights 0.5/0.3/0.2", model,
         dist.GaussianMixture(np.array([0.5, 0.3, 0.2]), centres, covs)),
        ("two of three modes", model,
         dist.GaussianMixture(np.array([0.5, 0.5]), centres[:2], covs[:2])),
    ]


def scale_departures(D, rng):
    """``[(name, model, data)]``: a Gaussian whose scales span a factor of e^7 along
    random axes, its true samples and three departures along its extreme axes."""
    Q = special_ortho_group.rvs(D, random_state=rng)
    w = np.exp(rng.uniform(-3.5, 3.5, D))
    cov, mean = (Q * w) @ Q.T, rng.normal(size=D)
    narrow, wide = np.argmin(w), np.argmax(w)
    model = dist.Gaussian(mean, cov)

    def shifted(k):
        return dist.Gaussian(mean + 0.5 * np.sqrt(w[k]) * Q[:, k], cov)

    return [
        ("null", model, model),
        ("shift 0.5 sd, widest", model, shifted(wide)),
        ("shift 0.5 sd, narrowest", model, shifted(narrow)),
        ("variance x1.8, narrowest", model,
         dist.Gaussian(mean, cov + 0.8 * w[narrow] * np.outer(Q[:, narrow], Q[:, narrow]))),
    ]


def row(name, model, data, args):
    cells = []
    bound = 0.05 + 3.0 * np.sqrt(0.05 * 0.95 / args.trials)
    for test in args.tests:
        r = rejection_rate(TESTS[test](model), data, args.n, n_trials=args.trials,
                           random_state=args.seed, n_jobs=args.n_jobs, verbose=0)
        mark = "<" if model is data and r.rate > bound else " "
        cells.append(f"{r.rate:>{max(len(test), 5)}.3f}{mark}")
    print(f"  {name:<34s}" + " ".join(cells), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--part", nargs="+", default=["nulls", "departures"],
                        choices=["nulls", "departures", "modes", "scales"])
    parser.add_argument("--seed", type=int, default=2027)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--dims", type=int, nargs="+", default=[2, 5, 10])
    parser.add_argument("--tests", nargs="+", choices=list(TESTS),
                        default=[t for t in TESTS if t not in ("RFSD", "KSD-whitened")])
    parser.add_argument("--n-jobs", type=int, default=-1)
    args = parser.parse_args()
    if min(args.dims) < 2:
        parser.error("--dims: the departures need at least two dimensions")
    if "modes" in args.part and min(args.dims) < 3:
        parser.error("--dims: the three modes need at least three dimensions")
    warnings.simplefilter("ignore")  # heavy-tail and small-sample warnings, expected
    header = f"  {'':<34s}" + " ".join(f"{t:>{max(len(t), 5)}s} " for t in args.tests)
    t0 = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    models = random_models(rng)
    print(f"seed {args.seed}, n = {args.n}, {args.trials} trials, alpha = 0.05")
    if "nulls" in args.part:
        print("nulls (rejection rate of true samples; < above alpha + 3 sd)")
        print(header)
        for name, model, _ in models:
            row(name, model, model, args)
    if "departures" in args.part:
        print("departures (rejection rate)")
        print(header)
        for name, model, data in models:
            row(name, model, data, args)
        for D in args.dims:
            for name, model, data in standard_departures(D, rng):
                row(f"{name}, D={D}", model, data, args)
    # each part of its own stream, apart from the others
    for key, (part, problems) in enumerate([("modes", mode_departures),
                                            ("scales", scale_departures)], start=1):
        if part not in args.part:
            continue
        print(f"{part} (rejection rate)")
        print(header)
        part_rng = np.random.default_rng([args.seed, key])
        for D in args.dims:
            for name, model, data in problems(D, part_rng):
                row(f"{name}, D={D}", model, data, args)
    print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
