"""Matrix products called from inside numba kernels: BLAS ``dgemm`` / ``sgemm``.

The pooled Stein pass (:func:`skstein._numba.stein.stein_pass_blocks`) forms each block's
Gram and weight products on the thread that owns the block. ``np.dot`` inside a kernel
would do, but its compiled implementation (checks and dispatch for every dtype and
layout) multiplied the kernel's first compile several times over; these two products
call scipy's BLAS directly. The functions' addresses are given to LLVM under fixed
names when this module is imported, so the compiled kernels refer to the names and
numba's cache keeps working across processes.

Both take arrays whose rows are contiguous (row blocks of C-contiguous arrays; the
operands of ``gemm_nt`` may also be column blocks) and call BLAS with column-major views
of them; the caller holds BLAS at one thread.
"""

import numpy as np
from llvmlite import binding as ll
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import get_cython_function_address, intrinsic

from ._jit import PARALLEL

for _name in ("dgemm", "sgemm"):
    ll.add_symbol(f"skstein_{_name}",
                  get_cython_function_address("scipy.linalg.cython_blas", _name))
_SIG = types.void(*([types.voidptr] * 13))
_dgemm = types.ExternalFunction("skstein_dgemm", _SIG)
_sgemm = types.ExternalFunction("skstein_sgemm", _SIG)
#: BLAS's transpose flags "T", "N" and "N" (read-only constants of the kernels)
_TN = np.array([ord("T"), ord("N")], dtype=np.uint8)
_NN = np.array([ord("N"), ord("N")], dtype=np.uint8)


@intrinsic
def _ptr(typingctx, arr):
    """The address of an array's first element, as ``void *``."""
    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        return builder.bitcast(ary.data, ir.IntType(8).as_pointer())

    return types.voidptr(arr), codegen


@njit(cache=True)
def gemm_nt(A, B, C, beta):
    r"""``C = A B^T + beta C`` in float64: ``A`` (m, k), ``B`` (n, k), ``C`` (m, n).

    In column-major terms :math:`C^T = B A^T`: ``dgemm('T', 'N')`` on the arrays as they
    are. The rows of ``A`` and ``B`` may be spaced (a block of rows and columns of a
    C-contiguous matrix): their spacing is the leading dimension.
    """
    m, k = A.shape
    n = B.shape[0]
    lda = max(1, k, A.strides[0] // 8)
    ldb = max(1, k, B.strides[0] // 8)
    ints = np.array([n, m, k, ldb, lda, n], dtype=np.int32)
    scal = np.array([1.0, beta])
    _dgemm(_ptr(_TN[0:]), _ptr(_TN[1:]), _ptr(ints[0:]), _ptr(ints[1:]), _ptr(ints[2:]),
           _ptr(scal[0:]), _ptr(B), _ptr(ints[3:]), _ptr(A), _ptr(ints[4:]), _ptr(scal[1:]),
           _ptr(C), _ptr(ints[5:]))


@njit(cache=True)
def sgemm_nn(A, B, C, beta):
    r"""``C = A B + beta C`` in float32: ``A`` (m, k), ``B`` (k, n), ``C`` (m, n).

    In column-major terms :math:`C^T = B^T A^T`: ``sgemm('N', 'N')`` with the operands
    swapped.
    """
    m, k = A.shape
    n = B.shape[1]
    ints = np.array([n, m, k, n, k, n], dtype=np.int32)
    scal = np.array([1.0, beta], dtype=np.float32)
    _sgemm(_ptr(_NN[0:]), _ptr(_NN[1:]), _ptr(ints[0:]), _ptr(ints[1:]), _ptr(ints[2:]),
           _ptr(scal[0:]), _ptr(B), _ptr(ints[3:]), _ptr(A), _ptr(ints[4:]), _ptr(scal[1:]),
           _ptr(C), _ptr(ints[5:]))


@njit(cache=True, parallel=PARALLEL)
def gemm_nt_blocks(A, B, C, block):
    r"""``C = A B^T`` in float64 by blocks of ``block`` rows of ``A``, on numba's threads.

    Each block is one :func:`gemm_nt` call of the thread that owns it (the caller holds
    BLAS at one thread), so a product that would otherwise need BLAS's own thread pool
    runs on numba's. The blocks are fixed by ``block``, so the result does not depend
    on the number of threads.
    """
    m = A.shape[0]
    for t in prange((m + block - 1) // block):
        a = t * block
        b = min(m, a + block)
        gemm_nt(A[a:b], B, C[a:b], 0.0)
    return C
