"""Many-trial experiments: the joblib trial runner and the paper reproductions.

An experiment module defines ``run(quick=..., n_trials=..., n_jobs=...,
random_state=..., verbose=...) -> rows`` (a list of flat dicts) and
``plot(rows, path)``; :func:`reproduce` writes the rows as CSV next to the plot.
"""

import importlib
import inspect
import os
import time

from ._output import format_table, write_csv
from ._runner import RejectionRate, draw_samples, rejection_rate, run_trials

__all__ = ["run_trials", "rejection_rate", "RejectionRate", "draw_samples", "EXPERIMENTS",
           "reproduce"]

#: name -> module of each reproduction, or (module, keyword arguments of its ``run``)
EXPERIMENTS = {
    "gof-gaussian": "skstein.experiments.gof_gaussian",
    "gof-rbm": "skstein.experiments.gof_rbm",
    "gof-rbm-streaming": ("skstein.experiments.gof_rbm", {"protocol": "streaming"}),
    "gof-rotated": "skstein.experiments.gof_rotated",
    "gof-sds": "skstein.experiments.gof_sds",
    "gof-mixture": "skstein.experiments.gof_mixture",
    "svgd-variance": "skstein.experiments.svgd_variance",
    "relative-ppca": "skstein.experiments.relative_ppca",
    "relative-sampler": "skstein.experiments.relative_sampler",
    "ica": "skstein.experiments.ica",
    "sghmc-stepsize": "skstein.experiments.sghmc_stepsize",
    "relative-lda": "skstein.experiments.relative_lda",
    "vae-digits": "skstein.experiments.amortised_vae",
    "bnn-uci": "skstein.experiments.bnn_uci",
    "bnn-uci-gong": ("skstein.experiments.bnn_uci", {"protocol": "gong"}),
    "vae-digits-imputation": ("skstein.experiments.amortised_vae", {"latent_dims": (32,)}),
}


def reproduce(name, *, out_dir="skstein_results", quick=False, n_trials=None, n_jobs=None,
              random_state=0, verbose="auto", methods=None):
    """Run the experiment ``name``; write ``<out_dir>/<name>.csv`` and ``.png``.

    Parameters
    ----------
    name : str
        A key of ``EXPERIMENTS`` (``skstein reproduce --list``).
    out_dir : str or path, default="skstein_results"
        Folder of the CSV and the plot (created if needed); ``-quick`` is appended
        to the file names of a quick run.
    quick : bool, default=False
        The experiment's small, CI-sized configuration.
    n_trials : int, default=None
        Trials per setting; ``None`` keeps the experiment's own number.
    n_jobs : int, default=None
        joblib workers, as in :func:`run_trials`.
    random_state : int, default=0
        Root seed; the same seed gives the same numbers for any ``n_jobs``.
    verbose : int, bool or "auto", default="auto"
        Progress bars with the time left on standard error, one per setting (see
        :func:`run_trials`); ``"auto"``: only when standard error is a terminal.
    methods : sequence of str, default=None
        Selects the tests of experiments whose ``run`` takes a ``methods`` argument
        (``None``: their default set); a ValueError for the others.

    Returns
    -------
    rows : list of dict
        The experiment's rows.
    csv_path : str
        Where the rows were written.
    png_path : str or None
        The plot; None without matplotlib.
    seconds : float
        Run time of the experiment (without writing the outputs).
    """
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; choose from {sorted(EXPERIMENTS)}.")
    entry = EXPERIMENTS[name]
    path, extra = (entry, {}) if isinstance(entry, str) else entry
    module = importlib.import_module(path)
    if methods is not None:
        if "methods" not in inspect.signature(module.run).parameters:
            raise ValueError(f"methods: experiment {name!r} has no method selection.")
        extra = dict(extra, methods=tuple(methods))
    t0 = time.perf_counter()
    rows = module.run(quick=quick, n_trials=n_trials, n_jobs=n_jobs,
                      random_state=random_state, verbose=verbose, **extra)
    elapsed = time.perf_counter() - t0
    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.join(out_dir, name + ("-quick" if quick else ""))
    csv_path = write_csv(rows, stem + ".csv")
    png_path = module.plot(rows, stem + ".png")
    return rows, csv_path, png_path, elapsed


def table(rows, columns=None):
    """Plain-text table of experiment rows."""
    columns = columns or list(rows[0])
    return format_table(rows, columns)
