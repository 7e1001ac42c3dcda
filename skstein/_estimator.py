"""Pieces shared by every estimator family (tests, relative tests, samplers)."""

from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

__all__ = ["is_fitted", "model_dim", "RandomStateTagsMixin", "discrete_input_tags"]


def is_fitted(est):
    """Whether ``est`` has fitted (trailing-underscore) attributes."""
    try:
        check_is_fitted(est)
    except NotFittedError:
        return False
    return True


def model_dim(model):
    """The dimension a model declares (``dim``), the width of a sample array, or None."""
    dim = getattr(model, "dim", None)
    if dim is None or callable(dim):
        shape = getattr(model, "shape", None)
        if shape is not None and len(shape) == 2 and not callable(model):
            return int(shape[1])
        return None
    return int(dim)


class RandomStateTagsMixin:
    """scikit-learn tags: an estimator without a fixed ``random_state`` is non-deterministic."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        return tags


def discrete_input_tags(tags, *models):
    """Mark ``tags`` for discrete data when every model is discrete (has ``n_values``).

    Discrete data are value ids: non-negative integers (scikit-learn's ``categorical``
    and ``positive_only`` input tags).
    """
    if models and all(getattr(m, "n_values", None) is not None for m in models):
        tags.input_tags.categorical = True
        tags.input_tags.positive_only = True
    return tags
