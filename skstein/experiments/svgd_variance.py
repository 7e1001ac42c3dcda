"""``svgd-variance``: particle variance, its convergence, a correlated and a bent target.

Four parts, each a list of rows (``part`` names it):

* ``dimension`` (Gong et al. 2021, Figures 2 and 9): the target is N(0, I_D), the N
  particles start from N(2 * 1, 2 I_D), and SVGD and sliced SVGD run for 2000
  iterations. Reported per (method, N, D): the per-dimension variance of the
  particles averaged over dimensions (the target's is 1) and the particle-averaged
  repulsive force (PARF), the mean norm of the repulsive term of the update at the
  last iteration. SVGD's repulsion fades as D grows and its particles collapse
  (variance well below 1); sliced SVGD's 1-D kernels keep it.
* ``convergence``: the same target and start for D in (20, 50, 100) and N in (50, 100,
  200), 6000 iterations; sliced SVGD with learned directions (the default: updates
  only while the particles move), with directions fixed at the identity
  (``slice_update_every=0``), and with updates at every check
  (``slice_update_tol=0``, the behaviour before the gate). Reported: the variance at
  iterations 2000, 4000 and 6000 and its relative change from 4000 to 6000
  (converged: below 2%), with the variance trace in the plot.
* ``correlated``: the target N(0, Sigma) in 50 dimensions with Sigma_ij = 0.9^|i-j|
  (strong correlation between neighbouring coordinates), 100 particles from
  N(0, I), 6000 iterations; SVGD, and sliced SVGD with fixed and with learned
  directions, along the axes and along the slices of ``slices="score"``. Reported:
  the mean ratio of the particles' marginal variances to the target's and the
  relative Frobenius error of their covariance.
* ``banana``: the twisted Gaussian (:class:`~skstein.distributions.Banana`, curvature
  1, turned by a random rotation drawn from the trial's seed) in D = 2, 10 and 50
  dimensions, 100 particles from N(0, I), 2000 iterations; SVGD, and sliced SVGD with
  the default slices (``"auto"``) and along the axes. Its two bent coordinates are
  uncorrelated but dependent, which no choice of slices separates. Reported: the
  ratios of the particles' variances to the target's along the two bent coordinates
  and (mean) along the others, and the energy distance of the particles to 2000
  target draws, beside that of N target draws (``energy_iid``).

Measured (``run(parts=("convergence", "correlated"), random_state=2032)``): with
learned, gated directions the variance at 6000 iterations is 1.006 to 1.050 over the
nine (D, N) settings and changes by at most 0.2% from iteration 4000; with fixed
directions 1.003 to 1.011; with an update at every check 1.11 to 1.75, still
moving by 6 to 22%.

On the correlated target (six seeds, ``spawn_seeds(2040, 6)``, per-seed
``run_trial``) the marginal variance ratio and covariance error are 0.555 and 0.350
for SVGD; along the axes 0.110 and 0.988 (fixed directions) and 0.109 and 0.988
(learned): one 1-D kernel per coordinate leaves the particles with the conditional
variances, whatever the directions. Along the score-covariance slices they are
1.063 and 0.203 (fixed directions) and 1.062 and 0.189 (learned; the covariance
error below the fixed directions' on four of the six seeds). Before the step rule
ran along the slices (AdaGrad's scales per coordinate of x, not per slice) they were
1.038 and 0.222, and 1.040 and 0.212; the slices' step rule lowered the covariance
error on four of the six seeds with fixed directions and on five with learned ones.

On the banana (four seeds, ``spawn_seeds(2050, 4)``, per-seed ``run_trial`` with N =
100 and 2000 iterations; ranges over the seeds), the particles' variance ratios along
the two bent coordinates, the mean ratio along the others, and the energy distance
(that of N target draws in brackets):

====  ==================  ======================  ===========  =====================
D     method              bent coordinates        others       energy (iid)
====  ==================  ======================  ===========  =====================
2     SVGD                0.90-0.97, 0.77-0.79                 0.003-0.006 (0.008-0.040)
2     sliced, auto        0.48-0.54, 0.34-0.39                 0.072-0.115
2     sliced, axes        0.63-0.80, 0.32-0.72                 0.049-0.077
10    SVGD                1.00, 0.58-0.59         0.49         0.080-0.087 (0.039-0.066)
10    sliced, auto        0.42-0.48, 0.30-0.32    1.01-1.02    0.055-0.073
10    sliced, axes        0.53-0.67, 0.24-0.39    0.82-0.97    0.055-0.065
50    SVGD                0.39-0.44, 0.25-0.30    0.09-0.11    1.53-1.70 (0.089-0.115)
50    sliced, auto        0.40-0.51, 0.20-0.31    1.00-1.01    0.064-0.090
50    sliced, axes        0.73-1.00, 0.27-0.42    0.94-0.95    0.061-0.066
====  ==================  ======================  ===========  =====================

Along the bent pair the sliced particles keep about the conditional variances, as
along correlated axes: the fixed point of 1-D kernels on projections constrains only
functions of one projection at a time, and the directions' slow ascent does not
bring them the rest. SVGD's full kernel resolves the bend in two dimensions and
loses it with the rest of its variance as D grows.
"""

