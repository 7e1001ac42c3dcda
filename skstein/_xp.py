"""Array namespaces: which arrays a computation runs on, and moving results to the host.

skstein follows scikit-learn's convention for the Array API: with
``sklearn.set_config(array_api_dispatch=True)`` (scikit-learn also wants the environment
variable ``SCIPY_ARRAY_API=1``) and data given as arrays of another Array API library
(CuPy, PyTorch, ``array-api-strict``), the estimators compute with that library, on the
arrays' device. NumPy arrays keep the numba kernels. Nothing here imports a GPU library:
the namespace comes from the arrays themselves (:mod:`array_api_compat`).

This module imports only the ground floor of skstein (:mod:`skstein._threads`), so
every layer may use it.
"""

import functools

import numpy as np

from ._threads import holding_blas, single_blas

__all__ = ["array_api_dispatch", "namespace_of", "to_host", "check_same_namespace",
           "is_device_array", "waits_for_device", "host_single_blas"]


def array_api_dispatch():
    """Whether scikit-learn's ``array_api_dispatch`` is on."""
    import sklearn

    return bool(sklearn.get_config().get("array_api_dispatch", False))


def is_device_array(a):
    """True for an array of an Array API library other than NumPy (CuPy, torch, ...)."""
    if a is None or isinstance(a, (np.ndarray, np.generic, list, tuple, float, int)):
        return False
    import array_api_compat

    return array_api_compat.is_array_api_obj(a) and not array_api_compat.is_numpy_array(a)


def waits_for_device(a):
    """Whether reading a value of ``a`` on the host waits for another device: an array
    of an Array API library whose device is not the CPU (a GPU; ``array-api-strict``'s
    test devices count as such)."""
    if not is_device_array(a):
        return False
    import array_api_compat

    return "cpu" not in str(array_api_compat.device(a)).lower()


def _describe(a):
    import array_api_compat

    if not array_api_compat.is_array_api_obj(a):
        return type(a).__name__
    name = array_api_compat.array_namespace(a).__name__.replace("array_api_compat.", "")
    return f"array of {name} on device {array_api_compat.device(a)}"


def namespace_of(X, name="X"):
    """The namespace to compute ``X`` with: an Array API namespace, or None for numba.

    None when dispatch is off or ``X`` is a NumPy array (or anything NumPy converts).
    A device array with dispatch off raises a ValueError naming ``name``: scikit-learn's
    convention is to compute on such arrays only when dispatch is on, and a silent copy
    to the host would hide a costly transfer.
    """
    if not is_device_array(X):
        return None
    if not array_api_dispatch():
        raise ValueError(
            f"{name} is an {_describe(X)}; computing on it needs scikit-learn's Array API "
            "dispatch: sklearn.set_config(array_api_dispatch=True) (and the environment "
            "variable SCIPY_ARRAY_API=1), or pass a NumPy array.")
    import array_api_compat

    return array_api_compat.array_namespace(X)


def check_same_namespace(xp, X, value, name, reference="X"):
    """``value`` unchanged when it lives with ``X`` (same namespace and device) and is
    real, else an error naming ``name``.

    ``xp`` is ``namespace_of(X)`` (None: ``X`` is on the host, and then ``value``
    must not be a device array; host values are checked where they are converted,
    :func:`~skstein._validation.refuse_complex`).
    """
    import array_api_compat

    if xp is None:
        if is_device_array(value):
            raise ValueError(f"{name} returned an {_describe(value)} for a NumPy {reference}; "
                             f"give {reference} on the same device, or return NumPy arrays.")
        return value
    if not array_api_compat.is_array_api_obj(value) or \
            array_api_compat.array_namespace(value) is not xp:
        raise ValueError(f"{name} returned an {_describe(value)} for {reference}, an "
                         f"{_describe(X)}: it must return arrays of the same library and "
                         "device as the data.")
    if array_api_compat.device(value) != array_api_compat.device(X):
        raise ValueError(f"{name} returned an array on {array_api_compat.device(value)} for "
                         f"{reference} on {array_api_compat.device(X)}: both must be on one "
                         "device.")
    if xp.isdtype(value.dtype, "complex floating"):  # refused, as on the host
        raise ValueError(f"{name} returned complex values (dtype {value.dtype}): complex data "
                         f"are not supported; it must return an array of real floats of the "
                         f"shape of {reference}.")
    return value


def to_host(a):
    """A NumPy copy of an array of any Array API library (a NumPy array is returned as is)."""
    if isinstance(a, np.ndarray):
        return a
    import array_api_compat

    if array_api_compat.is_torch_array(a):
        return a.detach().cpu().numpy()
    if array_api_compat.is_cupy_array(a):
        return a.get()
    xp = array_api_compat.array_namespace(a)
    if array_api_compat.is_array_api_strict_namespace(xp):
        # its test devices stand for a GPU: their arrays reach NumPy through the CPU's
        a = xp.asarray(a, device=xp.Device("CPU_DEVICE"))
    return np.asarray(a)


def host_single_blas(fn=None, *, data=1):
    """Decorator: run ``fn`` in a :func:`~skstein._threads.single_blas` block unless its
    data argument (the positional argument at index ``data``: 1 for a method's ``X``, 0
    for a function's) is a device array. Arrays of another Array API library (a GPU)
    compute there, where OpenBLAS's threads do not matter, so their BLAS limits are
    left alone."""
    if fn is None:
        return functools.partial(host_single_blas, data=data)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not holding_blas():
            if not is_device_array(args[data] if len(args) > data else None):
                with single_blas():
                    return fn(*args, **kwargs)
        return fn(*args, **kwargs)

    return wrapper
