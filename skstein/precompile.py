"""Fill numba's cache for this environment, one family of kernels per process.

Numba compiles each kernel on its first call in an environment and caches it; the first
test of each kind in a fresh environment (a new virtual environment, a CI job, a cluster
worker, a container) therefore waits for its kernels to compile, one after the other.
:func:`precompile` runs a small use of each family in its own process instead, so the
families compile side by side on the machine's cores; every later process, including
the caller, then loads them from the cache::

    python -m skstein precompile            # all families, one process per core
    skstein precompile --families ksd maxsksd

A family whose kernels are already cached costs only the start of its process, and is
skipped altogether with ``only_cold=True``. The numbers of later runs do not depend on
it: the same kernels are compiled, only earlier and in parallel.
"""

import os
import time

import numpy as np

__all__ = ["precompile", "FAMILIES", "cold_families"]


def _ksd():
    from .distributions import Gaussian
    from .gof import KSDTest

    X = np.random.default_rng(0).standard_normal((300, 5))
    model = Gaussian(np.zeros(5))
    for kernel in ("rbf", "imq"):
        KSDTest(model, kernel=kernel, n_bootstrap=100, random_state=0).test(X)
    # 300 x 300 weights: transposed on numba's threads (from 2^16)
    KSDTest(model, bandwidth="median", n_bootstrap=300, random_state=0).test(X)
    KSDTest(model, kernel="imq", bootstrap="rademacher", n_bootstrap=100, random_state=0).test(X)
    # the median bandwidth of larger samples forms its Gram product on numba's threads
    from .kernels import median_bandwidth

    median_bandwidth(np.random.default_rng(1).standard_normal((300, 30)))
    # the polynomial kernel's pass
    from .gof import PolynomialKSDTest

    PolynomialKSDTest(model, n_bootstrap=100, random_state=0).test(X)


def _maxsksd():
    from .distributions import Gaussian
    from .gof import MaxSKSDTest

    X = np.random.default_rng(0).standard_normal((300, 50))
    MaxSKSDTest(Gaussian(np.zeros(50)), n_bootstrap=100, random_state=0).test(X)
    # the cross-fitted test's starts (the "ica" start's FastICA kernel)
    MaxSKSDTest(Gaussian(np.zeros(5)), cv=2, n_bootstrap=100, random_state=0).test(X[:, :5])


def _relative():
    from .distributions import Gaussian
    from .relative import RelativeKSDTest

    X = np.random.default_rng(0).standard_normal((200, 3))
    RelativeKSDTest(Gaussian(np.zeros(3)), Gaussian(np.full(3, 0.5)), random_state=0).test(X)


def _svgd():
    from .distributions import Gaussian
    from .svgd import SVGD, SlicedSVGD

    target = Gaussian(np.zeros(20))
    X0 = np.random.default_rng(0).standard_normal((300, 20))
    for n in (50, 300):  # small problems take the serial pass, larger ones the parallel one
        SVGD(target, n_iter=2, random_state=0).fit(X0[:n])
        SlicedSVGD(target, n_iter=2, random_state=0).fit(X0[:n])
    # from 2^15 entries on, the AdaGrad step runs on numba's threads
    wide = np.random.default_rng(1).standard_normal((256, 128))
    SVGD(Gaussian(np.zeros(128)), n_iter=2, random_state=0).fit(wide)


def _discrete():
    from .distributions import Categorical
    from .gof import KSDTest

    p = np.full((3, 4), 0.25)
    X = np.random.default_rng(0).integers(0, 4, size=(200, 3))
    KSDTest(Categorical(p), n_bootstrap=100, random_state=0).test(X)   # all bandwidths at once
    KSDTest(Categorical(p), bandwidth="median", n_bootstrap=100, random_state=0).test(X)


#: The families: a small use of each, which compiles (or loads) its kernels.
FAMILIES = {"ksd": _ksd, "maxsksd": _maxsksd, "relative": _relative, "svgd": _svgd,
            "discrete": _discrete}

#: For each family, kernels whose cache entry tells whether the family is compiled
#: (module of :mod:`skstein._numba`, function name).
_MARKERS = {
    "ksd": [("stein", "stein_pass_blocks"), ("bootstrap", "transposed_into"),
            ("polynomial", "polynomial_upper_rows")],
    "maxsksd": [("directions", "cubic_slice_moments"), ("sliced", "sliced_stein_upper"),
                ("learning", "sliced_grad_upper"), ("bootstrap", "upper_forms_blocks"),
                ("directions", "fastica_deflation"), ("stein", "linear_stein_upper")],
    "relative": [("stein", "stein_pass_blocks")],
    "svgd": [("svgd", "svgd_field_serial"), ("svgd", "svgd_field"),
             ("svgd", "sliced_svgd_terms_tiled"), ("svgd", "adagrad_step_chunks")],
    "discrete": [("discrete", "discrete_stein_block"), ("discrete", "onehot_stein_multi_block")],
}


def _is_cached(module, name):
    """Whether numba's cache holds a compiled version of the kernel for this source.

    Reads the kernel's cache index (numba's own files); on any doubt says True, so that
    a warm environment is never slowed down.
    """
    try:
        import importlib

        fn = getattr(importlib.import_module(f"skstein._numba.{module}"), name)
        return bool(fn._cache._cache_file._load_index())
    except Exception:  # an internal of numba changed: assume cached
        return True


def cold_families(families=None):
    """The families whose kernels are not in numba's cache.

    Parameters
    ----------
    families : iterable of str, default=None
        Names from :data:`FAMILIES` to check; None for all.

    Returns
    -------
    list of str
    """
    names = list(FAMILIES) if families is None else list(families)
    return [f for f in names if not all(_is_cached(m, k) for m, k in _MARKERS.get(f, []))]


def _run_family(name):
    t0 = time.perf_counter()
    FAMILIES[name]()
    return name, time.perf_counter() - t0


def precompile(families=None, *, n_jobs=None, only_cold=False):
    """Compile (or load) the kernels of ``families`` in parallel processes.

    Parameters
    ----------
    families : iterable of str, default=None
        Names from :data:`FAMILIES`; None for all.
    n_jobs : int, default=None
        Processes at most; None: one per family, at most the number of cores.
    only_cold : bool, default=False
        Skip the families whose kernels are already in the cache.

    Returns
    -------
    dict
        Seconds per family (compile, or cache load, and the small use), and ``"total"``
        the wall time.
    """
    names = list(FAMILIES) if families is None else list(families)
    unknown = [f for f in names if f not in FAMILIES]
    if unknown:
        raise ValueError(f"families must be among {sorted(FAMILIES)}, got {unknown}.")
    if only_cold:
        names = cold_families(names)
    t0 = time.perf_counter()
    if not names:
        return {"total": 0.0}
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    jobs = min(len(names), n_jobs or cores or 1)
    if jobs == 1:
        out = [_run_family(f) for f in names]
    else:
        from joblib import Parallel, delayed

        # fresh worker processes (loky), one family each: compiling holds a lock per
        # process, so families compile side by side only in separate processes
        out = Parallel(n_jobs=jobs, backend="loky")(delayed(_run_family)(f) for f in names)
    result = dict(out)
    result["total"] = time.perf_counter() - t0
    return result
