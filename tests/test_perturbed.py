"""The perturbed KSD test: its modes, its moves, its statistic, its level and power."""

import numpy as np
import pytest
from scipy.stats import norm

from skstein import KSDTest, PerturbedKSDTest
from skstein.distributions import Categorical, Gaussian, GaussianMixture
from skstein.experiments import rejection_rate
from skstein.gof._ksd import LangevinKSD
from skstein._engines import NumbaEngine
from skstein.gof._perturbed import ModeSet, find_modes, jump_chain

MIX1 = GaussianMixture([0.7, 0.3], [[0.0], [4.0]], [[[1.0]], [[0.25]]])
MIX1_OTHER_WEIGHTS = GaussianMixture([0.55, 0.45], [[0.0], [4.0]], [[[1.0]], [[0.25]]])
MIX2 = GaussianMixture([0.5, 0.3, 0.2], [[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]],
                       [[[1.0, 0.3], [0.3, 0.5]], [[0.5, 0.0], [0.0, 2.0]], np.eye(2)])


class NoLogpdf:
    dim = 1

    def grad_logpdf(self, X):
        return -np.asarray(X, dtype=np.float64)


class BadLogpdf(NoLogpdf):
    def __init__(self, value):
        self.value = value

    def logpdf(self, X):
        return self.value(np.asarray(X))


class Wrapped:
    """MIX1 with one of its methods replaced (``logpdf`` or ``grad_logpdf``)."""

    def __init__(self, **methods):
        self.methods = methods

    def logpdf(self, X):
        return self.methods.get("logpdf", MIX1.logpdf)(X)

    def grad_logpdf(self, X):
        return self.methods.get("grad_logpdf", MIX1.grad_logpdf)(X)


def _writes_into(X):
    values = MIX1.logpdf(X)
    X += 100.0  # a model that writes into its input
    return values


def test_modes_of_a_separated_mixture_are_its_components():
    modes = find_modes(MIX2, MIX2.rvs(300, random_state=0), random_state=0)
    assert len(modes) == 3
    order = [int(np.argmin(np.linalg.norm(MIX2.means - c, axis=1))) for c in modes.centres]
    assert sorted(order) == [0, 1, 2]
    for c, S, k in zip(modes.centres, modes.covariances, order):
        # six standard deviations apart: the components barely touch at the modes
        np.testing.assert_allclose(c, MIX2.means[k], atol=1e-3)
        np.testing.assert_allclose(S, MIX2.covariances[k], rtol=1e-3, atol=1e-4)
    # by decreasing density: the heaviest, narrowest component first
    assert order[0] == 0


def test_modes_of_a_gaussian_are_one():
    G = Gaussian(np.array([1.0, -2.0]), np.array([[2.0, 0.5], [0.5, 1.0]]))
    modes = find_modes(G, G.rvs(100, random_state=1), n_starts=10, random_state=0)
    assert len(modes) == 1
    np.testing.assert_allclose(modes.centres[0], G.mean, atol=1e-6)
    np.testing.assert_allclose(modes.covariances[0], G.cov, rtol=1e-6)


class Slope:
    """log p(x) = -sum(x) (no mode): an improper model, as a score alone may be."""

    def logpdf(self, X):
        return -np.sum(np.asarray(X, dtype=np.float64), axis=1)

    def grad_logpdf(self, X):
        return -np.ones_like(np.asarray(X, dtype=np.float64))


def test_a_model_without_modes_has_none_and_is_tested_by_the_ksd():
    X = np.random.default_rng(0).normal(size=(60, 2))
    assert len(find_modes(Slope(), X, n_starts=3, random_state=0)) == 0
    r = PerturbedKSDTest(Slope(), n_starts=3, n_bootstrap=100, random_state=0).test(X)
    assert "no mode found" in r.method and "nothing to jump" in r.method
    assert r.n_samples == 60 and np.isfinite(r.statistic)


