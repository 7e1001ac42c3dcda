"""Bad inputs found by the input audit: each is refused with an error naming the argument,
and an overflow is never reported as a result."""

import warnings

import numpy as np
import pytest

from skstein import (
    SVGD,
    FSSDTest,
    KSDTest,
    LinearKSDTest,
    MaxSKSDTest,
    PolynomialKSDTest,
    RelativeKSDTest,
    SlicedSVGD,
    ksd,
    ksd_power_criterion,
    max_sksd,
    rank_samples,
)
from skstein.distributions import Categorical, Gaussian
from skstein.features import FeatureMoments
from skstein.kernels import median_bandwidth
from skstein.relative._stats import DifferenceSums, aggregated_result, decide

RNG = np.random.default_rng(0)
X = RNG.standard_normal((40, 2))
G = Gaussian(np.zeros(2))
Q = Gaussian(np.full(2, 0.5))


@pytest.fixture(autouse=True)
def _quiet():
    # small samples: the bootstraps warn that their level is asymptotic
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


# -- overflow and scale: a clear error naming X, never a result -----------------------------

def test_fitted_ksd_score_refuses_data_its_fitted_bandwidths_cannot_see():
    for bandwidth in ("median", "aggregate"):
        est = KSDTest(G, bandwidth=bandwidth, n_bootstrap=50, random_state=0).fit(X)
        assert np.isfinite(est.score(X))  # ordinary data: unchanged
        with pytest.raises(ValueError, match=r"rescale X"):
            est.score(X * 1e150)
    # a fixed bandwidth that sees nothing still scores -inf (a search never picks it)
    assert KSDTest(G, bandwidth=1e-3).fit(X).score(X * 10.0) == -np.inf


def test_linear_ksd_variance_overflow_raises():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no raw numpy warning on the way
        with pytest.raises(ValueError, match=r"not finite on X.*rescale X"):
            LinearKSDTest(G, random_state=0).test(X * 1e150)
        with pytest.raises(ValueError, match=r"rescale X"):
            LinearKSDTest(G, random_state=0).score(X * 1e150)
    res = LinearKSDTest(G, random_state=0).test(X)
    assert np.isfinite(res.threshold) and 0.0 < res.pvalue < 1.0


def test_fssd_overflow_raises_a_value_error_naming_x():
    with pytest.raises(ValueError, match=r"not finite on X.*rescale X"):
        FSSDTest(G, random_state=0).test(X * 1e150)


def test_feature_moments_h1_variance_overflow_is_a_value_error():
    # ||mean||^2 = 1e200 is finite, its square is not (a Python float's ** raised
    # OverflowError)
    mom = FeatureMoments(n=4, total=np.array([4e100]), sq_norm_sum=1.0,
                         second=np.array([[1.0]]))
    with pytest.raises(ValueError, match="not finite on X"):
        mom.h1_variance()
    ok = FeatureMoments(n=4, total=np.array([2.0]), sq_norm_sum=3.0, second=np.array([[3.0]]))
    assert ok.h1_variance() == pytest.approx(4.0 * (0.5 * 3.0 * 0.5 / 4 - 0.25 ** 2))


def test_relative_maxsksd_overflow_raises_and_degenerate_means_zero_variance():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        own = RelativeKSDTest(G, Q, discrepancy="maxsksd", shared_directions=False,
                              random_state=0).fit(X)
        with pytest.raises(ValueError, match=r"not finite on X.*rescale X"):
            own.test(X * 1e150)  # each model's squared terms overflow in its variance
        est = RelativeKSDTest(G, Q, discrepancy="maxsksd", random_state=0).fit(X)
        # along shared directions the difference is formed term by term: the two models'
        # terms agree to rounding, a degenerate result
        res = est.test(X * 1e150)
        assert res.degenerate and res.sigma == 0.0 and res.pvalue == 1.0
        assert np.isfinite(res.discrepancy_p) and np.isfinite(res.discrepancy_q)
    # at 1e20 the two models give the same Stein matrices to rounding: a degenerate result,
    # with nothing above its threshold
    res = est.test(X * 1e20)
    assert res.degenerate and res.sigma == 0.0 and not res.reject and res.pvalue == 1.0
    assert res.statistic <= res.threshold
    assert not est.test(X).degenerate


