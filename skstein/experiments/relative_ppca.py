"""``relative-ppca``: relative tests of two perturbed PPCA models (Kanagawa et al., Experiment 1).

The data come from R = PPCA(A, 1) with x in R^100, z in R^10 and A's entries drawn
once from Uniform(0, 1) (NumPy's legacy generator, seed 13, as in the published
experiment). The candidate models P and Q add ``delta_P`` and
``delta_Q`` to A's (1, 1) entry:

* ``h0``: delta_P = 1, delta_Q = 1 + 1e-5 (the published H0 case). P is better, and
  not only marginally: both D(P, R) - D(Q, R) and its standard deviation scale
  with the 1e-5, so their ratio does not vanish and the studentised statistic
  centres well below 0 (about -2 at n = 300). H0 holds in its interior and the
  rate should be far *below* alpha;
* ``h0-tie``: H0 at its boundary, D(P, R) = D(Q, R) exactly. R's loading matrix
  has its second row set equal to its first, so R is invariant under swapping
  x_1 and x_2; P adds 1 to entry (1, 1) and Q adds 1 to entry (2, 1), so Q is P
  with x_1 and x_2 swapped. Every method here is invariant under that swap, so
  the two discrepancies tie: the rate may be at most alpha. The tests are
  conservative here: at n = 300 the difference of two so similar models is
  dominated by its degenerate (second-order) part, which the variance estimates
  count about twice, so the studentised statistic has a standard deviation of
  about 0.73 instead of 1 (measured, 400 trials);
* ``h1``: delta_P = 2, delta_Q = 1 (Q is better: the rate is the power).

Methods, all with the median-heuristic bandwidth of the data:

* ``MMD``: :class:`~skstein.RelativeMMDTest`, Gaussian kernel, ``n`` samples per model;
* ``KSD``: :class:`~skstein.RelativeKSDTest` with the exact marginal scores, IMQ kernel;
* ``LKSD-exact``: the same test with scores averaged over exact posterior draws;
* ``LKSD-HMC``: scores averaged over HMC draws (one chain per data point, started
  from the prior, ``burn_in`` discarded);
* ``maxSKSD``: the sliced relative test (``discrepancy="maxsksd"``, exact scores, IMQ
  kernel) with its defaults: cross-fitted (each model's maxSKSD-g directions learned
  on each half of the data, the difference computed on the other half, both models
  along the union of their directions) and aggregated over bandwidth factors;
* ``maxSKSD-split``: the same test on one split (directions learned on 20% of the
  data, the difference on the other 80%, median bandwidths), as before cross-fitting.

Every method of a trial sees the same data set (paired trials).
"""

import numpy as np

from .._random import spawn_seeds
from ..distributions import PPCA
from ..relative import RelativeKSDTest, RelativeMMDTest
from ..samplers import HMC
from ._output import rate_panels_by_case, run_config
from ._runner import draw_samples
from ._summary import relative_outcome, zscore_settings_rows

__all__ = ["CASES", "METHODS", "problem", "make_test", "run_trial", "run", "plot"]

CASES = ("h0", "h0-tie", "h1")
METHODS = ("MMD", "KSD", "LKSD-exact", "LKSD-HMC", "maxSKSD", "maxSKSD-split")
#: per case, the (row, added value) of the loading entry in column 1 that P and Q change
PERTURBATIONS = {
    "h0": ((0, 1.0), (0, 1.0 + 1e-5)),
    "h0-tie": ((0, 1.0), (1, 1.0)),
    "h1": ((0, 2.0), (0, 1.0)),
}
TITLES = {
    "h0": "H0: P better (delta_P=1, delta_Q=1+1e-5)",
    "h0-tie": "H0 boundary: P and Q tie (mirror images)",
    "h1": "H1: Q better (delta_P=2, delta_Q=1)",
}
FULL = dict(ns=(100, 200, 300, 400, 500), n_trials=100, n_posterior_samples=500, burn_in=200)
QUICK = dict(ns=(100, 300), n_trials=10, n_posterior_samples=100, burn_in=100)
#: HMC settings of the LKSD-HMC method (about 0.95 acceptance on this posterior).
HMC_STEP_SIZE, HMC_N_STEPS, HMC_JITTER = 0.05, 10, 0.2


