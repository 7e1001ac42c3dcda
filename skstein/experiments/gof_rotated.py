"""``gof-rotated``: departures along directions that are not coordinate axes.

The model is p = N(0, I_D); the data differ from it along directions drawn at random
in each trial, so no test can rely on the axes:

* ``null``: N(0, I_D);
* ``rotated-diffusion``: N(0, I - (1 - 0.3) v v^T) for a random unit vector v (the
  variance along v is 0.3; the ``diffusion`` case of ``gof-gaussian`` turned);
* ``rotated-laplace``: x = W z with z unit-variance Laplace coordinates and W a random
  orthogonal matrix (the ``laplace`` case of ``gof-gaussian`` turned);
* ``rotated-variance``: N(0, I + (1.6 - 1) v v^T) for a random unit vector v (a
  variance of 1.6 along v: a small second-moment departure along one direction);
* ``rotated-t5``: N(0, I) but unit-variance Student-t(5) along a random unit vector v
  (heavier tails along one direction).

Methods (n = 1000; the maxSKSD tests learn their directions on 200 points and test
on the other 800, Algorithm 1 of Gong et al. 2021): ``KSD`` (RBF, median bandwidth,
all 1000 points), and maxSKSD-g and -rg (``n_slices=10``) with these direction
searches: ``identity`` (the axes, refined by 20 ascent steps: the search before
data-driven starts), ``auto`` (the default search: axes, Stein moment matrix and
cubic Stein moment starts, aggregated in the test; the sliced statistics alone),
``default`` (the library's default test: ``auto`` and the whole sample's moments, see
the end), ``cv`` (5-fold cross-fitting, see below), ``moment`` (2-fold cross-fitting
with the moment statistics, see below) and ``oracle`` (the true
directions, no search: what a perfect search would give). For maxSKSD-rg the oracle
takes the departure directions as slices and directions (v and 9 axes orthogonalised
against it for diffusion; 10 of the columns of W for Laplace); for maxSKSD-g slice d
takes v (diffusion) or the column of W with the largest weight on coordinate d
(Laplace). Every method of a trial sees the same data.

The ``cv`` methods (``MaxSKSDTest(cv=5)``) cross-fit: each fifth of the sample is
tested with directions learned on the other four fifths, and the five p-values are
combined by Bonferroni (five times the smallest). Their data-driven starts see 800
points instead of 200, and they add the ``"ica"`` start (directions of extreme
non-Gaussianity, :func:`skstein.directions.independent_directions`): the starts are
``identity, spectral-top, spectral-bottom, ica`` for maxSKSD-g and ``identity,
spectral, cubic, ica`` for -rg; the ascent from the axes sees 200 of the 800
(``train_size``), as in the split test.

Measured (``run(n_trials=100, dims=(20, 50), random_state=2028)``, rejection rates at
alpha = 0.05, binomial standard errors at most 0.05):

===================  ====  =====  ==========  ======  ======  ===========  =======  =======
case                 D     KSD    g:identity  g:auto  g:orac  rg:identity  rg:auto  rg:orac
===================  ====  =====  ==========  ======  ======  ===========  =======  =======
null                 20    0.04   0.03        0.04    0.07    0.03         0.02     0.02
null                 50    0.05   0.06        0.08    0.04    0.00         0.07     0.02
rotated-diffusion    20    0.62   0.46        1.00    1.00    0.42         1.00     1.00
rotated-diffusion    50    0.11   0.16        1.00    1.00    0.15         0.99     1.00
rotated-laplace      20    0.11   0.76        0.93    1.00    0.62         1.00     1.00
rotated-laplace      50    0.06   0.26        0.21    1.00    0.16         0.46     1.00
===================  ====  =====  ==========  ======  ======  ===========  =======  =======

Rotated Laplace at D = 50 is where the search stops short of the oracle: the
non-Gaussian directions show in fourth moments, which 200 training points in 50
dimensions estimate poorly.

The cross-fitted tests and the harder cells, measured on seeds never used for a
choice, every column of a row in one run on the same trials
(``run(n_trials=100, cases=(case,), dims=(D,), n_samples=n, random_state=s,
methods=...)`` with s = 3301 to 3307, one per row; ``n_samples`` other than 1000
learns on a fifth; binomial standard errors at most 0.05):

==================  ===  ====  ====  ======  ====  =====  ======  =======  =====  ======  =======
case                D    n     KSD   g:auto  g:cv  g:mom  g:orac  rg:auto  rg:cv  rg:mom  rg:orac
==================  ===  ====  ====  ======  ====  =====  ======  =======  =====  ======  =======
null                50   1000  0.05  0.03    0.05  0.08   0.07    0.03     0.06   0.06    0.07
null                100  1000  0.09  0.06    0.06  0.04   0.04    0.07     0.05   0.06    0.06
rotated-laplace     50   1000  0.06  0.26    0.46  0.82   1.00    0.53     1.00   0.97    1.00
rotated-laplace     100  1000  0.07  0.09    0.03  0.57   1.00    0.12     0.06   0.53    1.00
rotated-variance    20   300   0.08  0.17    0.10  0.39   0.68    0.14     0.07   0.42    0.59
rotated-variance    50   300   0.10  0.07    0.10  0.12   0.46    0.05     0.04   0.15    0.54
rotated-variance    50   1000  0.09  0.26    0.23  0.96   1.00    0.18     0.21   0.96    1.00
==================  ===  ====  ====  ======  ====  =====  ======  =======  =====  ======  =======

Median seconds a trial in those runs (n = 1000; D = 50 / 100): KSD 0.05 / 0.06,
g:auto 0.32 / 0.54, g:cv 0.72 / 1.16, g:mom 0.31-0.33 / 0.51-0.52, rg:auto 0.15 /
0.17, rg:cv 0.93 / 0.98, rg:mom 0.30-0.34 / 0.34-0.36 (the mom columns were measured
again, in runs of those two methods alone on the same trials, when the fourth-moment
statistic joined them).

Cross-fitting turns rotated Laplace at D = 50 from 0.53 into 1.00 for maxSKSD-rg, at
about six times the time of a split test. At D = 100, and for the variance of 1.6
along one direction, neither search comes near the oracle: the directions exist (the
oracle finds them every time) but 800 training points do not reveal them. The default test is
therefore unchanged (``cv=None``).

The ``moment`` methods (``MaxSKSDTest(cv=2, moment=True)`` with the starts of the
``cv`` methods; the table's columns were measured before the fourth moment was
whitened, see below) add two statistics to each fold's aggregated test. The first is the
linear Stein statistic along the direction where the learning half's second moments
depart most from the model's (the extreme eigenvector of its Stein moment matrix). A
variance of 1.6 along one direction shows there in full, while in maxSKSD it is one
slice of ten under 1-D RBF kernels: at D = 50, n = 1000 it is found in 0.96 of the
trials instead of 0.18-0.26, at D = 20, n = 300 in 0.39-0.42 instead of 0.07-0.17.
Two folds of 500 points learn from more points than the split (200), and test more
points per fold than five folds (200, at alpha / 5). The second is the fourth-moment
statistic (the studentised mean of the Stein terms of ``x -> |x - c|^2 (x - c)``, ``c``
the learning half's mean, calibrated by a bootstrap-t): it needs no direction, and
takes rotated Laplace to 0.97 (-rg) at D = 50 and to 0.53-0.57 at D = 100, where every
search stays at 0.13 or below: the largest empirical excess kurtosis over directions
of 100-dimensional null data (a fourth-moment fixed point from 20 random starts, 3
draws) is 24-48 with 800-500 points, while along the 100 true directions of the
Laplace data it is 3.1 on average and 10-18 at most, so a search for heavy tails
points at noise (at D = 50 with 800 points: 9.1-9.7 against at most 8.9). Before the
fourth-moment statistic joined, the moment columns read 0.27 / 0.90 (Laplace, D = 50)
and 0.10 / 0.13 (D = 100), and the variance cells 0.43 / 0.44 (D = 20) and 0.97 / 0.96
(D = 50, n = 1000). The statistic's form (the quartic test function, the bootstrap-t)
was chosen on prototype trials with seeds 9100-11099, none of these. The number of
folds, 2, was set before these trials (the smallest number of folds in which every
point both learns and is tested), not chosen on them. With the default split instead
(``MaxSKSDTest(moment=True)``, learning on 200 points, the same trials; measured before
the fourth-moment statistic joined) the variance of 1.6 is found in 0.52 (-g) and
0.54 (-rg) of the trials at D = 50, n = 1000 and in 0.30 at D = 20, n = 300; the null
at D = 50 was rejected in 0.01 and 0.03: the direction from 200 points in 50
dimensions is rougher.

Levels of the ``moment`` methods in 200 null trials (``run(n_trials=200,
cases=("null",), dims=(D,), n_samples=n, random_state=s)``, s = 3311 to 3314;
alpha + 3 sd = 0.096), with the default ``rg:auto`` of the same trials (the mom
columns measured again with the fourth-moment statistic; before it: 0.080 / 0.080,
0.040 / 0.050, 0.070 / 0.055, 0.080 / 0.055):

===  ====  =====  ======  =======
D    n     g:mom  rg:mom  rg:auto
===  ====  =====  ======  =======
50   1000  0.080  0.080   0.045
100  1000  0.050  0.060   0.025
20   300   0.065  0.045   0.065
50   300   0.090  0.060   0.080
===  ====  =====  ======  =======

A ``moment`` trial of maxSKSD-rg costs 2.3-2.4 times a default one (the table's
times): two searches with the independent-direction start, on 500 points each. For
maxSKSD-g, whose search is dominated by the ascent on ``train_size`` points (200 in
either case), it costs 1.1 times.

The ``pooled`` methods (``MaxSKSDTest(cv=2, moment="pooled")``, the starts of the
``cv`` methods) test the fourth moment once, on all 1000 points (each half about the
other half's mean, in the coordinates that whiten it), at alpha / 2, beside the two
folds' learned statistics (with the second-moment direction) at alpha / 4 each: the
fourth moment needs no direction, so no fold has to give up half its points for it.
Measured on seeds never used for a choice (s = 3410 to 3416, one per row, 200 trials
for the nulls and 100 otherwise), the ``moment`` methods on the same trials where
shown (their fourth moment whitened by the learning half too; the second-moment
statistic not yet studentised, see the ``cv2`` methods below for what that changed):

==================  ===  ====  ======  ======  ======  =======
case                D    n     g:mom   g:pool  rg:mom  rg:pool
==================  ===  ====  ======  ======  ======  =======
null                50   1000  0.065   0.060   0.045   0.045
null                100  1000  --      0.050   --      0.070
null                20   300   --      0.080   --      0.060
null                50   300   --      0.045   --      0.060
rotated-laplace     50   1000  0.88    1.00    0.99    1.00
rotated-laplace     100  1000  0.68    0.95    0.66    0.95
rotated-variance    50   1000  0.94    0.95    0.94    0.95
==================  ===  ====  ======  ======  ======  =======

A trial at D = 100 took 0.37 s (-g) and 0.30 s (-rg) on an idle development machine
(median of 5). Two earlier versions were measured on other fresh seeds and changed for
their levels, not their power. About the mean of all points (no halves), the 200-trial
nulls at D = 50, N = 300 were 0.13 (-g) and 0.105 (-rg) (s = 3343), beyond alpha + 3 sd
= 0.096: each term's centre depended on the point itself. About the other half's mean
but in the data's coordinates (s = 3350 to 3367), the gof-rotated cells were as good
(rotated Laplace 0.92 / 0.93 at D = 100, nulls 0.025-0.095), but a rotated Gaussian
model with variances 0.1 to 10 (D = 5, N = 150, cv=2) was rejected in 0.11 of 200 null
trials (0.07 whitened; ``moment=True``: 0.16 before, 0.11 whitened). The halving (two
halves, the fewest in which no point enters its own centre), the whitening (the
library's Ledoit-Wolf whitening, as ``whiten=True``) and the equal split of alpha were
set before the trials that report them. At N = 150 (folds of 75 points) the per-fold
fourth moment of ``moment=True`` stays too liberal: 0.11 (that rotated Gaussian),
0.12 (a 3-cluster mixture in 3-D) and 0.115 (N(0, I_4)) of 200 null trials, against
0.07, 0.07 and 0.08 for ``moment="pooled"``.

The ``cv2`` methods (``MaxSKSDTest(cv=2, moment="pooled")`` with the library's starts:
those of ``auto`` and ``"ica"``) are the option as a user gets it. Measured on seeds
never used for a choice (s = 3461 to 3472, one per row; 200 trials for the nulls, 100
otherwise), with the second-moment statistic studentised; the rows marked * were
measured before it was, and in brackets are the other rows' rates then, on the same
trials:

==================  ===  ====  =============  =============
case                D    n     g:cv2          rg:cv2
==================  ===  ====  =============  =============
null                50   1000  0.055 (0.055)  0.075 (0.075)
null                100  1000  0.080 (0.090)  0.080 (0.090)
null                20   300   0.055 (0.080)  0.065 (0.085)
null                50   300   0.030 (0.050)  0.050 (0.070)
rotated-laplace *   20   1000  1.00           1.00
rotated-laplace *   50   1000  1.00           1.00
rotated-laplace     100  1000  0.93 (0.93)    0.93 (0.93)
rotated-variance    50   1000  0.90 (0.94)    0.93 (0.96)
rotated-variance    20   300   0.22 (0.40)    0.23 (0.43)
rotated-variance *  50   300   0.10           0.09
rotated-diffusion * 20   1000  1.00           1.00
rotated-diffusion * 50   1000  1.00           1.00
==================  ===  ====  =============  =============

They meet this experiment's targets (rotated Laplace at least 0.9 at D = 50 and 0.8
at D = 100, the variance cell at D = 50 at least 0.9, nulls within alpha + 3 sd =
0.096), at 0.54 s a maxSKSD-g test at D = 100 against 0.26 s for ``auto`` (an idle
2-core machine). The variance at n = 300 fell with the studentising: the U-statistic's
multinomial bootstrap had been liberal with 150-point folds. On ``gof-rbm`` they lose
power. The ``pooled`` and ``cv2`` tables above were measured when ``moment="pooled"``
tested the fourth moment alone, at alpha / 2.

The ``default`` methods are the library's default test (``MaxSKSDTest`` with this
experiment's sizes): the split's learned statistics at alpha / 2 and the whole sample's
second and fourth moments at alpha / 4 each, the fourth moment's test function
saturated beyond the range of its reference half
(:func:`skstein.gof._maxsksd.radial_scale`). Measured on seeds never used for a choice
(``run(n_trials=T, cases=(case,), dims=(D,), n_samples=n, random_state=s,
methods=("maxSKSD-g:default", "maxSKSD-rg:default"))``, s = 4801 to 4813, one per
row; T = 200 for the nulls, 100 otherwise); in brackets, the same cells with the
unsaturated cubic (s = 4601 to 4613):

==================  ===  ====  ============  ============
case                D    n     g:default     rg:default
==================  ===  ====  ============  ============
null                20   1000  0.05 (0.04)   0.05 (0.05)
null                50   1000  0.06 (0.05)   0.07 (0.04)
null                100  1000  0.055 (0.04)  0.065 (0.02)
null                20   300   0.045 (0.06)  0.055 (0.06)
null                50   300   0.045 (0.04)  0.045 (0.07)
rotated-laplace     20   1000  1.00 (1.00)   1.00 (1.00)
rotated-laplace     50   1000  0.97 (0.98)   0.99 (0.98)
rotated-laplace     100  1000  0.88 (0.88)   0.88 (0.89)
rotated-variance    50   1000  0.92 (0.95)   0.91 (0.96)
rotated-variance    20   300   0.62 (0.51)   0.60 (0.50)
rotated-variance    50   300   0.17 (0.15)   0.16 (0.17)
rotated-diffusion   20   1000  1.00 (1.00)   1.00 (1.00)
rotated-diffusion   50   1000  1.00 (1.00)   1.00 (1.00)
==================  ===  ====  ============  ============

Every target holds (alpha + 3 sd = 0.096 for the nulls). A first saturation, at two
standard deviations of the reference's squared radii, was run on s = 4701 to 4713 and
dropped for what it cost here: rotated Laplace at D = 100 fell to 0.65 (-g and -rg) and
the variance cell at D = 50 to 0.88. With the cubic, a test took 0.25 s (-g) and 0.17 s
(-rg) at D = 50 and 0.35 s and 0.17 s at D = 100 (median over the trials, two workers
on the 2-core development machine); the saturation costs one ``tanh`` per point.

The ``polynomial`` method is :class:`~skstein.PolynomialKSDTest` with its defaults
(the fourth moments in every direction, no split). With ``KSD`` and the two
``default`` methods on the same trials, seeds 5101 to 5114 (one per row), the user
guide ("Choosing a test", "Tails along an unknown direction") gives its table:
``rotated-t5`` at n = 1000 0.61 / 0.30 / 0.07 at D = 10 / 20 / 50 (the default maxSKSD
tests 0.15-0.21, 0.02, 0.02-0.05), rotated Laplace 1.00 at D = 50 and 100 (0.80-0.98),
the variance of 1.6 at D = 50 0.72 (0.88), nulls 0.02-0.07 in 200 trials. The
``polynomial-1,3`` method aggregates degrees 1 and 3 (``degree=(1, 3)``: the second
moments too); the user guide compares the two on the same trials (seeds 5101-5114
again, its own table): more power on a variance along one direction (0.89 against
0.75 at D = 50), less on Student-t(5) tails (0.18 against 0.30 at D = 20).
"""

