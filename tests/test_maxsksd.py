"""MaxSKSDTest: the estimator, its calibration and power."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from skstein import GOFTestResult, KSDTest, MaxSKSDTest, max_sksd
from skstein.directions import _Adam, _ascent_step, _first_start
from skstein.discrepancy import resolve_sliced_bandwidth, sliced_value_and_grad
from skstein.distributions import Gaussian, Laplace, gaussian_diffusion
from skstein.experiments import rejection_rate


def test_result_and_attributes():
    rng = np.random.default_rng(0)
    X = Laplace(5).rvs(300, random_state=rng)
    # the paper's Algorithm 1: one split, the sliced statistics alone
    test = MaxSKSDTest(Gaussian(np.zeros(5)), init="identity", cv=None, moment=False,
                       n_bootstrap=200, random_state=0)
    res = test.test(X)
    assert isinstance(res, GOFTestResult)
    assert res.n_samples == 240  # 0.2 of the sample learns the directions
    assert res.bandwidth.shape == (5,)
    assert res.method.startswith("maxSKSD-g") and res.labels is None
    assert not hasattr(test, "directions_")  # test() does not fit the estimator
    test.fit(X[:60])
    for name in ("directions_", "slices_", "bandwidth_", "candidates_", "n_iter_",
                 "n_features_in_"):
        assert hasattr(test, name)
    assert len(test.candidates_) == 1
    res2 = test.test(X[60:])
    assert res2.n_samples == 240
    assert res2.reject == (res2.pvalue <= res2.alpha)
    assert test.discrepancy(X[60:]) == pytest.approx(res2.statistic)
    expect = max_sksd(X[60:], test.model, directions=test.directions_, slices=test.slices_,
                      bandwidth=test.bandwidth_)
    assert res2.statistic == pytest.approx(expect, rel=1e-12)


@pytest.mark.parametrize("variant", ["g", "rg"])
def test_auto_search_aggregates_over_its_candidates(variant):
    X = Laplace(5).rvs(300, random_state=1)
    test = MaxSKSDTest(Gaussian(np.zeros(5)), variant=variant, moment=False, n_bootstrap=200,
                       random_state=0).fit(X[:100])
    names = [c[0] for c in test.candidates_]
    from skstein.directions import AUTO_STARTS

    assert names == list(AUTO_STARTS[variant])
    best = [c for c in test.candidates_ if c[1] is test.directions_]
    assert len(best) == 1  # directions_ is one of the candidates
    res = test.test(X[100:])
    k = len(names)
    assert res.labels == tuple(names) and res.statistics.shape == (k,)
    assert f"aggregated over {k} direction sets" in res.method
    for (name, G, R, h), stat in zip(test.candidates_, res.statistics):
        assert stat == pytest.approx(max_sksd(X[100:], test.model, directions=G, slices=R,
                                              bandwidth=h), rel=1e-12)
    np.testing.assert_allclose(test.discrepancy(X[100:]), res.statistics, rtol=1e-12)
    assert res.reject == (res.pvalue <= 0.05) == bool(np.any(res.rejected))
    # with test bandwidth factors: candidates x factors statistics
    agg = test.set_params(test_bandwidth="aggregate", n_bandwidths=4).test(X[100:])
    assert agg.statistics.shape == (4 * k,) and agg.bandwidths.shape == (4 * k, 5)
    assert agg.labels[5] == "spectral, factor 1"


def test_same_seed_same_result():
    X = Laplace(4).rvs(200, random_state=1)
    a = MaxSKSDTest(Gaussian(np.zeros(4)), variant="rg", n_slices=2, init="random",
                    n_bootstrap=100, random_state=3).test(X)
    b = MaxSKSDTest(Gaussian(np.zeros(4)), variant="rg", n_slices=2, init="random",
                    n_bootstrap=100, random_state=3).test(X)
    assert a.statistic == b.statistic and a.pvalue == b.pvalue


def test_blockwise_bootstrap_matches_in_memory():
    X = Laplace(3).rvs(150, random_state=2)
    test = MaxSKSDTest(Gaussian(np.zeros(3)), n_bootstrap=100, random_state=0).fit(X[:50])
    a = test.test(X[50:])
    b = clone(test).set_params(max_memory=8 * 100 * 20)
    b.directions_, b.slices_, b.bandwidth_ = test.directions_, test.slices_, test.bandwidth_
    b.candidates_ = test.candidates_
    b.n_iter_, b.n_features_in_ = test.n_iter_, test.n_features_in_
    b = b.test(X[50:])
    assert a.statistic == pytest.approx(b.statistic, rel=1e-12)
    np.testing.assert_allclose(a.null_distribution, b.null_distribution, rtol=1e-9, atol=1e-15)


def test_v_statistic_and_rademacher():
    X = Laplace(3).rvs(200, random_state=3)
    for stat in ("u", "v"):
        for boot in ("multinomial", "rademacher"):
            res = MaxSKSDTest(Gaussian(np.zeros(3)), statistic=stat, bootstrap=boot,
                              n_bootstrap=100, random_state=0).test(X)
            assert 0 < res.pvalue <= 1


def test_clone_pickle():
    test = MaxSKSDTest(Gaussian(np.zeros(3)), variant="rg", n_slices=2, random_state=0)
    c = clone(test)
    assert c.get_params()["n_slices"] == 2
    X = Laplace(3).rvs(100, random_state=0)
    test.fit(X)
    t2 = pickle.loads(pickle.dumps(test))
    np.testing.assert_array_equal(t2.directions_, test.directions_)
    assert t2.score(X) == test.score(X)


def test_grid_search():
    X = Laplace(4).rvs(400, random_state=5)
    grid = GridSearchCV(MaxSKSDTest(Gaussian(np.zeros(4)), max_iter=5, random_state=0),
                        {"bandwidth": ["median", 0.3, 3.0], "kernel": ["rbf", "imq"]}, cv=2)
    grid.fit(X)
    assert grid.best_params_["bandwidth"] in ("median", 0.3, 3.0)
    rg = GridSearchCV(MaxSKSDTest(Gaussian(np.zeros(4)), variant="rg", max_iter=5,
                                  random_state=0), {"n_slices": [1, 2]}, cv=2)
    rg.fit(X)
    assert rg.best_params_["n_slices"] in (1, 2)


@pytest.mark.parametrize("params,match", [
    (dict(variant="h"), "variant"),
    (dict(kernel="gauss"), "kernel"),
    (dict(alpha=1.5), "alpha"),
    (dict(n_bootstrap=0), "n_bootstrap"),
    (dict(bootstrap="wild"), "bootstrap"),
    (dict(train_size=1.5), "train_size"),
    (dict(train_size=1), "train_size"),
    (dict(train_size="half"), "train_size"),
    (dict(learning_rate=-1.0), "learning_rate"),
    (dict(n_slices=7, variant="rg"), "n_slices"),
])
def test_validation(params, match):
    X = np.random.default_rng(0).standard_normal((40, 3))
    with pytest.raises((ValueError, TypeError), match=match):
        MaxSKSDTest(Gaussian(np.zeros(3)), **params).test(X)


def test_validation_of_data():
    test = MaxSKSDTest(Gaussian(np.zeros(3)))
    with pytest.raises(ValueError, match="features"):
        test.test(np.zeros((40, 2)))
    with pytest.raises(ValueError):
        test.test(np.full((40, 3), np.nan))
    with pytest.raises(ValueError, match="minimum of 4"):
        test.test(np.zeros((3, 3)) + np.arange(3))
    fitted = MaxSKSDTest(Gaussian(np.zeros(3))).fit(np.random.default_rng(0).normal(size=(30, 3)))
    with pytest.raises(ValueError, match="features"):
        fitted.test(np.zeros((40, 4)))


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["g", "rg"])
def test_calibration_under_null(variant):
    d, n, trials, alpha = 3, 100, 300, 0.05
    test = MaxSKSDTest(Gaussian(np.zeros(d)), variant=variant,
                       n_slices=2 if variant == "rg" else None, n_bootstrap=199,
                       max_iter=5)
    rr = rejection_rate(test, Gaussian(np.zeros(d)), n, n_trials=trials, random_state=0,
                        n_jobs=1)
    assert abs(rr.rate - alpha) <= 3 * np.sqrt(alpha * (1 - alpha) / trials)


@pytest.mark.slow
def test_power_where_ksd_fails():
    # diffusion in 50 dimensions: one coordinate has variance 0.3
    d, n, trials = 50, 500, 10
    model = Gaussian(np.zeros(d))
    data = gaussian_diffusion(d, 0.3)
    rr = rejection_rate(MaxSKSDTest(model, n_bootstrap=200), data, n, n_trials=trials,
                        random_state=1, n_jobs=1)
    assert rr.rate >= 0.9
    ksd = rejection_rate(KSDTest(model, n_bootstrap=200), data, n, n_trials=trials,
                         random_state=1, n_jobs=1)
    assert ksd.rate <= 0.5


def _stream(d=4, shift=0.0, n_batches=3, n=60, seed=0):
    rng = np.random.default_rng(seed)
    mean = np.zeros(d)
    mean[0] = shift
    return [rng.standard_normal((n, d)) + mean for _ in range(n_batches)]


@pytest.mark.parametrize("variant,orthogonal", [("g", True), ("rg", True), ("rg", False)])
def test_partial_fit_steps_match_a_manual_ascent(variant, orthogonal):
    # three partial_fit calls = three projected Adam steps with the median
    # bandwidths of the first and third batch (bandwidth_every=2), written out
    d, lr = 4, 0.05
    model = Gaussian(np.zeros(d))
    batches = _stream(d, shift=0.7)
    test = MaxSKSDTest(model, variant=variant, n_slices=None if variant == "g" else 2,
                       init="random", learning_rate=lr, orthogonal_slices=orthogonal,
                       bandwidth_every=2, random_state=3)
    for X in batches:
        test.partial_fit(X)
    # replay from the same random start
    rng = np.random.default_rng(3)
    G, R = _first_start("random", variant, test.directions_.shape[0], d, rng, orthogonal)
    opt_g, opt_r = _Adam(G.shape), (_Adam(R.shape) if variant == "rg" else None)
    for t, X in enumerate(batches):
        if t % 2 == 0:
            h = resolve_sliced_bandwidth(X @ G.T, "median")
        _, gG, gR = sliced_value_and_grad(X, -X, G, R, h, grad_slices=variant == "rg")
        G, R = _ascent_step(G, R, gG, gR if variant == "rg" else None, opt_g, opt_r, lr,
                            orthogonal)
    np.testing.assert_allclose(test.directions_, G, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(test.slices_, R, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(test.bandwidth_, h, rtol=1e-12)
    assert test.n_iter_ == 3
    np.testing.assert_allclose(np.linalg.norm(test.directions_, axis=1), 1.0)
    if variant == "rg" and orthogonal:
        np.testing.assert_allclose(test.slices_ @ test.slices_.T, np.eye(2), atol=1e-10)


def test_partial_fit_on_a_stream_finds_the_shifted_axis():
    # mean shifted along e_1 in 10-D: streaming steps turn a random slice towards it
    # and the held-out discrepancy grows far beyond the random start's
    d = 10
    model = Gaussian(np.zeros(d))
    batches = _stream(d, shift=0.5, n_batches=150, n=100, seed=1)
    X_test = _stream(d, shift=0.5, n_batches=1, n=400, seed=2)[0]
    test = MaxSKSDTest(model, variant="rg", n_slices=1, init="random", learning_rate=0.02,
                       random_state=0)
    start = clone(test).partial_fit(batches[0])
    for X in batches:
        test.partial_fit(X)
    assert test.n_iter_ == 150
    assert abs(test.slices_[0, 0]) > 0.9
    assert test.discrepancy(X_test) > 3 * start.discrepancy(X_test)
    assert test.test(X_test).reject


def test_partial_fit_warm_starts_from_fit_and_fit_resets():
    model = Gaussian(np.zeros(3))
    X = np.random.default_rng(0).standard_normal((80, 3))
    fitted = MaxSKSDTest(model, variant="rg", n_slices=2, init="random", max_iter=5,
                         random_state=0).fit(X)
    G = fitted.directions_.copy()
    fitted.partial_fit(X)
    assert fitted.n_iter_ == 1
    assert np.max(np.abs(fitted.directions_ - G)) < 0.05  # one small step from G
    fitted.fit(X)
    np.testing.assert_array_equal(fitted.directions_, G)
    fitted.partial_fit(X)
    assert fitted.n_iter_ == 1  # a fresh optimiser after fit


def test_partial_fit_reproducible_and_validated():
    model = Gaussian(np.zeros(3))
    batches = _stream(3)
    a, b = (MaxSKSDTest(model, init="random", random_state=5) for _ in range(2))
    for X in batches:
        a.partial_fit(X)
        b.partial_fit(X)
    np.testing.assert_array_equal(a.directions_, b.directions_)
    np.testing.assert_array_equal(a.bandwidth_, b.bandwidth_)
    with pytest.raises(ValueError, match="features"):
        a.partial_fit(np.zeros((10, 4)))
    with pytest.raises(TypeError, match="orthogonal_slices"):
        MaxSKSDTest(model, orthogonal_slices="no").partial_fit(batches[0])
    with pytest.raises(ValueError, match="learning_rate"):
        MaxSKSDTest(model, learning_rate=0.0).partial_fit(batches[0])
    with pytest.raises(ValueError, match="bandwidth"):
        MaxSKSDTest(model, bandwidth="scott").partial_fit(batches[0])
    fixed = MaxSKSDTest(model, bandwidth=0.7).partial_fit(batches[0])
    np.testing.assert_array_equal(fixed.bandwidth_, np.full(3, 0.7))


def test_test_bandwidth_replaces_the_learned_bandwidths_in_the_test_only():
    model = Gaussian(np.zeros(3))
    X = Laplace(3).rvs(200, random_state=4)
    learned = MaxSKSDTest(model, init="identity", moment=False, n_bootstrap=100,
                          random_state=0).fit(X[:60])
    fixed = clone(learned).set_params(test_bandwidth=0.5).fit(X[:60])
    np.testing.assert_array_equal(fixed.directions_, learned.directions_)
    np.testing.assert_array_equal(fixed.bandwidth_, learned.bandwidth_)
    res = fixed.test(X[60:])
    np.testing.assert_array_equal(res.bandwidth, np.full(3, 0.5))
    expect = max_sksd(X[60:], model, directions=fixed.directions_, slices=fixed.slices_,
                      bandwidth=0.5)
    assert res.statistic == pytest.approx(expect, rel=1e-12)
    assert fixed.discrepancy(X[60:]) == pytest.approx(expect, rel=1e-12)
    assert res.statistic != pytest.approx(learned.test(X[60:]).statistic)
    # "median": the heuristic on the tested sample's projections
    res = learned.set_params(test_bandwidth="median").test(X[60:])
    h = resolve_sliced_bandwidth(X[60:] @ learned.directions_.T, "median")
    np.testing.assert_allclose(res.bandwidth, h, rtol=1e-12)
    # also when test() learns the directions on a split, or on folds
    for cv in (None, 2):
        res = MaxSKSDTest(model, init="identity", test_bandwidth=[0.4, 0.5, 0.6], cv=cv,
                          moment=False, n_bootstrap=50, random_state=0).test(X)
        np.testing.assert_array_equal(res.bandwidth, [0.4, 0.5, 0.6])
    for bad, err in (("scott", ValueError), (-1.0, ValueError), ([1.0, 2.0], ValueError),
                     (True, TypeError)):
        with pytest.raises(err, match="test_bandwidth"):
            MaxSKSDTest(model, test_bandwidth=bad).test(X)
