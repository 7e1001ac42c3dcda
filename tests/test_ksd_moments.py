"""``KSDTest(moments=True)``: the KSD test beside the whole sample's moment tests."""

import numpy as np
import pytest
from scipy.stats import special_ortho_group

from skstein import KSDTest, MaxSKSDTest
from skstein.distributions import AffineTransformed, Categorical, Gaussian, StudentT
from skstein.experiments import rejection_rate
from skstein.gof._maxsksd import (
    POOLED_SHARES,
    pooled_fourth_test,
    pooled_second_test,
)


def _rotated_t(df, dim=4, seed=0):
    R = special_ortho_group.rvs(dim, random_state=seed)
    return AffineTransformed(StudentT(dim, df), R.T, np.zeros(dim))


def test_combines_the_ksd_test_and_the_moment_tests_by_their_shares():
    """The KSD part is the plain test at alpha / 2 (same seed, same numbers); the moment
    parts are MaxSKSDTest's whole-sample tests on the children of the seed that the KSD
    test does not use; the p-value is the smallest p-value over its share."""
    model = _rotated_t(4.0)
    X = _rotated_t(10.0).rvs(150, random_state=1)
    res = KSDTest(model, random_state=5, moments=True).test(X)
    ksd = KSDTest(model, random_state=5, alpha=0.025).test(X)
    rng = np.random.default_rng(5)
    rng.spawn(2)  # the KSD test's children
    fourth_rng, second_rng, _ = rng.spawn(3)
    S = model.grad_logpdf(X)
    est = KSDTest(model, moments=True)
    second = pooled_second_test(est, X, S, second_rng, 0.0125, "multinomial")
    fourth = pooled_fourth_test(est, X, S, fourth_rng, 0.0125, "multinomial")
    assert res.labels[0].startswith("KSD: ")
    assert res.labels[1:] == ("all: second moments", "all: fourth moment")
    np.testing.assert_array_equal(res.pvalues, [ksd.pvalue, second.pvalue, fourth.pvalue])
    np.testing.assert_array_equal(res.pvalue_threshold, 0.05 * np.array(POOLED_SHARES))
    assert res.pvalue == min(1.0, min(p / w for p, w in zip(res.pvalues, POOLED_SHARES)))
    assert res.reject == bool(np.any(res.pvalues <= res.pvalue_threshold))
    assert res.reject == (res.pvalue <= 0.05)
    assert "at alpha / 2; with the whole sample's second moments at alpha / 4" in res.method


def test_moments_find_lighter_tails_along_rotated_axes():
    """Seeded: rotated Student-t(10) coordinates against a rotated t(4) model, which the
    radial kernels miss in four dimensions, are found by the fourth moment."""
    model = _rotated_t(4.0)
    X = _rotated_t(10.0).rvs(300, random_state=2)
    plain = KSDTest(model, random_state=0).test(X)
    both = KSDTest(model, random_state=0, moments=True).test(X)
    assert plain.pvalue > 0.05
    assert both.reject and both.pvalues[2] < 0.001


@pytest.mark.slow
def test_level_on_rotated_student_t():
    """Seeded: true samples rejected within three binomial standard deviations of alpha
    (the Rademacher draws below 120 points and the multinomial ones above)."""
    model = _rotated_t(4.0, dim=3, seed=4)
    bound = 0.05 + 3 * np.sqrt(0.05 * 0.95 / 200)
    for n in (80, 200):
        rate = rejection_rate(KSDTest(model, moments=True), model, n, n_trials=200,
                              random_state=11, verbose=False).rate
        assert rate <= bound, (n, rate)


def test_one_dimension_calibrates_the_moments_on_model_samples():
    """In one dimension below 500 points the moments' bootstraps run liberal: as in
    MaxSKSDTest, a model that samples exactly calibrates them on its samples."""
    model = StudentT(1, 4.0)
    X = model.rvs(60, random_state=0)
    res = KSDTest(model, random_state=0, moments=True, n_bootstrap=99).test(X)
    assert res.method.endswith("calibrated on samples of the model)")
    assert res.bootstrap == "rademacher"  # the KSD part's draws


def test_monte_carlo_null_takes_the_moments_there_too():
    model = Gaussian(np.zeros(2))
    X = model.rvs(40, random_state=0)
    res = KSDTest(model, random_state=0, moments=True, bootstrap="monte-carlo",
                  n_bootstrap=49).test(X)
    assert "Monte Carlo null of 49 model samples" in res.method
    assert res.method.endswith("calibrated on samples of the model)")
    ksd = KSDTest(model, random_state=0, bootstrap="monte-carlo", n_bootstrap=49,
                  alpha=0.025).test(X)
    assert res.pvalues[0] == ksd.pvalue


def test_fitted_test_and_the_other_methods():
    """A fitted test keeps its kernels for the KSD part; discrepancy and score stay the
    KSD's."""
    model = Gaussian(np.zeros(3))
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(200, 3)), rng.normal(size=(150, 3))
    fitted = KSDTest(model, random_state=0, moments=True).fit(X)
    plain = KSDTest(model, random_state=0, alpha=0.025).fit(X)
    assert fitted.test(Y).pvalues[0] == plain.test(Y).pvalue
    np.testing.assert_array_equal(fitted.discrepancy(Y), plain.discrepancy(Y))
    assert fitted.score(Y) == plain.score(Y)
    assert MaxSKSDTest(model).get_params()["moment"] == "pooled"


@pytest.mark.parametrize("value", [1, "yes", None])
def test_bad_moments_is_named(value):
    X = np.random.default_rng(0).normal(size=(10, 2))
    with pytest.raises(TypeError, match="moments"):
        KSDTest(Gaussian(np.zeros(2)), moments=value).test(X)


def test_discrete_model_refuses_the_moments():
    model = Categorical(np.full((2, 3), 1 / 3))
    X = np.random.default_rng(0).integers(0, 3, size=(50, 2))
    with pytest.raises(ValueError, match="moments=True is for continuous models"):
        KSDTest(model, moments=True).test(X)


def test_second_moments_by_blocks_beyond_max_memory():
    """Beyond ``max_memory`` the second moments' kernel is formed by blocks of rows: the
    same statistics and p-values."""
    X = np.random.default_rng(0).standard_t(5, size=(300, 3))
    model = Gaussian(np.zeros(3))
    whole = KSDTest(model, random_state=0, moments=True).test(X)
    blocks = KSDTest(model, random_state=0, moments=True, max_memory=100_000).test(X)
    np.testing.assert_array_equal(whole.pvalues, blocks.pvalues)
    np.testing.assert_allclose(whole.statistics, blocks.statistics, rtol=1e-12)
