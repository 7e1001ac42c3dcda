import os

# scikit-learn's Array API dispatch (tests/test_array_api.py) needs SciPy's Array API
# support, switched on by this variable before SciPy is first imported; NumPy inputs
# behave the same with it.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import numpy as np
import pytest


def std_normal_score(X):
    """Score of N(0, I) in any dimension (module level, so it pickles)."""
    return -np.asarray(X, dtype=np.float64)


@pytest.fixture
def rng():
    return np.random.default_rng(0)
