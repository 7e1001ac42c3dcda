"""Thread controls for numba and BLAS, on the ground floor (every layer may use them).

Imports nothing of skstein. Importing this module sets ``OMP_WAIT_POLICY=PASSIVE``
(unless the user set it) before the OpenMP runtime starts: numba's OpenMP threading
layer and OpenBLAS each keep a thread pool, and with OpenMP's default wait policy its
idle threads spin after every parallel region, taking the cores that the next BLAS
call needs (and OpenBLAS threads do the same to numba). On 2 cores an SVGD step at
N = 100 took 8 ms instead of 1 ms, and a KSD test at N = 1000, 66 ms instead of
53 ms. Passive waiting removes that.

Passive waiting alone puts every idle thread to sleep at once, so each parallel region
starts by waking them: 45-60 us for an empty ``prange`` loop on 2 cores, against 1 us
with the threads still awake. A pass made of many short regions pays that each time
(the rounds of :func:`skstein._numba.learning.sliced_grad_upper`, 12 at N = 200: on 2
cores it ran slower on two threads than on one). The module therefore also sets
``GOMP_SPINCOUNT`` to :data:`SPIN_COUNT` (GNU OpenMP, numba's ``omp`` layer on Linux),
when the user set neither variable: idle threads poll for about 0.1 ms, enough to
carry them from one region to the next within a pass, then sleep, long before a BLAS
product of any size would notice them. ``SlicedSVGD`` at N = 100 went from 0.86 to
0.60 ms an iteration on 2 cores.

OpenBLAS's threads (pthreads, not OpenMP) poll the same way for about 2^28 cycles
(0.05-0.2 s) after every multi-threaded product, and nothing can shorten that once
NumPy has loaded the library. A numba pass that starts within that time shares its
cores with them: on 2 cores a sliced Stein pass ran at its one-thread speed (52 ms at
1 and 2 threads) after a 1000 x 100 x 100 product, and at 26 ms after the same product
on one BLAS thread. :func:`single_blas` therefore holds BLAS at one thread while a
public computation of skstein runs (its tests, statistic functions and samplers, through
the decorator :func:`skstein._xp.host_single_blas`, which leaves device arrays alone): its
parallel work is numba's, and its products are either small or formed by numba's
threads with one-thread BLAS calls (:func:`skstein.discrepancy._pooled_pass`).
:func:`caller_blas` gives the caller's BLAS threads back to a block inside, for the
large products that only BLAS's own pool parallelises.
"""

import contextlib
import contextvars
import os

#: Polls of an idle GNU OpenMP thread before it sleeps (``GOMP_SPINCOUNT``): about 0.1 ms
#: by libgomp's own rough rate of 100 000 polls a millisecond.
SPIN_COUNT = 10_000

if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ["GOMP_SPINCOUNT"] = str(SPIN_COUNT)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__all__ = ["numba_threads", "blas_threads", "single_blas", "caller_blas", "holding_blas"]


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


# The caller's BLAS thread count while a single_blas block runs (None outside one).
_CALLER_BLAS = contextvars.ContextVar("skstein_caller_blas", default=None)


@contextlib.contextmanager
def single_blas():
    """Run the enclosed block with one BLAS thread (the module docstring says why).

    Nested blocks are free: only the outermost one sets and restores the limit, and it
    remembers the caller's thread count for :func:`caller_blas`. OpenBLAS's count is
    one setting of the process: threadpoolctl lets one Python thread at a time change
    it (the others' changes do nothing until its block ends), so blocks running in
    several Python threads never leave it changed, whatever order they end in.
    """
    if _CALLER_BLAS.get() is not None:
        yield
        return
    with blas_threads(1) as limiter:
        caller = limiter.get_original_num_threads().get("blas") or 1
        token = _CALLER_BLAS.set(int(caller))
        try:
            yield
        finally:
            _CALLER_BLAS.reset(token)


def holding_blas():
    """Whether a :func:`single_blas` block is running."""
    return _CALLER_BLAS.get() is not None


def caller_blas():
    """Context manager: inside a :func:`single_blas` block, the BLAS thread count of its
    caller again (for a large product that BLAS's pool parallelises); a no-op outside."""
    caller = _CALLER_BLAS.get()
    return contextlib.nullcontext() if caller is None else blas_threads(caller)
