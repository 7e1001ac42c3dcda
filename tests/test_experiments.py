import os
import subprocess
import sys

import numpy as np
import pytest

from skstein import KSDTest
from skstein.cli import main
from skstein.distributions import Gaussian, Laplace
from skstein.experiments import rejection_rate, reproduce, run_trials


def _trial(seed, scale):
    rng = np.random.default_rng(seed)
    return float(rng.standard_normal() * scale)


def test_run_trials_same_numbers_for_any_n_jobs():
    a = run_trials(_trial, 12, args=(2.0,), random_state=5, n_jobs=1)
    b = run_trials(_trial, 12, args=(2.0,), random_state=5, n_jobs=2)
    c = run_trials(_trial, 12, args=(2.0,), random_state=6, n_jobs=1)
    assert a == b and a != c
    # trial k does not depend on how many trials are run
    assert run_trials(_trial, 5, args=(2.0,), random_state=5, n_jobs=1) == a[:5]


@pytest.mark.parametrize("n_trials", [1, 3, 7, 13])
@pytest.mark.parametrize("chunks_per_worker", [0, 1, 2, 5])
def test_trials_in_chunks_keep_their_order(monkeypatch, n_trials, chunks_per_worker):
    # the trials of a setting go to the workers in chunks of unequal sizes (or one
    # task per trial with 0): the results come back in seed order all the same
    import skstein.experiments._runner as runner

    want = run_trials(_trial, n_trials, args=(1.5,), random_state=2, n_jobs=1)
    monkeypatch.setattr(runner, "CHUNKS_PER_WORKER", chunks_per_worker)
    chunks = runner._chunks(n_trials, 2)
    assert chunks[0][0] == 0 and chunks[-1][1] == n_trials
    assert all(a < b for a, b in chunks)
    assert all(b == a2 for (_, b), (a2, _) in zip(chunks, chunks[1:]))
    got = run_trials(_trial, n_trials, args=(1.5,), random_state=2, n_jobs=2, verbose=False)
    assert got == want


def test_rejection_rate_reproducible_across_n_jobs():
    model = Gaussian(np.zeros(2))
    test = KSDTest(model, n_bootstrap=100)
    a = rejection_rate(test, Laplace(2), 60, n_trials=8, random_state=1, n_jobs=1)
    b = rejection_rate(test, Laplace(2), 60, n_trials=8, random_state=1, n_jobs=2)
    assert np.array_equal(a.pvalues, b.pvalues)
    np.testing.assert_allclose(a.statistics, b.statistics, rtol=1e-12)
    assert a.rate == b.rate and a.n_trials == 8


@pytest.mark.slow
def test_rejection_rate_identical_on_a_dask_cluster():
    distributed = pytest.importorskip("distributed")
    import joblib

    model = Gaussian(np.zeros(2))
    test = KSDTest(model, n_bootstrap=100)
    ref = rejection_rate(test, Laplace(2), 60, n_trials=6, random_state=3, n_jobs=1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster), joblib.parallel_config("dask"):
        got = rejection_rate(test, Laplace(2), 60, n_trials=6, random_state=3)
    assert np.array_equal(ref.pvalues, got.pvalues)
    np.testing.assert_allclose(ref.statistics, got.statistics, rtol=1e-12)


def test_reproduce_writes_csv_and_plot(tmp_path):
    rows, csv_path, png_path, _ = reproduce("gof-gaussian", out_dir=tmp_path, quick=True,
                                           n_trials=2, n_jobs=1)
    assert os.path.exists(csv_path)
    assert {r["case"] for r in rows} == {"null", "laplace", "student-t", "diffusion"}
    assert all(0 <= r["rejection_rate"] <= 1 for r in rows)
    with open(csv_path) as fh:
        assert fh.readline().startswith("case,dim,method")
    if png_path is not None:
        assert os.path.getsize(png_path) > 1000
    with pytest.raises(ValueError, match="unknown experiment"):
        reproduce("nope", out_dir=tmp_path)


def test_cli_demo_and_list(tmp_path, capsys):
    assert main(["demo", "--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "KSD-rbf" in out and "laplace" in out
    assert main(["reproduce", "--list"]) == 0
    assert "gof-gaussian" in capsys.readouterr().out
    proc = subprocess.run([sys.executable, "-m", "skstein", "reproduce", "--list"],
                          capture_output=True, text=True, check=True)
    assert "gof-gaussian" in proc.stdout


def test_demo_compiles_cold_families_in_another_process(monkeypatch):
    import os

    import skstein.precompile
    from skstein.cli import _compile_in_background

    monkeypatch.setattr(skstein.precompile, "cold_families", lambda families: [])
    assert _compile_in_background(["discrete"]) is None  # all cached: nothing to start
    monkeypatch.setattr(skstein.precompile, "cold_families", lambda families: list(families))
    proc = _compile_in_background(["discrete"])
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if (cores or 1) < 2:
        assert proc is None  # one core: the caller compiles, as before
    else:
        assert proc.wait(timeout=300) == 0
