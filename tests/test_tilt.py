"""Tilted Stein kernels (:mod:`skstein.gof._tilt`), ``KSDTest(tilt=...)`` and
``RelativeKSDTest(tilt=...)``."""

import warnings

import numpy as np
import pytest
from scipy.stats import special_ortho_group

from skstein import KSDTest, PerturbedKSDTest, RelativeKSDTest
from skstein._bootstrap import bootstrap_draws, dense_weights
from skstein.discrepancy import stein_sums_and_forms
from skstein.distributions import Categorical, Gaussian, Laplace, StudentT
from skstein.experiments import rejection_rate
from skstein.gof._ksd import LangevinKSD
from skstein.gof._tilt import (
    MIN_TILT_SAMPLES,
    Tilt,
    resolve_shared_tilt,
    resolve_tilt,
    score_growth,
    spatial_median,
    tail_index,
    tail_probe,
)
from skstein.kernels import make_kernel

from _reference import assert_forms_close


def _base(kernel, h):
    if kernel == "rbf":
        return lambda x, y: np.exp(-np.sum((x - y) ** 2) / (2 * h * h))
    return lambda x, y: (1 + np.sum((x - y) ** 2) / h**2) ** -0.5


def _stein_fd(x, y, sx, sy, K, eps=1e-3):
    """The Langevin Stein kernel of the base kernel ``K``, derivatives by central
    differences: a check of the tilted kernel that does not use its formula."""
    d = x.size
    E = np.eye(d) * eps
    gx = np.array([(K(x + e, y) - K(x - e, y)) / (2 * eps) for e in E])
    gy = np.array([(K(x, y + e) - K(x, y - e)) / (2 * eps) for e in E])
    tr = sum((K(x + e, y + e) - K(x + e, y - e) - K(x - e, y + e) + K(x - e, y - e))
             / (4 * eps * eps) for e in E)
    return K(x, y) * sx @ sy + sx @ gy + sy @ gx + tr


@pytest.mark.parametrize("kernel", ["rbf", "imq"])
@pytest.mark.parametrize("q", [0.5, 1.0, 2.0])
def test_tilted_statistic_is_the_stein_kernel_of_the_weighted_base_kernel(kernel, q):
    rng = np.random.default_rng(0)
    X = rng.standard_t(3.0, size=(12, 3))
    model = StudentT(3, 3.0)
    S = model.grad_logpdf(X)
    tilt = Tilt(q, X.mean(axis=0) + 0.1, 1.7)

    def w(x):
        return (1 + np.sum((x - tilt.center) ** 2) / tilt.scale**2) ** (q / 2)

    base = _base(kernel, 1.3)

    def K(x, y):
        return w(x) * base(x, y) * w(y)

    H = np.array([[_stein_fd(X[i], X[j], S[i], S[j], K) for j in range(12)]
                  for i in range(12)])
    St, weights = tilt.apply(X, S)
    V = dense_weights(bootstrap_draws("rademacher", 12, 50, np.random.default_rng(1), "u"))
    (sums,), forms = stein_sums_and_forms(X, St, [make_kernel(kernel, 1.3)], V,
                                          weights=weights)
    off = H - np.diag(np.diag(H))
    np.testing.assert_allclose(sums.diag, np.diag(H), rtol=1e-5)
    np.testing.assert_allclose(sums.statistic("u"), off.sum() / (12 * 11), rtol=1e-5)
    np.testing.assert_allclose(sums.statistic("v"), H.sum() / 144, rtol=1e-5)
    ref = np.einsum("mi,ij,mj->m", V, off, V)
    assert_forms_close(forms[:, 0], ref, V, off + 1e-6 * np.abs(off).max())


def test_array_api_tilted_pass_equals_numba():
    xs = pytest.importorskip("array_api_strict")
    from skstein._xp_stein import xp_sums_and_forms

    rng = np.random.default_rng(2)
    X = rng.standard_t(3.0, size=(40, 2))
    tilt = Tilt(2.0, X.mean(axis=0), 1.0)
    St, w = tilt.apply(X, StudentT(2, 3.0).grad_logpdf(X))
    kernels = [make_kernel("imq", h) for h in (0.5, 2.0)]
    V = bootstrap_draws("rademacher", 40, 30, np.random.default_rng(3), "u")
    a, fa = stein_sums_and_forms(X, St, kernels, V, weights=w)
    b, fb = xp_sums_and_forms(xs.asarray(X), xs.asarray(St), kernels, V, weights=w)
    for s, t in zip(a, b):
        np.testing.assert_allclose(t.statistic("u"), s.statistic("u"), rtol=1e-10)
        np.testing.assert_allclose(t.diag, s.diag, rtol=1e-10)
    np.testing.assert_allclose(fb, fa, rtol=1e-5, atol=1e-6 * np.abs(fa).max())


