r"""Compute engines: where the Stein sums and bootstrap forms of a KSD test are computed.

An estimator chooses its engine once, at ``fit`` (or per call while unfitted), from its
data, and holds it (``engine_``), the way scikit-learn's ``KernelDensity`` holds its
tree; every method then calls the engine's verbs and reads the same for every kind of
array. The verbs:

* ``check_samples(X, min_samples)``: the validated sample, in the engine's arrays;
* ``scores(model, X, name)``: the model's score at the rows of ``X``, validated;
* ``host(A)``: a NumPy copy (bandwidths, whitening and every result are resolved on the
  host, where they are cheap);
* ``like(A, X)``: a host array moved to where ``X`` lives;
* ``on_device(X)``: ``X`` when it lives on a device (where the bandwidth heuristics
  then compute its distances), else None;
* ``sums_and_forms(X, S, kernels, V, max_memory, weights)``: the
  :class:`~skstein.discrepancy.SteinSums` of each kernel and the bootstrap forms for the
  weights ``V`` (drawn on the host), as NumPy; ``weights`` (host, or None) tilt the
  kernels (:mod:`skstein.gof._tilt`).

:class:`NumbaEngine` is the CPU path (:func:`skstein.discrepancy.stein_sums_and_forms`).
:class:`ArrayAPIEngine` computes with the namespace of its arrays (CuPy, PyTorch,
``array-api-strict``; scikit-learn's ``array_api_dispatch``), on their device, by dense
array algebra (:func:`skstein._xp_stein.xp_sums_and_forms`). It holds no module: the
namespace is read from the arrays at each call, so a fitted estimator pickles.
The discrete tests have their own estimator-level path (:mod:`skstein.gof._discrete`).
"""

import numpy as np

from ._docstrings import fill_doc
from ._estimator import is_fitted
from ._validation import check_samples, evaluate_score
from ._xp import host_single_blas, is_device_array, namespace_of, to_host
from ._xp_stein import xp_check_samples, xp_evaluate_score, xp_sums_and_forms
from .discrepancy import DEFAULT_MAX_MEMORY, stein_sums_and_forms

__all__ = ["NumbaEngine", "ArrayAPIEngine", "select_engine", "EstimatorEngine", "EngineMixin"]


class NumbaEngine:
    """The CPU engine: NumPy arrays and the numba kernels."""

    name = "numba"

    def __repr__(self):
        return f"{type(self).__name__}()"

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self))

    def check_samples(self, X, name="X", min_samples=2):
        if namespace_of(X, name) is not None:
            raise ValueError(
                f"{name} is an array of another library than NumPy, but this estimator was "
                "fitted on NumPy data (the numba engine): fit it on data of that library, "
                f"or pass {name} as a NumPy array.")
        return check_samples(X, name, min_samples=min_samples)

    def validate(self, est, X, reset, min_samples=2):
        """``X`` validated for a fitted estimator ``est`` (``n_features_in_``: set when
        ``reset``, else checked; the estimator's own check of its model's dimension)."""
        if namespace_of(X, "X") is not None:
            self.check_samples(X)
        return est._validate_X(X, reset=reset)

    def scores(self, model, X, name="model", check_tails=True):
        return evaluate_score(model, X, name, check_tails=check_tails)

    def host(self, A):
        return A

    def like(self, A, X):
        return A

    def on_device(self, X):
        return None

    def sums_and_forms(self, X, S, kernels, V, *, max_memory=DEFAULT_MAX_MEMORY, weights=None):
        return stein_sums_and_forms(X, S, kernels, V, max_memory=max_memory, weights=weights)


