"""Many-trial experiments through joblib.

One seed per trial is spawned from ``random_state`` *before* the trials are
dispatched (:func:`numpy.random.SeedSequence.spawn`), so trial ``k`` sees the same
numbers whichever backend, worker count or order runs it: a power curve is
identical for ``n_jobs=1``, ``n_jobs=-1`` and a Dask cluster
(``with joblib.parallel_config("dask"): ...``).

Inside parallel trials numba and BLAS run single-threaded (``threads_per_trial``),
so processes do not oversubscribe the cores; loky does this for BLAS itself, Dask
does not, hence the explicit limit.

The trials of one setting go to the workers in :data:`CHUNKS_PER_WORKER` chunks per
worker, each one task that runs its trials in turn (one message and one pickled trial
function per chunk; 160 trials that return at once took 13 ms on two loky workers
against 34 ms one task per trial); the items of :func:`run_settings`, which may differ
in cost, go one per task.

Progress (``verbose``): a bar with the time left on standard error, fed by joblib's
batch-completion callback (any backend), or by the loop itself with ``n_jobs=1``.
It only counts finished trials, so results do not depend on it. Inside
:func:`overall_progress` (``skstein reproduce``) one more bar counts the settings of a
whole experiment, above the bar of the setting that runs; a setting is one call of
:func:`run_trials` (or :func:`rejection_rate`), or one item of :func:`run_settings`.
"""

import contextlib
import contextvars
import sys
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone

from .._threads import blas_threads, numba_threads
from .._progress import check_verbose, is_terminal, progress_bar, progress_enabled
from .._random import as_generator, spawn_seeds
from .._validation import check_positive_int

__all__ = ["run_trials", "run_settings", "rejection_rate", "RejectionRate", "draw_samples",
           "overall_progress", "count_settings"]


def _call_trial(trial, seed, args, kwargs, threads):
    if threads is None:
        return trial(seed, *args, **kwargs)
    # the cached controller (blas_threads): threadpoolctl's threadpool_limits rescans the
    # loaded libraries at every call, about 7 ms, a fifth of a 30 ms trial
    with numba_threads(threads), blas_threads(threads):
        return trial(seed, *args, **kwargs)


class _ProgressParallel(Parallel):
    """``joblib.Parallel`` that calls ``advance(k)`` as batches of ``k`` tasks complete."""

    def __init__(self, advance, **kwargs):
        super().__init__(**kwargs)
        self._advance = advance
        self.n_advanced = 0

    def print_progress(self):
        # joblib calls this after every completed batch, whatever the backend.
        done = self.n_completed_tasks
        if done > self.n_advanced:
            self._advance(done - self.n_advanced)
            self.n_advanced = done


# The overall bar of the experiment that runs (overall_progress), or the settings counter
# while count_settings counts them; None otherwise. A context variable, not a global, so
# it is local to the thread (and asyncio task) that runs the experiment.
_SESSION = contextvars.ContextVar("skstein_experiment_session", default=None)


class _Placeholder(float):
    """What a trial returns while :func:`count_settings` counts: NaN, which any key,
    attribute or call maps to itself and which iterates as empty, so that an
    experiment's bookkeeping runs through without a trial being run."""

    def __new__(cls):
        return super().__new__(cls, "nan")

    def __getitem__(self, key):
        return self

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __call__(self, *args, **kwargs):
        return self

    def __iter__(self):
        return iter(())


class _Counter:
    """Counts the settings of an experiment that is only being planned."""

    def __init__(self):
        self.total = 0


class _Overall:
    """The overall bar of an experiment, and how the bars of its settings sit under it.

    On a terminal the overall bar is a live tqdm bar on the first line; the running
    setting's bar sits on the line under it and is written above both once done. In a
    log the setting bars follow each other as before and a line with the overall count
    is written after each of them (no second live bar, whose cursor moves would
    garble the log).
    """

    def __init__(self, total, desc, stream):
        self.total, self.desc, self.stream = total, desc, stream
        self.terminal = is_terminal(stream)
        self.n = 0
        self._started = 0
        self._t0 = self._drawn = time.monotonic()
        self.bar = None
        if self.terminal:
            self.bar = progress_bar(total, verbose=True, desc=desc, unit="setting",
                                    position=0)

    def close(self):
        if self.bar is not None:
            self.bar.close()

    def start(self, n):
        """``n`` settings start; the total grows if it was short (a lower bound)."""
        self._started += n
        if self.total is not None and self._started > self.total:
            self.total = self._started
            if self.bar is not None:
                self.bar.total = self.total
                self.bar.refresh()

    def setting_bar(self, total, *, verbose, desc, unit):
        if self.terminal:
            return progress_bar(total, verbose=verbose, desc=desc, unit=unit, position=1,
                                leave=False)
        return progress_bar(total, verbose=verbose, desc=desc, unit=unit)

    def advance(self, n):
        """``n`` settings are done."""
        self.n += n
        if self.bar is not None:
            self.bar.update(n)

    def tick(self):
        """Redraw the live overall bar (its elapsed time) at most twice a second."""
        now = time.monotonic()
        if self.bar is not None and now - self._drawn >= 0.5:
            self._drawn = now
            self.bar.refresh()

    def setting_done(self, setting_bar):
        """Show that a setting bar finished; call before it closes (a terminal) or after."""
        if self.bar is not None:
            if str(setting_bar):  # not the silent stand-in of a setting run with verbose=0
                self.bar.write(str(setting_bar), file=self.stream)
        else:
            from tqdm import tqdm

            line = tqdm.format_meter(self.n, self.total, time.monotonic() - self._t0,
                                     prefix=self.desc, unit="setting", ascii=True)
            self.stream.write(line + "\n")
            self.stream.flush()


