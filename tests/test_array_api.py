"""The Array API engine against the numba engine (``array-api-strict``, float64).

With scikit-learn's ``array_api_dispatch`` on, data of another Array API library
compute with that library (:mod:`skstein._xp_stein`); the statistics must equal the
numba path's to 1e-10 relative and the p-values exactly (the bootstrap weights are
drawn on the host from the same seed). GPU libraries are tried where present.
"""

import numpy as np
import pytest
import sklearn
from sklearn.base import clone

from skstein import (FSSDTest, KSDTest, LinearKSDTest, MaxSKSDTest, MMDGOFTest, PerturbedKSDTest,
                     PolynomialKSDTest, RelativeKSDTest, RelativeMMDTest, RFSDTest, SlicedSVGD,
                     SVGD, max_sksd, search_directions)
from skstein.discrepancy import ksd, ksd_power_criterion, stein_matrix
from skstein.distributions import Categorical, Gaussian

xs = pytest.importorskip("array_api_strict")

RTOL = 1e-10


class StrictScore:
    """N(0, I) score (plus a tilt) computed in the namespace of its input."""

    def __init__(self, dim, tilt=0.0):
        self.dim = dim
        self.tilt = tilt

    def grad_logpdf(self, X):
        import array_api_compat

        xp = array_api_compat.array_namespace(X)
        return -X + self.tilt * xp.tanh(X)


@pytest.fixture
def dispatch():
    with sklearn.config_context(array_api_dispatch=True):
        yield


def _data(n=150, d=3, seed=0):
    X = np.random.default_rng(seed).laplace(size=(n, d)) / np.sqrt(2)
    return X, xs.asarray(X)


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                               rtol=RTOL, atol=0)


@pytest.mark.parametrize("params", [
    dict(bandwidth="median"),
    dict(),
    dict(kernel="imq", statistic="v", bootstrap="rademacher"),
    dict(kernel="imq", bandwidth=[0.5, 1.0, 2.0]),
    dict(kernel="imq", kernel_params={"beta": -0.3}, bootstrap="rademacher"),
    dict(whiten="aggregate", bandwidth_weights="centred"),
    dict(whiten=True, bandwidth="median", statistic="v"),
    dict(moments=True),
], ids=["median", "aggregate", "imq-v-rademacher", "imq-given", "imq-beta", "whiten-aggregate",
        "whitened-v", "moments"])
def test_ksd_test_equals_numba_path(dispatch, params):
    X, Xs = _data()
    model = StrictScore(3, tilt=0.2)
    ref = KSDTest(model, random_state=0, **params)
    new = KSDTest(model, random_state=0, **params)
    r0, r1 = ref.test(X), new.test(Xs)
    assert "array_api" not in repr(r0)
    _close(r0.statistic, r1.statistic)
    assert r0.pvalue == r1.pvalue and r0.reject == r1.reject
    _close(r0.bandwidth, r1.bandwidth)
    if r0.statistics is not None:
        _close(r0.statistics, r1.statistics)
        np.testing.assert_array_equal(r0.pvalues, r1.pvalues)
    # the bootstrap forms are single-precision products on both engines
    np.testing.assert_allclose(r0.null_distribution, r1.null_distribution,
                               atol=1e-5 * np.abs(r0.null_distribution).max())
    assert isinstance(r1.statistic, float) and isinstance(r1.null_distribution, np.ndarray)
    _close(ref.discrepancy(X), new.discrepancy(Xs))
    _close(ref.score(X), new.score(Xs))


def test_fitted_engine_is_held_and_used(dispatch):
    X, Xs = _data()
    model = StrictScore(3)
    est = KSDTest(model, random_state=1).fit(Xs)
    assert est.engine_.compute.name == "array_api"
    ref = KSDTest(model, random_state=1).fit(X)
    assert ref.engine_.compute.name == "numba"
    _close(ref.bandwidth_, est.bandwidth_)
    assert est.n_features_in_ == 3
    assert ref.test(X).pvalue == est.test(Xs).pvalue
    with pytest.raises(ValueError, match="X is a NumPy array, but this estimator was fitted"):
        est.test(X)
    with pytest.raises(ValueError, match="X has 2 features"):
        est.test(Xs[:, :2])
    with pytest.raises(ValueError, match="fitted on NumPy data"):
        ref.test(Xs)