import numpy as np
from scipy.stats import ortho_group

from .._random import spawn_seeds
from ..distributions import Gaussian
from ..gof import KSDTest, MaxSKSDTest, PolynomialKSDTest
from ._output import finish_rate_panels, panel_row, run_config
from ._runner import run_trials
from ._summary import timed_outcomes, timed_summary

__all__ = ["CASES", "METHODS", "draw", "oracle", "make_test", "run_trial", "run", "plot"]

CASES = ("null", "rotated-diffusion", "rotated-laplace", "rotated-variance", "rotated-t5")
METHODS = ("KSD", "polynomial", "polynomial-1,3", "maxSKSD-g:default", "maxSKSD-g:identity",
           "maxSKSD-g:auto", "maxSKSD-g:cv", "maxSKSD-g:moment", "maxSKSD-g:pooled",
           "maxSKSD-g:cv2", "maxSKSD-g:oracle", "maxSKSD-rg:default", "maxSKSD-rg:identity",
           "maxSKSD-rg:auto", "maxSKSD-rg:cv", "maxSKSD-rg:moment", "maxSKSD-rg:pooled",
           "maxSKSD-rg:cv2", "maxSKSD-rg:oracle")
#: Folds and starts of the ``cv`` methods.
CV_FOLDS = 5
#: Folds of the ``moment`` methods (with the starts of the ``cv`` methods).
MOMENT_FOLDS = 2
CV_STARTS = {"g": ("identity", "spectral-top", "spectral-bottom", "ica"),
             "rg": ("identity", "spectral", "cubic", "ica")}
