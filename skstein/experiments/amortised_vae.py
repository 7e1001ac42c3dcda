r"""``vae-digits``: a VAE whose implicit encoder is trained by amortised (sliced) SVGD.

Gong et al. (2021), section 4.2.2, Tables 2 and 3, on the binarised scikit-learn
``digits`` images (8 x 8 pixels scaled to [0, 1]; MNIST does not install offline).

**Data.** The 1797 images are split once (a fixed permutation, not a seed of the
run) into 1500 training and 297 test images. The test images are binarised once
(fixed Bernoulli draws); training batches are binarised afresh at every step
(dynamic binarisation).

**Networks** (NumPy, hand-derived gradients in :mod:`skstein.experiments._mlp`;
ReLU hidden layers; sizes scaled from the paper's MNIST networks to 64 pixels):

* decoder :math:`p(x \mid z)`: ``D -> 100 -> 100 -> 64`` Bernoulli logits, prior
  :math:`p(z) = N(0, I_D)`;
* implicit encoder (SVGD, S-SVGD): image and noise in, latent sample out,
  ``64 + D -> 100 -> 100 -> D`` with noise :math:`\xi \sim N(0, I_D)`;
* Gaussian encoder (vanilla VAE): ``64 -> 100 -> 100 -> 2D`` (mean, log-variance).

Adam with learning rate 1e-3 on encoder and decoder together, batches of 100
images, 50 latent samples per image.

**Methods** (``method`` in the rows):

* ``"vae"``: the ELBO with the reparameterisation trick, averaged over the 50
  samples, the Gaussian KL term in closed form;
* ``"svgd"`` and ``"sliced-svgd"``: Algorithm 3 of the paper. For each image the
  encoder draws 50 samples :math:`z`; one step of :meth:`skstein.SVGD.direction`
  (or :meth:`skstein.SlicedSVGD.direction`) with step size 0.1 moves them towards
  the image's posterior :math:`p(z \mid x) \propto p(z) p(x \mid z)` (its score
  from the decoder, all images of the batch in one batched call); the encoder
  regresses onto the moved samples, loss :math:`\frac12 \lVert z - \mathrm{sg}(z +
  0.1\,\phi(z)) \rVert^2` averaged over samples (its gradient in :math:`z` is
  :math:`-0.1\,\phi(z)`); the decoder maximises :math:`\log p(x \mid z)` averaged
  over the encoder's samples, as in a VAE. Median bandwidths (the estimators'
  defaults: SVGD ``"median-log"``, the rule of the original SVGD code; S-SVGD
  ``"median"`` on each projection); S-SVGD along the axes (``slices="axes"``),
  directions ``G`` shared by all images and updated once (one Adam step of
  maxSKSD-g ascent) per encoder update.

**Test log-likelihood** by importance sampling per test image: the proposal is the
diagonal Gaussian fitted to 100 encoder samples for that image (standard
deviations floored at 1e-3), with 1000 importance samples,
:math:`\log p(x) \approx \log \frac1K \sum_k p(x, z_k) / q(z_k)` (a stochastic
lower bound); the same procedure for every method. ``encoder_sd`` is the mean
standard deviation of those encoder samples (collapsed encoders have small ones).

**Imputation** (Table 3; rows with ``latent_dim`` 32): the lower half of each test
image (its last 32 pixels) is removed and filled by the approximate Gibbs sampler
of Rezende et al. (2014): starting from random pixels, alternately draw
:math:`z` from the encoder given the current image and the missing pixels from the
decoder given :math:`z` (50 sweeps; the last sweep keeps the decoder's
probabilities). 20 chains per test image; each imputed image is labelled by its
nearest training image (Euclidean distance, grey levels). Reported: the label
entropy (nats; the entropy of the 20 chains' labels, averaged over test images:
how many digits the imputations explore) and the accuracy (the fraction of
imputations labelled as the true digit).

Settings: latent dimensions 8, 16, 32, 64; five seeds, paired across methods and
dimensions (seed ``k`` of every method and dimension is the ``k``-th child of
``random_state``); ``n_epochs`` passes over the training images (the full run's
number is in ``FULL``). ``seconds`` is the training time.
"""