@pytest.mark.parametrize("model, growth, moments, exponent", [
    (Gaussian(np.zeros(3)), 1.0, np.inf, None),
    (Laplace(3), 0.0, np.inf, 1.0),
    (StudentT(1, 6.0), -1.0, 6.0, 2.0),
    (StudentT(1, 3.0), -1.0, 3.0, 1.5),
    (StudentT(1, 1.0), -1.0, 1.0, 0.5),
    (StudentT(3, 3.0), -1.0, 9.0, 2.0),  # along a generic ray: each coordinate's tail
])
def test_tail_probe_of_known_tails(model, growth, moments, exponent):
    X = model.rvs(300, random_state=0)
    a, alpha = tail_probe(model, X)
    assert abs(a - growth) < 0.15  # a product's coordinates: not yet in their tails
    assert alpha > 100 if np.isinf(moments) else abs(alpha - moments) < 0.1 * moments
    assert score_growth(model, X) == a
    tilt = resolve_tilt(model, X, "auto")
    assert (tilt is None) if exponent is None else tilt.exponent == exponent


def test_auto_tilts_samples_of_fifty_points_and_more():
    X = np.random.default_rng(18).standard_t(6.0, size=(MIN_TILT_SAMPLES, 1))
    model = StudentT(1, 3.0)
    assert MIN_TILT_SAMPLES == 50
    assert KSDTest(model).fit(X).tilt_.exponent == 1.5
    assert KSDTest(model).fit(X[:-1]).tilt_ is None
    assert KSDTest(model, tilt=1.5).fit(X[:-1]).tilt_.exponent == 1.5  # the user's choice
    p, q = StudentT(1, 10.0), StudentT(1, 3.0)
    assert RelativeKSDTest(p, q).fit(X).tilt_ is not None
    assert RelativeKSDTest(p, q).fit(X[:-1]).tilt_ is None


def test_a_score_that_fails_far_out_gets_no_tilt():
    def score(X):
        if np.abs(X).max() > 50:
            raise ValueError("outside the model's range")
        return -X / (1 + X * X)

    X = np.random.default_rng(0).standard_normal((100, 2))
    assert np.isnan(score_growth(score, X))
    assert resolve_tilt(score, X, "auto") is None
    assert KSDTest(score, random_state=0).fit(X).tilt_ is None


def test_gaussian_model_keeps_the_plain_test_bit_for_bit():
    X = np.random.default_rng(4).standard_t(5.0, size=(150, 3))
    model = Gaussian(np.zeros(3))
    auto = KSDTest(model, random_state=0).test(X)
    plain = KSDTest(model, tilt=0, random_state=0).test(X)
    assert "tilted" not in auto.method
    np.testing.assert_array_equal(auto.statistics, plain.statistics)
    np.testing.assert_array_equal(auto.null_distribution, plain.null_distribution)
    assert auto.pvalue == plain.pvalue


def test_auto_aggregates_plain_and_tilted_kernels():
    X = np.random.default_rng(5).standard_t(6.0, size=(150, 2))
    model = StudentT(2, 3.0)
    test = KSDTest(model, random_state=0).fit(X)
    assert test.tilt_.exponent == 2.0
    assert test.geometries_ == ("euclidean",) * 10 + ("euclidean, tilted",) * 10
    res = test.test(X)
    assert "plain and tilted (q = 2)" in res.method and len(res.statistics) == 20
    plain = KSDTest(model, tilt=0, random_state=0).test(X)
    tilted = KSDTest(model, tilt=2, random_state=0).test(X)
    # one bootstrap: each half equals the test of its own kernels
    np.testing.assert_allclose(res.statistics[:10], plain.statistics, rtol=1e-12)
    np.testing.assert_allclose(res.statistics[10:], tilted.statistics, rtol=1e-12)
    np.testing.assert_array_equal(res.pvalues[:10], plain.pvalues)
    np.testing.assert_array_equal(res.pvalues[10:], tilted.pvalues)
    # unfitted, the same numbers; a single bandwidth keeps "auto" plain
    np.testing.assert_array_equal(KSDTest(model, random_state=0).test(X).statistics,
                                  res.statistics)
    assert "tilted" not in KSDTest(model, bandwidth="median", random_state=0).test(X).method
    # a number tilts a single bandwidth too (and whitened, the method says both)
    single = KSDTest(model, bandwidth="median", tilt=1.0, random_state=0).fit(X)
    assert single.geometries_ == ("euclidean, tilted",) and single.tilt_.exponent == 1.0
    res1 = single.test(X)
    assert "tilted (q = 1)" in res1.method and isinstance(res1.bandwidth, float)
    white = KSDTest(model, bandwidth="median", tilt=1.0, whiten=True, random_state=0).test(X)
    assert "whitened, tilted (q = 1)" in white.method


