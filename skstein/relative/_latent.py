"""Scores of latent-variable models from posterior draws (the LKSD route)."""

import inspect

import numpy as np

from .._validation import (check_positive_int, evaluate_score, sklearn_model_hint,
                           warn_heavy_tails)

__all__ = ["MODEL_SCORES", "latent_score", "check_latent_model", "has_exact_score",
           "evaluate_model_score"]

#: How a model's score is obtained.
MODEL_SCORES = ("auto", "exact", "posterior")


def latent_score(model, X, n_posterior_samples=500, burn_in=200, random_state=None,
                 name="model"):
    r"""Score of a latent-variable model estimated from posterior draws.

    .. math::

        \hat s(x_i) = \frac1m \sum_{j=1}^m \nabla_x \log p(x_i \mid z_{ij}),

    with :math:`z_{ij}` the ``m`` posterior draws for :math:`x_i` that follow a
    burn-in of ``burn_in`` draws. A model whose ``sample_posterior`` accepts a
    ``burn_in`` keyword runs the burn-in itself (without storing it); otherwise
    ``burn_in + m`` draws are requested and the first ``burn_in`` discarded.

    Parameters
    ----------
    model : latent-variable distribution
        With ``grad_logpdf_conditional(X, Z)`` and ``sample_posterior(X, n_samples,
        random_state)`` (returning an array ``(n_samples, n, latent_dim)``).
    X : ndarray of shape (n, d)
    n_posterior_samples : int, default=500
        :math:`m`.
    burn_in : int, default=200
        Draws discarded first (for MCMC samplers; exact samplers need none).
    random_state : None, int or Generator
    name : str
        Name of the model in error messages.

    Returns
    -------
    ndarray of shape (n, d)
    """
    check_latent_model(model, name)
    m = check_positive_int(n_posterior_samples, "n_posterior_samples")
    burn_in = check_positive_int(burn_in, "burn_in", minimum=0)
    n = X.shape[0]
    if _accepts_keyword(model.sample_posterior, "burn_in"):
        draws = model.sample_posterior(X, m, random_state=random_state, burn_in=burn_in)
        first, expected = 0, m
    else:
        draws = model.sample_posterior(X, burn_in + m, random_state=random_state)
        first, expected = burn_in, burn_in + m
    draws = np.asarray(draws)
    if draws.ndim != 3 or draws.shape[:2] != (expected, n):
        raise ValueError(
            f"{name}.sample_posterior returned shape {draws.shape}; expected "
            f"({expected}, {n}, latent_dim)."
        )
    S = np.zeros(X.shape)
    for j in range(first, expected):
        S += model.grad_logpdf_conditional(X, draws[j])
    S /= m
    if S.shape != X.shape or not np.all(np.isfinite(S)):
        raise ValueError(
            f"the posterior-averaged score of {name} is not a finite array of shape {X.shape}."
        )
    warn_heavy_tails(S, name)
    return np.ascontiguousarray(S)


def _accepts_keyword(fn, keyword):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return keyword in params or any(p.kind is inspect.Parameter.VAR_KEYWORD
                                    for p in params.values())


def check_latent_model(model, name="model"):
    """Raise a TypeError naming ``name`` unless ``model`` has the latent-variable protocol.

    Parameters
    ----------
    model : object
        The model to check: it needs ``grad_logpdf_conditional(X, Z)`` and
        ``sample_posterior(X, n_samples, random_state)``.
    name : str, default="model"
        The argument's name in the error message.
    """
    missing = [m for m in ("grad_logpdf_conditional", "sample_posterior")
               if not callable(getattr(model, m, None))]
    if missing:
        raise TypeError(
            f"{name} must be a latent-variable model with grad_logpdf_conditional(X, Z) and "
            f"sample_posterior(X, n_samples, random_state) to use posterior scores; "
            f"{type(model).__name__} lacks {', '.join(missing)}." + sklearn_model_hint(model, name)
        )


def has_exact_score(model):
    return callable(getattr(model, "grad_logpdf", None)) or callable(model)


def evaluate_model_score(model, X, how, n_posterior_samples, burn_in, rng, name):
    """(scores, used_posterior) of one model on X."""
    if how == "auto":
        how = "exact" if has_exact_score(model) else "posterior"
    if how == "exact":
        return evaluate_score(model, X, name), False
    return latent_score(model, X, n_posterior_samples, burn_in, rng, name), True
