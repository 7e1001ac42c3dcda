"""Amortised (sliced) SVGD for a VAE on the digits: gradients, pieces and the quick run."""

import numpy as np
import pytest

from skstein import SVGD
from skstein.experiments import EXPERIMENTS, amortised_vae as av
from skstein.experiments._mlp import Adam, bernoulli_loglik, init_mlp, mlp_backward, mlp_forward


def _fd(f, x, h=1e-6):
    """Central finite differences of the scalar f at every entry of x (changed in place)."""
    g = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        old = x[i]
        x[i] = old + h
        up = f()
        x[i] = old - h
        down = f()
        x[i] = old
        g[i] = (up - down) / (2 * h)
    return g


def _check_grads(f, params, grads, rtol=1e-5, atol=1e-7):
    for layer, glayer in zip(params, grads):
        for p, g in zip(layer, glayer):
            np.testing.assert_allclose(g, _fd(f, p), rtol=rtol, atol=atol)


def _binary(rng, shape):
    return (rng.random(shape) < 0.4).astype(float)


def test_mlp_backward_matches_finite_differences():
    rng = np.random.default_rng(0)
    layers = init_mlp((5, 7, 6, 3), rng)
    x = rng.standard_normal((4, 5))
    w = rng.standard_normal((4, 3))

    def loss():
        return float((mlp_forward(layers, x)[0] * w).sum())

    out, acts = mlp_forward(layers, x)
    grads, gx = mlp_backward(layers, acts, w, inputs=True)
    _check_grads(loss, layers, grads)
    np.testing.assert_allclose(gx, _fd(loss, x), rtol=1e-5, atol=1e-7)
    # ReLU: some hidden units are off for some rows, so the mask is exercised
    assert 0 < np.mean(acts[1] > 0) < 1


def test_bernoulli_loglik_value_and_gradient():
    rng = np.random.default_rng(1)
    logits = 3 * rng.standard_normal((3, 8))
    x = _binary(rng, (3, 8))
    value, grad = bernoulli_loglik(logits, x, grad=True)
    p = 1 / (1 + np.exp(-logits))
    np.testing.assert_allclose(value, (x * np.log(p) + (1 - x) * np.log1p(-p)).sum(1),
                               rtol=1e-12)
    np.testing.assert_allclose(grad, _fd(lambda: bernoulli_loglik(logits, x).sum(), logits),
                               rtol=1e-6, atol=1e-8)
    # no overflow at extreme logits
    assert np.isfinite(bernoulli_loglik(np.array([[800.0, -800.0]]), np.array([[1.0, 0.0]]))).all()


def _small_model(method, rng, latent=3):
    return av.Model(method, latent, rng, hidden=(7, 5))


def test_decoder_pass_gradients():
    rng = np.random.default_rng(2)
    model = _small_model("svgd", rng)
    X = _binary(rng, (2, av.N_PIXELS))
    Z = rng.standard_normal((2, 4, 3))
    loglik, gz, grads = av.decoder_pass(model.decoder, Z, X)

    def mean_ll():
        return float(av.decoder_pass(model.decoder, Z, X)[0].mean())

    _check_grads(mean_ll, model.decoder, grads)
    np.testing.assert_allclose(gz, _fd(lambda: float(
        av.decoder_pass(model.decoder, Z, X)[0].sum()), Z), rtol=1e-5, atol=1e-7)


def test_posterior_score_is_the_gradient_of_the_log_joint():
    rng = np.random.default_rng(3)
    model = _small_model("svgd", rng)
    X = _binary(rng, (3, av.N_PIXELS))
    Z = rng.standard_normal((3, 5, 3))
    S = av.posterior_score(model.decoder, X)(Z)
    np.testing.assert_allclose(S, _fd(lambda: float(av.log_joint(model.decoder, Z, X).sum()),
                                      Z), rtol=1e-5, atol=1e-7)
    # the log joint includes the prior's normalising constant: at a decoder with zero
    # output, log p(x | z) = -64 log 2 and log p(z) is the standard normal density
    dec = [[np.zeros_like(p) for p in layer] for layer in model.decoder]
    lj = av.log_joint(dec, Z, X)
    ref = -64 * np.log(2) - 0.5 * (Z**2).sum(-1) - 1.5 * np.log(2 * np.pi)
    np.testing.assert_allclose(lj, ref, rtol=1e-12)


def test_vae_loss_gradients():
    rng = np.random.default_rng(4)
    model = _small_model("vae", rng)
    X = _binary(rng, (3, av.N_PIXELS))
    noise = rng.standard_normal((3, 4, 3))
    loss, egrads, dgrads = av.vae_loss(model.encoder, model.decoder, X, noise)

    def f():
        return float(av.vae_loss(model.encoder, model.decoder, X, noise)[0])

    _check_grads(f, model.encoder, egrads)
    _check_grads(f, model.decoder, dgrads)


