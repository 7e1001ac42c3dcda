"""``gof-sds``: single-dimension shift in 50 dimensions (Gong et al. 2021, appendix G).

The model is p = N(0, I_50). The data differ from it in the first coordinate only:

* ``mean``: x_1 ~ N(shift, 1);
* ``variance``: x_1 ~ N(0, shift) (``shift`` is the variance; 1 is the null).

All other coordinates are standard normal. KSD uses all ``n_samples`` points;
maxSKSD-g and maxSKSD-rg learn directions on 20% and test on the rest. Every
method of a setting sees the same data.
"""

import numpy as np

from .._random import spawn_seeds
from ..distributions import Gaussian
from ._output import finish_rate_panels, panel_row, run_config
from ._runner import draw_samples, run_trials
from ._summary import timed_outcomes, timed_summary
from .gof_gaussian import make_test

__all__ = ["KINDS", "METHODS", "setting", "run_trial", "run", "plot"]

KINDS = ("mean", "variance")
METHODS = ("KSD", "maxSKSD-g", "maxSKSD-rg")
FULL = dict(dim=50, shifts={"mean": (0.0, 0.25, 0.5, 0.75, 1.0),
                            "variance": (1.0, 1.5, 2.0, 2.5, 3.0)},
            n_samples=1000, n_trials=100, n_bootstrap=1000)
QUICK = dict(dim=50, shifts={"mean": (0.0, 1.0), "variance": (2.5,)},
             n_samples=300, n_trials=6, n_bootstrap=300)


def setting(kind, shift, dim):
    """(model, data) for a shift of the first coordinate."""
    model = Gaussian(np.zeros(dim))
    mean, var = np.zeros(dim), np.ones(dim)
    if kind == "mean":
        mean[0] = shift
    elif kind == "variance":
        var[0] = shift
    else:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}.")
    return model, Gaussian(mean, var)


def run_trial(seed, kind, shift, cfg, methods):
    data_seed, test_seed = spawn_seeds(np.random.SeedSequence(seed), 2)
    model, data = setting(kind, shift, cfg["dim"])
    X = draw_samples(data, cfg["n_samples"], data_seed)
    return timed_outcomes(methods, lambda m: make_test(m, model, cfg["n_bootstrap"]), X,
                          test_seed)


def run(*, quick=False, n_trials=None, n_jobs=None, random_state=0,
        verbose="auto", methods=METHODS):
    """Run the experiment; one row per (kind, shift, method)."""
    cfg = run_config(QUICK, FULL, quick, n_trials)
    settings = [(kind, s) for kind in KINDS for s in cfg["shifts"][kind]]
    roots = np.random.SeedSequence(random_state).spawn(len(settings))
    rows = []
    for (kind, shift), root in zip(settings, roots):
        out = run_trials(run_trial, cfg["n_trials"], args=(kind, shift, cfg, tuple(methods)),
                         random_state=root, n_jobs=n_jobs, verbose=verbose,
                         desc=f"{kind} shift={shift:g}")
        for method in methods:
            rows.append({
                "kind": kind,
                "shift": shift,
                "method": method,
                "dim": cfg["dim"],
                "n_samples": cfg["n_samples"],
                "n_trials": cfg["n_trials"],
                **timed_summary(out, method, "discrepancy"),
            })
    return rows


def plot(rows, path):
    """Rejection rate versus shift, one panel per kind."""
    kinds = [k for k in KINDS if any(r["kind"] == k for r in rows)]
    fig, axes = panel_row(len(kinds), 4, 3.4)
    if fig is None:
        return None
    for ax, kind in zip(axes[0], kinds):
        for method in dict.fromkeys(r["method"] for r in rows):
            sub = [r for r in rows if r["kind"] == kind and r["method"] == method]
            ax.plot([r["shift"] for r in sub], [r["rejection_rate"] for r in sub], "o-",
                    label=method)
        ax.axhline(0.05, color="grey", lw=0.8, ls="--")
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("mean of x_1" if kind == "mean" else "variance of x_1")
        ax.set_title(f"single-dimension {kind} shift, D = 50", fontsize="small")
    return finish_rate_panels(fig, axes, path)