def test_relative_decision_refuses_non_finite_values():
    with pytest.raises(ValueError, match="rescale X"):
        decide(1.0, np.inf, 40, 0.05, 1.0)
    sums = DifferenceSums(n=40, u_p=np.zeros(2), u_q=np.zeros(2), stat=np.array([1.0, 2.0]),
                          sigma=np.array([np.inf, 1.0]), influence=np.ones((2, 40)), scale=1.0)
    with pytest.raises(ValueError, match="rescale X"):
        aggregated_result(sums, 0.05, "m", np.ones(2), "jackknife", np.random.default_rng(0))
    # a variance below rounding: degenerate, reported as zero with the noise statistic
    z, p, thr, rej, degenerate, stat, sigma = decide(1e-20, 1e-20, 40, 0.05, 1.0)
    assert degenerate and not rej and p == 1.0 and stat == 0.0 and sigma == 0.0 and thr == 0.0


# -- arguments checked at the boundary, each error naming it --------------------------------

@pytest.mark.parametrize("eps", [-1.0, 0.0, float("nan")])
def test_power_criterion_eps(eps):
    with pytest.raises(ValueError, match="eps"):
        ksd_power_criterion(X, G, eps=eps)


def test_complex_scores_are_refused():
    def score(Z):
        return -Z + 1j

    with pytest.raises(ValueError, match=r"score of model returned complex"):
        ksd(X, score)
    with pytest.raises(ValueError, match="model"):
        KSDTest(score, n_bootstrap=20).test(X)
    with pytest.raises(ValueError, match="target"):
        SVGD(score, n_iter=1).fit(X)
    with pytest.raises(ValueError, match="target"):
        SlicedSVGD(score, n_iter=1).fit(X)
    with pytest.raises(ValueError, match=r"score returned complex"):
        SVGD(G, n_iter=1).fit(X).direction(X, score=score)
    # a real score given as a complex-free array still works
    assert np.isfinite(ksd(X, lambda Z: -Z))


@pytest.mark.parametrize("max_points", [0, 1, -5, 2.5])
def test_median_bandwidth_max_points(max_points):
    with pytest.raises((ValueError, TypeError), match="max_points"):
        median_bandwidth(X, max_points=max_points)


def test_median_bandwidth_max_points_at_its_minimum():
    assert median_bandwidth(X, max_points=2, random_state=0) > 0.0


def test_rank_samples_two_groups_between_pairs_is_refused():
    test = KSDTest(G, bandwidth="median")
    with pytest.raises(ValueError, match=r"groups .*2 distinct labels"):
        rank_samples({"a": X, "b": X + 1}, test, groups=np.repeat([0, 1], 20),
                     n_bootstrap=20, random_state=0)
    # over all pairs two groups still vary between resamples
    res = rank_samples({"a": X}, test, groups=np.repeat([0, 1], 20), pairs="all",
                       n_bootstrap=20, random_state=0)
    assert res.ci_high[0] > res.ci_low[0]


def test_rank_samples_missing_group_labels_and_one_replicate():
    test = KSDTest(G, bandwidth="median")
    labels = np.repeat([0.0, 1.0, 2.0, 3.0], 10)
    labels[3] = np.nan
    with pytest.raises(ValueError, match="groups"):
        rank_samples({"a": X}, test, groups=labels, n_bootstrap=20, random_state=0)
    with pytest.raises(ValueError, match="n_bootstrap"):
        rank_samples({"a": X}, test, n_bootstrap=1, random_state=0)


@pytest.mark.parametrize("kernel_params", ["x", [1]])
def test_kernel_params_must_be_a_dict(kernel_params):
    with pytest.raises(TypeError, match="kernel_params"):
        KSDTest(G, kernel_params=kernel_params, n_bootstrap=20).test(X)
    with pytest.raises(TypeError, match="kernel_params"):
        ksd(X, G, kernel_params=kernel_params)


@pytest.mark.parametrize("cls", [SVGD, SlicedSVGD])
@pytest.mark.parametrize("bandwidth", [np.array([[1.0]]), np.array([])])
def test_svgd_bandwidth_must_be_a_scalar(cls, bandwidth):
    with pytest.raises(TypeError, match="bandwidth"):
        cls(G, bandwidth=bandwidth, n_iter=1).fit(X)


@pytest.mark.parametrize("max_memory", ["10", None, 0, -5, 2.5, True])
def test_ksd_max_memory(max_memory):
    with pytest.raises((ValueError, TypeError), match="max_memory"):
        ksd(X, G, max_memory=max_memory)