def test_jumps_undo_each_other():
    modes = find_modes(MIX2, MIX2.rvs(300, random_state=0), random_state=0)
    x = np.array([0.3, -0.7])
    theta = 1.1
    T, log_det = modes.jump(0, 2)
    T_back, log_det_back = modes.jump(2, 0)
    y = theta * modes.centres[2] + T @ (x - theta * modes.centres[0])
    x_back = theta * modes.centres[0] + T_back @ (y - theta * modes.centres[2])
    np.testing.assert_allclose(x_back, x, atol=1e-12)
    assert log_det == pytest.approx(-log_det_back)
    assert log_det == pytest.approx(np.log(abs(np.linalg.det(T))))


@pytest.mark.parametrize("theta", [0.8, 1.0, 1.15])
def test_jump_chain_leaves_the_model_invariant(theta):
    # draws of the model stay draws of the model: the share of each component and the
    # moments agree within their Monte Carlo errors (n = 40000)
    X = MIX1.rvs(40000, random_state=2)
    modes = find_modes(MIX1, X[:200], random_state=0)
    Y, acceptance = jump_chain(MIX1, X, modes, theta, 5, random_state=3)
    assert 0.02 < acceptance < 0.9
    moved = np.mean(np.abs(Y - X) > 1e-12)
    assert moved > 0.02
    share = 0.7 * norm.sf(2.0) + 0.3 * norm.sf(-4.0)  # P(x > 2) under the model
    assert abs(np.mean(Y[:, 0] > 2.0) - share) < 4 * np.sqrt(share * (1 - share) / 40000)
    mean, var = 0.3 * 4.0, 0.7 * 1.0 + 0.3 * 0.25 + 0.7 * 0.3 * 16.0
    assert abs(Y.mean() - mean) < 4 * np.sqrt(var / 40000)
    assert abs(Y.var() - var) < 0.06 * var


def test_jump_chain_moves_other_weights_towards_the_model():
    X = MIX1_OTHER_WEIGHTS.rvs(20000, random_state=4)
    modes = find_modes(MIX1, X[:200], random_state=0)
    Y, _ = jump_chain(MIX1, X, modes, 1.0, 30, random_state=5)
    share = 0.7 * norm.sf(2.0) + 0.3 * norm.sf(-4.0)  # P(x > 2) under the model
    assert np.mean(X[:, 0] > 2.0) > share + 0.1
    assert abs(np.mean(Y[:, 0] > 2.0) - share) < 0.02


def test_companions_add_their_stein_sums_and_forms():
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(60, 2)), rng.normal(size=(60, 2)) + 0.3
    ksd = KSDTest(Gaussian(np.zeros(2)), kernel="imq", bandwidth="median", random_state=1)
    engine = LangevinKSD(NumbaEngine())
    both = engine.test(ksd, X, companions=(Y,))
    alone = engine.test(ksd, X)
    h = alone.bandwidth
    other = KSDTest(ksd.model, kernel="imq", bandwidth=h, random_state=1).test(Y)
    assert both.statistic == pytest.approx(alone.statistic + other.statistic, rel=1e-12)
    np.testing.assert_allclose(both.null_distribution,
                               alone.null_distribution + other.null_distribution, rtol=1e-10)
    assert engine.discrepancy(ksd, X, companions=(Y,)) == pytest.approx(both.statistic)
    # the criteria of several companions in one pass equal the score of each in turn
    for params in ({}, {"whiten": "aggregate"}):
        ksd.set_params(**params)
        np.testing.assert_array_equal(
            engine.score_companions(ksd, X, [Y, Y[::-1], X]),
            [engine.score(ksd, X, companions=(C,)) for C in (Y, Y[::-1], X)])


