"""Many-trial experiments through joblib.

One seed per trial is spawned from ``random_state`` *before* the trials are
dispatched (:func:`numpy.random.SeedSequence.spawn`), so trial ``k`` sees the same
numbers whichever backend, worker count or order runs it: a power curve is
identical for ``n_jobs=1``, ``n_jobs=-1`` and a Dask cluster
(``with joblib.parallel_config("dask"): ...``).

Inside parallel trials numba and BLAS run single-threaded (``threads_per_trial``),
so processes do not oversubscribe the cores; loky does this for BLAS itself, Dask
does not, hence the explicit limit.

Progress (``verbose``): a bar with the time left on standard error, fed by joblib's
batch-completion callback (any backend), or by the loop itself with ``n_jobs=1``.
It only counts finished trials, so results do not depend on it.
"""

import time
from dataclasses import dataclass, field

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone

from .._threads import numba_threads
from .._progress import check_verbose, progress_bar
from .._random import as_generator, spawn_seeds
from .._validation import check_positive_int

__all__ = ["run_trials", "run_settings", "rejection_rate", "RejectionRate", "draw_samples"]


def _call_trial(trial, seed, args, kwargs, threads):
    if threads is None:
        return trial(seed, *args, **kwargs)
    from threadpoolctl import threadpool_limits

    with numba_threads(threads), threadpool_limits(limits=threads):
        return trial(seed, *args, **kwargs)


class _ProgressParallel(Parallel):
    """``joblib.Parallel`` that advances a progress bar as batches of tasks complete."""

    def __init__(self, bar, **kwargs):
        super().__init__(**kwargs)
        self._bar = bar

    def print_progress(self):
        # joblib calls this after every completed batch, whatever the backend.
        done = self.n_completed_tasks
        if done > self._bar.n:
            self._bar.update(done - self._bar.n)


def _map_seeds(fn, seeds, arg_lists, *, n_jobs, verbose, desc, threads, unit):
    """``[fn(seed, *args) for seed, args in zip(seeds, arg_lists)]`` with joblib and a bar."""
    with progress_bar(len(seeds), verbose=verbose, desc=desc, unit=unit) as bar:
        if n_jobs == 1:
            out = []
            for seed, args in zip(seeds, arg_lists):
                out.append(fn(seed, *args[0], **args[1]))
                bar.update(1)
            return out
        out = _ProgressParallel(bar, n_jobs=n_jobs)(
            delayed(_call_trial)(fn, seed, args[0], args[1], threads)
            for seed, args in zip(seeds, arg_lists)
        )
        bar.update(len(out) - bar.n)
        return out


def run_trials(trial, n_trials, *, args=(), kwargs=None, random_state=None, n_jobs=None,
               verbose="auto", desc=None, threads_per_trial=1):
    """Run ``trial(seed, *args, **kwargs)`` for ``n_trials`` spawned seeds with joblib.

    Parameters
    ----------
    trial : callable
        A picklable function ``trial(seed, *args, **kwargs)`` whose randomness comes
        from the integer ``seed`` alone.
    n_trials : int
        Number of trials.
    args : tuple, default=()
        Extra positional arguments of ``trial``.
    kwargs : dict, default=None
        Extra keyword arguments of ``trial``.
    random_state : None, int, SeedSequence or Generator
        Root of the spawned trial seeds.
    n_jobs : int or None
        As in joblib; ``None`` follows the active ``joblib.parallel_config``.
    verbose : int, bool or "auto", default="auto"
        Progress bar (trials done, elapsed time, time left) on standard error:
        ``0``/``False`` never, a positive int/``True`` always, ``"auto"`` when
        standard error is a terminal. The results do not depend on it.
    desc : str, default=None
        Label of the progress bar.
    threads_per_trial : int or None, default=1
        numba and BLAS threads inside each trial when trials run in parallel
        (``None``: leave as is). With ``n_jobs=1`` the trials run in this process with
        all threads, which changes speed but not results.

    Returns
    -------
    list
        The trial results in seed order.
    """
    n_trials = check_positive_int(n_trials, "n_trials")
    verbose = check_verbose(verbose)
    seeds = spawn_seeds(random_state, n_trials)
    kwargs = {} if kwargs is None else kwargs
    return _map_seeds(trial, seeds, [(tuple(args), kwargs)] * n_trials, n_jobs=n_jobs,
                      verbose=verbose, desc=desc, threads=threads_per_trial, unit="trial")