@pytest.mark.parametrize("name", ["slices", "init_directions"])
def test_sliced_svgd_string_arrays(name):
    with pytest.raises(ValueError, match=name):
        SlicedSVGD(G, n_iter=1, **{name: np.array([["a", "b"], ["c", "d"]])}).fit(X)


def test_categorical_probs_not_numbers():
    with pytest.raises(ValueError, match="probs"):
        Categorical([["a", "b"]])


@pytest.mark.parametrize("kw, name", [
    ({"train_size": "abc"}, "train_size"), ({"train_size": -0.1}, "train_size"),
    ({"train_size": 1.5}, "train_size"), ({"train_size": float("nan")}, "train_size"),
    ({"train_size": None}, "train_size"), ({"tol": -1}, "tol"), ({"reg": -1}, "reg"),
])
def test_fssd_parameters_checked_without_optimize(kw, name):
    with pytest.raises((ValueError, TypeError), match=name):
        FSSDTest(G, optimize=False, n_simulate=50, **kw).test(X)


@pytest.mark.parametrize("n_slices", [0, -5, float("nan"), "10"])
def test_relative_ksd_n_slices_checked_for_ksd(n_slices):
    with pytest.raises((ValueError, TypeError), match="n_slices"):
        RelativeKSDTest(G, Q, discrepancy="ksd", n_slices=n_slices).test(X)


def test_max_sksd_return_pairs_must_be_a_bool():
    with pytest.raises(TypeError, match="return_pairs"):
        max_sksd(X, G, return_pairs="yes")


