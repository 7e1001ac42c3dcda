r"""Collapsed Gibbs sampling of LDA topic assignments, with Rao-Blackwellised ratios.

A document :math:`x \in \{0, \dots, V-1\}^D` (word ids) has topic assignments
:math:`z \in \{0, \dots, K-1\}^D`; with the document-topic proportions integrated out,
the conditional of one assignment given the others is

.. math::

    p(z_j = k \mid z_{-j}, x) \propto (n_k^{-j} + \alpha_k)\, \beta_{k, x_j},

:math:`n_k^{-j}` the number of other words assigned to topic ``k``. One *sweep* updates
:math:`z_1, \dots, z_D` in turn. Each task runs one chain:

* plain (``site < 0``): the posterior :math:`p(z \mid x)`. At every update of word
  ``j`` after burn-in it adds the conditional expectation

  .. math::

      E[\beta_{z_j, x_j + 1} / \beta_{z_j, x_j} \mid z_{-j}, x]
      = \frac{\sum_k (n_k^{-j} + \alpha_k) \beta_{k, x_j + 1}}
             {\sum_k (n_k^{-j} + \alpha_k) \beta_{k, x_j}},

  whose posterior mean is :math:`p(x + e_j) / p(x)` (the difference operator's ratio);
* matching (``site = j0``, ``shift = s``): the chain in which the likelihood of word
  ``j0`` is :math:`\beta_{k, x_{j0}} + \beta_{k, \tilde x_{j0}}`,
  :math:`\tilde x = x + s e_{j0}` (posterior given "word ``j0`` is :math:`x_{j0}` or
  :math:`\tilde x_{j0}`"). At every update of ``j0`` it adds

  .. math::

      \frac{\sum_k (n_k^{-j0} + \alpha_k) \beta_{k, \tilde x_{j0}}}
           {\sum_k (n_k^{-j0} + \alpha_k)(\beta_{k, x_{j0}} + \beta_{k, \tilde x_{j0}})},

  whose mean under that chain is :math:`p(\tilde x) / (p(x) + p(\tilde x))` (the
  Zanella-Barker weight).

Averaging the conditional expectations (Rao-Blackwellisation) instead of the ratio at
the sampled topic gives the same limit with less Monte Carlo noise. With ``states``
true the kernels average the ratio at the sampled topic instead,
:math:`\beta_{z_j, x_j + 1} / \beta_{z_j, x_j}` and :math:`\beta_{z_j, \tilde x_{j0}} /
(\beta_{z_j, x_{j0}} + \beta_{z_j, \tilde x_{j0}})` after each update (the estimator of
an average over recorded states); the difference ratio then has heavy tails when the
word is rare under some topic that its successor is not. Uniform draws
come from the caller (row 0 of each task initialises the topics,
:math:`z_j = \lfloor u K \rfloor`; row ``1 + t`` drives sweep ``t``); tasks are
independent, one per ``prange`` iteration, so results do not depend on the number
of threads.
"""

import numpy as np
from numba import njit, prange

from ._jit import PARALLEL
from .discrete import cyclic_shift


@njit(cache=True)
def _run_task(x, betaT, alpha, site, shift, U, n_burn, states, acc, p, z, cnt):
    """Run one chain; ``acc`` (D,) receives the sums of the conditional expectations
    (``states``: of the ratios at the sampled topics)."""
    D = x.shape[0]
    K = alpha.shape[0]
    V = betaT.shape[0]
    for k in range(K):
        cnt[k] = 0.0
    for j in range(D):
        k = int(U[0, j] * K)
        if k >= K:
            k = K - 1
        z[j] = k
        cnt[k] += 1.0
        acc[j] = 0.0
    n_sweeps = U.shape[0] - 1
    for sw in range(n_sweeps):
        keep = sw >= n_burn
        for j in range(D):
            w = x[j]
            cnt[z[j]] -= 1.0
            tot = 0.0
            if j == site:
                w2 = cyclic_shift(w, shift, V)
                num = 0.0
                for k in range(K):
                    a = cnt[k] + alpha[k]
                    b2 = a * betaT[w2, k]
                    pk = a * betaT[w, k] + b2
                    p[k] = pk
                    tot += pk
                    num += b2
                if keep and not states:
                    acc[j] += num / tot
            else:
                for k in range(K):
                    pk = (cnt[k] + alpha[k]) * betaT[w, k]
                    p[k] = pk
                    tot += pk
                if keep and site < 0 and not states:
                    w1 = cyclic_shift(w, 1, V)
                    num = 0.0
                    for k in range(K):
                        num += (cnt[k] + alpha[k]) * betaT[w1, k]
                    acc[j] += num / tot
            u = U[1 + sw, j] * tot
            c = 0.0
            knew = -1
            for k in range(K):
                c += p[k]
                if u < c:
                    knew = k
                    break
            if knew < 0:
                # u reached the rounded total: the last topic of positive weight
                knew = K - 1
                while knew > 0 and p[knew] <= 0.0:
                    knew -= 1
            z[j] = knew
            cnt[knew] += 1.0
            if keep and states:
                if j == site:
                    w2 = cyclic_shift(w, shift, V)
                    acc[j] += betaT[w2, knew] / (betaT[w, knew] + betaT[w2, knew])
                elif site < 0:
                    acc[j] += betaT[cyclic_shift(w, 1, V), knew] / betaT[w, knew]


@njit(cache=True, parallel=PARALLEL)
def lda_gibbs_tasks(X, betaT, alpha, docs, sites, shifts, U, n_burn, out, states=False):
    """Run one collapsed-Gibbs chain per task; write the mean conditional expectations.

    Parameters
    ----------
    X : int64 (n, D)
        Documents (word ids in ``[0, V)``).
    betaT : float64 (V, K)
        Topic-word probabilities, transposed (row ``w`` holds :math:`\\beta_{:, w}`).
    alpha : float64 (K,)
        Document-topic Dirichlet prior.
    docs, sites, shifts : int64 (T,)
        Per task: the document, the matched word (``-1`` for the plain posterior) and
        the shift of the matched word (``+1`` or ``-1``; unused when ``site < 0``).
    U : float32 or float64 (T, 1 + n_sweeps, D)
        Uniform draws in ``[0, 1)``.
    n_burn : int
        Sweeps discarded before averaging (``n_sweeps - n_burn >= 1``).
    out : float64 (T, D)
        Plain tasks: row ``t`` holds the mean ratio of every word. Matching tasks:
        ``out[t, 0]`` holds the mean weight of the matched word (the rest is scratch).
    states : bool, default=False
        Average the ratios at the sampled topics instead of the conditional
        expectations.
    """
    T = docs.shape[0]
    D = X.shape[1]
    K = alpha.shape[0]
    m = U.shape[1] - 1 - n_burn
    for t in prange(T):
        p = np.empty(K)
        z = np.empty(D, np.int64)
        cnt = np.empty(K)
        acc = np.empty(D)
        site = sites[t]
        _run_task(X[docs[t]], betaT, alpha, site, shifts[t], U[t], n_burn, states, acc, p, z,
                  cnt)
        if site < 0:
            for j in range(D):
                out[t, j] = acc[j] / m
        else:
            out[t, 0] = acc[site] / m
    return out
