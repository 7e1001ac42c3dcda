"""The ``ica`` and ``sghmc-stepsize`` reproductions (CI-sized runs)."""

import os

import numpy as np
import pytest

from skstein.experiments import EXPERIMENTS, reproduce
from skstein.experiments import ica, sghmc_stepsize
from skstein.kernels import whitening


def test_ica_rows_and_reproducibility():
    kw = dict(quick=True, dims=[3], n_seeds=1, n_steps=40, random_state=5)
    a = ica.run(n_jobs=1, **kw)
    b = ica.run(n_jobs=2, **kw)
    assert [r["method"] for r in a] == ["KSD", "maxSKSD", "MLE"]
    for r in a:
        assert {"method", "dim", "seed", "test_loglik"} <= set(r)
        assert r["dim"] == 3 and r["seed"] == 0 and np.isfinite(r["test_loglik"])
    assert [r["test_loglik"] for r in a] == [r["test_loglik"] for r in b]
    # every method starts from the same problem: the same true log-likelihood
    assert len({r["test_loglik_true"] for r in a}) == 1
    # a problem does not depend on which other dimensions run
    c = ica.run(quick=True, dims=[3, 4], n_seeds=1, n_steps=40, random_state=5, n_jobs=1)
    assert [r["test_loglik"] for r in c if r["dim"] == 3] == [r["test_loglik"] for r in a]
    # the paper's order (ascent on G first) changes only the maxSKSD run
    d = ica.run(maxsksd_order="ascent-first", bandwidth_every=1, n_jobs=1, **kw)
    assert all(r["maxsksd_order"] == "ascent-first" and r["bandwidth_every"] == 1 for r in d)
    assert d[0]["test_loglik"] != a[0]["test_loglik"]  # KSD: bandwidth every step now
    assert d[1]["test_loglik"] != a[1]["test_loglik"]
    assert d[2]["test_loglik"] == a[2]["test_loglik"]  # MLE has no bandwidth
    # the optional maxSKSD-rg runs only when asked for, on the same problem
    e = ica.run(n_jobs=1, methods=("maxSKSD", "maxSKSD-rg"), **kw)
    assert [r["method"] for r in e] == ["maxSKSD", "maxSKSD-rg"]
    assert e[0]["test_loglik"] == a[1]["test_loglik"]
    assert e[1]["test_loglik"] != e[0]["test_loglik"]
    assert e[1]["test_loglik_true"] == a[1]["test_loglik_true"]
    # the paper's coordinates (no whitening) change every run, MLE's included
    f = ica.run(n_jobs=1, whiten=False, **kw)
    assert all(r["whiten"] for r in a) and not any(r["whiten"] for r in f)
    assert all(x["test_loglik"] != y["test_loglik"] for x, y in zip(a, f))
    with pytest.raises(TypeError, match="whiten"):
        ica.run(n_jobs=1, whiten="yes", **kw)


def test_ica_maxsksd_rg_learns_d_orthonormal_slices():
    loss = ica._make_loss("maxSKSD-rg", 1e-2, 1, dim=5)
    X = np.random.default_rng(0).standard_normal((60, 5))
    loss.value_and_grad(X, -X)
    assert loss.variant == "rg" and loss.slices_.shape == (5, 5)
    np.testing.assert_allclose(loss.slices_ @ loss.slices_.T, np.eye(5), atol=1e-12)


def test_ica_training_improves_on_the_start_and_mle_is_best():
    key = (0, 4, 0)
    truth, X, X_test, B0 = ica.make_problem(key, 3000, 1000)
    start = ica.ICA(B0).logpdf(X_test).mean()
    lls = {}
    for method in ica.METHODS + ica.OPTIONAL_METHODS:
        for whiten in (False, True):
            model, _, diverged = ica.train(method, X, B0, n_steps=1500, learning_rate=1e-2,
                                           whiten=whiten, random_state=0)
            assert not diverged
            lls[method, whiten] = model.logpdf(X_test).mean()
    assert all(ll > start + 1.0 for ll in lls.values())
    assert lls["MLE", False] >= max(lls.values()) - 0.05
    assert lls["MLE", False] > truth.logpdf(X_test).mean() - 0.2


