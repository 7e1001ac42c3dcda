r"""Particle samplers: Stein variational gradient descent and its sliced variant.

Both move a set of particles towards a target :math:`p`, given by its score alone,
along the direction that decreases the KL divergence fastest within the unit ball of
an RKHS (Liu & Wang 2016). Sliced SVGD (Gong, Li & Hernández-Lobato 2021, Algorithm 2)
uses one 1-D kernel per dimension, acting on the projection of the particles on a
learned direction, which keeps the repulsive force alive in high dimensions where
plain SVGD collapses to the mode (under-estimates the variance).

Why these are not scikit-learn transformers: the particles interact (the update of
one depends on all others), so the image of a point is not a function of that point.
``fit(X0)`` moves a particle set; ``move(X)`` moves another set with the same
settings (and, for :class:`SlicedSVGD`, starting from the learned directions).

One family per module: :mod:`._svgd` (:class:`SVGD`), :mod:`._sliced`
(:class:`SlicedSVGD`, its slice rules); :mod:`._base` holds what they share (the
step rules and the particle loop on the host and on a device).
"""

from ._base import BANDWIDTHS, DEVICE_CHECK_EVERY, OPTIMIZERS  # noqa: F401
from ._sliced import (SLICE_CHECK_MARGIN, SLICE_CHECK_PERMUTATIONS,  # noqa: F401
                      SLICE_RULES, SlicedSVGD, score_frame, scores_correlated)
from ._svgd import SVGD

__all__ = ["SVGD", "SlicedSVGD", "score_frame", "scores_correlated"]
