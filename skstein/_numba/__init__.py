"""Private numba kernels.

Plain functions of arrays and floats, compiled once (``cache=True``) and called
only from the functional layer (:mod:`skstein.discrepancy` and friends). No Python
objects, no random number generation inside: draws are made in NumPy and passed in.
Parallel loops run over independent rows, each iteration owning its output row
(or, in the symmetric pair passes, over round-robin tiles of row blocks whose
schedule depends on the problem size only, the tiles of one round owning disjoint
rows), so results are bitwise identical for any number of threads.

Some loops repeat on purpose, with one copy per case instead of a branch:

* the per-kernel pair loops (``sliced._pair_h``, ``sliced._pair_grad``,
  ``learning._pairs_of_row``, the RBF / IMQ halves of ``svgd._field_rows``) and the
  feature rows of :mod:`._numba.features`: a branch inside the innermost loop, even on a
  loop invariant, keeps it from vectorising;
* the parallel and serial versions of a pass (``svgd.svgd_field`` and
  ``svgd_field_serial``): small problems run on the calling thread without waking the
  pool, with the same numbers.
"""

# The thread controls (and the passive OpenMP wait policy, which must be set before the
# OpenMP runtime starts) live on the ground floor; importing them here sets the policy
# before any kernel of this package runs.
from .._threads import blas_threads, numba_threads  # noqa: F401

__all__ = ["numba_threads", "blas_threads"]

# One line on a terminal's standard error before the first kernel compiles in this
# process (numba's compile event fires only when a kernel is neither loaded nor cached).
from .._compiling import watch_compiles  # noqa: E402

watch_compiles()
