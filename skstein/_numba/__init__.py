"""Private numba kernels.

Plain functions of arrays and floats, compiled once (``cache=True``) and called
only from the functional layer (:mod:`skstein.discrepancy` and friends). No Python
objects, no random number generation inside: draws are made in NumPy and passed in.
Parallel loops run over independent rows, each iteration owning its output row,
so results are bitwise identical for any number of threads.
"""

import contextlib

import numba

__all__ = ["numba_threads"]


@contextlib.contextmanager
def numba_threads(n):
    """Run the enclosed block with ``n`` numba threads (``None``: leave as is)."""
    if n is None:
        yield
        return
    old = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(old)
