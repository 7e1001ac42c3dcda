"""Smoke tests of the maxSKSD reproductions (tiny settings)."""

import numpy as np

import pytest

from skstein.experiments import EXPERIMENTS, gof_gaussian, gof_mixture, gof_rbm, gof_sds, reproduce
from skstein.experiments._baselines import BASELINES, PAPER_BASELINES


def test_registered():
    assert {"gof-gaussian", "gof-rbm", "gof-rbm-streaming", "gof-sds",
            "gof-rotated", "gof-mixture"} <= set(EXPERIMENTS)
    own = ("KSD", "KSD-agg", "maxSKSD-g", "maxSKSD-rg")
    assert gof_gaussian.OWN_METHODS == gof_rbm.OWN_METHODS == own
    # the paper's method set by default: ours and every baseline of Figures 3 and 4
    assert gof_gaussian.methods() == gof_rbm.METHODS == own + PAPER_BASELINES
    assert set(PAPER_BASELINES) == set(BASELINES) - {"LinearKSD"}


def test_gof_sds_rows():
    rows = gof_sds.run(quick=True, n_trials=1, n_jobs=1, methods=("maxSKSD-g",))
    assert {r["kind"] for r in rows} == {"mean", "variance"}
    assert all(0.0 <= r["rejection_rate"] <= 1.0 for r in rows)


def test_gof_mixture_rows_and_cases():
    for case in gof_mixture.CASES:
        model, data = gof_mixture.setting(case, "h1")
        assert model.dim == data.dim and not np.allclose(model.weights, data.weights)
        np.testing.assert_array_equal(model.means, data.means)
        null_model, null_data = gof_mixture.setting(case, "h0")
        assert null_data is null_model
    rows = gof_mixture.run(quick=True, n_trials=1, n_jobs=1, methods=("perturbed KSD",))
    assert [(r["case"], r["hypothesis"], r["n_samples"]) for r in rows] == [
        (c, h, n) for c in gof_mixture.CASES for h, n in (("h1", 400), ("h0", 200))]
    assert all(r["median_seconds"] > 0 for r in rows)
    with pytest.raises(ValueError, match="case must be one of"):
        gof_mixture.setting("2d", "h1")


def test_gof_rbm_rows_and_pair():
    p, q = gof_rbm.rbm_pair(0.0, 5, 3, seed=0, burn_in=10)
    np.testing.assert_array_equal(p.B, q.B)
    p, q = gof_rbm.rbm_pair(0.1, 5, 3, seed=0, burn_in=10)
    assert not np.array_equal(p.B, q.B)
    rows = gof_rbm.run(quick=True, n_trials=1, n_jobs=1, sigmas=(0.02,),
                       methods=("KSD", "maxSKSD-rg"), protocol="streaming")
    assert [r["method"] for r in rows] == ["KSD", "maxSKSD-rg"]
    assert [r["n_samples"] for r in rows] == [400, 320]
    methods = gof_rbm.OWN_METHODS + ("FSSD-rand", "MMD")
    rows = gof_rbm.run(quick=True, n_trials=1, n_jobs=1, sigmas=(0.02,), methods=methods)
    assert [r["method"] for r in rows] == list(methods)
    assert [r["n_samples"] for r in rows] == [400, 400, 320, 320, 400, 400]
    assert all(r["median_seconds"] > 0 for r in rows)
    assert {r["protocol"] for r in rows} == {"standard"}


