"""Input validation shared by the public entry points.

Every check raises at the boundary with a message that names the argument.
"""

import numbers
import os
import re
import sys
import warnings
from contextlib import contextmanager

import numpy as np
from scipy import sparse
from sklearn.utils.validation import check_array, validate_data


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def caller_stacklevel():
    """The ``stacklevel`` that points a warning at the user's line.

    For a warning issued by the calling function: the first frame outside the package.
    """
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


__all__ = [
    "named_errors",
    "refuse_complex",
    "check_samples",
    "check_matrix_shape",
    "validate_samples",
    "check_alpha",
    "check_positive_float",
    "check_positive_int",
    "check_choice",
    "check_model_dim",
    "check_whiten",
    "check_no_whiten",
    "check_bandwidth_rule",
    "resolve_score",
    "evaluate_score",
    "HeavyTailWarning",
]


class HeavyTailWarning(UserWarning):
    """The scores look too heavy-tailed for the kernel Stein discrepancy.

    The KSD needs ``E_q ||s_p(x)||^2 < inf`` (the Riesz / moment condition of
    Liu, Lee & Jordan 2016 and Chwialkowski et al. 2016). When the sample's
    squared score norms look like a distribution with an infinite mean (e.g.
    Cauchy data tested against a Gaussian model), the statistic and its
    bootstrap are dominated by a handful of points and the test is unreliable.
    """


def _mentions(message, name):
    """Whether ``message`` names the argument ``name`` (as a word, not inside another)."""
    return re.search(r"(?<![\w])" + re.escape(name) + r"(?![\w])", message) is not None


@contextmanager
def named_errors(name):
    """Re-raise a ValueError / TypeError whose message does not name ``name`` with it.

    scikit-learn's array checks say what is wrong ("Found array with 1 sample(s)...",
    "could not convert string to float") but not always which argument it is.
    """
    try:
        yield
    except (ValueError, TypeError) as exc:
        if _mentions(str(exc), name):
            raise
        cls = TypeError if isinstance(exc, TypeError) else ValueError
        raise cls(f"{name} is invalid: {exc}") from exc


def refuse_device_array(X, name="X"):
    """A ValueError naming ``name`` when ``X`` is an array of an Array API library other
    than NumPy (CuPy, PyTorch, ``array-api-strict``) under scikit-learn's
    ``array_api_dispatch``: the computations that validate their data with
    :func:`check_samples` run on the CPU, and scikit-learn's own check would fail with
    an error about a dtype. Without dispatch, such arrays are converted as scikit-learn
    converts them (a CPU tensor is read, a GPU tensor refused by its library)."""
    if X is None or isinstance(X, (np.ndarray, np.generic, list, tuple)) or sparse.issparse(X):
        return
    import sklearn

    if not sklearn.get_config().get("array_api_dispatch", False):
        return
    import array_api_compat

    if array_api_compat.is_array_api_obj(X) and not array_api_compat.is_numpy_array(X):
        library = array_api_compat.array_namespace(X).__name__.replace("array_api_compat.", "")
        raise ValueError(
            f"{name} is an array of {library} on device {array_api_compat.device(X)}, but "
            "this computation runs on the CPU only (the user guide's Performance page lists "
            f"what runs on a device): pass {name} as a NumPy array.")


def power_of_two_exponent(value, window):
    """``k`` with ``2**k`` nearest the magnitude ``value`` (``log2`` rounded) when the
    positive finite ``value`` lies outside ``[2**-window, 2**window]``, else 0 (also for
    0, inf and NaN). Scaling by ``2**-k`` brings such a magnitude to unit scale without
    a rounding error, and leaves magnitudes near one, and their numbers, alone: the
    guards and tolerances of a computation then act as at unit scale whatever the
    units of the data."""
    value = float(value)
    if not (np.isfinite(value) and value > 0) or 2.0**-window <= value <= 2.0**window:
        return 0
    return int(np.round(np.log2(value)))