import time

import numpy as np

from ..distributions import Banana, Gaussian
from ..svgd import SVGD, SlicedSVGD
from ._output import pyplot, save_figure
from ._runner import run_settings

__all__ = ["run", "plot", "run_trial", "PARTS"]

PARTS = ("dimension", "convergence", "correlated", "banana")
FULL = dict(dims=(2, 5, 10, 20, 50, 100), n_particles=(50, 100, 200), n_iter=2000,
            conv_dims=(20, 50, 100), conv_particles=(50, 100, 200), conv_iter=6000,
            corr_dim=50, corr_particles=100, corr_iter=6000,
            banana_dims=(2, 10, 50), banana_particles=100, banana_iter=2000)
QUICK = dict(dims=(2, 20), n_particles=(50,), n_iter=200, conv_dims=(20,),
             conv_particles=(50,), conv_iter=300, corr_dim=10, corr_particles=50,
             corr_iter=300, banana_dims=(2,), banana_particles=50, banana_iter=200)
STEP_SIZE = 0.05
#: correlation of neighbouring coordinates in the ``correlated`` part
RHO = 0.9
#: the sliced SVGD variants (``score``: slices from the score covariance, learned
#: directions; ``score-fixed``: the same with fixed directions); the
#: ``convergence`` part runs the first three (along the axes, as the paper)
SLICED_VARIANTS = {
    "learned": {"slices": "axes"},
    "fixed": {"slices": "axes", "slice_update_every": 0},
    "ungated": {"slices": "axes", "slice_update_tol": 0.0},
    "score": {"slices": "score"},
    "score-fixed": {"slices": "score", "slice_update_every": 0},
    "auto": {},
}
CONVERGENCE_VARIANTS = ("learned", "fixed", "ungated")
CORRELATED_METHODS = ("SVGD", "SlicedSVGD:fixed", "SlicedSVGD:learned", "SlicedSVGD:score",
                      "SlicedSVGD:score-fixed")
BANANA_METHODS = ("SVGD", "SlicedSVGD:auto", "SlicedSVGD:learned")
#: target draws the ``banana`` part measures the particles' energy distance against
BANANA_REFERENCE = 2000


def _energy_distance(X, Y):
    """The energy distance 2 E|x - y| - E|x - x'| - E|y - y'| of two samples (V-statistic)."""
    from scipy.spatial.distance import cdist

    return float(2.0 * cdist(X, Y).mean() - cdist(X, X).mean() - cdist(Y, Y).mean())


