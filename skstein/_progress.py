"""Progress bars on standard error for long loops: trials, settings, sampler iterations.

Every long loop of the library takes a ``verbose`` argument and reads it the same way
(:func:`progress_enabled`):

* ``0``, ``False`` or ``None``: silent;
* a positive int or ``True``: a progress bar with the elapsed time and an estimate of
  the time left (tqdm) on standard error;
* ``"auto"``: the bar only when standard error is a terminal, so an interactive run
  shows it while logs (CI, files, pipes, notebooks) stay clean.

The bar only observes the loop: it draws no random numbers and changes no order, so
results are identical with and without it.
"""

import numbers
import sys

__all__ = ["verbosity", "progress_enabled", "progress_bar", "check_verbose", "is_terminal"]


def check_verbose(verbose):
    """Validate ``verbose``: an int >= 0, a bool, None or ``"auto"``; returns it."""
    if verbose is None or isinstance(verbose, (bool, numbers.Integral)):
        if not isinstance(verbose, bool) and verbose is not None and verbose < 0:
            raise ValueError(f"verbose must be >= 0, a bool or 'auto', got {verbose!r}.")
        return verbose
    if isinstance(verbose, str) and verbose == "auto":
        return verbose
    raise ValueError(f"verbose must be an int >= 0, a bool or 'auto', got {verbose!r}.")


def is_terminal(stream):
    """Whether ``stream`` says it is a terminal (False for a closed or detached one)."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (ValueError, OSError):  # a closed or detached stream
        return False


def verbosity(verbose, stream=None):
    """The level ``verbose`` asks for: 0 silent, 1 a bar, 2 and above more detail.

    ``"auto"`` is 1 when ``stream`` (standard error by default) is a terminal, else 0.
    """
    verbose = check_verbose(verbose)
    if verbose == "auto":
        return int(is_terminal(sys.stderr if stream is None else stream))
    return int(verbose or 0)


def progress_enabled(verbose, stream=None):
    """Whether ``verbose`` asks for a progress bar on ``stream`` (standard error by default)."""
    return verbosity(verbose, stream) > 0


class _NoBar:
    """Stands in for a bar when progress is off: every call does nothing."""

    n = 0

    def update(self, n=1):
        pass

    def set_postfix_str(self, s=""):
        pass

    def __str__(self):
        return ""

    def write(self, s, file=None):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def progress_bar(total, *, verbose, desc=None, unit="it", position=None, leave=True):
    """A tqdm bar on standard error when :func:`progress_enabled`, else a silent stand-in.

    Use as a context manager; ``update(k)`` advances it by ``k`` items. On a terminal
    the bar redraws at most ten times a second; elsewhere (a log, when ``verbose`` asks
    for it explicitly) at most every 5 seconds, so logs stay short. ``position`` and
    ``leave`` are tqdm's: the line of the bar among several, whether it stays when
    closed.
    """
    stream = sys.stderr
    if not progress_enabled(verbose, stream):
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=stream,
                leave=leave, position=position, dynamic_ncols=True,
                mininterval=0.1 if is_terminal(stream) else 5.0)
