"""Per-method summaries of the trials of one setting, as the columns of a result row."""

import time

import numpy as np

from ._runner import rate_summary, run_trials

__all__ = ["timed_outcomes", "timed_summary", "zscore_summary", "zscore_rows",
           "zscore_settings_rows", "relative_outcome"]


def timed_outcomes(methods, make_test, X, random_state):
    """Each method's ``(reject, statistic, seconds)`` on ``X``: the test
    ``make_test(method)`` with ``random_state`` set, timed around its ``test``."""
    out = {}
    for method in methods:
        test = make_test(method).set_params(random_state=random_state)
        t0 = time.perf_counter()
        res = test.test(X)
        out[method] = (res.reject, res.statistic, time.perf_counter() - t0)
    return out


def timed_summary(out, method, value_name):
    """Rejection rate, mean value and median time of ``method`` over the trials ``out``.

    Each trial maps a method to ``(reject, value, seconds)``; the value's column is
    ``"mean_" + value_name``.
    """
    return {
        **rate_summary([o[method][0] for o in out]),
        f"mean_{value_name}": float(np.mean([o[method][1] for o in out])),
        "median_seconds": float(np.median([o[method][2] for o in out])),
    }


def zscore_summary(out, k):
    """Rejection rate and the mean and spread of the z-scores of the ``k``-th method.

    Each trial is a list with one dict (``"reject"``, ``"zscore"``) per method.
    """
    z = np.array([trial[k]["zscore"] for trial in out])
    return {
        **rate_summary([trial[k]["reject"] for trial in out]),
        "mean_zscore": float(np.mean(z)), "sd_zscore": float(np.std(z)),
    }


def zscore_rows(out, methods, **setting):
    """One row per method of the trials ``out`` of a setting: the ``setting`` columns,
    ``method``, ``n_trials`` and :func:`zscore_summary`."""
    return [{**setting, "method": method, "n_trials": len(out), **zscore_summary(out, k)}
            for k, method in enumerate(methods)]


def zscore_settings_rows(trial, settings, roots, n_trials, methods, args=(), *, n_jobs=None,
                         verbose="auto"):
    """The rows of a relative-test experiment over settings ``(case, n)``.

    Setting ``(case, n)`` runs ``n_trials`` trials ``trial(seed, case, n, methods, *args)``
    (:func:`~skstein.experiments._runner.run_trials`), seeded from its root in ``roots``,
    and gives one row per method (:func:`zscore_rows`).
    """
    rows = []
    for (case, n), root in zip(settings, roots):
        out = run_trials(trial, n_trials, args=(case, n, tuple(methods)) + tuple(args),
                         random_state=root, n_jobs=n_jobs, verbose=verbose,
                         desc=f"{case} n={n}")
        rows.extend(zscore_rows(out, methods, case=case, n=n))
    return rows

def relative_outcome(method, res):
    """What a trial keeps of a relative test's result ``res`` for :func:`zscore_summary`."""
    return {"method": method, "reject": res.reject, "pvalue": res.pvalue,
            "statistic": res.statistic, "zscore": res.zscore}
