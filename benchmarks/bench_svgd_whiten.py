"""``SVGD(whiten=True)`` against the plain kernel on ill-conditioned Gaussian targets.

The targets are N(1, Q diag(v) Q^T) with a random rotation Q (seed 3) and variances
v spaced geometrically over a condition number of 1, 1e2 and 1e4. Particles start
from N(0, I) (``random_state=0``) and move ``--iters`` AdaGrad steps (the defaults).
Printed per run: the error of the particle mean in the target's standard deviations
(the Mahalanobis norm), the range of the particle covariance's eigenvalues relative
to the target's (1 is exact; SVGD's own shortfall at this N and D shows on the
isotropic target), and the median time per iteration (whole runs, over ``--repeat``).

Run: ``python benchmarks/bench_svgd_whiten.py [--d 10 30] [--n 200 100] [--iters 1000]``
(``--n`` pairs with ``--d``.)
"""

import argparse
import time

import numpy as np

from skstein import SVGD
from skstein.distributions import Gaussian


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, nargs="+", default=[10, 30])
    ap.add_argument("--n", type=int, nargs="+", default=[200, 100])
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{'D':>3} {'N':>4} {'condition':>9} {'whiten':>6} {'mean error':>10} "
          f"{'variance ratios':>16} {'ms/iter':>8}")
    for d, n in zip(args.d, args.n):
        Q = np.linalg.qr(np.random.default_rng(3).standard_normal((d, d)))[0]
        for condition in (1.0, 1e2, 1e4):
            v = np.logspace(-0.5, 0.5, d) ** np.log10(condition)
            cov, mu = Q @ np.diag(v) @ Q.T, np.ones(d)
            W = np.linalg.inv(np.linalg.cholesky(cov))
            for whiten in (False, True):
                svgd = SVGD(Gaussian(mu, cov), n_particles=n, n_iter=args.iters,
                            whiten=whiten, random_state=0)
                times = []
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    X = svgd.fit().particles_
                    times.append(time.perf_counter() - t)
                err = np.linalg.norm(W @ (X.mean(axis=0) - mu))
                ratios = np.linalg.eigvalsh(W @ np.cov(X.T) @ W.T)
                print(f"{d:>3} {n:>4} {condition:>9.0e} {str(whiten):>6} {err:>10.3f} "
                      f"{ratios[0]:>7.2f} - {ratios[-1]:<6.2f} "
                      f"{1e3 * np.median(times) / args.iters:>8.3f}", flush=True)


if __name__ == "__main__":
    main()
