import pickle

import numpy as np
import pytest
from sklearn.base import clone

from skstein import SVGD, SlicedSVGD
from skstein._numba import numba_threads
from skstein._numba.svgd import sliced_svgd_terms, sliced_svgd_terms_tiled
from skstein.distributions import Gaussian
from skstein.flows import svgd_terms
from skstein.kernels import IMQ, RBF


def _particles(n=37, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * 1.5 + 0.3
    return X, -X + 0.2 * rng.standard_normal((n, d))


@pytest.mark.parametrize("kern", [RBF(1.3), IMQ(0.9), IMQ(1.5, beta=-0.3)], ids=repr)
def test_svgd_direction_equals_double_loop(kern):
    X, S = _particles()
    params = {"beta": kern.beta} if kern.name == "imq" else None
    drive, repulse = svgd_terms(X, S, kern.name, kern.bandwidth, params)
    n = X.shape[0]
    ref_d, ref_r = np.zeros_like(X), np.zeros_like(X)
    for i in range(n):
        for j in range(n):
            ref_d[i] += kern(X[j:j + 1], X[i:i + 1])[0, 0] * S[j]
            ref_r[i] += kern.grad_x(X[j:j + 1], X[i:i + 1])[0, 0]
    np.testing.assert_allclose(drive, ref_d, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(repulse, ref_r, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["rbf", "imq"])
def test_sliced_direction_equals_double_loop(kind):
    X, S = _particles(n=29, d=5)
    rng = np.random.default_rng(1)
    G = rng.standard_normal((5, 5))
    G /= np.linalg.norm(G, axis=1, keepdims=True)
    U = np.ascontiguousarray(X @ G.T)
    h = np.array([0.5, 1.0, 1.5, 2.0, 3.0])
    p0 = 1 / (2 * h * h) if kind == "rbf" else 1 / (h * h)
    code = 0 if kind == "rbf" else 1
    drive, repulse = np.empty_like(U), np.empty_like(U)
    sliced_svgd_terms(code, p0, -0.5, U, S, np.diag(G).copy(), drive, repulse)
    ref_d, ref_r = np.zeros_like(U), np.zeros_like(U)
    for d in range(5):
        k1d = RBF(h[d]) if kind == "rbf" else IMQ(h[d])
        for i in range(29):
            for j in range(29):
                a, b = U[j, d:d + 1][None], U[i, d:d + 1][None]
                ref_d[i, d] += k1d(a, b)[0, 0] * S[j, d]
                ref_r[i, d] += G[d, d] * k1d.grad_x(a, b)[0, 0, 0]
    np.testing.assert_allclose(drive, ref_d, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(repulse, ref_r, rtol=1e-10, atol=1e-12)
    with numba_threads(1):
        d1, r1 = np.empty_like(U), np.empty_like(U)
        sliced_svgd_terms(code, p0, -0.5, U, S, np.diag(G).copy(), d1, r1)
    assert np.array_equal(d1, drive) and np.array_equal(r1, repulse)
    # the tiled pass evaluates each pair once, in an order fixed by N: the same bits
    # for any number of threads and of slice ranges
    runs = []
    for threads, chunks in ((1, 1), (2, 1), (2, 2), (1, 3)):
        with numba_threads(threads):
            d2, r2 = np.empty_like(U), np.empty_like(U)
            sliced_svgd_terms_tiled(code, p0, -0.5, U, S, np.diag(G).copy(), d2, r2, chunks)
            runs.append((d2, r2))
    np.testing.assert_allclose(runs[0][0], ref_d, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(runs[0][1], ref_r, rtol=1e-10, atol=1e-12)
    for d2, r2 in runs[1:]:
        assert np.array_equal(d2, runs[0][0]) and np.array_equal(r2, runs[0][1])


def test_median_rules():
    X, S = _particles(n=30)
    d = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))[np.triu_indices(30, 1)]
    med = np.median(d)
    for rule, h in [("median", med), ("median-log", med / np.sqrt(2 * np.log(31)))]:
        a = svgd_terms(X, S, "rbf", rule)
        b = svgd_terms(X, S, "rbf", h)
        np.testing.assert_allclose(a[0], b[0], rtol=1e-8)
        np.testing.assert_allclose(a[1], b[1], rtol=1e-8)


@pytest.mark.parametrize("cls", [SVGD, SlicedSVGD])
def test_one_particle_is_gradient_ascent(cls):
    target = Gaussian(np.array([1.0, -2.0, 0.5]), np.array([0.5, 2.0, 1.0]))
    x = np.array([[3.0, 0.0, -1.0]])
    est = cls(target, n_iter=7, step_size=0.1, optimizer="sgd").fit(x)
    ref = x.copy()
    for _ in range(7):
        ref = ref + 0.1 * target.grad_logpdf(ref)
    np.testing.assert_allclose(est.particles_, ref, rtol=1e-12)


@pytest.mark.parametrize("cls", [SVGD, SlicedSVGD])
def test_recovers_a_gaussian_target_in_low_dimension(cls):
    target = Gaussian(np.array([1.0, -1.0]), np.array([0.5, 2.0]))
    est = cls(target, n_particles=100, n_iter=800, step_size=0.05, random_state=0).fit()
    P = est.particles_
    # stated tolerances: mean within 0.1, variances within 25 %
    np.testing.assert_allclose(P.mean(0), [1.0, -1.0], atol=0.1)
    np.testing.assert_allclose(P.var(0), [0.5, 2.0], rtol=0.25)
    assert est.n_iter_ == 800 and est.history_["iteration"][-1] == 799
    assert est.history_["discrepancy"][-1] < 0.1 * est.history_["discrepancy"][0]


def test_sliced_svgd_keeps_variance_where_svgd_collapses():
    d = 50
    target = Gaussian(np.zeros(d))
    X0 = np.random.default_rng(0).standard_normal((50, d)) * np.sqrt(2) + 2
    plain = SVGD(target, n_iter=500, step_size=0.05).fit(X0)
    sliced = SlicedSVGD(target, n_iter=500, step_size=0.05).fit(X0)
    assert plain.particles_.var(0).mean() < 0.5
    assert sliced.particles_.var(0).mean() > 0.7
    assert sliced.directions_.shape == (d, d)
    np.testing.assert_allclose(np.linalg.norm(sliced.directions_, axis=1), 1.0)


@pytest.mark.parametrize("cls", [SVGD, SlicedSVGD])
def test_reproducible_clone_pickle_and_move(cls):
    target = Gaussian(np.zeros(3))
    a = cls(target, n_particles=20, n_iter=30, random_state=4).fit()
    b = clone(a).fit()
    assert np.array_equal(a.particles_, b.particles_)
    c = pickle.loads(pickle.dumps(a))
    assert np.array_equal(c.particles_, a.particles_)
    X = np.random.default_rng(1).standard_normal((15, 3)) + 3
    moved = a.move(X, n_iter=10)
    assert moved.shape == X.shape and not np.allclose(moved, X)
    assert np.array_equal(a.particles_, b.particles_)  # state unchanged
    assert a.score(moved) > a.score(X)


@pytest.mark.parametrize("cls", [SVGD, SlicedSVGD])
def test_history_and_score_repeat_beyond_a_thousand_particles(cls):
    # the discrepancy's median bandwidth sees at most 1000 points: the same ones every
    # time (SVGD's drew them afresh from OS entropy, so its history and score differed
    # between two fits with the same random_state)
    target = Gaussian(np.zeros(3))
    X0 = np.random.default_rng(0).standard_normal((1200, 3))
    runs = [cls(target, n_iter=2, history_every=1, random_state=0).fit(X0)
            for _ in range(2)]
    assert np.array_equal(runs[0].history_["discrepancy"], runs[1].history_["discrepancy"])
    assert np.all(np.isfinite(runs[0].history_["discrepancy"]))
    assert runs[0].score(X0) == runs[1].score(X0) == runs[0].score(X0)


def test_validation_errors():
    target = Gaussian(np.zeros(2))
    X = np.zeros((5, 2))
    for kw, err, word in [
        (dict(step_size=-1.0), ValueError, "step_size"),
        (dict(n_iter=-1), ValueError, "n_iter"),
        (dict(optimizer="rmsprop"), ValueError, "optimizer"),
        (dict(kernel="laplace"), ValueError, "kernel"),
        (dict(bandwidth="scott"), ValueError, "bandwidth"),
        (dict(bandwidth=0.0), ValueError, "bandwidth"),
        (dict(history_every=0), ValueError, "history_every"),
        (dict(repulsion_warmup=-1), ValueError, "repulsion_warmup"),
        (dict(repulsion_warmup=2.5), TypeError, "repulsion_warmup"),
        (dict(step_scale="relative"), ValueError, "step_scale"),
    ]:
        with pytest.raises(err, match=word):
            SVGD(target, **kw).fit(X)
    with pytest.raises(ValueError, match="init_directions"):
        SlicedSVGD(target, init_directions=np.ones((3, 3))).fit(X)
    with pytest.raises(ValueError, match="X0"):
        SVGD(lambda Y: -Y).fit()
    with pytest.raises(ValueError, match="dimensions"):
        SVGD(target).fit(np.zeros((5, 3)))
    bad = X.copy()
    bad[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity|NaN"):
        SVGD(target).fit(bad)
    bad[0, 0] = -2e150  # finite, but where moved particles count as diverged
    with pytest.raises(ValueError, match="X0 has entries of magnitude 2e"):
        SVGD(target).fit(bad)
    with pytest.raises(ValueError, match="^X has entries of magnitude 2e"):
        SlicedSVGD(target, n_iter=1).fit(X + np.arange(5)[:, None]).move(bad)


@pytest.mark.parametrize("cls", [SVGD, SlicedSVGD])
def test_repulsion_warmup_weights_the_repulsive_term(cls):
    X0, _ = _particles(n=20, d=3)
    target = Gaussian(np.zeros(3))

    def step(warmup, n_iter=1):
        kw = {"slice_update_every": 0} if cls is SlicedSVGD else {}
        est = cls(target, n_iter=n_iter, optimizer="sgd", step_size=0.1,
                  repulsion_warmup=warmup, **kw).fit(X0)
        return est.particles_ - X0

    full, half, none = step(0), step(2), step(10**9)
    # one step of (drive + w repulse) / N: linear in the weight w = (t + 1) / warmup
    np.testing.assert_allclose(half, 0.5 * (full + none), rtol=1e-6, atol=1e-10)
    assert not np.allclose(full, none, atol=1e-3)
    # after the warm-up the full term: warmup=1 is no warm-up at all
    np.testing.assert_array_equal(step(1, n_iter=3), step(0, n_iter=3))


@pytest.mark.parametrize("cls, slices", [(SVGD, None), (SlicedSVGD, "axes"),
                                         (SlicedSVGD, "auto"), (SlicedSVGD, "score")])
def test_fit_calls_the_score_once_per_iteration(cls, slices):
    # a mini-batch score advances its stream at each call: no call may be wasted
    calls = []

    def score(X):
        calls.append(X.shape)
        return -X

    kw = {"slices": slices} if slices else {}
    cls(score, n_iter=7, **kw).fit(_particles(n=10, d=3)[0])
    assert len(calls) == 7


def test_sliced_svgd_variance_is_stable_over_a_long_run():
    # N(0, I_8), particles from N(2, 2I): with gated direction updates the variance
    # settles and stays, and the directions stop moving once the particles have
    d, n = 8, 40
    X0 = 2.0 + np.sqrt(2.0) * np.random.default_rng(0).standard_normal((n, d))
    est = SlicedSVGD(Gaussian(np.zeros(d)), n_iter=2000, step_size=0.05,
                     history_every=100).fit(X0)
    var = est.history_["variance"]
    it = est.history_["iteration"]
    late = var[(it >= 1000)]
    assert np.all(np.abs(late - 1.0) < 0.15), late
    assert abs(var[-1] - late[0]) / late[0] < 0.02
    assert est.n_direction_updates_ < 200 // 4  # checks every 10 iterations: few fire
    ungated = SlicedSVGD(Gaussian(np.zeros(d)), n_iter=2000, step_size=0.05,
                         slice_update_tol=0.0, history_every=100).fit(X0)
    assert ungated.n_direction_updates_ == 200
    with pytest.raises(ValueError, match="slice_update_tol"):
        SlicedSVGD(Gaussian(np.zeros(d)), slice_update_tol=-1.0).fit(X0)


def test_sliced_particles_keep_the_conditional_variances_of_a_bend():
    # the banana part of svgd-variance: sliced SVGD's 1-D kernels leave the bent pair
    # near its conditional variances, where SVGD's full kernel spreads it in 2-D
    # (quick run: 50 particles, 200 iterations; full runs in the module docstring)
    from skstein.experiments import svgd_variance

    rows = svgd_variance.run(quick=True, parts=("banana",), n_jobs=1, verbose=False,
                             random_state=4)
    by = {r["method"]: r for r in rows}
    assert set(by) == set(svgd_variance.BANANA_METHODS) and {r["dim"] for r in rows} == {2}
    ratio = {m: np.array(r["variance_ratio_bent"].split(), dtype=float) for m, r in by.items()}
    assert np.all(ratio["SlicedSVGD:auto"] < 0.65) and np.all(ratio["SVGD"] > 0.6)
    assert by["SVGD"]["energy"] < 0.5 * by["SlicedSVGD:auto"]["energy"]
    assert all(np.isfinite(r["energy_iid"]) and r["energy_iid"] > 0 for r in rows)


def _ar1(dim, rho=0.9):
    idx = np.arange(dim)
    return rho ** np.abs(idx[:, None] - idx[None, :])


def test_score_frame_is_the_principal_axes_for_isotropic_particles():
    from skstein.svgd import score_frame

    cov = _ar1(6)
    target = Gaussian(np.zeros(6), cov)
    X = np.random.default_rng(0).standard_normal((400, 6))
    X -= X.mean(axis=0)
    X = X @ np.linalg.inv(np.linalg.cholesky(np.cov(X.T))).T  # sample covariance exactly I
    R = score_frame(target.grad_logpdf(X))
    np.testing.assert_allclose(R @ R.T, np.eye(6), atol=1e-12)
    # each row is an eigenvector of Sigma (score covariance Sigma^-2), largest score
    # variance (smallest eigenvalue of Sigma) first
    w = np.linalg.eigvalsh(cov)
    np.testing.assert_allclose(np.einsum("ij,jk,ik->i", R, cov, R), w, rtol=1e-9)
    np.testing.assert_allclose(R @ cov @ R.T, np.diag(w), atol=1e-9)


@pytest.mark.parametrize("optimizer", ["sgd", "adagrad", "adam"])
def test_sliced_svgd_with_slices_is_the_axis_algorithm_in_rotated_coordinates(optimizer):
    # fixed directions: particles agree to rounding, whatever the step rule (AdaGrad's
    # and Adam's per-coordinate scales act along the slices)
    dim = 5
    rng = np.random.default_rng(3)
    Q = np.linalg.qr(rng.standard_normal((dim, dim)))[0].T
    cov = _ar1(dim, 0.7)
    X0 = rng.standard_normal((30, dim))
    kw = dict(n_iter=40, optimizer=optimizer, step_size=0.05, slice_update_every=0)
    a = SlicedSVGD(Gaussian(np.zeros(dim), cov), slices=Q, **kw).fit(X0)
    b = SlicedSVGD(Gaussian(np.zeros(dim), Q @ cov @ Q.T), slices="axes", **kw).fit(X0 @ Q.T)
    np.testing.assert_allclose(a.particles_, b.particles_ @ Q, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(a.directions_, Q)
    np.testing.assert_array_equal(a.slices_, Q)
    # the identity as an array is slices="axes"
    c = SlicedSVGD(Gaussian(np.zeros(dim), cov), slices=np.eye(dim), **kw).fit(X0)
    d = SlicedSVGD(Gaussian(np.zeros(dim), cov), slices="axes", **kw).fit(X0)
    np.testing.assert_array_equal(c.particles_, d.particles_)


def test_score_slices_spread_a_correlated_target():
    # along the axes the marginal variances settle near the conditional ones
    # (1 - rho^2)/(1 + rho^2) ~ 0.1; in the score frame near the target's
    dim = 10
    cov = _ar1(dim)
    target = Gaussian(np.zeros(dim), cov)
    X0 = np.random.default_rng(1).standard_normal((60, dim))
    ratios = {}
    for slices in ("axes", "score"):
        est = SlicedSVGD(target, n_iter=1500, slices=slices, random_state=0).fit(X0)
        ratios[slices] = float(np.mean(np.var(est.particles_, axis=0, ddof=1)))
    assert ratios["axes"] < 0.4
    assert 0.75 < ratios["score"] < 1.25


@pytest.mark.parametrize("dim,n", [(2, 50), (20, 50), (60, 40)])
def test_scores_correlated_only_for_dependent_components(dim, n):
    from skstein.svgd import scores_correlated

    rng = np.random.default_rng(dim)
    # independent components (Gaussian and Laplace scores): never called correlated
    calls = [scores_correlated(-rng.standard_normal((n, dim))) for _ in range(10)]
    calls += [scores_correlated(-np.sign(rng.standard_normal((n, dim)))) for _ in range(10)]
    assert not any(calls)
    # an AR(1) target's scores at isotropic particles: correlated from rho = 0.3
    X = rng.standard_normal((n, dim))
    assert scores_correlated(-X @ np.linalg.inv(_ar1(dim, 0.3)))
    # constant, non-finite and too few columns or rows are not evidence
    S = -rng.standard_normal((n, dim))
    S[:, 0] = 1.0
    S[0, 1] = np.nan
    assert not scores_correlated(S)
    assert not scores_correlated(S[:2]) and not scores_correlated(S[:, :1])


def test_auto_slices_choose_the_axes_or_the_score_frame():
    from skstein.svgd import score_frame

    X0 = np.random.default_rng(2).standard_normal((50, 8))
    kw = dict(n_iter=3, random_state=0)
    flat = SlicedSVGD(Gaussian(np.zeros(8)), **kw).fit(X0)
    np.testing.assert_array_equal(flat.slices_, np.eye(8))
    target = Gaussian(np.zeros(8), _ar1(8))
    corr = SlicedSVGD(target, **kw).fit(X0)
    np.testing.assert_array_equal(corr.slices_, score_frame(target.grad_logpdf(X0)))
    same = SlicedSVGD(target, slices="score", **kw).fit(X0)
    np.testing.assert_array_equal(corr.particles_, same.particles_)
    # no more particles than dimensions: the score covariance is singular, axes kept
    few = SlicedSVGD(target, **kw).fit(X0[:8])
    np.testing.assert_array_equal(few.slices_, np.eye(8))


def test_slices_validation():
    target = Gaussian(np.zeros(3))
    with pytest.raises(ValueError, match="slices"):
        SlicedSVGD(target, slices="eigen", n_iter=2).fit(np.zeros((4, 3)) + np.arange(3))
    with pytest.raises(ValueError, match="slices"):
        SlicedSVGD(target, slices=np.ones((3, 3)), n_iter=2).fit(
            np.random.default_rng(0).standard_normal((4, 3)))
    with pytest.raises(ValueError, match="slices"):
        SlicedSVGD(target, slices=np.eye(2), n_iter=2).fit(
            np.random.default_rng(0).standard_normal((4, 3)))


@pytest.mark.parametrize("cls", [SVGD, SlicedSVGD])
def test_repeated_initial_particles_warn_and_still_run(cls):
    G = Gaussian(np.zeros(2))
    X0 = np.full((20, 2), 3.0)
    # an explicit bandwidth once raised the median heuristic's error from the history
    with pytest.warns(UserWarning, match="19 repeated row"):
        est = cls(G, n_iter=20, bandwidth=1.0, random_state=0).fit(X0)
    # SVGD's diagnostic uses the median heuristic: undefined here, not an error
    disc = est.history_["discrepancy"]
    assert np.all(np.isnan(disc)) if cls is SVGD else np.all(np.isfinite(disc))
    if cls is SVGD:  # while score, asked for the value, says why there is none
        with pytest.raises(ValueError, match="coincide"):
            est.score(X0)
    np.testing.assert_allclose(est.particles_, est.particles_[0:1].repeat(20, axis=0))
    X = np.random.default_rng(0).standard_normal((10, 2))
    with pytest.warns(UserWarning, match="X has 1 repeated row"):
        est.move(np.vstack([X, X[:1]]))


def test_diverging_particles_blame_the_step():
    X0 = np.random.default_rng(0).standard_normal((50, 2))
    # the particles grow tenfold per step; they were reported as an overflow of X
    with pytest.raises(ValueError, match="diverged at iteration .*step_size=1000000.0"):
        SVGD(Gaussian(np.zeros(2)), n_iter=100, step_size=1e6, optimizer="sgd").fit(X0)


@pytest.mark.parametrize("kind", ["rbf", "imq"])
def test_svgd_field_is_the_same_bits_for_any_thread_count(kind):
    from threadpoolctl import threadpool_limits

    from skstein._numba.svgd import SVGD_BLOCK, svgd_field, svgd_field_serial

    # 400 particles: above the serial threshold and the direct-median size (the
    # bracketed median runs)
    X, S = _particles(n=400, d=7, seed=2)
    code = 0 if kind == "rbf" else 1
    outs = []
    for numba_n, blas_n in [(1, 1), (2, 2), (2, 1)]:
        with numba_threads(numba_n), threadpool_limits(blas_n):
            for field in (svgd_field, svgd_field_serial):
                bufs = (np.empty_like(X), np.empty(400), np.ones(400), np.empty((400, 400)),
                        np.empty_like(X), np.empty_like(X))
                extra = () if field is svgd_field else (SVGD_BLOCK,)
                h, bad = field(code, -0.5, 0.7, 0.0, X, S, *bufs, *extra)
                outs.append((h, bufs[4], bufs[5]))
    # the BLAS limit above is overridden by the flow's own (one thread per block)
    with numba_threads(2), threadpool_limits(2):
        est = [SVGD(Gaussian(np.zeros(7)), kernel=kind, n_iter=5).fit(X) for _ in range(2)]
    with numba_threads(1):
        est.append(SVGD(Gaussian(np.zeros(7)), kernel=kind, n_iter=5).fit(X))
    for h, drive, repulse in outs[1:]:
        assert h == outs[0][0]
        assert np.array_equal(drive, outs[0][1]) and np.array_equal(repulse, outs[0][2])
    assert all(np.array_equal(e.particles_, est[0].particles_) for e in est[1:])
    # the bracketed median is the median of all pairs (mean of the two middle ones)
    t = ((X[:, None] - X[None]) ** 2).sum(-1)[np.triu_indices(400, 1)]
    np.testing.assert_allclose(outs[0][0], 0.7 * np.sqrt(np.median(t)), rtol=1e-14)


def test_svgd_checks_the_scores_at_every_iteration():
    calls = []

    def score(Y):
        calls.append(1)
        S = -Y
        if len(calls) == 3:
            S[2, 1] = np.nan
        return S

    X0 = np.random.default_rng(0).standard_normal((20, 3))
    with pytest.raises(ValueError, match="not finite at 1 of the 20 rows"):
        SVGD(score, n_iter=5).fit(X0)
    calls.clear()
    with pytest.raises(ValueError, match="shape"):
        SVGD(lambda Y: -Y[:, :2] if calls.append(1) or len(calls) > 2 else -Y,
             n_iter=5).fit(X0)


@pytest.mark.parametrize("layout", ["sorted", "clusters", "duplicated", "alternating"])
def test_bracketed_median_is_the_median_of_all_pairs_on_structured_rows(layout):
    from skstein._numba.svgd import svgd_field

    rng = np.random.default_rng(5)
    n, d = 500, 3
    X = rng.standard_normal((n, d))
    if layout == "sorted":
        X = X[np.argsort(X[:, 0])]
    elif layout == "clusters":
        X[: n // 2] += 8.0
    elif layout == "duplicated":
        X[n // 2:] = X[: n // 2]
    else:
        X[::2] *= 10.0
    S = -X
    bufs = (np.empty_like(X), np.empty(n), np.ones(n), np.empty((n, n)),
            np.empty_like(X), np.empty_like(X))
    h, bad = svgd_field(0, -0.5, 1.0, 0.0, np.ascontiguousarray(X), S, *bufs)
    t = ((X[:, None] - X[None]) ** 2).sum(-1)[np.triu_indices(n, 1)]
    med = np.median(t)
    if med == 0:
        med = np.median(t[t > 0])
    assert bad == 0
    np.testing.assert_allclose(h, np.sqrt(med), rtol=1e-14)


def _ill_conditioned(dim, condition, seed):
    Q = np.linalg.qr(np.random.default_rng(seed).standard_normal((dim, dim)))[0]
    return Q @ np.diag(np.logspace(0, np.log10(condition), dim)) @ Q.T


def test_whitened_svgd_is_affine_equivariant_with_sgd():
    # x' = x M^T + b, target and start moved alike: the whitened particles move alike
    # (the whitened coordinates differ by a rotation, which a radial kernel ignores)
    rng = np.random.default_rng(20)
    cov = _ill_conditioned(4, 100.0, 21)
    X0 = rng.standard_normal((40, 4))
    M, b = rng.standard_normal((4, 4)) + 3 * np.eye(4), rng.standard_normal(4)
    kw = dict(whiten=True, optimizer="sgd", step_size=0.3, n_iter=50)
    a = SVGD(Gaussian(np.ones(4), cov), **kw).fit(X0).particles_
    moved = SVGD(Gaussian(M @ np.ones(4) + b, M @ cov @ M.T), **kw).fit(X0 @ M.T + b)
    np.testing.assert_allclose(moved.particles_, a @ M.T + b, rtol=1e-7, atol=1e-7)


def test_whitened_svgd_spreads_an_ill_conditioned_target_as_an_isotropic_one():
    # condition number 1e4 in 5 dimensions, 100 particles: the plain kernel collapses
    # the narrow directions; whitened, the variance ratios are those of an isotropic
    # target (SVGD's own shortfall at this N and D)
    dim, cov = 5, _ill_conditioned(5, 1e4, 22)

    def ratios(target_cov, whiten):
        X = SVGD(Gaussian(np.zeros(dim), target_cov), n_particles=100, n_iter=500,
                 whiten=whiten, random_state=0).fit().particles_
        W = np.linalg.inv(np.linalg.cholesky(target_cov))
        return np.linalg.eigvalsh(W @ np.cov(X.T) @ W.T)

    iso = ratios(np.eye(dim), False)
    whitened, plain = ratios(cov, True), ratios(cov, False)
    assert plain.min() < 0.3 * iso.min()
    assert whitened.min() > 0.8 * iso.min() and whitened.max() < 1.25 * iso.max()


def test_whitened_direction_is_the_sgd_step_and_bad_input_is_refused():
    rng = np.random.default_rng(23)
    target = Gaussian(np.zeros(3), _ill_conditioned(3, 50.0, 24))
    X0 = rng.standard_normal((30, 3))
    svgd = SVGD(target, whiten=True, optimizer="sgd", step_size=0.2, n_iter=1)
    np.testing.assert_allclose(svgd.fit(X0).particles_, X0 + 0.2 * svgd.direction(X0),
                               rtol=1e-12, atol=1e-12)
    precision = np.linalg.inv(target.cov)

    def score(Z):  # a batch of sets in, a batch out
        return -Z @ precision

    batch = np.stack([X0, X0[::-1] * 2.0])
    np.testing.assert_allclose(svgd.direction(batch, score)[1],
                               svgd.direction(X0[::-1] * 2.0, score), rtol=1e-12)
    with pytest.raises(ValueError, match="more particles than dimensions.*3 particles in 3"):
        SVGD(target, whiten=True, n_iter=2).fit(X0[:3])
    with pytest.raises(ValueError, match="all coincide"):
        SVGD(target, whiten=True, n_iter=2).fit(np.ones((10, 3)))
    flat = X0.copy()
    flat[:, 2] = flat[:, 0] + flat[:, 1]  # particles in a plane of the 3-D space
    with pytest.raises(ValueError, match="spread in every direction"):
        SVGD(target, whiten=True, n_iter=2).fit(flat)
    with pytest.raises((TypeError, ValueError), match="whiten"):
        SVGD(target, whiten="yes").fit(X0)


@pytest.mark.parametrize("optimizer", ["sgd", "adagrad", "adam"])
@pytest.mark.parametrize("cls", [SVGD, SlicedSVGD])
def test_spread_step_is_scale_equivariant(cls, optimizer):
    # step_scale="spread": a target and particles rescaled by s give the particles
    # rescaled by s, whatever the step rule (with "absolute" they do not: the steps of
    # AdaGrad and Adam are step_size long in every coordinate)
    rng = np.random.default_rng(4)
    X0 = rng.standard_normal((30, 3)) + 0.5
    kw = dict(n_iter=25, optimizer=optimizer, step_size=0.05 if optimizer == "sgd" else 0.1)
    if cls is SVGD:  # one bandwidth for all coordinates: equivariant under one scale
        scales = np.full(3, 30.0 if optimizer == "sgd" else 1e-2)
    else:  # one kernel per coordinate, fixed directions: a scale per coordinate
        scales = np.array([1e-2, 1.0, 30.0 if optimizer == "sgd" else 0.1])
        kw.update(slices="axes", slice_update_every=0)
    a = cls(Gaussian(np.zeros(3)), step_scale="spread", **kw).fit(X0).particles_
    b = cls(Gaussian(np.zeros(3), scales**2), step_scale="spread", **kw).fit(
        X0 * scales).particles_
    # to rounding with SGD; AdaGrad's and Adam's guards against a zero division (1e-6
    # and 1e-8 added to the field's magnitude, which scales as 1 / s) move steps
    # where the field is small at unit scale (1.4e-4 here) by up to 1e-6 / 1.4e-4
    np.testing.assert_allclose(b / scales, a, rtol=1e-9 if optimizer == "sgd" else 0,
                               atol=1e-12 if optimizer == "sgd" else 1e-3)
    c = cls(Gaussian(np.zeros(3), scales**2), **kw).fit(X0 * scales).particles_
    if optimizer != "sgd":
        assert np.max(np.abs(c / scales - a)) > 0.1
    # on a unit-scale start the first step is that of "absolute" times the spread
    one = dict(kw, n_iter=1)
    d = cls(Gaussian(np.zeros(3)), step_scale="spread", **one).fit(X0).particles_
    e = cls(Gaussian(np.zeros(3)), **one).fit(X0).particles_
    sd = X0.std(axis=0, ddof=1)
    factor = sd * sd if optimizer == "sgd" else sd
    np.testing.assert_allclose(d - X0, (e - X0) * factor, rtol=1e-9, atol=1e-14)


def test_spread_step_refuses_particles_it_cannot_move():
    target = Gaussian(np.zeros(3))
    X0 = np.random.default_rng(0).standard_normal((10, 3))
    flat = X0.copy()
    flat[:, 1] = 0.5
    for cls in (SVGD, SlicedSVGD):
        with pytest.raises(ValueError, match="step_scale='spread'.*coordinate 1"):
            cls(target, step_scale="spread", slices="axes", n_iter=2).fit(flat) \
                if cls is SlicedSVGD else cls(target, step_scale="spread", n_iter=2).fit(flat)
        with pytest.raises(ValueError, match="at least 2 particles"):
            cls(target, step_scale="spread", n_iter=2).fit(X0[:1])
    cls(target, step_scale="spread", n_iter=0).fit(flat)  # no step: nothing to refuse