def test_the_test_is_reproducible_and_says_what_it_did():
    X = MIX1_OTHER_WEIGHTS.rvs(300, random_state=6)
    t = PerturbedKSDTest(MIX1, n_bootstrap=200, random_state=7)
    r = t.test(X)
    assert r == PerturbedKSDTest(MIX1, n_bootstrap=200, random_state=7).test(X)
    assert "jumps between 2 modes" in r.method and r.n_samples == 150
    assert t.discrepancy(X) == pytest.approx(r.statistic)
    assert np.isfinite(t.score(X))
    fitted = PerturbedKSDTest(MIX1, n_bootstrap=200, random_state=7).fit(X)
    assert fitted.modes_.shape == (2, 1) and fitted.mode_covariances_.shape == (2, 1, 1)
    assert 0.8 <= fitted.jump_scale_ <= 1.2 and fitted.jump_scores_.shape == (21,)
    assert fitted.jump_scale_ == pytest.approx(
        np.linspace(0.8, 1.2, 21)[np.argmax(fitted.jump_scores_)])
    Z = MIX1_OTHER_WEIGHTS.rvs(100, random_state=8)
    rz = fitted.test(Z)
    assert rz.n_samples == 100 and f"jump scale {fitted.jump_scale_:.3g}" in rz.method


@pytest.mark.parametrize("params", [
    {"whiten": True},
    {"whiten": "aggregate"},
    {"kernel": "rbf", "bandwidth": "aggregate", "n_bandwidths": 4},
    {"bootstrap": "rademacher", "kernel_params": {"beta": -0.3}},
])
def test_the_ksd_options_carry_over(params):
    X = MIX2.rvs(300, random_state=3)
    t = PerturbedKSDTest(MIX2, n_bootstrap=100, random_state=0, **params)
    r = t.test(X)
    assert "jumps between 3 modes" in r.method and 0.0 < r.pvalue <= 1.0
    np.testing.assert_allclose(np.max(np.atleast_1d(t.discrepancy(X))), np.max(
        np.atleast_1d(r.statistics if r.statistics is not None else r.statistic)))
    if "whiten" in params:
        assert "whiten" in r.method or r.labels is not None


def test_auto_bootstrap_follows_the_points_tested():
    for n, kind in ((200, "rademacher"), (300, "multinomial")):  # 100 and 150 tested
        X = MIX1_OTHER_WEIGHTS.rvs(n, random_state=n)
        auto = PerturbedKSDTest(MIX1, n_bootstrap=100, random_state=0).test(X)
        named = PerturbedKSDTest(MIX1, bootstrap=kind, n_bootstrap=100, random_state=0).test(X)
        assert auto.bootstrap == kind and auto == named


def test_one_mode_is_the_ksd_test_of_the_whole_sample():
    G = Gaussian(np.zeros(2))
    X = G.rvs(80, random_state=0)
    r = PerturbedKSDTest(G, random_state=0).test(X)
    assert "1 mode found" in r.method and r.n_samples == 80
    ref = KSDTest(G, kernel="imq", bandwidth="median").discrepancy(X)
    assert r.statistic == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("model, params, error, match", [
    (NoLogpdf(), {}, TypeError, "model must have a logpdf"),
    (Categorical(np.array([[0.2, 0.8]])), {}, TypeError, "for continuous models"),
    (MIX1, {"jump_scales": []}, ValueError, "jump_scales must be"),
    (MIX1, {"jump_scales": [1.0, np.nan]}, ValueError, "jump_scales must be"),
    (MIX1, {"n_steps": -1}, ValueError, "n_steps must be"),
    (MIX1, {"n_starts": 0}, ValueError, "n_starts"),
    (MIX1, {"train_size": 1.5}, ValueError, "train_size"),
    (MIX1, {"bootstrap": "wild"}, ValueError, "bootstrap"),
    (BadLogpdf(lambda X: np.full(len(X), np.nan)), {}, ValueError, "returned NaN"),
    (BadLogpdf(lambda X: np.zeros((len(X), 2))), {}, ValueError, "one value per row"),
    # a single row's value squeezed to a scalar: an error, not a search that "diverged"
    (Wrapped(logpdf=lambda X: np.squeeze(MIX1.logpdf(X))), {}, ValueError,
     r"one value per row .* \(1 rows\), got shape \(\)"),
    (Wrapped(grad_logpdf=lambda X: None), {}, ValueError,
     r"the score of model returned an array of shape \(\)"),
    (Wrapped(grad_logpdf=lambda X: MIX1.grad_logpdf(X)[:, :0]), {}, ValueError,
     r"the score of model returned an array of shape \(20, 0\)"),
])
def test_bad_input_is_named(model, params, error, match):
    X = np.random.default_rng(0).normal(size=(40, 1))
    with pytest.raises(error, match=match):
        PerturbedKSDTest(model, **params).test(X)


