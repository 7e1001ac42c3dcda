"""Tests of the relative goodness-of-fit tests (skstein.relative)."""

import pickle
import warnings

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from skstein import RelativeKSDTest, RelativeMMDTest, RelativeTestResult, relative_ksd
from skstein.distributions import PPCA, Gaussian
from skstein.kernels import IMQ, RBF
from skstein.kernels import median_bandwidth_1d
from skstein.relative import latent_score, relative_variance


# ---------------------------------------------------------------------------
# slow references
# ---------------------------------------------------------------------------
def _stein_matrix(kern, X, S):
    H = kern.stein(X, X, S, S)
    np.fill_diagonal(H, 0.0)
    return H


def _reference(X, Sp, Sq, kern):
    """D_n, jackknife sigma (explicit leave-one-out loop), U-statistic sigma."""
    n = X.shape[0]
    H = _stein_matrix(kern, X, Sp) - _stein_matrix(kern, X, Sq)
    stat = H.sum() / (n * (n - 1))
    loo = []
    for i in range(n):
        keep = np.delete(np.arange(n), i)
        Hi = H[np.ix_(keep, keep)]
        loo.append(Hi.sum() / ((n - 1) * (n - 2)))
    loo = np.array(loo)
    var_jack = (n - 1) / n * np.sum((loo - loo.mean()) ** 2)
    sigma_jack = np.sqrt(n * var_jack)
    row_means = np.array([sum(H[i, j] for j in range(n) if j != i) / (n - 1) for i in range(n)])
    sigma_u = np.sqrt(4.0 * np.var(row_means))
    Up = _stein_matrix(kern, X, Sp).sum() / (n * (n - 1))
    Uq = _stein_matrix(kern, X, Sq).sum() / (n * (n - 1))
    return stat, sigma_jack, sigma_u, Up, Uq


@pytest.fixture
def gaussian_problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    p = Gaussian(np.full(3, 0.5))
    q = Gaussian(np.zeros(3), np.array([1.5, 1.0, 0.8]))
    return X, p, q


@pytest.mark.parametrize("kernel", ["imq", "rbf"])
@pytest.mark.parametrize("variance", ["jackknife", "ustat"])
def test_statistic_and_sigma_match_numpy_reference(gaussian_problem, kernel, variance):
    X, p, q = gaussian_problem
    res = RelativeKSDTest(p, q, kernel=kernel, bandwidth=1.3, variance=variance).test(X)
    kern = IMQ(1.3) if kernel == "imq" else RBF(1.3)
    stat, sigma_jack, sigma_u, Up, Uq = _reference(X, p.grad_logpdf(X), q.grad_logpdf(X), kern)
    assert res.statistic == pytest.approx(stat, rel=1e-10, abs=1e-12)
    assert res.discrepancy_p == pytest.approx(Up, rel=1e-10)
    assert res.discrepancy_q == pytest.approx(Uq, rel=1e-10)
    sigma = sigma_jack if variance == "jackknife" else sigma_u
    assert res.sigma == pytest.approx(sigma, rel=1e-9)
    n = X.shape[0]
    z = np.sqrt(n) * stat / sigma
    assert res.zscore == pytest.approx(z, rel=1e-9)
    assert res.pvalue == pytest.approx(norm.sf(z), rel=1e-9, abs=1e-300)
    assert res.threshold == pytest.approx(sigma * norm.ppf(0.95) / np.sqrt(n), rel=1e-9)
    assert res.reject == (stat >= res.threshold)
    assert res.variance == variance and not res.degenerate


def test_jackknife_closed_form_equals_leave_one_out_loop():
    rng = np.random.default_rng(1)
    n = 25
    A = rng.normal(size=(n, n))
    H = A + A.T
    np.fill_diagonal(H, 0.0)
    loo = np.array([np.delete(np.delete(H, i, 0), i, 1).sum() / ((n - 1) * (n - 2))
                    for i in range(n)])
    var_jack = (n - 1) / n * np.sum((loo - loo.mean()) ** 2)
    sigma = relative_variance(H.sum(axis=1), H.sum(), n, "jackknife")
    assert sigma == pytest.approx(np.sqrt(n * var_jack), rel=1e-12)