def refuse_masked(X, name="X"):
    """A ValueError naming ``name`` when ``X`` is a masked array with masked entries:
    NumPy's conversion would keep the values under the mask, silently. A masked array
    without masked entries is read as its data."""
    if isinstance(X, np.ma.MaskedArray) and np.ma.count_masked(X):
        raise ValueError(
            f"{name} is a masked array with {np.ma.count_masked(X)} masked entries; "
            "missing values are not supported: drop those rows, or impute them (for "
            "example with sklearn.impute), before testing.")


def check_samples(X, name="X", min_samples=2):
    """Validate a sample matrix: 2-D, finite, float64, at least ``min_samples`` rows.

    Returns a C-ordered array (the same numbers give the same results bit for bit,
    whatever the layout they came in). Every error names ``name``; a device array
    under Array API dispatch is refused (:func:`refuse_device_array`), as is a masked
    array with masked entries (:func:`refuse_masked`).
    """
    if (type(X) is np.ndarray and X.dtype == np.float64 and X.ndim == 2
            and X.flags.c_contiguous and X.shape[0] >= min_samples and X.shape[1] >= 1):
        with np.errstate(over="ignore", invalid="ignore"):
            total = X.sum()
        if np.isfinite(total):
            # what check_array returns for such an array (X itself), without its
            # overhead (0.1 ms a call, a fifth of a Monte Carlo null's time on small
            # samples); a sum that is not finite (a NaN, an infinity, or an overflow)
            # takes the full check
            return X
    refuse_device_array(X, name)
    refuse_masked(X, name)
    with named_errors(name):
        return check_array(
            X,
            dtype=np.float64,
            order="C",
            ensure_2d=True,
            ensure_all_finite=True,
            ensure_min_samples=min_samples,
            input_name=name,
        )


def validate_samples(estimator, X, *, reset, min_samples=2, name="X", **params):
    """:func:`check_samples` through scikit-learn's ``validate_data`` (``n_features_in_``).

    ``reset=True`` records the number of features (in ``fit``); ``reset=False`` checks
    it when the estimator is fitted. Returns a C-ordered array; every error names
    ``name`` (the argument's name: ``X``, or ``X0`` for a sampler's particles).
    """
    refuse_device_array(X, name)
    refuse_masked(X, name)
    with named_errors(name):
        if name == "X":
            return validate_data(estimator, X, dtype=np.float64, order="C",
                                 ensure_min_samples=min_samples, reset=reset, **params)
        # another argument: scikit-learn's check speaks of "X" and, for NaN, of its own
        # estimators; check the array under its name, then the width and feature names
        A = check_array(X, dtype=np.float64, order="C", ensure_min_samples=min_samples,
                        input_name=name, **params)
        validate_data(estimator, X, reset=reset, skip_check_array=True)
        return A


def check_alpha(alpha, name="alpha"):
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"{name} must be a float in (0, 1), got {alpha!r}.")
    if not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"{name} must be in the open interval (0, 1), got {alpha!r}.")
    return float(alpha)


def check_positive_float(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive float, got {value!r}.")
    value = float(value)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite float, got {value!r}.")
    return value


def check_positive_int(value, name, minimum=1):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def check_bool(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}.")
    return bool(value)


def check_choice(value, name, choices):
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}.")
    return value


def check_bandwidth_rule(bandwidth, rules=("median", "aggregate")):
    """A string ``bandwidth`` must name one of ``rules`` (the error lists them all)."""
    if isinstance(bandwidth, str) and bandwidth not in rules:
        raise ValueError(f"bandwidth must be one of {', '.join(map(repr, rules))}, a positive "
                         f"float or an array of positive floats, got {bandwidth!r}.")