N_SLICES = 10
FULL = dict(dims=(10, 20, 50, 100), n_samples=1000, train_size=200, n_trials=100,
            n_bootstrap=1000)
QUICK = dict(dims=(10,), n_samples=300, train_size=100, n_trials=4, n_bootstrap=200)


def draw(case, dim, n, rng):
    """``(X, W)``: n samples of ``case`` and the departure directions (rows)."""
    if case == "null":
        return rng.standard_normal((n, dim)), np.eye(dim)
    if case == "rotated-diffusion":
        v = rng.standard_normal(dim)
        v /= np.linalg.norm(v)
        Z = rng.standard_normal((n, dim))
        X = Z - (1.0 - np.sqrt(0.3)) * np.outer(Z @ v, v)  # variance 0.3 along v
        return X, v[None, :]
    if case == "rotated-laplace":
        W = ortho_group.rvs(dim, random_state=rng)
        Z = rng.laplace(scale=2**-0.5, size=(n, dim))
        return Z @ W.T, np.ascontiguousarray(W.T)  # rows: the directions W[:, j]
    if case == "rotated-variance":
        v = rng.standard_normal(dim)
        v /= np.linalg.norm(v)
        Z = rng.standard_normal((n, dim))
        return Z + (np.sqrt(1.6) - 1.0) * np.outer(Z @ v, v), v[None, :]  # variance 1.6 along v
    if case == "rotated-t5":
        v = rng.standard_normal(dim)
        v /= np.linalg.norm(v)
        Z = rng.standard_normal((n, dim))
        t = rng.standard_t(5, size=n) * np.sqrt(3.0 / 5.0)  # unit variance
        return Z + np.outer(t - Z @ v, v), v[None, :]  # Student-t(5) along v
    raise ValueError(f"case must be one of {CASES}, got {case!r}.")