def test_functions_equal_numba_path(dispatch):
    X, Xs = _data(n=80)
    model = StrictScore(3, tilt=0.3)
    for kernel in ("rbf", "imq"):
        _close(ksd(X, model, kernel=kernel), ksd(Xs, model, kernel=kernel))
        _close(ksd(X, model, kernel=kernel, statistic="v"),
               ksd(Xs, model, kernel=kernel, statistic="v"))
        _close(ksd_power_criterion(X, model, kernel=kernel),
               ksd_power_criterion(Xs, model, kernel=kernel))
        H0, H1 = stein_matrix(X, model, kernel=kernel), stein_matrix(Xs, model, kernel=kernel)
        assert isinstance(H1, type(Xs))
        _close(H0, np.asarray(H1))


def test_mixed_namespaces_are_named(dispatch):
    X, Xs = _data(n=40)
    numpy_model = Gaussian(np.zeros(3))  # returns NumPy arrays for any input
    with pytest.raises(ValueError, match="the score of model returned an array of numpy"):
        KSDTest(numpy_model, random_state=0).test(Xs)
    with pytest.raises(ValueError, match="the score of model returned an array of numpy"):
        ksd(Xs, numpy_model)
    with pytest.raises(ValueError, match="shape"):
        KSDTest(lambda Z: Z[:, :2], random_state=0).test(Xs)
    with pytest.raises(ValueError, match="not finite"):
        KSDTest(lambda Z: Z / 0.0, random_state=0).test(Xs)
    with pytest.raises(ValueError, match="contains NaN"):
        KSDTest(StrictScore(3), random_state=0).test(xs.asarray(np.full((5, 3), np.nan)))
    with pytest.raises(ValueError, match="the score of model returned complex values"):
        KSDTest(lambda Z: xs.astype(-Z, xs.complex128), random_state=0).test(Xs)
    with pytest.raises(ValueError, match="the score of target returned complex values"):
        SVGD(lambda Z: xs.astype(-Z, xs.complex128), n_iter=1).fit(Xs)
    with pytest.raises(ValueError, match="the score of target returned complex values"):
        SlicedSVGD(lambda Z: xs.astype(-Z, xs.complex128), n_iter=1).fit(Xs)
    with pytest.raises(ValueError, match="X must be a NumPy array for a discrete model"):
        KSDTest(Categorical(np.full((2, 3), 1 / 3)), random_state=0).test(
            xs.asarray(np.zeros((10, 2), dtype=np.int64)))


class _Sampler(StrictScore):
    def rvs(self, n, random_state=None):
        return np.random.default_rng(random_state).standard_normal((n, self.dim))


class _Density(_Sampler):
    def logpdf(self, X):
        return -0.5 * np.sum(np.asarray(X, dtype=np.float64) ** 2, axis=1)


@pytest.mark.parametrize("call", [
    lambda X: MaxSKSDTest(_Sampler(3), n_bootstrap=20, random_state=0).partial_fit(X),
    lambda X: FSSDTest(_Sampler(3), random_state=0).test(X),
    lambda X: LinearKSDTest(_Sampler(3), random_state=0).test(X),
    lambda X: RFSDTest(_Sampler(3), random_state=0).test(X),
    lambda X: MMDGOFTest(_Sampler(3), random_state=0).test(X),
    lambda X: RelativeMMDTest(_Sampler(3), _Sampler(3), random_state=0).test(X),
    lambda X: max_sksd(X, _Sampler(3), directions=np.eye(3), slices=np.eye(3)),
    lambda X: search_directions(X, _Sampler(3), random_state=0),
    lambda X: PerturbedKSDTest(_Density(3), random_state=0).test(X),
    lambda X: PerturbedKSDTest(_Density(3), random_state=0).fit(X),
    lambda X: PolynomialKSDTest(_Sampler(3), random_state=0).test(X),
    lambda X: PolynomialKSDTest(_Sampler(3), random_state=0).fit(X),
], ids=["maxsksd-partial-fit", "fssd", "linear", "rfsd", "mmd", "relative-mmd",
        "max_sksd", "search_directions", "perturbed-test", "perturbed-fit", "polynomial-test",
        "polynomial-fit"])