def check_whiten(whiten, auto=False):
    """The geometries a test's kernels act in, from its ``whiten`` parameter.

    ``False``: ``("euclidean",)``; ``True``: ``("whitened",)``; ``"aggregate"``:
    both, the Euclidean first. ``auto``: whether the estimator also takes ``"auto"``
    (resolved by the estimator itself; only named in the error here).
    """
    if isinstance(whiten, str) and whiten == "aggregate":
        return ("euclidean", "whitened")
    if isinstance(whiten, (bool, np.bool_)):
        return ("whitened",) if whiten else ("euclidean",)
    choices = "False, True, 'aggregate' or 'auto'" if auto else "False, True or 'aggregate'"
    raise ValueError(f"whiten must be {choices}, got {whiten!r}.")


def check_no_whiten(est):
    """Refuse ``whiten`` on an estimator whose model is discrete."""
    whiten = getattr(est, "whiten", False)
    if isinstance(whiten, str) and whiten == "auto":   # no covariance: the samples' own
        return
    if not (isinstance(whiten, (bool, np.bool_)) and not whiten):
        raise ValueError(f"whiten must be False or 'auto' for a discrete model, got "
                         f"{whiten!r}: its samples are categories, with no covariance to "
                         "whiten.")


#: The fitted scikit-learn estimators and scalers that
#: :func:`skstein.distributions.from_estimator` turns into models (named here, on the
#: ground floor, so that errors anywhere can point to it).
SUPPORTED_ESTIMATORS = ("GaussianMixture", "BayesianGaussianMixture", "KernelDensity", "PCA",
                        "FactorAnalysis", "BernoulliRBM", "LatentDirichletAllocation")
SUPPORTED_SCALERS = ("StandardScaler", "MinMaxScaler", "MaxAbsScaler", "RobustScaler")


def sklearn_model_hint(model, name="model"):
    """A sentence for errors about a model that is a scikit-learn estimator, else ``""``.

    The tests and samplers take a model object (a distribution or a callable), not an
    estimator: :func:`skstein.distributions.from_estimator` turns a fitted density
    estimator into its model. Taking the estimator itself would break in
    ``GridSearchCV``: scikit-learn's ``clone`` replaces an estimator given as a
    parameter by an unfitted copy.
    """
    # a class of scikit-learn's own, not one of its bases and mixins (which skstein's
    # estimators share)
    if not any(c.__module__.startswith("sklearn.")
               and not c.__module__.startswith(("sklearn.base", "sklearn.utils"))
               for c in type(model).__mro__):
        return ""
    cls = type(model).__name__
    return (f" {name} is a scikit-learn {cls}: pass the model it fitted, "
            f"skstein.distributions.from_estimator({name}), which supports fitted "
            f"{', '.join(SUPPORTED_ESTIMATORS)} and Pipelines of "
            f"{', '.join(SUPPORTED_SCALERS)} ending in one of them (the estimator itself "
            "would not survive scikit-learn's clone, which returns an unfitted copy).")


def resolve_score(model, name="model"):
    """Return the score function ``X -> grad log p(X)`` of a model.

    ``model`` is a distribution with a ``grad_logpdf`` method or a plain callable.
    """
    if model is None:
        raise TypeError(f"{name} must be a distribution with grad_logpdf or a callable; got None.")
    grad = getattr(model, "grad_logpdf", None)
    if callable(grad):
        return grad
    if callable(model):
        return model
    raise TypeError(
        f"{name} must be a distribution with a grad_logpdf(X) method or a callable "
        f"X -> grad log p(X); got {type(model).__name__}." + sklearn_model_hint(model, name)
    )


def check_model_dim(model, X, name="model", of="X"):
    """Raise unless the model's ``dim`` (when it has one) is the number of columns of X
    (the argument named ``of``)."""
    dim = getattr(model, "dim", None)
    if dim is not None and not callable(dim) and int(dim) != X.shape[1]:
        raise ValueError(
            f"{of} has {X.shape[1]} features but {name} is a distribution on "
            f"{int(dim)} dimensions."
        )


def refuse_complex(values, what, of="X"):
    """A ValueError naming ``what`` when a score returned complex ``values``: complex data
    are refused (as complex ``X`` is), not cast with the imaginary part lost."""
    if np.iscomplexobj(values):
        raise ValueError(f"{what} returned complex values (dtype {np.asarray(values).dtype}): "
                         f"complex data are not supported; it must return an array of real "
                         f"floats of the shape of {of}.")