@pytest.mark.parametrize("bandwidth", ["median", "aggregate"])
def test_blockwise_pass_changes_nothing(gaussian_problem, bandwidth):
    X, p, q = gaussian_problem
    a = RelativeKSDTest(p, q, bandwidth=bandwidth, random_state=0).test(X)
    b = RelativeKSDTest(p, q, bandwidth=bandwidth, max_memory=4096, random_state=0).test(X)
    assert a.statistic == pytest.approx(b.statistic, rel=1e-12)
    assert a.sigma == pytest.approx(b.sigma, rel=1e-10)
    assert a.pvalue == pytest.approx(b.pvalue, rel=1e-9)


def test_swapping_models_negates(gaussian_problem):
    X, p, q = gaussian_problem
    a = RelativeKSDTest(p, q, bandwidth="median").test(X)
    b = RelativeKSDTest(q, p, bandwidth="median").test(X)
    assert a.statistic == pytest.approx(-b.statistic)
    assert a.zscore == pytest.approx(-b.zscore)
    assert a.pvalue + b.pvalue == pytest.approx(1.0)
    # aggregated: every bandwidth's difference and z-score changes sign
    a = RelativeKSDTest(p, q).test(X)
    b = RelativeKSDTest(q, p).test(X)
    np.testing.assert_allclose(a.statistics, -b.statistics, rtol=1e-12)
    np.testing.assert_allclose(a.zscores, -b.zscores, rtol=1e-12)
    assert a.zscore == a.zscores.max() and b.zscore == b.zscores.max()


def test_degenerate_variance_is_explicit(gaussian_problem):
    X, p, _ = gaussian_problem
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = RelativeKSDTest(p, p).test(X)
    assert res.degenerate and not res.reject
    assert res.pvalue == 1.0 and res.zscore == 0.0 and res.sigma == 0.0
    assert all(np.isfinite([res.statistic, res.pvalue, res.threshold, res.zscore]))
    assert RelativeKSDTest(p, p).score(X) == 0.0


def test_result_is_frozen_dataclass(gaussian_problem):
    X, p, q = gaussian_problem
    res = RelativeKSDTest(p, q).test(X)
    assert isinstance(res, RelativeTestResult)
    with pytest.raises(AttributeError):
        res.pvalue = 0.5
    assert res.method == "relative KSD (imq, jackknife variance, max over 10 bandwidths)"
    assert res.bandwidths.shape == res.zscores.shape == res.statistics.shape == (10,)
    assert not res.zscores.flags.writeable
    med = RelativeKSDTest(p, q, bandwidth="median").test(X)
    assert med.method == "relative KSD (imq, jackknife variance)" and med.zscores is None


def test_clear_winner_is_detected():
    X = np.random.default_rng(0).normal(size=(300, 2))
    p, q = Gaussian(np.full(2, 1.0)), Gaussian(np.full(2, 0.1))
    assert RelativeKSDTest(p, q).test(X).reject
    assert not RelativeKSDTest(q, p).test(X).reject
    assert RelativeKSDTest(p, q).score(X) > 5


def test_functional_equals_estimator(gaussian_problem):
    X, p, q = gaussian_problem
    a = relative_ksd(X, p, q, variance="ustat", random_state=0)
    b = RelativeKSDTest(p, q, variance="ustat", random_state=0).test(X)
    assert a == b
    assert a != relative_ksd(X, p, q, variance="jackknife", random_state=0)


def test_callables_are_models(gaussian_problem):
    X, p, q = gaussian_problem
    a = RelativeKSDTest(p.grad_logpdf, q.grad_logpdf, random_state=0).test(X)
    b = RelativeKSDTest(p, q, random_state=0).test(X)
    assert a == b


