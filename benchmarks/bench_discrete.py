"""Discrete Stein operators: LDA posterior scores and the discrete Stein pass.

1. LDA posterior scores for n = 500 documents of D = 50 words, K = 3 topics, V = 1000,
   200 burn-in sweeps and 1000 sweeps averaged (``LDA.posterior_coefficients``, one
   Numba-parallel chain per document), against a NumPy implementation of the same
   collapsed-Gibbs sweep vectorised over documents (the way the reference code lkgof
   writes it), fed the same uniform draws; both give the same numbers (checked). The
   Zanella-Barker form runs one chain per document, word and shift (2 D = 100 chains per
   document); its NumPy baseline runs 2 of those 100 (word, shift) chains, and the
   comparison is per chain.
2. The discrete Stein pass at n = 1000, D = 50, L = 1000 (``discrete_stein_sums``) for
   both operators and both embeddings, the statistic alone (row blocks) and with the
   Stein matrix, with the peak of traced NumPy allocations (an n x n x D float64
   temporary would be 381 MiB); against a NumPy pass that loops over rows with
   (n, D) temporaries (one-hot kernels).
3. The default aggregated ``KSDTest`` of a ``Categorical`` model (10 one-hot RBF
   bandwidths, 1000 bootstrap draws) at n = 1000: its kernels' passes shared in one
   pass over the pairs (``discrete_stein_sums_many``), against one pass per kernel
   (the path the bag-of-words collections take), in the same run, with the largest
   relative difference of the statistics and whether the p-values agree.

Run: ``python benchmarks/bench_discrete.py [--docs 500] [--draws 1000] [--repeat 3]
[--only pass|lda|aggregate]``
"""

import argparse
import time
import tracemalloc

import numba
import numpy as np

from _util import median_time
from skstein.discrete import DiscreteKernel, discrete_stein_sums, operator_coefficients
from skstein.distributions import LDA, Categorical


# --- 1. LDA ----------------------------------------------------------------------


def numpy_lda_chains(X, beta, alpha, U, n_burn, site=-1, shift=0):
    """The collapsed-Gibbs sweep of skstein._numba.lda, vectorised over documents.

    ``U`` (n, 1 + sweeps, D) float32: row 0 initialises, row 1 + t drives sweep t.
    Returns the mean Rao-Blackwellised ratios (n, D) of the plain chain (``site < 0``) or
    the mean Barker weight (n,) of word ``site`` under the matching chain.
    """
    n, D = X.shape
    K, V = beta.shape
    betaT = beta.T
    rows = np.arange(n)
    U = U.astype(np.float64)
    Z = np.minimum((U[:, 0, :] * K).astype(np.int64), K - 1)
    cnt = np.zeros((n, K))
    for j in range(D):
        np.add.at(cnt, (rows, Z[:, j]), 1.0)
    acc = np.zeros((n, D))
    sweeps = U.shape[1] - 1
    for sw in range(sweeps):
        keep = sw >= n_burn
        for j in range(D):
            w = X[:, j]
            cnt[rows, Z[:, j]] -= 1.0
            a = cnt + alpha
            if j == site:
                w2 = (w + shift) % V
                b2 = a * betaT[w2]
                p = a * betaT[w] + b2
                if keep:
                    acc[:, j] += b2.sum(axis=1) / p.sum(axis=1)
            else:
                p = a * betaT[w]
                if keep and site < 0:
                    acc[:, j] += (a * betaT[(w + 1) % V]).sum(axis=1) / p.sum(axis=1)
            c = np.cumsum(p, axis=1)
            u = U[:, 1 + sw, j] * c[:, -1]
            Z[:, j] = np.minimum((u[:, None] >= c).sum(axis=1), K - 1)
            cnt[rows, Z[:, j]] += 1.0
    acc /= sweeps - n_burn
    return acc if site < 0 else acc[:, site]


