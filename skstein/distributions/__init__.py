"""Models p, given by their score grad log p (and a sampler where cheap).

Any object with ``grad_logpdf(X)`` is a model, and so is any callable
``X -> grad log p(X)``; see :class:`Distribution` for the optional members.
Discrete models (:class:`Categorical`, :class:`BinaryRBM`, :class:`LDA`) declare
``n_values`` and give the ratios of the discrete Stein operators instead
(:mod:`skstein.discrete`).
"""

from ._base import Distribution, rvs_kind
from .gaussian import Gaussian, gaussian_diffusion
from .ica import ICA
from ._sklearn import from_estimator
from .mixture import AffineTransformed, GaussianMixture
from .ppca import PPCA
from .product import Banana, Laplace, StudentT
from .rbm import GaussBernRBM
from .discrete import BinaryRBM, Categorical, DiscreteDistribution
from .lda import LDA
from .bnn import BNNPosterior

__all__ = ["Distribution", "Gaussian", "gaussian_diffusion", "Laplace", "StudentT", "Banana",
           "GaussBernRBM", "PPCA", "GaussianMixture", "AffineTransformed", "from_estimator", "ICA",
           "Categorical", "BinaryRBM", "LDA", "DiscreteDistribution", "BNNPosterior",
           "rvs_kind"]
