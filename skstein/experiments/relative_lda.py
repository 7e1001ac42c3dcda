r"""``relative-lda``: relative tests of LDA topic models (Kanagawa et al., Experiment 2).

Documents of ``D = 50`` words over a vocabulary of ``V`` words come from R, an LDA with
3 topics drawn once from Dir(0.1 * 1_V) (NumPy's legacy generator, seed 149, as in the
published experiment's ``make_lda_prob``, its ``temp = 0.1``) and document-topic prior
alpha = 0.1. The candidate models P and Q share R's topics and differ in the prior:

* ``h0``: V = 100, P = Q = LDA(alpha + 1), n up to 300 (the published H0 case, a tie:
  the rate may be at most alpha; the published case draws these topics from Dir(1_V));
* ``h1-v100``, ``h1-v1000``: P = LDA(alpha + 1), Q = LDA(alpha + 0.5); Q is closer to R
  (the rate is the power);
* ``fm-h1``, ``fm-h0``: the failure mode of the difference operator. V = 1000 with the
  vocabulary reordered so that rare words sit next to frequent ones (see
  :func:`failure_order`): each of the 100 most frequent words is moved to sit right
  after a rare word, the words ranked 601 to 700 by their probability under R. The
  models are those of ``h1-v1000`` (``fm-h1``) and the same pair swapped (``fm-h0``:
  P = LDA(alpha + 0.5) is the better model, H0 holds in its interior, the rate should
  be near 0). Relabelling words changes nothing for the bag-of-words kernels and the MMD,
  only the neighbours that the discrete Stein operators compare.

Methods, all on the same data set per trial:

* ``LKSD-diff``: :class:`~skstein.RelativeKSDTest` with the difference operator, IMQ
  kernel on bag-of-words counts with bandwidth 1 (the published ``KIMQBoW(s2=1)``),
  ratios from one collapsed-Gibbs chain per document: 80 burn-in sweeps and 20 sweeps
  averaged, the published 4000 burn-in and 1000 recorded single-word updates (its
  ``burnin_sizes`` and ``n_mcsamples``) counted in sweeps of 50 words;
* ``LKSD-ZB``: the Zanella-Barker operator, one matching chain per document, word and
  shift: 10 burn-in and 20 averaged sweeps (500 and 1000 single-word updates, the
  settings of the published code's Barker-weight test ``met_dis_imqbow_mflksd``);
* ``MMD``: :class:`~skstein.RelativeMMDTest` on bag-of-words count vectors (Gaussian
  kernel, median bandwidth of the data), ``n`` documents drawn from each model. The
  published baseline uses the IMQ bag-of-words kernel and ``n + 5000`` model samples;
  the Gaussian kernel is the one our relative MMD test has, and ``n`` samples keep its
  ``(n + 5000)^2`` Gram matrices out of a laptop-sized run.
* ``LKSD-diff-states``: ``LKSD-diff`` with the ratios averaged at the sampled topics
  (``LDA(ratio_estimate="states")``) instead of their Rao-Blackwellised conditional
  expectations: the same chains and sweeps, the estimator of the published experiment.

The published experiment averages every one of its 1000 recorded states (each differs
from the last in one word); the chains here average once per word and sweep, the same
number of word updates.

Measured (100 trials per cell with the seeds of ``run(random_state=0)``; rejection
rates at alpha = 0.05 of LKSD-diff / LKSD-ZB / MMD / LKSD-diff-states):

* ``h0``: 0.02 / 0.00 / 0.00 / 0.03 at n = 100, 0.01 / 0.01 / 0.03 / 0.02 at 200,
  0.00 / 0.01 / 0.06 / 0.00 at 300;
* ``h1-v100``: 0.25 / 0.66 / 0.44 / 0.04 at n = 100, 0.44 / 1.00 / 0.76 / 0.06 at 200,
  0.43 / 1.00 / 0.97 / 0.03 at 300, 0.54 / 1.00 / 1.00 / 0.07 at 400, 0.63 / 1.00 /
  0.99 / 0.09 at 500;
* ``h1-v1000``: 0.14 / 0.01 / 0.05 / 0.05 at n = 100, 0.38 / 0.15 / 0.10 / 0.01 at 200,
  0.54 / 0.26 / 0.21 / 0.07 at 300, 0.60 / 0.50 / 0.44 / 0.03 at 400, 0.58 / 0.71 /
  0.56 / 0.06 at 500;
* ``fm-h1``: 0.05 / 0.02 / 0.01 / 0.05 at n = 100, 0.16 / 0.07 / 0.08 / 0.04 at 200,
  0.13 / 0.12 / 0.29 / 0.02 at 300, 0.21 / 0.32 / 0.45 / 0.04 at 400, 0.33 / 0.43 /
  0.61 / 0.08 at 500;
* ``fm-h0``: at most 0.02 for every method at every n.

The failure mode is in the estimate of the ratio. Under topics drawn from Dir(0.1 *
1_V) most words are rare under some topic, so a rare word right before a more frequent
one is common in any vocabulary order: on development data sets of 300 documents the
largest ratio :math:`p(x + e_j)/p(x)` was about 900 and 2400 in the given order (360
and 560 reordered), and three documents held 47 to 90% of the sum of the squared
scores. At a sampled topic the ratio :math:`\beta_{z_j, x_j + 1} / \beta_{z_j, x_j}` is
heavy-tailed (rare visits to a topic under which ``x_j`` is rare give huge values),
and a mean of 20 sweeps of it leaves the decision to the chains: on six development
data sets of ``fm-h1`` at n = 300, the standard deviation of the z-score over five
chain seeds had median 0.60 for ``LKSD-diff-states`` against 0.21 for ``LKSD-diff``
and 0.22 for ``LKSD-ZB``. The published estimator's test then stays at 0.01 to 0.09
in every H1 cell, whatever n, where the Zanella-Barker test reaches 1.00 (V = 100) and
0.71 (V = 1000) at n = 500. The Rao-Blackwellised ratios give the difference operator
power that grows with n; with V = 100 it stays well below Zanella-Barker's, with V =
1000 it leads up to n = 400 and Zanella-Barker overtakes it at 500. The reordering of
``fm-h1`` costs both operators power (Zanella-Barker 0.43 instead of 0.71 at n = 500:
a frequent word's neighbour is then rare, and its Barker weight near 0 carries little
information) and neither its level. No method makes wrong decisions at ``fm-h0``.
"""

