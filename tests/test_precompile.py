"""skstein.precompile: a family's small use compiles (or loads) its kernels."""

import pytest

from skstein.cli import main
from skstein.precompile import FAMILIES, _MARKERS, cold_families, precompile


def test_every_family_has_markers():
    assert set(_MARKERS) == set(FAMILIES)


def test_precompile_runs_a_family_and_then_it_is_cached(capsys):
    times = precompile(["discrete"], n_jobs=1)
    assert set(times) == {"discrete", "total"} and times["total"] >= times["discrete"] > 0
    # the family's kernels are now in the cache (this suite's cache), nothing is cold
    assert cold_families(["discrete"]) == []
    assert precompile(["discrete"], only_cold=True) == {"total": 0.0}
    assert main(["precompile", "--families", "discrete", "--n-jobs", "1"]) == 0
    assert "discrete" in capsys.readouterr().out


def test_unknown_family_is_named():
    with pytest.raises(ValueError, match="families must be among"):
        precompile(["ksd", "nope"])
