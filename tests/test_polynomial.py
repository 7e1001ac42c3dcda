"""PolynomialKSDTest: the saturated polynomial Stein kernel and its test."""

import warnings

import numpy as np
import pytest
from scipy.stats import ortho_group

from skstein import KSDTest, PolynomialKSDTest
from skstein.distributions import Gaussian, StudentT
from skstein.experiments import rejection_rate
from skstein.gof._polynomial import REFERENCE_DRAWS
from skstein.discrepancy import _polynomial_diagonal as _diagonal
from skstein.discrepancy import (
    polynomial_coordinates,
    polynomial_stein_pass,
    polynomial_stein_rows,
    polynomial_stein_sums,
)


def _kernel(x, y, degree, c2):
    w = lambda z: (1.0 + z @ z / c2) ** (-degree / 2)  # noqa: E731
    return w(x) * w(y) * (x @ y) ** degree


def _slow_stein_matrix(Y, S, degree, c2, eps=1e-4):
    """Stein kernel pair by pair, every derivative of the kernel by central differences."""
    n, d = Y.shape
    H = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            x, y = Y[i], Y[j]
            h = S[i] @ S[j] * _kernel(x, y, degree, c2)
            for a in range(d):
                e = np.zeros(d)
                e[a] = eps
                dy = (_kernel(x, y + e, degree, c2) - _kernel(x, y - e, degree, c2)) / (2 * eps)
                dx = (_kernel(x + e, y, degree, c2) - _kernel(x - e, y, degree, c2)) / (2 * eps)
                dxy = (_kernel(x + e, y + e, degree, c2) - _kernel(x + e, y - e, degree, c2)
                       - _kernel(x - e, y + e, degree, c2)
                       + _kernel(x - e, y - e, degree, c2)) / (4 * eps * eps)
                h += S[i, a] * dy + S[j, a] * dx + dxy
            H[i, j] = h
    return H


def _full_matrix(Y, S, degree, c2, max_memory=2**26):
    H = np.zeros((Y.shape[0], Y.shape[0]))
    for a, b, rows in polynomial_stein_rows(Y, S, degree, c2, max_memory):
        H[a:b] = rows
    return H


@pytest.mark.parametrize("degree", [1, 2, 3, 4])
def test_stein_kernel_matches_finite_differences(degree):
    rng = np.random.default_rng(degree)
    Y = rng.standard_normal((6, 3))
    S = rng.standard_normal((6, 3))  # any scores: the kernel's algebra, not a model
    slow = _slow_stein_matrix(Y, S, degree, 2.5)
    H = _full_matrix(Y, S, degree, 2.5)
    scale = np.max(np.abs(slow))
    np.testing.assert_allclose(H, slow - np.diag(np.diag(slow)), atol=1e-6 * scale)
    np.testing.assert_allclose(_diagonal(Y, S, degree, 2.5), np.diag(slow), atol=1e-6 * scale)


@pytest.mark.parametrize("degree", [1, 2, 3, 4])
def test_compiled_pass_matches_the_numpy_rows(degree):
    # 150 rows: several blocks of POLY_BLOCK rows; max_memory: several outer blocks
    rng = np.random.default_rng(10 + degree)
    Y, S = rng.standard_normal((150, 4)), rng.standard_normal((150, 4))
    H = _full_matrix(Y, S, degree, 3.0)
    scale = np.max(np.abs(H))
    for memory in (2**26, 20_000):
        sums, upper, _ = polynomial_stein_pass(Y, S, degree, 3.0, memory, keep=True)
        np.testing.assert_allclose(sums.rowsums, H.sum(axis=1), atol=1e-11 * scale * 150)
        assert sums.offdiag_sum == pytest.approx(H.sum(), rel=1e-10, abs=1e-10 * scale)
        if upper is not None:
            np.testing.assert_allclose(upper, np.triu(H, 1), atol=1e-12 * scale)
    # the forms of the blocks as they are formed equal those of the kept triangle
    V = rng.standard_normal((7, 150))
    _, upper, _ = polynomial_stein_pass(Y, S, degree, 3.0, 2**26, keep=True)
    forms = polynomial_stein_pass(Y, S, degree, 3.0, 20_000, V=V)[2]
    np.testing.assert_allclose(forms, 2.0 * np.einsum("mi,ij,mj->m", V, upper, V),
                               rtol=1e-10, atol=1e-10 * scale)


