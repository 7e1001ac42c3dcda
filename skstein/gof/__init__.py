"""Goodness-of-fit tests as scikit-learn estimators.

One family per module: :mod:`._ksd` (:class:`KSDTest`), :mod:`._maxsksd`
(:class:`MaxSKSDTest`), :mod:`._perturbed` (:class:`PerturbedKSDTest`, the KSD test
of a sample and its perturbation by jumps between the model's modes),
:mod:`._polynomial` (:class:`PolynomialKSDTest`, the KSD with a saturated polynomial
kernel: moments of one order in every direction); :mod:`._base`
holds what they share.

The baselines: :mod:`._fssd` (:class:`FSSDTest`), :mod:`._linear`
(:class:`LinearKSDTest`), :mod:`._rfsd` (:class:`RFSDTest`, random-feature Stein
discrepancies and random-Fourier-feature KSD), :mod:`._mmd` (:class:`MMDGOFTest`).
"""

from ._ksd import KSDTest
from ._maxsksd import MaxSKSDTest
from ._fssd import FSSDTest
from ._linear import LinearKSDTest, linear_ksd
from ._mmd import MMDGOFTest
from ._rfsd import RFSDTest
from ._perturbed import PerturbedKSDTest
from ._polynomial import PolynomialKSDTest

__all__ = ["KSDTest", "MaxSKSDTest"]
__all__ += ["FSSDTest", "LinearKSDTest", "linear_ksd", "MMDGOFTest", "RFSDTest"]
__all__ += ["PerturbedKSDTest", "PolynomialKSDTest"]