def problem(case, dx=100, dz=10, noise_variance=1.0, seed=13):
    """(P, Q, R) of a case: three PPCA models differing in one loading of column 1."""
    if case not in PERTURBATIONS:
        raise ValueError(f"case must be one of {CASES}, got {case!r}.")
    # the legacy generator seeded with 13 gives the loading matrix of the published
    # experiment, so the problem is the same one
    A = np.random.RandomState(seed).uniform(0.0, 1.0, size=(dx, dz))
    if case == "h0-tie":
        A[1] = A[0]
    models = []
    for row, delta in PERTURBATIONS[case]:
        W = A.copy()
        W[row, 0] += delta
        models.append(PPCA(W, noise_variance))
    return models[0], models[1], PPCA(A, noise_variance)


def make_test(method, P, Q, n_posterior_samples=500, burn_in=200):
    """The test of a method for models P and Q (the kernels on the data's coordinates,
    ``whiten=False``, as in the published experiment and as the rates were measured)."""
    if method == "MMD":
        return RelativeMMDTest(P, Q)
    if method == "KSD":
        return RelativeKSDTest(P, Q, kernel="imq", model_score="exact", whiten=False)
    if method == "LKSD-exact":
        return RelativeKSDTest(P, Q, kernel="imq", model_score="posterior",
                               n_posterior_samples=n_posterior_samples, burn_in=0,
                               whiten=False)
    if method == "LKSD-HMC":
        hmc = HMC(step_size=HMC_STEP_SIZE, n_steps=HMC_N_STEPS, jitter=HMC_JITTER)
        return RelativeKSDTest(P.with_sampler(hmc), Q.with_sampler(hmc), kernel="imq",
                               model_score="posterior", whiten=False,
                               n_posterior_samples=n_posterior_samples, burn_in=burn_in)
    if method == "maxSKSD":
        return RelativeKSDTest(P, Q, discrepancy="maxsksd", kernel="imq", model_score="exact",
                               whiten=False)
    if method == "maxSKSD-split":
        return RelativeKSDTest(P, Q, discrepancy="maxsksd", kernel="imq", model_score="exact",
                               bandwidth="median", cross_fit=False, whiten=False)
    raise ValueError(f"method must be one of {METHODS}, got {method!r}.")


def run_trial(seed, case, n, methods, n_posterior_samples, burn_in):
    """One data set of size ``n`` from R, every method on it; returns a list of dicts."""
    seeds = spawn_seeds(np.random.SeedSequence(seed), 1 + len(methods))
    P, Q, R = problem(case)
    X = draw_samples(R, n, seeds[0])
    out = []
    for method, test_seed in zip(methods, seeds[1:]):
        test = make_test(method, P, Q, n_posterior_samples, burn_in)
        res = test.set_params(random_state=test_seed).test(X)
        out.append(relative_outcome(method, res))
    return out


def run(*, quick=False, n_trials=None, n_jobs=None, random_state=0, verbose="auto", cases=CASES,
        methods=METHODS, ns=None):
    """Run the experiment; one row per (case, n, method)."""
    cfg = run_config(QUICK, FULL, quick, n_trials, ns=ns)
    settings = [(case, n) for case in cases for n in cfg["ns"]]
    roots = np.random.SeedSequence(random_state).spawn(len(settings))
    return zscore_settings_rows(run_trial, settings, roots, cfg["n_trials"], methods,
                                (cfg["n_posterior_samples"], cfg["burn_in"]), n_jobs=n_jobs,
                                verbose=verbose)


def plot(rows, path):
    """Rejection rate versus n, one panel per case."""
    return rate_panels_by_case(rows, path, CASES, TITLES, width=4.2, xlabel="n",
                               null_case=lambda case: case != "h1")
