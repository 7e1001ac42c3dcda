"""The (sliced) SVGD field at given particles: ``SVGD.direction``, ``SlicedSVGD.direction``."""

import numpy as np
import pytest

from skstein import SVGD, SlicedSVGD
from skstein.discrepancy import sliced_value_and_grad
from skstein.distributions import Gaussian

MU = np.array([1.0, -0.5, 0.0])
COV = 0.8 ** np.abs(np.subtract.outer(np.arange(3), np.arange(3)))
PREC = np.linalg.inv(COV)


def score(X):
    """Score of N(MU, COV) over the last axis (any leading shape)."""
    return -(X - MU) @ PREC


def _field_loops(X, S, h, kernel):
    """phi(x_i) = 1/N sum_j [k(x_j, x_i) s(x_j) + grad_{x_j} k(x_j, x_i)], by a double loop."""
    n = X.shape[0]
    phi = np.zeros_like(X)
    for i in range(n):
        for j in range(n):
            diff = X[j] - X[i]
            t = diff @ diff
            if kernel == "rbf":
                k = np.exp(-t / (2 * h * h))
                grad = -diff / (h * h) * k
            else:
                k = (1 + t / (h * h)) ** -0.5
                grad = -diff / (h * h) * (1 + t / (h * h)) ** -1.5
            phi[i] += k * S[j] + grad
    return phi / n


@pytest.mark.parametrize("kernel", ["rbf", "imq"])
@pytest.mark.parametrize("bandwidth", ["median-log", "median", 0.7])
def test_svgd_field_is_one_plain_step_of_fit(kernel, bandwidth):
    X0 = np.random.default_rng(0).standard_normal((40, 3))
    kw = dict(kernel=kernel, bandwidth=bandwidth)
    fitted = SVGD(score, n_iter=1, optimizer="sgd", step_size=0.3, **kw).fit(X0)
    phi = SVGD(score, **kw).direction(X0)
    assert phi.shape == X0.shape
    np.testing.assert_allclose(fitted.particles_, X0 + 0.3 * phi, rtol=0, atol=1e-12)
    assert np.abs(phi).max() > 0.05  # a field that moves the particles


@pytest.mark.parametrize("kernel", ["rbf", "imq"])
def test_svgd_field_against_a_double_loop(kernel):
    X = np.random.default_rng(1).standard_normal((12, 3))
    phi = SVGD(score, kernel=kernel, bandwidth=0.9).direction(X)
    np.testing.assert_allclose(phi, _field_loops(X, score(X), 0.9, kernel), rtol=1e-12,
                               atol=1e-14)