def oracle(variant, directions, dim):
    """``(G, R)`` of the oracle test (see the module docstring)."""
    m = min(N_SLICES, dim)
    if variant == "rg":
        if len(directions) >= m:
            R = directions[:m]
        else:
            R = np.linalg.qr(np.vstack([directions, np.eye(dim)]).T)[0].T[:m]
            R[:len(directions)] = directions
        return R.copy(), R.copy()
    if len(directions) == 1:
        return np.repeat(directions, dim, axis=0), np.eye(dim)
    best = np.argmax(np.abs(directions), axis=0)  # for coordinate d, the heaviest direction
    return directions[best].copy(), np.eye(dim)


def make_test(method, model, dim, n_bootstrap, train_size, directions=None):
    """The test called ``method``; ``directions`` (rows) are used by the oracle tests."""
    if method == "KSD":
        return KSDTest(model, kernel="rbf", bandwidth="median", n_bootstrap=n_bootstrap)
    # whiten=False and reference="sample": the coordinates the rates were measured in
    if method == "polynomial":
        return PolynomialKSDTest(model, whiten=False, reference="sample",
                                 n_bootstrap=n_bootstrap)
    if method == "polynomial-1,3":
        return PolynomialKSDTest(model, degree=(1, 3), whiten=False, reference="sample",
                                 n_bootstrap=n_bootstrap)
    name, search = method.split(":")
    variant = name.split("-")[1]
    # in the data's coordinates (whiten=False), as the reported rates were measured
    kw = dict(variant=variant, n_bootstrap=n_bootstrap, train_size=train_size, whiten=False)
    if variant == "rg":
        kw["n_slices"] = min(N_SLICES, dim)
    if search == "default":  # the library's default test (but whiten=False)
        return MaxSKSDTest(model, **kw)
    if search == "cv2":  # 2 folds and the pooled moments, with the library's starts
        return MaxSKSDTest(model, cv=MOMENT_FOLDS, moment="pooled", **kw)
    # the other searches on one split, the sliced statistics alone, unless said otherwise
    kw.update(cv=None, moment=False)
    if search == "oracle":
        G, R = oracle(variant, directions, dim)
        kw.update(init=(G, R) if variant == "rg" else G, max_iter=0)
    elif search == "cv":
        kw.update(cv=CV_FOLDS, combine="bonferroni", starts=CV_STARTS[variant])
    elif search in ("moment", "pooled"):
        kw.update(cv=MOMENT_FOLDS, combine="bonferroni", starts=CV_STARTS[variant],
                  moment=True if search == "moment" else "pooled")
    else:
        kw["init"] = search
    return MaxSKSDTest(model, **kw)