def test_vae_kl_term_in_closed_form():
    rng = np.random.default_rng(5)
    model = _small_model("vae", rng)
    X = _binary(rng, (2, av.N_PIXELS))
    noise = rng.standard_normal((2, 4000, 3))
    dec = [[np.zeros_like(p) for p in layer] for layer in model.decoder]
    loss = av.vae_loss(model.encoder, dec, X, noise)[0]
    h = mlp_forward(model.encoder, X)[0]
    mu, lv = h[:, :3], h[:, 3:]
    kl = 0.5 * (mu**2 + np.exp(lv) - lv - 1).sum(1)
    np.testing.assert_allclose(loss, 64 * np.log(2) + kl.mean(), rtol=1e-12)


def test_regression_loss_gradient_and_step_direction():
    rng = np.random.default_rng(6)
    model = _small_model("svgd", rng)
    X = _binary(rng, (2, av.N_PIXELS))
    noise = rng.standard_normal((2, 5, 3))
    target = rng.standard_normal((2, 5, 3))
    loss, grads = av.regression_loss(model.encoder, X, noise, target)
    _check_grads(lambda: float(av.regression_loss(model.encoder, X, noise, target)[0]),
                 model.encoder, grads)


@pytest.mark.parametrize("hidden", [(7, 5), ()])
def test_encoder_pass_equals_the_network_on_the_concatenated_input(hidden):
    # the first layer split into its image and noise parts: the output and the gradients
    # of mlp_forward / mlp_backward on the rows [x_b, noise_bi], to rounding
    rng = np.random.default_rng(12)
    encoder = init_mlp((av.N_PIXELS + 3,) + hidden + (3,), rng)
    for layer in encoder:
        layer[1] += rng.standard_normal(layer[1].shape)
    X = _binary(rng, (4, av.N_PIXELS))
    noise = rng.standard_normal((4, 5, 3))
    z, acts = av.encoder_forward(encoder, X, noise)
    z0, acts0 = mlp_forward(encoder, av._with_noise(X, noise))
    np.testing.assert_allclose(z, z0, rtol=1e-12, atol=1e-12)
    g = rng.standard_normal(z.shape)
    got = av.encoder_backward(encoder, X, noise, acts, g.copy())
    want, _ = mlp_backward(encoder, acts0, g)
    for a, b in zip(got, want):
        for ga, gb in zip(a, b):
            np.testing.assert_allclose(ga, gb, rtol=1e-12, atol=1e-12)


def test_amortised_step_regresses_onto_the_moved_samples():
    # the encoder gradient of one amortised step equals that of the regression loss with
    # the target z + 0.1 phi(z), phi from SVGD.direction with the decoder's posterior
    rng = np.random.default_rng(7)
    model = _small_model("svgd", rng)
    X = _binary(rng, (3, av.N_PIXELS))
    seed = 11
    noise = np.random.default_rng(seed).standard_normal((3, 6, 3))
    Z = av.encoder_forward(model.encoder, X, noise)[0].reshape(3, 6, 3)
    phi = SVGD(None).direction(Z, av.posterior_score(model.decoder, X))
    _, egrads = av.regression_loss(model.encoder, X, noise, Z + av.STEP_SIZE * phi)
    _, _, dgrads = av.decoder_pass(model.decoder, Z, X)

    seen = []

    class Recorder:
        def step(self, grads):
            seen.append(grads)

    av.train_step(model, Recorder(), SVGD(None), X, 6, np.random.default_rng(seed))
    got = seen[0]
    n_enc = len(model.encoder)
    for a, b in zip(got[:n_enc], egrads):
        for ga, gb in zip(a, b):
            np.testing.assert_allclose(ga, gb, rtol=1e-10, atol=1e-14)
    for a, b in zip(got[n_enc:], dgrads):  # descent on the negative mean log-likelihood
        for ga, gb in zip(a, b):
            np.testing.assert_allclose(ga, -gb, rtol=1e-10, atol=1e-14)


def test_adam_minimises_a_quadratic():
    rng = np.random.default_rng(8)
    p = [[rng.standard_normal(4)]]
    opt = Adam(p, learning_rate=0.05)
    for _ in range(500):
        opt.step([[2 * (p[0][0] - 3.0)]])
    np.testing.assert_allclose(p[0][0], 3.0, atol=1e-2)


def test_importance_sampling_is_exact_for_a_linear_gaussian_posterior():
    # a decoder that ignores z makes p(x) = p(x | z) exactly; the estimate then equals
    # log p(x|z) + log E_q[p(z)/q(z)] = log p(x|z) up to Monte Carlo error, and is
    # close to it for a proposal near the prior
    rng = np.random.default_rng(9)
    model = av.Model("vae", 2, rng)
    for layer in model.encoder:
        layer[0][:] = 0.0
        layer[1][:] = 0.0  # q(z | x) = N(0, I) = p(z)
    model.decoder[0][0][:] = 0.0
    X = _binary(rng, (4, av.N_PIXELS))
    ll, sd = av.test_loglik(model, X, n_importance=4000, n_fit=4000, random_state=0)
    ref = av.decoder_pass(model.decoder, np.zeros((4, 1, 2)), X)[0][:, 0]
    np.testing.assert_allclose(ll, ref, atol=0.02)
    assert abs(sd - 1.0) < 0.05