@pytest.mark.parametrize("kw", [
    {},
    dict(kernel="imq"),
    dict(init_directions="random", random_state=3),
    dict(slices="score"),
    dict(bandwidth=0.7, slice_steps=3),
    dict(slice_update_every=0),
], ids=["default", "imq", "random-init", "score-slices", "fixed-bandwidth", "no-updates"])
def test_sliced_field_is_one_plain_step_of_fit(kw):
    X0 = np.random.default_rng(0).standard_normal((40, 3))
    fitted = SlicedSVGD(score, n_iter=1, optimizer="sgd", step_size=0.3, **kw).fit(X0)
    est = SlicedSVGD(score, **kw)
    phi = est.direction(X0)
    np.testing.assert_allclose(fitted.particles_, X0 + 0.3 * phi, rtol=0, atol=1e-12)
    # the same direction update as fit's, kept on the estimator
    np.testing.assert_allclose(est.directions_, fitted.directions_, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(est.slices_, fitted.slices_)
    assert est.n_direction_updates_ == fitted.n_direction_updates_
    assert est.n_features_in_ == 3


def test_sliced_successive_calls_are_successive_steps_of_fit():
    X0 = np.random.default_rng(2).standard_normal((30, 3))
    kw = dict(slice_update_every=1, slice_update_tol=0.0, bandwidth_every=1,
              slice_learning_rate=0.05)
    fitted = SlicedSVGD(score, n_iter=4, optimizer="sgd", step_size=0.3, **kw).fit(X0)
    est = SlicedSVGD(score, **kw)
    X = X0
    for _ in range(4):
        X = X + 0.3 * est.direction(X)
    np.testing.assert_allclose(X, fitted.particles_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.directions_, fitted.directions_, rtol=0, atol=1e-12)
    assert est.n_direction_updates_ == 4
    assert np.abs(est.directions_ - np.eye(3)).max() > 1e-3  # the directions did move


def test_sliced_direction_goes_on_from_fitted_directions():
    X0 = np.random.default_rng(3).standard_normal((30, 3))
    est = SlicedSVGD(score, n_iter=20, slices="axes", bandwidth=0.8, random_state=0).fit(X0)
    G, updates = est.directions_.copy(), est.n_direction_updates_
    Z = np.random.default_rng(4).standard_normal((30, 3))
    phi = est.direction(Z)
    assert est.n_direction_updates_ == updates + 1
    assert 0 < np.abs(est.directions_ - G).max() < 0.01  # one small step from G
    # the field at the updated directions
    frozen = SlicedSVGD(score, slices="axes", bandwidth=0.8, slice_update_every=0,
                        init_directions=est.directions_)
    np.testing.assert_allclose(phi, frozen.direction(Z), rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="Z has 2 features but the directions_"):
        est.direction(Z[:, :2], lambda X: -X)


@pytest.mark.parametrize("cls,kw", [
    (SVGD, {}),
    (SVGD, dict(kernel="imq", bandwidth="median")),
    (SlicedSVGD, dict(slices="axes", slice_update_every=0)),
])
def test_batch_equals_the_sets_one_by_one(cls, kw):
    Z = np.random.default_rng(5).standard_normal((4, 25, 3)) * np.array([1, 2, 0.5, 3])[:, None,
                                                                                          None]
    calls = []

    def batched(A):
        calls.append(A.shape)
        return score(A)

    phi = cls(None, **kw).direction(Z, batched)
    assert calls == [Z.shape]  # one call on the whole batch
    assert phi.shape == Z.shape
    for b in range(Z.shape[0]):
        np.testing.assert_array_equal(phi[b], cls(score, **kw).direction(Z[b]))
    # the median rule is applied per set: a scaled set gets another field
    same = cls(score, **kw).direction(np.broadcast_to(Z[0], Z.shape).copy())
    assert not np.allclose(phi[3], same[3])


def test_sliced_batch_shares_one_direction_update():
    Z = np.random.default_rng(6).standard_normal((3, 25, 3))
    kw = dict(slices="axes", bandwidth=0.8, slice_learning_rate=0.05)
    est = SlicedSVGD(score, **kw)
    phi = est.direction(Z)
    one = SlicedSVGD(score, **kw)
    one.direction(Z[0])
    assert est.n_direction_updates_ == 1
    assert not np.allclose(est.directions_, one.directions_, rtol=0, atol=1e-12)
    # one Adam step (the first: m / sqrt(v) = g / |g|) along the tangent part of the
    # mean gradient of the sets' objectives
    grads = [sliced_value_and_grad(Z[b], score(Z[b]), np.eye(3), np.eye(3),
                                   np.full(3, 0.8))[1] for b in range(3)]
    g = sum(grads) / 3
    g = g - np.sum(g * np.eye(3), axis=1)[:, None] * np.eye(3)
    G1 = np.eye(3) + 0.05 * g / (np.abs(g) + 1e-8)
    G1 /= np.linalg.norm(G1, axis=1, keepdims=True)
    np.testing.assert_allclose(est.directions_, G1, rtol=0, atol=1e-12)
    # every set's field at the shared updated directions
    fixed = SlicedSVGD(score, slices="axes", bandwidth=0.8, slice_update_every=0,
                       init_directions=est.directions_)
    for b in range(3):
        np.testing.assert_allclose(phi[b], fixed.direction(Z[b]), rtol=1e-12, atol=1e-14)


def test_score_argument_replaces_the_target():
    Z = np.random.default_rng(7).standard_normal((20, 3))
    other = Gaussian(np.full(3, 5.0))
    a = SVGD(score).direction(Z, other)
    b = SVGD(other).direction(Z)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, SVGD(score).direction(Z))


