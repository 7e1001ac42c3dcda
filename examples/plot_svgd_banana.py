"""
SVGD and sliced SVGD on a bent target
=====================================

Sliced SVGD drives each slice of the particles with a one-dimensional kernel on one
projection. That keeps the particles' variance in many dimensions, where SVGD's
full kernel loses it, but one projection at a time cannot see a dependence that
bends: on the banana (:class:`skstein.distributions.Banana`), whose second
coordinate follows a parabola in the first, the sliced particles settle near the
conditional variances. This example moves 100 particles towards a 2-D banana with
both samplers and compares them with draws of the target, then repeats the
comparison in 10 dimensions, where the banana is one bent plane among
independent Gaussian coordinates.
"""

# %%
# Two dimensions
# --------------
import matplotlib.pyplot as plt
import numpy as np

from skstein import SVGD, SlicedSVGD
from skstein.distributions import Banana

target = Banana(2, curvature=1.0)
truth = target.rvs(2000, random_state=1)
target_var = np.array([1.0, 3.0])  # the variances of the two bent coordinates

runs = {}
for name, cls in (("SVGD", SVGD), ("sliced SVGD", SlicedSVGD)):
    runs[name] = cls(target, n_particles=100, n_iter=2000, random_state=0).fit().particles_
    ratio = runs[name].var(axis=0, ddof=1) / target_var
    print(f"{name:>12}: variance / target's along the bend {ratio[0]:.2f}, {ratio[1]:.2f}")

fig, axes = plt.subplots(1, 2, figsize=(9, 4), sharex=True, sharey=True)
for ax, (name, P) in zip(axes, runs.items()):
    ax.scatter(*truth.T, s=3, color="0.8", label="target draws")
    ax.scatter(*P.T, s=10, color="C0" if name == "SVGD" else "C1", label=f"{name} particles")
    ax.set_title(name)
    ax.set_xlabel("$x_1$")
    ax.legend(fontsize="small", loc="upper center")
axes[0].set_ylabel("$x_2$")
fig.tight_layout()
plt.show()

# %%
# Ten dimensions
# --------------
# The same bend in the first two coordinates, eight independent standard normal ones
# beside it.
target10 = Banana(10, curvature=1.0)
for name, cls in (("SVGD", SVGD), ("sliced SVGD", SlicedSVGD)):
    P = cls(target10, n_particles=100, n_iter=2000, random_state=0).fit().particles_
    ratio = P.var(axis=0, ddof=1) / np.r_[target_var, np.ones(8)]
    print(f"{name:>12}: along the bend {ratio[0]:.2f}, {ratio[1]:.2f}; "
          f"elsewhere {ratio[2:].mean():.2f} on average")

# %%
# Interpretation
# --------------
# In two dimensions SVGD's particles fill the banana, arms included, while sliced
# SVGD's gather in a few narrow streaks inside it and reach neither the arms nor
# the lower edge: the fixed point of one-dimensional kernels constrains one
# projection at a time, so along the bend the sliced particles keep about the
# conditional variances, as they do along correlated axes (where
# ``slices="score"`` helps, but no rotation straightens a bend). In ten dimensions
# SVGD has lost about half the variance of the independent coordinates, the known
# collapse of its full kernel as the dimension grows, while sliced SVGD keeps theirs
# and still underestimates the bend. The ``svgd-variance`` reproduction (part ``banana``)
# measures both over dimensions 2 to 50 and seeds; see the
# :doc:`user guide on samplers </user_guide/samplers>`.