import numbers
import time

import numpy as np
from scipy.special import logsumexp

from .._random import spawn_seeds
from .._threads import blas_threads
from .._validation import check_bool, check_positive_int
from ..svgd import SVGD, SlicedSVGD
from ._mlp import Adam, bernoulli_loglik, init_mlp, mlp_backward, mlp_forward, sigmoid
from ._output import pyplot, save_figure
from ._runner import run_settings

__all__ = ["run", "run_imputation", "plot", "summary", "run_trial", "load_data", "train",
           "test_loglik", "impute", "METHODS", "LATENT_DIMS", "IMPUTATION_DIM"]

METHODS = ("vae", "svgd", "sliced-svgd")
LATENT_DIMS = (8, 16, 32, 64)
#: the latent dimension of the imputation experiment (Table 3)
IMPUTATION_DIM = 32
HIDDEN = (100, 100)
N_PIXELS = 64
N_TEST = 297
#: fixed split and test binarisation (a constant of the data set, not a run seed)
DATA_SEED = 20140101
STEP_SIZE = 0.1
LEARNING_RATE = 1e-3
SD_FLOOR = 1e-3
FULL = dict(latent_dims=LATENT_DIMS, n_seeds=5, n_epochs=30, n_train=None, batch_size=100,
            n_samples=50, n_fit=100, n_importance=1000, n_test=N_TEST, n_chains=20,
            n_gibbs=50)
QUICK = dict(latent_dims=(8, IMPUTATION_DIM), n_seeds=2, n_epochs=2, n_train=400,
             batch_size=50, n_samples=10, n_fit=20, n_importance=50, n_test=60, n_chains=4,
             n_gibbs=5)


# --------------------------------------------------------------------------- data

def load_data():
    """The binarised digits: ``train`` (grey levels in [0, 1]), ``train_labels``,
    ``test`` (fixed binarisation), ``test_labels``."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    rng = np.random.default_rng(DATA_SEED)
    perm = rng.permutation(X.shape[0])
    test, tr = perm[:N_TEST], perm[N_TEST:]
    test_bin = (rng.random((N_TEST, X.shape[1])) < X[test]).astype(float)
    return dict(train=X[tr], train_labels=y[tr], test=test_bin, test_labels=y[test])


# --------------------------------------------------------------------------- model

class Model:
    """Encoder and decoder of one method; ``sample(X, n, rng)`` -> (batch, n, D)."""

    def __init__(self, method, latent_dim, rng, hidden=HIDDEN):
        self.method = method
        self.latent_dim = D = latent_dim
        hidden = tuple(hidden)
        if method == "vae":
            self.encoder = init_mlp((N_PIXELS,) + hidden + (2 * D,), rng)
        else:
            self.encoder = init_mlp((N_PIXELS + D,) + hidden + (D,), rng)
        self.decoder = init_mlp((D,) + hidden + (N_PIXELS,), rng)

    def sample(self, X, n, rng):
        """``n`` encoder samples per row of ``X``."""
        D = self.latent_dim
        noise = rng.standard_normal((X.shape[0], n, D))
        if self.method == "vae":
            h, _ = mlp_forward(self.encoder, X)
            return h[:, None, :D] + np.exp(0.5 * h[:, None, D:]) * noise
        return encoder_forward(self.encoder, X, noise)[0].reshape(noise.shape)


def _with_noise(X, noise):
    """Rows ``[x_b, noise_bi]`` of the implicit encoder's input, (batch * n, P + D)."""
    B, n, _ = noise.shape
    return np.concatenate([np.repeat(X, n, axis=0), noise.reshape(B * n, -1)], axis=1)