@pytest.mark.parametrize("cls", [SVGD, SlicedSVGD])
def test_two_particles_are_pushed_apart(cls):
    # a flat target: no driving force, only the repulsive term (RBF, h = 1)
    Z = np.array([[0.0, 0.3], [0.4, -0.2]])
    kw = dict(slices="axes", slice_update_every=0) if cls is SlicedSVGD else {}
    phi = cls(lambda X: np.zeros_like(X), bandwidth=1.0, **kw).direction(Z)
    gap = Z[1] - Z[0]
    assert (phi[1] - phi[0]) @ gap > 0  # the gap grows
    np.testing.assert_allclose(phi[0], -phi[1], atol=1e-15)  # equal and opposite
    # phi(z_1) = 1/2 grad_{z_0} k(z_0, z_1): one D-dimensional kernel, or one per axis
    k = np.exp(-(gap @ gap) / 2) if cls is SVGD else np.exp(-gap * gap / 2)
    np.testing.assert_allclose(phi[1], 0.5 * gap * k, rtol=1e-12)


@pytest.mark.parametrize("cls", [SVGD, SlicedSVGD])
@pytest.mark.parametrize("Z,match", [
    (np.zeros(5), "Z must be a 2-D array"),
    (np.zeros((2, 2, 3, 2)), "Z must be a 2-D array"),
    (np.zeros((1, 3)), "Z has 1 particle"),
    (np.zeros((4, 1, 3)), "Z has 1 particle"),
    (np.array([[0.0, 1.0], [np.nan, 0.0], [1.0, 1.0]]), "Z is not finite at 1 of its 3"),
    (np.array([[0.0, 1.0], [np.inf, 0.0]]), "Z is not finite"),
    (np.zeros((3, 0)), "Z is empty"),
    ([["a", "b"], ["c", "d"]], "Z is invalid"),
    (np.ones((3, 2)) * 1j, "Z must hold real numbers"),
])
def test_bad_particles(cls, Z, match):
    with pytest.raises(ValueError, match=match):
        cls(score).direction(Z)


@pytest.mark.parametrize("cls", [SVGD, SlicedSVGD])
def test_bad_scores(cls):
    Z = np.random.default_rng(8).standard_normal((5, 2))
    with pytest.raises(ValueError, match=r"score returned an array of shape \(5, 1\) for Z"):
        cls(score).direction(Z, lambda X: X[:, :1])
    with pytest.raises(ValueError, match=r"score returned an array of shape \(10, 2\)"):
        cls(score).direction(np.stack([Z, Z]), lambda X: X.reshape(-1, 2))
    with pytest.raises(ValueError, match="score is not finite at 1 of the 5 particles of Z"):
        cls(score).direction(Z, lambda X: np.where(X == X[2, 0], np.nan, X))
    with pytest.raises(ValueError, match="the score of target is not finite"):
        cls(lambda X: np.full_like(X, np.inf)).direction(Z)
    with pytest.raises(TypeError, match="score must be a distribution"):
        cls(score).direction(Z, "not a score")
    with pytest.raises(TypeError, match="target must be a distribution"):
        cls(None).direction(Z)
    with pytest.raises(TypeError, match="score must return an array of floats"):
        cls(score).direction(Z, lambda X: "text")
    with pytest.raises(ValueError, match="Z has 2 features but score is a distribution on 3"):
        cls(score).direction(Z, Gaussian(np.zeros(3)))


def test_direction_leaves_svgd_unfitted_and_sliced_fitted_directions():
    Z = np.random.default_rng(9).standard_normal((10, 2))
    est = SVGD(lambda X: -X)
    est.direction(Z)
    assert not hasattr(est, "particles_") and not hasattr(est, "n_features_in_")
    sliced = SlicedSVGD(lambda X: -X)
    sliced.direction(Z)
    assert sliced.directions_.shape == (2, 2) and sliced.n_features_in_ == 2
    assert not hasattr(sliced, "particles_")


