"""The import graph goes one way down (DESIGN.md section 1).

Every ``import`` statement of the package, at module level or inside a function,
is resolved to the skstein module it names; the rules below fail the suite when a
floor imports upwards or an estimator takes a shortcut to the compiled kernels.
"""

import ast
from pathlib import Path

import pytest

import skstein

ROOT = Path(skstein.__file__).parent


def _module_name(path):
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path):
    """The skstein modules that the file at ``path`` imports (absolute dotted names)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("skstein"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("skstein"):
                continue
            found.add(target)
            # "from . import x" and "from .pkg import mod" may name submodules
            for a in node.names:
                candidate = f"{target}.{a.name}"
                if (ROOT.parent / (candidate.replace(".", "/") + ".py")).exists() or \
                        (ROOT.parent / candidate.replace(".", "/")).is_dir():
                    found.add(candidate)
    return found


GRAPH = {_module_name(p): _imports(p) for p in ROOT.rglob("*.py")}


def _within(module, prefix):
    return module == prefix or module.startswith(prefix + ".")


def test_graph_sees_the_package():
    assert "skstein.gof._ksd" in GRAPH
    assert "skstein.discrepancy" in GRAPH["skstein.gof._ksd"]
    assert "skstein._numba.stein" in GRAPH["skstein.discrepancy"]


@pytest.mark.parametrize("module", ["skstein._validation", "skstein._random",
                                    "skstein._result", "skstein._threads",
                                    "skstein._docstrings"])
def test_ground_floor_imports_nothing_of_skstein(module):
    assert GRAPH[module] == set(), f"{module} imports {sorted(GRAPH[module])}"


ESTIMATORS = ("skstein.gof", "skstein.relative", "skstein.svgd", "skstein.learning")


@pytest.mark.parametrize("module", sorted(m for m in GRAPH
                                          if any(_within(m, e) for e in ESTIMATORS)))
def test_estimators_reach_kernels_only_through_the_functional_layer(module):
    bad = sorted(t for t in GRAPH[module] if _within(t, "skstein._numba"))
    assert not bad, f"{module} imports {bad}"


@pytest.mark.parametrize("module", sorted(m for m in GRAPH
                                          if _within(m, "skstein.distributions")))
def test_models_do_not_import_the_functional_layer_above_them(module):
    above = ("skstein.discrete", "skstein.discrepancy", "skstein.directions")
    bad = sorted(t for t in GRAPH[module] if t in above)
    assert not bad, f"{module} imports {bad}"