def encoder_forward(encoder, X, noise):
    r"""The implicit encoder at the rows ``[x_b, noise_bi]``, without forming them.

    The first layer splits as :math:`[x_b, \xi_{bi}] W_1 = x_b W_x + \xi_{bi} W_\xi`:
    the image part once per image, added to the ``B n`` noise rows (the product with
    the repeated images would be a fifth of the forward pass at 64 pixels, latent 64).
    Returns ``(z, acts)`` as ``mlp_forward`` on
    :func:`_with_noise` (equal to rounding), ``z`` of shape (B * n, D), except that
    ``acts[0]`` is None (:func:`encoder_backward` takes ``X`` and ``noise`` instead).
    """
    B, n, D = noise.shape
    (W, b), P = encoder[0], X.shape[1]
    h = noise.reshape(B * n, D) @ W[P:]
    h3 = h.reshape(B, n, -1)
    h3 += (X @ W[:P] + b)[:, None, :]
    if len(encoder) > 1:
        np.maximum(h, 0.0, out=h)
    z, acts = mlp_forward(encoder[1:], h)
    return z, [None] + acts


def encoder_backward(encoder, X, noise, acts, grad_out):
    """Gradients of the encoder's parameters for ``d loss / d z = grad_out`` (B * n, D),
    from the activations of :func:`encoder_forward`; as
    ``mlp_backward`` on :func:`_with_noise`."""
    B, n, D = noise.shape
    if len(encoder) == 1:
        g = grad_out
        grads = []
    else:
        grads, g = mlp_backward(encoder[1:], acts[1:], grad_out, inputs=True)
        g *= acts[1] > 0
    dW = np.concatenate([X.T @ g.reshape(B, n, -1).sum(axis=1),
                         noise.reshape(B * n, D).T @ g])
    return [[dW, g.sum(axis=0)]] + grads


def decoder_pass(decoder, Z, X):
    r"""Log-likelihoods and their gradients at the latent samples ``Z`` of images ``X``.

    Returns ``(loglik, grad_z, grads)``: ``loglik[b, i] = log p(x_b | z_bi)``,
    ``grad_z`` its gradient in ``z_bi`` (shape of ``Z``), and ``grads`` the gradient of
    the mean of ``loglik`` over all samples in the decoder's parameters.
    """
    B, n, D = Z.shape
    logits, acts = mlp_forward(decoder, Z.reshape(B * n, D))
    Xr = np.repeat(X, n, axis=0)
    loglik, g = bernoulli_loglik(logits, Xr, grad=True)
    loglik = loglik.reshape(B, n)
    g /= B * n
    grads, gz = mlp_backward(decoder, acts, g, inputs=True)
    return loglik, gz.reshape(B, n, D) * (B * n), grads


def log_joint(decoder, Z, X):
    r""":math:`\log p(z) + \log p(x \mid z)` at ``Z`` (batch, n, D) for images ``X``."""
    logits, _ = mlp_forward(decoder, Z.reshape(-1, Z.shape[-1]))
    n = Z.shape[1]
    loglik = bernoulli_loglik(logits, np.repeat(X, n, axis=0)).reshape(Z.shape[:2])
    return loglik - 0.5 * (Z * Z).sum(-1) - 0.5 * Z.shape[-1] * np.log(2 * np.pi)


def posterior_score(decoder, X):
    r"""The score of each image's posterior, :math:`\nabla_z \log p(z) p(x_b \mid z)`, as a
    callable on particles of shape (batch, n, D)."""
    def score(Z):
        return decoder_pass(decoder, Z, X)[1] - Z
    return score