def test_tilt_with_whitening_and_companions():
    rng = np.random.default_rng(6)
    A = np.diag([1.0, 6.0])
    X = rng.standard_t(3.0, size=(120, 2)) @ A
    cov_model = _ScaledT(A)
    test = KSDTest(cov_model, random_state=0).fit(X)
    assert set(test.geometries_) == {"euclidean", "whitened", "euclidean, tilted",
                                     "whitened, tilted"}
    assert np.isfinite(test.test(X).pvalue)
    # the perturbed test's companions are tilted like the sample
    C = X + 0.1
    engine = LangevinKSD(test.engine_.compute)
    one = engine.score(test, X, companions=(C,))
    np.testing.assert_allclose(engine.score_companions(test, X, [C])[0], one, rtol=1e-12)


class _ScaledT:
    """Student-t(3) coordinates scaled by the diagonal ``A``."""

    def __init__(self, A):
        self.A, self.dim = np.diag(A), A.shape[0]

    def grad_logpdf(self, X):
        Z = X / self.A
        return -4.0 * Z / (3.0 + Z * Z) / self.A


@pytest.mark.parametrize("tilt", ["none", -0.5, 2.5, True, np.nan, [1.0]])
def test_bad_tilt_is_named(tilt):
    X = np.random.default_rng(0).standard_normal((50, 2))
    with pytest.raises(ValueError, match="tilt"):
        KSDTest(StudentT(2, 3.0), tilt=tilt).test(X)
    with pytest.raises(ValueError, match="tilt"):
        KSDTest(StudentT(2, 3.0), tilt=tilt).fit(X)


def test_discrete_model_refuses_a_tilt():
    model = Categorical(np.full((2, 3), 1 / 3))
    X = model.rvs(40, random_state=0)
    assert np.isfinite(KSDTest(model, random_state=0).test(X).pvalue)
    with pytest.raises(ValueError, match="tilt=1.0 is for continuous models"):
        KSDTest(model, tilt=1.0).test(X)


def test_far_outliers_keep_the_statistic_finite():
    X = np.random.default_rng(7).standard_t(3.0, size=(100, 2))
    X[0] = 1e6
    res = KSDTest(StudentT(2, 3.0), tilt=2, random_state=0).test(X)
    assert np.isfinite(res.statistic) and 0 < res.pvalue <= 1


