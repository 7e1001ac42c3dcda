"""scikit-learn's estimator checks on configured instances of every public estimator.

Every class of skstein that derives from scikit-learn's ``BaseEstimator`` is here: the
goodness-of-fit tests (``KSDTest`` with a continuous and with a discrete model,
``MaxSKSDTest`` in both variants, ``PerturbedKSDTest``, ``PolynomialKSDTest``, ``FSSDTest``,
``LinearKSDTest``, ``RFSDTest``, ``MMDGOFTest``), the relative tests (``RelativeKSDTest``
with the KSD, the maxSKSD and a discrete operator, ``RelativeMMDTest``), the samplers (``SVGD``,
``SlicedSVGD``), the regressor ``BNNRegressor`` and the training losses of
:mod:`skstein.learning` (``KSDLoss``, ``MaxSKSDLoss``). ``SampleRanking`` is a result,
not an estimator. Each instance is configured small (few bootstrap draws, few
iterations) so that the module runs in about a minute.

Expected failures, documented (scikit-learn adds ``check_array_api_input`` on NumPy data
when SciPy's Array API support is on, as tests/conftest.py sets; it fails for the same
reasons as the checks listed):

* ``MMDGOFTest`` and ``RelativeMMDTest`` compare the data with samples of their models,
  whose dimension is fixed (here 2): the checks that feed data of another width get the
  ValueError that such data must raise. ``test_mmd_checks_pass_at_their_width`` runs
  each of them again with models of the width the check uses, where it passes.
* ``KSDLoss`` and ``MaxSKSDLoss`` are estimators for their parameters only
  (``get_params``, ``set_params``, ``clone``): a loss has no ``fit``, it is evaluated
  batch by batch with ``value_and_grad(X, S)``, so every check that fits fails on the
  missing method. The checks that need no ``fit`` (repr, tags, cloning, the parameter
  checks) pass and are not excused.
* otherwise none; a check that cannot apply to a test with no predict / transform is
  skipped by scikit-learn itself.

The discrete tests declare scikit-learn's ``categorical`` and ``positive_only`` input
tags, so the checks feed them non-negative integer data (value ids); their model is
an independent categorical over 64 values that fits data of any width.
"""

import numpy as np
import pytest
from sklearn.utils.estimator_checks import estimator_checks_generator, parametrize_with_checks

from conftest import std_normal_score
from skstein import (
    SVGD,
    BNNRegressor,
    FSSDTest,
    KSDTest,
    LinearKSDTest,
    MaxSKSDTest,
    MMDGOFTest,
    PerturbedKSDTest,
    PolynomialKSDTest,
    RelativeKSDTest,
    RelativeMMDTest,
    RFSDTest,
    SlicedSVGD,
)
from skstein.distributions import Gaussian
from skstein.learning import KSDLoss, MaxSKSDLoss


def shifted_normal_score(X):
    """Score of N(0.5, I) in any dimension."""
    return 0.5 - np.asarray(X, dtype=np.float64)


class WidthFreeNormal:
    """N(0, I) in any dimension, with its log density (up to a constant) and score."""

    def logpdf(self, X):
        return -0.5 * np.sum(np.asarray(X, dtype=np.float64) ** 2, axis=1)

    def grad_logpdf(self, X):
        return -np.asarray(X, dtype=np.float64)


class WidthFreeCategorical:
    """Independent coordinates, each categorical on {0, ..., 63} with p(v) ∝ v + 1.

    Declares no ``dim``, so it is a model for data of any width.
    """

    n_values = 64

    def __init__(self, slope=1.0):
        self.slope = slope

    def log_ratio(self, X, shift):
        X = np.asarray(X, dtype=np.int64)
        logp = np.log1p(self.slope * np.arange(self.n_values))
        return logp[(X + shift) % self.n_values] - logp[X]


ESTIMATORS = [
    KSDTest(std_normal_score, n_bootstrap=50, random_state=0),
    KSDTest(std_normal_score, kernel="imq", bandwidth=1.0, statistic="v",
            bootstrap="rademacher", n_bootstrap=50, random_state=0),
    KSDTest(WidthFreeCategorical(), n_bandwidths=3, n_bootstrap=50, random_state=0),
    MaxSKSDTest(std_normal_score, variant="g", max_iter=3, n_bootstrap=50, random_state=0),
    MaxSKSDTest(std_normal_score, variant="rg", n_slices=2, init="random", max_iter=3,
                n_bootstrap=50, random_state=0),
    PerturbedKSDTest(WidthFreeNormal(), n_steps=2, n_starts=3, n_bootstrap=50, random_state=0),
    PolynomialKSDTest(std_normal_score, n_bootstrap=50, random_state=0),
    PolynomialKSDTest(std_normal_score, degree=1, whiten=True, n_bootstrap=50, random_state=0),
    FSSDTest(std_normal_score, n_locations=3, n_simulate=50, random_state=0),
    FSSDTest(std_normal_score, n_locations=2, optimize=True, max_iter=5, kernel="imq",
             n_simulate=50, random_state=0),
    LinearKSDTest(std_normal_score, random_state=0),
    RFSDTest(std_normal_score, feature="l1-imq", n_features=3, n_simulate=50, random_state=0),
    RFSDTest(std_normal_score, feature="l2-sechexp", n_features=3, n_simulate=50,
             random_state=0),
    RFSDTest(std_normal_score, feature="rff-cauchy", n_features=3, n_simulate=50,
             random_state=0),
    MMDGOFTest(Gaussian(np.zeros(2)), n_permutations=50, random_state=0),
    RelativeKSDTest(std_normal_score, shifted_normal_score, n_bandwidths=3, random_state=0),
    RelativeKSDTest(std_normal_score, shifted_normal_score, discrepancy="maxsksd",
                    bandwidth="median", random_state=0),
    RelativeKSDTest(WidthFreeCategorical(), WidthFreeCategorical(2.0), n_bandwidths=3,
                    random_state=0),
    RelativeMMDTest(Gaussian(np.zeros(2)), Gaussian(np.ones(2)), random_state=0),
    SVGD(std_normal_score, n_iter=5, random_state=0),
    SlicedSVGD(std_normal_score, n_iter=5, random_state=0),
    BNNRegressor(n_hidden=10, n_particles=5, n_epochs=20, step_size=1e-2, random_state=0),
    KSDLoss(),
    MaxSKSDLoss(random_state=0),
]

