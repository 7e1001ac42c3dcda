"""Ranking sample sets by discrepancy (skstein.rank_samples)."""

import numpy as np
import pytest

from skstein import KSDTest, MaxSKSDTest, SampleRanking, ksd, max_sksd, rank_samples
from skstein.distributions import Gaussian
from skstein.kernels import median_bandwidth, whitening
from skstein.ranking import _counts, _group_counts, _replicates, _stein_parts


def _candidates(seed=0, n=200, d=2):
    rng = np.random.default_rng(seed)
    return {s: s * rng.standard_normal((n, d)) for s in (1.0, 1.3, 1.8)}


@pytest.mark.parametrize("statistic", ["u", "v"])
def test_values_are_the_statistics_and_the_order_is_right(statistic):
    model = Gaussian(np.zeros(2))
    cands = _candidates()
    test = KSDTest(model, bandwidth=1.0, statistic=statistic)
    res = rank_samples(cands, test, n_bootstrap=300, random_state=0)
    assert isinstance(res, SampleRanking)
    for name, v in zip(res.names, res.values):
        np.testing.assert_allclose(v, ksd(cands[name], model, bandwidth=1.0,
                                          statistic=statistic), rtol=1e-10, atol=1e-14)
    assert res.order == (1.0, 1.3, 1.8) and res.best == 1.0
    assert list(res.ranks) == [1, 2, 3]
    np.testing.assert_allclose(res.prob_best.sum(), 1.0)
    assert np.all(res.ci_low <= res.values) and np.all(res.values <= res.ci_high)
    assert res.bootstrap.shape == (3, 300) and not res.bootstrap.flags.writeable
    rows = res.as_rows()
    assert rows[2]["rank"] == 3 and rows[0]["n_samples"] == 200


@pytest.mark.parametrize("statistic", ["u", "v"])
def test_replicates_equal_the_statistic_of_explicit_resamples(statistic):
    model = Gaussian(np.zeros(3))
    X = 1.2 * np.random.default_rng(1).standard_normal((40, 3))
    for test in (KSDTest(model, bandwidth=0.8),
                 MaxSKSDTest(model, bandwidth=0.7, random_state=0).fit(X[:20])):
        upper, diag, _ = _stein_parts(test, X, np.random.default_rng(0), 2**26)
        rng = np.random.default_rng(2)
        W = _counts(40, None, 5, rng)
        boot = _replicates(upper, diag, W, statistic)
        for b in range(5):
            Xb = np.repeat(X, W[b].astype(int), axis=0)
            if isinstance(test, KSDTest):
                ref = ksd(Xb, model, bandwidth=0.8, statistic=statistic)
            else:
                ref = max_sksd(Xb, model, directions=test.directions_, slices=test.slices_,
                               bandwidth=test.bandwidth_, statistic=statistic)
            np.testing.assert_allclose(boot[b], ref, rtol=1e-10)


def test_one_shared_test_measures_every_candidate_with_one_kernel():
    # a bandwidth rule of one shared test is resolved once, on the pooled candidates; a
    # test per candidate resolves it on its own candidate
    model = Gaussian(np.zeros(2))
    cands = _candidates(n=150)
    pooled = np.concatenate(list(cands.values()))
    h = median_bandwidth(pooled)
    res = rank_samples(cands, KSDTest(model, bandwidth="median"), n_bootstrap=20,
                       random_state=0)
    ref = rank_samples(cands, KSDTest(model, bandwidth=h), n_bootstrap=20, random_state=0)
    np.testing.assert_allclose(res.values, ref.values, rtol=1e-12)
    assert np.array_equal(res.bootstrap, ref.bootstrap) and res.method == ref.method
    own = rank_samples(cands, {k: KSDTest(model, bandwidth="median") for k in cands},
                       n_bootstrap=20, random_state=0)
    for k, v in zip(own.names, own.values):
        np.testing.assert_allclose(v, ksd(cands[k], model, bandwidth=median_bandwidth(cands[k])),
                                   rtol=1e-10)
    # whitening too: one map, from the pooled candidates
    white = whitening(pooled, "held-out")  # the KSD test's covariance
    hw = median_bandwidth(pooled @ white[0])
    res = rank_samples(cands, KSDTest(model, bandwidth="median", whiten=True), n_bootstrap=20,
                       random_state=0)
    for k, v in zip(res.names, res.values):
        X = cands[k]
        S = model.grad_logpdf(X)
        np.testing.assert_allclose(
            v, ksd(X @ white[0], lambda Y, S=S @ white[1]: S, bandwidth=hw), rtol=1e-10)
    with pytest.raises(ValueError, match=r"samples\[1\] has 3 features, samples\[0\] 2"):
        rank_samples([cands[1.0], np.ones((10, 3))], KSDTest(model, bandwidth="median"))