# ---------------------------------------------------------------------------
# estimator protocol
# ---------------------------------------------------------------------------
def test_fit_resolves_bandwidth_and_is_used(gaussian_problem):
    X, p, q = gaussian_problem
    est = RelativeKSDTest(p, q, bandwidth="median").fit(X[:20])
    assert est.bandwidth_ > 0 and est.n_features_in_ == 3
    res = est.test(X)
    assert res.bandwidth == est.bandwidth_
    assert res == RelativeKSDTest(p, q, bandwidth=est.bandwidth_).test(X)
    agg = RelativeKSDTest(p, q, random_state=0).fit(X[:20])
    assert agg.bandwidth_.shape == (10,) and len(agg.kernel_) == 10
    res = agg.test(X)
    np.testing.assert_array_equal(res.bandwidths, agg.bandwidth_)
    assert res == RelativeKSDTest(p, q, bandwidth=agg.bandwidth_, random_state=0).test(X)


def test_clone_pickle_and_params(gaussian_problem):
    X, p, q = gaussian_problem
    est = RelativeKSDTest(p, q, variance="ustat", random_state=3)
    c = clone(est)
    assert c.get_params()["variance"] == "ustat"
    assert isinstance(c.model_p, Gaussian) and np.all(c.model_p.mean == p.mean)
    est2 = pickle.loads(pickle.dumps(est.fit(X)))
    assert est2.test(X) == est.test(X)


def test_grid_search_over_bandwidth():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    gs = GridSearchCV(RelativeKSDTest(Gaussian(np.full(2, 1.0)), Gaussian(np.zeros(2))),
                      {"bandwidth": [0.3, 1.0, 3.0], "kernel": ["imq", "rbf"]}, cv=2)
    gs.fit(X)
    assert gs.best_params_["bandwidth"] in (0.3, 1.0, 3.0)
    assert np.all(np.isfinite(gs.cv_results_["mean_test_score"]))


@pytest.mark.parametrize(
    "params, match",
    [
        ({"variance": "bootstrap"}, "variance"),
        ({"discrepancy": "mmd"}, "discrepancy"),
        ({"discrepancy": "maxsksd", "variant": "r"}, "variant"),
        ({"discrepancy": "maxsksd", "train_size": 0.0}, "train_size"),
        ({"kernel": "laplace"}, "kernel"),
        ({"alpha": 1.5}, "alpha"),
        ({"model_score": "sampled"}, "model_score"),
        ({"n_posterior_samples": 0}, "n_posterior_samples"),
        ({"burn_in": -1}, "burn_in"),
        ({"bandwidth": -1.0}, "bandwidth"),
        ({"bandwidth": "widest"}, "bandwidth"),
        ({"bandwidth": [1.0, -2.0]}, "bandwidth"),
        ({"discrepancy": "maxsksd", "bandwidth": [1.0, 2.0]}, "bandwidth"),
    ],
)
def test_invalid_parameters_name_the_argument(gaussian_problem, params, match):
    X, p, q = gaussian_problem
    with pytest.raises(ValueError, match=match):
        RelativeKSDTest(p, q, **params).test(X)


def test_invalid_models_and_data(gaussian_problem):
    X, p, q = gaussian_problem
    with pytest.raises(TypeError, match="model_q"):
        RelativeKSDTest(p, "gaussian").test(X)
    with pytest.raises(TypeError, match="model_p"):
        RelativeKSDTest(p, q, model_score="posterior").test(X)
    with pytest.raises(ValueError, match="3 features|dimensions"):
        RelativeKSDTest(Gaussian(np.zeros(2)), q).test(X)
    with pytest.raises(ValueError, match="model_p"):
        RelativeKSDTest(Gaussian(np.zeros(2)), Gaussian(np.zeros(3))).fit(X)
    with pytest.raises(ValueError, match="sample"):
        RelativeKSDTest(p, q).test(X[:2])
    Xnan = X.copy()
    Xnan[0, 0] = np.nan
    with pytest.raises(ValueError):
        RelativeKSDTest(p, q).test(Xnan)


