"""The relative tests, at their defaults, on random problems that no choice saw.

The data's distribution R is drawn from ``--seed`` (rotations from the Haar measure,
scales, means and covariances at random), so another seed gives other problems of
the same kinds; no setting of any test was chosen on them. Every R is symmetric about
its centre ``c`` (``x -> 2c - x`` maps it to itself), so two models that are mirror
images of each other through ``c`` fit it exactly equally well: the boundary of H0,
where a test may reject in at most ``alpha`` of the trials.

* ``t(4), rotated, D=6``: Student-t(4) coordinates, scaled by factors from e^-1 to e,
  rotated;
* ``Laplace, rotated, D=8``: unit-variance Laplace coordinates, rotated and shifted;
* ``Gaussian, D=40``: a random mean and covariance;
* ``two modes, D=5``: two Gaussian components of equal weight at ``c +- m`` (a random
  ``m`` of length 3) with one random covariance;
* ``t(3), D=2``: Student-t(3) coordinates.

For each R and a random direction ``u`` scaled to one standard deviation of R along it
(``v = L u`` with ``L`` the Cholesky factor of R's covariance, estimated on 20 000
draws), the models P and Q (H0: P is at least as good as Q):

* ``tie``: P = R moved by ``0.5 v``, Q = R moved by ``-0.5 v`` (the level at the
  boundary; a rate above alpha plus three binomial standard deviations is marked ``<``);
* ``P closer``: P moved by ``0.25 v``, Q by ``0.75 v`` (inside H0: near zero);
* ``Q true, P shifted``: P moved by ``0.25 v``, Q = R (the power);
* ``Q true, P wider``: P stretched about ``c`` by a factor sqrt(1.5) along ``v``, so
  that its variance there is 1.5 times R's, Q = R (the power).

``--part latent`` (its own random stream): probabilistic PCA models
(:class:`~skstein.distributions.PPCA`, D = 10 with 3 latent dimensions and D = 40
with 5; random loadings and noise variances), whose score the ``KSD-posterior``
column estimates from 500 posterior draws per point (``model_score="posterior"``, the
route of a latent-variable model without a tractable marginal): a tie (the mean moved
by ``+-0.5 v``), Q = R against P's mean moved by ``0.25 v``, and Q = R against P with
1.5 times R's noise variances.

Tests (``--tests``): ``KSD`` (:class:`~skstein.RelativeKSDTest`), ``MaxSKSD``
(``RelativeKSDTest(discrepancy="maxsksd")``, about 50 times the KSD comparison's
time), ``MMD`` (:class:`~skstein.RelativeMMDTest`, which draws ``n`` samples of each
model), and, not in the default list, ``KSD-rbf``: ``RelativeKSDTest(kernel="rbf")``,
the Gaussian kernel in place of the default IMQ, and ``KSD-posterior`` (latent models
only; ``-`` elsewhere). Each cell is the rejection rate at
alpha = 0.05 over ``--trials`` samples of ``--n`` points (``rejection_rate``, seeded).

Run: ``python benchmarks/bench_relative_unseen.py [--part symmetric latent] [--seed 2027]
[--n 200] [--trials 200] [--tests KSD MaxSKSD MMD KSD-rbf KSD-posterior] [--n-jobs -1]``
"""

import argparse
import time
import warnings
from functools import partial

import numpy as np
from scipy.stats import special_ortho_group

from bench_unseen import scaled_rotation
import skstein as sk
from skstein import distributions as dist
from skstein.experiments import rejection_rate

TESTS = {
    "KSD": sk.RelativeKSDTest,
    "MaxSKSD": partial(sk.RelativeKSDTest, discrepancy="maxsksd"),
    "MMD": sk.RelativeMMDTest,
    "KSD-rbf": partial(sk.RelativeKSDTest, kernel="rbf"),
    "KSD-posterior": partial(sk.RelativeKSDTest, model_score="posterior"),
}


def random_models(rng):
    """``[(name, R, centre)]``: the five symmetric distributions."""
    def rotation(D):
        return special_ortho_group.rvs(D, random_state=rng)

    out = []
    D = 6
    A = scaled_rotation(D, rng)
    out.append(("t(4), rotated, D=6",
                dist.AffineTransformed(dist.StudentT(D, 4.0), A, np.zeros(D)), np.zeros(D)))
    D = 8
    R, b = rotation(D), rng.normal(size=D)
    # y = R^T x + b ~ Laplace: x is centred at -R b
    out.append(("Laplace, rotated, D=8",
                dist.AffineTransformed(dist.Laplace(D), R.T, b), -R @ b))
    D = 40
    B = rng.normal(size=(D, D))
    mean = rng.normal(size=D)
    out.append(("Gaussian, D=40", dist.Gaussian(mean, B @ B.T / D + 0.1 * np.eye(D)), mean))
    D = 5
    centre, m = rng.normal(size=D), rng.normal(size=D)
    m *= 3.0 / np.linalg.norm(m)
    B = rng.normal(size=(D, D))
    cov = B @ B.T / D + 0.3 * np.eye(D)
    out.append(("two modes, D=5",
                dist.GaussianMixture(np.array([0.5, 0.5]), np.stack([centre + m, centre - m]),
                                     np.array([cov, cov])), centre))
    out.append(("t(3), D=2", dist.StudentT(2, 3.0), np.zeros(2)))
    return out


