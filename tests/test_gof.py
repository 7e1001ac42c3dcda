import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from conftest import std_normal_score
from skstein import (FSSDTest, GOFTestResult, HeavyTailWarning, KSDTest, ksd,
                     ksd_power_criterion)
from skstein.distributions import (
    Categorical,
    Gaussian,
    Laplace,
    StudentT,
    gaussian_diffusion,
)
from skstein.experiments import rejection_rate


def _X(n=200, d=3, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d))


def test_result_fields_and_decision_rule():
    X = Laplace(2).rvs(300, random_state=1)
    res = KSDTest(Gaussian(np.zeros(2)), bandwidth="median", n_bootstrap=500,
                  random_state=0).test(X)
    assert isinstance(res, GOFTestResult)
    assert res.n_samples == 300 and res.n_bootstrap == 500 and res.alpha == 0.05
    assert res.null_distribution.shape == (500,) and not res.null_distribution.flags.writeable
    assert res.reject == (res.pvalue <= res.alpha) == (res.statistic > res.threshold)
    assert 1 / 501 <= res.pvalue <= 1
    assert "null_distribution" not in repr(res)
    assert res.method == "KSD (rbf, u-statistic, multinomial bootstrap)"
    with pytest.raises(Exception):
        res.pvalue = 0.5


def test_statistic_matches_functional_api_and_methods_agree():
    X = _X()
    test = KSDTest(std_normal_score, kernel="imq", bandwidth=1.2, random_state=0)
    res = test.test(X)
    assert res.statistic == pytest.approx(ksd(X, std_normal_score, kernel="imq", bandwidth=1.2))
    assert test.discrepancy(X) == pytest.approx(res.statistic)
    assert test.fit(X).score(X) == pytest.approx(
        ksd_power_criterion(X, std_normal_score, kernel="imq", bandwidth=1.2))


def test_fit_resolves_median_bandwidth_and_test_uses_it():
    X, Y = _X(seed=0), _X(seed=1) * 3
    test = KSDTest(std_normal_score, bandwidth="median", random_state=0).fit(X)
    assert test.bandwidth_ == pytest.approx(np.median(
        [np.linalg.norm(X[i] - X[j]) for i in range(200) for j in range(i + 1, 200)]))
    assert test.n_features_in_ == 3
    assert test.test(Y).bandwidth == test.bandwidth_
    # unfitted: the bandwidth comes from the data under test
    assert KSDTest(std_normal_score, bandwidth="median",
                   random_state=0).test(Y).bandwidth != test.bandwidth_
    with pytest.raises(ValueError, match="features"):
        test.test(_X(d=4))


@pytest.mark.parametrize("statistic", ["u", "v"])
@pytest.mark.parametrize("bootstrap", ["multinomial", "rademacher"])
def test_same_seed_same_numbers(statistic, bootstrap):
    X = _X()
    kw = dict(statistic=statistic, bootstrap=bootstrap, n_bootstrap=200)
    a = KSDTest(std_normal_score, random_state=3, **kw).test(X)
    b = KSDTest(std_normal_score, random_state=3, **kw).test(X)
    c = KSDTest(std_normal_score, random_state=4, **kw).test(X)
    assert np.array_equal(a.null_distribution, b.null_distribution) and a.pvalue == b.pvalue
    assert not np.array_equal(a.null_distribution, c.null_distribution)


@pytest.mark.parametrize("statistic", ["u", "v"])
def test_blockwise_bootstrap_equals_in_memory(statistic):
    X = _X(150)
    a = KSDTest(std_normal_score, statistic=statistic, n_bootstrap=300, random_state=1).test(X)
    b = KSDTest(std_normal_score, statistic=statistic, n_bootstrap=300, random_state=1,
                max_memory=3 * 8 * 150 * 20).test(X)
    assert a.statistic == pytest.approx(b.statistic, rel=1e-10)
    # the forms' single-precision products are summed over other row blocks
    spread = np.std(a.null_distribution)
    np.testing.assert_allclose(a.null_distribution, b.null_distribution, atol=1e-5 * spread)
    assert a.pvalue == b.pvalue


@pytest.mark.slow
@pytest.mark.parametrize("bootstrap", ["multinomial", "rademacher"])
def test_type_one_error_is_calibrated(bootstrap):
    # R = 400 seeded null trials; |rate - alpha| <= 3 binomial standard deviations
    model = Gaussian(np.zeros(2))
    test = KSDTest(model, bootstrap=bootstrap, n_bootstrap=300)
    out = rejection_rate(test, model, 100, n_trials=400, random_state=11, n_jobs=1)
    assert abs(out.rate - 0.05) <= 3 * np.sqrt(0.05 * 0.95 / 400), out.rate


