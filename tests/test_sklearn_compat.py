"""scikit-learn's estimator checks on configured instances.

Expected failures, documented:

* ``MMDGOFTest`` compares the data with samples of its model, whose dimension is fixed
  (here 2): the checks that feed data of another width get the ValueError that such data
  must raise. ``test_mmd_checks_pass_at_their_width`` runs each of them again with a
  model of the width the check uses, where it passes.
* otherwise none; a check that cannot apply to a test with no predict / transform is
  skipped by scikit-learn itself.
"""

import numpy as np
import pytest
from sklearn.utils.estimator_checks import estimator_checks_generator, parametrize_with_checks

from conftest import std_normal_score
from skstein import FSSDTest, KSDTest, LinearKSDTest, MMDGOFTest, RFSDTest
from skstein.distributions import Gaussian

ESTIMATORS = [
    KSDTest(std_normal_score, n_bootstrap=50, random_state=0),
    KSDTest(std_normal_score, kernel="imq", bandwidth=1.0, statistic="v",
            bootstrap="rademacher", n_bootstrap=50, random_state=0),
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
]

_WIDTH = ("the model's samples have a fixed dimension (2); data of another width is "
          "rejected, as it must be (see test_mmd_checks_pass_at_their_width)")
MMD_WIDTH_CHECKS = [
    "check_fit_score_takes_y", "check_dont_overwrite_parameters",
    "check_n_features_in_after_fitting", "check_positive_only_tag_during_fit",
    "check_estimators_dtypes", "check_dtype_object", "check_pipeline_consistency",
    "check_estimators_nan_inf", "check_estimators_pickle", "check_f_contiguous_array_estimator",
    "check_methods_sample_order_invariance", "check_methods_subset_invariance",
    "check_fit2d_1feature", "check_dict_unchanged", "check_fit2d_predict1d",
]


def _expected_failures(est):
    if isinstance(est, MMDGOFTest):
        return {name: _WIDTH for name in MMD_WIDTH_CHECKS}
    return {}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failures)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _checks_named(name, estimator):
    for est, check in estimator_checks_generator(estimator, legacy=True):
        if getattr(check, "func", check).__name__ == name:
            yield est, check


@pytest.mark.parametrize("name", MMD_WIDTH_CHECKS)
def test_mmd_checks_pass_at_their_width(name):
    # each check runs at least once; every instance of it must pass for some width
    widths = (1, 2, 3, 4, 5, 10)
    probe = MMDGOFTest(Gaussian(np.zeros(2)), random_state=0)
    n_checks = sum(1 for _ in _checks_named(name, probe))
    assert n_checks >= 1
    for k in range(n_checks):
        errors = []
        for d in widths:
            est = MMDGOFTest(Gaussian(np.zeros(d)), n_permutations=50, random_state=0)
            est, check = list(_checks_named(name, est))[k]
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
