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
* ``sums_and_forms(X, S, kernels, V, max_memory)``: the :class:`~skstein.discrepancy.SteinSums`
  of each kernel and the bootstrap forms for the weights ``V`` (drawn on the host), as
  NumPy.

:class:`NumbaEngine` is the CPU path (:func:`skstein.discrepancy.stein_sums_and_forms`).
:class:`ArrayAPIEngine` computes with the namespace of its arrays (CuPy, PyTorch,
``array-api-strict``; scikit-learn's ``array_api_dispatch``), on their device, by dense
array algebra (:func:`skstein._xp_stein.xp_sums_and_forms`). It holds no module: the
namespace is read from the arrays at each call, so a fitted estimator pickles.
The discrete tests have their own estimator-level path (:mod:`skstein.gof._discrete`).
"""

import numpy as np

from ._validation import check_samples, evaluate_score
from ._xp import namespace_of, to_host
from ._xp_stein import xp_check_samples, xp_evaluate_score, xp_sums_and_forms
from .discrepancy import DEFAULT_MAX_MEMORY, stein_sums_and_forms

__all__ = ["NumbaEngine", "ArrayAPIEngine", "select_engine"]


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

    def sums_and_forms(self, X, S, kernels, V, *, max_memory=DEFAULT_MAX_MEMORY):
        return stein_sums_and_forms(X, S, kernels, V, max_memory=max_memory)


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
        return xp.asarray(np.asarray(A, dtype=np.float64), device=array_api_compat.device(X))

    def sums_and_forms(self, X, S, kernels, V, *, max_memory=DEFAULT_MAX_MEMORY):
        return xp_sums_and_forms(X, S, kernels, V, max_memory=max_memory)


def select_engine(X, name="X"):
    """The engine for data ``X``: :class:`ArrayAPIEngine` for arrays of another library
    than NumPy under scikit-learn's ``array_api_dispatch``, else :class:`NumbaEngine`."""
    return NumbaEngine() if namespace_of(X, name) is None else ArrayAPIEngine()