def vae_loss(encoder, decoder, X, noise):
    r"""The negative ELBO of the Gaussian encoder and its gradients.

    :math:`\ell = -\frac{1}{Bn}\sum_{b,i} \log p(x_b \mid \mu_b + \sigma_b \xi_{bi}) +
    \frac1B \sum_b \mathrm{KL}(N(\mu_b, \sigma_b^2) \| N(0, I))` with ``noise`` =
    :math:`\xi` of shape (B, n, D). Returns ``(loss, encoder_grads, decoder_grads)``.
    """
    B, n, D = noise.shape
    h, acts = mlp_forward(encoder, X)
    mu, lv = h[:, :D], h[:, D:]
    sd = np.exp(0.5 * lv)
    Z = mu[:, None] + sd[:, None] * noise
    loglik, gz, dgrads = decoder_pass(decoder, Z, X)
    kl = 0.5 * (mu * mu + sd * sd - lv - 1.0).sum(-1)
    loss = -loglik.mean() + kl.mean()
    dZ = -gz / (B * n)
    dmu = dZ.sum(1) + mu / B
    dlv = 0.5 * sd * (dZ * noise).sum(1) + 0.5 * (sd * sd - 1.0) / B
    egrads, _ = mlp_backward(encoder, acts, np.concatenate([dmu, dlv], axis=1))
    return loss, egrads, [[-g for g in layer] for layer in dgrads]


def regression_loss(encoder, X, noise, target):
    r"""The amortisation loss :math:`\frac{1}{Bn}\sum \frac12\lVert f(x_b, \xi_{bi}) -
    t_{bi}\rVert^2` of the implicit encoder ``f`` and its gradients (``target`` fixed).

    Returns ``(loss, encoder_grads)``.
    """
    B, n, D = noise.shape
    z, acts = encoder_forward(encoder, X, noise)
    diff = z - target.reshape(B * n, D)
    grads = encoder_backward(encoder, X, noise, acts, diff / (B * n))
    return 0.5 * (diff * diff).sum() / (B * n), grads


def _sampler(method, seed):
    if method == "svgd":
        return SVGD(None)
    return SlicedSVGD(None, slices="axes", random_state=seed)


def train_step(model, optimizer, sampler, X, n_samples, rng):
    """One update of encoder and decoder on the binary images ``X``; returns the mean
    log-likelihood of the batch's samples."""
    B, D = X.shape[0], model.latent_dim
    noise = rng.standard_normal((B, n_samples, D))
    if model.method == "vae":
        loss, egrads, dgrads = vae_loss(model.encoder, model.decoder, X, noise)
        optimizer.step(egrads + dgrads)
        return -loss
    z, acts = encoder_forward(model.encoder, X, noise)
    Z = z.reshape(B, n_samples, D)
    seen = {}

    def score(Zc):
        # the decoder's pass at the samples gives both the posterior score and the
        # decoder's gradient (direction evaluates the score once, at a copy of Z)
        seen["pass"] = decoder_pass(model.decoder, Zc, X)
        return seen["pass"][1] - Zc

    phi = sampler.direction(Z, score)
    loglik, _, dgrads = seen["pass"]
    # d/dz of 1/(Bn) sum 1/2 |z - sg(z + eps phi)|^2 is -eps phi / (Bn)
    phi = phi.reshape(B * n_samples, D)
    phi *= -STEP_SIZE / (B * n_samples)
    egrads = encoder_backward(model.encoder, X, noise, acts, phi)
    optimizer.step(egrads + [[-g for g in layer] for layer in dgrads])
    return float(loglik.mean())


def train(method, latent_dim, X_train, *, n_epochs, batch_size=100, n_samples=50,
          random_state=None):
    """Train ``method`` on the grey images ``X_train`` (binarised per batch); a :class:`Model`."""
    rng = np.random.default_rng(random_state)
    model = Model(method, latent_dim, rng)
    optimizer = Adam(model.encoder + model.decoder, learning_rate=LEARNING_RATE)
    sampler = None if method == "vae" else _sampler(method, rng.integers(2**32))
    n = X_train.shape[0]
    for _ in range(n_epochs):
        perm = rng.permutation(n)
        for start in range(0, n - batch_size + 1, batch_size):
            grey = X_train[perm[start:start + batch_size]]
            X = (rng.random(grey.shape) < grey).astype(float)
            train_step(model, optimizer, sampler, X, n_samples, rng)
    return model


# --------------------------------------------------------------------------- evaluation