# ---------------------------------------------------------------------------
# latent-variable models
# ---------------------------------------------------------------------------
@pytest.fixture
def ppca_problem():
    rng = np.random.default_rng(2)
    A = rng.uniform(0, 1, size=(6, 2))
    R = PPCA(A, 1.0)
    Wp, Wq = A.copy(), A.copy()
    Wp[0, 0] += 1.5
    Wq[0, 0] += 0.3
    X = R.rvs(150, random_state=0)
    return X, PPCA(Wp, 1.0), PPCA(Wq, 1.0)


def test_latent_score_converges_to_exact_score(ppca_problem):
    X, P, _ = ppca_problem
    S = latent_score(P, X, n_posterior_samples=4000, burn_in=0, random_state=0)
    # the posterior-mean estimate has standard error ~ |W| sd(z|x) / sqrt(m)
    np.testing.assert_allclose(S, P.grad_logpdf(X), atol=0.15)
    assert np.abs(S - P.grad_logpdf(X)).mean() < 0.03


def test_lksd_reproducible_and_seeded(ppca_problem):
    X, P, Q = ppca_problem
    kw = dict(model_score="posterior", n_posterior_samples=20, burn_in=5)
    a = RelativeKSDTest(P, Q, random_state=7, **kw).test(X)
    b = RelativeKSDTest(P, Q, random_state=7, **kw).test(X)
    c = RelativeKSDTest(P, Q, random_state=8, **kw).test(X)
    assert a == b
    assert a.statistic != c.statistic
    assert a.method.startswith("relative LKSD")


def test_lksd_close_to_exact_with_many_draws(ppca_problem):
    X, P, Q = ppca_problem
    exact = RelativeKSDTest(P, Q, model_score="exact").test(X)
    lksd = RelativeKSDTest(P, Q, model_score="posterior", n_posterior_samples=2000, burn_in=0,
                           random_state=0).test(X)
    assert lksd.statistic == pytest.approx(exact.statistic, rel=0.1)
    assert lksd.reject == exact.reject


def test_burn_in_is_run_by_the_sampler(ppca_problem):
    from skstein.samplers import MALA

    X, P, _ = ppca_problem
    Pm = P.with_sampler(MALA(step_size=0.3, init=2.0))
    # the chain after burn_in steps equals the tail of a longer chain from the same seed
    full = Pm.sample_posterior(X, 15, random_state=0)
    tail = Pm.sample_posterior(X, 5, random_state=0, burn_in=10)
    np.testing.assert_array_equal(full[10:], tail)
    S = latent_score(Pm, X, n_posterior_samples=5, burn_in=10, random_state=0)
    np.testing.assert_allclose(S, np.mean([P.grad_logpdf_conditional(X, z) for z in tail], axis=0))


def test_lksd_with_mcmc_sampler(ppca_problem):
    from skstein.samplers import MALA

    X, P, Q = ppca_problem
    mala = MALA(step_size=0.4)
    res = RelativeKSDTest(P.with_sampler(mala), Q.with_sampler(mala), model_score="posterior",
                          n_posterior_samples=200, burn_in=100, random_state=0).test(X)
    exact = RelativeKSDTest(P, Q).test(X)
    assert res.statistic == pytest.approx(exact.statistic, rel=0.2)


