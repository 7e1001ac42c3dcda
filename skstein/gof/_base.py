"""Shared parts of the goodness-of-fit tests: parameter checks, validation."""

import warnings

import numpy as np
from sklearn.utils.validation import validate_data

from .._bootstrap import BOOTSTRAPS
from .._estimator import RandomStateTagsMixin, is_fitted, model_dim
from .._validation import check_alpha, check_choice, check_positive_int, resolve_score
from ..kernels import KERNELS

__all__ = ["SteinTestMixin", "is_fitted"]


class SteinTestMixin(RandomStateTagsMixin):
    """Parameter checks, data validation and bootstrap shared by the GOF tests."""

    _required_parameters = ["model"]

    def _check_common_params(self):
        resolve_score(self.model, "model")
        check_choice(self.kernel, "kernel", KERNELS)
        check_choice(self.statistic, "statistic", ("u", "v"))
        check_choice(self.bootstrap, "bootstrap", BOOTSTRAPS)
        check_positive_int(self.n_bootstrap, "n_bootstrap")
        check_alpha(self.alpha)
        check_positive_int(self.max_memory, "max_memory")
        if self.n_bootstrap < int(np.ceil(1.0 / self.alpha)) - 1:
            warnings.warn(
                f"n_bootstrap={self.n_bootstrap} is too small to ever reject at "
                f"alpha={self.alpha}; use at least {int(np.ceil(1.0 / self.alpha)) - 1}.",
                UserWarning,
                stacklevel=3,
            )
        self._check_model_dim()

    def _check_model_dim(self):
        dim = model_dim(self.model)
        n_features = getattr(self, "n_features_in_", None)
        if dim is not None and n_features is not None and dim != n_features:
            raise ValueError(
                f"X has {n_features} features but model is a distribution on {dim} dimensions."
            )

    def _validate_X(self, X, reset):
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2, reset=reset)
        if reset:
            self._check_model_dim()
        return X
