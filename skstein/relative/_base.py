"""Shared parts of the relative tests: validation and the training split."""

import numpy as np

from .._docstrings import fill_doc
from .._estimator import RandomStateTagsMixin, model_dim
from .._validation import validate_samples
from .._xp import host_single_blas

__all__ = ["RelativeMixin", "check_train_size", "train_rows"]


@fill_doc
class RelativeMixin(RandomStateTagsMixin):
    _required_parameters = ["model_p", "model_q"]

    def _check_model_dims(self):
        n_features = getattr(self, "n_features_in_", None)
        for name in ("model_p", "model_q"):
            dim = model_dim(getattr(self, name))
            if dim is not None and n_features is not None and dim != n_features:
                raise ValueError(
                    f"X has {n_features} features but {name} is a distribution on {dim} "
                    "dimensions."
                )

    def _validate_X(self, X, reset):
        X = validate_samples(self, X, reset=reset, min_samples=3)
        if reset:
            self._check_model_dims()
        return X

    @host_single_blas
    def score(self, X, y=None):
        r"""The studentised difference :math:`\sqrt n\,\hat D_n / \hat\sigma` on ``X``.

        The ``zscore`` of :meth:`test`. Positive values favour Q, negative values P;
        0.0 when the variance is degenerate. ``GridSearchCV`` over ``bandwidth`` or
        ``kernel`` therefore picks the kernel under which Q's advantage is most
        significant. For an aggregated test, the largest z-score of the collection.

        %(sample_y_parameters)s

        Returns
        -------
        float
        """
        return self.test(X).zscore


def check_train_size(train_size):
    if isinstance(train_size, bool) or not isinstance(train_size, (int, float, np.floating)) \
            or not 0.0 < float(train_size) < 1.0:
        raise ValueError(f"train_size must be a float in (0, 1), got {train_size!r}.")
    return float(train_size)


def train_rows(n, train_size):
    """Rows of ``n`` used to learn maxSKSD directions (at least 4, leaving at least 4)."""
    n_train = int(round(check_train_size(train_size) * n))
    if n_train < 4 or n - n_train < 4:
        raise ValueError(f"train_size={train_size} leaves fewer than 4 rows for learning the "
                         f"directions or for the test (n_samples={n}).")
    return n_train