def run_trial(seed, case, dim, cfg, methods):
    """One trial: draw the directions and the data, run every method on the same data."""
    data_seed, test_seed = spawn_seeds(np.random.SeedSequence(seed), 2)
    X, W = draw(case, dim, cfg["n_samples"], np.random.default_rng(data_seed))
    model = Gaussian(np.zeros(dim))
    return timed_outcomes(
        methods, lambda m: make_test(m, model, dim, cfg["n_bootstrap"], cfg["train_size"], W),
        X, test_seed)


def run(*, quick=False, n_trials=None, n_jobs=None, random_state=0, verbose="auto", cases=CASES,
        dims=None, methods=METHODS, n_samples=None):
    """Run the experiment; one row per (case, dim, method).

    ``n_samples`` replaces the sample size (the split tests then learn on a fifth).
    """
    cfg = run_config(QUICK, FULL, quick, n_trials, dims=dims)
    if n_samples is not None:
        cfg.update(n_samples=int(n_samples), train_size=0.2)
    settings = [(case, dim) for case in cases for dim in cfg["dims"]]
    roots = np.random.SeedSequence(random_state).spawn(len(settings))
    rows = []
    for (case, dim), root in zip(settings, roots):
        out = run_trials(run_trial, cfg["n_trials"], args=(case, dim, cfg, tuple(methods)),
                         random_state=root, n_jobs=n_jobs, verbose=verbose,
                         desc=f"{case} d={dim}")
        for method in methods:
            rows.append({
                "case": case, "dim": dim, "method": method, "n_samples": cfg["n_samples"],
                "n_trials": cfg["n_trials"],
                **timed_summary(out, method, "statistic"),
            })
    return rows