def test_loglik(model, X, *, n_importance=1000, n_fit=100, random_state=None, chunk=20):
    """Importance-sampling estimates of log p(x) for the binary images ``X``.

    Returns ``(loglik, encoder_sd)``: the per-image estimates and the mean standard
    deviation of the encoder samples that fitted the proposals.
    """
    rng = np.random.default_rng(random_state)
    D = model.latent_dim
    out, sds = [], []
    for start in range(0, X.shape[0], chunk):
        Xc = X[start:start + chunk]
        Zs = model.sample(Xc, n_fit, rng)
        mean = Zs.mean(axis=1, keepdims=True)
        sd = np.maximum(Zs.std(axis=1, ddof=1, keepdims=True), SD_FLOOR)
        eps = rng.standard_normal((Xc.shape[0], n_importance, D))
        Z = mean + sd * eps
        log_q = -0.5 * (eps * eps).sum(-1) - np.log(sd).sum(-1) - 0.5 * D * np.log(2 * np.pi)
        log_w = log_joint(model.decoder, Z, Xc) - log_q
        out.append(logsumexp(log_w, axis=1) - np.log(n_importance))
        sds.append(sd.mean(axis=(1, 2)))
    return np.concatenate(out), float(np.concatenate(sds).mean())


def impute(model, X, *, n_chains=20, n_gibbs=50, random_state=None):
    """Fill the lower half of the binary images ``X`` by approximate Gibbs sampling.

    Returns the imputed images, (n_images, n_chains, 64): the upper half as given,
    the lower half the decoder's probabilities after the last sweep.
    """
    rng = np.random.default_rng(random_state)
    miss = np.arange(N_PIXELS // 2, N_PIXELS)
    x = np.repeat(X, n_chains, axis=0).astype(float)
    x[:, miss] = rng.random((x.shape[0], miss.size)) < 0.5
    for sweep in range(n_gibbs):
        z = model.sample(x, 1, rng)[:, 0]
        prob = sigmoid(mlp_forward(model.decoder, z)[0][:, miss])
        x[:, miss] = prob if sweep == n_gibbs - 1 else rng.random(prob.shape) < prob
    return x.reshape(X.shape[0], n_chains, N_PIXELS)


def imputation_scores(imputed, labels, train, train_labels):
    """``(label_entropy, accuracy)`` of imputations labelled by their nearest training image."""
    n_img, n_chains, P = imputed.shape
    flat = imputed.reshape(-1, P)
    d2 = (flat * flat).sum(1)[:, None] - 2 * flat @ train.T + (train * train).sum(1)[None, :]
    pred = train_labels[np.argmin(d2, axis=1)].reshape(n_img, n_chains)
    counts = np.stack([(pred == c).sum(1) for c in range(10)], axis=1) / n_chains
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = -np.where(counts > 0, counts * np.log(counts), 0.0).sum(1)
    return float(ent.mean()), float((pred == labels[:, None]).mean())


# --------------------------------------------------------------------------- experiment

def run_trial(_setting_seed, method, latent_dim, seed_index, seed, cfg):
    """Train ``method`` at ``latent_dim`` from ``seed`` and evaluate it; one row.

    The first argument (the seed :func:`run_settings` spawns per setting) is not used:
    ``seed`` is shared by all methods and dimensions of seed index ``seed_index``.
    """
    # one BLAS thread: the matrices are small and BLAS threads that wait for each other
    # on a busy machine made a step up to 10 times slower (measured)
    with blas_threads(1):
        return _trial(method, latent_dim, seed_index, seed, cfg)


def _trial(method, latent_dim, seed_index, seed, cfg):
    train_seed, eval_seed, impute_seed = np.random.SeedSequence(seed).spawn(3)
    data = load_data()
    t0 = time.perf_counter()
    model = train(method, latent_dim, data["train"][:cfg.get("n_train")],
                  n_epochs=cfg["n_epochs"], batch_size=cfg["batch_size"],
                  n_samples=cfg["n_samples"], random_state=train_seed)
    seconds = time.perf_counter() - t0
    test = data["test"][:cfg["n_test"]]
    ll, sd = test_loglik(model, test, n_importance=cfg["n_importance"], n_fit=cfg["n_fit"],
                         random_state=eval_seed)
    row = {"method": method, "latent_dim": latent_dim, "seed": seed_index,
           "test_loglik": float(ll.mean()), "seconds": seconds, "n_epochs": cfg["n_epochs"],
           "encoder_sd": sd, "label_entropy": float("nan"), "accuracy": float("nan")}
    if latent_dim == IMPUTATION_DIM:
        imputed = impute(model, test, n_chains=cfg["n_chains"], n_gibbs=cfg["n_gibbs"],
                         random_state=impute_seed)
        row["label_entropy"], row["accuracy"] = imputation_scores(
            imputed, data["test_labels"][:cfg["n_test"]], data["train"],
            data["train_labels"])
    return row


def _check_latent_dims(latent_dims):
    if latent_dims is None:
        return None
    if isinstance(latent_dims, numbers.Integral) and not isinstance(latent_dims, bool):
        latent_dims = (latent_dims,)
    if isinstance(latent_dims, (str, bytes)) or not hasattr(latent_dims, "__iter__"):
        raise TypeError(f"latent_dims must be a positive integer or a sequence of them, "
                        f"got {latent_dims!r}.")
    dims = tuple(latent_dims)
    if not dims:
        raise ValueError("latent_dims must not be empty.")
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, numbers.Integral):
            raise TypeError(f"latent_dims must hold positive integers, got {d!r} "
                            f"({type(d).__name__}).")
        if d < 1:
            raise ValueError(f"latent_dims must hold positive integers, got {d!r}.")
    if len(set(dims)) != len(dims):
        raise ValueError(f"latent_dims has repeated entries: {dims!r}.")
    return tuple(int(d) for d in dims)