def _pair_median(u):
    """numpy median of |u_i - u_j|, i < j (of the positive ones if that is 0; 1 if none)."""
    iu, ju = np.triu_indices(u.size, 1)
    dd = np.abs(u[iu] - u[ju])
    if not np.any(dd > 0):
        return 1.0
    med = np.median(dd)
    return med if med > 0 else np.median(dd[dd > 0])


def _sliced_field_loops(X, S, G, h, kernel):
    """phi_d(x_i) = 1/N sum_j [kappa_d(u_jd, u_id) s_d(x_j) + G_dd d/du_jd kappa_d], loops."""
    n, d = X.shape
    U = X @ G.T
    phi = np.zeros_like(X)
    for i in range(n):
        for j in range(n):
            for k in range(d):
                delta = U[j, k] - U[i, k]
                t = delta * delta / (h[k] * h[k])
                if kernel == "rbf":
                    kap, dkap = np.exp(-t / 2), -delta / h[k] ** 2 * np.exp(-t / 2)
                else:
                    kap, dkap = (1 + t) ** -0.5, -delta / h[k] ** 2 * (1 + t) ** -1.5
                phi[i, k] += kap * S[j, k] + G[k, k] * dkap
    return phi / n


@pytest.mark.parametrize("kernel", ["rbf", "imq"])
@pytest.mark.parametrize("bandwidth", ["median", "median-log"])
def test_sliced_batch_against_a_slow_reference(kernel, bandwidth):
    # the batched field (sets side by side in one pass) against its definition: per-set
    # medians of the projections on G before the update, one Adam step along the mean
    # of the sets' gradients, then each set's field at the updated G by a double loop
    rng = np.random.default_rng(10)
    Z = rng.standard_normal((3, 20, 3)) * np.array([1.0, 2.0, 0.5])[:, None, None]
    lr = 0.05
    est = SlicedSVGD(score, slices="axes", kernel=kernel, bandwidth=bandwidth,
                     slice_learning_rate=lr)
    phi = est.direction(Z)
    G0 = np.eye(3)
    med = np.array([[_pair_median(Zb[:, k]) for k in range(3)] for Zb in Z])
    g = sum(sliced_value_and_grad(Zb, score(Zb), G0, np.eye(3), mb, kernel=kernel)[1]
            for Zb, mb in zip(Z, med)) / 3
    g = g - np.sum(g * G0, axis=1)[:, None] * G0
    G1 = G0 + lr * g / (np.abs(g) + 1e-8)
    G1 /= np.linalg.norm(G1, axis=1, keepdims=True)
    np.testing.assert_allclose(est.directions_, G1, rtol=0, atol=1e-12)
    scale = 1.0 if bandwidth == "median" else 1.0 / np.sqrt(2.0 * np.log(21.0))
    for b in range(3):
        want = _sliced_field_loops(Z[b], score(Z[b]), G1, med[b] * scale, kernel)
        np.testing.assert_allclose(phi[b], want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kw", [
    dict(init_directions="random", random_state=1, slices="axes"),
    dict(slices=np.linalg.qr(np.random.default_rng(2).standard_normal((3, 3)))[0].T,
         kernel="imq"),
], ids=["random-directions", "rotated-slices"])
def test_sliced_batch_with_fixed_directions_equals_the_sets_one_by_one(kw):
    # with fixed, non-identity directions (or slices) the projections of a batch are one
    # product, those of a set another: equal to rounding
    Z = np.random.default_rng(11).standard_normal((4, 15, 3))
    phi = SlicedSVGD(score, slice_update_every=0, **kw).direction(Z)
    for b in range(4):
        one = SlicedSVGD(score, slice_update_every=0, **kw).direction(Z[b])
        np.testing.assert_allclose(phi[b], one, rtol=1e-12, atol=1e-14)
