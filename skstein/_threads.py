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

On Linux with glibc, importing the module also fixes two settings of the C allocator
(``mallopt``), unless the user set any of glibc's malloc variables or
``SKSTEIN_MALLOC=0``: arrays up to :data:`MMAP_THRESHOLD` bytes come from the heap and
up to :data:`TRIM_THRESHOLD` bytes of free heap are kept rather than handed back to the
system. These are the values to which glibc's own dynamic rule raises the two settings
at most, but that rule follows the largest array freed so far, so a process that
alternates between smaller and larger temporaries (a ``MaxSKSDTest`` trial) kept
mapping fresh memory and taking it back: about 6500 page faults a trial at D = 100,
n = 1000, each a trip into the kernel on first touch, which the threads of a parallel
pass take one after another. Without them, the trial took 1-5% less time on one
thread and 2-11% less on two (2-core development machine); the cost is up to
:data:`TRIM_THRESHOLD` bytes of free memory that the process keeps. :data:`MALLOC_TUNED`
says whether the settings were made.
"""

import contextlib
import contextvars
import os
import sys

#: Polls of an idle GNU OpenMP thread before it sleeps (``GOMP_SPINCOUNT``): about 0.1 ms
#: by libgomp's own rough rate of 100 000 polls a millisecond.
SPIN_COUNT = 10_000

if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ["GOMP_SPINCOUNT"] = str(SPIN_COUNT)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

#: glibc malloc's ``M_MMAP_THRESHOLD`` set on import: allocations up to this many bytes
#: come from the heap (glibc's ceiling for its dynamic threshold on 64-bit systems).
MMAP_THRESHOLD = 32 * 2**20

#: glibc malloc's ``M_TRIM_THRESHOLD`` set on import: free memory at the top of the heap
#: up to this many bytes is kept (twice :data:`MMAP_THRESHOLD`, as glibc's dynamic rule).
TRIM_THRESHOLD = 64 * 2**20

#: The environment variables by which a user sets glibc's malloc (then skstein leaves it).
MALLOC_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                    "MALLOC_MMAP_MAX_")


def _glibc():
    """Whether the C library is glibc (``confstr``: no scan of the executable, unlike
    ``platform.libc_ver``)."""
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (AttributeError, ValueError, OSError):
        return False


def _tune_malloc(environ):
    """Set :data:`MMAP_THRESHOLD` and :data:`TRIM_THRESHOLD` with glibc's ``mallopt``;
    whether they were set (never where the user configured malloc, with
    ``SKSTEIN_MALLOC=0``, or off glibc)."""
    if environ.get("SKSTEIN_MALLOC", "1") == "0" or any(v in environ for v in MALLOC_VARIABLES) \
            or "glibc.malloc." in environ.get("GLIBC_TUNABLES", ""):
        return False
    if not sys.platform.startswith("linux") or not _glibc():
        return False
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
        mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
        # M_MMAP_THRESHOLD = -3, M_TRIM_THRESHOLD = -1 (malloc.h)
        return bool(mallopt(-3, MMAP_THRESHOLD)) and bool(mallopt(-1, TRIM_THRESHOLD))
    except (OSError, AttributeError):
        return False


#: Whether importing skstein set glibc's malloc thresholds (see the module docstring).
MALLOC_TUNED = _tune_malloc(os.environ)

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