class ArrayAPIEngine(NumbaEngine):
    """The Array API engine: the arrays' own library and device (float64 sums).

    The Stein sums are computed in float64 and the bootstrap forms in
    :data:`skstein._bootstrap.FORM_DTYPE` on each kernel's matrix scaled by its
    largest diagonal value, as on the CPU; the forms of all kernels of a collection
    are one batched matrix product per block of rows (:mod:`skstein._xp_stein`).
    """

    name = "array_api"

    def check_samples(self, X, name="X", min_samples=2):
        xp = namespace_of(X, name)
        if xp is None:
            raise ValueError(
                f"{name} is a NumPy array, but this estimator was fitted on arrays of another "
                f"library (the Array API engine): pass {name} in that library, on the same "
                "device, or refit on NumPy data.")
        return xp_check_samples(X, xp, name, min_samples=min_samples)

    def validate(self, est, X, reset, min_samples=2):
        X = self.check_samples(X, min_samples=min_samples)
        if reset:
            est.n_features_in_ = X.shape[1]
            (getattr(est, "_check_model_dims", None) or est._check_model_dim)()
        elif X.shape[1] != est.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(est).__name__} is "
                             f"expecting {est.n_features_in_} features as input.")
        return X

    def scores(self, model, X, name="model", check_tails=True):
        return xp_evaluate_score(model, X, namespace_of(X), name)

    def host(self, A):
        return to_host(A)

    def like(self, A, X):
        import array_api_compat

        xp = namespace_of(X)
        # in X's dtype: GPU libraries refuse products of float32 and float64 arrays
        return xp.asarray(np.asarray(A, dtype=np.float64), dtype=X.dtype,
                          device=array_api_compat.device(X))

    def on_device(self, X):
        return X

    def sums_and_forms(self, X, S, kernels, V, *, max_memory=DEFAULT_MAX_MEMORY, weights=None):
        return xp_sums_and_forms(X, S, kernels, V, max_memory=max_memory, weights=weights)


def select_engine(X, name="X"):
    """The engine for data ``X``: :class:`ArrayAPIEngine` for arrays of another library
    than NumPy under scikit-learn's ``array_api_dispatch``, else :class:`NumbaEngine`."""
    return NumbaEngine() if namespace_of(X, name) is None else ArrayAPIEngine()


class EstimatorEngine:
    """Base of an estimator's engine (``engine_``): the estimator-level verbs of one data
    kind, computing through a compute engine (``compute``: :class:`NumbaEngine`,
    :class:`ArrayAPIEngine`, or None for the discrete operators). Two engines are equal
    when they are of one type on equal compute engines."""

    def __init__(self, compute=None):
        self.compute = compute

    def __repr__(self):
        return f"{type(self).__name__}({'' if self.compute is None else repr(self.compute)})"

    def __eq__(self, other):
        return type(other) is type(self) and other.compute == self.compute

    __hash__ = None

    @staticmethod
    def host_only(X, what):
        """A ValueError naming ``X`` when it is a device array: ``what`` runs on the CPU."""
        if is_device_array(X):
            raise ValueError(f"X must be a NumPy array for {what}: the discrete Stein "
                             "operators run on the CPU only.")


@fill_doc
class EngineMixin:
    """``fit`` and the engine lookup of an estimator that holds its engine (``engine_``).

    The estimator provides ``_select_engine(X)``, which returns the
    :class:`EstimatorEngine` its parameters and the data ``X`` call for; ``fit`` chooses
    it once and lets it learn the fitted attributes, and every other method calls
    ``self._engine(X)``: the fitted engine, or, while unfitted, the one for ``X``.
    """

    @host_single_blas
    def fit(self, X, y=None):
        """Resolve the test's settings on ``X`` and choose its engine (``engine_``).

        The class description says what is resolved (bandwidths, whitening, learned
        directions); the other methods then use it instead of resolving it again on the
        sample they are given.

        %(sample_y_parameters)s

        Returns
        -------
        self
        """
        engine = self._select_engine(X)
        engine.fit(self, X)
        self.engine_ = engine
        return self

    def _engine(self, X):
        return self.engine_ if is_fitted(self) else self._select_engine(X)
