"""scikit-learn's estimator checks on configured instances.

Expected failures, documented:

* none so far; a check that cannot apply to a test with no predict / transform is
  skipped by scikit-learn itself.
"""

from sklearn.utils.estimator_checks import parametrize_with_checks

from conftest import std_normal_score
from skstein import KSDTest

ESTIMATORS = [
    KSDTest(std_normal_score, n_bootstrap=50, random_state=0),
    KSDTest(std_normal_score, kernel="imq", bandwidth=1.0, statistic="v",
            bootstrap="rademacher", n_bootstrap=50, random_state=0),
]
EXPECTED_FAILURES = {}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=lambda est: EXPECTED_FAILURES)
def test_sklearn_compatible(estimator, check):
    check(estimator)
