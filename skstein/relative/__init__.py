r"""Relative goodness-of-fit tests: which of two models P and Q fits the data better.

The data :math:`x_1, \dots, x_n` come from an unknown R. With a discrepancy
:math:`D` to R, the tests decide

.. math::

    H_0: D(P, R) \le D(Q, R) \quad\text{(P is at least as good)} \qquad
    H_1: D(P, R) > D(Q, R) \quad\text{(Q is better)}

from the difference of two U-statistics on the same data,
:math:`\hat D_n = U_n(P) - U_n(Q)`, which is asymptotically normal with standard
deviation :math:`\sigma / \sqrt n` (both models wrong, the usual case).
H0 is rejected when :math:`\hat D_n \ge \hat\sigma z_{1-\alpha} / \sqrt n`;
the p-value is :math:`1 - \Phi(\sqrt n \hat D_n / \hat\sigma)`.

* :class:`RelativeKSDTest`: :math:`D` the squared KSD with the same kernel for both
  models (Kanagawa et al. 2023). A model may be a latent-variable model whose
  score is estimated from posterior draws (LKSD).
* :class:`RelativeMMDTest`: :math:`D` the squared MMD to samples of the two models
  (Bounliphone et al. 2016).

Variance of the KSD difference. With :math:`H = H^P - H^Q` the difference of the
Stein matrices, :math:`T = \sum_{i \ne j} H_{ij}` and row sums
:math:`r_i = \sum_{j \ne i} H_{ij}`:

* ``"jackknife"``: the leave-one-out statistics are
  :math:`\hat D_{-i} = (T - 2 r_i) / ((n-1)(n-2))` and
  :math:`\hat\sigma^2 = n \cdot \frac{n-1}{n} \sum_i (\hat D_{-i} - \bar D_{-\cdot})^2`;
* ``"ustat"``: :math:`\hat\sigma^2 = 4\,\mathrm{Var}_i[r_i / (n-1)]`, the plug-in
  estimate of the first-order (Hoeffding projection) variance.

Both need only :math:`T` and the row sums, which one Stein-kernel pass per model
gives (:func:`skstein.discrepancy.stein_sums`); no :math:`n \times n` array is formed.
"""

from ._ksd import DISCREPANCIES, RelativeKSDTest, relative_ksd
from ._latent import MODEL_SCORES, check_latent_model, latent_score
from ._mmd import RelativeMMDTest
from ._stats import VARIANCES, relative_variance

__all__ = [
    "RelativeKSDTest",
    "RelativeMMDTest",
    "relative_ksd",
    "relative_variance",
    "latent_score",
    "check_latent_model",
    "VARIANCES",
    "DISCREPANCIES",
    "MODEL_SCORES",
]