@contextlib.contextmanager
def overall_progress(total, *, verbose="auto", desc="overall"):
    """Show one bar over all the settings of an experiment while the block runs.

    Every :func:`run_trials` (and :func:`rejection_rate`) call in the block counts as
    one setting, every item of a :func:`run_settings` call as one. The bar shows the
    settings done of ``total``, the elapsed time and the time left; ``verbose`` is read
    as by :func:`run_trials` (``"auto"``: only when standard error is a terminal). On a
    terminal it stays above the bar of the running setting, and each finished setting's
    bar is written above it; elsewhere a line with the overall count follows each
    setting's bar. ``total`` may be a lower bound (see :func:`count_settings`): it
    grows when more settings start; ``None`` counts without a total (no time left). The
    bar only counts, so results do not depend on it.
    """
    verbose = check_verbose(verbose)
    if not progress_enabled(verbose) or _SESSION.get() is not None:
        yield
        return
    session = _Overall(total, desc, sys.stderr)
    token = _SESSION.set(session)
    try:
        yield
    finally:
        _SESSION.reset(token)
        session.close()


def count_settings(run, *args, **kwargs):
    """The number of settings ``run(*args, **kwargs)`` would run, without running them.

    ``run`` (an experiment's ``run``) is called with every trial replaced by a NaN
    placeholder, so only its own bookkeeping runs; each :func:`run_trials` call counts
    one setting and each item of a :func:`run_settings` call one. Where the bookkeeping
    cannot go on with placeholders (it raises, typically after its last call, when it
    computes on the results), the settings counted until then are returned: a lower
    bound, which :func:`overall_progress` raises when more settings start. None when
    not one setting was counted. Warnings raised on the way are silenced.
    """
    counter = _Counter()
    token = _SESSION.set(counter)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run(*args, **kwargs)
    except Exception:  # noqa: BLE001 - the count so far is all that is asked for
        pass
    finally:
        _SESSION.reset(token)
    return counter.total or None


def _map_seeds(fn, seeds, arg_lists, *, n_jobs, verbose, desc, threads, unit):
    """``[fn(seed, *args) for seed, args in zip(seeds, arg_lists)]`` with joblib and a bar."""
    session = _SESSION.get()
    per_item = unit == "setting"
    if isinstance(session, _Counter):
        session.total += len(seeds) if per_item else 1
        return [_Placeholder() for _ in seeds]
    if session is None:
        with progress_bar(len(seeds), verbose=verbose, desc=desc, unit=unit) as bar:
            return _map_bar(fn, seeds, arg_lists, n_jobs, threads, bar.update,
                            same=not per_item)
    session.start(len(seeds) if per_item else 1)
    with session.setting_bar(len(seeds), verbose=verbose, desc=desc, unit=unit) as bar:

        def advance(k):
            bar.update(k)
            if per_item:
                session.advance(k)
            else:
                session.tick()

        out = _map_bar(fn, seeds, arg_lists, n_jobs, threads, advance, same=not per_item)
        if not per_item:
            session.advance(1)
        if session.terminal:
            session.setting_done(bar)
    if not session.terminal:
        session.setting_done(bar)
    return out


#: Trials of one setting go to the workers in this many chunks per worker (each chunk
#: one task that runs its trials in turn): one message, one pickled trial function and
#: one switch of the thread limits per chunk instead of per trial. Two per worker keep
#: the workers busy to the end when the trials' times differ a little.
CHUNKS_PER_WORKER = 2


def _call_trials(trial, seeds, args, kwargs, threads):
    if threads is None:
        return [trial(seed, *args, **kwargs) for seed in seeds]
    with numba_threads(threads), blas_threads(threads):
        return [trial(seed, *args, **kwargs) for seed in seeds]


def _chunks(n, n_jobs):
    """``(start, stop)`` of the chunks of ``n`` equal trials for ``n_jobs`` workers."""
    from joblib import effective_n_jobs

    k = min(n, max(1, effective_n_jobs(n_jobs)) * CHUNKS_PER_WORKER) if \
        CHUNKS_PER_WORKER > 0 else n
    edges = np.linspace(0, n, k + 1).round().astype(int)
    return list(zip(edges[:-1], edges[1:]))


def _map_bar(fn, seeds, arg_lists, n_jobs, threads, advance, same=False):
    """``same``: the items share their arguments (the trials of one setting), so they
    go in chunks (:data:`CHUNKS_PER_WORKER`); else one task per item."""
    if n_jobs == 1:
        out = []
        for seed, args in zip(seeds, arg_lists):
            out.append(fn(seed, *args[0], **args[1]))
            advance(1)
        return out
    if same and len(seeds) > 1:
        chunks = _chunks(len(seeds), n_jobs)
        sizes = [b - a for a, b in chunks]
        done = [0]

        def advance_chunks(k):
            # joblib counts finished tasks, not which: the chunks differ by one trial
            # at most, so the trials done are counted from the sizes in order
            n_new = sum(sizes[done[0]:done[0] + k])
            done[0] += k
            advance(n_new)

        parallel = _ProgressParallel(advance_chunks, n_jobs=n_jobs, batch_size=1)
        args = arg_lists[0]
        parts = parallel(delayed(_call_trials)(fn, seeds[a:b], args[0], args[1], threads)
                         for a, b in chunks)
        out = [r for part in parts for r in part]
        if len(parts) > parallel.n_advanced:
            advance_chunks(len(parts) - parallel.n_advanced)
        return out
    parallel = _ProgressParallel(advance, n_jobs=n_jobs)
    out = parallel(delayed(_call_trial)(fn, seed, args[0], args[1], threads)
                   for seed, args in zip(seeds, arg_lists))
    if len(out) > parallel.n_advanced:
        advance(len(out) - parallel.n_advanced)
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
