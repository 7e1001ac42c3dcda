"""KSDTest.test speed: N = 1000, D = 100, 1000 multinomial bootstrap draws.

Compares skstein with a straightforward vectorised NumPy implementation measured in
the same run (distances and score products as matrix products, the Stein matrix by
elementwise NumPy, all bootstrap draws as one matrix product). The baseline is timed
twice: drawing the multinomial weights with ``Generator.multinomial`` (the obvious
way) and with the histogram-of-indices draw skstein uses, so the comparison of the
Stein pass and the quadratic forms is like for like.

Run: ``python benchmarks/bench_ksd_test.py [--n 1000] [--d 100] [--repeat 15]``
"""

import argparse

import numba
import numpy as np

from _util import median_time
from skstein import KSDTest
from skstein._bootstrap import bootstrap_weights
from skstein.distributions import Gaussian


def numpy_ksd_test(X, S, h, n_boot, rng, fast_weights):
    n, d = X.shape
    XX = X @ X.T
    sq = np.diag(XX)
    D2 = np.maximum(sq[:, None] + sq[None, :] - 2 * XX, 0.0)
    K = np.exp(-D2 / (2 * h * h))
    SX = S @ X.T
    sx = np.diag(SX)
    cross = sx[:, None] - SX - SX.T + sx[None, :]
    H = K * (S @ S.T + cross / h**2 + d / h**2 - D2 / h**4)
    np.fill_diagonal(H, 0.0)
    stat = H.sum() / (n * (n - 1))
    if fast_weights:
        W = bootstrap_weights("multinomial", n, n_boot, rng)
    else:
        W = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot) / n - 1.0 / n
    null = np.einsum("ij,ij->i", W @ H, W)
    return stat, (1 + np.sum(null >= stat)) / (1 + n_boot)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((args.n, args.d))
    model = Gaussian(np.zeros(args.d))
    test = KSDTest(model, bandwidth="median", n_bootstrap=1000, random_state=0).fit(X)
    h = test.bandwidth_
    S = model.grad_logpdf(X)
    ours, _ = median_time(lambda: test.test(X), args.repeat)
    base_slow, _ = median_time(lambda: numpy_ksd_test(X, S, h, 1000, rng, False), args.repeat)
    base_fast, _ = median_time(lambda: numpy_ksd_test(X, S, h, 1000, rng, True), args.repeat)
    # same statistic as the baseline
    stat_np, _ = numpy_ksd_test(X, S, h, 10, rng, True)
    assert np.isclose(test.test(X).statistic, stat_np, rtol=1e-9, atol=1e-12)
    print(f"KSDTest.test  N={args.n} D={args.d} 1000 draws  numba threads={numba.get_num_threads()}")
    print(f"  skstein                                   median {ours * 1e3:8.1f} ms")
    print(f"  NumPy baseline (Generator.multinomial)    median {base_slow * 1e3:8.1f} ms"
          f"   ratio {base_slow / ours:5.2f}x")
    print(f"  NumPy baseline (same weight draw)         median {base_fast * 1e3:8.1f} ms"
          f"   ratio {base_fast / ours:5.2f}x")


if __name__ == "__main__":
    main()