def test_gof_rbm_paper_pair():
    # one pair for every trial; every sigma perturbs B along the same direction E
    p1, q1 = gof_rbm.paper_rbm_pair(0.01, 50, 40, burn_in=10)
    p2, q2 = gof_rbm.paper_rbm_pair(0.02, 50, 40, burn_in=10)
    p0, q0 = gof_rbm.paper_rbm_pair(0.0, 50, 40, burn_in=10)
    np.testing.assert_array_equal(p1.B, p2.B)
    np.testing.assert_array_equal(p0.B, q0.B)
    assert set(np.unique(p1.B)) == {-1.0, 1.0}
    np.testing.assert_allclose((q2.B - p2.B) / 0.02, (q1.B - p1.B) / 0.01, atol=1e-10)
    assert np.std((q1.B - p1.B) / 0.01) > 0.8
    cfg = dict(gof_rbm.QUICK, dx=6, dh=3, n_samples=40, n_test=30, burn_in=10,
               train_chains=20, train_steps=5, n_bootstrap=50, rbm="paper")
    a = gof_rbm.run_trial(0, 0.0, cfg, ("KSD",))
    b = gof_rbm.run_trial(1, 0.0, cfg, ("KSD",))
    assert a["KSD"][1] != b["KSD"][1]  # the samples change between trials
    rows = gof_rbm.run(quick=True, n_trials=1, n_jobs=1, sigmas=(0.02,), methods=("KSD",),
                       rbm="paper")
    assert rows[0]["rbm"] == "paper"
    # KSDAgg's pair: another fixed draw, with the same structure
    k1, kq = gof_rbm.ksdagg_rbm_pair(0.01, 50, 40, burn_in=10)
    assert set(np.unique(k1.B)) == {-1.0, 1.0} and not np.array_equal(k1.B, p1.B)
    np.testing.assert_array_equal(k1.B, gof_rbm.ksdagg_rbm_pair(0.02, 50, 40, burn_in=10)[0].B)
    assert 0.005 < np.std(kq.B - k1.B) < 0.02
    with pytest.raises(ValueError, match="rbm"):
        gof_rbm.run(quick=True, n_trials=1, rbm="random")


def test_gof_rbm_trains_on_burn_in_states():
    # a trial with all three methods (directions trained on Gibbs burn-in states)
    cfg = dict(gof_rbm.QUICK, dx=6, dh=3, n_samples=60, n_test=40, burn_in=20,
               train_chains=30, train_steps=15, n_bootstrap=50)
    methods = gof_rbm.STREAMING_METHODS
    out = gof_rbm.run_trial(0, 0.5, cfg, methods, "streaming")
    again = gof_rbm.run_trial(0, 0.5, cfg, methods, "streaming")
    assert set(out) == set(methods)
    # same seed, same decisions and statistics (the third entry is a time)
    assert all(out[m][:2] == again[m][:2] for m in out)
    p, _ = gof_rbm.rbm_pair(0.5, 6, 3, seed=0, burn_in=20)
    test = gof_rbm.make_test("maxSKSD-rg", p, 50, "streaming")
    assert test.orthogonal_slices is False and test.n_slices == 6
    assert test.test_bandwidth == "aggregate"
    standard = gof_rbm.make_test("maxSKSD-rg", p, 50)
    assert standard.init == "auto" and standard.train_size == gof_rbm.FULL["train_size"]


def test_gof_gaussian_paired_methods(monkeypatch):
    rows = gof_gaussian.run(quick=True, n_trials=2, n_jobs=1, cases=("laplace",), dims=(2,))
    assert [r["method"] for r in rows] == list(gof_gaussian.methods())
    # every method of a setting gets the same trial seeds (the same data sets); the
    # seeds differ between settings

    def seed_as_statistic(seed, case, dim, method, n_samples, n_bootstrap):
        return {"reject": False, "pvalue": 1.0, "statistic": float(seed % 10**6), "seconds": 0.0}

    monkeypatch.setattr(gof_gaussian, "run_trial", seed_as_statistic)
    rows = gof_gaussian.run(quick=True, n_trials=3, n_jobs=1, cases=("null", "laplace"),
                            dims=(2,), methods=("KSD", "FSSD-rand", "MMD"))
    by_case = {}
    for r in rows:
        by_case.setdefault(r["case"], set()).add(r["mean_discrepancy"])
    assert all(len(v) == 1 for v in by_case.values()) and len(set.union(*by_case.values())) == 2


def test_spawn_seeds_do_not_advance_a_root():
    from skstein._random import spawn_seeds
    from skstein.experiments import run_trials

    root = np.random.SeedSequence(3).spawn(1)[0]
    first = spawn_seeds(root, 4)
    assert spawn_seeds(root, 4) == first and spawn_seeds(root, 2) == first[:2]
    assert run_trials(int, 4, random_state=root, n_jobs=1) == first
    fresh = np.random.SeedSequence(3).spawn(1)[0].spawn(4)  # SeedSequence.spawn's children
    assert first == [int(c.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1)) for c in fresh]