def test_same_numbers_for_any_number_of_threads():
    from skstein._threads import numba_threads

    X = np.random.default_rng(12).standard_normal((400, 6))
    test = PolynomialKSDTest(Gaussian(np.zeros(6)), n_bootstrap=200, random_state=0)
    with numba_threads(1):
        one = test.test(X)
    assert test.test(X) == one
    blocked = PolynomialKSDTest(Gaussian(np.zeros(6)), n_bootstrap=200, random_state=0,
                                max_memory=200_000)
    with numba_threads(1):
        one = blocked.test(X)
    assert blocked.test(X) == one


def test_stein_matrix_is_positive_semidefinite_with_its_diagonal():
    # h(x, y) = <xi(x), xi(y)> for the Stein features xi: a Gram matrix
    rng = np.random.default_rng(1)
    Y, S = rng.standard_normal((40, 4)), rng.standard_normal((40, 4))
    H = _full_matrix(Y, S, 3, 1.7) + np.diag(_diagonal(Y, S, 3, 1.7))
    evals = np.linalg.eigvalsh(H)
    assert evals[0] > -1e-10 * evals[-1]


def test_stein_identity_under_the_model():
    # mean zero under the model: fixed coordinates (from another sample), 20000 points;
    # the U-statistic against its standard error from the row means
    rng = np.random.default_rng(2)
    ref = rng.standard_normal((500, 3))
    c, A, B, c2 = polynomial_coordinates(ref)
    X = rng.standard_normal((4000, 3))
    sums = polynomial_stein_sums((X - c) @ A, -X @ B, 3, c2)
    sd = 2.0 * np.std(sums.rowsums / (sums.n - 1)) / np.sqrt(sums.n)
    assert abs(sums.statistic()) < 3.0 * sd + 1e-12
    # and far from zero under a heavier-tailed sample with the same coordinates
    Xt = rng.standard_t(5, size=(4000, 3)) * np.sqrt(3.0 / 5.0)
    sums_t = polynomial_stein_sums((Xt - c) @ A, -Xt @ B, 3, c2)
    assert sums_t.statistic() > 10.0 * sd


def test_row_blocks_give_the_same_test():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 5))
    model = Gaussian(np.zeros(5))
    whole = PolynomialKSDTest(model, n_bootstrap=200, random_state=0).test(X)
    blocked = PolynomialKSDTest(model, n_bootstrap=200, random_state=0,
                                max_memory=100_000).test(X)
    assert blocked.statistic == pytest.approx(whole.statistic, rel=1e-12, abs=1e-15)
    assert blocked.pvalue == whole.pvalue


def test_invariant_under_rotation_and_scale_of_data_and_model():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((400, 4))
    X[:, 0] = rng.laplace(scale=2**-0.5, size=400)
    Q = ortho_group.rvs(4, random_state=5)
    # coordinates learned on the tested sample move with it: the same test, exactly
    kw = dict(n_bootstrap=300, random_state=1, reference="sample")
    base = PolynomialKSDTest(Gaussian(np.zeros(4)), **kw).test(X)
    cov = 9.0 * np.eye(4)  # the model N(0, 9 Q Q^T) of the data 3 X Q^T
    moved = PolynomialKSDTest(Gaussian(np.zeros(4), cov), **kw).test(3.0 * X @ Q.T)
    assert moved.pvalue == base.pvalue
    assert moved.statistic == pytest.approx(base.statistic, rel=1e-9)
    # learned on the model's draws (the default for a model that samples exactly) they
    # move with the model's draws, not with the data: the same test up to the draws'
    # noise, and exactly where the moved model's draws are the moved draws
    base = PolynomialKSDTest(Gaussian(np.zeros(4)), n_bootstrap=300, random_state=1).test(X)
    moved = PolynomialKSDTest(Gaussian(np.zeros(4), cov), n_bootstrap=300,
                              random_state=1).test(3.0 * X @ Q.T)
    assert moved.statistic == pytest.approx(base.statistic, rel=0.1)
    assert abs(moved.pvalue - base.pvalue) < 0.05 and moved.reject == base.reject

    class Moved(Gaussian):
        def rvs(self, n, random_state=None):
            return 3.0 * Gaussian(np.zeros(4)).rvs(n, random_state) @ Q.T

    exact = PolynomialKSDTest(Moved(np.zeros(4), cov), n_bootstrap=300,
                              random_state=1).test(3.0 * X @ Q.T)
    assert exact.pvalue == base.pvalue
    assert exact.statistic == pytest.approx(base.statistic, rel=1e-9)