import numpy as np

from .._random import spawn_seeds
from ..discrete import bag_of_words
from ..distributions import LDA
from ..relative import RelativeKSDTest, RelativeMMDTest
from ._output import rate_panels_by_case, run_config
from ._summary import relative_outcome, zscore_settings_rows

__all__ = ["CASES", "METHODS", "problem", "failure_order", "make_test", "run_trial", "run",
           "plot"]

CASES = ("h0", "h1-v100", "h1-v1000", "fm-h1", "fm-h0")
METHODS = ("LKSD-diff", "LKSD-ZB", "MMD", "LKSD-diff-states")
#: per case: (vocabulary size, failure-mode order, prior increment of P, of Q)
SETTINGS = {
    "h0": (100, False, 1.0, 1.0),
    "h1-v100": (100, False, 1.0, 0.5),
    "h1-v1000": (1000, False, 1.0, 0.5),
    "fm-h1": (1000, True, 1.0, 0.5),
    "fm-h0": (1000, True, 0.5, 1.0),
}
TITLES = {
    "h0": "H0 tie: P = Q = LDA(alpha+1), V=100",
    "h1-v100": "H1: P alpha+1, Q alpha+0.5, V=100",
    "h1-v1000": "H1: P alpha+1, Q alpha+0.5, V=1000",
    "fm-h1": "H1, rare words before frequent ones",
    "fm-h0": "H0 (P better), rare before frequent",
}
N_WORDS, N_TOPICS, ALPHA, TOPIC_CONCENTRATION, SEED = 50, 3, 0.1, 0.1, 149
#: sweeps (burn-in, averaged) of the two LKSD methods
CHAINS = {"LKSD-diff": (80, 20), "LKSD-ZB": (10, 20), "LKSD-diff-states": (80, 20)}
#: failure-mode order: this many most frequent words, each placed after a word of rank
#: RARE_FROM + i (0-based ranks by probability under R)
N_MOVED, RARE_FROM = 100, 600
FULL = dict(ns=(100, 200, 300, 400, 500), n_trials=100, chain_scale=1.0)
#: sample sizes of the published H0 case
H0_NS = (100, 200, 300)
QUICK = dict(ns=(60, 120), n_trials=3, chain_scale=0.25)


def failure_order(beta, n_moved=N_MOVED, rare_from=RARE_FROM):
    """A vocabulary order with rare words right before frequent ones.

    Words are ranked by their probability under R (the mean of the topics, since the
    symmetric prior gives each topic the same expected share). Starting from the given
    order, the ``n_moved`` most frequent words are taken out and word ``i`` of them is
    put back right after the word of rank ``rare_from + i``. Returns ``order`` with
    ``order[new_id] = old_id``.
    """
    V = beta.shape[1]
    rank = np.argsort(-beta.mean(axis=0), kind="stable")
    moved = set(rank[:n_moved].tolist())
    order = [w for w in range(V) if w not in moved]
    for i in range(n_moved):
        order.insert(order.index(rank[rare_from + i]) + 1, int(rank[i]))
    return np.array(order)


