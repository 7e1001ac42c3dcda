"""A one-line notice on standard error while skstein's kernels compile for the first time.

Numba compiles a kernel on its first call in an environment and then keeps it in its
cache, so the first test of each kind in a fresh environment waits a few seconds
that later runs do not. Before the first such compile of a process, standard error
gets one line::

    compiling skstein's kernels for this environment (first use only, about 5 s)

The line is written only when standard error is a terminal (the rule of the progress
bars with ``verbose="auto"``, :mod:`skstein._progress`), so logs, pipes and captured
output stay clean, and at most once per process.

How it knows: numba raises its ``"numba:compile"`` event only when a function is
about to be compiled, that is when it has no compiled version for the argument
types in this process and its cache holds none either. A listener on that event
costs nothing on the calls that find their kernel (numba dispatches those in C and
raises no event); :func:`watch_compiles` registers it once, and it reacts to
skstein's kernels only. The expected wait is the first-use time of the family the
kernel belongs to, measured on 2 cores (``benchmarks/bench_cold_start.py``).
"""

import sys

from ._progress import is_terminal

__all__ = ["watch_compiles", "notice", "expected_seconds"]

_PACKAGE = __name__.rsplit(".", 1)[0] + "."

#: Seconds to compile a family's kernels on first use, measured on 2 cores with
#: ``benchmarks/bench_cold_start.py``, by the kernel module whose kernel compiles
#: first (the bandwidth and bootstrap helpers first compile in the KSD tests).
FIRST_USE_SECONDS = {
    "stein": 10,  # the pooled Stein pass: 11 s for a first KSDTest (6 s before it)
    "distances": 10,
    "bootstrap": 10,
    "_blas": 10,
    "sliced": 6,
    # the cubic start's kernel compiles first in a MaxSKSDTest (1.4 s of its own), then
    # the sliced passes
    "directions": 7,
    "learning": 6,
    "svgd": 15,  # a first SVGD fit: 14.6 s (22 s before the median's own selection)
    "discrete": 6,
    "features": 4,
}

#: For a kernel module not in the table.
DEFAULT_SECONDS = 5


def expected_seconds(module):
    """The expected first-use wait when a kernel of ``module`` (dotted name) compiles first."""
    return FIRST_USE_SECONDS.get(module.rsplit(".", 1)[-1], DEFAULT_SECONDS)


def notice(seconds):
    """The line written before the first compile."""
    return (f"compiling skstein's kernels for this environment "
            f"(first use only, about {seconds:.0f} s)")


_WATCHING = []


def watch_compiles():
    """Register the listener (once per process; later calls do nothing)."""
    if _WATCHING:
        return
    from numba.core import event

    class _FirstCompile(event.Listener):
        """Writes :func:`notice` before the first compile of a skstein kernel."""

        done = False

        def on_start(self, ev):
            if self.done:
                return
            func = getattr(ev.data.get("dispatcher"), "py_func", None)
            module = getattr(func, "__module__", None) or ""
            if not module.startswith(_PACKAGE):
                return
            self.done = True
            stream = sys.stderr
            if is_terminal(stream):
                print(notice(expected_seconds(module)), file=stream, flush=True)

        def on_end(self, ev):
            pass

    listener = _FirstCompile()
    event.register("numba:compile", listener)
    _WATCHING.append(listener)