@pytest.mark.slow
def test_power_on_a_clear_alternative():
    # data N(0, diag(0.3, 1, 1)), model N(0, I_3), n = 300: power >= 0.9 over 50 trials
    model = Gaussian(np.zeros(3))
    out = rejection_rate(KSDTest(model, n_bootstrap=300), gaussian_diffusion(3, 0.3), 300,
                         n_trials=50, random_state=2, n_jobs=1)
    assert out.rate >= 0.9, out.rate


def test_sklearn_api_clone_params_pickle():
    test = KSDTest(Gaussian(np.zeros(3)), kernel="imq", bandwidth=2.0, random_state=0)
    params = test.get_params()
    assert params["kernel"] == "imq" and params["bandwidth"] == 2.0
    cloned = clone(test).set_params(bandwidth=3.0)
    assert cloned.bandwidth == 3.0 and test.bandwidth == 2.0
    X = _X()
    fitted = test.fit(X)
    again = pickle.loads(pickle.dumps(fitted))
    assert again.bandwidth_ == fitted.bandwidth_
    assert again.test(X).pvalue == fitted.test(X).pvalue


def test_grid_search_over_bandwidth_and_kernel_picks_the_powerful_test():
    # the discrepancy is visible at a small scale only; a tiny bandwidth sees it best
    X = gaussian_diffusion(2, 0.3).rvs(400, random_state=0)
    grid = GridSearchCV(KSDTest(Gaussian(np.zeros(2)), random_state=0),
                        {"bandwidth": [0.05, 0.5, 2.0, 20.0], "kernel": ["rbf", "imq"]}, cv=3)
    grid.fit(X)
    assert grid.best_params_["bandwidth"] in (0.5, 2.0)
    assert grid.best_estimator_.test(X).reject


def test_validation_errors_name_the_argument():
    X = _X(30, 2)
    m = std_normal_score
    cases = [
        (dict(alpha=1.5), ValueError, "alpha"),
        (dict(alpha="0.1"), TypeError, "alpha"),
        (dict(n_bootstrap=0), ValueError, "n_bootstrap"),
        (dict(n_bootstrap=2.5), TypeError, "n_bootstrap"),
        (dict(kernel="matern"), ValueError, "kernel"),
        (dict(statistic="w"), ValueError, "statistic"),
        (dict(bootstrap="wild"), ValueError, "bootstrap"),
        (dict(bandwidth=-1.0), ValueError, "bandwidth"),
        (dict(bandwidth="scott"), ValueError, "bandwidth"),
        (dict(kernel="rbf", kernel_params={"beta": -0.5}), ValueError, "kernel_params"),
        (dict(max_memory=0), ValueError, "max_memory"),
    ]
    for kw, err, word in cases:
        with pytest.raises(err, match=word):
            KSDTest(m, **kw).fit(X)
    with pytest.raises(TypeError, match="model"):
        KSDTest(None).fit(X)
    with pytest.raises(TypeError, match="model"):
        KSDTest(3.0).test(X)
    with pytest.raises(ValueError, match="dimensions"):
        KSDTest(Gaussian(np.zeros(3))).fit(X)
    with pytest.raises(ValueError, match="shape"):
        KSDTest(lambda Y: Y[:, :1]).test(X)
    with pytest.raises(ValueError, match="not finite"):
        KSDTest(lambda Y: np.where(Y > 1, np.inf, Y)).test(X)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        KSDTest(m).test(bad)
    with pytest.raises(ValueError, match="2D|2-D|Expected 2D"):
        KSDTest(m).test(X[:, 0])
    with pytest.raises(ValueError, match="minimum of 2"):
        KSDTest(m).test(X[:1])
    with pytest.warns(UserWarning, match="too small"):
        KSDTest(m, n_bootstrap=10).test(X)


def test_heavy_tails_warn_and_light_tails_do_not():
    model = Gaussian(np.zeros(2))
    cauchy = np.random.default_rng(0).standard_cauchy((500, 2))
    with pytest.warns(HeavyTailWarning, match="tail index"):
        KSDTest(model, n_bootstrap=100, random_state=0).test(cauchy)
    with warnings.catch_warnings():
        warnings.simplefilter("error", HeavyTailWarning)
        for seed in range(30):
            for data in (model, Laplace(2)):
                KSDTest(model, n_bootstrap=50, random_state=0).discrepancy(
                    data.rvs(500, random_state=seed))


