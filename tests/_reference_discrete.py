"""Slow, obviously-correct NumPy references for the discrete Stein operators and LDA."""

import itertools

import numpy as np
from scipy.special import gammaln


def embed(x, kernel_name, n_values):
    """The explicit embedding: concatenated one-hot codes, or bag-of-words counts."""
    if kernel_name.endswith("-bow"):
        return np.bincount(x, minlength=int(n_values[0])).astype(float)
    return np.concatenate([np.eye(int(L))[v] for v, L in zip(x, n_values)])


def kernel_value(x, y, kernel, n_values):
    """k(x, y) of a DiscreteKernel, from the explicit embeddings."""
    r = embed(x, kernel.name, n_values) - embed(y, kernel.name, n_values)
    return float(kernel.base.profile(r @ r)[0])


def shifted(x, j, s, n_values):
    y = np.array(x, copy=True)
    y[j] = (y[j] + s) % n_values[j]
    return y


def stein_pair(x, y, cx, cy, operator, kernel, n_values):
    """h_p(x, y) written from the operator's definition (DESIGN section 3.11).

    ``cx``, ``cy``: (1, D) difference scores or (2, D) Zanella-Barker weights.
    """
    def k(a, b):
        return kernel_value(a, b, kernel, n_values)

    total = 0.0
    for j in range(len(x)):
        if operator == "difference":
            # xi_j(x, .) = s_j(x) k(x, .) + k(x, .) - k(x - e_j, .)
            sx, sy = cx[0, j], cy[0, j]
            xm, ym = shifted(x, j, -1, n_values), shifted(y, j, -1, n_values)
            total += (sx * sy * k(x, y) + sx * (k(x, y) - k(x, ym)) + sy * (k(x, y) - k(xm, y))
                      + k(x, y) - k(xm, y) - k(x, ym) + k(xm, ym))
        else:
            for a, s in enumerate((1, -1)):
                for b, t in enumerate((1, -1)):
                    xs, yt = shifted(x, j, s, n_values), shifted(y, j, t, n_values)
                    total += cx[a, j] * cy[b, j] * (k(xs, yt) - k(xs, y) - k(x, yt) + k(x, y))
    return total


def stein_matrix_loop(X, C, operator, kernel, n_values):
    n = X.shape[0]
    return np.array([[stein_pair(X[i], X[m], C[:, i], C[:, m], operator, kernel, n_values)
                      for m in range(n)] for i in range(n)])


class TableModel:
    """A discrete model given by its full log-probability table over {0..L-1}^D."""

    def __init__(self, logp):
        self.logp = np.asarray(logp, dtype=float)
        self.dim = self.logp.ndim
        self.n_values = self.logp.shape[0]

    def log_ratio(self, X, shift):
        X = np.asarray(X)
        out = np.empty(X.shape)
        base = self.logp[tuple(X.T)]
        for j in range(self.dim):
            Xs = X.copy()
            Xs[:, j] = (Xs[:, j] + shift) % self.n_values
            with np.errstate(invalid="ignore"):
                out[:, j] = self.logp[tuple(Xs.T)] - base
        return out


def all_states(L, D):
    return np.array(list(itertools.product(range(L), repeat=D)), dtype=np.int64)


def lda_logpmf(x, beta, alpha):
    """Exact log p(x) of a short LDA document by summing over all topic assignments."""
    K = beta.shape[0]
    D = len(x)
    terms = []
    for z in itertools.product(range(K), repeat=D):
        z = np.array(z)
        nk = np.bincount(z, minlength=K)
        lz = (gammaln(alpha.sum()) - gammaln(alpha.sum() + D)
              + np.sum(gammaln(alpha + nk) - gammaln(alpha)))
        terms.append(lz + np.sum(np.log(beta[z, x])))
    return np.logaddexp.reduce(terms)


def lda_task_loop(x, beta, alpha, site, shift, U, n_burn, states=False):
    """One collapsed-Gibbs chain of skstein._numba.lda, written with plain loops.

    ``states``: average the ratio at the sampled topic instead of its conditional
    expectation.
    """
    K, V = beta.shape
    D = len(x)
    U = np.asarray(U, dtype=np.float64)
    z = [min(int(U[0, j] * K), K - 1) for j in range(D)]
    cnt = [float(sum(1 for zz in z if zz == k)) for k in range(K)]
    acc = [0.0] * D
    for sw in range(U.shape[0] - 1):
        for j in range(D):
            w = x[j]
            cnt[z[j]] -= 1.0
            if j == site:
                w2 = (w + shift) % V
                p = [(cnt[k] + alpha[k]) * beta[k, w] + (cnt[k] + alpha[k]) * beta[k, w2]
                     for k in range(K)]
                num = sum((cnt[k] + alpha[k]) * beta[k, w2] for k in range(K))
                if sw >= n_burn and not states:
                    acc[j] += num / sum(p)
            else:
                p = [(cnt[k] + alpha[k]) * beta[k, w] for k in range(K)]
                if sw >= n_burn and site < 0 and not states:
                    num = sum((cnt[k] + alpha[k]) * beta[k, (w + 1) % V] for k in range(K))
                    acc[j] += num / sum(p)
            tot = 0.0
            for pk in p:
                tot += pk
            u = U[1 + sw, j] * tot
            c = 0.0
            new = max(k for k in range(K) if p[k] > 0)  # if u reaches the rounded total
            for k in range(K):
                c += p[k]
                if u < c:
                    new = k
                    break
            z[j] = new
            cnt[new] += 1.0
            if sw >= n_burn and states:
                if j == site:
                    w2 = (w + shift) % V
                    acc[j] += beta[new, w2] / (beta[new, w] + beta[new, w2])
                elif site < 0:
                    acc[j] += beta[new, (w + 1) % V] / beta[new, w]
    m = U.shape[0] - 1 - n_burn
    return np.array(acc) / m
