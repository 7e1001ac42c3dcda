"""Latent Dirichlet allocation as a latent discrete model."""

import numpy as np

from .._docstrings import fill_doc
from .._numba.lda import lda_gibbs_tasks
from .._random import as_generator
from .._validation import check_choice, check_positive_int
from .._validation import check_discrete_samples
from ._base import check_n

__all__ = ["LDA"]

#: Default memory budget (bytes) for the uniform draws of one block of Gibbs chains.
_MAX_MEMORY = 64 * 2**20


@fill_doc
class LDA:
    r"""Latent Dirichlet allocation over a vocabulary of ``V`` words.

    A document of ``D`` words :math:`x \in \{0, \dots, V-1\}^D` is drawn as
    :math:`\theta \sim \mathrm{Dir}(\alpha)`, then for each position ``j`` a topic
    :math:`z_j \sim \mathrm{Cat}(\theta)` and a word :math:`x_j \sim
    \mathrm{Cat}(\beta_{z_j})`. The marginal :math:`p(x)` is intractable; the ratios of
    the discrete Stein operators are posterior expectations over the topic assignments,
    estimated by collapsed Gibbs sampling (:meth:`posterior_coefficients`):

    * difference: :math:`p(x + e_j)/p(x) = E_{z \mid x}[\beta_{z_j, x_j + 1} /
      \beta_{z_j, x_j}]`;
    * Zanella-Barker: :math:`p(\tilde x)/(p(x) + p(\tilde x)) = E[\beta_{z_j, \tilde x_j} /
      (\beta_{z_j, x_j} + \beta_{z_j, \tilde x_j})]`, :math:`\tilde x = x \pm e_j`, the
      expectation under the matching chain (the posterior given that word ``j`` is
      :math:`x_j` or :math:`\tilde x_j`), one chain per word and shift.

    Word ids shift cyclically (``V - 1`` + 1 is 0), so the vocabulary order matters to
    the difference operator: a rare word next to a frequent one gives a huge ratio.

    Parameters
    ----------
    topic_word : array-like of shape (K, V)
        Non-negative topic-word weights; each row is normalised to sum to one (so the
        ``components_`` of scikit-learn's ``LatentDirichletAllocation`` may be given
        as they are).
    doc_topic_prior : float or array-like of shape (K,)
        The Dirichlet prior :math:`\alpha` of the document-topic proportions (positive).
    n_words : int, default=None
        Document length ``D``, for :meth:`rvs` and as :attr:`dim`; None leaves it to
        the data.
    ratio_estimate : {"rao-blackwell", "states"}, default="rao-blackwell"
        How :meth:`posterior_coefficients` averages along a chain: the conditional
        expectation of the ratio given the other words' topics (Rao-Blackwellised),
        or the ratio at the sampled topic of each recorded state (the estimator of
        the published LDA experiment). Both converge to the same ratios. With a rare
        word followed by a frequent one the difference ratio at a sampled topic is
        heavy-tailed, and ``"states"`` makes the difference operator's test unstable
        (see :mod:`skstein.experiments.relative_lda`); it is there to show that.

    Attributes
    ----------
    topic_word : ndarray (K, V)
        :math:`\beta`, rows summing to one.
    doc_topic_prior : ndarray (K,)
    n_values : int
        ``V``.
    n_topics : int
    dim : int or None
        ``n_words``.
    ratio_estimate : str

    Examples
    --------
    >>> import numpy as np
    >>> from skstein.distributions import LDA
    >>> beta = np.random.default_rng(0).dirichlet(np.full(20, 0.5), size=3)
    >>> lda = LDA(beta, 0.1, n_words=10)
    >>> X = lda.rvs(5, random_state=0)
    >>> W = lda.posterior_coefficients(X, "zanella-barker", n_samples=50, burn_in=20,
    ...                                random_state=0)
    >>> W.shape, bool(W.min() >= 0 and W.max() <= 1)
    ((2, 5, 10), True)
    """

    def __init__(self, topic_word, doc_topic_prior, n_words=None, ratio_estimate="rao-blackwell"):
        B = np.array(topic_word, dtype=np.float64)
        if B.ndim != 2 or B.shape[1] < 2:
            raise ValueError(f"topic_word must have shape (n_topics, V) with V >= 2, got "
                             f"{B.shape}.")
        if not np.all(np.isfinite(B)) or np.any(B < 0):
            raise ValueError("topic_word must be finite and non-negative.")
        sums = B.sum(axis=1)
        if np.any(sums <= 0):
            raise ValueError("every row (topic) of topic_word must have a positive sum.")
        B /= sums[:, None]
        K, V = B.shape
        a = np.asarray(doc_topic_prior, dtype=np.float64)
        if a.ndim == 0:
            a = np.full(K, float(a))
        if a.shape != (K,) or not np.all(np.isfinite(a)) or np.any(a <= 0):
            raise ValueError(f"doc_topic_prior must be a positive float or an array of {K} "
                             f"positive floats, got {doc_topic_prior!r}.")
        self.topic_word = B
        self.doc_topic_prior = a
        self.n_topics, self.n_values = K, V
        self.dim = None if n_words is None else check_positive_int(n_words, "n_words")
        self.ratio_estimate = check_choice(ratio_estimate, "ratio_estimate",
                                           ("rao-blackwell", "states"))
        self._betaT = np.ascontiguousarray(B.T)
        self._cum = np.cumsum(B, axis=1)

    @property
    def n_words(self):
        """Words per document (``dim``), or None when not set."""
        return self.dim

    def rvs(self, n, random_state=None, n_words=None):
        """Draw ``n`` documents of ``n_words`` words.

        Parameters
        ----------
        n : int
            Number of documents.
        %(random_state_draws)s
        n_words : int, default=None
            Words per document; ``None`` uses the model's.

        Returns
        -------
        ndarray of int64 of shape (n, n_words)
        """
        n = check_n(n)
        D = self.dim if n_words is None else check_positive_int(n_words, "n_words")
        if D is None:
            raise ValueError("the document length is not set: give n_words here or to LDA(...).")
        rng = as_generator(random_state)
        theta = rng.dirichlet(self.doc_topic_prior, size=n)
        cum_theta = np.cumsum(theta, axis=1)
        Uz = rng.random((n, D))
        Z = np.minimum((Uz[:, :, None] >= cum_theta[:, None, :]).sum(axis=2), self.n_topics - 1)
        Uw = rng.random((n, D))
        X = np.empty((n, D), dtype=np.int64)
        for k in range(self.n_topics):
            mask = Z == k
            X[mask] = np.searchsorted(self._cum[k], Uw[mask], side="right")
        return np.minimum(X, self.n_values - 1)

    def _check_docs(self, X):
        X = check_discrete_samples(X, np.full(np.shape(X)[-1], self.n_values), min_samples=1)
        if self.dim is not None and X.shape[1] != self.dim:
            raise ValueError(f"X has documents of {X.shape[1]} words; the model has {self.dim} "
                             "words.")
        support = self._betaT.sum(axis=1)[X] > 0
        if not np.all(support):
            i, j = np.argwhere(~support)[0]
            raise ValueError(f"word X[{i}, {j}] = {X[i, j]} has probability 0 under every topic, "
                             "so the document lies outside the model's support.")
        return X

    def posterior_coefficients(self, X, operator, n_samples=500, burn_in=200, random_state=None,
                               *, max_memory=_MAX_MEMORY):
        """Collapsed-Gibbs estimates of the ratios of a discrete Stein operator.

        Each chain starts from uniformly drawn topics, runs ``burn_in`` sweeps (a sweep
        updates every word of the document once, in order) and then ``n_samples``
        sweeps, averaging the Rao-Blackwellised conditional expectations of
        :mod:`skstein._numba.lda` (one per word and sweep; with
        ``ratio_estimate="states"`` the ratios at the sampled topics). ``"difference"`` runs one
        chain per document; ``"zanella-barker"`` one per document, word and shift
        (``2 D`` chains per document).

        Parameters
        ----------
        X : array-like of int, shape (n, D)
            Documents as word ids.
        operator : {"difference", "zanella-barker"}
        n_samples : int, default=500
            Sweeps averaged per chain.
        burn_in : int, default=200
            Sweeps discarded first.
        random_state : None, int or Generator
            Uniform draws (float32, resolution 2^-24) come from it in NumPy, chain after
            chain, so the result does not depend on ``max_memory`` or on the number of
            threads.
        max_memory : int, default=64 MiB
            Bound on the draws held at once.

        Returns
        -------
        ndarray
            ``"difference"``: ``(1, n, D)`` estimates of :math:`p(x + e_j)/p(x)`;
            ``"zanella-barker"``: ``(2, n, D)`` estimates of the weights of the shifts
            ``+1`` and ``-1``.
        """
        check_choice(operator, "operator", ("difference", "zanella-barker"))
        m = check_positive_int(n_samples, "n_samples")
        b = check_positive_int(burn_in, "burn_in", minimum=0)
        X = self._check_docs(X)
        n, D = X.shape
        if operator == "difference":
            docs = np.arange(n, dtype=np.int64)
            sites = np.full(n, -1, dtype=np.int64)
            shifts = np.zeros(n, dtype=np.int64)
        else:
            docs = np.repeat(np.arange(n, dtype=np.int64), 2 * D)
            sites = np.tile(np.repeat(np.arange(D, dtype=np.int64), 2), n)
            shifts = np.tile(np.array([1, -1], dtype=np.int64), n * D)
        T = docs.size
        rows = 1 + b + m
        out = np.empty((T, D))
        rng = as_generator(random_state)
        per = int(max(1, max_memory // (4 * rows * D)))
        for a in range(0, T, per):
            c = min(T, a + per)
            U = rng.random((c - a, rows, D), dtype=np.float32)
            lda_gibbs_tasks(X, self._betaT, self.doc_topic_prior, docs[a:c], sites[a:c],
                            shifts[a:c], U, b, out[a:c], self.ratio_estimate == "states")
        if operator == "difference":
            return out[None]
        return np.ascontiguousarray(out[:, 0].reshape(n, D, 2).transpose(2, 0, 1))

    def __repr__(self):
        extra = ("" if self.ratio_estimate == "rao-blackwell"
                 else f", ratio_estimate={self.ratio_estimate!r}")
        return (f"LDA(n_topics={self.n_topics}, V={self.n_values}, "
                f"n_words={self.dim}{extra})")
