"""Shared parts of the goodness-of-fit tests: parameter checks, validation."""

import numbers
import warnings
from contextlib import contextmanager

import numpy as np

from .._bootstrap import BOOTSTRAPS, aggregate_minp, bootstrap_threshold
from .._estimator import RandomStateTagsMixin, is_fitted, model_dim
from .._result import GOFTestResult
from .._validation import (
    check_alpha,
    check_choice,
    check_positive_int,
    resolve_score,
    validate_samples,
)
from ..kernels import KERNELS

__all__ = ["SteinTestMixin", "is_fitted", "aggregated_result", "split_sample",
           "split_indices", "train_count", "on_training_part"]


def aggregated_result(stats, null, method, bandwidths, *, alpha, weights=None,
                      independent=False, **fields):
    """The :class:`GOFTestResult` of the min-p aggregation of ``stats`` over ``null``.

    ``null`` has one column per statistic, all from the same bootstrap draws;
    ``bandwidths`` has one entry (or row) per statistic. The scalar fields are those
    of the most significant statistic; ``fields`` adds the common ones
    (``n_samples``, ``bootstrap``, ...). With ``weights`` (see
    :func:`~skstein._bootstrap.aggregate_minp`) ``pvalue_threshold`` holds each
    statistic's corrected level. ``independent``: the draws are computed apart from the
    statistics, and compare exactly (as in
    :func:`~skstein.gof._common.simulated_null_result`).
    """
    agg = aggregate_minp(stats, null, alpha, weights, snap_ties=not independent)
    k = agg.selected
    bandwidths = np.asarray(bandwidths, dtype=np.float64)
    return GOFTestResult(
        statistic=float(stats[k]),
        pvalue=agg.pvalue,
        threshold=bootstrap_threshold(null[:, k], agg.levels[k]),
        reject=bool(agg.pvalue <= alpha),
        alpha=float(alpha),
        method=method,
        bandwidth=float(bandwidths[k]) if bandwidths.ndim == 1 else bandwidths[k],
        null_distribution=null[:, k],
        bandwidths=bandwidths,
        statistics=stats,
        pvalues=agg.pvalues,
        rejected=agg.rejected,
        pvalue_threshold=agg.level if weights is None else agg.levels,
        **fields,
    )


class SteinTestMixin(RandomStateTagsMixin):
    """Parameter checks, data validation and bootstrap shared by the GOF tests."""

    _required_parameters = ["model"]
    #: the accepted values of ``bootstrap``
    _bootstraps = BOOTSTRAPS

    def _check_common_params(self):
        resolve_score(self.model, "model")
        check_choice(self.kernel, "kernel", KERNELS)
        check_choice(self.statistic, "statistic", ("u", "v"))
        check_choice(self.bootstrap, "bootstrap", self._bootstraps)
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
        X = validate_samples(self, X, reset=reset)
        if reset:
            self._check_model_dim()
        return X


def split_sample(X, train_size, rng):
    """Split the rows of ``X`` at random into a training and a test part.

    ``train_size`` is a fraction in (0, 1) or a number of rows; each part keeps at least
    2 rows, in their original order.
    """
    train, test = split_indices(X.shape[0], train_size, rng)
    return X[train], X[test]


def train_count(train_size, n):
    """``train_size`` (a fraction in (0, 1) of ``n`` rows, or a number) as a number of rows."""
    ts = train_size
    if isinstance(ts, bool) or not isinstance(ts, numbers.Real):
        raise TypeError(f"train_size must be a float in (0, 1) or an int, got {ts!r}.")
    if isinstance(ts, numbers.Integral):
        return int(ts)
    if not 0.0 < ts < 1.0:
        raise ValueError(f"train_size must be in (0, 1) as a fraction, got {ts!r}.")
    return int(round(ts * n))


def split_indices(n, train_size, rng):
    """The sorted row indices ``(train, test)`` of :func:`split_sample` for ``n`` rows."""
    ts = train_size
    n_train = train_count(ts, n)
    if n < 4 or n_train < 2 or n - n_train < 2:
        raise ValueError(
            f"train_size={ts!r} must leave at least 2 samples to learn on and 2 to test; "
            f"X has {n} samples.")
    perm = rng.permutation(n)
    return np.sort(perm[:n_train]), np.sort(perm[n_train:])


@contextmanager
def on_training_part(X_train, train_size):
    """Say where a ValueError raised while learning on the training part of a split
    comes from (its messages speak of the X they were given, the training part)."""
    try:
        yield
    except ValueError as exc:
        raise ValueError(f"learning on the train_size={train_size!r} part of X "
                         f"({X_train.shape[0]} samples): {exc}") from exc


class BaselineTestMixin(SteinTestMixin):
    """Checks shared by the linear-time and two-sample baselines (FSSD, RFSD, linear KSD,
    MMD): the model, the level, the number of null draws, the data's width."""

    def _check_baseline_params(self, n_draws=None, n_draws_name=None, needs_score=True):
        if needs_score:
            resolve_score(self.model, "model")
        check_alpha(self.alpha)
        if n_draws_name is not None:
            check_positive_int(n_draws, n_draws_name)
            if n_draws < int(np.ceil(1.0 / self.alpha)) - 1:
                warnings.warn(
                    f"{n_draws_name}={n_draws} is too small to ever reject at "
                    f"alpha={self.alpha}; use at least {int(np.ceil(1.0 / self.alpha)) - 1}.",
                    UserWarning,
                    stacklevel=3,
                )
        self._check_model_dim()
