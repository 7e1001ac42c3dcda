"""``gof-mixture``: the weights of separated modes, which score-based tests barely see.

The model is a Gaussian mixture; under H1 the data come from the same components with
other weights (under H0, from the model):

* ``1d``: N(0, 1) and N(4, 0.25) (mean, variance), model weights 0.7 / 0.3, data
  weights 0.55 / 0.45;
* ``5d``: two components 5 apart in D = 5, N(0, I) and a rotated one with variances
  0.5 to 2, model weights 0.5 / 0.5, data weights 0.35 / 0.65;
* ``3d``: three components 4 to 5 apart in D = 3 with standard deviations up to 1.4
  (they overlap), model weights 0.5 / 0.3 / 0.2, data weights 0.35 / 0.35 / 0.3.

Methods: ``KSD`` (the aggregated :class:`~skstein.KSDTest` in the data's coordinates,
``whiten=False``: the default before ``whiten="auto"``), ``KSD-imq``
(IMQ kernel, median heuristic: the kernel of the perturbed test) and ``perturbed KSD``
(:class:`~skstein.PerturbedKSDTest` with its defaults: half the sample learns the modes
and the jump scale, the other half is tested). Every method of a trial sees the same
data.
"""

import numpy as np
from scipy.stats import special_ortho_group

from .._random import spawn_seeds
from ..distributions import GaussianMixture
from ..gof import KSDTest, PerturbedKSDTest
from ._output import finish_rate_panels, panel_row, run_config
from ._runner import draw_samples, run_trials
from ._summary import timed_outcomes, timed_summary

__all__ = ["CASES", "METHODS", "setting", "make_test", "run_trial", "run", "plot"]

CASES = ("1d", "5d", "3d")
METHODS = ("KSD", "KSD-imq", "perturbed KSD")
FULL = dict(n_samples={"h1": (200, 500, 1000, 2000), "h0": (200, 1000)}, n_trials=100,
            n_bootstrap=1000)
QUICK = dict(n_samples={"h1": (400,), "h0": (200,)}, n_trials=4, n_bootstrap=200)


def setting(case, hypothesis):
    """(model, data) of a case under ``hypothesis`` ("h0" or "h1")."""
    if case == "1d":
        means, covs = np.array([[0.0], [4.0]]), np.array([[[1.0]], [[0.25]]])
        weights, other = [0.7, 0.3], [0.55, 0.45]
    elif case == "5d":
        Q = special_ortho_group.rvs(5, random_state=13)
        means = np.stack([np.zeros(5), 5.0 * Q[:, 0]])
        covs = np.stack([np.eye(5), Q @ np.diag([0.5, 1.0, 1.0, 2.0, 1.0]) @ Q.T])
        weights, other = [0.5, 0.5], [0.35, 0.65]
    elif case == "3d":
        Q = special_ortho_group.rvs(3, random_state=11)
        means = np.array([[0.0, 0.0, 0.0], [4.0, 0.0, 1.0], [-1.0, 4.0, 2.0]])
        covs = np.stack([Q @ np.diag([1.0, 0.3, 2.0]) @ Q.T, np.eye(3) * 0.5,
                         np.eye(3) * 1.5])
        weights, other = [0.5, 0.3, 0.2], [0.35, 0.35, 0.3]
    else:
        raise ValueError(f"case must be one of {CASES}, got {case!r}.")
    if hypothesis not in ("h0", "h1"):
        raise ValueError(f"hypothesis must be 'h0' or 'h1', got {hypothesis!r}.")
    model = GaussianMixture(weights, means, covs)
    return model, model if hypothesis == "h0" else GaussianMixture(other, means, covs)


def make_test(method, model, n_bootstrap):
    """The test called ``method`` (see :data:`METHODS`)."""
    if method == "KSD":
        # in the data's coordinates, as the reported rates were measured
        return KSDTest(model, n_bootstrap=n_bootstrap, whiten=False)
    if method == "KSD-imq":
        return KSDTest(model, kernel="imq", bandwidth="median", n_bootstrap=n_bootstrap)
    if method == "perturbed KSD":
        return PerturbedKSDTest(model, n_bootstrap=n_bootstrap)
    raise ValueError(f"unknown method {method!r}; choose from {METHODS}.")


def run_trial(seed, case, hypothesis, n, cfg, methods):
    data_seed, test_seed = spawn_seeds(np.random.SeedSequence(seed), 2)
    model, data = setting(case, hypothesis)
    X = draw_samples(data, n, data_seed)
    return timed_outcomes(methods, lambda m: make_test(m, model, cfg["n_bootstrap"]), X,
                          test_seed)


def run(*, quick=False, n_trials=None, n_jobs=None, random_state=0, verbose="auto",
        methods=METHODS):
    """Run the experiment; one row per (case, hypothesis, n, method)."""
    cfg = run_config(QUICK, FULL, quick, n_trials)
    settings = [(case, hyp, n) for case in CASES for hyp in ("h1", "h0")
                for n in cfg["n_samples"][hyp]]
    roots = np.random.SeedSequence(random_state).spawn(len(settings))
    rows = []
    for (case, hyp, n), root in zip(settings, roots):
        out = run_trials(run_trial, cfg["n_trials"], args=(case, hyp, n, cfg, tuple(methods)),
                         random_state=root, n_jobs=n_jobs, verbose=verbose,
                         desc=f"{case} {hyp} n={n}")
        for method in methods:
            rows.append({"case": case, "hypothesis": hyp, "n_samples": n, "method": method,
                         "n_trials": cfg["n_trials"],
                         **timed_summary(out, method, "statistic")})
    return rows


def plot(rows, path):
    """Rejection rate under H1 versus n, one panel per case."""
    cases = [c for c in CASES if any(r["case"] == c and r["hypothesis"] == "h1" for r in rows)]
    fig, axes = panel_row(len(cases), 4, 3.4)
    if fig is None:
        return None
    for ax, case in zip(axes[0], cases):
        for method in dict.fromkeys(r["method"] for r in rows):
            sub = [r for r in rows if r["case"] == case and r["method"] == method
                   and r["hypothesis"] == "h1"]
            ax.plot([r["n_samples"] for r in sub], [r["rejection_rate"] for r in sub], "o-",
                    label=method)
        ax.axhline(0.05, color="grey", lw=0.8, ls="--")
        ax.set_ylim(-0.03, 1.03)
        ax.set_xscale("log")
        sizes = sorted({r["n_samples"] for r in rows if r["case"] == case})
        ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.minorticks_off()
        ax.set_xlabel("n")
        ax.set_title(f"mixture weights, {case}", fontsize="small")
    return finish_rate_panels(fig, axes, path)
