"""
SVGD and sliced SVGD as the dimension grows
===========================================

The repulsive term of SVGD, which keeps particles apart, comes from one kernel on
the whole :math:`D`-dimensional space; as :math:`D` grows it fades and the particles
collapse towards the mode. :class:`skstein.SlicedSVGD` (Gong et al. 2021) uses one
1-D kernel per coordinate instead, along learned directions. This example moves the
same 50 initial particles towards :math:`N(0, I_D)` with both, for :math:`D` from 2
to 64, and compares the particles' variance with the target's (1 in every
coordinate).
"""

# %%
# Both samplers, from the same initial particles, at each dimension
# -----------------------------------------------------------------
import matplotlib.pyplot as plt
import numpy as np

from skstein import SVGD, SlicedSVGD
from skstein.distributions import Gaussian

dims = [2, 4, 8, 16, 32, 64]
n_particles, n_iter = 50, 500
rng = np.random.default_rng(0)
variances = {"SVGD": [], "SlicedSVGD": []}
particles = {}
for dim in dims:
    target = Gaussian(np.zeros(dim))
    X0 = rng.standard_normal((n_particles, dim)) * 0.5 + 2.0  # off-centre, too narrow
    for name, sampler in (("SVGD", SVGD(target, n_iter=n_iter, random_state=0)),
                          ("SlicedSVGD", SlicedSVGD(target, n_iter=n_iter, random_state=0))):
        particles[name] = sampler.fit(X0).particles_  # kept: those of the last dimension
        variances[name].append(particles[name].var(axis=0).mean())
    print(f"D = {dim:2d}: mean particle variance  SVGD {variances['SVGD'][-1]:.3f}   "
          f"SlicedSVGD {variances['SlicedSVGD'][-1]:.3f}")

# %%
# Plot: the particle variance, and the particles of the largest dimension
# -----------------------------------------------------------------------
fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
for name, marker in (("SVGD", "o"), ("SlicedSVGD", "s")):
    ax.plot(dims, variances[name], marker + "-", label=name)
ax.axhline(1.0, color="grey", ls="--", lw=0.8, label="target")
ax.set_xscale("log", base=2)
ax.set_xticks(dims, [str(d) for d in dims])
ax.minorticks_off()
ax.set_ylim(0, 1.3)
ax.set_xlabel("dimension D")
ax.set_ylabel("mean variance of the particles")
ax.legend(fontsize="small")
grid = np.linspace(-4, 4, 200)
ax2.plot(grid, np.exp(-grid**2 / 2) / np.sqrt(2 * np.pi), color="grey", label="target")
for name, color in (("SVGD", "C0"), ("SlicedSVGD", "C1")):
    ax2.hist(particles[name].ravel(), bins=40, range=(-4, 4), density=True, histtype="step",
             color=color, label=f"{name}, all coordinates")
ax2.set_title(f"D = {dims[-1]}: particle coordinates", fontsize="small")
ax2.legend(fontsize="small", loc="upper right")
fig.tight_layout()
plt.show()

# %%
# Interpretation
# --------------
# In two dimensions both samplers spread the particles close to the target's
# variance (SVGD somewhat less). As the dimension grows SVGD's particles crowd
# together: from D = 4 on their variance roughly halves with every doubling of the
# dimension, and at the largest dimension their coordinates form a narrow
# peak inside the target's density (right). Sliced SVGD keeps the variance near 1
# at every dimension, since each of its kernels compares particles along one
# direction, where 50 particles are still many. The ``svgd-variance`` reproduction
# measures this over more particles and iterations; see also the
# :doc:`user guide on samplers </user_guide/samplers>`.