def evaluate_score(model, X, name="model", check_tails=True, values=None, finite=True):
    """Evaluate and validate the model's score at the rows of ``X``.

    Returns a C-contiguous float64 array of the shape of ``X``; the score sees a copy
    of ``X``, so one that writes into its input changes nothing. Raises when the
    model's dimension or the score's shape disagree with ``X``, when the score is
    complex (as complex ``X`` is refused) or, with ``finite``, when a score is not
    finite; warns (:class:`HeavyTailWarning`) when the squared score norms look like
    they have an infinite mean. ``values``: the score's answer at ``X`` when the caller
    has it already (a stochastic score is then not called twice). ``finite=False``
    keeps values that are not finite (a search that steps back from them).
    """
    score = resolve_score(model, name)
    check_model_dim(model, X, name)
    if values is None:
        values = score(X.copy())  # a score that writes into its input cannot change X
    refuse_complex(values, f"the score of {name}")
    try:
        S = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"the score of {name} must return an array of floats of the shape of "
                        f"X; it returned {type(values).__name__}: {exc}") from exc
    if S.shape != X.shape:
        raise ValueError(
            f"the score of {name} returned an array of shape {S.shape} for X of shape "
            f"{X.shape}; it must return grad log p(x) for each row of X."
        )
    if finite and not np.all(np.isfinite(S)):
        bad = int(np.sum(~np.all(np.isfinite(S), axis=1)))
        raise ValueError(
            f"the score of {name} is not finite at {bad} of the {X.shape[0]} rows of X.")
    if check_tails:
        warn_heavy_tails(S, name)
    return np.ascontiguousarray(S)


def tail_index(values, min_values=100):
    """Hill estimate of the tail index of positive ``values`` (top sqrt(n) order statistics).

    Returns ``inf`` for fewer than ``min_values`` values (at least 11).
    """
    values = np.sort(np.asarray(values, dtype=np.float64))[::-1]
    n = values.size
    k = max(10, int(np.sqrt(n)))
    if n < max(min_values, k + 1) or values[k] <= 0:
        return np.inf
    mean_log = np.mean(np.log(values[:k] / values[k]))
    # tied top values (a score with few distinct norms, e.g. Laplace's): no tail at all
    return 1.0 / mean_log if mean_log > 0 else np.inf


def warn_heavy_tails(S, name="model"):
    """Warn when the squared score norms look like they have an infinite mean.

    Uses the Hill estimator of the tail index of ``||s_p(x_i)||^2`` over the top
    ``sqrt(n)`` order statistics (at least 10, only for ``n >= 100``). An index below
    1 means ``E ||s_p(x)||^2`` is infinite, so the moment condition of the KSD fails;
    the warning fires below 0.75, a margin for the estimator's noise, and only when
    the largest squared norm is more than a tenth of their sum (a single point
    dominates, as it does under an infinite mean; a cluster of large but finite-tailed
    scores, e.g. on a steep mixture component, does not). Measured over 300 seeded
    samples each: no warning for Gaussian or Laplace data under a Gaussian model at
    n = 100 to 2000 (at most 1%), a warning for 85-99% of Cauchy samples.
    """
    sq = np.einsum("ij,ij->i", S, S)
    alpha = tail_index(sq)
    if alpha < 0.75 and sq.max() > 0.1 * sq.sum():
        warnings.warn(
            f"the squared norms of the scores of {name} on X have an estimated tail index of "
            f"{alpha:.2f} and the largest is over a tenth of their sum: E||grad log p(x)||^2 "
            "may be infinite under the data, and in this sample a few extreme points "
            "dominate. The kernel Stein discrepancy needs this moment to be finite; the "
            "statistic and its p-value may not be reliable.",
            HeavyTailWarning,
            stacklevel=3,
        )
    return alpha


