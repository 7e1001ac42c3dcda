"""Sphinx configuration (build: ``sphinx-build doc doc/_build``; needs sphinx and numpydoc)."""

import skstein

project = "skstein"
version = release = skstein.__version__
extensions = ["sphinx.ext.autodoc", "sphinx.ext.mathjax", "numpydoc"]
numpydoc_show_class_members = False
exclude_patterns = ["_build"]
