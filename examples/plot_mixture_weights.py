"""
Wrong weights of separated modes: the perturbed KSD test
========================================================

A model with two well-separated modes, N(0, 1) and N(4, 0.25) with weights 0.7 /
0.3, is tested on data from the same components with weights 0.55 / 0.45. Inside
each mode the model's score hardly depends on the weights, so the KSD test, which
sees the model only through its score, barely notices. ``PerturbedKSDTest`` moves
every point by Metropolis-Hastings jumps between the model's modes, which leave the
model invariant, and tests the sample and its moved copy together: jumps from an
over-weighted mode land off the centre of the other one, where the score sees them.
It needs the model's log density up to a constant, which an unnormalised model has.
"""

# %%
# Data and model
# --------------
import numpy as np

from skstein import KSDTest, PerturbedKSDTest
from skstein.distributions import GaussianMixture
from skstein.gof._perturbed import find_modes, jump_chain

means, covariances = [[0.0], [4.0]], [[[1.0]], [[0.25]]]
model = GaussianMixture([0.7, 0.3], means, covariances)
data = GaussianMixture([0.55, 0.45], means, covariances)
X = data.rvs(2000, random_state=0)

# %%
# Both tests
# ----------
# The perturbed test learns the modes and the jump scale on half of the sample and
# tests the other half; the KSD test uses all of it.
ksd = KSDTest(model, random_state=0).test(X)
perturbed = PerturbedKSDTest(model, random_state=0).test(X)
print(f"KSD test:           p = {ksd.pvalue:.3f}, reject: {ksd.reject}")
print(f"perturbed KSD test: p = {perturbed.pvalue:.3f}, reject: {perturbed.reject}")
print(perturbed.method)

# %%
# The same split by hand, and what the jumps do
# ---------------------------------------------
# ``fit`` learns the modes (``modes_``, with the local covariances) and the jump scale
# (``jump_scale_``) on one half; the fitted test perturbs and tests the other half.
# Under the model the moved points follow the model; here the jumps from the
# over-weighted mode on the right land left of the centre of N(0, 1).
fitted = PerturbedKSDTest(model, random_state=0).fit(X[:1000])
print("modes:", fitted.modes_.ravel().round(3), "variances:",
      fitted.mode_covariances_.ravel().round(3), "jump scale:", fitted.jump_scale_)
held_out = fitted.test(X[1000:])
print(f"fitted on one half, tested on the other: p = {held_out.pvalue:.3f}")
modes = find_modes(model, X[:1000], random_state=0)
moved, acceptance = jump_chain(model, X[1000:], modes, fitted.jump_scale_, 10,
                               random_state=1)
print(f"acceptance {acceptance:.2f}; share right of 2: data {np.mean(X[1000:] > 2):.3f}, "
      f"moved {np.mean(moved > 2):.3f}, model {0.7 * 0.0228 + 0.3:.3f}")

import matplotlib.pyplot as plt  # noqa: E402

grid = np.linspace(-4, 6, 400)[:, None]
fig, ax = plt.subplots(figsize=(6.4, 3.4))
bins = np.linspace(-4, 6, 80)
ax.hist(X[1000:, 0], bins=bins, density=True, alpha=0.45,
        label="data (weights 0.55 / 0.45)")
ax.hist(moved[:, 0], bins=bins, density=True, alpha=0.45, label="after the jumps")
ax.plot(grid[:, 0], np.exp(model.logpdf(grid)), "k", lw=1.2, label="model (0.7 / 0.3)")
ax.set_xlabel("x")
ax.set_ylabel("density")
ax.legend(fontsize="small")
ax.set_title("jumps between the model's modes", fontsize="small")
fig.tight_layout()
plt.show()
