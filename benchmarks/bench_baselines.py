"""Linear-time baselines at N = 10^6, D = 10: FSSD (J = 10), linear-time KSD, RFSD.

Times ``test(X)`` of fitted ``FSSDTest`` (FSSD-rand), ``LinearKSDTest`` and ``RFSDTest``
(L2 SechExp) (validation, scores, statistic, null) against straightforward NumPy
implementations of the same scores, statistic and null in the same run, with the same
locations, bandwidth and features:

* FSSD: feature rows by broadcasting over (rows, locations, coordinates) in blocks of
  ``--block`` rows (the whole ``N x J x D`` tensor would take 800 MB), sums and the
  second-moment matrix by matrix products, the same eigenvalue-based null;
* linear-time KSD: the Stein kernel of the paired halves, vectorised over pairs;
* RFSD: the same features as NumPy expressions, in blocks.

Each statistic is checked against its baseline before timing. Memory: each test runs in
a fresh subprocess that reports the growth of its peak resident set size over the state
after imports and data creation (``ru_maxrss``) and the peak of traced NumPy
allocations during the call; the data and scores themselves take ``2 N D`` floats.

Run: ``python benchmarks/bench_baselines.py [--n 1000000] [--d 10] [--repeat 5]``
"""

import argparse
import json
import subprocess
import sys

import numba
import numpy as np
from scipy.stats import norm

from _util import median_time
from skstein import FSSDTest, LinearKSDTest, RFSDTest
from skstein.distributions import Gaussian
from skstein.features import chi2_mixture_null


def numpy_fssd_test(X, model, V, h, n_sim, rng, block):
    S = model.grad_logpdf(X)
    n, d = X.shape
    J = V.shape[0]
    p = J * d
    total = np.zeros(p)
    sq = 0.0
    second = np.zeros((p, p))
    for a in range(0, n, block):
        Xb, Sb = X[a:a + block], S[a:a + block]
        R = Xb[:, None, :] - V[None, :, :]                     # (B, J, d)
        K = np.exp(-np.sum(R * R, axis=2) / (2 * h * h))       # (B, J)
        T = (K[:, :, None] * (Sb[:, None, :] - R / h**2)).reshape(len(Xb), p) / np.sqrt(p)
        total += T.sum(axis=0)
        sq += np.sum(T * T)
        second += T.T @ T
    stat = (total @ total - sq) / (n * (n - 1))
    mu = total / n
    cov = (second - n * np.outer(mu, mu)) / (n - 1)
    null = chi2_mixture_null(cov, n_sim, rng) / n
    return stat, (1 + np.sum(null >= stat)) / (1 + n_sim)


def numpy_linear_ksd_test(X, model, h):
    S = model.grad_logpdf(X)
    m = X.shape[0] // 2
    x, y, sx, sy = X[:m], X[m:2 * m], S[:m], S[m:2 * m]
    r = x - y
    t = np.sum(r * r, axis=1)
    k = np.exp(-t / (2 * h * h))
    d = X.shape[1]
    H = k * (np.sum(sx * sy, axis=1) + np.sum((sx - sy) * r, axis=1) / h**2 + d / h**2
             - t / h**4)
    stat = H.mean()
    return stat, norm.sf(np.sqrt(m) * stat / H.std(ddof=1))


def numpy_sech_rfsd_test(X, model, f, n_sim, rng, block):
    S = model.grad_logpdf(X)
    n, d = X.shape
    J = f.Z.shape[0]
    p = J * d
    shift = -np.inf
    for a in range(0, n, block):  # first pass: the common rescaling
        Xb = X[a:a + block]
        U = Xb - f.center
        L = (f.log_coef[None, :] + f.tilt * np.sum(np.sqrt(1 + U * U), axis=1)[:, None]
             - np.sum(np.log(np.cosh(f.rate * (Xb[:, None, :] - f.Z[None, :, :]))), axis=2))
        shift = max(shift, L.max())
    total = np.zeros(p)
    second = np.zeros((p, p))
    for a in range(0, n, block):
        Xb, Sb = X[a:a + block], S[a:a + block]
        U = Xb - f.center
        D = Xb[:, None, :] - f.Z[None, :, :]
        L = (f.log_coef[None, :] + f.tilt * np.sum(np.sqrt(1 + U * U), axis=1)[:, None]
             - np.sum(np.log(np.cosh(f.rate * D)), axis=2) - shift)
        G = (Sb + f.tilt * U / np.sqrt(1 + U * U))[:, None, :] - f.rate * np.tanh(f.rate * D)
        T = (np.exp(L)[:, :, None] * G).reshape(len(Xb), p)
        total += T.sum(axis=0)
        second += T.T @ T
    mu = total / n
    stat = mu @ mu
    cov = (second - n * np.outer(mu, mu)) / (n - 1)
    null = chi2_mixture_null(cov, n_sim, rng, centred=False) / n
    return stat, (1 + np.sum(null >= stat)) / (1 + n_sim)


