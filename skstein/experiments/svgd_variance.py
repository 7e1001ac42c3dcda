"""``svgd-variance``: particle variance and repulsive force versus dimension.

Gong et al. (2021), Figures 2 and 9: the target is N(0, I_D), the N particles start
from N(2 * 1, 2 I_D), and SVGD and sliced SVGD run to convergence. Reported per
(method, N, D): the per-dimension variance of the particles averaged over dimensions
(the target's is 1) and the particle-averaged repulsive force (PARF), the mean norm
of the repulsive term of the update at the last iteration. SVGD's repulsion fades as
D grows and its particles collapse (variance well below 1); sliced SVGD's 1-D
kernels keep it.
"""

import time

import numpy as np

from ..distributions import Gaussian
from ..svgd import SVGD, SlicedSVGD
from ._output import pyplot
from ._runner import run_settings

__all__ = ["run", "plot", "run_trial"]

FULL = dict(dims=(2, 5, 10, 20, 50, 100), n_particles=(50, 100, 200), n_iter=2000)
QUICK = dict(dims=(2, 20), n_particles=(50,), n_iter=200)
STEP_SIZE = 0.05


def run_trial(seed, method, n, dim, n_iter):
    rng = np.random.default_rng(seed)
    X0 = 2.0 + np.sqrt(2.0) * rng.standard_normal((n, dim))
    cls = SVGD if method == "SVGD" else SlicedSVGD
    est = cls(Gaussian(np.zeros(dim)), n_iter=n_iter, step_size=STEP_SIZE,
              history_every=max(1, n_iter // 20))
    t0 = time.perf_counter()
    est.fit(X0)
    elapsed = time.perf_counter() - t0
    P = est.particles_
    return {"method": method, "n_particles": n, "dim": dim, "n_iter": n_iter,
            "variance": float(P.var(axis=0, ddof=1).mean()),
            "mean_abs_mean": float(np.abs(P.mean(axis=0)).mean()),
            "parf": float(est.history_["repulsive_force"][-1]),
            "ms_per_iter": 1e3 * elapsed / max(n_iter, 1)}


def run(*, quick=False, n_trials=None, n_jobs=None, random_state=0, verbose=0):
    """One run per (method, N, D); ``n_trials`` overrides the number of iterations."""
    cfg = dict(QUICK if quick else FULL)
    n_iter = cfg["n_iter"] if n_trials is None else n_trials
    settings = [(method, n, dim, n_iter) for n in cfg["n_particles"] for dim in cfg["dims"]
                for method in ("SVGD", "SlicedSVGD")]
    return run_settings(run_trial, settings, random_state=random_state, n_jobs=n_jobs,
                        verbose=verbose)


def plot(rows, path):
    plt = pyplot()
    if plt is None:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for (method, ls) in (("SVGD", "--"), ("SlicedSVGD", "-")):
        for k, n in enumerate(sorted({r["n_particles"] for r in rows})):
            sub = sorted((r for r in rows if r["method"] == method and r["n_particles"] == n),
                         key=lambda r: r["dim"])
            dims = [r["dim"] for r in sub]
            kw = dict(ls=ls, marker="o", color=f"C{k}", label=f"{method}, N={n}")
            axes[0].plot(dims, [r["variance"] for r in sub], **kw)
            axes[1].plot(dims, [r["parf"] for r in sub], **kw)
    axes[0].axhline(1.0, color="grey", lw=0.8)
    axes[0].set_ylabel("average particle variance")
    axes[1].set_ylabel("PARF (repulsive force)")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("dimension")
    axes[1].set_yscale("log")
    axes[0].legend(fontsize="x-small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