def test_row_blocks_give_the_same_numbers():
    model = Gaussian(np.zeros(2))
    cands = _candidates(n=120)
    mtest = MaxSKSDTest(model, random_state=0).fit(np.random.default_rng(5).normal(size=(80, 2)))
    for test in (KSDTest(model, bandwidth="median"), mtest):
        a = rank_samples(cands, test, n_bootstrap=50, random_state=3)
        b = rank_samples(cands, test, n_bootstrap=50, random_state=3, max_memory=8 * 120 * 10)
        np.testing.assert_allclose(a.values, b.values, rtol=1e-10)
        np.testing.assert_allclose(a.bootstrap, b.bootstrap, rtol=1e-8, atol=1e-12)
        c = rank_samples(cands, test, n_bootstrap=50, random_state=3)
        assert np.array_equal(a.bootstrap, c.bootstrap)


def test_groups_resample_whole_chains():
    rng = np.random.default_rng(4)
    W = _counts(12, np.repeat(np.arange(4), 3), 20, rng)
    assert np.all(W[:, 0::3] == W[:, 1::3]) and np.all(W.sum(axis=1) == 12)
    C, inverse = _group_counts(np.repeat(np.arange(4), 3), 20, np.random.default_rng(4))
    assert C.shape == (20, 4) and np.array_equal(W, C[:, inverse])
    # chains: strongly dependent rows within a chain widen the interval
    model = Gaussian(np.zeros(1))
    chains = np.repeat(np.random.default_rng(6).standard_normal((20, 1)), 10, axis=0)
    chains += 0.01 * np.random.default_rng(7).standard_normal(chains.shape)
    labels = np.repeat(np.arange(20), 10)
    test = KSDTest(model, bandwidth=1.0)
    rows = rank_samples([chains], test, n_bootstrap=400, random_state=0)
    grouped = rank_samples([chains], test, n_bootstrap=400, random_state=0, groups=labels,
                           pairs="all")
    width = rows.ci_high - rows.ci_low
    assert grouped.ci_high[0] - grouped.ci_low[0] > 2 * width[0]


@pytest.mark.parametrize("kind", ["ksd", "maxsksd"])
def test_pairs_between_groups_against_brute_force(kind):
    rng = np.random.default_rng(11)
    model = Gaussian(np.zeros(3))
    n_chains, per = 9, 5
    X = np.repeat(rng.standard_normal((n_chains, 3)), per, axis=0)
    X += 0.2 * rng.standard_normal(X.shape)  # dependent states within a chain
    labels = np.tile(np.arange(n_chains), per).reshape(per, n_chains).T.ravel()
    labels = rng.permutation(n_chains)[labels]  # unsorted labels, uneven sizes below
    X, labels = X[:-2], labels[:-2]
    if kind == "ksd":
        test = KSDTest(model, bandwidth=1.2)
    else:
        test = MaxSKSDTest(model, random_state=0).fit(rng.standard_normal((60, 3)))
    res = rank_samples([X], test, groups=labels, n_bootstrap=30, random_state=1)
    H = _stein_parts(test, X, np.random.default_rng(0), 2**26)
    H = H[0] + H[0].T
    between = labels[:, None] != labels[None, :]
    np.testing.assert_allclose(res.values[0], H[between].mean(), rtol=1e-12)
    assert "pairs between groups" in res.method
    # one resample, written out: copies of chains, pairs within a chain or between
    # copies of one chain left out
    C = np.random.default_rng(5).integers(0, 3, n_chains).astype(float)
    C[:2] = 1.0
    num = den = 0.0
    for i in range(len(X)):
        for j in range(len(X)):
            if labels[i] != labels[j]:
                w = C[labels[i]] * C[labels[j]]
                num += w * H[i, j]
                den += w
    from skstein.ranking import _between_replicates, _group_sums

    B = _group_sums(_stein_parts(test, X, np.random.default_rng(0), 2**26)[0], labels, n_chains)
    got = _between_replicates(B, np.bincount(labels).astype(float), C[None])[0]
    np.testing.assert_allclose(got, num / den, rtol=1e-12)
    # the row-block path gives the same numbers, and pairs="all" the plain statistic
    small = rank_samples([X], test, groups=labels, n_bootstrap=30, random_state=1,
                         max_memory=8 * len(X) * 4)
    np.testing.assert_allclose(small.values, res.values, rtol=1e-10)
    np.testing.assert_allclose(small.bootstrap, res.bootstrap, rtol=1e-8, atol=1e-12)
    every = rank_samples([X], test, groups=labels, pairs="all", n_bootstrap=30, random_state=1)
    n = len(X)
    np.testing.assert_allclose(every.values[0], (H.sum() - np.trace(H)) / (n * (n - 1)),
                               rtol=1e-10)


