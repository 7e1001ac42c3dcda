"""Aggregated KSD test: cost against the single-bandwidth test and a NumPy KSDAgg.

Timings in the same run, medians over ``--repeat`` runs:

* ``KSDTest(bandwidth="median")``: the single-bandwidth test, 1000 draws;
* ``KSDTest(bandwidth="aggregate")``: 10 bandwidths, one shared bootstrap of 1000
  draws, min-p level correction on the same draws;
* ``KSDTest(bandwidth="aggregate", whiten="aggregate")``: the same 10 bandwidths in
  the data's coordinates and 10 in whitened ones, one bootstrap of 1000 draws;
* a plain NumPy implementation of KSDAgg's procedure (Schrab, Guedj & Gretton 2022,
  wild bootstrap, IMQ kernel): per bandwidth the Stein matrix by elementwise NumPy
  and all ``B1 + B2 + 1`` quadratic forms as one matrix product, then the level
  correction by 50 bisection steps on the second set of draws; 10 bandwidths,
  2000 + 2000 draws. It is written here from the paper's description;
* the floor: the aggregated test's off-diagonal forms alone, ``10 x 1000 x N(N-1)/2``
  multiply-adds, at the rate this machine's BLAS reaches on one single-precision
  product of the stacked shape. A test that computes each bandwidth's 1000 quadratic
  forms by dense products cannot run faster than that; the single test's own forms
  are a tenth of it. The aggregated test also does everything else the single test
  does (scores, Gram products, weights), so the floor plus the single test's time
  less its forms bounds the aggregated test's time from below.

Run: ``python benchmarks/bench_aggregate.py [--n 1000] [--d 100] [--repeat 5]`` (and
``--n 5000 --d 1``).
"""

import argparse

import numba
import numpy as np

from _util import median_time
from skstein import KSDTest
from skstein._bootstrap import FORM_DTYPE, STACKED_FORM_BLOCK
from skstein.distributions import Gaussian