def plot(rows, path):
    """Rejection rate versus dimension per case, with binomial error bars."""
    cases = [c for c in CASES if any(r["case"] == c for r in rows)]
    fig, axes = panel_row(len(cases), 3.8, 3.6)
    if fig is None:
        return None
    styles = {"identity": ":", "auto": "-", "default": (0, (4, 2)), "cv": "-.",
              "moment": (0, (5, 1, 1, 1, 1, 1)), "pooled": (0, (1, 1)), "cv2": (0, (3, 1)),
              "oracle": "--"}
    for ax, case in zip(axes[0], cases):
        for method in dict.fromkeys(r["method"] for r in rows):
            sub = sorted((r for r in rows if r["case"] == case and r["method"] == method),
                         key=lambda r: r["dim"])
            if not sub:
                continue
            family = "C0" if "-g:" in method else "C3"
            color = {"KSD": "k", "polynomial": "C2", "polynomial-1,3": "C8"}.get(method,
                                                                                family)
            ls = "-" if ":" not in method else styles[method.split(":")[1]]
            ax.errorbar([r["dim"] for r in sub], [r["rejection_rate"] for r in sub],
                        yerr=[r["stderr"] for r in sub], color=color, ls=ls, marker="o",
                        ms=3, capsize=2, label=method)
        ax.set_title(case, fontsize="small")
        ax.set_xscale("log")
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("dimension")
        if case == "null":
            ax.axhline(0.05, color="grey", lw=0.8, ls="--")
    return finish_rate_panels(fig, axes, path, legend_size="xx-small")
