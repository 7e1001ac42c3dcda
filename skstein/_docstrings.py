"""Descriptions that several docstrings share, each written once.

A docstring names a shared description by a line of its own, ``%(name)s``, indented
where the description goes; :func:`fill_doc` replaces that line by the description,
each of its lines at that indentation. Nothing else in the docstring changes, so its
other ``%`` signs and braces need no escaping. A name that is not here fails at import.
"""

import inspect
import re

__all__ = ["fill_doc"]

_SAMPLE_PARAMETERS = """\
Parameters
----------
X : array-like of shape (n_samples, n_features)
    The sample."""

_SHARED = {
    # the Parameters section of a model's method of the points X (more may follow)
    "points_parameters": """\
Parameters
----------
X : array-like of shape (n, dim)
    Points, one per row.""",
    # the draws of a model's sampler
    "random_state_draws": """\
random_state : None, int or numpy.random.Generator, default=None
    Seed or generator of the draws.""",
    # the Parameters sections of an estimator's methods of a sample
    "sample_parameters": _SAMPLE_PARAMETERS,
    "sample_y_parameters": _SAMPLE_PARAMETERS + """
y : None
    Ignored; present for the scikit-learn API.""",
    # the model and the data of a training loss's gradient in the model's parameters
    "model_batch_parameters": """\
model : object
    With ``grad_logpdf(X)`` and ``grad_logpdf_vjp(X, V)``.
X : array-like of shape (n_samples, n_features)
    A batch of data.""",
    # the model and the one kernel of a Stein statistic's function
    "stein_kernel_parameters": """\
model : distribution or callable
    The model's score, as in :func:`ksd`.
kernel : {"rbf", "imq"}, default="rbf"
    Base kernel.
bandwidth : float or "median", default="median"
    Kernel bandwidth.
kernel_params : dict, default=None
    Extra kernel parameters (``{"beta": -0.5}`` for IMQ).
random_state : None, int or Generator
    Only used by the median heuristic's subsample when ``n > 2000``.""",
}

_PLACEHOLDER = re.compile(r"^(?P<indent>[ ]*)%\((?P<name>\w+)\)s[ ]*$", re.MULTILINE)


def _fill(doc):
    def lines(match):
        indent = match.group("indent")
        return "\n".join(indent + line if line else line
                         for line in _SHARED[match.group("name")].splitlines())

    return _PLACEHOLDER.sub(lines, doc)


def fill_doc(obj):
    """Fill the shared descriptions into the docstring of ``obj``; returns ``obj``.

    For a class, also into the docstrings of the functions (methods, static and class
    methods) its body defines.
    """
    if isinstance(obj, type):
        for member in vars(obj).values():
            function = getattr(member, "__func__", member)  # static and class methods
            if inspect.isfunction(function) and function.__doc__:
                function.__doc__ = _fill(function.__doc__)
    if obj.__doc__:
        obj.__doc__ = _fill(obj.__doc__)
    return obj