def test_finds_heavy_tails_along_a_random_direction():
    # unit-variance Laplace along one random direction of 8 (N = 2000): the fourth
    # moments in every direction see it (p = 0.001 on 8 of 8 seeds tried, 6 to 13),
    # the radial kernel with the median bandwidth hardly (p = 0.04 to 0.88 there)
    rng = np.random.default_rng(6)
    v = ortho_group.rvs(8, random_state=7)[0]
    Z = rng.standard_normal((2000, 8))
    X = Z + np.outer(rng.laplace(scale=2**-0.5, size=2000) - Z @ v, v)
    model = Gaussian(np.zeros(8))
    r = PolynomialKSDTest(model, random_state=0, reference="sample").test(X)
    assert r.reject and r.pvalue < 0.01
    assert r.method == "polynomial KSD (degree 3, multinomial bootstrap)"
    assert r.n_samples == 2000 and r.bandwidth > 1.0
    # the default for a model that samples: the sample's and the model's coordinates
    r = PolynomialKSDTest(model, random_state=0).test(X)
    assert r.reject and r.pvalue < 0.01 and r.labels == ("degree 3, sample", "degree 3, model")
    assert r.pvalue < KSDTest(model, bandwidth="median", random_state=0).test(X).pvalue


def test_fitted_test_uses_the_learned_coordinates():
    rng = np.random.default_rng(8)
    Xfit, X = rng.standard_normal((300, 3)), rng.standard_normal((200, 3)) + 0.1
    model = Gaussian(np.zeros(3))
    t = PolynomialKSDTest(model, whiten=True, n_bootstrap=100, random_state=0).fit(Xfit)
    assert t.center_.shape == (3,) and t.transform_.shape == (3, 3)
    np.testing.assert_allclose(t.transform_ @ t.score_transform_.T, np.eye(3), atol=1e-12)
    Y = (Xfit - t.center_) @ t.transform_
    assert np.mean(np.sum(Y * Y, axis=1)) == pytest.approx(1.0)
    assert t.saturation_ > 1.0
    # the fitted coordinates differ from those of the tested sample itself
    unfitted = PolynomialKSDTest(model, whiten=True, n_bootstrap=100, random_state=0,
                                 reference="sample")
    assert t.discrepancy(X) != unfitted.discrepancy(X)
    r = t.test(X)
    assert r.statistic == t.discrepancy(X)
    assert r.bandwidth == pytest.approx(np.sqrt(t.saturation_))
    with pytest.raises(ValueError, match="X has 4 features"):
        t.test(rng.standard_normal((50, 4)))


def _anisotropic(n, seed, stretch=1.0):
    """A rotated Gaussian of variances 0.1 to 10 (D = 5), and a sample of it whose
    widest axis is stretched by ``stretch``."""
    Q = ortho_group.rvs(5, random_state=seed)
    sd = np.geomspace(0.1**0.5, 10**0.5, 5)
    model = Gaussian(np.zeros(5), (Q * sd**2) @ Q.T)
    Z = np.random.default_rng(seed).standard_normal((n, 5))
    Z[:, -1] *= stretch
    return model, Z @ (Q * sd).T