def _ar1(dim, rho=RHO):
    idx = np.arange(dim)
    return rho ** np.abs(idx[:, None] - idx[None, :])


def _sampler(method, target, n_iter, history_every):
    if method == "SVGD":
        return SVGD(target, n_iter=n_iter, step_size=STEP_SIZE, history_every=history_every)
    variant = method.split(":", 1)[1] if ":" in method else "learned"
    return SlicedSVGD(target, n_iter=n_iter, step_size=STEP_SIZE, history_every=history_every,
                      **SLICED_VARIANTS[variant])


def run_trial(seed, part, method, n, dim, n_iter):
    """One run of ``method`` ("SVGD", "SlicedSVGD" or "SlicedSVGD:<variant>")."""
    rng = np.random.default_rng(seed)
    if part == "correlated":
        cov = _ar1(dim)
        target = Gaussian(np.zeros(dim), cov)
        X0 = rng.standard_normal((n, dim))
    elif part == "banana":
        rotation = np.linalg.qr(rng.standard_normal((dim, dim)))[0]
        target = Banana(dim, rotation=rotation)
        X0 = rng.standard_normal((n, dim))
    else:
        cov = np.eye(dim)
        target = Gaussian(np.zeros(dim))
        X0 = 2.0 + np.sqrt(2.0) * rng.standard_normal((n, dim))
    est = _sampler(method, target, n_iter, max(1, n_iter // 60))
    t0 = time.perf_counter()
    est.fit(X0)
    elapsed = time.perf_counter() - t0
    P = est.particles_
    hist = est.history_
    row = {"part": part, "method": method, "n_particles": n, "dim": dim, "n_iter": n_iter,
           "variance": float(P.var(axis=0, ddof=1).mean()),
           "mean_abs_mean": float(np.abs(P.mean(axis=0)).mean()),
           "parf": float(hist["repulsive_force"][-1]),
           "ms_per_iter": 1e3 * elapsed / max(n_iter, 1)}
    if part == "convergence":
        for at in (2000, 4000):
            if at < n_iter:
                row[f"variance_{at}"] = float(np.interp(at, hist["iteration"],
                                                        hist["variance"]))
        if "variance_4000" in row:
            row["change_4000_end"] = abs(row["variance"] - row["variance_4000"]) / \
                row["variance_4000"]
        row["trace_iteration"] = " ".join(str(int(i)) for i in hist["iteration"])
        row["trace_variance"] = " ".join(f"{v:.4f}" for v in hist["variance"])
    if part == "correlated":
        C = np.cov(P.T)
        row["marginal_variance_ratio"] = float(np.mean(np.diag(C) / np.diag(cov)))
        row["covariance_error"] = float(np.linalg.norm(C - cov) / np.linalg.norm(cov))
    if part == "banana":
        reference = target.rvs(BANANA_REFERENCE, random_state=rng)
        ratio = np.var(P @ rotation.T, axis=0) / target.coordinate_variances()
        row["variance_ratio_bent"] = " ".join(f"{v:.4f}" for v in ratio[:2])
        row["variance_ratio_other"] = float(ratio[2:].mean()) if dim > 2 else float("nan")
        row["energy"] = _energy_distance(P, reference)
        row["energy_iid"] = _energy_distance(target.rvs(n, random_state=rng), reference)
    if isinstance(est, SlicedSVGD):
        row["direction_updates"] = int(est.n_direction_updates_)
        G = est.directions_
        row["max_offdiag_G"] = float(np.abs(G - np.diag(np.diag(G))).max())
    return row


def _settings(cfg, parts):
    settings = []
    if "dimension" in parts:
        settings += [("dimension", method, n, dim, cfg["n_iter"]) for n in cfg["n_particles"]
                     for dim in cfg["dims"] for method in ("SVGD", "SlicedSVGD")]
    if "convergence" in parts:
        settings += [("convergence", f"SlicedSVGD:{variant}", n, dim, cfg["conv_iter"])
                     for n in cfg["conv_particles"] for dim in cfg["conv_dims"]
                     for variant in CONVERGENCE_VARIANTS]
    if "correlated" in parts:
        settings += [("correlated", method, cfg["corr_particles"], cfg["corr_dim"],
                      cfg["corr_iter"])
                     for method in CORRELATED_METHODS]
    if "banana" in parts:
        settings += [("banana", method, cfg["banana_particles"], dim, cfg["banana_iter"])
                     for dim in cfg["banana_dims"] for method in BANANA_METHODS]
    return settings


def run(*, quick=False, n_trials=None, n_jobs=None, random_state=0, verbose="auto", parts=PARTS):
    """One run per setting of each part; ``n_trials`` overrides the iterations of all parts."""
    cfg = dict(QUICK if quick else FULL)
    if n_trials is not None:
        cfg.update(n_iter=n_trials, conv_iter=n_trials, corr_iter=n_trials,
                   banana_iter=n_trials)
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise ValueError(f"parts must be among {PARTS}, got {sorted(unknown)}.")
    return run_settings(run_trial, _settings(cfg, parts), random_state=random_state,
                        n_jobs=n_jobs, verbose=verbose, desc="svgd-variance")


def plot(rows, path):
    """Variance and PARF versus dimension; variance traces of the convergence part."""
    plt = pyplot()
    if plt is None:
        return None
    dim_rows = [r for r in rows if r["part"] == "dimension"]
    conv_rows = [r for r in rows if r["part"] == "convergence"]
    conv_dims = sorted({r["dim"] for r in conv_rows})
    ncols = 2 + len(conv_dims)
    fig, axes = plt.subplots(1, ncols, figsize=(3.6 * ncols, 3.6), squeeze=False)
    axes = axes[0]
    for (method, ls) in (("SVGD", "--"), ("SlicedSVGD", "-")):
        for k, n in enumerate(sorted({r["n_particles"] for r in dim_rows})):
            sub = sorted((r for r in dim_rows if r["method"] == method and r["n_particles"] == n),
                         key=lambda r: r["dim"])
            dims = [r["dim"] for r in sub]
            kw = dict(ls=ls, marker="o", color=f"C{k}", label=f"{method}, N={n}")
            axes[0].plot(dims, [r["variance"] for r in sub], **kw)
            axes[1].plot(dims, [r["parf"] for r in sub], **kw)
    axes[0].axhline(1.0, color="grey", lw=0.8)
    axes[0].set_ylabel("average particle variance")
    axes[1].set_ylabel("PARF (repulsive force)")
    for ax in axes[:2]:
        ax.set_xscale("log")
        ax.set_xlabel("dimension")
    axes[1].set_yscale("log")
    if dim_rows:
        axes[0].legend(fontsize="x-small")
    styles = {"SlicedSVGD:learned": "-", "SlicedSVGD:fixed": ":", "SlicedSVGD:ungated": "--"}
    for ax, dim in zip(axes[2:], conv_dims):
        for r in conv_rows:
            if r["dim"] != dim:
                continue
            k = sorted({q["n_particles"] for q in conv_rows}).index(r["n_particles"])
            its = [float(v) for v in r["trace_iteration"].split()]
            var = [float(v) for v in r["trace_variance"].split()]
            ax.plot(its, var, ls=styles[r["method"]], color=f"C{k}",
                    label=f"{r['method'].split(':')[1]}, N={r['n_particles']}")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.axhspan(0.9, 1.1, color="0.92", zorder=0)
        ax.set_ylim(0.5, 2.0)
        ax.set_title(f"sliced SVGD, D={dim}", fontsize="small")
        ax.set_xlabel("iteration")
        ax.set_ylabel("particle variance")
    if conv_dims:
        axes[2].legend(fontsize="xx-small", ncol=1)
    return save_figure(fig, path)