def test_perturbed_test_runs_with_a_tilted_model():
    X = np.random.default_rng(8).standard_t(3.0, size=(120, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = PerturbedKSDTest(StudentT(1, 3.0), random_state=0).test(X)
    assert 0 < res.pvalue <= 1


def test_level_and_power_on_student_t():
    """Seeded: true Student-t(3) samples are rejected within three binomial standard
    deviations of alpha; t(6) samples, which the plain kernel misses at D = 1, are
    found by the default's tilted kernels (q = 1.5)."""
    model = StudentT(1, 3.0)
    kw = dict(n_trials=100, random_state=3, verbose=False)
    level = rejection_rate(KSDTest(model), model, 200, **kw).rate
    assert level <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 100)

    def lighter(n, rng):
        return rng.standard_t(6.0, size=(n, 1))

    plain = rejection_rate(KSDTest(model, tilt=0), lighter, 200, **kw).rate
    auto = rejection_rate(KSDTest(model), lighter, 200, **kw).rate
    assert plain < 0.15 and auto > 0.2


def test_tilted_blocked_pass_equals_the_pooled_one():
    """Beyond the pooled pass's memory, BLAS forms the Gram blocks and
    ``stein_upper_multi`` takes the weights: the same sums and forms."""
    rng = np.random.default_rng(10)
    X = rng.standard_t(3.0, size=(90, 2))
    St, w = Tilt(1.5, X.mean(axis=0), 1.2).apply(X, StudentT(2, 3.0).grad_logpdf(X))
    kernels = [make_kernel("rbf", h) for h in (0.4, 1.5)]
    V = bootstrap_draws("multinomial", 90, 40, np.random.default_rng(11), "u")
    a, fa = stein_sums_and_forms(X, St, kernels, V, weights=w)
    b, fb = stein_sums_and_forms(X, St, kernels, V, weights=w, max_memory=500)
    for s, t in zip(a, b):
        np.testing.assert_allclose(t.statistic("u"), s.statistic("u"), rtol=1e-12)
        np.testing.assert_allclose(t.rowsums, s.rowsums, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fb, fa, rtol=1e-5, atol=1e-6 * np.abs(fa).max())


def test_spatial_median_is_equivariant_and_robust():
    rng = np.random.default_rng(12)
    X = rng.standard_cauchy((400, 4))
    c = spatial_median(X)

    # it minimises the sum of distances (no small move lowers it) ...
    def total(y):
        return np.sqrt(((X - y) ** 2).sum(axis=1)).sum()

    for e in np.vstack([np.eye(4), -np.eye(4)]) * 1e-3:
        assert total(c) <= total(c + e)
    # ... moves with the sample under a rotation and a shift, and stays in its bulk
    Q = special_ortho_group.rvs(4, random_state=1)
    np.testing.assert_allclose(spatial_median(X @ Q + 5.0), c @ Q + 5.0, atol=1e-8)
    assert np.abs(c).max() < 0.3 < np.abs(X.mean(axis=0)).max()
    # one coordinate: the median
    x = rng.standard_normal((101, 1))
    np.testing.assert_allclose(spatial_median(x), np.median(x, axis=0), atol=1e-9)
    # more than half the rows at one point: that point
    Y = np.zeros((9, 2))
    Y[:3] = rng.standard_normal((3, 2))
    np.testing.assert_array_equal(spatial_median(Y), [0.0, 0.0])


@pytest.mark.parametrize("draw, low, high", [
    (lambda r: r.standard_cauchy((1000, 1)), 0.7, 1.4),
    (lambda r: r.standard_t(4.0, (1000, 3)), 2.5, 6.0),
    (lambda r: r.standard_normal((1000, 2)), 5.0, np.inf),
])
def test_tail_index_of_known_tails(draw, low, high):
    alpha = tail_index(draw(np.random.default_rng(13)))
    assert low < alpha < high


def test_tail_index_without_a_tail():
    assert np.isinf(tail_index(np.repeat([[0.0], [1.0], [-1.0]], 20, axis=0)))
    assert np.isinf(tail_index(np.zeros((30, 2))))  # too few rows to read a tail


def test_shared_tilt_is_the_smallest_and_bounded_by_the_data():
    rng = np.random.default_rng(14)
    X = rng.standard_t(6.0, size=(400, 1))
    t6, t3 = StudentT(1, 6.0), StudentT(1, 3.0)
    assert resolve_shared_tilt((t6,), X, "auto").exponent == 2.0
    assert resolve_shared_tilt((t6, t3), X, "auto").exponent == 1.5
    assert resolve_shared_tilt((t3, Gaussian(np.zeros(1))), X, "auto") is None
    # Cauchy data: at most half their order of moments, whatever the models'
    C = rng.standard_cauchy((400, 1))
    assert resolve_shared_tilt((t6,), C, "auto").exponent == 0.5
    assert resolve_shared_tilt((t6,), C, "auto", data_bound=False).exponent == 2.0
    assert resolve_tilt(t6, C, "auto").exponent == 2.0  # a goodness-of-fit test: the model's
    tilt = resolve_shared_tilt((t6, t3), X, 1.0)
    assert tilt.exponent == 1.0 and tilt.center == pytest.approx(spatial_median(X))


def test_relative_auto_aggregates_plain_and_tilted_kernels():
    X = np.random.default_rng(15).standard_t(4.0, size=(300, 1))
    p, q = StudentT(1, 10.0), StudentT(1, 4.0)
    test = RelativeKSDTest(p, q, random_state=0).fit(X)
    e = test.tilt_.exponent
    assert e > 0
    assert test.geometries_ == ("euclidean",) * 10 + ("euclidean, tilted",) * 10
    res = test.test(X)
    assert f"plain and tilted (q = {e:g}), max over 20 kernels" in res.method
    assert res.labels == test.geometries_
    plain = RelativeKSDTest(p, q, tilt=0, random_state=0).test(X)
    tilted = RelativeKSDTest(p, q, tilt=e, random_state=0).test(X)
    assert "tilted" not in plain.method and f"tilted (q = {e:g})" in tilted.method
    np.testing.assert_allclose(res.zscores[:10], plain.zscores, rtol=1e-12)
    np.testing.assert_allclose(res.zscores[10:], tilted.zscores, rtol=1e-12)
    # unfitted, the same numbers; a single bandwidth keeps "auto" plain
    np.testing.assert_array_equal(RelativeKSDTest(p, q, random_state=0).test(X).zscores,
                                  res.zscores)
    assert "tilted" not in RelativeKSDTest(p, q, bandwidth="median").test(X).method
    white = RelativeKSDTest(p, q, whiten=True, random_state=0).test(X)
    assert f"whitened, plain and tilted (q = {e:g}), max over 20 kernels" in white.method
    # the tilted statistics are the goodness-of-fit test's tilted KSDs of each model
    for model, value in ((p, tilted.discrepancy_p), (q, tilted.discrepancy_q)):
        gof = KSDTest(model, kernel="imq", bandwidth=tilted.bandwidth, tilt=e)
        assert gof.discrepancy(X) == pytest.approx(value, rel=1e-10)


def test_relative_gaussian_models_keep_the_plain_test_bit_for_bit():
    X = np.random.default_rng(16).standard_t(5.0, size=(200, 3))
    p, q = Gaussian(np.full(3, 0.2)), StudentT(3, 5.0)
    auto = RelativeKSDTest(p, q, random_state=0).test(X)
    plain = RelativeKSDTest(p, q, tilt=0, random_state=0).test(X)
    assert "tilted" not in auto.method
    np.testing.assert_array_equal(auto.zscores, plain.zscores)
    assert auto.pvalue == plain.pvalue


def test_relative_tilt_is_refused_where_it_does_not_apply():
    X = np.random.default_rng(17).standard_t(4.0, size=(60, 2))
    p, q = StudentT(2, 10.0), StudentT(2, 4.0)
    with pytest.raises(ValueError, match="tilt=1.0 is for discrepancy='ksd'"):
        RelativeKSDTest(p, q, discrepancy="maxsksd", tilt=1.0).test(X)
    assert RelativeKSDTest(p, q, discrepancy="maxsksd", random_state=0).fit(X).tilt_ is None
    with pytest.raises(ValueError, match="tilt"):
        RelativeKSDTest(p, q, tilt=3.0).test(X)
    model = Categorical(np.full((2, 3), 1 / 3))
    Z = model.rvs(40, random_state=0)
    with pytest.raises(ValueError, match="tilt=1.0 is for continuous models"):
        RelativeKSDTest(model, model, tilt=1.0).test(Z)


def test_relative_level_and_power_with_tails():
    """Seeded, 100 trials at n = 300: at a tie by symmetry that lies in the tails, on
    Cauchy data (heavier than both models), the default rejects within three binomial
    standard deviations of alpha; with Student-t(4) data, Q the truth and P a t(2), the
    tilted kernels find Q better more often than the plain ones."""

    def two_piece(left, right):
        def score(X):
            nu = np.where(X < 0.0, left, right)
            return -(nu + 1.0) * X / (nu + X * X)
        return score

    kw = dict(n_trials=100, random_state=5, verbose=False)
    level = rejection_rate(RelativeKSDTest(two_piece(3.0, 10.0), two_piece(10.0, 3.0)),
                           lambda n, r: r.standard_cauchy((n, 1)), 300, **kw).rate
    assert level <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 100)

    def t4(n, rng):
        return rng.standard_t(4.0, size=(n, 1))

    p, q = StudentT(1, 2.0), StudentT(1, 4.0)
    plain = rejection_rate(RelativeKSDTest(p, q, tilt=0), t4, 300, **kw).rate
    auto = rejection_rate(RelativeKSDTest(p, q), t4, 300, **kw).rate
    assert auto > plain + 0.1
