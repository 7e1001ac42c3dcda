"""How the kernels are compiled: what a kernel contains is paid for by every new environment.

Numba compiles a kernel on its first call and keeps it in its cache, so the first
use of a family in a fresh environment waits for its kernels to compile (measured on
2 cores: a parallel kernel costs about 0.5 s more than the same code serial, plus
the compile time of its body). The kernels keep that short in three ways:

* ``parallel=PARALLEL`` turns the explicit ``prange`` loops into parallel loops and
  nothing else. With ``parallel=True`` numba also turns array expressions, slice
  assignments and NumPy calls (``np.zeros``, ``a[:] = 0``) into parallel loops of
  their own, each compiled as one more function; in these kernels they are small
  set-up steps, faster on one thread than waking the pool.
* The ``prange`` loop of a kernel is thin: it calls a compiled (not inlined) row
  function, which numba compiles once however many times the loop calls it. An
  ``inline="always"`` helper is copied, and compiled again, at every call site.
* A function called from a ``prange`` loop gets its row index as ``np.int64(p)``:
  the loop variable is unsigned, and a row function called with both an unsigned
  and a signed index is compiled twice.

One rule keeps the cache safe: a kernel compiled without numba's threads never calls
one compiled with them; the Python caller calls the parallel kernel itself. Numba's
cache does not keep such a call whole (numba issue 8578, open in 0.68): when the
parallel callee had been compiled and cached by an earlier process and the serial
caller was compiled on top of it, every later process that loaded the caller from the
cache crashed (the median of ``svgd_field_serial`` called the parallel bracket; an SVGD
fit of 100 particles segfaulted). ``tests/test_jit_rules.py`` checks the rule.
"""

from numba.core.cpu_options import ParallelOptions

__all__ = ["PARALLEL", "RBF", "IMQ"]

#: Parallel option of every kernel: ``prange`` loops only (see the module docstring).
PARALLEL = ParallelOptions({"prange": True, "comprehension": False, "reduction": False,
                            "inplace_binop": False, "setitem": False, "numpy": False,
                            "stencil": False, "fusion": False})

#: Base-kernel codes of the radial profiles (:func:`skstein._numba.stein.kernel_params`).
RBF = 0
IMQ = 1