def _check_methods(methods):
    if isinstance(methods, str):
        methods = (methods,)
    methods = tuple(methods)
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"methods must be among {METHODS}, got {methods!r}.")
    return methods


def run(quick=False, latent_dims=None, n_seeds=None, random_state=0, n_jobs=None, *,
        n_trials=None, n_epochs=None, methods=METHODS, verbose="auto"):
    """Train and evaluate each method at each latent dimension for each seed.

    Parameters
    ----------
    quick : bool, default=False
        The CI-sized run (``QUICK``: two dimensions, two seeds, two epochs on 400
        training images in batches of 50, 10 latent samples, 60 test images, fewer
        importance samples and imputation chains).
    latent_dims : int or sequence of int, default=None
        ``None``: (8, 16, 32, 64) (quick: (8, 32)). Rows at 32 include the imputation.
    n_seeds : int, default=None
        Seeds per method and dimension (``None``: 5, quick 2).
    random_state : int, default=0
        Root of the seeds.
    n_jobs : int, default=None
        joblib workers over the (method, dimension, seed) runs.
    n_trials : int, default=None
        Another name of ``n_seeds`` (``skstein reproduce --trials``).
    n_epochs : int, default=None
        Passes over the training images (``None``: the configuration's).
    methods : sequence of str, default=("vae", "svgd", "sliced-svgd")
    verbose : int, bool or "auto", default="auto"
        Progress bars, as in :func:`skstein.experiments.run_trials`.

    Returns
    -------
    rows : list of dict
        ``method``, ``latent_dim``, ``seed`` (index), ``test_loglik`` (mean over test
        images, nats), ``seconds`` (training), ``n_epochs``, ``encoder_sd``,
        ``label_entropy`` and ``accuracy`` (imputation; NaN except at latent dim 32).
    """
    quick = check_bool(quick, "quick")
    cfg = dict(QUICK if quick else FULL)
    dims = _check_latent_dims(latent_dims)
    if dims is not None:
        cfg["latent_dims"] = dims
    if n_seeds is not None and n_trials is not None and n_seeds != n_trials:
        raise ValueError(f"n_seeds ({n_seeds!r}) and n_trials ({n_trials!r}) name the same "
                         "number; give one.")
    n_seeds = n_seeds if n_seeds is not None else n_trials
    if n_seeds is not None:
        cfg["n_seeds"] = check_positive_int(n_seeds, "n_seeds")
    if n_epochs is not None:
        cfg["n_epochs"] = check_positive_int(n_epochs, "n_epochs")
    methods = _check_methods(methods)
    seeds = spawn_seeds(random_state, cfg["n_seeds"])
    settings = [(method, dim, k, seeds[k], cfg) for dim in cfg["latent_dims"]
                for method in methods for k in range(cfg["n_seeds"])]
    return run_settings(run_trial, settings, random_state=random_state, n_jobs=n_jobs,
                        verbose=verbose, desc="vae-digits")