def test_gof_gaussian_method_selection(tmp_path):
    rows = gof_gaussian.run(quick=True, n_trials=2, n_jobs=1, cases=("null",), dims=(3,),
                            methods=("LinearKSD", "KSD"))
    assert [r["method"] for r in rows] == ["LinearKSD", "KSD"]
    with pytest.raises(ValueError, match="methods"):
        gof_gaussian.run(quick=True, n_trials=1, n_jobs=1, methods=("KSD", "nope"))
    with pytest.raises(ValueError, match="methods"):
        gof_rbm.run(quick=True, n_trials=1, n_jobs=1, methods=("nope",))
    rows, csv_path, _, _ = reproduce("gof-gaussian", out_dir=tmp_path, quick=True, n_trials=1,
                                     n_jobs=1, methods=["RFF-Gauss"])
    assert {r["method"] for r in rows} == {"RFF-Gauss"}
    assert "median_seconds" in open(csv_path).readline()
    with pytest.raises(ValueError, match="methods"):
        reproduce("svgd-variance", out_dir=tmp_path, quick=True, methods=["SVGD"])


def test_gof_rotated_cases_and_cross_fitted_methods():
    from skstein.experiments import gof_rotated

    rng = np.random.default_rng(0)
    X, v = gof_rotated.draw("rotated-variance", 4, 20000, rng)
    assert v.shape == (1, 4)
    assert v[0] @ np.cov(X.T) @ v[0] == pytest.approx(1.6, abs=0.05)  # variance 1.6 along v
    model = gof_rotated.Gaussian(np.zeros(4))
    test = gof_rotated.make_test("maxSKSD-rg:cv", model, 4, 100, 0.2)
    assert test.cv == gof_rotated.CV_FOLDS and test.starts == gof_rotated.CV_STARTS["rg"]
    # cv2: two folds, the pooled moments and the library's starts; the searches on
    # one split name it, so that they keep their meaning whatever the defaults
    cv2 = gof_rotated.make_test("maxSKSD-g:cv2", model, 4, 100, 0.2)
    assert (cv2.cv, cv2.moment, cv2.starts, cv2.init) == (2, "pooled", None, "auto")
    auto = gof_rotated.make_test("maxSKSD-g:auto", model, 4, 100, 0.2)
    assert (auto.cv, auto.moment, auto.init) == (None, False, "auto")
    # default: the library's defaults, with the experiment's sizes, in the data's
    # coordinates (as the reported rates were measured)
    default = gof_rotated.make_test("maxSKSD-rg:default", model, 4, 100, 0.2)
    defaults = gof_rotated.MaxSKSDTest(model).get_params()
    assert default.get_params() == dict(defaults, variant="rg", n_slices=4, n_bootstrap=100,
                                        train_size=0.2, whiten=False)
    rows = gof_rotated.run(quick=True, n_trials=1, n_jobs=1, cases=("rotated-variance",),
                           methods=("maxSKSD-g:cv", "maxSKSD-rg:auto"), n_samples=200)
    assert [r["method"] for r in rows] == ["maxSKSD-g:cv", "maxSKSD-rg:auto"]
    assert all(r["n_samples"] == 200 for r in rows)


def test_gof_rotated_t5_case_polynomial_method_and_plot_of_every_method(tmp_path):
    pytest.importorskip("matplotlib")
    from skstein.experiments import gof_rotated

    rng = np.random.default_rng(1)
    X, v = gof_rotated.draw("rotated-t5", 5, 100000, rng)
    proj = X @ v[0]
    kurt = np.mean(proj**4) / np.mean(proj**2) ** 2
    assert np.var(proj) == pytest.approx(1.0, abs=0.05) and kurt > 5.0  # t(5): kurtosis 9
    other = X @ np.linalg.qr(np.column_stack([v[0], rng.standard_normal((5, 4))]))[0][:, 1]
    assert np.mean(other**4) == pytest.approx(3.0, abs=0.1)  # Gaussian across v
    model = gof_rotated.Gaussian(np.zeros(5))
    assert isinstance(gof_rotated.make_test("polynomial", model, 5, 100, 0.2),
                      gof_rotated.PolynomialKSDTest)
    assert gof_rotated.make_test("polynomial-1,3", model, 5, 100, 0.2).degree == (1, 3)
    # every method has a line style (the default methods had none: the plot failed)
    rows = [{"case": "null", "dim": d, "method": m, "rejection_rate": 0.05, "stderr": 0.02}
            for m in gof_rotated.METHODS for d in (10, 20)]
    assert gof_rotated.plot(rows, str(tmp_path / "rotated.png")) is not None