def problem(case):
    """(P, Q, R) of a case: three LDA models with R's topics and different priors."""
    if case not in SETTINGS:
        raise ValueError(f"case must be one of {CASES}, got {case!r}.")
    V, reorder, dp, dq = SETTINGS[case]
    # the legacy generator seeded with 149 gives the topics of the published experiment
    beta = np.random.RandomState(SEED).dirichlet(np.full(V, TOPIC_CONCENTRATION),
                                                 size=N_TOPICS)
    if reorder:
        beta = beta[:, failure_order(beta)]
    return (LDA(beta, ALPHA + dp, n_words=N_WORDS), LDA(beta, ALPHA + dq, n_words=N_WORDS),
            LDA(beta, ALPHA, n_words=N_WORDS))


def make_test(method, P, Q, chain_scale=1.0):
    """The test of a method for models P and Q (``chain_scale`` shortens the chains)."""
    if method in CHAINS:
        burn, draws = (max(1, int(round(c * chain_scale))) for c in CHAINS[method])
        operator = "zanella-barker" if method == "LKSD-ZB" else "difference"
        if method == "LKSD-diff-states":
            P, Q = (LDA(M.topic_word, M.doc_topic_prior, n_words=M.dim,
                        ratio_estimate="states") for M in (P, Q))
        return RelativeKSDTest(P, Q, operator=operator, kernel="imq-bow", bandwidth=1.0,
                               n_posterior_samples=draws, burn_in=burn)
    if method == "MMD":
        return RelativeMMDTest(P, Q)
    raise ValueError(f"method must be one of {METHODS}, got {method!r}.")


def _mmd_on_counts(test, X, seed):
    """The relative MMD on bag-of-words counts of X and of samples of P and Q."""
    P, Q = test.model_p, test.model_q
    sp, sq, sx = spawn_seeds(np.random.SeedSequence(seed), 3)
    n = X.shape[0]
    Yp = bag_of_words(P.rvs(n, random_state=sp), P.n_values)
    Yq = bag_of_words(Q.rvs(n, random_state=sq), Q.n_values)
    mmd = RelativeMMDTest(Yp, Yq, random_state=sx)
    return mmd.test(bag_of_words(X, P.n_values))


def run_trial(seed, case, n, methods, chain_scale=1.0):
    """One data set of ``n`` documents from R, every method on it; returns a list of dicts.

    Each method's test seed is fixed by its place in :data:`METHODS`, so a subset of
    the methods gives the rows of the full set.
    """
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"methods: unknown {unknown}; choose from {METHODS}.")
    seeds = spawn_seeds(np.random.SeedSequence(seed), 1 + len(METHODS))
    P, Q, R = problem(case)
    X = R.rvs(n, random_state=seeds[0])
    out = []
    for method in methods:
        test_seed = seeds[1 + METHODS.index(method)]
        test = make_test(method, P, Q, chain_scale)
        if method == "MMD":
            res = _mmd_on_counts(test, X, test_seed)
        else:
            res = test.set_params(random_state=test_seed).test(X)
        out.append(relative_outcome(method, res))
    return out


def run(*, quick=False, n_trials=None, n_jobs=None, random_state=0, verbose="auto", cases=CASES,
        methods=METHODS, ns=None):
    """Run the experiment; one row per (case, n, method).

    ``cases``, ``methods`` and ``ns`` select part of it; the trials of a setting
    ``(case, n)`` draw from a stream of their own, so a part gives the rows of the full
    run.
    """
    cfg = run_config(QUICK, FULL, quick, n_trials, ns=ns)
    settings = [(case, n) for case in cases
                for n in (H0_NS if case == "h0" and not quick and ns is None else cfg["ns"])]
    base = np.random.SeedSequence(random_state)
    # each (case, n) has its own stream, the same whichever settings are run
    roots = [np.random.SeedSequence(base.entropy, spawn_key=(CASES.index(case), n))
             for case, n in settings]
    return zscore_settings_rows(run_trial, settings, roots, cfg["n_trials"], methods,
                                (cfg["chain_scale"],), n_jobs=n_jobs, verbose=verbose)


def plot(rows, path):
    """Rejection rate versus n, one panel per case."""
    return rate_panels_by_case(rows, path, CASES, TITLES, width=3.8, xlabel="n (documents)",
                               null_case=lambda case: "h0" in case, markers="osD^v")
