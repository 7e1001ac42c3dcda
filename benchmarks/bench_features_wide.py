"""Finite-feature tests with fewer rows than features: the null's spectrum from the rows.

``FSSDTest`` and ``RFSDTest`` (Gaussian null, ``r = 2``) draw their null from the
eigenvalues of the ``p x p`` covariance of the feature rows, ``p = J D``. With fewer
rows than features (``n < p``: high dimension, small samples) that covariance has rank
below ``n`` and its non-zero eigenvalues are those of the ``n x n`` Gram matrix of the
centred rows, which the tests now decompose instead
(:meth:`skstein.features.FeatureMoments.covariance_eigenvalues`).

Printed per case: the median time of ``test(X)`` (FSSD-rand, J = 5; RFSD with
``rff-gauss`` features, J = 10, ``null="gaussian"``), and, in the same run, the median
time of the null's spectrum from the ``p x p`` covariance (the route taken before,
:func:`skstein.features.chi2_mixture_null` of ``moments.covariance()``) against the
Gram route, with the largest difference between the two nulls' draws relative to their
largest draw. A second table does the same for the Gaussian null of L1 IMQ features
(``r = 1``, J = 10: :func:`skstein.features.gaussian_functional_null` of the covariance
against :func:`skstein.features.moments_functional_null`), the null ``RFSDTest`` takes
for a model given as a score only, and the median time of that test.

Run: ``python benchmarks/bench_features_wide.py [--repeat 3]``
"""

import argparse

import numpy as np

from _util import median_time
from skstein import FSSDTest, RFSDTest
from skstein.distributions import Gaussian
from skstein.features import (
    chi2_mixture_draws,
    chi2_mixture_null,
    draw_random_features,
    fssd_moments,
    gaussian_functional_null,
    moments_functional_null,
    rfsd_log_shift,
    rfsd_moments,
)
from skstein.kernels import RBF


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'D':>5} {'n':>4} {'p':>6} {'FSSD test':>10} {'RFSD test':>10} "
          f"{'null p x p':>11} {'null Gram':>10} {'ratio':>7} {'max diff':>9}")
    for d, n in ((300, 50), (1000, 50), (1000, 200)):
        rng = np.random.default_rng(0)
        X = rng.standard_normal((n, d)) + 0.1
        model = Gaussian(np.zeros(d))
        fssd_test = FSSDTest(model, n_locations=5, random_state=0)
        rfsd_test = RFSDTest(model, feature="rff-gauss", null="gaussian", random_state=0)
        t_fssd, _ = median_time(lambda: fssd_test.test(X), repeat=args.repeat, warmup=1)
        t_rfsd, _ = median_time(lambda: rfsd_test.test(X), repeat=args.repeat, warmup=1)
        V = X[:5] + 0.1
        mom = fssd_moments(X, model.grad_logpdf(X), V, RBF(float(np.sqrt(d))))
        p = V.shape[0] * d

        def dense():
            mom.second = None   # formed again from the rows, as the syrk pass did
            return chi2_mixture_null(mom.covariance(), 3000, np.random.default_rng(1))

        def gram():
            return chi2_mixture_draws(mom.covariance_eigenvalues(), 3000,
                                      np.random.default_rng(1))

        t_dense, _ = median_time(dense, repeat=args.repeat, warmup=0)
        t_gram, _ = median_time(gram, repeat=args.repeat, warmup=1)
        a, b = dense(), gram()
        diff = float(np.max(np.abs(a - b)) / np.max(np.abs(a)))
        print(f"{d:>5} {n:>4} {p:>6} {t_fssd:>9.3f}s {t_rfsd:>9.3f}s {t_dense:>10.3f}s "
              f"{t_gram:>9.4f}s {t_dense / t_gram:>6.0f}x {diff:>9.1e}", flush=True)
    print(f"\nL1 IMQ, Gaussian null\n{'D':>5} {'n':>4} {'p':>6} {'test':>9} "
          f"{'null p x p':>11} {'null Gram':>10} {'ratio':>7}")
    for d, n in ((300, 50), (1000, 50)):
        X = np.random.default_rng(0).standard_normal((n, d)) + 0.1

        def score(Y):
            return -Y

        test = RFSDTest(score, random_state=0)
        t_test, _ = median_time(lambda: test.test(X), repeat=args.repeat, warmup=1)
        feats = draw_random_features("l1-imq", X, 10, np.random.default_rng(2))
        shift = rfsd_log_shift(X, feats)
        mom = rfsd_moments(X, -X, feats, shift)

        def dense():
            mom.second = None
            return gaussian_functional_null(mom.covariance(), 1, 10, d, 3000,
                                            np.random.default_rng(1))

        def gram():
            return moments_functional_null(mom, 1, 10, d, 3000, np.random.default_rng(1))

        t_dense, _ = median_time(dense, repeat=args.repeat, warmup=0)
        t_gram, _ = median_time(gram, repeat=args.repeat, warmup=1)
        print(f"{d:>5} {n:>4} {10 * d:>6} {t_test:>8.3f}s {t_dense:>10.3f}s "
              f"{t_gram:>9.4f}s {t_dense / t_gram:>6.0f}x", flush=True)


if __name__ == "__main__":
    main()
