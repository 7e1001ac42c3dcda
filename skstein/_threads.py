"""Thread controls for numba and BLAS, on the ground floor (every layer may use them).

Imports nothing of skstein. Importing this module sets ``OMP_WAIT_POLICY=PASSIVE``
(unless the user set it) before the OpenMP runtime starts: numba's OpenMP threading
layer and OpenBLAS each keep a thread pool, and with OpenMP's default wait policy its
idle threads spin after every parallel region, taking the cores that the next BLAS
call needs (and OpenBLAS threads do the same to numba). On 2 cores an SVGD step at
N = 100 took 8 ms instead of 1 ms, and a KSD test at N = 1000, 66 ms instead of
53 ms. Passive waiting removes that.
"""

import contextlib
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__all__ = ["numba_threads", "blas_threads"]


@contextlib.contextmanager
def numba_threads(n):
    """Run the enclosed block with ``n`` numba threads (``None``: leave as is)."""
    if n is None:
        yield
        return
    import numba

    old = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(old)


_CONTROLLER = []


def blas_threads(n):
    """Context manager: at most ``n`` BLAS threads in the enclosed block.

    Like ``threadpoolctl.threadpool_limits(n, user_api="blas")``, but the scan of the
    loaded libraries (reading ``/proc/self/maps``, about 7 ms) is done once per
    process and kept, so hot loops such as ``partial_fit`` steps can afford it.
    """
    if not _CONTROLLER:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=n, user_api="blas")
