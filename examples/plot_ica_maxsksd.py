r"""
Training an ICA model by maxSKSD
================================

A Stein discrepancy needs only the model's score, not its normalising constant, so
it can serve as a training loss. The ICA model :math:`x = W z` with independent
Student-t sources (:class:`skstein.distributions.ICA`, parameterised by the
unmixing matrix :math:`B = W^{-1}`) has the score :math:`B^\top \psi(Bx)`, which
does not involve :math:`\log|\det B|`. This example trains it on minibatches by
:class:`skstein.learning.MaxSKSDLoss` (the directions are learned alongside the
model), by :class:`skstein.learning.KSDLoss`, and by maximum likelihood for
reference, with the same Adam steps, and follows the held-out log-likelihood.
"""

# %%
# Problem
# -------
# The protocol of the ``ica`` reproduction at a small size: the true and the initial
# unmixing matrices are drawn by ``ICA.random``; training runs where the data are
# white, as in the :doc:`user guide on learning </user_guide/learning>`.
import matplotlib.pyplot as plt
import numpy as np

from skstein.distributions import ICA
from skstein.kernels import whitening
from skstein.learning import KSDLoss, MaxSKSDLoss

dim = 8
truth = ICA.random(dim, random_state=0)
X_train = truth.rvs(2000, random_state=1)
X_test = truth.rvs(2000, random_state=2)
B0 = ICA.random(dim, scale=dim**-0.5, random_state=3).unmixing
A = whitening(X_train)[0]
Y_train = X_train @ A
print(f"test log-likelihood per point: true model {truth.logpdf(X_test).mean():.3f}, "
      f"initial model {ICA(B0).logpdf(X_test).mean():.3f}")

# %%
# Training
# --------
# 600 steps on minibatches of 100, Adam with learning rate 0.01; every 20 steps the
# model, mapped back to the data's coordinates, is scored on the test points.
n_steps, batch_size, lr, betas = 600, 100, 1e-2, (0.9, 0.99)


def train(loss, seed=4):
    rng = np.random.default_rng(seed)  # the same batches for every method
    model = ICA(np.linalg.solve(A, B0.T).T)  # the initial model, in white coordinates
    m, v = np.zeros((dim, dim)), np.zeros((dim, dim))
    curve = []
    for step in range(1, n_steps + 1):
        batch = Y_train[rng.choice(len(Y_train), batch_size, replace=False)]
        if loss is None:
            grad = -model.grad_loglik(batch)
        else:
            _, grad = loss.model_value_and_grad(model, batch)
        m = betas[0] * m + (1 - betas[0]) * grad
        v = betas[1] * v + (1 - betas[1]) * grad**2
        m_hat, v_hat = m / (1 - betas[0] ** step), v / (1 - betas[1] ** step)
        model.unmixing = model.unmixing - lr * m_hat / (np.sqrt(v_hat) + 1e-8)
        if step % 20 == 0:
            curve.append(ICA(model.unmixing @ A.T).logpdf(X_test).mean())
    return np.array(curve)


losses = {
    "maxSKSD": MaxSKSDLoss(statistic="v", learning_rate=lr, betas=betas),
    "KSD": KSDLoss(),
    "maximum likelihood": None,
}
curves = {name: train(loss) for name, loss in losses.items()}
for name, curve in curves.items():
    print(f"{name:18s} final test log-likelihood per point {curve[-1]:.3f}")

# %%
# Plot
# ----
steps = np.arange(20, n_steps + 1, 20)
fig, ax = plt.subplots(figsize=(6, 3.8))
for name, curve in curves.items():
    ax.plot(steps, curve, label=name)
ax.axhline(truth.logpdf(X_test).mean(), color="grey", ls="--", lw=0.8, label="true model")
ax.set_ylim(truth.logpdf(X_test).mean() - 3, truth.logpdf(X_test).mean() + 0.5)
ax.set_xlabel("training step")
ax.set_ylabel("test log-likelihood per point")
ax.legend(fontsize="small")
fig.tight_layout()
plt.show()

# %%
# Interpretation
# --------------
# Trained through the score alone, both Stein losses move the model from its random
# start (far below the plotted range) to within about 0.3 nat per point, or 0.04
# per dimension, of the maximum-likelihood fit, which uses the log-determinant that
# they never see. maxSKSD starts more slowly: its directions begin at the axes and
# are learned while the model moves. In 8 dimensions the KSD does as well; its
# single kernel on the whole space is what fails as the dimension grows. The
# ``ica`` reproduction (``skstein reproduce ica``) trains up to 200 dimensions and
# 15000 steps, where the KSD falls behind from about 80 dimensions while maxSKSD
# stays close to maximum likelihood.
