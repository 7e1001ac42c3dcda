"""
Bayesian neural-network regression with predictive intervals
============================================================

:class:`skstein.BNNRegressor` fits the one-hidden-layer network of Liu & Wang
(2016), the model of Gong et al. (2021, Table 5): its posterior over weights, noise
precision and weight precision is a set of particles moved by sliced SVGD (the
default) or SVGD. It is a scikit-learn regressor, so it goes into a ``Pipeline``;
``predict(X, return_std=True)`` gives the mean and standard deviation of the
particle mixture's predictive distribution. We fit both samplers to noisy data
with a gap and compare their intervals, test log-likelihoods and particle spread.
The UCI benchmark of the paper is ``skstein reproduce bnn-uci``.
"""

# %%
# Data: a sine with a gap
# -----------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skstein import BNNRegressor
from skstein.distributions.bnn import particle_sum_distance

rng = np.random.default_rng(0)
x = np.concatenate([rng.uniform(-3, -0.7, 80), rng.uniform(0.7, 3, 80)])
y = np.sin(1.5 * x) + 0.15 * rng.standard_normal(x.size)
x_test = rng.uniform(-3, 3, 200)
y_test = np.sin(1.5 * x_test) + 0.15 * rng.standard_normal(x_test.size)
grid = np.linspace(-4, 4, 300)[:, None]

# %%
# Fit both samplers in a pipeline
# -------------------------------
# The regressor standardises inputs and target itself; the scaler stands for any
# preprocessing. Every setting but the sampler is shared: 50 hidden units, 20
# particles, batches of 100 rows, 250 epochs.
fits = {}
for name, sampler in [("S-SVGD", "sliced-svgd"), ("SVGD", "svgd")]:
    model = make_pipeline(StandardScaler(), BNNRegressor(
        sampler=sampler, n_particles=20, n_epochs=250, step_size=1e-2, random_state=0))
    model.fit(x[:, None], y)
    reg = model[-1]
    fits[name] = model
    mean, std = model.predict(x_test[:, None], return_std=True)
    covered = np.mean(np.abs(y_test - mean) <= 2 * std)
    draws = reg.sample_y(model[0].transform(x_test[:, None]), n_samples=500, random_state=0)
    inside = np.mean((draws - mean[:, None]) ** 2 <= 4 * std[:, None] ** 2)
    print(f"{name:7s} test R^2 {model.score(x_test[:, None], y_test):.3f}   "
          f"test log-likelihood "
          f"{reg.log_predictive(model[0].transform(x_test[:, None]), y_test):.3f}   "
          f"test points within 2 sd {covered:.2f} (predictive draws {inside:.2f})   "
          f"particle-sum distance {particle_sum_distance(reg.particles_):.0f}")

# %%
# Predictive intervals
# --------------------
fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
for ax, (name, model) in zip(axes, fits.items()):
    mean, std = model.predict(grid, return_std=True)
    ax.fill_between(grid[:, 0], mean - 2 * std, mean + 2 * std, color="C1", alpha=0.3,
                    label="mean ± 2 sd")
    reg = model[-1]
    networks = reg.posterior_.predict(reg.particles_[:6], model[0].transform(grid))
    ax.plot(grid[:, 0], networks.T * reg.y_scale_ + reg.y_mean_, color="grey", lw=0.6)
    ax.plot(grid[:, 0], mean, color="C1", label="predictive mean")
    ax.scatter(x, y, s=6, color="k", label="training data")
    ax.axvspan(-0.7, 0.7, color="C0", alpha=0.08)
    ax.set_title(name)
    ax.set_xlabel("x")
axes[0].set_ylabel("y")
axes[0].legend(fontsize="small", loc="lower left")
fig.tight_layout()
plt.show()

# %%
# Interpretation
# --------------
# Both samplers fit the sine where there are data. Their bands are conservative:
# 99% of the test points fall within two predictive standard deviations (95% of the
# model's own draws from ``sample_y`` do, as they should), because after this short
# run the particles' noise precisions, set on the development set, still see more
# than the true noise (0.15). The grey lines are six of the particles' networks,
# without noise: SVGD's lie on top of each other, its particles having collapsed
# to nearly one network, while sliced SVGD's disagree, most beyond the data and
# across the gap (shaded), where the band widens with them. This is the paper's
# point: with 20 particles in 153 dimensions SVGD's one kernel on all coordinates
# lets the repulsion fade, and the 1-D kernels of sliced SVGD keep the particles
# apart (the larger particle-sum distance printed above). ``skstein reproduce
# bnn-uci`` runs the paper's benchmark on UCI data.