def moved(R, v):
    """R moved by ``v``."""
    return dist.AffineTransformed(R, np.eye(v.size), -v)


def stretched(R, centre, u, factor):
    """R stretched about ``centre`` by ``factor`` along the unit vector ``u``."""
    # x = c + M (y - c) with M = I + (factor - 1) u u^T: y = M^-1 x + (c - M^-1 c)
    Minv = np.eye(u.size) + (1.0 / factor - 1.0) * np.outer(u, u)
    return dist.AffineTransformed(R, Minv, centre - Minv @ centre)


def cases(R, centre, rng):
    """``[(name, P, Q)]`` of the four cases of ``R``."""
    L = np.linalg.cholesky(np.cov(R.rvs(20000, random_state=rng).T))
    u = rng.normal(size=centre.size)
    u /= np.linalg.norm(u)
    v = L @ u
    w = v / np.linalg.norm(v)
    return [("tie", moved(R, 0.5 * v), moved(R, -0.5 * v)),
            ("P closer", moved(R, 0.25 * v), moved(R, 0.75 * v)),
            ("Q true, P shifted", moved(R, 0.25 * v), R),
            ("Q true, P wider", stretched(R, centre, w, np.sqrt(1.5)), R)]


def latent_cases(rng):
    """``[(name, R, P, Q)]`` of the latent part."""
    out = []
    for D, k in ((10, 3), (40, 5)):
        W = rng.normal(size=(D, k)) * np.exp(rng.uniform(-1.0, 1.0, k))
        psi = np.exp(rng.uniform(-1.0, 0.5, D))
        R = dist.PPCA(W, psi)
        L = np.linalg.cholesky(W @ W.T + np.diag(psi))
        u = rng.normal(size=D)
        v = L @ (u / np.linalg.norm(u))
        name = f"PPCA, D={D}, {k} latent"
        out += [(f"{name}, tie", R, dist.PPCA(W, psi, 0.5 * v), dist.PPCA(W, psi, -0.5 * v)),
                (f"{name}, Q true, P shifted", R, dist.PPCA(W, psi, 0.25 * v), R),
                (f"{name}, Q true, P noisier", R, dist.PPCA(W, 1.5 * psi), R)]
    return out


def row(name, R, P, Q, args):
    cells = []
    bound = 0.05 + 3.0 * np.sqrt(0.05 * 0.95 / args.trials)
    for test in args.tests:
        if test == "KSD-posterior" and not hasattr(P, "sample_posterior"):
            cells.append(f"{'-':>{max(len(test), 7)}s} ")
            continue
        r = rejection_rate(TESTS[test](P, Q), R, args.n, n_trials=args.trials,
                           random_state=args.seed, n_jobs=args.n_jobs, verbose=0)
        mark = "<" if name.endswith("tie") and r.rate > bound else " "
        cells.append(f"{r.rate:>{max(len(test), 7)}.3f}{mark}")
    print(f"  {name:<44s}" + " ".join(cells), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", nargs="+", default=["symmetric"],
                        choices=["symmetric", "latent"])
    parser.add_argument("--seed", type=int, default=2027)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--tests", nargs="+", choices=list(TESTS),
                        default=["KSD", "MaxSKSD", "MMD"])
    parser.add_argument("--n-jobs", type=int, default=-1)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # heavy-tail and small-sample warnings, expected
    t0 = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    print(f"seed {args.seed}, n = {args.n}, {args.trials} trials, alpha = 0.05; "
          "rejection rates (< above alpha + 3 sd at a tie)")
    print(f"  {'':<44s}" + " ".join(f"{t:>{max(len(t), 7)}s} " for t in args.tests))
    if "symmetric" in args.part:
        for name, R, centre in random_models(rng):
            for case, P, Q in cases(R, centre, rng):
                row(f"{name}, {case}", R, P, Q, args)
    if "latent" in args.part:
        for name, R, P, Q in latent_cases(np.random.default_rng([args.seed, 1])):
            row(name, R, P, Q, args)
    print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