def test_cpu_only_computations_name_a_device_array(dispatch, call):
    # the estimators and functions without a device path refuse device data by name
    # (scikit-learn's own check failed with "'dtype' must be a dtype")
    _, Xs = _data(n=60)
    with pytest.raises(ValueError, match="X is an array of array_api_strict .* runs on the "
                                         "CPU only .* pass X as a NumPy array"):
        call(Xs)


@pytest.mark.parametrize("params", [
    dict(),
    dict(moment=False),
    dict(cv=2),
    dict(kernel="imq", statistic="v", bootstrap="rademacher"),
    dict(kernel="imq", kernel_params={"beta": -0.3}, moment=True),
    dict(variant="rg", n_slices=2),
    dict(test_bandwidth="aggregate"),
    dict(whiten=True),
    dict(whiten="aggregate", cv=3, test_bandwidth=0.7),
], ids=["default", "paper", "cv2", "imq-v-rademacher", "imq-beta-moment", "rg",
        "aggregate", "whiten", "whiten-aggregate-cv3"])
def test_maxsksd_test_stage_on_the_device_equals_numba(dispatch, monkeypatch, params):
    # the directions are learned on host copies; the sliced statistics' sums and forms
    # and the second moments' forms run in the data's namespace: the same statistics to
    # 1e-10, the same p-values
    import skstein._xp_sliced as xp_sliced
    import skstein.gof._maxsksd as maxsksd_module

    calls = []
    for name in ("xp_sliced_sums_and_forms", "xp_linear_forms"):
        real = getattr(xp_sliced, name)
        monkeypatch.setattr(maxsksd_module, name,
                            lambda *a, _real=real, _name=name, **k: calls.append(_name)
                            or _real(*a, **k))
    X, Xs = _data(n=120, d=4)
    test = MaxSKSDTest(StrictScore(4, tilt=0.2), n_bootstrap=200, random_state=0, **params)
    with sklearn.config_context(array_api_dispatch=False):
        r0 = test.test(X)
    r1 = test.test(Xs)
    assert "xp_sliced_sums_and_forms" in calls
    assert ("xp_linear_forms" in calls) == (params.get("moment", "pooled") == "pooled")
    _close(r0.statistic, r1.statistic)
    assert r0.pvalue == r1.pvalue and r0.reject == r1.reject
    if r0.pvalues is not None:
        np.testing.assert_array_equal(r0.pvalues, r1.pvalues)
        _close(r0.statistics, r1.statistics)
    scale = np.abs(r0.null_distribution).max()
    np.testing.assert_allclose(r0.null_distribution, r1.null_distribution, rtol=1e-9,
                               atol=1e-12 * scale)
    assert isinstance(r1.pvalue, float) and isinstance(r1.null_distribution, np.ndarray)


def test_fitted_maxsksd_tests_device_data(dispatch):
    # fitted on NumPy or on device data (its learning runs on host copies either way: the
    # same fitted directions), it tests device data with the CPU's results

    X, Xs = _data(n=140, d=3, seed=2)
    test = MaxSKSDTest(StrictScore(3), n_bootstrap=200, random_state=0)
    on_device = clone(test).fit(Xs[:60, :])
    with sklearn.config_context(array_api_dispatch=False):
        test.fit(X[:60])
        r0 = test.test(X[60:])
        d0 = test.discrepancy(X[60:])
    np.testing.assert_array_equal(on_device.directions_, test.directions_)
    assert on_device.n_features_in_ == 3
    for fitted in (test, on_device):
        r1 = fitted.test(Xs[60:, :])
        assert r0.pvalue == r1.pvalue
        _close(r0.statistics, r1.statistics)
        _close(d0, fitted.discrepancy(Xs[60:, :]))
    with pytest.raises(ValueError, match="X is an array of array_api_strict"):
        on_device.partial_fit(Xs[:60, :])
    with pytest.raises(ValueError, match="X has 2 features, but MaxSKSDTest is expecting 3"):
        test.test(Xs[60:, :2])
    with pytest.raises(ValueError, match="the score of model returned an array of numpy"):
        MaxSKSDTest(Gaussian(np.zeros(3)), random_state=0).test(Xs)