def numpy_ksdagg(X, S, bandwidths, alpha=0.05, B1=2000, B2=2000, B3=50, seed=0):
    """KSDAgg decision with the IMQ kernel (beta = -1/2), uniform weights."""
    n, d = X.shape
    rng = np.random.default_rng(seed)
    R = rng.choice([-1.0, 1.0], size=(n, B1 + B2 + 1))
    R[:, B1] = 1.0  # the statistic itself
    sq = np.sum(X * X, axis=1)
    D2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * X @ X.T, 0.0)
    XS = np.sum(X * S, axis=1)
    cross = XS[:, None] - X @ S.T
    cross = cross + cross.T  # (x_i - x_j) . (s_i - s_j)
    SS = S @ S.T
    L = len(bandwidths)
    M = np.empty((L, B1 + B2 + 1))
    for k, h in enumerate(bandwidths):
        g = 1.0 / h**2
        base = 1.0 + g * D2
        K = base**-0.5
        K1 = -0.5 * g * base**-1.5  # d k / d t, t the squared distance
        K2 = 0.75 * g * g * base**-2.5
        H = K * SS - 2.0 * K1 * cross - 2.0 * d * K1 - 4.0 * D2 * K2
        np.fill_diagonal(H, 0.0)
        M[k] = np.sum(R * (H @ R), axis=0) / (n * (n - 1))
    stats = M[:, B1]
    M1 = np.sort(M[:, :B1 + 1], axis=1)
    M2 = M[:, B1 + 1:]
    w = np.full(L, 1.0 / L)
    lo, hi = 0.0, 1.0 / w.max()
    for _ in range(B3):
        u = 0.5 * (lo + hi)
        idx = np.ceil((B1 + 1) * (1 - u * w)).astype(int) - 1
        q = M1[np.arange(L), idx]
        if np.mean(np.max(M2 - q[:, None], axis=0) > 0) <= alpha:
            lo = u
        else:
            hi = u
    idx = np.ceil((B1 + 1) * (1 - lo * w)).astype(int) - 1
    q = M1[np.arange(L), idx]
    return bool(np.any(stats > q)), stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-numpy", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    X = rng.laplace(size=(args.n, args.d)) / np.sqrt(2)
    model = Gaussian(np.zeros(args.d))
    S = model.grad_logpdf(X)
    single = KSDTest(model, kernel="imq", bandwidth="median", bootstrap="rademacher",
                     n_bootstrap=1000, random_state=0).fit(X)
    agg = KSDTest(model, kernel="imq", bandwidth="aggregate", bootstrap="rademacher",
                  n_bootstrap=1000, random_state=0).fit(X)
    agg2000 = KSDTest(model, kernel="imq", bandwidth="aggregate", bootstrap="rademacher",
                      n_bootstrap=2000, random_state=0).fit(X)
    t_single, _ = median_time(lambda: single.test(X), args.repeat, warmup=1)
    t_agg, _ = median_time(lambda: agg.test(X), args.repeat, warmup=1)
    t_agg2000, _ = median_time(lambda: agg2000.test(X), args.repeat, warmup=1)
    # unfitted: the whitening (Ledoit-Wolf covariance) is part of the timed call
    both = KSDTest(model, kernel="imq", bandwidth="aggregate", bootstrap="rademacher",
                   n_bootstrap=1000, random_state=0, whiten="aggregate")
    t_both, _ = median_time(lambda: both.test(X), args.repeat, warmup=1)
    print(f"Aggregated KSD test  N={args.n} D={args.d}  numba threads={numba.get_num_threads()}")
    print(f"  single bandwidth, 1000 draws        median {t_single * 1e3:9.1f} ms")
    print(f"  aggregated, 10 bandwidths, 1000 draws median {t_agg * 1e3:9.1f} ms"
          f"   {t_agg / t_single:5.2f}x the single test")
    print(f"  aggregated, 10 bandwidths, 2000 draws median {t_agg2000 * 1e3:9.1f} ms"
          f"   {t_agg2000 / t_single:5.2f}x the single test")
    print(f"  both geometries, 2 x 10 bandwidths   median {t_both * 1e3:9.1f} ms"
          f"   {t_both / t_single:5.2f}x the single test, {t_both / t_agg:4.2f}x aggregated")
    # the floor: L kernels x 1000 draws x N(N-1)/2 multiply-adds of the off-diagonal
    # forms, at the rate of one single-precision BLAS product of the stacked shape
    L, n, draws = len(agg.bandwidth_), args.n, 1000
    A = np.ones((L * STACKED_FORM_BLOCK, n), dtype=FORM_DTYPE)
    W = np.ones((n, draws), dtype=FORM_DTYPE)
    t_mm, _ = median_time(lambda: A @ W, args.repeat, warmup=1)
    rate = 2.0 * A.shape[0] * n * draws / t_mm
    t_floor = 2.0 * L * draws * n * (n - 1) / 2 / rate
    print(f"  floor: the aggregated forms alone at the BLAS rate ({rate / 1e9:.0f} GFlop/s) "
          f"{t_floor * 1e3:9.1f} ms   {t_floor / t_single:5.2f}x the single test")
    # the aggregated test also does all the work of the single test except its forms
    bound = t_floor + t_single - t_floor / L
    print(f"  floor plus the single test's other work                 "
          f"{bound * 1e3:9.1f} ms   {bound / t_single:5.2f}x the single test")
    if not args.skip_numpy:
        ours = agg.test(X)
        h = ours.bandwidths  # the collection the test drew (subsampled beyond 2000 points)
        # same statistics as ours at the same bandwidths
        _, stats = numpy_ksdagg(X, S, h, B1=10, B2=10, B3=5)
        np.testing.assert_allclose(stats, ours.statistics, rtol=1e-8)
        t_np, _ = median_time(lambda: numpy_ksdagg(X, S, h), max(1, args.repeat // 2),
                              warmup=0)
        print(f"  NumPy KSDAgg, 10 bandwidths, 2000 + 2000 draws "
              f"median {t_np * 1e3:9.1f} ms   ours (1000 draws) {t_np / t_agg:5.1f}x faster,"
              f" ours (2000 draws) {t_np / t_agg2000:5.1f}x faster")


if __name__ == "__main__":
    main()
