"""``relative-sampler``: how the quality of the posterior sampler shows up in the LKSD test.

Setting (H0 at its boundary): the data come from R = PPCA(A, 1) with x in R^100,
z in R^10 (the loading matrix of ``relative-ppca``); P and Q are the *same* model,
A with 1 added to its (1, 1) entry, so D(P, R) = D(Q, R) and a calibrated test
rejects at rate alpha. The two models' scores are estimated from posterior draws:

* P: MALA with a poor (small) step size started far from the posterior
  (z0 = ``P_INIT`` in every coordinate); ``burn_in`` steps discarded, then ``m``
  draws averaged;
* Q: a good sampler, HMC started from the prior, ``Q_BURN_IN`` steps discarded,
  then ``m`` draws averaged.

A chain that has not forgotten its start gives P a biased score, which makes P
look worse than Q: the test falsely rejects. With enough burn-in the rate returns
to the level. The rejection rate is reported against ``burn_in`` for each ``m``.

Each trial runs one P chain and one Q chain and evaluates every (burn-in, m) window
of them (paired settings). PPCA's conditional score is affine in z, so the average
of the conditional scores over a window equals the conditional score at the
window's mean state, which the trial uses.
"""

import numpy as np

from .._random import spawn_seeds
from ..discrepancy import DEFAULT_MAX_MEMORY, resolve_bandwidth
from ..kernels import make_kernel
from ..relative._ksd import _relative_result
from ..samplers import HMC, MALA, initial_state
from ._output import pyplot, run_config, save_figure
from ._runner import draw_samples, run_trials
from ._summary import zscore_summary
from .relative_ppca import problem

__all__ = ["run_trial", "run", "plot", "P_STEP_SIZE", "P_INIT", "Q_BURN_IN"]

#: P's poor MALA: step size far below the posterior's scale, biased start.
P_STEP_SIZE, P_INIT = 0.02, 3.0
#: Q's good sampler: HMC, and its burn-in.
Q_STEP_SIZE, Q_N_STEPS, Q_JITTER, Q_BURN_IN = 0.05, 10, 0.2, 200

FULL = dict(n=300, burn_ins=(0, 100, 1000, 3000, 10000), ms=(1, 10, 100, 1000), n_trials=100)
QUICK = dict(n=300, burn_ins=(0, 100, 1000, 5000), ms=(1, 10, 100), n_trials=10)


def _window_means(sampler, target, Z0, checkpoints, rng):
    """Prefix sums of the chain's states at the (sorted) checkpoints, as a dict t -> sum."""
    sums = {0: np.zeros_like(Z0)}
    Z, acc, t = Z0, np.zeros_like(Z0), 0
    seeds = spawn_seeds(rng, len(checkpoints))
    for stop, seed in zip(checkpoints, seeds):
        if stop > t:
            draws = sampler.sample(target, Z, stop - t, random_state=seed)
            acc = acc + draws.sum(axis=0)
            Z, t = draws[-1], stop
        sums[stop] = acc.copy()
    return sums


def run_trial(seed, n, burn_ins, ms, alpha=0.05):
    """One data set; the test for every (burn-in, m); returns a list of dicts."""
    data_seed, p_seed, q_seed = spawn_seeds(np.random.SeedSequence(seed), 3)
    P, _, R = problem("h0")  # P: A with 1 added at (1, 1)
    X = draw_samples(R, n, data_seed)
    kern = make_kernel("imq", resolve_bandwidth(X, "median"))
    p_init_rng, p_chain_rng = np.random.default_rng(p_seed).spawn(2)
    q_init_rng, q_chain_rng = np.random.default_rng(q_seed).spawn(2)
    target = P.posterior_target(X)
    dz = P.latent_dim
    # P: one poor MALA chain, windows [b, b + m) for every burn-in b and m
    p_checks = sorted({b for b in burn_ins} | {b + m for b in burn_ins for m in ms})
    p_sums = _window_means(MALA(P_STEP_SIZE), target,
                           initial_state(P_INIT, n, dz, p_init_rng), p_checks, p_chain_rng)
    # Q: one good HMC chain, Q_BURN_IN discarded, then the first m draws
    q_checks = sorted({Q_BURN_IN} | {Q_BURN_IN + m for m in ms})
    q_sums = _window_means(HMC(Q_STEP_SIZE, Q_N_STEPS, jitter=Q_JITTER), target,
                           initial_state(None, n, dz, q_init_rng), q_checks, q_chain_rng)
    out = []
    for m in ms:
        Zq = (q_sums[Q_BURN_IN + m] - q_sums[Q_BURN_IN]) / m
        S_q = P.grad_logpdf_conditional(X, Zq)
        for b in burn_ins:
            Zp = (p_sums[b + m] - p_sums[b]) / m
            S_p = P.grad_logpdf_conditional(X, Zp)
            res = _relative_result(X, S_p, S_q, kern, "jackknife", alpha, DEFAULT_MAX_MEMORY,
                                   "LKSD")
            out.append({"m": m, "burn_in": b, "reject": res.reject, "zscore": res.zscore})
    return out


def run(*, quick=False, n_trials=None, n_jobs=None, random_state=0, verbose="auto"):
    """Run the study; one row per (m, burn-in)."""
    cfg = run_config(QUICK, FULL, quick, n_trials)
    out = run_trials(run_trial, cfg["n_trials"],
                     args=(cfg["n"], tuple(cfg["burn_ins"]), tuple(cfg["ms"])),
                     random_state=random_state, n_jobs=n_jobs, verbose=verbose,
                     desc="relative-sampler")
    rows = []
    for k, first in enumerate(out[0]):
        rows.append({
            "m": first["m"], "burn_in": first["burn_in"], "n": cfg["n"],
            "n_trials": len(out), "p_step_size": P_STEP_SIZE, "p_init": P_INIT,
            **zscore_summary(out, k),
        })
    return rows


def plot(rows, path):
    """False-rejection rate versus burn-in, one line per m."""
    plt = pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(5.0, 3.6))
    for m in sorted({r["m"] for r in rows}):
        sub = sorted((r for r in rows if r["m"] == m), key=lambda r: r["burn_in"])
        ax.errorbar([max(r["burn_in"], 1) for r in sub], [r["rejection_rate"] for r in sub],
                    yerr=[r["stderr"] for r in sub], marker="o", capsize=2, label=f"m = {m}")
    ax.axhline(0.05, color="grey", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_xlabel("burn-in of P's MALA chain (0 shown at 1)")
    ax.set_ylabel("rejection rate under H0")
    ax.set_ylim(-0.03, 1.03)
    ax.set_title("LKSD: poor sampler for P, HMC for Q", fontsize="small")
    ax.legend(fontsize="small")
    return save_figure(fig, path)
