"""Progress bars: shown on standard error when asked, silent otherwise, results unchanged."""

import io
import re
import sys
import types

import numpy as np
import pytest

from skstein import SVGD, SlicedSVGD
from skstein._progress import check_verbose, progress_enabled, verbosity
from skstein.cli import main
from skstein.distributions import Gaussian
from skstein.experiments import EXPERIMENTS, rejection_rate, run_trials
from skstein.experiments._runner import count_settings, overall_progress, run_settings
from skstein.gof import KSDTest
from skstein.samplers import HMC, MALA, SGHMC


def _trial(seed, scale):
    rng = np.random.default_rng(seed)
    return float(rng.standard_normal() * scale)


class _Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self):
        return True


# A tiny experiment with the interface of skstein.experiments' modules (run, plot), so the
# command line can be exercised end to end in a fraction of a second.
def run(*, quick=False, n_trials=None, n_jobs=None, random_state=0, verbose="auto"):
    out = run_trials(_trial, n_trials or 6, args=(1.0,), random_state=random_state,
                     n_jobs=n_jobs, verbose=verbose, desc="tiny")
    return [{"trial": k, "value": v} for k, v in enumerate(out)]


def plot(rows, path):
    return None


def test_verbose_values():
    assert [verbosity(v) for v in (0, 1, 2, True, False, None)] == [0, 1, 2, 1, 0, 0]
    assert not progress_enabled("auto", io.StringIO())
    assert progress_enabled("auto", _Terminal())
    for bad in ("yes", -1, 1.5):
        with pytest.raises(ValueError, match="verbose"):
            check_verbose(bad)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_run_trials_progress_on_stderr_and_same_results(n_jobs, capsys):
    quiet = run_trials(_trial, 12, args=(2.0,), random_state=5, n_jobs=n_jobs, verbose=0)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""
    shown = run_trials(_trial, 12, args=(2.0,), random_state=5, n_jobs=n_jobs, verbose=1,
                       desc="my trials")
    captured = capsys.readouterr()
    assert shown == quiet
    assert "my trials" in captured.err and "12/12" in captured.err and "100%" in captured.err
    assert captured.out == ""


def test_auto_follows_the_terminal(monkeypatch, capsys):
    # under pytest standard error is not a terminal: "auto" stays silent
    a = run_trials(_trial, 5, args=(1.0,), random_state=1, n_jobs=1)
    assert capsys.readouterr().err == ""
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    b = run_trials(_trial, 5, args=(1.0,), random_state=1, n_jobs=1, verbose="auto")
    monkeypatch.undo()
    assert a == b
    assert "5/5" in term.getvalue()


def test_run_settings_and_rejection_rate_progress(capsys):
    settings = [(1.0,), (2.0,), (3.0,)]
    quiet = run_settings(_trial, settings, random_state=0, n_jobs=1, verbose=0)
    assert capsys.readouterr().err == ""
    shown = run_settings(_trial, settings, random_state=0, n_jobs=1, verbose=True, desc="grid")
    assert shown == quiet and "grid" in capsys.readouterr().err
    test = KSDTest(Gaussian(np.zeros(2)), bandwidth="median", n_bootstrap=50)
    a = rejection_rate(test, Gaussian(np.zeros(2)), 30, n_trials=3, random_state=0, n_jobs=1,
                       verbose=0)
    assert capsys.readouterr().err == ""
    b = rejection_rate(test, Gaussian(np.zeros(2)), 30, n_trials=3, random_state=0, n_jobs=1,
                       verbose=1)
    assert "3/3" in capsys.readouterr().err
    assert np.array_equal(a.pvalues, b.pvalues) and np.array_equal(a.statistics, b.statistics)