def test_device_array_without_dispatch_is_an_error():
    _, Xs = _data(n=20)
    with pytest.raises(ValueError, match="array_api_dispatch"):
        KSDTest(StrictScore(3), random_state=0).test(Xs)
    with pytest.raises(ValueError, match="array_api_dispatch"):
        ksd(Xs, StrictScore(3))


def test_relative_ksd_equals_numba_path(dispatch):
    X, Xs = _data()
    p, q = StrictScore(3, tilt=0.0), StrictScore(3, tilt=0.4)
    for params in (dict(), dict(bandwidth="median", variance="jackknife")):
        r0 = RelativeKSDTest(p, q, random_state=0, **params).test(X)
        r1 = RelativeKSDTest(p, q, random_state=0, **params).test(Xs)
        _close(r0.statistic, r1.statistic)
        _close(r0.zscore, r1.zscore)
        assert r0.pvalue == pytest.approx(r1.pvalue, rel=1e-8) and r0.reject == r1.reject


def _gpu_namespaces():
    out = []
    try:
        import torch

        if torch.cuda.is_available():
            out.append(("torch", lambda A: torch.asarray(A, device="cuda")))
    except ImportError:
        pass
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            out.append(("cupy", cupy.asarray))
    except Exception:  # no CuPy, or no device
        pass
    return out


@pytest.mark.parametrize("lib", _gpu_namespaces() or [pytest.param(None, marks=pytest.mark.skip(
    reason="no GPU library with a device here"))], ids=lambda v: v[0] if v else "none")
def test_gpu_equals_numba_path(dispatch, lib):
    _, move = lib
    X, _ = _data(n=300, d=5)
    model = StrictScore(5, tilt=0.2)
    r0 = KSDTest(model, random_state=0).test(X)
    r1 = KSDTest(model, random_state=0).test(move(X))
    _close(r0.statistics, r1.statistics)
    assert r0.pvalue == r1.pvalue
    r0 = MaxSKSDTest(model, n_bootstrap=300, random_state=0).test(X)
    r1 = MaxSKSDTest(model, n_bootstrap=300, random_state=0).test(move(X))
    _close(r0.statistics, r1.statistics)
    assert r0.pvalue == r1.pvalue


def test_slice_blocks_do_not_change_the_sliced_sums(dispatch, monkeypatch):
    import skstein._xp_sliced as xp_sliced
    from skstein._bootstrap import bootstrap_weights
    from skstein.discrepancy import sliced_sums_and_forms

    X, Xs = _data(n=41, d=5)
    S = -X + 0.3 * np.tanh(X)
    G = np.random.default_rng(1).standard_normal((5, 5))
    G /= np.linalg.norm(G, axis=1, keepdims=True)
    rows = np.full((2, 5), 0.8) * np.array([[1.0], [2.0]])
    V = bootstrap_weights("multinomial", 41, 30, np.random.default_rng(2))
    ref, fr = sliced_sums_and_forms(X, S, G, np.eye(5), rows, V)
    monkeypatch.setattr(xp_sliced, "DEVICE_MAX_MEMORY", 1)
    # two pairs and 6 rows a block; then the whole matrix at once
    for memory in (8 * 8 * 41 * 2 * 6, 2**30):
        sums, forms = xp_sliced.xp_sliced_sums_and_forms(Xs, xs.asarray(S), G, np.eye(5),
                                                         rows, V, max_memory=memory)
        for a, b in zip(ref, sums):
            _close(a.pair_sums, b.pair_sums)
            _close(a.rowsums, b.rowsums)
            _close(a.diag, b.diag)
        np.testing.assert_allclose(fr, forms, rtol=1e-10, atol=1e-12 * np.abs(fr).max())
    # the second moments' forms, by blocks of 3 rows and whole
    from skstein.gof._maxsksd import second_moment_upper

    U = second_moment_upper(X, S)
    slow = np.array([2.0 * v @ U @ v for v in V])
    for memory in (8 * 41 * xp_sliced.LINEAR_BLOCK_ARRAYS * 3, 2**30):
        got = xp_sliced.xp_linear_forms(Xs, xs.asarray(S), V, max_memory=memory)
        np.testing.assert_allclose(got, slow, rtol=1e-10, atol=1e-12 * np.abs(slow).max())


