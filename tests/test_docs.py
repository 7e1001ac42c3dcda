"""The API reference lists every public name; the examples follow the gallery format."""

import ast
import glob
import importlib
import inspect
import os
import re

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..")

#: Public modules whose ``__all__`` the API reference documents (constants aside).
MODULES = ["skstein", "skstein.distributions", "skstein.learning", "skstein.samplers",
           "skstein.kernels", "skstein.experiments", "skstein.directions", "skstein.gof",
           "skstein.relative"]


def _api_names():
    names, module = set(), "skstein"
    with open(os.path.join(ROOT, "doc", "api.rst")) as fh:
        for line in fh:
            m = re.match(r"\.\. currentmodule:: (\S+)", line)
            if m:
                module = m.group(1)
            m = re.match(r"   ([A-Za-z_]\w*)\s*$", line)
            if m:
                names.add(f"{module}.{m.group(1)}")
    return names


def _resolve(dotted):
    module, name = dotted.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("module", MODULES)
def test_api_reference_lists_every_public_name(module):
    listed = [_resolve(name) for name in _api_names()]  # every entry must resolve
    mod = importlib.import_module(module)
    missing = []
    for name in mod.__all__:
        obj = getattr(mod, name)
        if inspect.ismodule(obj) or not (inspect.isclass(obj) or callable(obj)):
            continue  # subpackages and constants are described in the text
        if not any(obj is entry for entry in listed):  # listed here or where it lives
            missing.append(name)
    assert not missing, f"doc/api.rst does not list {missing} of {module}"


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(ROOT, "examples", "*.py"))),
                         ids=os.path.basename)
def test_examples_are_gallery_scripts(path):
    assert os.path.basename(path).startswith("plot_")
    with open(path) as fh:
        source = fh.read()
    doc = ast.get_docstring(ast.parse(source))
    title, underline = doc.splitlines()[:2]
    assert title and set(underline) == {"="} and len(underline) >= len(title)
    assert "# %%" in source
    assert ".savefig(" not in source  # the gallery collects the figures


def test_sources_have_no_tab_characters():
    # A docstring's "\tanh" typed without r"" becomes a tab and a broken formula.
    bad = []
    for path in glob.glob(os.path.join(ROOT, "skstein", "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as fh:
            bad += [f"{os.path.relpath(path, ROOT)}:{i}" for i, line in enumerate(fh, 1)
                    if "\t" in line]
    assert not bad, f"tab characters in {bad}"


def test_class_template_leaves_out_every_metadata_request_setter():
    # scikit-learn generates set_<method>_request setters whose docstrings refer to its
    # own documentation; the class template must leave every one of them out.
    with open(os.path.join(ROOT, "doc", "_templates", "autosummary", "class.rst")) as fh:
        excluded = {name.strip() for line in fh if ":exclude-members:" in line
                    for name in line.split(":exclude-members:")[1].split(",")}
    setters = set()
    for dotted in _api_names():
        obj = _resolve(dotted)
        if inspect.isclass(obj):
            setters |= {m for m in dir(obj) if m.startswith("set_") and m.endswith("_request")}
    assert setters <= excluded, f"doc/_templates/autosummary/class.rst lacks {setters - excluded}"


def _documented_objects():
    """Every module, class and function of the package, and the functions of its classes."""
    import pkgutil

    import skstein

    seen = set()
    for info in pkgutil.walk_packages(skstein.__path__, "skstein."):
        if info.name == "skstein.__main__":  # runs the command line
            continue
        module = importlib.import_module(info.name)
        yield info.name, module
        for name, obj in vars(module).items():
            if getattr(obj, "__module__", None) != info.name or id(obj) in seen:
                continue
            seen.add(id(obj))
            if inspect.isfunction(obj):
                yield f"{info.name}.{name}", obj
            elif inspect.isclass(obj):
                yield f"{info.name}.{name}", obj
                for attr, member in vars(obj).items():
                    member = getattr(member, "__func__", member)
                    if inspect.isfunction(member):
                        yield f"{info.name}.{name}.{attr}", member


def test_docstrings_have_their_shared_descriptions_filled_in():
    # a "%(name)s" line left in a docstring means its object lacks @fill_doc
    bad = [name for name, obj in _documented_objects()
           if obj.__doc__ and re.search(r"^\s*%\(\w+\)s\s*$", obj.__doc__, re.M)]
    assert not bad, f"unfilled shared descriptions in {bad}"


def test_fill_doc_indents_each_line_of_a_shared_description():
    from skstein._docstrings import fill_doc

    @fill_doc
    class Model:
        def method(self, X):
            """Summary, 100% literal {braces} kept.

            %(points_parameters)s
            """

    assert Model.method.__doc__ == (
        "Summary, 100% literal {braces} kept.\n\n"
        "            Parameters\n"
        "            ----------\n"
        "            X : array-like of shape (n, dim)\n"
        "                Points, one per row.\n"
        "            ")