def test_multinomial_bootstrap_warns_on_tiny_samples():
    model = Gaussian(np.zeros(2))
    X = np.random.default_rng(0).standard_normal((50, 2))
    with pytest.warns(UserWarning, match="n=10 < 50") as record:
        KSDTest(model, bootstrap="multinomial", n_bootstrap=100, random_state=0).test(X[:10])
    assert record[0].filename == __file__  # the caller's line, not the package's
    # every bootstrap path warns: the discrete tests at one bandwidth and aggregated
    categorical = Categorical(np.full((3, 4), 0.25))
    Xd = np.random.default_rng(0).integers(0, 4, size=(10, 3))
    for bandwidth in (1.0, "aggregate"):
        with pytest.warns(UserWarning, match="n=10 < 50"):
            KSDTest(categorical, bandwidth=bandwidth, bootstrap="multinomial",
                    n_bootstrap=100, random_state=0).test(Xd)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        KSDTest(model, bootstrap="multinomial", n_bootstrap=100, random_state=0).test(X)
        KSDTest(model, n_bootstrap=100, random_state=0).test(X[:10])  # the default: wild draws
        KSDTest(model, bootstrap="rademacher", n_bootstrap=100, random_state=0).test(X[:10])
    with pytest.warns(UserWarning, match="n=49 < 50"):
        KSDTest(model, bootstrap="multinomial", n_bootstrap=100, random_state=0).test(X[:49])