def test_imputation_keeps_the_upper_half_and_scores():
    rng = np.random.default_rng(10)
    data = av.load_data()
    model = av.Model("svgd", 4, rng)
    X = data["test"][:5]
    imp = av.impute(model, X, n_chains=3, n_gibbs=2, random_state=0)
    assert imp.shape == (5, 3, 64)
    np.testing.assert_array_equal(imp[:, :, :32], np.repeat(X[:, None, :32], 3, axis=1))
    assert np.all((imp[:, :, 32:] > 0) & (imp[:, :, 32:] < 1))
    # the training images themselves are labelled correctly with zero entropy
    train = data["train"][:30]
    ent, acc = av.imputation_scores(np.repeat(train[:, None], 4, axis=1),
                                    data["train_labels"][:30], train, data["train_labels"][:30])
    assert ent == 0.0 and acc == 1.0
    # two chains per image with different labels: entropy log 2
    pair = np.stack([train[:10], train[10:20]], axis=1)
    labels = data["train_labels"]
    ent, acc = av.imputation_scores(pair, labels[:10], train, labels[:30])
    differ = labels[:10] != labels[10:20]
    np.testing.assert_allclose(ent, np.log(2) * differ.mean())
    np.testing.assert_allclose(acc, (1 + (~differ)) .mean() / 2)


def test_data_split_and_binarisation_are_fixed():
    a, b = av.load_data(), av.load_data()
    np.testing.assert_array_equal(a["test"], b["test"])
    assert a["train"].shape == (1500, 64) and a["test"].shape == (av.N_TEST, 64)
    assert set(np.unique(a["test"])) <= {0.0, 1.0}
    assert a["train"].min() >= 0 and a["train"].max() <= 1


def test_quick_run_rows_and_registration(tmp_path):
    assert EXPERIMENTS["vae-digits"] == "skstein.experiments.amortised_vae"
    rows = av.run(quick=True, n_jobs=1, verbose=0)
    assert len(rows) == 3 * 2 * 2
    assert {r["method"] for r in rows} == set(av.METHODS)
    assert {r["latent_dim"] for r in rows} == {8, 32}
    assert {r["seed"] for r in rows} == {0, 1}
    for r in rows:
        assert np.isfinite(r["test_loglik"]) and -64 * np.log(2) - 40 < r["test_loglik"] < 0
        assert r["seconds"] > 0
        assert np.isfinite(r["label_entropy"]) == (r["latent_dim"] == 32)
    # training for an epoch beats the untrained networks (about -44 nats: 64 log 2)
    assert max(r["test_loglik"] for r in rows) > -42
    path = av.plot(rows, str(tmp_path / "vae.png"))
    assert path is None or (tmp_path / "vae.png").exists()
    table = av.summary(rows)
    assert len(table) == 6 and all(t["n_seeds"] == 2 for t in table)


def test_same_seed_same_rows():
    kw = dict(quick=True, latent_dims=4, n_seeds=1, methods=("sliced-svgd",), verbose=0)
    a, b = av.run(**kw), av.run(**kw)
    assert a[0]["test_loglik"] == b[0]["test_loglik"]
    c = av.run(random_state=1, **kw)
    assert c[0]["test_loglik"] != a[0]["test_loglik"]


@pytest.mark.parametrize("kw, err, match", [
    (dict(latent_dims="8"), TypeError, "latent_dims"),
    (dict(latent_dims=(8, 2.5)), TypeError, "latent_dims"),
    (dict(latent_dims=(8, True)), TypeError, "latent_dims"),
    (dict(latent_dims=(0,)), ValueError, "latent_dims"),
    (dict(latent_dims=()), ValueError, "latent_dims"),
    (dict(latent_dims=(8, 8)), ValueError, "latent_dims"),
    (dict(n_seeds=0), ValueError, "n_seeds"),
    (dict(n_seeds=1.5), TypeError, "n_seeds"),
    (dict(n_seeds=2, n_trials=3), ValueError, "n_trials"),
    (dict(n_epochs=0), ValueError, "n_epochs"),
    (dict(methods=("vae", "gan")), ValueError, "methods"),
    (dict(quick="yes"), TypeError, "quick"),
])
def test_bad_input(kw, err, match):
    with pytest.raises(err, match=match):
        av.run(**kw)
    if "latent_dims" not in kw and "quick" not in kw:
        with pytest.raises(err, match=match):
            av.run_imputation(**kw)


def test_run_imputation_rows():
    rows = av.run_imputation(quick=True, n_seeds=1, methods=("vae",), verbose=0)
    assert len(rows) == 1
    r = rows[0]
    assert set(r) == {"method", "seed", "label_entropy", "accuracy", "test_loglik", "seconds"}
    assert 0 <= r["label_entropy"] <= np.log(4) and 0 <= r["accuracy"] <= 1
