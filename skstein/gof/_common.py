"""What the baseline goodness-of-fit tests say once: their public methods and their results.

:class:`SampleTestMethods` is the scikit-learn face of a test of one sample
(``fit``, ``test``, ``discrepancy``, ``score``; :class:`FitMethod` alone for the
relative tests); each test implements the hooks and documents, in its class docstring,
what ``fit`` learns and what its result holds.
:func:`simulated_null_result` is the result of a test whose null distribution is a set
of simulated (bootstrap, permutation, Monte Carlo) draws of the statistic.
"""

import numpy as np

from .._bootstrap import bootstrap_pvalue, bootstrap_threshold
from .._docstrings import fill_doc
from .._result import GOFTestResult
from .._validation import check_samples, evaluate_score
from .._xp import host_single_blas
from ..distributions import rvs_kind

__all__ = ["FitMethod", "SampleTestMethods", "WHITEN_COVARIANCE", "check_criterion_samples",
           "check_monte_carlo", "model_sample", "simulated_null_result"]

#: The covariance of the whitened geometry of the KSD, maxSKSD and polynomial KSD tests
#: (:func:`~skstein.kernels.whitening`): the sample's own or its Ledoit-Wolf estimate,
#: whichever predicts held-out rows better. Ledoit-Wolf's alone swamps the small scales
#: of data whose scales differ by orders of magnitude (user guide, "Bandwidths").
WHITEN_COVARIANCE = "held-out"


def check_monte_carlo(est):
    """A TypeError when ``est.bootstrap`` is ``"monte-carlo"`` and its model cannot draw
    samples."""
    if est.bootstrap == "monte-carlo" and rvs_kind(est.model) is None:
        raise TypeError("bootstrap='monte-carlo' draws samples from the model, which needs "
                        f"an rvs(n, random_state) method; {type(est.model).__name__} has "
                        "none.")


def model_sample(model, n, d, rng):
    """``n`` validated rows of ``d`` features from ``model.rvs`` (seeded by ``rng``) and
    the model's scores there: the samples of a Monte Carlo null."""
    X0 = check_samples(model.rvs(int(n), random_state=rng), name="model.rvs(...)")
    if X0.shape[1] != d:
        raise ValueError(f"the samples of model have {X0.shape[1]} features, X has {d}.")
    if X0.shape[0] != n:
        raise ValueError(f"model.rvs({int(n)}) returned {X0.shape[0]} rows.")
    return X0, evaluate_score(model, X0, "model", check_tails=False)


def simulated_null_result(stat, null, *, alpha, method, n_samples, bootstrap, n_bootstrap,
                          bandwidth, factor=1.0, independent=False):
    """The :class:`GOFTestResult` of the statistic ``stat`` against the null draws ``null``.

    The p-value is :math:`(1 + \\#\\{\\text{null} \\ge \\text{stat}\\}) / (1 + B)` and the
    threshold the :math:`1 - \\alpha` quantile of the draws. ``factor`` multiplies the
    reported statistic, threshold and draws (a common rescaling that leaves the p-value
    and the decision unchanged). ``independent``: the draws are computed apart from the
    statistic (a Monte Carlo or simulated-limit null), so none ties with it by
    rounding, and the comparison is exact (:func:`~skstein._bootstrap.bootstrap_pvalue`).
    """
    pvalue = bootstrap_pvalue(stat, null, snap_ties=not independent)
    return GOFTestResult(
        statistic=float(stat) * factor,
        pvalue=float(pvalue),
        threshold=bootstrap_threshold(null, alpha) * factor,
        reject=bool(pvalue <= alpha),
        alpha=float(alpha),
        method=method,
        n_samples=n_samples,
        bootstrap=bootstrap,
        n_bootstrap=int(n_bootstrap),
        bandwidth=bandwidth,
        null_distribution=null * factor,
    )


def check_criterion_samples(X):
    """A ValueError naming ``X`` when a 2-D ``X`` has fewer than 3 rows: a power
    criterion divides by a standard deviation estimated from the rows' terms, which
    two rows leave at 0 (the criterion would be the statistic over the tiny constant
    that keeps the division finite). Other shapes are left to the validation."""
    shape = getattr(X, "shape", None)
    if shape is None:
        try:
            shape = np.shape(X)
        except (TypeError, ValueError):  # ragged: the validation says what is wrong
            return
    if len(shape) == 2 and shape[0] < 3:
        raise ValueError(f"X needs at least 3 samples for the power criterion, got "
                         f"{shape[0]}: with 2 its variance estimate is always 0.")


@fill_doc
class FitMethod:
    """``fit`` of a test whose fitting learns settings on a validated sample.

    A test provides ``_check_params()``, ``_validate_X(X, reset)`` (from
    :class:`~skstein.gof._base.SteinTestMixin` or the relative tests' mixin) and the
    hook ``_fit(X)``, which learns the settings on the validated sample and sets the
    fitted attributes.
    """

    @host_single_blas
    def fit(self, X, y=None):
        """Learn the test's settings on ``X`` (its fitted attributes).

        The test's other methods then use them instead of learning them again on the
        sample they are given; the class description says what is learned.

        %(sample_y_parameters)s

        Returns
        -------
        self
        """
        self._check_params()
        self._fit(self._validate_X(X, reset=True))
        return self


@fill_doc
class SampleTestMethods(FitMethod):
    """``fit``, ``test``, ``discrepancy`` and ``score`` of a goodness-of-fit test.

    Besides the hooks of :class:`FitMethod`, a test implements ``_test(X)``,
    ``_discrepancy(X)`` and ``_score(X)``: they take the sample as given and use the
    fitted settings, or learn them on the sample when the test is not fitted.
    """

    @host_single_blas
    def test(self, X):
        """Run the test on ``X``.

        %(sample_parameters)s

        Returns
        -------
        GOFTestResult
            The class description says what its fields hold for this test.
        """
        return self._test(X)

    @host_single_blas
    def discrepancy(self, X):
        """The test statistic on ``X``.

        %(sample_parameters)s

        Returns
        -------
        float or ndarray
            The statistic; a test that aggregates several statistics gives their array
            (the class description says in which order).
        """
        return self._discrepancy(X)

    @host_single_blas
    def score(self, X, y=None):
        """Power criterion of the test on ``X``: higher means more power.

        The statistic over an estimate of its standard deviation under the alternative
        (the class description gives the formula), so that ``GridSearchCV`` picks the
        most powerful settings.

        %(sample_y_parameters)s

        Returns
        -------
        float
        """
        check_criterion_samples(X)
        return self._score(X)