def test_blocks_do_not_change_the_sums(dispatch, monkeypatch):
    import skstein._xp_stein as xps
    from skstein._bootstrap import bootstrap_weights
    from skstein.kernels import make_kernel

    X, Xs = _data(n=97, d=4)
    S = -X + 0.3 * np.tanh(X)
    kernels = [make_kernel("imq", h, None) for h in (0.5, 2.0)]
    V = bootstrap_weights("rademacher", 97, 50, np.random.default_rng(0))
    whole, fw = xps.xp_sums_and_forms(Xs, xs.asarray(S), kernels, V)
    monkeypatch.setattr(xps, "DEVICE_MAX_MEMORY", 1)
    blocks, fb = xps.xp_sums_and_forms(Xs, xs.asarray(S), kernels, V, max_memory=60000)
    assert xps._rows_per_block(97, 2, 50, 8, 60000) < 97
    for a, b in zip(whole, blocks):
        _close(a.rowsums, b.rowsums)
        _close(a.offdiag_sum, b.offdiag_sum)
    np.testing.assert_allclose(fw, fb, rtol=1e-6, atol=1e-6 * np.abs(fw).max())


def test_packed_signs_unpack_on_the_device(dispatch):
    import skstein._xp_stein as xps
    from skstein._bootstrap import bootstrap_draws
    from skstein.kernels import make_kernel

    X, Xs = _data(n=53, d=2)
    S = -X + 0.3 * np.tanh(X)
    kernels = [make_kernel("rbf", h, None) for h in (0.5, 2.0)]
    P = bootstrap_draws("rademacher", 53, 30, np.random.default_rng(4))
    W, s = xps._device_weights(xs, P, xs.float32, None)
    assert s == P.scale
    np.testing.assert_array_equal(np.asarray(W) * s, P.dense(np.float32))
    packed = xps.xp_sums_and_forms(Xs, xs.asarray(S), kernels, P)[1]
    dense = xps.xp_sums_and_forms(Xs, xs.asarray(S), kernels, P.dense())[1]
    np.testing.assert_allclose(packed, dense, rtol=1e-6, atol=1e-6 * np.abs(dense).max())


@pytest.mark.parametrize("d", [1, 3, 40])
@pytest.mark.parametrize("case", ["plain", "subsample", "repeated-rows", "mostly-repeated"])
def test_bandwidth_heuristics_on_the_device_equal_the_host(dispatch, case, d):
    from skstein.kernels import bandwidth_grid, median_bandwidth

    X, _ = _data(n=160, d=d, seed=2)
    if case == "repeated-rows":   # exact zeros, and pairs where the Gram identity fails
        X[10:40] = X[0]
    if case == "mostly-repeated":   # a zero median: the positive distances decide
        X[:130] = X[0]
    kw = dict(max_points=100) if case == "subsample" else {}
    for q in (bandwidth_grid, median_bandwidth):
        host = q(X, random_state=np.random.default_rng(7), **kw)
        dev = q(xs.asarray(X), random_state=np.random.default_rng(7), **kw)
        _close(host, dev)
    with pytest.raises(ValueError, match="no two distinct rows"):
        median_bandwidth(xs.asarray(np.ones((5, 2))))
    with pytest.raises(ValueError, match="NaN or infinity"):
        bandwidth_grid(xs.asarray(np.full((5, 2), np.nan)))
    with pytest.raises(ValueError, match="at least 2 rows"):
        median_bandwidth(xs.asarray(np.ones((1, 2))))