def run_imputation(quick=False, n_seeds=None, random_state=0, n_jobs=None, **kwargs):
    """The imputation experiment alone (latent dimension 32): rows ``method``, ``seed``,
    ``label_entropy``, ``accuracy``, ``test_loglik``, ``seconds``. ``kwargs`` go to :func:`run`."""
    rows = run(quick=quick, latent_dims=(IMPUTATION_DIM,), n_seeds=n_seeds,
               random_state=random_state, n_jobs=n_jobs, **kwargs)
    keys = ("method", "seed", "label_entropy", "accuracy", "test_loglik", "seconds")
    return [{k: r[k] for k in keys} for r in rows]


def _mean_se(values):
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan")
    se = float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else float("nan")
    return float(v.mean()), se


def summary(rows):
    """Mean and standard error over seeds per (method, latent dim): one dict each."""
    out = []
    keys = sorted({(r["latent_dim"], METHODS.index(r["method"])) for r in rows})
    for dim, m in keys:
        sub = [r for r in rows if r["latent_dim"] == dim and r["method"] == METHODS[m]]
        row = {"method": METHODS[m], "latent_dim": dim, "n_seeds": len(sub)}
        for name in ("test_loglik", "label_entropy", "accuracy", "encoder_sd", "seconds"):
            row[name], row[name + "_se"] = _mean_se([r[name] for r in sub])
        out.append(row)
    return out


def plot(rows, path):
    """Test log-likelihood against latent dimension (mean +- SE over seeds); imputation
    label entropy and accuracy at latent dimension 32."""
    plt = pyplot()
    if plt is None:
        return None
    table = summary(rows)
    imp = [r for r in table if r["latent_dim"] == IMPUTATION_DIM
           and np.isfinite(r["label_entropy"])]
    ncols = 1 + (2 if imp else 0)
    fig, axes = plt.subplots(1, ncols, figsize=(4.0 * ncols, 3.6), squeeze=False)
    axes = axes[0]
    labels = {"vae": "VAE", "svgd": "amortised SVGD", "sliced-svgd": "amortised S-SVGD"}
    for k, method in enumerate(METHODS):
        sub = [r for r in table if r["method"] == method]
        if not sub:
            continue
        axes[0].errorbar([r["latent_dim"] for r in sub], [r["test_loglik"] for r in sub],
                         yerr=[np.nan_to_num(r["test_loglik_se"]) for r in sub], marker="o",
                         capsize=3, color=f"C{k}", label=labels[method])
    axes[0].set_xscale("log", base=2)
    axes[0].set_xlabel("latent dimension")
    axes[0].set_ylabel("test log-likelihood (nats)")
    axes[0].legend(fontsize="small")
    for ax, name in zip(axes[1:], ("label_entropy", "accuracy")):
        xs = np.arange(len(imp))
        ax.bar(xs, [r[name] for r in imp], yerr=[np.nan_to_num(r[name + "_se"]) for r in imp],
               color=[f"C{METHODS.index(r['method'])}" for r in imp], capsize=3)
        ax.set_xticks(xs, [labels[r["method"]].replace("amortised ", "") for r in imp])
        ax.set_title(f"imputation, D = {IMPUTATION_DIM}: "
                     + name.replace("_", " "), fontsize="small")
    return save_figure(fig, path)
