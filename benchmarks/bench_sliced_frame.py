"""``SlicedSVGD`` along score slices: the step rule along the slices against along the axes.

Along slices ``R`` other than the axes, the sliced update is defined in the
coordinates ``R x``; the step rule (AdaGrad by default, per-coordinate scales) now runs
in them too. The comparison, in the same run, is against the step rule in the
coordinates of ``X`` (the rule before), which a subclass restores, and against the
step along the slices relative to the particles' spread there (``step_scale="spread"``,
row ``spread``).

Targets (all met with ``slices="auto"``, which takes the score frame on each):

* ``rotated``: N(1, Q diag(v) Q^T), a random rotation Q (seed ``--seed``) and
  variances v spaced geometrically over condition numbers 1e2 and 1e4;
* ``ar1``: N(0, Sigma), Sigma_ij = 0.9^|i-j|;
* ``mixture``: two Gaussian components at -/+ 1.5 u (u a random unit vector), each
  with a random covariance of condition number 1e2.

Particles start from N(0, I) (``random_state=0``) and move ``--iters`` steps.
Printed per run: the error of the particle mean in the target's standard
deviations (the Mahalanobis norm of the difference; for the mixture, of its
covariance), the relative Frobenius error of the particle covariance, the range of
the particle variances along the target covariance's principal axes relative to
the target's, the time per iteration, and which slices ``"auto"`` took.

Run: ``python benchmarks/bench_sliced_frame.py [--d 10 30] [--n 200 100] [--iters 1000]``
(``--n`` pairs with ``--d``.)
"""

import argparse
import time

import numpy as np

from skstein import SlicedSVGD
from skstein.distributions import Gaussian, GaussianMixture


class _AxisStep(SlicedSVGD):
    """The step rule in the coordinates of X (before)."""

    def _step_frame(self, state):
        return None


def _random_cov(rng, d, condition):
    Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    v = np.logspace(-0.5, 0.5, d) ** np.log10(condition)
    return Q @ np.diag(v) @ Q.T


def _targets(d, seed):
    rng = np.random.default_rng(seed)
    out = []
    for condition in (1e2, 1e4):
        cov = _random_cov(rng, d, condition)
        out.append((f"rotated {condition:.0e}", Gaussian(np.ones(d), cov), np.ones(d), cov))
    idx = np.arange(d)
    cov = 0.9 ** np.abs(idx[:, None] - idx[None, :])
    out.append(("ar1 0.9", Gaussian(np.zeros(d), cov), np.zeros(d), cov))
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    c = _random_cov(rng, d, 1e2)
    means = np.stack([-1.5 * u, 1.5 * u])
    mix = GaussianMixture([0.5, 0.5], means, np.stack([c, c]))
    out.append(("mixture", mix, np.zeros(d), c + 1.5**2 * np.outer(u, u)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, nargs="+", default=[10, 30])
    ap.add_argument("--n", type=int, nargs="+", default=[200, 100])
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    print(f"{'D':>3} {'N':>4} {'target':>14} {'step along':>10} {'mean error':>10} "
          f"{'cov error':>9} {'axis variance ratios':>20} {'ms/iter':>8} {'slices_':>7}")
    for d, n in zip(args.d, args.n):
        for name, target, mu, cov in _targets(d, args.seed):
            W = np.linalg.inv(np.linalg.cholesky(cov))
            w, V = np.linalg.eigh(cov)
            for cls, label, kw in ((_AxisStep, "axes", {}), (SlicedSVGD, "slices", {}),
                                   (SlicedSVGD, "spread", {"step_scale": "spread"})):
                est = cls(target, n_particles=n, n_iter=args.iters, random_state=0, **kw)
                t = time.perf_counter()
                X = est.fit().particles_
                t = time.perf_counter() - t
                err = np.linalg.norm(W @ (X.mean(axis=0) - mu))
                C = np.cov(X.T)
                cerr = np.linalg.norm(C - cov) / np.linalg.norm(cov)
                ratios = np.einsum("ij,jk,ki->i", V.T, C, V) / w
                print(f"{d:>3} {n:>4} {name:>14} {label:>10} {err:>10.3f} {cerr:>9.3f} "
                      f"{ratios.min():>9.2f} - {ratios.max():<8.2f} "
                      f"{1e3 * t / args.iters:>8.3f} "
                      f"{'axes' if np.array_equal(est.slices_, np.eye(d)) else 'score':>7}",
                      flush=True)


if __name__ == "__main__":
    main()