def test_auto_uses_posterior_when_no_exact_score(ppca_problem):
    X, P, Q = ppca_problem

    class LatentOnly:
        dim = P.dim

        def __init__(self, model):
            self.model = model

        def grad_logpdf_conditional(self, X, Z):
            return self.model.grad_logpdf_conditional(X, Z)

        def sample_posterior(self, X, n_samples, random_state=None):
            return self.model.sample_posterior(X, n_samples, random_state)

    a = RelativeKSDTest(LatentOnly(P), LatentOnly(Q), n_posterior_samples=30, burn_in=0,
                        random_state=0).test(X)
    b = RelativeKSDTest(P, Q, model_score="posterior", n_posterior_samples=30, burn_in=0,
                        random_state=0).test(X)
    assert a == b
    # without a burn_in keyword, burn_in + m draws are requested and the first dropped
    calls = []

    class Recording(LatentOnly):
        def sample_posterior(self, X, n_samples, random_state=None):
            calls.append(n_samples)
            return super().sample_posterior(X, n_samples, random_state)

    RelativeKSDTest(Recording(P), Q, n_posterior_samples=30, burn_in=7, random_state=0).test(X)
    assert calls == [37]


# ---------------------------------------------------------------------------
# calibration and power (seconds)
# ---------------------------------------------------------------------------
def _rate(fn, n_trials, seed=0):
    seeds = np.random.SeedSequence(seed).spawn(n_trials)
    return np.mean([fn(np.random.default_rng(s)) for s in seeds])


@pytest.mark.slow
def test_relative_ksd_calibrated_at_the_boundary():
    # R = N(0, I); P = N(+mu e1, I) and Q = N(-mu e1, I) are equally far by symmetry
    mu = np.array([0.5, 0.0])
    p, q = Gaussian(mu), Gaussian(-mu)
    trials, alpha = 300, 0.05

    def trial(rng):
        X = rng.normal(size=(200, 2))
        return RelativeKSDTest(p, q).test(X).reject

    rate = _rate(trial, trials)
    assert abs(rate - alpha) <= 3 * np.sqrt(alpha * (1 - alpha) / trials)


@pytest.mark.slow
def test_lksd_calibrated_for_identical_models():
    # the same PPCA for P and Q, scores from independent posterior draws: D(P) = D(Q)
    rng0 = np.random.default_rng(3)
    A = rng0.uniform(0, 1, size=(5, 2))
    R, P = PPCA(A, 1.0), PPCA(A + 0.5, 1.0)
    trials, alpha = 250, 0.05

    def trial(rng):
        X = R.rvs(150, random_state=rng)
        test = RelativeKSDTest(P, P, model_score="posterior", n_posterior_samples=5, burn_in=0,
                               random_state=rng)
        return test.test(X).reject

    rate = _rate(trial, trials, seed=1)
    assert abs(rate - alpha) <= 3 * np.sqrt(alpha * (1 - alpha) / trials)


@pytest.mark.slow
def test_relative_ksd_power_floor():
    p, q = Gaussian(np.array([0.6, 0.0])), Gaussian(np.array([0.2, 0.0]))

    def trial(rng):
        return RelativeKSDTest(p, q).test(rng.normal(size=(200, 2))).reject

    assert _rate(trial, 60) >= 0.8


# ---------------------------------------------------------------------------
# relative MMD
# ---------------------------------------------------------------------------
def _mmd_reference(Yp, Yq, X, h):
    k = RBF(h)

    def mmd(Y):
        m, n = Y.shape[0], X.shape[0]
        Kyy, Kxx, Kyx = k(Y, Y), k(X, X), k(Y, X)
        return ((Kyy.sum() - np.trace(Kyy)) / (m * (m - 1))
                + (Kxx.sum() - np.trace(Kxx)) / (n * (n - 1)) - 2 * Kyx.mean())

    def proj(Y, Z, other):
        # 2 * mean_{y' != y} k(y, y') - 2 * mean_x k(y, x), per y
        out = []
        for i in range(Y.shape[0]):
            own = np.mean([k(Y[i:i + 1], Y[j:j + 1])[0, 0] for j in range(Y.shape[0]) if j != i])
            out.append(2 * own - 2 * k(Y[i:i + 1], Z).mean())
        return np.array(out)

    gp, gq = proj(Yp, X, None), proj(Yq, X, None)
    gr = np.array([2 * k(Yq, X[j:j + 1]).mean() - 2 * k(Yp, X[j:j + 1]).mean()
                   for j in range(X.shape[0])])
    var = gp.var(ddof=1) / len(gp) + gq.var(ddof=1) / len(gq) + gr.var(ddof=1) / len(gr)
    return mmd(Yp), mmd(Yq), var


