"""SVGD and SlicedSVGD on Array API arrays (``array_api_strict``; a GPU when present)."""

import numpy as np
import pytest
import sklearn

from skstein import SVGD, SlicedSVGD
from skstein.distributions import Gaussian

xps = pytest.importorskip("array_api_strict")


@pytest.fixture
def dispatch(monkeypatch):
    # scikit-learn checks the variable when dispatch is switched on; NumPy inputs
    # behave the same with it
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    with sklearn.config_context(array_api_dispatch=True):
        yield


def _score(mu, cov):
    prec = np.linalg.inv(cov)

    def score(X):
        if isinstance(X, np.ndarray):
            return -(X - mu) @ prec
        ns = X.__array_namespace__()
        return -(X - ns.asarray(mu)) @ ns.asarray(prec)

    return score


MU = np.array([0.5, -1.0, 0.0, 2.0])
AR1 = 0.8 ** np.abs(np.subtract.outer(np.arange(4), np.arange(4)))


@pytest.mark.parametrize("cls,kw", [
    (SVGD, {}),
    (SVGD, dict(kernel="imq", optimizer="adam")),
    (SVGD, dict(bandwidth=0.8, optimizer="sgd")),
    (SlicedSVGD, {}),
    (SlicedSVGD, dict(kernel="imq", slice_update_tol=0.0, slice_update_every=2,
                      bandwidth_every=3)),
    (SlicedSVGD, dict(slices="score", slice_update_tol=0.0, slice_update_every=3)),
    (SVGD, dict(step_scale="spread")),
    (SVGD, dict(step_scale="spread", optimizer="sgd")),
    (SlicedSVGD, dict(slices="score", step_scale="spread", optimizer="adam")),
], ids=["svgd", "svgd-imq-adam", "svgd-fixed-sgd", "sliced", "sliced-imq", "sliced-score",
        "svgd-spread", "svgd-spread-sgd", "sliced-score-spread-adam"])
def test_array_api_particles_equal_the_numba_path(dispatch, cls, kw):
    X0 = np.random.default_rng(0).standard_normal((40, 4)) + 1.0
    score = _score(MU, AR1)
    a = cls(score, n_iter=8, history_every=3, **kw).fit(X0)  # NumPy: the numba path
    b = cls(score, n_iter=8, history_every=3, **kw).fit(xps.asarray(X0))
    assert isinstance(b.particles_, type(xps.asarray(X0)))
    P = np.asarray(b.particles_)
    np.testing.assert_allclose(P, a.particles_, rtol=1e-10, atol=1e-10 * np.abs(P).max())
    # the history: its values computed on the device, read back as floats
    for key in ("discrepancy", "repulsive_force", "variance", "step_norm"):
        np.testing.assert_allclose(b.history_[key], a.history_[key], rtol=1e-9, err_msg=key)
    if cls is SlicedSVGD:
        np.testing.assert_allclose(np.asarray(b.directions_), a.directions_, rtol=1e-9,
                                   atol=1e-12)
        assert b.n_direction_updates_ == a.n_direction_updates_
    # move keeps the namespace and the fitted settings
    X = np.random.default_rng(1).standard_normal((25, 4))
    moved = b.move(xps.asarray(X), n_iter=4)
    assert isinstance(moved, type(b.particles_))
    np.testing.assert_allclose(np.asarray(moved), a.move(X, n_iter=4), rtol=1e-10,
                               atol=1e-12)


def test_default_draws_stay_on_numpy(dispatch):
    a = SVGD(Gaussian(np.zeros(3)), n_particles=20, n_iter=5, random_state=0).fit()
    assert isinstance(a.particles_, np.ndarray)


@pytest.mark.parametrize("cls", [SVGD, SlicedSVGD])
def test_mixed_namespaces_raise(dispatch, cls):
    X0 = xps.asarray(np.random.default_rng(0).standard_normal((20, 3)))
    # a NumPy score for array-api-strict particles: the error names the score
    with pytest.raises(ValueError, match="score of target"):
        cls(lambda X: -np.asarray(X), n_iter=3).fit(X0)
    # a score on another device
    other = xps.Device("device1")

    def elsewhere(X):
        return xps.asarray(-np.asarray(X), device=other)

    with pytest.raises(ValueError, match="score of target.*device"):
        cls(elsewhere, n_iter=3).fit(X0)
    # NumPy particles with a score that returns device arrays
    with pytest.raises(ValueError, match="score of target"):
        cls(lambda X: xps.asarray(-X), n_iter=3).fit(np.asarray(X0))