def test_ica_whitened_training_is_training_on_whitened_data():
    _, X, X_test, B0 = ica.make_problem((0, 4, 0), 600, 200)
    start, _, _ = ica.train("MLE", X, B0, n_steps=0, whiten=True)
    np.testing.assert_allclose(start.unmixing, B0, rtol=1e-10, atol=1e-12)  # same start
    A = whitening(X)[0]
    logdet = np.linalg.slogdet(A)[1]
    for method in ica.METHODS + ica.OPTIONAL_METHODS:
        kw = dict(n_steps=30, learning_rate=1e-2, random_state=1)
        model, _, _ = ica.train(method, X, B0, whiten=True, **kw)
        white, _, _ = ica.train(method, X @ A, np.linalg.solve(A, B0.T).T, **kw)
        np.testing.assert_allclose(model.unmixing, white.unmixing @ A.T, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(model.logpdf(X_test), white.logpdf(X_test @ A) + logdet,
                                   rtol=1e-9, atol=1e-9)
        plain, _, _ = ica.train(method, X, B0, **kw)
        assert not np.allclose(plain.unmixing, model.unmixing)


def test_ica_summary_and_validation():
    rows = [{"method": m, "dim": 2, "seed": s, "test_loglik": v + s, "test_loglik_true": 0.0,
             "seconds": 1.0} for s in range(2) for m, v in (("KSD", -3.0), ("MLE", -1.0))]
    summ = ica.summary(rows)
    ksd_row = [r for r in summ if r["method"] == "KSD"][0]
    assert ksd_row["gap_to_mle_per_dim"] == pytest.approx(-1.0)
    assert ksd_row["test_loglik"] == pytest.approx(-2.5)
    with pytest.raises(ValueError, match="method"):
        ica.run(quick=True, methods=("KSD", "nope"))


def test_sghmc_stepsize_rows():
    rows = sghmc_stepsize.run(quick=True, step_sizes=(0.006, 0.014), n_jobs=1)
    assert {r["method"] for r in rows} == {"KL", "KSD", "maxSKSD-g", "maxSKSD-rg"}
    assert len(rows) == 4 * 2
    for r in rows:
        assert {"seed", "method", "step_size", "value"} <= set(r)
        assert np.isfinite(r["value"]) and r["ci_low"] <= r["value"] <= r["ci_high"]
    picks = sghmc_stepsize.picks(rows)
    assert {p["method"] for p in picks} == {"KL", "KSD", "maxSKSD-g", "maxSKSD-rg"}
    kl = [p for p in picks if p["method"] == "KL"][0]
    assert kl["grid_steps_from_kl"] == 0 and kl["kl_pick_prob_best"] == 1.0
    for method in sghmc_stepsize.METHODS:  # each resample picks exactly one step size
        assert sum(r["prob_best"] for r in rows if r["method"] == method) == pytest.approx(1)
    for p in picks:
        at_kl = [r for r in rows if r["method"] == p["method"]
                 and r["step_size"] == p["kl_pick"]][0]
        assert p["kl_pick_prob_best"] == at_kl["prob_best"]


def test_kl_of_a_gaussian_fit():
    rng = np.random.default_rng(0)
    cov = np.array([[2.0, 0.3], [0.3, 0.5]])
    X = rng.multivariate_normal(np.zeros(2), cov, size=200000)
    assert abs(sghmc_stepsize.kl_gaussian_fit(X, cov)) < 1e-3
    X2 = rng.multivariate_normal([1.0, 0.0], cov, size=200000)
    P = np.linalg.inv(cov)
    assert sghmc_stepsize.kl_gaussian_fit(X2, cov) == pytest.approx(0.5 * P[0, 0], rel=0.02)


def test_exact_law_of_the_kept_states_matches_simulated_chains():
    # 4000 chains, states kept at steps 60 and 80: the recursion's moments against
    # the sampler's (mean within 4.5 standard errors, covariance entries within 4.5
    # of their standard errors: 2 x 15 + 2 x 120 comparisons)
    from skstein.samplers import SGHMC

    key, eps, n = (3, 1), 0.1, 4000
    cfg = dict(n_chains=n, burn_in=40, thin=20, n_samples=2 * n)
    law = sghmc_stepsize.kept_state_law(key, eps, cfg)
    target, cov = sghmc_stepsize.make_target(key)
    rng = np.random.default_rng(0)
    Z0 = sghmc_stepsize.START + rng.standard_normal((n, sghmc_stepsize.DIM))
    sampler = SGHMC(eps, sghmc_stepsize.FRICTION,
                    gradient_noise=sghmc_stepsize.GRADIENT_NOISE)
    states = list(sampler.iterate(target, Z0, 80, random_state=1))
    assert len(law) == 2
    for (mean, S), Z in zip(law, (states[59], states[79])):
        sd = np.sqrt(np.diag(S))
        assert np.all(np.abs(Z.mean(axis=0) - mean) < 4.5 * sd / np.sqrt(n))
        se = np.sqrt((np.outer(sd**2, sd**2) + S**2) / n)
        assert np.all(np.abs(np.cov(Z.T) - S) < 4.5 * se)
    # the exact KL is that of the Gaussian fitted to a large sample of the mixture
    # (the step is large, so that the recursion's order of updates shows in the
    # moments; the chains are heated far from the target: KL about 24, whose estimate
    # from 200000 points errs by about 0.03)
    X = np.concatenate([rng.multivariate_normal(m, S, size=100000) for m, S in law])
    assert sghmc_stepsize.exact_kl(key, eps, cfg) == pytest.approx(
        sghmc_stepsize.kl_gaussian_fit(X, cov), rel=3e-3)
    # at the FULL protocol's end of burn-in the chains are close to it
    assert sghmc_stepsize.exact_kl(key, 0.004) < 0.5


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ica", "sghmc-stepsize"])
def test_reproduce_writes_csv_and_plot(tmp_path, name):
    assert name in EXPERIMENTS
    rows, csv_path, png_path, _ = reproduce(name, out_dir=tmp_path, quick=True,
                                            n_trials=1, n_jobs=1)
    assert os.path.exists(csv_path) and rows
    if png_path is not None:
        assert os.path.getsize(png_path) > 1000