def test_relative_mmd_matches_reference():
    rng = np.random.default_rng(0)
    X, Yp, Yq = rng.normal(size=(30, 2)), rng.normal(1.0, size=(25, 2)), rng.normal(size=(20, 2))
    res = RelativeMMDTest(Yp, Yq, bandwidth=0.9).test(X)
    mp, mq, var = _mmd_reference(Yp, Yq, X, 0.9)
    assert res.discrepancy_p == pytest.approx(mp, rel=1e-10)
    assert res.discrepancy_q == pytest.approx(mq, rel=1e-10)
    assert res.statistic == pytest.approx(mp - mq, rel=1e-10)
    assert res.sigma == pytest.approx(np.sqrt(30 * var), rel=1e-10)
    assert res.zscore == pytest.approx((mp - mq) / np.sqrt(var), rel=1e-10)


def test_relative_mmd_samples_models_reproducibly():
    X = np.random.default_rng(0).normal(size=(100, 2))
    p, q = Gaussian(np.full(2, 1.0)), Gaussian(np.zeros(2))
    a = RelativeMMDTest(p, q, random_state=1).test(X)
    assert a == RelativeMMDTest(p, q, random_state=1).test(X)
    assert a.reject
    assert RelativeMMDTest(p, q, n_model_samples=50, random_state=1).test(X) != a
    assert isinstance(clone(RelativeMMDTest(p, q)).get_params()["model_p"], Gaussian)


def test_relative_mmd_validation():
    X = np.random.default_rng(0).normal(size=(50, 2))
    with pytest.raises(TypeError, match="model_q"):
        RelativeMMDTest(Gaussian(np.zeros(2)), lambda x: x).test(X)
    with pytest.raises(ValueError, match="alpha"):
        RelativeMMDTest(Gaussian(np.zeros(2)), Gaussian(np.zeros(2)), alpha=0).test(X)
    with pytest.raises(ValueError, match="model_p"):
        RelativeMMDTest(np.zeros((10, 3)), Gaussian(np.zeros(2))).test(X)


@pytest.mark.slow
def test_relative_mmd_calibrated_at_the_boundary():
    mu = np.array([0.5, 0.0])
    p, q = Gaussian(mu), Gaussian(-mu)
    trials, alpha = 200, 0.05

    def trial(rng):
        return RelativeMMDTest(p, q, random_state=rng).test(rng.normal(size=(100, 2))).reject

    rate = _rate(trial, trials, seed=2)
    assert abs(rate - alpha) <= 3 * np.sqrt(alpha * (1 - alpha) / trials)


# ---------------------------------------------------------------------------
# reproductions
# ---------------------------------------------------------------------------
def test_relative_experiments_registered_and_reproducible():
    from skstein.experiments import EXPERIMENTS, relative_ppca, relative_sampler

    assert EXPERIMENTS["relative-ppca"] == "skstein.experiments.relative_ppca"
    assert EXPERIMENTS["relative-sampler"] == "skstein.experiments.relative_sampler"
    out = relative_ppca.run_trial(0, "h1", 60, relative_ppca.METHODS, 5, 5)
    assert [o["method"] for o in out] == list(relative_ppca.METHODS)
    assert out == relative_ppca.run_trial(0, "h1", 60, relative_ppca.METHODS, 5, 5)
    out = relative_sampler.run_trial(0, 60, (0, 20), (1, 5))
    assert [(o["m"], o["burn_in"]) for o in out] == [(1, 0), (1, 20), (5, 0), (5, 20)]
    assert out == relative_sampler.run_trial(0, 60, (0, 20), (1, 5))
    with pytest.raises(ValueError, match="case"):
        relative_ppca.problem("h2")
    P, Q, R = relative_ppca.problem("h1")
    assert P.W[0, 0] - R.W[0, 0] == pytest.approx(2.0)
    assert Q.W[0, 0] - R.W[0, 0] == pytest.approx(1.0)