def rate_summary(rejects):
    """``{"rejection_rate", "stderr"}`` of per-trial decisions (binomial standard error)."""
    rejects = np.asarray(rejects, dtype=float)
    rate = float(rejects.mean())
    return {"rejection_rate": rate, "stderr": float(np.sqrt(rate * (1 - rate) / rejects.size))}


def draw_samples(data, n, seed):
    """Draw ``n`` rows from ``data``.

    Parameters
    ----------
    data : distribution or callable
        An object with ``rvs(n, random_state)`` or a callable ``(n, rng) -> X``.
    n : int
        Number of rows.
    seed : int, SeedSequence or Generator
        Seeds the draw.

    Returns
    -------
    ndarray of shape (n, n_features)
    """
    rng = as_generator(seed)
    rvs = getattr(data, "rvs", None)
    if callable(rvs):
        return np.asarray(rvs(n, random_state=rng), dtype=np.float64)
    if callable(data):
        return np.asarray(data(n, rng), dtype=np.float64)
    raise TypeError(
        f"data must have an rvs(n, random_state) method or be a callable (n, rng) -> X; "
        f"got {type(data).__name__}."
    )


def _rejection_trial(seed, test, data, n_samples):
    data_seed, test_seed = spawn_seeds(np.random.SeedSequence(seed), 2)
    X = draw_samples(data, n_samples, data_seed)
    test = clone(test).set_params(random_state=test_seed)
    t0 = time.perf_counter()
    res = test.test(X)
    return res.reject, res.pvalue, res.statistic, time.perf_counter() - t0


@dataclass(frozen=True)
class RejectionRate:
    """Rejection rate of a test over repeated trials.

    Attributes
    ----------
    rate : float
        Fraction of trials that rejected H0 (type-I error under H0, power under H1).
    n_trials, n_rejections : int
    stderr : float
        Binomial standard error ``sqrt(rate (1 - rate) / n_trials)``.
    pvalues, statistics, seconds : ndarray
        Per trial (left out of the repr); ``seconds`` times ``test.test`` alone.
    """

    rate: float
    n_trials: int
    n_rejections: int
    stderr: float
    pvalues: np.ndarray = field(repr=False)
    statistics: np.ndarray = field(repr=False)
    seconds: np.ndarray = field(repr=False)


def rejection_rate(test, data, n_samples, *, n_trials=100, random_state=None, n_jobs=None,
                   verbose="auto", desc=None):
    """Rejection rate of ``test`` on ``n_trials`` samples of size ``n_samples`` from ``data``.

    Each trial draws its data and the test's ``random_state`` from its own spawned
    seed and runs ``clone(test).test(X)``, so the result is the same for any
    ``n_jobs`` or joblib backend.

    Parameters
    ----------
    test : estimator with ``test(X)`` (e.g. :class:`skstein.KSDTest`)
    data : distribution with ``rvs(n, random_state)`` or callable ``(n, rng) -> X``
    n_samples : int
    n_trials : int, default=100
    random_state, n_jobs, verbose, desc : see :func:`run_trials`

    Returns
    -------
    RejectionRate
    """
    n_samples = check_positive_int(n_samples, "n_samples", minimum=2)
    out = run_trials(_rejection_trial, n_trials, args=(test, data, n_samples),
                     random_state=random_state, n_jobs=n_jobs, verbose=verbose, desc=desc)
    reject = np.array([o[0] for o in out], dtype=bool)
    summary = rate_summary(reject)
    return RejectionRate(
        rate=summary["rejection_rate"],
        n_trials=len(out),
        n_rejections=int(reject.sum()),
        stderr=summary["stderr"],
        pvalues=np.array([o[1] for o in out]),
        statistics=np.array([o[2] for o in out]),
        seconds=np.array([o[3] for o in out]),
    )


def run_settings(fn, settings, *, random_state=None, n_jobs=None, verbose="auto", desc=None,
                 threads_per_trial=1):
    """Run ``fn(seed, *setting)`` once per setting, in parallel with joblib.

    One seed per setting is spawned from ``random_state`` before dispatch, so results
    do not depend on ``n_jobs``, the backend or ``verbose`` (see :func:`run_trials`
    for ``verbose`` and ``desc``). Returns the results in setting order.
    """
    verbose = check_verbose(verbose)
    settings = list(settings)
    seeds = spawn_seeds(random_state, len(settings))
    return _map_seeds(fn, seeds, [(tuple(setting), {}) for setting in settings],
                      n_jobs=n_jobs, verbose=verbose, desc=desc, threads=threads_per_trial,
                      unit="setting")