def bench_lda(n, draws, burn_in, repeat):
    V, D, K = 1000, 50, 3
    beta = np.random.RandomState(149).dirichlet(np.full(V, 0.1), size=K)
    lda = LDA(beta, 0.1, n_words=D)
    X = lda.rvs(n, random_state=0)
    rows = 1 + burn_in + draws
    print(f"LDA posterior scores: n={n} documents, D={D}, K={K}, V={V}, burn-in {burn_in} "
          f"+ {draws} sweeps; numba threads={numba.get_num_threads()}")

    ours, _ = median_time(lambda: lda.posterior_coefficients(
        X, "difference", n_samples=draws, burn_in=burn_in, random_state=1), repeat, warmup=1)
    R = lda.posterior_coefficients(X, "difference", n_samples=draws, burn_in=burn_in,
                                   random_state=1)[0]
    U = np.random.default_rng(1).random((n, rows, D), dtype=np.float32)
    t0 = time.perf_counter()
    R_np = numpy_lda_chains(X, beta, lda.doc_topic_prior, U, burn_in)
    base = time.perf_counter() - t0
    same = np.allclose(R, R_np, rtol=1e-12)
    print(f"  difference (1 chain per document)  skstein median {ours:7.2f} s   "
          f"NumPy sweep {base:7.2f} s   ratio {base / ours:5.1f}x   same numbers: {same}")

    t0 = time.perf_counter()
    W = lda.posterior_coefficients(X, "zanella-barker", n_samples=draws, burn_in=burn_in,
                                   random_state=2)
    zb = time.perf_counter() - t0
    chains = n * 2 * D
    # the same draws as skstein's tasks (document-major, then word, then shift) for the
    # two chains (word 0, shift +1) and (word 7, shift -1) of every document
    gen = np.random.default_rng(2)
    per = int(max(1, (64 * 2**20) // (4 * rows * D)))
    picks = {(0, 1): 0, (7, -1): 15}
    Ub = {key: np.empty((n, rows, D), dtype=np.float32) for key in picks}
    for a in range(0, chains, per):
        c = min(chains, a + per)
        block = gen.random((c - a, rows, D), dtype=np.float32)
        for key, offset in picks.items():
            idx = np.arange(a, c)
            hit = (idx % (2 * D)) == offset
            Ub[key][idx[hit] // (2 * D)] = block[hit]
    t0 = time.perf_counter()
    ok = True
    for (site, shift), U2 in Ub.items():
        w_np = numpy_lda_chains(X, beta, lda.doc_topic_prior, U2, burn_in, site, shift)
        ok &= np.allclose(W[0 if shift == 1 else 1, :, site], w_np, rtol=1e-12)
    base_zb = (time.perf_counter() - t0) / len(Ub)
    print(f"  Zanella-Barker ({2 * D} chains per document): skstein {zb:7.2f} s for "
          f"{chains} chains ({zb / (2 * D) * 1e3:6.0f} ms per (word, shift) chain set)")
    print(f"    NumPy sweep, one (word, shift) chain set of {n} documents: {base_zb:7.2f} s   "
          f"ratio {base_zb / (zb / (2 * D)):5.1f}x   same numbers: {ok}")


# --- 2. discrete Stein pass ---------------------------------------------------------


def numpy_onehot_pass(X, C, op, h, L):
    """U-statistic of the one-hot (exponentiated Hamming) Stein kernel, row by row."""
    n, D = X.shape
    total = 0.0
    for i in range(n):
        Y = X
        ne = X[i][None, :] != Y
        d = ne.sum(axis=1)
        base = d[:, None] - ne
        k = lambda dist: np.exp(-dist / h**2)  # noqa: E731
        k00 = k(d)[:, None]
        xm, ym = (X[i] - 1) % L, (Y - 1) % L
        if op == "difference":
            s, t = C[0, i][None, :], C[0]
            km0 = k(base + (xm[None, :] != Y))
            k0m = k(base + (X[i][None, :] != ym))
            kmm = k(base + (xm[None, :] != ym))
            H = (s * t * k00 + s * (k00 - k0m) + t * (k00 - km0) + k00 - km0 - k0m + kmm)
        else:
            xp, yp = (X[i] + 1) % L, (Y + 1) % L
            wp, wm = C[0, i][None, :], C[1, i][None, :]
            vp, vm = C[0], C[1]
            H = (wp * (vp * k(base + (xp != yp)) + vm * k(base + (xp != ym)))
                 + wm * (vp * k(base + (xm != yp)) + vm * k(base + (xm != ym)))
                 - (vp + vm) * (wp * k(base + (xp != Y)) + wm * k(base + (xm != Y)))
                 - (wp + wm) * (vp * k(base + (X[i] != yp)) + vm * k(base + (X[i] != ym)))
                 + (wp + wm) * (vp + vm) * k00)
        row = H.sum(axis=1)
        row[i] = 0.0
        total += row.sum()
    return total / (n * (n - 1))


def bench_pass(repeat):
    n, D, L = 1000, 50, 1000
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.full(L, 0.5), size=D)
    model = Categorical(probs)
    X = model.rvs(n, random_state=1)
    nvals = np.full(D, L)
    print(f"Discrete Stein pass: n={n}, D={D}, L={L}; numba threads={numba.get_num_threads()}"
          f" (an n x n x D float64 array: {8 * n * n * D / 2**20:.0f} MiB)")
    for op in ("difference", "zanella-barker"):
        C, _ = operator_coefficients(model, X, op)
        for kname in ("rbf", "imq-bow"):
            kern = DiscreteKernel(kname, 7.0)
            stat, _ = median_time(lambda: discrete_stein_sums(X, C, kern, op, nvals), repeat)
            mat, _ = median_time(lambda: discrete_stein_sums(X, C, kern, op, nvals,
                                                             return_matrix=True), repeat)
            tracemalloc.start()
            value = discrete_stein_sums(X, C, kern, op, nvals).statistic("u")
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            line = (f"  {op:15s} {kname:8s} statistic {stat * 1e3:7.0f} ms "
                    f"(peak traced {peak / 2**20:5.1f} MiB)   with matrix {mat * 1e3:7.0f} ms")
            if kname == "rbf":
                t0 = time.perf_counter()
                ref = numpy_onehot_pass(X, C, op, 7.0, L)
                base = time.perf_counter() - t0
                line += (f"   NumPy rows {base * 1e3:7.0f} ms, ratio {base / stat:5.1f}x, "
                         f"same value: {np.isclose(ref, value, rtol=1e-10)}")
            print(line)


def bench_aggregate(repeat):
    from skstein import KSDTest
    from skstein.gof import _discrete

    n = 1000
    print(f"Aggregated discrete KSDTest (10 bandwidths, 1000 draws): n={n}; numba threads="
          f"{numba.get_num_threads()}; shared pass / one pass per kernel")
    for D, L in ((20, 10), (100, 2), (50, 50)):
        model = Categorical(np.random.default_rng(D + L).dirichlet(np.ones(L), size=D))
        X = model.rvs(n, random_state=1)
        for op in ("zanella-barker", "difference"):
            est = KSDTest(model, operator=op, random_state=0)
            shared, _ = median_time(lambda: est.test(X), repeat)
            res = est.test(X)

            def per_kernel():
                # the same test with the kernels' passes one by one
                with _patched(_discrete, "discrete_stein_sums_many", _one_by_one):
                    return est.test(X)

            single, _ = median_time(per_kernel, repeat)
            ref = per_kernel()
            err = np.max(np.abs(res.statistics / ref.statistics - 1.0))
            print(f"  D={D:3d} L={L:3d} {op:15s} {shared * 1e3:7.0f} ms / {single * 1e3:7.0f} ms"
                  f"  ({single / shared:4.1f}x)  statistics within {err:.1e}, same p-value: "
                  f"{res.pvalue == ref.pvalue}")


def _one_by_one(X, C, kernels, operator, nvals, V, max_memory):
    """``discrete_stein_sums_many``'s results from one pass per kernel, each keeping its
    Stein matrix for the bootstrap forms."""
    from skstein._bootstrap import bootstrap_forms

    sums = [discrete_stein_sums(X, C, k, operator, nvals, return_matrix=True,
                                max_memory=max_memory) for k in kernels]
    return sums, np.column_stack([bootstrap_forms(s.upper, V) for s in sums])


class _patched:
    """Within the block, ``module.name`` is ``value``."""

    def __init__(self, module, name, value):
        self.module, self.name, self.value = module, name, value

    def __enter__(self):
        self.old = getattr(self.module, self.name)
        setattr(self.module, self.name, self.value)

    def __exit__(self, *exc):
        setattr(self.module, self.name, self.old)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=500)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--burn-in", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=("pass", "lda", "aggregate"), default=None)
    args = ap.parse_args()
    if args.only in (None, "pass"):
        bench_pass(args.repeat)
    if args.only in (None, "lda"):
        bench_lda(args.docs, args.draws, args.burn_in, args.repeat)
    if args.only in (None, "aggregate"):
        bench_aggregate(args.repeat)


if __name__ == "__main__":
    main()
