"""Ranking sampler settings: one kernel for all candidates, or one per candidate?

The unadjusted Langevin algorithm on a Gaussian target N(0, Sigma) (AR(1) correlation
``--rho``, ``--d`` dimensions) is a linear recursion, so the law of its chains after
``--steps`` steps from N(3, 0.01 I) is Gaussian with a mean and covariance computed
exactly, and so is the KL divergence of each candidate to the target. Six step sizes
(0.01 to 0.85 of ULA's stability limit 2 lambda_min) are the candidates: small ones
have not forgotten the start, large ones are biased. For each of ``--seeds`` draws of
``--n`` chains per candidate, :func:`skstein.rank_samples` ranks them with the RBF
KSD at the median bandwidth of each candidate (a test per candidate), at the median of
the pooled candidates (one shared test), and with the IMQ kernel at the pooled median.
Printed: the mean Spearman correlation of each ranking with the exact KL (1 is the
same order; its minimum over the seeds), and how often it picks KL's best step.

Run: ``python benchmarks/bench_rank_bandwidth.py [--d 2] [--steps 60] [--n 300]
[--seeds 40] [--rho 0.9]``
"""

import argparse

import numpy as np
from scipy.stats import spearmanr

from skstein import KSDTest, rank_samples
from skstein.distributions import Gaussian

FRACTIONS = (0.01, 0.05, 0.15, 0.35, 0.6, 0.85)


def _exact_law(h, P, steps, d):
    A = np.eye(d) - h * P
    m, C = np.full(d, 3.0), 0.01 * np.eye(d)
    for _ in range(steps):
        m = A @ m
        C = A @ C @ A.T + 2.0 * h * np.eye(d)
    return m, C


def _kl(m, C, P, cov):
    d = m.size
    return 0.5 * (np.trace(P @ C) + m @ P @ m - d + np.linalg.slogdet(cov)[1]
                  - np.linalg.slogdet(C)[1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=2)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--rho", type=float, default=0.9)
    args = ap.parse_args()
    d = args.d
    cov = args.rho ** np.abs(np.subtract.outer(np.arange(d), np.arange(d)))
    P = np.linalg.inv(cov)
    target = Gaussian(np.zeros(d), cov)
    steps = [f * 2.0 * np.linalg.eigvalsh(cov).min() for f in FRACTIONS]
    laws = [_exact_law(h, P, args.steps, d) for h in steps]
    truth = np.array([_kl(m, C, P, cov) for m, C in laws])
    print(f"D = {d}, {args.steps} steps, exact KL per step size: {np.round(truth, 3)}")
    rankings = {
        "RBF, median of each candidate": lambda: {
            k: KSDTest(target, bandwidth="median") for k in range(len(steps))},
        "RBF, median of the pooled": lambda: KSDTest(target, bandwidth="median"),
        "IMQ, median of the pooled": lambda: KSDTest(target, kernel="imq",
                                                     bandwidth="median"),
    }
    rho = {name: [] for name in rankings}
    best = {name: 0 for name in rankings}
    for seed in range(args.seeds):
        rng = np.random.default_rng([4711, seed])
        samples = {k: rng.multivariate_normal(m, C, size=args.n)
                   for k, (m, C) in enumerate(laws)}
        for name, make in rankings.items():
            res = rank_samples(samples, make(), n_bootstrap=2, random_state=seed)
            rho[name].append(spearmanr(res.values, truth).statistic)
            best[name] += int(np.argmin(res.values) == np.argmin(truth))
    for name in rankings:
        print(f"{name:>30}: Spearman with KL {np.mean(rho[name]):.3f} "
              f"(min {np.min(rho[name]):.2f}), picks KL's best {best[name]}/{args.seeds}")


if __name__ == "__main__":
    main()