CHILD = r"""
import json, resource, sys, time, tracemalloc
import numpy as np
from skstein import FSSDTest, LinearKSDTest, RFSDTest
from skstein.distributions import Gaussian
which, n, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
X = np.random.default_rng(0).standard_normal((n, d))
model = Gaussian(np.zeros(d))
make = {"fssd": lambda: FSSDTest(model, n_locations=10, n_simulate=1000, random_state=0),
        "linear": lambda: LinearKSDTest(model, random_state=0),
        "rfsd": lambda: RFSDTest(model, feature="l2-sechexp", n_simulate=1000,
                                 random_state=0)}[which]
make().test(X[:500])  # load the compiled kernels
test = make().fit(X)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tracemalloc.start()
t0 = time.perf_counter()
res = test.test(X)
elapsed = time.perf_counter() - t0
traced = tracemalloc.get_traced_memory()[1]
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps(dict(seconds=elapsed, rss_growth_mb=(peak - base) / 1024,
                      traced_peak_mb=traced / 2**20)))
"""


def memory(which, n, d):
    out = subprocess.run([sys.executable, "-c", CHILD, which, str(n), str(d)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--block", type=int, default=50_000)
    args = ap.parse_args()
    n, d = args.n, args.d
    X = np.random.default_rng(0).standard_normal((n, d))
    model = Gaussian(np.zeros(d))
    data_mb = 8 * n * d / 2**20
    print(f"N={n} D={d}  numba threads={numba.get_num_threads()}  X: {data_mb:.0f} MB "
          f"(its scores as much again)")

    def report(name, ours, base, mem):
        print(f"{name:<40} median {ours:7.3f} s   NumPy {base:7.3f} s   ratio "
              f"{base / ours:5.2f}x   peak RSS growth {mem['rss_growth_mb']:.0f} MB, "
              f"traced {mem['traced_peak_mb']:.0f} MB")

    # FSSD-rand, J = 10
    fssd = FSSDTest(model, n_locations=10, n_simulate=1000, random_state=0).fit(X)
    V, h = fssd.locations_, fssd.bandwidth_
    stat_np, _ = numpy_fssd_test(X, model, V, h, 10, np.random.default_rng(0), args.block)
    assert np.isclose(fssd.discrepancy(X), stat_np, rtol=1e-8, atol=1e-15)
    ours = median_time(lambda: fssd.test(X), args.repeat, 1)[0]
    base = median_time(lambda: numpy_fssd_test(X, model, V, h, 1000, np.random.default_rng(0),
                                               args.block), args.repeat, 1)[0]
    report("FSSDTest.test (J=10, 1000 null draws)", ours, base, memory("fssd", n, d))

    # linear-time KSD
    lin = LinearKSDTest(model, random_state=0).fit(X)
    h = lin.bandwidth_
    stat_np, _ = numpy_linear_ksd_test(X, model, h)
    assert np.isclose(lin.discrepancy(X), stat_np, rtol=1e-9, atol=1e-15)
    ours = median_time(lambda: lin.test(X), args.repeat, 1)[0]
    base = median_time(lambda: numpy_linear_ksd_test(X, model, h), args.repeat, 1)[0]
    report("LinearKSDTest.test", ours, base, memory("linear", n, d))

    # RFSD, L2 SechExp, J = 10, covariance from the data
    rf = RFSDTest(model, feature="l2-sechexp", n_simulate=1000, random_state=0).fit(X)
    f = rf.features_
    stat_np, _ = numpy_sech_rfsd_test(X, model, f, 10, np.random.default_rng(0), args.block)
    assert np.isclose(rf.discrepancy(X) / np.exp(2 * _shift(X, f)), stat_np, rtol=1e-8)
    ours = median_time(lambda: rf.test(X), args.repeat, 1)[0]
    base = median_time(lambda: numpy_sech_rfsd_test(X, model, f, 1000,
                                                    np.random.default_rng(0), args.block),
                       args.repeat, 1)[0]
    report("RFSDTest.test (l2-sechexp, J=10)", ours, base, memory("rfsd", n, d))


def _shift(X, f):
    from skstein.features import rfsd_log_shift
    return rfsd_log_shift(X, f)


if __name__ == "__main__":
    main()