def check_matrix_shape(shape, name="X", of=""):
    """A ValueError naming ``name`` unless ``shape`` is 2-D with at least one column.

    For arrays that do not go through :func:`check_samples` (integer data, arrays of
    other Array API libraries); ``of`` ends the first message (``" of integers"``).
    """
    if len(shape) != 2:
        raise ValueError(f"{name} must be a 2-D array (n_samples, n_features){of}, got "
                         f"shape {shape}.")
    if shape[1] < 1:
        raise ValueError(f"{name} has 0 feature(s) (shape={shape}) while a minimum of 1 is "
                         "required.")


def check_discrete_samples(X, n_values=None, name="X", min_samples=2):
    """Validate discrete samples: a 2-D array of integers in ``[0, n_values[j])``.

    Integer and boolean arrays are accepted, float arrays whose values are whole
    numbers, and object arrays of such numbers. Raises a ValueError (or TypeError for a
    non-numeric array) that names ``name`` and says what was wrong.

    Parameters
    ----------
    X : array-like of shape (n, d)
        The samples.
    n_values : ndarray of int of shape (d,) or None, default=None
        Domain size of each coordinate; ``None`` checks only that the values are
        non-negative integers.
    name : str, default="X"
        Name used in error messages.
    min_samples : int, default=2
        Fewest rows accepted.

    Returns
    -------
    ndarray of int64 of shape (n, d)
        C-contiguous.
    """
    if X is None:
        raise TypeError(f"{name} must be an array of integers, got None.")
    if sparse.issparse(X):
        raise TypeError(f"{name} must be a dense array of integers (value ids), got a sparse "
                        "matrix; use one row of value ids per sample.")
    refuse_masked(X, name)
    try:
        A = np.asarray(X)
    except ValueError as exc:
        raise ValueError(f"{name} must be a 2-D array (n_samples, n_features) of integers: "
                         f"{exc}") from exc
    if A.dtype == object:
        try:
            A = A.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must hold integers (discrete values); an entry of the "
                            f"object array is not a number: {exc}") from exc
    if A.dtype == bool:
        A = A.astype(np.int64)
    if np.iscomplexobj(A):
        raise ValueError(f"Complex data not supported: {name} has dtype {A.dtype}; discrete "
                         "data are integers.")
    if not (np.issubdtype(A.dtype, np.integer) or np.issubdtype(A.dtype, np.floating)):
        raise TypeError(f"{name} must hold integers (discrete values), got dtype {A.dtype}.")
    check_matrix_shape(A.shape, name, " of integers")
    if A.shape[0] < min_samples:
        raise ValueError(f"{name} has {A.shape[0]} samples; at least {min_samples} are needed.")
    if np.issubdtype(A.dtype, np.floating):
        if not np.all(np.isfinite(A)):
            raise ValueError(f"{name} contains NaN or infinity; discrete data must be integers.")
        bad = A != np.round(A)
        if np.any(bad):
            i, j = np.argwhere(bad)[0]
            raise ValueError(f"{name} must hold integers (discrete values); {name}[{i}, {j}] = "
                             f"{float(A[i, j])!r} is not a whole number.")
        if np.any(np.abs(A) > np.iinfo(np.int64).max):
            raise ValueError(f"{name} holds values too large for value ids (int64).")
    A = np.ascontiguousarray(A, dtype=np.int64)
    if np.any(A < 0):
        i, j = np.argwhere(A < 0)[0]
        raise ValueError(f"Negative values in data passed to {name}: {name}[{i}, {j}] = "
                         f"{A[i, j]} is negative; discrete data are value ids in "
                         "{0, ..., L-1}.")
    if n_values is not None:
        over = A >= n_values[None, :]
        if np.any(over):
            i, j = np.argwhere(over)[0]
            raise ValueError(f"{name}[{i}, {j}] = {A[i, j]} is outside {{0, ..., "
                             f"{n_values[j] - 1}}}, the values of coordinate {j} of the model.")
    return A