def test_auto_whitens_an_anisotropic_sample_only():
    # "auto" is whiten=True on an anisotropic sample (condition number 100), and
    # whiten=False on an isotropic one: the same numbers, and the result says which
    model, X = _anisotropic(300, 3)
    kw = dict(n_bootstrap=100, random_state=0, reference="sample")
    auto = PolynomialKSDTest(model, **kw)
    white = PolynomialKSDTest(model, whiten=True, **kw)
    assert auto.test(X) == white.test(X)
    assert auto.test(X).method == "polynomial KSD (degree 3, whitened, multinomial bootstrap)"
    assert auto.fit(X).geometry_ == "whitened" and white.fit(X).geometry_ == "whitened"
    np.testing.assert_array_equal(auto.transform_, white.transform_)
    Xi = np.random.default_rng(4).standard_normal((300, 5))
    iso = Gaussian(np.zeros(5))
    plain = PolynomialKSDTest(iso, whiten=False, **kw)
    r = PolynomialKSDTest(iso, **kw).test(Xi)
    assert r == plain.test(Xi) and "whitened" not in r.method
    assert PolynomialKSDTest(iso).fit(Xi).geometry_ == "euclidean"
    # the model's draws decide for their own coordinates (the model is anisotropic)
    both = PolynomialKSDTest(iso, n_bootstrap=100, random_state=0).test(Xi)
    assert both.labels == ("degree 3, sample", "degree 3, model")
    both = PolynomialKSDTest(model, n_bootstrap=100, random_state=0).test(X)
    assert both.labels == ("degree 3, sample, whitened", "degree 3, model, whitened")
    # the Monte Carlo null decides on each of its samples as on the tested one
    mc = PolynomialKSDTest(model, bootstrap="monte-carlo", n_bootstrap=20, random_state=0,
                           reference="sample")
    assert "whitened, Monte Carlo null" in mc.test(X).method


def test_whitened_coordinates_see_a_departure_along_the_wide_axis():
    # 1.5 times the variance along the widest axis of a rotated model of condition
    # number 100 (D = 5, n = 300): in the data's coordinates, where the wide axes'
    # monomials outweigh the rest, the test missed it in 0.91 of 100 trials
    # (bench_whiten_auto.py --test polynomial); whitened it found it in 0.85. Of seeds
    # 3 to 8 the default rejected 4 (p <= 0.003), whiten=False none (p >= 0.15); seed 3
    # gives p = 0.003 / 0.33.
    model, X = _anisotropic(300, 3, stretch=1.5 ** 0.5)
    default = PolynomialKSDTest(model, random_state=0).test(X)
    raw = PolynomialKSDTest(model, whiten=False, random_state=0).test(X)
    assert default.reject and default.pvalue < 0.01
    assert not raw.reject


def test_reproducible_and_auto_bootstrap():
    rng = np.random.default_rng(9)
    X = rng.standard_normal((100, 3))
    model = Gaussian(np.zeros(3))
    a = PolynomialKSDTest(model, n_bootstrap=100, random_state=3).test(X)
    assert a == PolynomialKSDTest(model, n_bootstrap=100, random_state=3).test(X)
    assert a.bootstrap == "rademacher"  # below 120 points
    named = PolynomialKSDTest(model, bootstrap="rademacher", n_bootstrap=100,
                              random_state=3).test(X)
    assert named.pvalue == a.pvalue


