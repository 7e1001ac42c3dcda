"""A kernel that sees no pair of points never wins a bandwidth search."""

import warnings

import numpy as np
from sklearn.datasets import load_wine
from sklearn.model_selection import GridSearchCV

from skstein import KSDTest
from skstein.distributions import Gaussian
from skstein.kernels import RBF, blind_kernels


def test_blind_kernels_flags_each_kernel():
    X = np.random.default_rng(0).normal(size=(300, 4)) * 10.0
    blind, t = blind_kernels(X, [RBF(0.01), RBF(1.0), RBF(10.0)])
    np.testing.assert_array_equal(blind, [True, False, False])
    assert t > 0
    # identical rows: no pair to see, nothing is called blind
    blind, t = blind_kernels(np.ones((5, 2)), [RBF(1e-6)])
    assert not blind.any() and t is None


def test_blind_kernel_scores_minus_infinity():
    X = np.random.default_rng(1).normal(size=(200, 3)) * 50.0
    model = Gaussian(np.zeros(3), 2500.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # fit warns about the bandwidth
        assert KSDTest(model, bandwidth=0.01, random_state=0).score(X) == -np.inf
        # in a collection the blind bandwidths drop out of the maximum
        mixed = KSDTest(model, bandwidth=[0.01, 50.0], random_state=0).score(X)
    single = KSDTest(model, bandwidth=50.0, random_state=0).score(X)
    assert np.isfinite(mixed) and mixed == single


def test_grid_search_picks_a_seeing_bandwidth_on_raw_scales():
    # 13 features on their raw scales (proline in the thousands, hue around 1): at
    # bandwidths 0.3 and 1 the kernel is below 1e-12 of its peak between every two
    # wines; their power criterion used to be 0 while the others were negative, so the
    # blind kernel won the search
    X = load_wine().data
    model = Gaussian(X.mean(axis=0), np.cov(X.T))
    grid = [0.3, 1.0, 3.0, 10.0, 100.0, 500.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        search = GridSearchCV(KSDTest(model, bandwidth=1.0, random_state=0),
                              {"bandwidth": grid}).fit(X)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(scores[:2] == -np.inf)
    assert np.all(np.isfinite(scores[2:]))
    best = search.best_params_["bandwidth"]
    assert best >= 3.0
    assert not blind_kernels(X, [RBF(best)])[0][0]