def test_a_model_that_writes_into_its_input_changes_nothing():
    X = MIX1.rvs(200, random_state=1)
    clean = PerturbedKSDTest(MIX1, n_bootstrap=100, random_state=0)
    writes = PerturbedKSDTest(Wrapped(logpdf=_writes_into), n_bootstrap=100, random_state=0)
    assert writes.test(X) == clean.test(X)
    fitted = clean.fit(X[:100])
    assert fitted.set_params(model=Wrapped(logpdf=_writes_into)).test(X[100:]) == \
        PerturbedKSDTest(MIX1, n_bootstrap=100, random_state=0).fit(X[:100]).test(X[100:])


def test_a_model_of_another_dimension_is_named():
    with pytest.raises(ValueError, match="X has 2 features but model is a distribution on 1"):
        PerturbedKSDTest(MIX1).test(np.zeros((40, 2)))


@pytest.mark.slow
def test_level_on_a_separated_mixture_and_power_where_ksd_is_blind():
    # 200 null trials of the 1-D mixture at n = 300: within 3 binomial sd of 0.05;
    # 60 trials of other weights at n = 1000: the perturbed test rejects far more often
    # than the KSD test (measured 0.6 against 0.05 on other seeds: user guide)
    null = rejection_rate(PerturbedKSDTest(MIX1, n_bootstrap=300), MIX1, 300, n_trials=200,
                          random_state=11, n_jobs=2, verbose=False)
    assert null.rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 200)
    alt = rejection_rate(PerturbedKSDTest(MIX1, n_bootstrap=300), MIX1_OTHER_WEIGHTS, 1000,
                         n_trials=60, random_state=12, n_jobs=2, verbose=False)
    ksd = rejection_rate(KSDTest(MIX1, n_bootstrap=300), MIX1_OTHER_WEIGHTS, 1000,
                         n_trials=60, random_state=12, n_jobs=2, verbose=False)
    assert alt.rate >= 0.3 and alt.rate >= ksd.rate + 0.2


def test_jump_scales_of_booleans_are_refused():
    with pytest.raises(ValueError, match="jump_scales must be"):
        PerturbedKSDTest(MIX1, jump_scales=[True, False]).test(MIX1.rvs(40, random_state=0))


def test_too_few_draws_warn_once():
    X = MIX1.rvs(200, random_state=0)
    with pytest.warns(UserWarning, match="n_bootstrap=10 is too small") as record:
        PerturbedKSDTest(MIX1, n_bootstrap=10, random_state=0).test(X)
    assert sum("is too small" in str(w.message) for w in record) == 1


def test_mode_set_covariances_and_roots(rng):
    # Sigma_k = H_k^{-1}, its symmetric square root and that of its inverse; the jump
    # T = Sigma_j^{1/2} Sigma_i^{-1/2} maps Sigma_i onto Sigma_j
    A = rng.standard_normal((3, 5, 5))
    H = A @ A.transpose(0, 2, 1) + np.eye(5)
    modes = ModeSet(rng.standard_normal((3, 5)), H)
    for k in range(3):
        C = np.linalg.inv(H[k])
        np.testing.assert_allclose(modes.covariances[k], C, atol=1e-12)
        np.testing.assert_allclose(modes._root[k] @ modes._root[k], C, atol=1e-12)
        np.testing.assert_allclose(modes._root[k], modes._root[k].T, atol=1e-14)
        np.testing.assert_allclose(modes._inv_root[k] @ modes._root[k], np.eye(5), atol=1e-12)
    T, logdet = modes.jump(0, 2)
    np.testing.assert_allclose(T @ modes.covariances[0] @ T.T, modes.covariances[2], atol=1e-12)
    assert logdet == pytest.approx(np.log(abs(np.linalg.det(T))), rel=1e-10)
