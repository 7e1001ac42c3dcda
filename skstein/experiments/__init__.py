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
    "svgd-variance": "skstein.experiments.svgd_variance",
    "relative-ppca": "skstein.experiments.relative_ppca",
    "relative-sampler": "skstein.experiments.relative_sampler",
    "ica": "skstein.experiments.ica",
    "sghmc-stepsize": "skstein.experiments.sghmc_stepsize",
    "relative-lda": "skstein.experiments.relative_lda",
}


def reproduce(name, *, out_dir="skstein_results", quick=False, n_trials=None, n_jobs=None,
              random_state=0, verbose=0, methods=None):
    """Run the experiment ``name``; write ``<out_dir>/<name>.csv`` and ``.png``.

    ``methods`` (a sequence of names) selects the tests of experiments whose ``run``
    takes a ``methods`` argument; ``None`` runs their default set.

    Returns ``(rows, csv_path, png_path, seconds)``; ``png_path`` is None without
    matplotlib.
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
