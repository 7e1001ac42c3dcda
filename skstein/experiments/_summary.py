"""Per-method summaries of the trials of one setting, as the columns of a result row."""

import numpy as np

from ._runner import rate_summary

__all__ = ["timed_summary", "zscore_summary", "zscore_rows", "relative_outcome"]


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


def relative_outcome(method, res):
    """What a trial keeps of a relative test's result ``res`` for :func:`zscore_summary`."""
    return {"method": method, "reject": res.reject, "pvalue": res.pvalue,
            "statistic": res.statistic, "zscore": res.zscore}