def test_pairs_between_groups_see_the_marginal_of_slow_chains():
    # 20 chains of 20 states each, started from N(0, 1) (the right marginal) but
    # nearly frozen: all pairs penalise the freezing, the pairs between chains do not
    rng = np.random.default_rng(12)
    model = Gaussian(np.zeros(1))
    slow = np.repeat(rng.standard_normal((20, 1)), 20, axis=0) + 0.01 * rng.standard_normal(
        (400, 1))
    wide = 1.3 * rng.standard_normal((400, 1))  # independent draws, wrong variance
    labels = np.repeat(np.arange(20), 20)
    test = KSDTest(model, bandwidth=1.0)
    cands = {"slow": slow, "wide": wide}
    assert rank_samples(cands, test, groups=labels, pairs="all", n_bootstrap=50,
                        random_state=0).best == "wide"
    assert rank_samples(cands, test, groups=labels, n_bootstrap=50,
                        random_state=0).best == "slow"


def test_one_test_per_candidate():
    rng = np.random.default_rng(8)
    model = Gaussian(np.zeros(4))
    cands = {"a": rng.standard_normal((150, 4)), "b": rng.laplace(size=(150, 4))}
    tests = {k: MaxSKSDTest(model, random_state=0).fit(rng.standard_normal((100, 4)) if k == "a"
                                                       else rng.laplace(size=(100, 4)))
             for k in cands}
    res = rank_samples(cands, tests, n_bootstrap=100, random_state=0)
    for k, v in zip(res.names, res.values):
        t = tests[k]
        np.testing.assert_allclose(v, max_sksd(cands[k], model, directions=t.directions_,
                                               bandwidth=t.bandwidth_), rtol=1e-10)
    assert res.best == "a" and res.method == "maxSKSD-g (rbf)"


def test_validation():
    model = Gaussian(np.zeros(2))
    X = np.random.default_rng(0).standard_normal((20, 2))
    with pytest.raises(ValueError, match="fitted"):
        rank_samples([X], MaxSKSDTest(model))
    with pytest.raises(TypeError, match="KSDTest"):
        rank_samples([X], model)
    with pytest.raises(ValueError, match="entries"):
        rank_samples([X, X], [KSDTest(model)] * 3)
    with pytest.raises(ValueError, match="no entry"):
        rank_samples({"a": X}, {"b": KSDTest(model)})
    with pytest.raises(TypeError, match="wrap it in a list"):
        rank_samples(X, KSDTest(model))
    with pytest.raises(ValueError, match="empty"):
        rank_samples({}, KSDTest(model))
    with pytest.raises(ValueError, match="confidence"):
        rank_samples([X], KSDTest(model), confidence=1.5)
    with pytest.raises(ValueError, match="groups"):
        rank_samples([X], KSDTest(model), groups=np.zeros(5))
    with pytest.raises(ValueError, match="statistic"):
        rank_samples([X], KSDTest(model), statistic="w")
    with pytest.raises(ValueError, match="pairs"):
        rank_samples([X], KSDTest(model), pairs="within")
    with pytest.raises(ValueError, match="needs groups"):
        rank_samples([X], KSDTest(model), pairs="between-groups")
    with pytest.raises(ValueError):
        rank_samples([np.full((5, 2), np.nan)], KSDTest(model))
    # the default KSDTest aggregates over bandwidths: refused as the test's setting, not
    # as a fault of the pooled samples
    with pytest.raises(ValueError, match="^rank_samples needs one kernel"):
        rank_samples([X, X + 0.1], KSDTest(model))
    with pytest.raises(ValueError, match="^rank_samples needs one kernel"):
        rank_samples([X, X + 0.1], KSDTest(model, bandwidth="median", whiten="aggregate"))