def test_cli_reproduce_verbose_and_quiet(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(EXPERIMENTS, "tiny", __name__)
    args = ["reproduce", "tiny", "--trials", "4", "--n-jobs", "1"]
    assert main(args + ["--out", str(tmp_path / "v"), "--verbose"]) == 0
    loud = capsys.readouterr()
    assert "tiny" in loud.err and "4/4" in loud.err
    assert main(args + ["--out", str(tmp_path / "q"), "--quiet"]) == 0
    quiet = capsys.readouterr()
    assert quiet.err == ""
    # default: "auto", and standard error is not a terminal here
    assert main(args + ["--out", str(tmp_path / "a")]) == 0
    assert capsys.readouterr().err == ""
    csv = [(tmp_path / d / "tiny.csv").read_text() for d in "vqa"]
    assert csv[0] == csv[1] == csv[2]
    with pytest.raises(SystemExit):
        main(args + ["--verbose", "--quiet"])


def _grid_run(*, quick=False, n_trials=None, n_jobs=None, random_state=0, verbose="auto"):
    """A tiny experiment of five settings: three run_trials calls, a run_settings of two."""
    roots = np.random.SeedSequence(random_state).spawn(3)
    rows = []
    for scale, root in zip((1.0, 2.0, 3.0), roots):
        out = run_trials(_trial, n_trials or 3, args=(scale,), random_state=root,
                         n_jobs=n_jobs, verbose=verbose, desc=f"scale={scale:g}")
        rows.append({"scale": scale, "mean": float(np.mean(out))})
    more = run_settings(_trial, [(4.0,), (5.0,)], random_state=random_state, n_jobs=n_jobs,
                        verbose=verbose, desc="two more")
    return rows + [{"scale": s, "mean": v} for s, v in zip((4.0, 5.0), more)]


def _overall_counts(err):
    """The (done, total) pairs the overall bar showed, in order."""
    found = re.findall(r"all settings:[^|]*\|[^|]*\| (\d+)/(\d+)", err)
    return [(int(done), int(total)) for done, total in found]


def test_count_settings():
    assert count_settings(_grid_run, n_trials=2, n_jobs=1) == 5
    assert count_settings(run, n_trials=2) == 1

    def fails_after_counting(**kwargs):
        run_settings(_trial, [(1.0,), (2.0,)], verbose=0)
        raise RuntimeError("bookkeeping on the results")

    assert count_settings(fails_after_counting) == 2  # a lower bound
    assert count_settings(lambda: None) is None


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_cli_overall_bar_counts_settings(n_jobs, tmp_path, monkeypatch, capsys):
    grid = types.ModuleType("skstein_test_grid")
    grid.run, grid.plot = _grid_run, plot
    monkeypatch.setitem(sys.modules, grid.__name__, grid)
    monkeypatch.setitem(EXPERIMENTS, "grid", grid.__name__)
    args = ["reproduce", "grid", "--trials", "2", "--n-jobs", str(n_jobs)]
    assert main(args + ["--out", str(tmp_path / "v"), "--verbose"]) == 0
    err = capsys.readouterr().err
    # in a log, one line of the overall bar after each setting's bar; the two settings
    # of the run_settings call finish under one bar
    assert _overall_counts(err) == [(1, 5), (2, 5), (3, 5), (5, 5)]
    assert "scale=3" in err and "two more" in err
    assert "\x1b[" not in err  # no cursor movements in a log
    assert main(args + ["--out", str(tmp_path / "q"), "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    assert (tmp_path / "v" / "grid.csv").read_text() == (tmp_path / "q" / "grid.csv").read_text()


def test_overall_bar_on_a_terminal(monkeypatch, capsys):
    quiet = _grid_run(n_jobs=1, verbose=0)
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    with overall_progress(5, verbose="auto", desc="grid, all settings"):
        shown = _grid_run(n_jobs=1, verbose="auto")
    monkeypatch.undo()
    assert shown == quiet
    err = term.getvalue()
    counts = _overall_counts(err)
    assert counts[0] == (0, 5) and counts[-1] == (5, 5)
    assert [done for done, _ in counts] == sorted(done for done, _ in counts)
    # each finished setting's bar is written out in full
    for desc in ("scale=1", "scale=2", "scale=3"):
        assert re.search(desc + r": 100%\|[^|]*\| 3/3", err)
    assert re.search(r"two more: 100%\|[^|]*\| 2/2", err)
    # silent when standard error is not a terminal and nothing asks for it
    with overall_progress(5, verbose="auto"):
        assert _grid_run(n_jobs=1, verbose="auto") == quiet
    assert capsys.readouterr().err == ""


def test_overall_total_grows_past_a_lower_bound(monkeypatch):
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    with overall_progress(2, verbose=1, desc="all settings"):
        _grid_run(n_jobs=1, verbose=1)
    monkeypatch.undo()
    assert _overall_counts(term.getvalue())[-1] == (5, 5)


@pytest.mark.parametrize("cls", [SVGD, SlicedSVGD])
def test_particle_samplers_progress(cls, capsys):
    kw = dict(n_particles=20, n_iter=30, history_every=10, random_state=0)
    target = Gaussian(np.ones(3))
    quiet = cls(target, **kw).fit()
    assert capsys.readouterr().err == ""
    shown = cls(target, verbose=1, **kw).fit()
    err = capsys.readouterr().err
    assert cls.__name__ in err and "30/30" in err and "discrepancy" in err
    assert f"[{cls.__name__}] iter" not in err
    np.testing.assert_array_equal(quiet.particles_, shown.particles_)
    detailed = cls(target, verbose=2, **kw).fit()
    err = capsys.readouterr().err
    assert err.count(f"[{cls.__name__}] iter") == 4  # iterations 0, 10, 20 and the last
    np.testing.assert_array_equal(quiet.particles_, detailed.particles_)
    with pytest.raises(ValueError, match="verbose"):
        cls(target, verbose="loud", **kw).fit()


def _normal_target(Z):
    return -0.5 * np.sum(Z**2, axis=1), -Z


@pytest.mark.parametrize("sampler", [MALA(0.5), HMC(0.2, 5)], ids=["MALA", "HMC"])
def test_mcmc_progress(sampler, capsys):
    Z0 = np.zeros((10, 2))
    quiet = sampler.sample(_normal_target, Z0, 20, burn_in=10, random_state=0)
    assert capsys.readouterr().err == ""
    shown = sampler.sample(_normal_target, Z0, 20, burn_in=10, random_state=0, verbose=1)
    err = capsys.readouterr().err
    assert type(sampler).__name__ in err and "30/30" in err
    np.testing.assert_array_equal(quiet, shown)


def test_sghmc_progress(capsys):
    Z0 = np.zeros((10, 2))
    quiet = SGHMC(0.05).sample(_normal_target, Z0, 5, burn_in=10, thin=2, random_state=0)
    assert capsys.readouterr().err == ""
    shown = SGHMC(0.05).sample(_normal_target, Z0, 5, burn_in=10, thin=2, random_state=0,
                               verbose=True)
    err = capsys.readouterr().err
    assert "SGHMC" in err and "20/20" in err
    np.testing.assert_array_equal(quiet, shown)


@pytest.mark.slow
def test_progress_on_a_dask_cluster(capsys):
    distributed = pytest.importorskip("distributed")
    import joblib

    ref = run_trials(_trial, 6, args=(3.0,), random_state=4, n_jobs=1, verbose=0)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster), joblib.parallel_config("dask"):
        capsys.readouterr()
        got = run_trials(_trial, 6, args=(3.0,), random_state=4, verbose=1, desc="on dask")
        err = capsys.readouterr().err
    assert got == ref
    assert "on dask" in err and "6/6" in err