def test_power_criterion_of_terms_whose_variance_overflows():
    # row means of 1e300: their variance overflows; the criterion is the same ratio as
    # for the row means divided by 1e300 (eps negligible), not 0, and warns of nothing
    from skstein.discrepancy import SteinSums

    r = np.array([1.0, 2.0, 3.0, 6.0])
    small = SteinSums(n=4, offdiag_sum=float(r.sum() * 3), diag=np.zeros(4), rowsums=r * 3)
    huge = SteinSums(n=4, offdiag_sum=float(r.sum() * 3e300), diag=np.zeros(4),
                     rowsums=r * 3e300)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = huge.power_criterion()
        far = ksd_power_criterion(X * 1e150, G)
    assert value == pytest.approx(small.power_criterion(), rel=1e-9)
    assert np.isfinite(far) and far > 0
    # row means of 1e-300 (kernel values that vanish but for a few): the variance and
    # epsilon underflowed to 0 together, and the criterion divided by zero
    tiny = SteinSums(n=4, offdiag_sum=float(r.sum() * 3e-300), diag=np.zeros(4),
                     rowsums=r * 3e-300)
    apart = np.array([[28.0, 0.0], [0.0, 0.0], [0.0, 28.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = tiny.power_criterion()
        sparse = ksd_power_criterion(apart, lambda Z: -Z, bandwidth=1.0)
    assert value == pytest.approx(small.power_criterion(), rel=1e-9)
    assert np.isfinite(sparse)


@pytest.mark.parametrize("variant", ["g", "rg"])
def test_overflowing_data_raise_one_error_without_warnings(variant):
    # data at 1e150: the Stein moments of the direction search's starts overflow; the
    # error names X, and no overflow warning leaks before it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="not finite on X"):
            MaxSKSDTest(G, variant=variant, n_bootstrap=20, max_iter=2,
                        random_state=0).test(X * 1e150)


@pytest.mark.parametrize("make, Xs", [
    (lambda: KSDTest(G, bandwidth="median"), X[:2]),
    (lambda: KSDTest(Categorical(np.array([[0.3, 0.7]] * 2))), np.array([[0, 1], [1, 1]])),
    (lambda: MaxSKSDTest(G, max_iter=3, n_bootstrap=50, random_state=0).fit(X), X[:2]),
    (lambda: FSSDTest(G, random_state=0), X[:2]),
    (lambda: PolynomialKSDTest(G), X[:2]),
], ids=["ksd", "discrete-ksd", "fitted-maxsksd", "fssd", "polynomial"])
def test_score_of_two_samples_is_refused(make, Xs):
    # two rows leave the criterion's variance at 0: it was the statistic over 1e-5
    with pytest.raises(ValueError, match="X needs at least 3 samples for the power criterion"):
        make().score(Xs)


@pytest.mark.parametrize("combine", ["foo", 123])
def test_maxsksd_combine_is_checked_without_cv(combine):
    with pytest.raises(ValueError, match="combine must be one of"):
        MaxSKSDTest(G, combine=combine, max_iter=3, n_bootstrap=50).test(X)


def test_svgd_names_its_initial_particles():
    X0 = RNG.standard_normal((20, 2))
    X0[3, 1] = np.nan
    with pytest.raises(ValueError, match="X0") as info:
        SVGD(G, n_iter=2).fit(X0)
    assert "HistGradientBoosting" not in str(info.value)


def test_median_of_rows_whose_distances_underflow_says_so():
    with pytest.raises(ValueError, match="squared distances underflow"):
        median_bandwidth(RNG.standard_normal((20, 2)) * 1e-300)


def test_maxsksd_g_n_slices_must_be_an_int():
    with pytest.raises(TypeError, match="n_slices"):
        MaxSKSDTest(G, n_slices=2.0, max_iter=2, n_bootstrap=50).test(X)


def test_fitted_maxsksd_tests_a_list():
    # the bootstrap of "auto" is sized by the tested sample, which a list had no shape for
    t = MaxSKSDTest(G, max_iter=2, n_bootstrap=50, random_state=0).fit(X)
    assert t.test(X[:30].tolist()) == t.test(X[:30])


def test_fssd_optimised_on_overflowing_data_names_x():
    # the ascent used to wander off on a NaN criterion: "bandwidth ... got nan"
    with pytest.raises(ValueError, match=r"FSSD criterion is not finite on X.*rescale X"):
        FSSDTest(G, optimize=True, random_state=0).test(X * 1e100)


def test_svgd_names_its_initial_particles_of_the_wrong_width():
    with pytest.raises(ValueError, match=r"^X0 has 3 features but target"):
        SVGD(G, n_iter=2).fit(RNG.standard_normal((20, 3)))


def _masked(A, where=(0, 0)):
    M = np.ma.masked_array(A.copy(), mask=np.zeros(A.shape, dtype=bool))
    M.data[where] = 1e300  # the value under the mask: never to be read
    M.mask[where] = True
    return M


@pytest.mark.parametrize("call", [
    lambda A: KSDTest(G, n_bootstrap=50).test(A),
    lambda A: PolynomialKSDTest(G, n_bootstrap=50).test(A),
    lambda A: ksd(A, G),
    lambda A: median_bandwidth(A),
    lambda A: RelativeKSDTest(G, Q).test(A),
    lambda A: rank_samples([A, X], KSDTest(G)),
])
def test_masked_entries_are_refused_by_name(call):
    with pytest.raises(ValueError, match=r"masked array with 1 masked entries"):
        call(_masked(X))


def test_masked_entries_of_particles_and_discrete_data_are_refused_by_name():
    with pytest.raises(ValueError, match=r"^X0 is a masked array"):
        SVGD(G, n_iter=2).fit(_masked(X))
    codes = np.ma.masked_array(np.zeros((10, 2), dtype=int), mask=np.zeros((10, 2), bool))
    codes.mask[1, 1] = True
    with pytest.raises(ValueError, match=r"^X is a masked array"):
        KSDTest(Categorical(np.full((2, 3), 1 / 3))).test(codes)


def test_a_masked_array_without_masked_entries_is_its_data():
    M = np.ma.masked_array(X, mask=np.zeros(X.shape, dtype=bool))
    assert ksd(M, G) == ksd(X, G)


def test_check_samples_fast_path_returns_what_check_array_returns():
    # a C-ordered float64 array with a finite sum comes back itself, as from
    # scikit-learn's check_array; a sum that overflows takes the full check, which
    # accepts the finite entries; NaN, infinities, too few rows or no column are refused
    from sklearn.utils import check_array

    from skstein._validation import check_samples

    X = np.random.default_rng(0).standard_normal((5, 3))
    assert check_samples(X) is X and check_array(X, dtype=np.float64, order="C") is X
    big = np.array([[1e308, 1e308], [1.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(check_samples(big), big)
    for bad, match in [(np.array([[np.nan, 1.0], [1.0, 1.0]]), "NaN"),
                       (np.array([[np.inf, 1.0], [1.0, 1.0]]), "infinity"),
                       (np.ones((1, 2)), "minimum of 2"), (np.ones((3, 0)), "feature")]:
        with pytest.raises(ValueError, match=match):
            check_samples(bad)
    F = np.asfortranarray(X)
    out = check_samples(F)
    assert out.flags.c_contiguous and np.array_equal(out, X)
