"""Private numba kernels.

Plain functions of arrays and floats, compiled once (``cache=True``) and called
only from the functional layer (:mod:`skstein.discrepancy` and friends). No Python
objects, no random number generation inside: draws are made in NumPy and passed in.
Parallel loops run over independent rows, each iteration owning its output row
(or, in the symmetric pair passes, over round-robin tiles of row blocks whose
schedule depends on the problem size only, the tiles of one round owning disjoint
rows), so results are bitwise identical for any number of threads.
"""

import contextlib
import os

# numba's OpenMP threading layer and OpenBLAS each keep a thread pool. With
# OpenMP's default wait policy its idle threads spin after every parallel region,
# taking the cores that the next BLAS call needs (and OpenBLAS threads do the same
# to numba): on 2 cores an SVGD step at N = 100 took 8 ms instead of 1 ms, and a
# KSD test at N = 1000, 66 ms instead of 53 ms. Passive waiting removes that; the
# variable must be set before the OpenMP runtime starts (our first parallel call)
# and a value set by the user wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numba  # noqa: E402

__all__ = ["numba_threads", "blas_threads"]


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


_CONTROLLER = None


def blas_threads(n):
    """Context manager: at most ``n`` BLAS threads in the enclosed block.

    Like ``threadpoolctl.threadpool_limits(n, user_api="blas")``, but the scan of the
    loaded libraries (reading ``/proc/self/maps``, about 7 ms) is done once per
    process and kept, so hot loops such as ``partial_fit`` steps can afford it.
    """
    global _CONTROLLER
    if _CONTROLLER is None:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=n, user_api="blas")