def test_float32_data_compute_in_float32(dispatch):
    X, _ = _data(n=120)
    model = StrictScore(3, tilt=0.2)
    for params in (dict(), dict(whiten="aggregate")):
        r64 = KSDTest(model, random_state=0, **params).test(X)
        X32 = xs.asarray(X, dtype=xs.float32)
        r32 = KSDTest(model, random_state=0, **params).test(X32)
        np.testing.assert_allclose(r32.statistics, r64.statistics, rtol=1e-3)
        assert r32.reject == r64.reject
    # the whitening maps come over in the data's dtype
    est = KSDTest(model, whiten=True, random_state=0).fit(X32)
    A = est.engine_.compute.like(est.whitening_[0], X32)
    assert A.dtype == xs.float32


class StrictStudentT:
    """Student-t(``df``) coordinates, the score in the namespace of its input: a tilted
    test."""

    dim = 2

    def __init__(self, df=3.0):
        self.df = df

    def grad_logpdf(self, X):
        return -(self.df + 1.0) * X / (self.df + X * X)


def test_tilted_ksd_test_equals_numba_path(dispatch):
    X = np.random.default_rng(9).standard_t(6.0, size=(150, 2))
    model = StrictStudentT()
    r0 = KSDTest(model, random_state=0).test(X)
    fitted = KSDTest(model, random_state=0).fit(xs.asarray(X))
    r1 = fitted.test(xs.asarray(X))
    assert "tilted (q = 2)" in r0.method and r1.method == r0.method
    assert fitted.tilt_.exponent == 2.0
    _close(r0.statistics, r1.statistics)
    np.testing.assert_array_equal(r0.pvalues, r1.pvalues)
    assert r0.pvalue == r1.pvalue


def test_tilted_relative_ksd_equals_numba_path(dispatch):
    X = np.random.default_rng(10).standard_t(4.0, size=(150, 2))
    p, q = StrictStudentT(10.0), StrictStudentT(4.0)
    r0 = RelativeKSDTest(p, q, random_state=0).test(X)
    fitted = RelativeKSDTest(p, q, random_state=0).fit(xs.asarray(X))
    r1 = fitted.test(xs.asarray(X))
    assert "plain and tilted" in r0.method and r1.method == r0.method
    assert fitted.geometries_[-1] == "euclidean, tilted"
    _close(r0.statistics, r1.statistics)
    _close(r0.zscores, r1.zscores)
    assert r0.pvalue == pytest.approx(r1.pvalue, rel=1e-8) and r0.reject == r1.reject


class StrictSampler(StrictScore):
    """:class:`StrictScore` with an exact sampler (NumPy draws): a Monte Carlo null."""

    def rvs(self, n, random_state=None):
        rng = np.random.default_rng(random_state)
        return rng.standard_normal((n, self.dim)) + 0.2 * np.tanh(rng.standard_normal((n, 1)))


def test_monte_carlo_null_equals_numba_path(dispatch):
    X, Xs = _data(n=60)
    model = StrictSampler(3, tilt=0.2)
    for params in (dict(), dict(bandwidth="median", whiten=True)):
        test = KSDTest(model, bootstrap="monte-carlo", n_bootstrap=30, random_state=0,
                       **params)
        r0, r1 = test.test(X), clone(test).test(Xs)
        assert r1.bootstrap == "monte-carlo" and r1.method == r0.method
        _close(r0.statistic, r1.statistic)
        _close(r0.null_distribution, r1.null_distribution)
        assert r0.pvalue == r1.pvalue and r0.reject == r1.reject