def test_device_arrays_need_dispatch():
    X0 = xps.asarray(np.random.default_rng(0).standard_normal((20, 3)))
    with sklearn.config_context(array_api_dispatch=False):
        with pytest.raises(ValueError, match="X0 is an array of array_api_strict"):
            SVGD(lambda X: -X, n_iter=3).fit(X0)


def _gpu_namespace():
    try:
        import torch

        if torch.cuda.is_available():
            return "torch", lambda a: torch.asarray(a, device="cuda")
    except ImportError:
        pass
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            return "cupy", cupy.asarray
    except Exception:
        pass
    return None, None


@pytest.mark.parametrize("cls", [SVGD, SlicedSVGD])
def test_gpu_particles_equal_the_numba_path(dispatch, cls):
    name, put = _gpu_namespace()
    if name is None:
        pytest.skip("no GPU with torch or cupy")
    X0 = np.random.default_rng(0).standard_normal((300, 20)) + 1.0
    mu = np.linspace(-1, 1, 20)

    def score(X):
        if isinstance(X, np.ndarray):
            return -(X - mu)
        return -(X - put(mu))

    a = cls(score, n_iter=5).fit(X0)
    b = cls(score, n_iter=5).fit(put(X0))
    from skstein._xp import to_host

    assert type(b.particles_) is type(put(X0))
    np.testing.assert_allclose(to_host(b.particles_), a.particles_, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("cls", [SVGD, SlicedSVGD])
def test_float32_particles_keep_their_dtype_and_a_finite_history(dispatch, cls):
    # the history's discrepancy runs on a float64 copy of the float32 particles (the
    # compiled pass calls double-precision BLAS)
    X0 = np.random.default_rng(1).standard_normal((40, 4)) + 1.0
    score = _score(MU, AR1)
    a = cls(score, n_iter=4, history_every=2).fit(X0)
    b = cls(score, n_iter=4, history_every=2).fit(xps.asarray(X0, dtype=xps.float32))
    assert b.particles_.dtype == xps.float32
    assert np.all(np.isfinite(b.history_["discrepancy"]))
    np.testing.assert_allclose(b.history_["discrepancy"], a.history_["discrepancy"], rtol=1e-3)


def test_stein_sums_of_float32_equal_those_of_float64():
    from skstein.discrepancy import stein_sums
    from skstein.kernels import RBF

    X = np.random.default_rng(2).standard_normal((50, 3)).astype(np.float32)
    S = -X
    a = stein_sums(X, S, RBF(1.0))
    b = stein_sums(X.astype(np.float64), S.astype(np.float64), RBF(1.0))
    assert a.offdiag_sum == b.offdiag_sum


def _on(device):
    """A score of N(mu, AR1) that makes its constants on the particles' device."""
    prec = np.linalg.inv(AR1)

    def score(X):
        if isinstance(X, np.ndarray):
            return -(X - MU) @ prec
        return -(X - xps.asarray(MU, device=X.device)) @ xps.asarray(prec, device=X.device)

    return score


@pytest.mark.parametrize("cls,kw", [
    (SVGD, {}),
    (SlicedSVGD, dict(slice_update_tol=0.0, slice_update_every=7, bandwidth_every=5)),
    (SlicedSVGD, dict(slices="score", slice_update_tol=0.0, slice_update_every=7)),
], ids=["svgd", "sliced", "sliced-score"])
def test_checks_every_few_iterations_on_a_device(dispatch, cls, kw):
    # array-api-strict's "device1" stands for a GPU: the particles are checked every
    # DEVICE_CHECK_EVERY iterations (and at recorded ones) instead of at each
    from skstein.svgd import DEVICE_CHECK_EVERY

    dev = xps.Device("device1")
    X0 = np.random.default_rng(3).standard_normal((30, 4)) + 1.0
    n_iter = 2 * DEVICE_CHECK_EVERY + 3
    a = cls(_on(dev), n_iter=n_iter, history_every=11, **kw).fit(X0)
    b = cls(_on(dev), n_iter=n_iter, history_every=11, **kw).fit(xps.asarray(X0, device=dev))
    assert b.particles_.device == dev
    from skstein._xp import to_host

    np.testing.assert_allclose(to_host(b.particles_), a.particles_, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(b.history_["iteration"], a.history_["iteration"])
    # SVGD's history discrepancy is computed on the device there
    for key in ("discrepancy", "repulsive_force", "variance", "step_norm"):
        np.testing.assert_allclose(b.history_[key], a.history_[key], rtol=1e-9, err_msg=key)
    if cls is SlicedSVGD:
        assert b.n_direction_updates_ == a.n_direction_updates_


@pytest.mark.parametrize("kw", [
    dict(slices="score", slice_steps=2, slice_update_tol=0.0, slice_update_every=3),
    dict(bandwidth=0.7, slice_update_every=4, bandwidth_every=3, slice_update_tol=0.0),
    dict(kernel="imq", slice_update_every=4, slice_update_tol=0.0),
], ids=["score-slices", "fixed-bandwidth", "imq-on-the-host"])
def test_sliced_directions_and_medians_on_a_device(dispatch, kw):
    # the direction ascent, the medians and the history's discrepancy of SlicedSVGD
    # run on the device (RBF kernel; IMQ's on host copies): the host's numbers
    from skstein._xp import to_host

    dev = xps.Device("device1")
    X0 = np.random.default_rng(5).standard_normal((35, 4)) * 1.5 + 1.0
    a = SlicedSVGD(_on(dev), n_iter=11, history_every=2, **kw).fit(X0)
    b = SlicedSVGD(_on(dev), n_iter=11, history_every=2, **kw).fit(
        xps.asarray(X0, device=dev))
    assert b.n_direction_updates_ == a.n_direction_updates_ >= 3
    np.testing.assert_allclose(to_host(b.directions_), a.directions_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(to_host(b.particles_), a.particles_, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(b.history_["discrepancy"], a.history_["discrepancy"],
                               rtol=1e-9)


def test_sliced_pass_of_batched_moments_equals_the_compiled_pass():
    # the pair sums from the seven row moments of E = exp(-q delta^2), on projections
    # far from zero and in blocks of 2 slices, against the compiled pass
    from skstein._flows_xp import sliced_pass_xp
    from skstein._gradients import _sliced_pass
    from skstein.discrepancy import _sliced_kernel_params
    from skstein.flows import projection_medians

    rng = np.random.default_rng(1)
    n, d = 57, 5
    X = rng.standard_normal((n, d)) * 2.0 + 30.0
    S = -X + rng.standard_normal((n, d))
    G = rng.standard_normal((d, d))
    G /= np.linalg.norm(G, axis=1, keepdims=True)
    R = np.linalg.qr(rng.standard_normal((d, d)))[0]
    U, A, c = X @ G.T, S @ R.T, np.einsum("kd,kd->k", R, G)
    code, p0, _ = _sliced_kernel_params("rbf", projection_medians(U), None)
    hsum, rho, _, psisum = _sliced_pass(code, p0, 0.0, U, A, c, with_beta=False)
    h2, r2, p2 = sliced_pass_xp(xps, *(xps.asarray(v) for v in (U, A, c, p0)),
                                budget=8 * n * n * 3 * 2)
    np.testing.assert_allclose(np.asarray(h2), hsum, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(p2), psisum, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(r2), rho, rtol=1e-10, atol=1e-12 * np.abs(rho).max())
    h3, r3, _ = sliced_pass_xp(xps, *(xps.asarray(v) for v in (U, A, c, p0)), with_rho=False)
    assert r3 is None
    np.testing.assert_allclose(np.asarray(h3), hsum, rtol=1e-10)


@pytest.mark.parametrize("case", ["distinct", "ties", "zero-median", "constant", "two",
                                  "beyond-1000"])
def test_device_projection_medians_equal_the_hosts(case):
    from skstein._flows_xp import projection_medians_xp
    from skstein.flows import projection_medians

    rng = np.random.default_rng(4)
    U = rng.standard_normal((60, 4))
    if case == "ties":
        U = np.round(U * 2.0)
    elif case == "zero-median":
        U[:45, 0] = 1.0           # most pairs of column 0 coincide
        U[:50, 2] = -2.0
    elif case == "constant":
        U[:, 1] = 3.0             # no positive difference: 1
    elif case == "two":
        U = U[:2]
    elif case == "beyond-1000":
        U = rng.standard_normal((1003, 2))   # the first 1000 rows, as on the host
        U[1000:] = 1e6
    got = projection_medians_xp(xps, xps.asarray(U, device=xps.Device("device1")),
                                budget=8 * U.shape[0] ** 2 * 3)
    np.testing.assert_array_equal(got, projection_medians(U))
    bad = U.copy()
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match="not finite"):
        projection_medians_xp(xps, xps.asarray(bad))


@pytest.mark.parametrize("cls,kw", [
    (SVGD, {}), (SlicedSVGD, {}),
    (SlicedSVGD, dict(slices=np.array([[0.6, 0.8], [-0.8, 0.6]]))),  # the slices' step
], ids=["svgd", "sliced", "sliced-slices"])
def test_deferred_checks_name_the_iteration_and_the_cause(dispatch, cls, kw):
    # a check that fails runs the iterations since the last good one again, one by
    # one: the error is the one the CPU path raises, at the same iteration
    import re

    dev = xps.Device("device1")
    X0 = np.random.default_rng(0).standard_normal((50, 2))
    est = cls(lambda X: 10.0 * X, n_iter=60, step_size=1e6, optimizer="sgd",
              history_every=1000, **kw)
    with pytest.raises(ValueError) as cpu, np.errstate(all="ignore"):
        est.fit(X0)
    with pytest.raises(ValueError) as gpu, np.errstate(all="ignore"):
        est.fit(xps.asarray(X0, device=dev))
    assert str(gpu.value) == str(cpu.value)
    if cls is SVGD:
        at = re.search(r"diverged at iteration (\d+)", str(cpu.value)).group(1)
        assert 0 < int(at) < 60

    # a score that turns non-finite at iteration 20, between two checks
    calls = []

    def score(X):
        calls.append(1)
        out = -X
        if len(calls) > 20:
            out = out * xps.asarray(float("nan"), device=X.device)
        return out

    with pytest.raises(ValueError, match="score of target is not finite at 50"), \
            np.errstate(all="ignore"):
        cls(score, n_iter=40, history_every=1000, **kw).fit(xps.asarray(X0, device=dev))


@pytest.mark.parametrize("code,beta", [(0, -0.5), (1, -0.5), (1, -0.3)],
                         ids=["rbf", "imq", "imq-beta"])
def test_sliced_terms_by_batched_products_equal_the_double_loop(code, beta):
    # the kernels of a block of slices as one (b, N, N) array, the sums as batched
    # products on projections centred per slice: against the obvious loops, with
    # projections far from 0 and blocks of 2 slices
    from skstein._flows_xp import sliced_svgd_terms_xp

    rng = np.random.default_rng(7)
    n, m = 9, 5
    U = rng.standard_normal((n, m)) * 2.0 + 50.0
    S = rng.standard_normal((n, m))
    g = rng.uniform(0.2, 1.0, m)
    p0 = rng.uniform(0.1, 2.0, m)
    drive = np.zeros((n, m))
    repulse = np.zeros((n, m))
    for i in range(n):
        for d in range(m):
            for j in range(n):
                diff = U[j, d] - U[i, d]
                t = diff * diff
                if code == 0:
                    k = np.exp(-p0[d] * t)
                    k1 = -p0[d] * k
                else:
                    k = (1.0 + p0[d] * t) ** beta
                    k1 = beta * p0[d] * (1.0 + p0[d] * t) ** (beta - 1.0)
                drive[i, d] += k * S[j, d]
                repulse[i, d] += 2.0 * g[d] * diff * k1
    for budget in (None, 8 * n * n * 3 * 2):
        got = sliced_svgd_terms_xp(xps, xps.asarray(U), xps.asarray(S), xps.asarray(g),
                                   xps.asarray(p0), code, beta, budget=budget)
        np.testing.assert_allclose(np.asarray(got[0]), drive, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(got[1]), repulse, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("case", ["distinct", "ties", "mostly-repeated", "all-equal", "two"])
def test_device_median_of_the_pairs(case):
    # the median of the squared distances i < j (of the positive ones when that is 0,
    # 1 when none is), from one sort of the N x N matrix and a binary search
    from skstein._flows_xp import median_squared_distance_xp

    rng = np.random.default_rng(11)
    X = {"distinct": rng.standard_normal((9, 2)),
         "ties": np.repeat(rng.standard_normal((4, 2)), [3, 2, 2, 1], axis=0),
         "mostly-repeated": np.vstack([np.zeros((7, 2)), rng.standard_normal((3, 2))]),
         "all-equal": np.ones((5, 2)),
         "two": rng.standard_normal((2, 2))}[case]
    T = ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
    pairs = T[np.triu_indices(X.shape[0], 1)]
    want = np.median(pairs)
    if want == 0:
        want = np.median(pairs[pairs > 0]) if np.any(pairs > 0) else 1.0
    got = float(median_squared_distance_xp(xps, xps.asarray(T)))
    assert got == pytest.approx(want, rel=1e-14)
