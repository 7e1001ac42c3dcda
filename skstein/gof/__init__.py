"""Goodness-of-fit tests as scikit-learn estimators.

One family per module: :mod:`._ksd` (:class:`KSDTest`), :mod:`._maxsksd`
(:class:`MaxSKSDTest`); :mod:`._base` holds what they share.
"""

from ._ksd import KSDTest
from ._maxsksd import MaxSKSDTest

__all__ = ["KSDTest", "MaxSKSDTest"]