_WIDTH = ("the models' samples have a fixed dimension (2); data of another width is "
          "rejected, as it must be (see test_mmd_checks_pass_at_their_width)")
MMD_WIDTH_CHECKS = [
    "check_fit_score_takes_y", "check_dont_overwrite_parameters",
    "check_n_features_in_after_fitting", "check_positive_only_tag_during_fit",
    "check_estimators_dtypes", "check_dtype_object", "check_pipeline_consistency",
    "check_estimators_nan_inf", "check_estimators_pickle", "check_f_contiguous_array_estimator",
    "check_methods_sample_order_invariance", "check_methods_subset_invariance",
    "check_fit2d_1feature", "check_dict_unchanged", "check_fit2d_predict1d",
    "check_array_api_input",
]

_NO_FIT = ("a loss has no fit: it is evaluated batch by batch with value_and_grad(X, S); "
           "it is an estimator for get_params / set_params / clone only")
LOSS_FIT_CHECKS = [
    "check_estimators_overwrite_params", "check_dont_overwrite_parameters",
    "check_estimators_fit_returns_self", "check_readonly_memmap_input",
    "check_n_features_in_after_fitting", "check_positive_only_tag_during_fit",
    "check_estimators_dtypes", "check_complex_data", "check_dtype_object",
    "check_estimators_empty_data_messages", "check_pipeline_consistency",
    "check_estimators_nan_inf", "check_estimator_sparse_tag", "check_estimator_sparse_array",
    "check_estimator_sparse_matrix", "check_estimators_pickle",
    "check_f_contiguous_array_estimator", "check_methods_sample_order_invariance",
    "check_methods_subset_invariance", "check_fit2d_1sample", "check_fit2d_1feature",
    "check_dict_unchanged", "check_fit_idempotent", "check_fit_check_is_fitted",
    "check_n_features_in", "check_fit1d", "check_fit2d_predict1d", "check_array_api_input",
]


def _expected_failures(est):
    if isinstance(est, (MMDGOFTest, RelativeMMDTest)):
        return {name: _WIDTH for name in MMD_WIDTH_CHECKS}
    if isinstance(est, (KSDLoss, MaxSKSDLoss)):
        return {name: _NO_FIT for name in LOSS_FIT_CHECKS}
    return {}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failures)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _checks_named(name, estimator):
    for est, check in estimator_checks_generator(estimator, legacy=True):
        if getattr(check, "func", check).__name__ == name:
            yield est, check


@pytest.mark.parametrize("loss", [KSDLoss(), MaxSKSDLoss(random_state=0)], ids=repr)
@pytest.mark.parametrize("name", LOSS_FIT_CHECKS)
def test_loss_checks_fail_only_for_want_of_fit(loss, name):
    # every excused check fails on the missing fit (an AttributeError somewhere in the
    # chain, or check_is_fitted refusing an object without fit), not for another reason
    assert not hasattr(loss, "fit")
    checks = list(_checks_named(name, loss))
    assert checks
    for est, check in checks:
        with pytest.raises((AttributeError, AssertionError, TypeError)) as info:
            check(est)
        chain, exc = [], info.value
        while exc is not None:
            chain.append(exc)
            exc = exc.__cause__ or exc.__context__
        assert any(isinstance(e, AttributeError) and "'fit'" in str(e)
                   or isinstance(e, TypeError) and "not an estimator instance" in str(e)
                   for e in chain), chain


def _width_models(cls, d):
    if cls is MMDGOFTest:
        return MMDGOFTest(Gaussian(np.zeros(d)), n_permutations=50, random_state=0)
    return RelativeMMDTest(Gaussian(np.zeros(d)), Gaussian(np.ones(d)), random_state=0)


@pytest.mark.parametrize("cls", [MMDGOFTest, RelativeMMDTest])
@pytest.mark.parametrize("name", MMD_WIDTH_CHECKS)
def test_mmd_checks_pass_at_their_width(cls, name):
    # each check runs at least once; every instance of it must pass for some width
    widths = (1, 2, 3, 4, 5, 10)
    n_checks = sum(1 for _ in _checks_named(name, _width_models(cls, 2)))
    assert n_checks >= 1
    for k in range(n_checks):
        errors = []
        for d in widths:
            est, check = list(_checks_named(name, _width_models(cls, d)))[k]
            try:
                check(est)
                break
            except (ValueError, AssertionError) as exc:
                # only a width mismatch (maybe wrapped by the check) moves on to the next width
                cause = exc if isinstance(exc, ValueError) else exc.__cause__
                if not isinstance(cause, ValueError) or "features" not in str(cause):
                    raise
                errors.append(str(cause))
        else:
            pytest.fail(f"{name} failed at every width {widths}: {errors}")