def test_scores_with_tied_norms_give_no_warning():
    # Laplace's score takes 2^D values: the largest squared norms tie, which once made
    # the tail-index estimate divide by zero
    X = Laplace(5).rvs(500, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = KSDTest(Laplace(5), n_bootstrap=100, random_state=0).test(X)
    assert np.isfinite(res.statistic) and 0 <= res.pvalue <= 1


@pytest.mark.parametrize("make", [
    lambda m: KSDTest(m, n_bootstrap=50, random_state=0),
    lambda m: KSDTest(m, bandwidth="median", n_bootstrap=50, random_state=0),
    lambda m: KSDTest(m, whiten="aggregate", n_bootstrap=50, random_state=0),
    lambda m: FSSDTest(m, random_state=0),
    lambda m: FSSDTest(m, optimize=True, random_state=0),
], ids=["ksd-aggregate", "ksd-median", "ksd-whiten", "fssd", "fssd-opt"])
def test_a_fitted_test_warns_on_data_its_kernels_cannot_see(rng, make):
    # bandwidths (and locations) fitted on one scale, X on a far larger one: statistic 0
    # and p-value 1 whatever X is; said, not silent. On X of the fitted scale: no warning
    model = Gaussian(np.zeros(3))
    X = rng.standard_normal((200, 3))
    test = make(model).fit(X)
    with pytest.warns(UserWarning, match="bandwidth_.*cannot see anything.*X lies"):
        res = test.test(X * 1e6)
    assert res.statistic == 0.0 and res.pvalue == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        test.test(X * 3.0)


def test_a_bandwidth_far_below_the_sample_distances_warns(rng):
    X = rng.laplace(size=(300, 2))
    model = Gaussian(np.zeros(2))
    # a float on the wrong scale: the RBF kernel underflows between every two points,
    # and the test returned statistic 0 and p-value 1 without a word
    with pytest.warns(UserWarning, match="bandwidth=1e-12 is far below the distances"):
        res = KSDTest(model, bandwidth=1e-12, random_state=0).test(X)
    assert res.statistic == 0.0 and res.pvalue == 1.0
    with pytest.warns(UserWarning, match="closest two of 300 are"):
        KSDTest(model, bandwidth=1.0, random_state=0).fit(X * 1e4)
    with pytest.warns(UserWarning, match=r"bandwidth \(from 0.0001 to 0.001\)"):
        KSDTest(model, bandwidth=[1e-4, 1e-3], random_state=0).test(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # one bandwidth of the collection on the data's scale, the heuristics, a float
        # at the scale of the closest pairs: no warning
        KSDTest(model, bandwidth=[1e-3, 1.0], random_state=0).test(X)
        KSDTest(model, bandwidth="median", random_state=0).test(X)
        KSDTest(model, random_state=0).test(X)
        KSDTest(model, bandwidth=0.01, random_state=0).test(X)
        KSDTest(model, kernel="imq", bandwidth=1e-3, random_state=0).test(X)


def test_a_score_that_writes_into_its_input_changes_nothing(rng):
    X = rng.standard_normal((60, 3))
    X0 = X.copy()

    def careless(Z):
        S = -Z.copy()
        Z[:] = 0.0  # a user's score that reuses its input as scratch space
        return S

    kw = dict(n_bootstrap=100, random_state=0)
    a = KSDTest(careless, **kw).test(X)
    b = KSDTest(std_normal_score, **kw).test(X0)
    np.testing.assert_array_equal(X, X0)
    assert a.statistic == b.statistic and a.pvalue == b.pvalue


def test_continuous_monte_carlo_null_is_the_statistic_on_model_samples():
    model = Gaussian(np.zeros(2))
    X = model.rvs(40, random_state=1) + 0.3
    res = KSDTest(model, bandwidth="median", bootstrap="monte-carlo", n_bootstrap=20,
                  random_state=4).test(X)
    assert res.bootstrap == "monte-carlo" and "Monte Carlo null of 20 model samples" in res.method
    # each draw: the unfitted test's statistic on a model sample, bandwidth resolved there
    children = np.random.default_rng(4).spawn(2)[1].spawn(20)
    for b in (0, 13):
        draw_rng, bw_rng = children[b].spawn(2)
        Y = model.rvs(40, random_state=draw_rng)
        ref = KSDTest(model, bandwidth="median", random_state=bw_rng).discrepancy(Y)
        assert res.null_distribution[b] == pytest.approx(ref, rel=1e-12)
    assert res.pvalue == (1 + np.sum(res.null_distribution >= res.statistic)) / 21
    assert res.statistic == pytest.approx(KSDTest(model, bandwidth="median").discrepancy(X))
    # fitted: the fitted bandwidth on every sample
    fitted = KSDTest(model, bandwidth="median", bootstrap="monte-carlo", n_bootstrap=20,
                     random_state=4).fit(X)
    draw_rng, _ = np.random.default_rng(4).spawn(2)[1].spawn(20)[13].spawn(2)
    Y = model.rvs(40, random_state=draw_rng)
    ref = KSDTest(model, bandwidth=fitted.bandwidth_).discrepancy(Y)
    assert fitted.test(X).null_distribution[13] == pytest.approx(ref, rel=1e-12)


def test_monte_carlo_null_keeps_the_kernel_families_of_x():
    """Whitened and tilted kernels: each model sample's statistics are those of the same
    families, their scales (bandwidths, whitening, the tilt's centre) resolved on it."""
    model = StudentT(2, 3.0)
    X = model.rvs(60, random_state=2) * [1.0, 1.5]
    kw = dict(tilt=1.5, whiten="aggregate", n_bandwidths=3)
    res = KSDTest(model, bootstrap="monte-carlo", n_bootstrap=19, random_state=5,
                  **kw).test(X)
    assert res.labels == ("euclidean, tilted",) * 3 + ("whitened, tilted",) * 3
    k = int(np.flatnonzero(res.statistics == res.statistic)[0])  # the reported kernel
    draw_rng, bw_rng = np.random.default_rng(5).spawn(2)[1].spawn(19)[7].spawn(2)
    Y = model.rvs(60, random_state=draw_rng)
    ref = KSDTest(model, random_state=bw_rng, **kw).discrepancy(Y)
    assert res.null_distribution[7] == pytest.approx(ref[k], rel=1e-12)
    # "auto" families of an anisotropic X (whitened, plain and tilted) are kept on the
    # isotropic model samples, where "auto" alone would resolve fewer
    wide = StudentT(2, 3.0).rvs(60, random_state=3) * [1.0, 8.0]
    auto = KSDTest(model, bootstrap="monte-carlo", n_bootstrap=19, random_state=0).test(wide)
    assert len(set(auto.labels)) == 4 and auto.statistics.size == 40
    assert np.isfinite(auto.null_distribution).all()


def test_monte_carlo_null_holds_the_level_of_small_heavy_tailed_samples():
    """Seeded, 200 trials of 10 points: with the tilted kernels the bootstrap rejected
    true Student-t(3) samples in 0.1225 of 400 trials; the Monte Carlo null stays within
    three binomial standard deviations of alpha."""
    model = StudentT(1, 3.0)
    rate = rejection_rate(KSDTest(model, tilt=1.5, bootstrap="monte-carlo", n_bootstrap=100),
                          model, 10, n_trials=200, random_state=1, verbose=False).rate
    assert rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 200)
