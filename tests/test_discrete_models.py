"""Discrete models: Categorical, BinaryRBM, LDA (Gibbs kernel, exact ratios), sklearn adapters."""

import numpy as np
import pytest

from _reference_discrete import lda_logpmf, lda_task_loop
from skstein._numba import numba_threads
from skstein._numba.lda import lda_gibbs_tasks
from skstein.distributions import LDA, BinaryRBM, Categorical, from_estimator


def _flip_logpmf_ratio(model, X, shift):
    """log p(x + shift e_j) - log p(x) from logpmf, one coordinate at a time."""
    out = np.empty(X.shape)
    base = model.logpmf(X)
    for j in range(X.shape[1]):
        Xs = X.copy()
        Xs[:, j] = (Xs[:, j] + shift) % model.n_values
        out[:, j] = model.logpmf(Xs) - base
    return out


def test_categorical_ratios_sampler_and_validation():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(4), size=3)
    p = Categorical(probs)
    assert (p.dim, p.n_values) == (3, 4)
    X = p.rvs(20000, random_state=1)
    assert X.dtype == np.int64 and X.min() >= 0 and X.max() <= 3
    for j in range(3):
        freq = np.bincount(X[:, j], minlength=4) / X.shape[0]
        se = np.sqrt(probs[j] * (1 - probs[j]) / X.shape[0])
        assert np.all(np.abs(freq - probs[j]) <= 4 * se)
    for shift in (1, -1):
        np.testing.assert_allclose(p.log_ratio(X[:50], shift),
                                   _flip_logpmf_ratio(p, X[:50], shift), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(p.rvs(5, random_state=3), p.rvs(5, random_state=3))
    with pytest.raises(ValueError, match="sum to 1"):
        Categorical([[0.5, 0.6]])
    with pytest.raises(ValueError, match="shape"):
        Categorical([1.0])
    with pytest.raises(ValueError, match="shift"):
        p.log_ratio(X[:2], 2)


def test_binary_rbm_ratios_match_free_energy_of_sklearn():
    from sklearn.neural_network import BernoulliRBM

    rng = np.random.default_rng(1)
    V = (rng.random((200, 12)) < 0.3).astype(float)
    est = BernoulliRBM(n_components=5, n_iter=5, random_state=0).fit(V)
    model = from_estimator(est)
    assert isinstance(model, BinaryRBM) and model.n_values == 2 and model.dim == 12
    X = V[:30].astype(np.int64)
    # p(v) is exp(-F(v)) / Z with F the estimator's free energy
    np.testing.assert_allclose(model.logpmf(X), -est._free_energy(X.astype(float)), rtol=1e-12)
    for shift in (1, -1):
        Xs_ratio = np.empty(X.shape)
        for j in range(12):
            Xs = X.copy()
            Xs[:, j] = 1 - Xs[:, j]
            Xs_ratio[:, j] = est._free_energy(X.astype(float)) - est._free_energy(Xs.astype(float))
        np.testing.assert_allclose(model.log_ratio(X, shift), Xs_ratio, rtol=1e-10, atol=1e-12)


def test_binary_rbm_sampler_matches_exact_marginals():
    rng = np.random.default_rng(2)
    W = rng.normal(scale=0.8, size=(3, 4))
    model = BinaryRBM(W, rng.normal(size=3), rng.normal(size=4), burn_in=200)
    states = np.array([[(s >> j) & 1 for j in range(4)] for s in range(16)])
    p = np.exp(model.logpmf(states))
    p /= p.sum()
    X = model.rvs(4000, random_state=3)
    counts = np.bincount(X @ (1 << np.arange(4)), minlength=16) / 4000
    assert np.all(np.abs(counts - p) <= 4 * np.sqrt(p * (1 - p) / 4000) + 1e-3)


# --- LDA ----------------------------------------------------------------------------


def _small_lda(seed=0, K=2, V=5, D=3, alpha=(0.3, 0.7)):
    rng = np.random.default_rng(seed)
    return LDA(rng.dirichlet(np.ones(V), size=K), np.array(alpha), n_words=D)


@pytest.mark.parametrize("states", [False, True])
@pytest.mark.parametrize("site,shift", [(-1, 0), (0, 1), (2, -1), (1, 1)])
def test_lda_gibbs_kernel_matches_loop(site, shift, states):
    lda = _small_lda(V=6, D=4, K=3, alpha=(0.2, 0.5, 1.0))
    X = lda.rvs(3, random_state=1)
    U = np.random.default_rng(2).random((3, 1 + 7 + 30, 4), dtype=np.float32)
    out = np.empty((3, 4))
    n = 3
    lda_gibbs_tasks(X, lda._betaT, lda.doc_topic_prior, np.arange(n), np.full(n, site),
                    np.full(n, shift), U, 7, out, states)
    for t in range(n):
        ref = lda_task_loop(X[t], lda.topic_word, lda.doc_topic_prior, site, shift, U[t], 7,
                            states)
        if site < 0:
            np.testing.assert_allclose(out[t], ref, rtol=1e-13)
        else:
            np.testing.assert_allclose(out[t, 0], ref[site], rtol=1e-13)


def _exact_lda_coefficients(lda, X):
    """Difference ratios (n, D) and Barker weights (2, n, D) from p(x) by enumeration."""
    beta, alpha = lda.topic_word, lda.doc_topic_prior
    R_exact = np.empty(X.shape)
    W_exact = np.empty((2,) + X.shape)
    for i, x in enumerate(X):
        lp = lda_logpmf(x, beta, alpha)
        for j in range(X.shape[1]):
            for a, s in enumerate((1, -1)):
                y = x.copy()
                y[j] = (y[j] + s) % lda.n_values
                lr = lda_logpmf(y, beta, alpha) - lp
                if s == 1:
                    R_exact[i, j] = np.exp(lr)
                W_exact[a, i, j] = 1.0 / (1.0 + np.exp(-lr))
    return R_exact, W_exact


def test_lda_state_ratios_converge_and_are_noisier():
    """``ratio_estimate="states"``: same limit as the Rao-Blackwellised estimate, more noise.

    The topics make word 0 rare under topic 0 and word 1 frequent there, so the
    difference ratio at a sampled topic is heavy-tailed for documents containing word 0.
    """
    beta = np.array([[1e-3, 0.6, 0.2, 0.199], [0.4, 0.1, 0.3, 0.2]])
    rb = LDA(beta, [0.5, 0.5], n_words=3)
    st = LDA(beta, [0.5, 0.5], n_words=3, ratio_estimate="states")
    X = np.array([[0, 2, 3], [0, 0, 1], [2, 3, 1]])
    R_exact, W_exact = _exact_lda_coefficients(rb, X)
    R = st.posterior_coefficients(X, "difference", n_samples=40000, burn_in=50,
                                  random_state=0)[0]
    W = st.posterior_coefficients(X, "zanella-barker", n_samples=40000, burn_in=50,
                                  random_state=0)
    # Monte Carlo tolerances for 40000 sweeps (measured errors: under 3e-2 relative on
    # the ratios, 5e-3 absolute on the weights)
    np.testing.assert_allclose(R, R_exact, rtol=0.1)
    np.testing.assert_allclose(W, W_exact, atol=0.02)
    # spread over 200 chains of 50 sweeps of the ratio of word 0 of document 0 (exact
    # 1.5): measured sd 0.31-0.34 (Rao-Blackwellised) against 2.6-3.8 (states)
    Xr = np.repeat(X[:1], 200, axis=0)
    sd = [m.posterior_coefficients(Xr, "difference", n_samples=50, burn_in=20,
                                   random_state=1)[0][:, 0].std() for m in (rb, st)]
    assert sd[1] > 4 * sd[0]
    with pytest.raises(ValueError, match="ratio_estimate"):
        LDA(beta, 0.5, ratio_estimate="raw")


def test_lda_posterior_coefficients_converge_to_exact_ratios():
    """Estimates against p(x) summed over every topic assignment (K^D = 8 terms)."""
    lda = _small_lda()
    X = lda.rvs(5, random_state=1)
    R = lda.posterior_coefficients(X, "difference", n_samples=20000, burn_in=50,
                                   random_state=0)[0]
    W = lda.posterior_coefficients(X, "zanella-barker", n_samples=20000, burn_in=50,
                                   random_state=0)
    R_exact, W_exact = _exact_lda_coefficients(lda, X)
    # Monte Carlo tolerances (20000 Rao-Blackwellised sweeps; errors measured ~1e-2
    # relative on the ratios, ~3e-3 absolute on the weights)
    np.testing.assert_allclose(R, R_exact, rtol=0.05)
    np.testing.assert_allclose(W, W_exact, atol=0.02)


def test_lda_draws_do_not_depend_on_memory_or_threads():
    lda = _small_lda(V=8, D=5)
    X = lda.rvs(7, random_state=2)
    for op in ("difference", "zanella-barker"):
        a = lda.posterior_coefficients(X, op, n_samples=20, burn_in=5, random_state=3)
        b = lda.posterior_coefficients(X, op, n_samples=20, burn_in=5, random_state=3,
                                       max_memory=4 * 26 * 5 * 3)
        with numba_threads(1):
            c = lda.posterior_coefficients(X, op, n_samples=20, burn_in=5, random_state=3)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


def test_lda_rvs_word_frequencies():
    """Words of one-topic documents follow that topic's distribution."""
    rng = np.random.default_rng(4)
    beta = rng.dirichlet(np.ones(6), size=2)
    lda = LDA(beta, [1e-3, 1e-3], n_words=40)
    X = lda.rvs(3000, random_state=5)
    # with alpha -> 0 each document is (almost surely) one topic, chosen with prob 1/2
    freq = np.bincount(X.ravel(), minlength=6) / X.size
    expected = beta.mean(axis=0)
    assert np.all(np.abs(freq - expected) < 0.02)


def test_lda_validation():
    lda = _small_lda()
    with pytest.raises(ValueError, match="outside"):
        lda.posterior_coefficients([[0, 1, 5]], "difference", n_samples=2, burn_in=0)
    with pytest.raises(ValueError, match="has 3 words"):
        lda.posterior_coefficients([[0, 1]], "difference", n_samples=2, burn_in=0)
    with pytest.raises(ValueError, match="operator"):
        lda.posterior_coefficients([[0, 1, 2]], "langevin")
    with pytest.raises(ValueError, match="n_words"):
        LDA(lda.topic_word, 0.1).rvs(2)
    beta = lda.topic_word.copy()
    beta[:, 4] = 0.0
    with pytest.raises(ValueError, match="probability 0 under every topic"):
        LDA(beta, 0.1).posterior_coefficients([[0, 4, 1]], "difference")
    with pytest.raises(ValueError, match="doc_topic_prior"):
        LDA(beta, [0.1, -1.0])


def test_from_sklearn_lda():
    from sklearn.decomposition import LatentDirichletAllocation

    lda = _small_lda(V=30, D=20, K=3, alpha=(0.3, 0.3, 0.3))
    X = lda.rvs(60, random_state=0)
    counts = np.stack([np.bincount(x, minlength=30) for x in X])
    est = LatentDirichletAllocation(n_components=3, random_state=0, max_iter=5).fit(counts)
    model = from_estimator(est)
    assert isinstance(model, LDA)
    assert model.n_values == 30 and model.dim is None
    np.testing.assert_allclose(model.topic_word.sum(axis=1), 1.0)
    np.testing.assert_allclose(model.topic_word,
                               est.components_ / est.components_.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(model.doc_topic_prior, est.doc_topic_prior_)


def test_from_estimator_rejects_pipeline_of_discrete_model():
    from sklearn.neural_network import BernoulliRBM
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    V = (np.random.default_rng(0).random((50, 4)) < 0.5).astype(float)
    pipe = make_pipeline(StandardScaler(), BernoulliRBM(n_components=2, random_state=0)).fit(V)
    with pytest.raises(TypeError, match="discrete"):
        from_estimator(pipe)
