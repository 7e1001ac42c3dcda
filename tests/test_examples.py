import glob
import os
import runpy

import pytest

EXAMPLES = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "examples", "*.py")))


@pytest.fixture
def agg_figures():
    """The non-interactive backend, and no figure left open after an example."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


@pytest.mark.slow
@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_example_runs(path, tmp_path, monkeypatch, agg_figures):
    monkeypatch.chdir(tmp_path)
    runpy.run_path(path, run_name="__main__")