def test_relative_ppca_tie_case_is_a_mirror_image():
    # h0-tie: R is invariant under swapping x_1 and x_2 and Q is P swapped, so the
    # relative statistic on X equals minus the statistic on the swapped X
    from skstein.experiments import relative_ppca

    P, Q, R = relative_ppca.problem("h0-tie")
    swap = np.arange(100)
    swap[[0, 1]] = [1, 0]
    np.testing.assert_array_equal(R.W[swap], R.W)
    np.testing.assert_array_equal(Q.W, P.W[swap])
    X = R.rvs(80, random_state=0)
    np.testing.assert_allclose(Q.grad_logpdf(X[:, swap]), P.grad_logpdf(X)[:, swap],
                               rtol=1e-12, atol=1e-12)
    test = RelativeKSDTest(P, Q, kernel="imq", bandwidth="median")
    a, b = test.test(X), test.test(X[:, swap])
    assert a.discrepancy_p == pytest.approx(b.discrepancy_q, rel=1e-10)
    assert a.statistic == pytest.approx(-b.statistic, rel=1e-8)
    # the bandwidth collection is swap invariant too: every difference changes sign
    a, b = test.set_params(bandwidth="aggregate").test(X), test.test(X[:, swap])
    np.testing.assert_allclose(a.bandwidths, b.bandwidths, rtol=1e-12)
    np.testing.assert_allclose(a.statistics, -b.statistics, rtol=1e-8)


# ---------------------------------------------------------------------------
# the sliced (maxSKSD) relative test
# ---------------------------------------------------------------------------
def test_maxsksd_difference_equals_the_functional_statistics():
    from skstein import max_sksd

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4))
    p, q = Gaussian(np.full(4, 0.4)), Gaussian(np.zeros(4), 1.5)
    test = RelativeKSDTest(p, q, discrepancy="maxsksd", kernel="rbf", bandwidth="median",
                           shared_directions=False, random_state=0).fit(X)
    Y = rng.normal(size=(90, 4))
    res = test.test(Y)
    (Gp, Rp, hp), (Gq, Rq, hq) = test.directions_  # each model along its own
    up = max_sksd(Y, p, directions=Gp, slices=Rp, bandwidth=hp)
    uq = max_sksd(Y, q, directions=Gq, slices=Rq, bandwidth=hq)
    assert res.discrepancy_p == pytest.approx(up, rel=1e-10)
    assert res.discrepancy_q == pytest.approx(uq, rel=1e-10)
    assert res.statistic == pytest.approx(up - uq, rel=1e-9, abs=1e-12)
    assert res.bandwidth == 1.0  # the learned per-direction bandwidths, unscaled
    assert res.method == "relative maxSKSD (rbf, jackknife variance)"
    # aggregated: the factors scale the medians of the tested projections
    agg = test.set_params(bandwidth="aggregate").test(Y)
    k = int(np.argmax(agg.zscores))
    assert agg.bandwidths.shape == (10,) and agg.bandwidth == agg.bandwidths[k]
    up_k = max_sksd(Y, p, directions=Gp, slices=Rp,
                    bandwidth=agg.bandwidths[k] * median_bandwidth_1d(Y @ Gp.T))
    assert agg.discrepancy_p == pytest.approx(up_k, rel=1e-10)