def test_warns_in_one_or_two_dimensions_below_500_points_with_the_wild_bootstrap():
    rng = np.random.default_rng(14)
    for d, n in [(1, 100), (2, 499)]:
        # a model without rvs (a callable score), or the wild bootstrap asked for
        for model, kw in [(lambda X: -X, {}),
                          (Gaussian(np.zeros(d)), dict(bootstrap="rademacher"))]:
            with pytest.warns(UserWarning, match=f"in {d} dimension.*n={n} < 500"):
                PolynomialKSDTest(model, n_bootstrap=50, **kw).test(rng.standard_normal((n, d)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for d, n in [(2, 500), (3, 60), (1, 100)]:  # (1, 100): the Monte Carlo null
            PolynomialKSDTest(Gaussian(np.zeros(d)), n_bootstrap=100).test(
                rng.standard_normal((n, d)))


def test_monte_carlo_null_in_low_dimensions():
    rng = np.random.default_rng(15)
    model = Gaussian(np.zeros(2))
    X = rng.standard_normal((80, 2))
    res = PolynomialKSDTest(model, n_bootstrap=30, random_state=4,
                            reference="sample").test(X)  # bootstrap "auto"
    assert res.bootstrap == "monte-carlo"
    assert res.method == "polynomial KSD (degree 3, Monte Carlo null of 30 model samples)"
    # its draws: the statistic of the unfitted test, coordinates learned on each sample,
    # on model samples from the children of the test's seed
    children = np.random.default_rng(4).spawn(30)
    single = PolynomialKSDTest(model, bootstrap="rademacher", reference="sample")
    for b in (0, 17):
        Y = model.rvs(80, random_state=children[b])
        assert res.null_distribution[b] == pytest.approx(single.discrepancy(Y), rel=1e-12)
    assert res.statistic == pytest.approx(single.discrepancy(X), rel=1e-12)
    k = np.sum(res.null_distribution >= res.statistic)
    assert res.pvalue == (1 + k) / 31
    # the model's reference: coordinates learned once, on REFERENCE_DRAWS model draws
    # from the seed's first child, and every sample in them (the draws: the next ones)
    auto = PolynomialKSDTest(model, n_bootstrap=30, random_state=4, reference="model").test(X)
    children = np.random.default_rng(4).spawn(31)
    reference = model.rvs(REFERENCE_DRAWS, random_state=children[0])
    fitted = PolynomialKSDTest(model, bootstrap="rademacher").fit(reference)
    assert auto.statistic == pytest.approx(fitted.discrepancy(X), rel=1e-12)
    for b in (0, 17):
        Y = model.rvs(80, random_state=children[1 + b])
        assert auto.null_distribution[b] == pytest.approx(fitted.discrepancy(Y), rel=1e-12)
    # the default aggregates both on the same model samples: its draws are the two
    # tests' draws side by side, min-p aggregated
    both = PolynomialKSDTest(model, n_bootstrap=30, random_state=4).test(X)
    assert both.labels == ("degree 3, sample", "degree 3, model")
    np.testing.assert_allclose(both.statistics, [single.discrepancy(X), auto.statistic],
                               rtol=1e-12)
    k = list(both.labels).index(both.labels[int(np.argmin(both.pvalues))])
    assert both.statistic == both.statistics[k] and both.pvalue >= both.pvalues.min()
    # explicit, in any dimension; fitted: the fitted coordinates on every sample
    X5 = rng.standard_normal((60, 5))
    m5 = Gaussian(np.zeros(5))
    ref = rng.standard_normal((200, 5))
    fitted = PolynomialKSDTest(m5, bootstrap="monte-carlo", n_bootstrap=10,
                               random_state=1).fit(ref)
    r5 = fitted.test(X5)
    Y = m5.rvs(60, random_state=np.random.default_rng(1).spawn(10)[3])
    assert r5.null_distribution[3] == pytest.approx(fitted.discrepancy(Y), rel=1e-12)
    # several degrees: one column of draws per degree, min-p aggregated
    agg = PolynomialKSDTest(model, degree=(1, 3), n_bootstrap=30, random_state=4,
                            reference="model").test(X)
    assert agg.pvalues[1] == auto.pvalue and "Monte Carlo null" in agg.method
    # a model without rvs cannot give one; samples of another size are named
    with pytest.raises(TypeError, match="bootstrap='monte-carlo'"):
        PolynomialKSDTest(lambda Z: -Z, bootstrap="monte-carlo").test(X)
    with pytest.raises(TypeError, match="reference='model'"):
        PolynomialKSDTest(lambda Z: -Z, reference="model").test(X)

    class Short(Gaussian):
        def rvs(self, size=1, random_state=None):
            return super().rvs(size, random_state=random_state)[:-1]

    with pytest.raises(ValueError, match=r"model.rvs\(80\) returned 79 rows"):
        PolynomialKSDTest(Short(np.zeros(2)), bootstrap="monte-carlo",
                          reference="sample").test(X)
    with pytest.raises(ValueError, match=r"model.rvs\(1000\) returned shape \(999, 2\)"):
        PolynomialKSDTest(Short(np.zeros(2))).test(X)


def test_constant_sample_needs_coordinates_from_a_reference():
    # centred at their own mean, coinciding rows give a kernel that is zero on them: an
    # error, not a statistic of 0 with a p-value of 1
    X = np.ones((30, 3))
    for model in (Gaussian(np.ones(3)), Gaussian(np.zeros(3)), lambda Z: -Z):
        with pytest.raises(ValueError, match="all samples coincide"):
            PolynomialKSDTest(model, n_bootstrap=50, random_state=0,
                              reference="sample").test(X)
    with pytest.raises(ValueError, match="all samples coincide"):
        PolynomialKSDTest(lambda Z: -Z, n_bootstrap=50).test(X)  # no draws: "sample"
    with pytest.raises(ValueError, match="all samples coincide"):
        PolynomialKSDTest(Gaussian(np.zeros(3))).fit(X)
    # fitted on a reference sample, or on the model's draws (the default for a model
    # that samples), the coordinates see the constant sample
    ref = np.random.default_rng(0).standard_normal((200, 3))
    for model in (Gaussian(np.ones(3)), Gaussian(np.zeros(3))):
        r = PolynomialKSDTest(model, n_bootstrap=200, random_state=0).fit(ref).test(X)
        assert r.reject and r.pvalue < 0.01
        r = PolynomialKSDTest(model, n_bootstrap=200, random_state=0).test(X)
        assert r.reject and r.pvalue < 0.01


def test_several_degrees_aggregate_each_degrees_test_on_the_same_draws():
    rng = np.random.default_rng(13)
    X = rng.standard_normal((150, 4))
    X[:, 1] *= 1.3
    model = Gaussian(np.zeros(4))
    kw = dict(n_bootstrap=200, random_state=4, reference="sample")
    single = [PolynomialKSDTest(model, degree=p, **kw).test(X) for p in (3, 1)]
    agg = PolynomialKSDTest(model, degree=[3, 1], **kw).test(X)
    assert agg.labels == ("degree 3", "degree 1")
    np.testing.assert_array_equal(agg.statistics, [r.statistic for r in single])
    np.testing.assert_array_equal(agg.pvalues, [r.pvalue for r in single])
    k = int(np.argmin(agg.pvalues))
    assert agg.statistic == single[k].statistic
    np.testing.assert_array_equal(agg.null_distribution, single[k].null_distribution)
    # the min-p correction: never below the smallest p-value
    assert agg.pvalue >= agg.pvalues.min()
    assert agg.method == "polynomial KSD (degrees 3, 1, aggregated, multinomial bootstrap)"
    assert np.all(agg.bandwidths == single[0].bandwidth)
    # the same test when the Stein matrices are streamed by blocks of rows (the forms
    # to rounding: their products are single precision)
    streamed = PolynomialKSDTest(model, degree=(3, 1), max_memory=20_000, **kw).test(X)
    assert streamed.pvalue == agg.pvalue
    np.testing.assert_array_equal(streamed.pvalues, agg.pvalues)
    np.testing.assert_allclose(streamed.null_distribution, agg.null_distribution,
                               rtol=1e-5, atol=1e-6 * np.abs(agg.null_distribution).max())
    # one degree in a sequence is that degree's test
    assert PolynomialKSDTest(model, degree=(3,), **kw).test(X).pvalue == single[0].pvalue
    t = PolynomialKSDTest(model, degree=(3, 1), **kw)
    np.testing.assert_allclose(t.discrepancy(X), agg.statistics, rtol=1e-12)
    assert t.score(X) == max(PolynomialKSDTest(model, degree=p, **kw).score(X) for p in (3, 1))


def test_aggregated_reference_keeps_the_coordinates_that_can_take_the_sample():
    # far out in the model's coordinates, or with no spread of its own, a sample is
    # tested in the other reference's coordinates alone
    model = Gaussian(np.zeros(3))
    X = np.random.default_rng(0).standard_normal((200, 3)) * 1e60
    r = PolynomialKSDTest(model, n_bootstrap=100, random_state=0).test(X)
    alone = PolynomialKSDTest(model, n_bootstrap=100, random_state=0,
                              reference="sample").test(X)
    assert r == alone and r.reject
    r = PolynomialKSDTest(model, n_bootstrap=100, random_state=0).test(np.ones((30, 3)))
    alone = PolynomialKSDTest(model, n_bootstrap=100, random_state=0,
                              reference="model").test(np.ones((30, 3)))
    assert r == alone and r.reject


@pytest.mark.parametrize("params, X, exc, match", [
    (dict(degree=0), None, ValueError, "degree must be from 1 to 8"),
    (dict(degree=9), None, ValueError, "degree must be from 1 to 8"),
    (dict(degree=2.0), None, TypeError, "degree must be an int"),
    (dict(degree=True), None, TypeError, "degree must be an int"),
    (dict(degree="3"), None, TypeError, "degree must be an int"),
    (dict(degree=[]), None, ValueError, "at least one degree"),
    (dict(degree=(3, 3)), None, ValueError, "must not repeat"),
    (dict(degree=(1, 2.0)), None, TypeError, "degree must be an int"),
    (dict(degree=(1, 9)), None, ValueError, "degree must be from 1 to 8"),
    (dict(degree=[[1, 3]]), None, TypeError, "degree must be an int"),
    (dict(whiten="yes"), None, (TypeError, ValueError), "whiten"),
    (dict(bootstrap="wild"), None, ValueError, "bootstrap"),
    (dict(reference="data"), None, ValueError, "reference"),
    (dict(n_bootstrap=0), None, ValueError, "n_bootstrap"),
    (dict(alpha=1.5), None, ValueError, "alpha"),
    (dict(max_memory=0), None, ValueError, "max_memory"),
    (dict(), np.full((20, 2), np.nan), ValueError, "X"),
    (dict(), np.ones(20), ValueError, "X"),
    (dict(), np.ones((1, 2)), ValueError, "X"),
    (dict(reference="sample"), np.full((20, 2), 1e200) * np.arange(1, 21)[:, None],
     ValueError, "rescale X"),
    (dict(), np.full((20, 2), 1e200) * np.arange(1, 21)[:, None], ValueError,
     "rescale X"),  # the first frame's error, where neither can take X
    (dict(reference="model"), np.full((20, 2), 1e200) * np.arange(1, 21)[:, None],
     ValueError, "more than 1e154 times the unit radius.*reference='sample'"),
    (dict(reference="model"), np.random.default_rng(0).standard_normal((20, 2)) * 1e60,
     ValueError, "powers of the polynomial kernel overflow"),
    (dict(degree=8, reference="model"),
     np.random.default_rng(0).standard_normal((20, 2)) * 1e20, ValueError,
     "powers of the polynomial kernel overflow"),
])
def test_bad_input_names_the_argument(params, X, exc, match):
    if X is None:
        X = np.random.default_rng(0).standard_normal((20, 2))
    with pytest.raises(exc, match=match):
        PolynomialKSDTest(Gaussian(np.zeros(2)), **params).test(X)


@pytest.mark.slow
def test_level_on_true_models():
    # 200 null trials each; alpha + 3 binomial sd = 0.096
    bound = 0.05 + 3 * np.sqrt(0.05 * 0.95 / 200)
    g = Gaussian(np.zeros(20))
    r = rejection_rate(PolynomialKSDTest(g, n_bootstrap=300), g, 500, n_trials=200,
                       random_state=11, n_jobs=1, verbose=False)
    assert r.rate <= bound
    r = rejection_rate(PolynomialKSDTest(g, degree=(1, 3), n_bootstrap=300), g, 300,
                       n_trials=200, random_state=13, n_jobs=1, verbose=False)
    assert r.rate <= bound
    # one dimension, 50 points: the Monte Carlo null of "auto" (the wild bootstrap there
    # rejected 0.125 of 400 true samples)
    g1 = Gaussian(np.zeros(1))
    r = rejection_rate(PolynomialKSDTest(g1, n_bootstrap=99), g1, 50, n_trials=200,
                       random_state=14, n_jobs=1, verbose=False)
    assert r.rate <= bound
    t3 = StudentT(4, 3.0)  # heavy-tailed model: the saturated features keep a variance
    r = rejection_rate(PolynomialKSDTest(t3, n_bootstrap=300), t3, 300, n_trials=200,
                       random_state=12, n_jobs=1, verbose=False)
    assert r.rate <= bound