def test_shared_directions_evaluate_both_models_along_the_union():
    from skstein import max_sksd

    rng = np.random.default_rng(2)
    X = rng.normal(size=(120, 4))
    p, q = Gaussian(np.full(4, 0.4)), Gaussian(np.zeros(4), 1.5)
    test = RelativeKSDTest(p, q, discrepancy="maxsksd", kernel="rbf", bandwidth="median",
                           random_state=0).fit(X)  # shared_directions=True, the default
    Y = rng.normal(size=(90, 4))
    res = test.test(Y)
    (Gp, Rp, hp), (Gq, Rq, hq) = test.directions_  # each model's own, as learned
    G, R, h = np.vstack([Gp, Gq]), np.vstack([Rp, Rq]), np.concatenate([hp, hq])
    up = max_sksd(Y, p, directions=G, slices=R, bandwidth=h)
    uq = max_sksd(Y, q, directions=G, slices=R, bandwidth=h)
    assert res.discrepancy_p == pytest.approx(up, rel=1e-10)
    assert res.discrepancy_q == pytest.approx(uq, rel=1e-10)
    assert res.statistic == pytest.approx(up - uq, rel=1e-9, abs=1e-12)
    # unfitted, cross-fitted: the same numbers from the same seed
    a = RelativeKSDTest(p, q, discrepancy="maxsksd", shared_directions=True,
                        random_state=1).test(Y)
    b = RelativeKSDTest(p, q, discrepancy="maxsksd", shared_directions=True,
                        random_state=1).test(Y)
    assert a.statistic == b.statistic and "2-fold cross-fit" in a.method
    with pytest.raises(TypeError, match="shared_directions"):
        RelativeKSDTest(p, q, discrepancy="maxsksd", shared_directions="yes").test(Y)


def test_maxsksd_relative_test_keeps_power_in_high_dimension():
    # R: unit-variance Laplace in 50 dimensions; Q = N(0, I) is closer than P = N(0, 1.3 I)
    from skstein.distributions import Laplace

    X = Laplace(50).rvs(600, random_state=1)
    p, q = Gaussian(np.zeros(50), 1.3), Gaussian(np.zeros(50))
    res = RelativeKSDTest(p, q, discrepancy="maxsksd", random_state=0).test(X)
    assert res.reject and res.zscore > 5
    assert not RelativeKSDTest(q, p, discrepancy="maxsksd", random_state=0).test(X).reject
    with pytest.raises(ValueError, match="train_size"):
        RelativeKSDTest(p, q, discrepancy="maxsksd", train_size=1.5).test(X)
    with pytest.raises(ValueError, match="train_size"):
        RelativeKSDTest(p, q, discrepancy="maxsksd", cross_fit=False,
                        train_size=0.001).test(X)
    with pytest.raises(TypeError, match="cross_fit"):
        RelativeKSDTest(p, q, discrepancy="maxsksd", cross_fit="yes").test(X)


def test_maxsksd_relative_test_clone_pickle():
    import pickle

    from sklearn.base import clone

    X = np.random.default_rng(2).normal(size=(80, 3))
    p, q = Gaussian(np.full(3, 0.5)), Gaussian(np.zeros(3))
    test = RelativeKSDTest(p, q, discrepancy="maxsksd", random_state=3)
    a = test.test(X)
    assert clone(test).test(X).zscore == a.zscore
    fitted = clone(test).fit(X[:30])
    again = pickle.loads(pickle.dumps(fitted))
    assert again.test(X[30:]).zscore == fitted.test(X[30:]).zscore


@pytest.mark.slow
def test_maxsksd_relative_calibrated_at_the_boundary():
    # P = N(+mu e1, I) and Q = N(-mu e1, I) are equally far from R = N(0, I) by symmetry
    mu = np.array([0.5, 0.0, 0.0])
    p, q = Gaussian(mu), Gaussian(-mu)
    trials, alpha = 200, 0.05

    def trial(rng):
        X = rng.normal(size=(250, 3))
        return RelativeKSDTest(p, q, discrepancy="maxsksd", random_state=rng).test(X).reject

    rate = _rate(trial, trials, seed=5)
    assert abs(rate - alpha) <= 3 * np.sqrt(alpha * (1 - alpha) / trials), rate
