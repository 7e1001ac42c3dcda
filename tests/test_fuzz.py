"""Property-based tests (hypothesis) of every public entry point that takes data.

Inputs are generated across the awkward corners: 1 to 5 samples in 1 to 6 dimensions
(so wide data, D > N, is common), float32 / int / bool / object data (object arrays
of numbers and of strings), lists, Fortran-ordered and non-contiguous arrays and
pandas DataFrames (when pandas is installed), NaN or infinity in the data or in the
model's scores, constant data (median distance 0), values near the float64 range,
bandwidths of 1e-300 and 1e300 (and invalid ones), and directions with zero rows.

The property, for every call: it either returns a correct finite result or raises a
ValueError / TypeError whose message names the offending argument. Never a crash
in compiled code, a NaN statistic or p-value, an unexplained garbage result or a hang.
What "correct" means is checked where it can be:

* a clean input (finite data with at least two distinct rows and the entry point's
  minimum number of samples, finite scores, a moderate bandwidth) must not raise;
* an input with a definite defect (NaN or infinity in the data or the scores,
  strings, too few samples, an invalid bandwidth, a zero direction) must raise,
  naming the argument at fault;
* the same numbers give the same result however they are passed (C or Fortran
  order, a strided view, a list, a DataFrame, an object array; int, bool and
  float32 data as their float64 values);
* statistics and p-values are finite, p-values lie in [0, 1], kernel values in their
  range, learned directions have unit norm.

An extreme input (constant data, values near the float64 range, a bandwidth of
1e-300 or 1e300) may give a finite result or an error naming the argument.
A result that comes with numpy's RuntimeWarnings (overflow, invalid value) fails:
it is either computed cleanly or refused.
"""

import re
import warnings
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conftest import std_normal_score
from skstein import (
    IMQ,
    RBF,
    SVGD,
    FSSDTest,
    KSDTest,
    LinearKSDTest,
    MaxSKSDTest,
    MMDGOFTest,
    PolynomialKSDTest,
    RelativeKSDTest,
    RelativeMMDTest,
    RFSDTest,
    SlicedSVGD,
    fssd,
    ksd,
    ksd_power_criterion,
    linear_ksd,
    max_sksd,
    median_bandwidth,
    rank_samples,
    relative_ksd,
    rfsd,
    search_directions,
    stein_matrix,
)
from skstein.distributions import Gaussian
from skstein.kernels import median_bandwidth_1d, whitening

try:  # DataFrames are among the generated inputs where pandas is installed
    import pandas
except ImportError:
    pandas = None

FUZZ = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
FEW = settings(FUZZ, max_examples=120)

# ---------------------------------------------------------------------------
# Generated inputs
# ---------------------------------------------------------------------------

FORMATS = ("c", "fortran", "strided", "list", "float32", "int", "bool", "object",
           "object-str") + (("dataframe",) if pandas is not None else ())
DEFECTS = (None, None, None, "nan", "inf", "constant", "column", "huge", "tiny")


@dataclass
class Data:
    """One generated sample: as passed (``X``), its float64 value (``canonical``, None
    when it has none), what is definitely wrong with it and what may be."""

    X: object
    canonical: np.ndarray
    fmt: str
    fail: set = field(default_factory=set)
    maybe: set = field(default_factory=set)
    constant: bool = False  # all rows equal
    flat: bool = False  # a constant column
    repeats: bool = False  # two equal rows (so a split may be constant)


def _as_format(X, fmt):
    if fmt == "c":
        return X, X
    if fmt == "fortran":
        return np.asfortranarray(X), X
    if fmt == "strided":
        big = np.zeros((X.shape[0], 2 * X.shape[1]))
        big[:, ::2] = X
        return big[:, ::2], X
    if fmt == "list":
        return X.tolist(), X
    if fmt == "dataframe":
        return pandas.DataFrame(X), X
    if fmt == "float32":
        with np.errstate(over="ignore"):
            X32 = X.astype(np.float32)
        return X32, X32.astype(np.float64)
    if fmt == "int":
        Xi = np.round(X).astype(np.int64)
        return Xi, Xi.astype(np.float64)
    if fmt == "bool":
        Xb = X > 0
        return Xb, Xb.astype(np.float64)
    if fmt == "object":
        return X.astype(object), X
    # object array of strings: no float64 value
    words = np.array(["a", "bc", "x y", "", "1,5"], dtype=object)
    idx = (np.nan_to_num(np.abs(X), posinf=0.0) % len(words)).astype(np.int64)
    return words[idx], None


@st.composite
def samples(draw, max_n=5, max_d=6, min_rows=2):
    """A :class:`Data` for an entry point that needs ``min_rows`` samples."""
    n = draw(st.integers(1, max_n))
    d = draw(st.integers(1, max_d))
    X = draw(hnp.arrays(np.float64, (n, d), elements=st.floats(
        -100, 100, allow_nan=False, allow_subnormal=False).map(
            lambda v: 0.0 if abs(v) < 1e-6 else v)))  # no negative zeros, no tiny scales
    defect = draw(st.sampled_from(DEFECTS))
    i, j = draw(st.integers(0, n - 1)), draw(st.integers(0, d - 1))
    if defect == "nan":
        X[i, j] = np.nan
    elif defect == "inf":
        X[i, j] = draw(st.sampled_from([np.inf, -np.inf]))
    elif defect == "constant":
        X[:] = X[0]
    elif defect == "column":
        X[:, j] = X[0, j]
    elif defect == "tiny":
        X *= 1e-200
    elif defect == "huge":
        X[i, j] = draw(st.sampled_from([1e200, -1e300, 1.7e308]))
    fmt = draw(st.sampled_from(FORMATS))
    if fmt in ("int", "bool") and not np.all(np.abs(X) < 1e15):
        fmt = "c"
    Xin, canon = _as_format(X, fmt)
    data = Data(Xin, canon, fmt)
    if canon is None:
        data.fail.add("X")
        return data
    if not np.all(np.isfinite(canon)) or n < min_rows:
        data.fail.add("X")
    elif np.abs(canon).max() > 1e100 or 0 < np.abs(canon).max() < 1e-100:
        data.maybe.update({"X", "model", "bandwidth"})
    elif n >= 2 and np.all(canon == canon[0]):
        data.maybe.add("X")
        data.constant = data.flat = True
    elif n >= 2 and np.any(np.all(canon == canon[0], axis=0)):
        data.flat = True
    data.repeats = len(np.unique(canon, axis=0)) < n
    return data


def _nan_score(X):
    S = -np.asarray(X, dtype=np.float64)
    S[0, 0] = np.nan
    return S


def _inf_score(X):
    S = -np.asarray(X, dtype=np.float64)
    S[-1, -1] = -np.inf
    return S


def _huge_score(X):
    return np.full(np.shape(X), 1e300)


def _flat_score(X):
    return -np.asarray(X, dtype=np.float64).ravel()


def _list_score(X):
    return (-np.asarray(X, dtype=np.float64)).tolist()


def _float32_score(X):
    return -np.asarray(X, dtype=np.float32)


class _WrongDim:
    """A distribution on one dimension more than any data it is given."""

    dim = 99

    def grad_logpdf(self, X):
        return -np.asarray(X)


#: (score, is it definitely wrong, may it be refused)
MODELS = {
    "normal": (std_normal_score, False, False),
    "list": (_list_score, False, False),
    "float32": (_float32_score, False, False),
    "nan": (_nan_score, True, False),
    "inf": (_inf_score, True, False),
    "flat": (_flat_score, True, False),
    "wrong-dim": (_WrongDim(), True, False),
    "huge": (_huge_score, False, True),
    "none": (None, True, False),
}
MODEL_KINDS = st.sampled_from(["normal"] * 4 + list(MODELS))

#: (bandwidth, is it definitely wrong, may it be refused)
BANDWIDTHS = {
    "median": ("median", False, False),
    "one": (1.0, False, False),
    "half": (0.5, False, False),
    "tiny": (1e-300, False, True),
    "vast": (1e300, False, True),
    "zero": (0.0, True, False),
    "negative": (-1.0, True, False),
    "nan": (np.nan, True, False),
    "inf": (np.inf, True, False),
    "word": ("wide", True, False),
    "bool": (True, True, False),
}
BANDWIDTH_KINDS = st.sampled_from(["median"] * 3 + ["one"] * 2 + list(BANDWIDTHS))


@dataclass
class Case:
    """Data, a model and a bandwidth, with the names of the arguments that are
    definitely wrong (``fail``) and of those that may be refused (``maybe``)."""

    data: Data
    model: object
    bandwidth: object
    fail: set
    maybe: set


@st.composite
def cases(draw, min_rows=2, max_n=5, max_d=6, model_name="model", bandwidths=True,
          sliced=False):
    """A :class:`Case`; ``sliced``: the entry point takes per-direction median bandwidths
    (which a constant column defeats)."""
    data = draw(samples(min_rows=min_rows, max_n=max_n, max_d=max_d))
    fail, maybe = set(data.fail), set(data.maybe)
    model, bad, risky = MODELS[draw(MODEL_KINDS)]
    if bad:
        fail.add("model")
    if risky:
        maybe.update({"model", "X", "bandwidth"})
    bandwidth = "median"
    if bandwidths:
        bandwidth, bad, risky = BANDWIDTHS[draw(BANDWIDTH_KINDS)]
        if bad:
            fail.add("bandwidth")
        if risky:
            maybe.add("bandwidth")
    heuristic = isinstance(bandwidth, str)
    if heuristic and (data.constant or (sliced and data.flat)):
        maybe.update({"X", "bandwidth"})  # no distances for the median heuristic
    rename = {"model": model_name}
    return Case(data, model, bandwidth, {rename.get(a, a) for a in fail},
                {rename.get(a, a) for a in maybe})


# ---------------------------------------------------------------------------
# The property
# ---------------------------------------------------------------------------

def _names(message, names):
    return any(re.search(r"(?<![\w])" + re.escape(n) + r"(?![\w])", message) for n in names)


#: numpy's floating-point and empty-reduction warnings (the library's own RuntimeWarnings,
#: e.g. a degenerate relative test, are part of a correct result)
NUMPY_WARNING = re.compile(r"encountered in|empty slice|Degrees of freedom")


def _call(fn):
    """``(result, None)`` or ``(None, exception)``.

    A result that came with a RuntimeWarning (overflow, invalid value) fails: it was
    not computed cleanly. On the way to a refusal such warnings do not matter.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            result = fn()
        except (ValueError, TypeError) as exc:
            return None, exc
    numeric = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)
               and NUMPY_WARNING.search(str(w.message))]
    assert not numeric, f"the result came with RuntimeWarnings: {numeric}"
    return result, None


def check(fn, fail, maybe, *, canonical=None, same=None):
    """Run ``fn``; assert the property; return the result (None when it raised).

    ``fail``: names of definitely wrong arguments (the call must raise naming one);
    ``maybe``: names of arguments that may be refused. ``canonical``: the same call on
    the float64 value of the data, whose result must equal this one bit for bit
    (``same`` turns a result into the array of numbers to compare).
    """
    result, exc = _call(fn)
    if exc is not None:
        allowed = set(fail) | set(maybe)
        assert allowed, f"a clean input raised {type(exc).__name__}: {exc}"
        assert _names(str(exc), allowed), (
            f"{type(exc).__name__} does not name any of {sorted(allowed)}: {exc}")
        return None
    assert not fail, f"an input with a bad {sorted(fail)} gave a result: {result!r}"
    if canonical is not None and same is not None:
        ref, ref_exc = _call(canonical)
        assert ref_exc is None, f"the float64 data raised {ref_exc!r} but the input did not"
        np.testing.assert_array_equal(same(result), same(ref))
    return result


def _test_numbers(res):
    """Statistic and p-value of a test result, checked."""
    assert np.isfinite(res.statistic), res
    assert 0.0 <= res.pvalue <= 1.0, res
    assert isinstance(res.reject, bool)
    return np.array([res.statistic, res.pvalue])


def _finite(value):
    value = np.asarray(value, dtype=np.float64)
    assert np.all(np.isfinite(value)), value
    return value


def _canonical(case):
    return None if case.data.fmt == "c" or case.data.canonical is None else case.data.canonical


def run(case, fn, same, fail=(), maybe=()):
    """The property for ``fn(X)`` on the case's data, and against its float64 value.

    ``fail`` and ``maybe`` add argument names to the case's.
    """
    canon = _canonical(case)
    return check(lambda: fn(case.data.X), case.fail | set(fail), case.maybe | set(maybe),
                 canonical=None if canon is None else (lambda: fn(canon)), same=same)


def _width(case):
    return np.shape(case.data.canonical)[1] if case.data.canonical is not None else 2


def _n(case):
    return len(case.data.canonical) if case.data.canonical is not None else 2


def _directions(draw, d, m=None):
    """``(G, is it definitely wrong)``: directions (rows not normalised), maybe with a
    zero row, a NaN or one column too many."""
    kind = draw(st.sampled_from(["random", "random", "zero-row", "nan", "wrong-width"]))
    m = draw(st.integers(1, 3)) if m is None else m
    G = draw(hnp.arrays(np.float64, (m, d), elements=st.floats(
        -1, 1, allow_subnormal=False).map(lambda v: 0.0 if abs(v) < 1e-6 else v)))
    G[np.all(G == 0, axis=1), 0] = 1.0
    if kind == "zero-row":
        G[draw(st.integers(0, m - 1))] = 0.0
    elif kind == "nan":
        G[0, 0] = np.nan
    elif kind == "wrong-width":
        G = np.hstack([G, np.ones((m, 1))])
    return G, kind != "random"


# ---------------------------------------------------------------------------
# Functions
# ---------------------------------------------------------------------------

@FUZZ
@given(case=cases(), statistic=st.sampled_from(["u", "v"]), kernel=st.sampled_from(["rbf", "imq"]))
def test_ksd(case, statistic, kernel):
    run(case, lambda X: ksd(X, case.model, kernel=kernel, bandwidth=case.bandwidth,
                            statistic=statistic), _finite)


@FUZZ
@given(case=cases())
def test_ksd_power_criterion(case):
    # two points give a zero variance estimate: refused, naming X
    run(case, lambda X: ksd_power_criterion(X, case.model, bandwidth=case.bandwidth), _finite,
        fail=("X",) if case.data.canonical is not None and _n(case) < 3 else ())


@FUZZ
@given(case=cases(), kernel=st.sampled_from(["rbf", "imq"]))
def test_stein_matrix(case, kernel):
    H = run(case, lambda X: stein_matrix(X, case.model, kernel=kernel,
                                         bandwidth=case.bandwidth), _finite)
    if H is not None:
        np.testing.assert_array_equal(H, H.T)


@FUZZ
@given(case=cases(sliced=True), data=st.data())
def test_max_sksd(case, data):
    G, bad = _directions(data.draw, _width(case))
    with_slices = data.draw(st.booleans())
    R = None
    if with_slices and G.shape[1] == _width(case) and np.all(np.isfinite(G)):
        R = np.abs(G) + 1.0  # the slices: as many as directions, never zero
    if R is not None:
        G, bad = data.draw(st.sampled_from([(G, bad), (None, False)]))
    elif G.shape[0] != _width(case):
        bad = True  # without slices the directions pair with the coordinate axes

    def fn(X):
        return max_sksd(X, case.model, directions=G, slices=R, bandwidth=case.bandwidth,
                        return_pairs=True)

    def numbers(out):
        stat, pairs, h = out
        np.testing.assert_allclose(np.sum(pairs), stat, rtol=1e-9, atol=1e-12)
        assert np.all(_finite(h) > 0)
        return _finite(pairs)

    run(case, fn, numbers, fail={"directions"} if bad else ())


@FUZZ
@given(case=cases())
def test_linear_ksd(case):
    run(case, lambda X: linear_ksd(X, case.model, bandwidth=case.bandwidth), _finite)


@FUZZ
@given(case=cases(), data=st.data())
def test_fssd(case, data):
    V, _ = _directions(data.draw, _width(case))  # any finite points serve as locations
    bad = not (np.all(np.isfinite(V)) and V.shape[1] == _width(case))
    run(case, lambda X: fssd(X, case.model, locations=V, bandwidth=case.bandwidth), _finite,
        fail={"locations"} if bad else ())


@FUZZ
@given(case=cases(), feature=st.sampled_from(["l1-imq", "l2-sechexp", "rff-cauchy"]))
def test_rfsd(case, feature):
    run(case, lambda X: rfsd(X, case.model, feature=feature, n_features=3,
                             bandwidth=case.bandwidth, random_state=0), _finite)


@FUZZ
@given(case=cases(bandwidths=False))
def test_median_bandwidth(case):
    case.fail.discard("model")
    case.maybe.discard("model")
    h = run(case, median_bandwidth, _finite)
    if h is not None:
        assert h > 0


@FUZZ
@given(case=cases(bandwidths=False),
       covariance=st.sampled_from(["ledoit-wolf", "sample", "held-out"]))
def test_whitening(case, covariance):
    case.fail.discard("model")
    case.maybe.discard("model")

    def maps(white):
        A, B = (_finite(M) for M in white)
        # the two maps undo each other: A B^T = I
        np.testing.assert_allclose(A @ B.T, np.eye(A.shape[0]), atol=1e-6)
        return np.concatenate([A, B])

    # "sample" refuses X with no more rows than columns; collinear or constant columns
    # may be flat axes (raised to the mean eigenvalue) or refused, naming X
    run(case, lambda X: whitening(X, covariance=covariance), maps, maybe={"X"})


@FUZZ
@given(case=cases(min_rows=1), cls=st.sampled_from([RBF, IMQ]), data=st.data())
def test_kernels(case, cls, data):
    h, bad, risky = BANDWIDTHS[data.draw(st.sampled_from(sorted(set(BANDWIDTHS) - {"median"})))]
    kern = check(lambda: cls(h), {"bandwidth"} if bad else set(),
                 {"bandwidth"} if risky else set())
    if kern is None:
        return
    fail = case.fail - {"bandwidth", "model"}
    maybe = case.maybe - {"bandwidth", "model"}
    Y = data.draw(st.sampled_from(["same", "other", "wide"]))

    def fn(X):
        if Y == "same":
            return kern(X, X)
        X = np.asarray(X, dtype=np.float64)
        return kern(X, np.zeros((2, X.shape[1] + (Y == "wide"))))

    K = check(lambda: fn(case.data.X), fail | ({"Y", "X"} if Y == "wide" else set()), maybe,
              canonical=None if _canonical(case) is None else (lambda: fn(_canonical(case))),
              same=_finite) if Y == "same" or case.data.canonical is not None else None
    if K is not None:
        assert np.all((K >= 0) & (K <= 1))
        if Y == "same":
            np.testing.assert_allclose(np.diag(K), 1.0)


@FEW
@given(case=cases(min_rows=3, model_name="model_p"),
       bandwidth=st.sampled_from(["aggregate", "median", 1.0]))
def test_relative_ksd(case, bandwidth):
    case.fail.discard("bandwidth")
    case.maybe.discard("bandwidth")
    if case.data.constant and isinstance(bandwidth, str):
        case.maybe.update({"X", "bandwidth"})
    run(case, lambda X: relative_ksd(X, case.model, std_normal_score, bandwidth=bandwidth,
                                     n_bandwidths=3, random_state=0), _test_numbers)


@FEW
@given(case=cases(bandwidths=False), bandwidth=st.sampled_from(["aggregate", "median", 1.0]))
def test_rank_samples(case, bandwidth):
    test = KSDTest(std_normal_score, bandwidth=bandwidth, n_bandwidths=3)

    def numbers(r):
        _finite(r.values)
        assert np.all(r.ci_low <= r.ci_high)
        assert np.all((r.prob_best >= 0) & (r.prob_best <= 1))
        return r.values

    rename = {"X": "samples"}
    case.fail = {rename.get(a, a) for a in case.fail} - {"model"}
    case.maybe = {rename.get(a, a) for a in case.maybe} - {"model"}
    # rank_samples needs one kernel: an aggregated test is refused
    run(case, lambda X: rank_samples({"a": X, "b": X}, test, n_bootstrap=20, random_state=0),
        numbers, fail={"bandwidth"} if bandwidth == "aggregate" else ())


@FEW
@given(case=cases(sliced=True), variant=st.sampled_from(["g", "rg"]),
       init=st.sampled_from(["auto", "identity", "random"]))
def test_search_directions(case, variant, init):
    def numbers(res):
        G = _finite(res.directions)
        np.testing.assert_allclose(np.linalg.norm(G, axis=1), 1.0)
        assert np.all(_finite(res.bandwidth) > 0)
        return G

    run(case, lambda X: search_directions(X, case.model, variant=variant, init=init,
                                          bandwidth=case.bandwidth, max_iter=3,
                                          random_state=0),
        numbers)


# ---------------------------------------------------------------------------
# Estimators
# ---------------------------------------------------------------------------

def _split_repeats(case):
    """A median heuristic on part of X may meet only repeated rows, or rows that
    coincide along a feature (a part of 2 rows with one value in common)."""
    X = case.data.canonical
    coincide = case.data.repeats or (
        X is not None and X.ndim == 2 and any(len(np.unique(col)) < len(col) for col in X.T))
    return {"X", "bandwidth"} if coincide and isinstance(case.bandwidth, str) else set()


def _gof(make, case, fitted, fail=(), maybe=()):
    """``test`` of a fresh estimator on the data, after ``fit`` on it when ``fitted``."""
    def fn(X):
        est = make()
        if fitted:
            est.fit(X)
        return est.test(X)
    return run(case, fn, _test_numbers, fail, maybe)


@FUZZ
@given(case=cases(), fitted=st.booleans(), statistic=st.sampled_from(["u", "v"]))
def test_ksd_test(case, fitted, statistic):
    _gof(lambda: KSDTest(case.model, bandwidth=case.bandwidth, statistic=statistic,
                         n_bootstrap=50, random_state=0), case, fitted)


@FUZZ
@given(case=cases(bandwidths=False), fitted=st.booleans())
def test_ksd_test_aggregated(case, fitted):
    _gof(lambda: KSDTest(case.model, n_bandwidths=3, n_bootstrap=50, random_state=0),
         case, fitted)


@FEW
@given(case=cases(), fitted=st.booleans())
def test_ksd_test_monte_carlo(case, fitted):
    case.fail.discard("model")
    case.maybe.discard("model")
    d = _width(case)
    _gof(lambda: KSDTest(Gaussian(np.zeros(d)), bandwidth=case.bandwidth, n_bandwidths=3,
                         bootstrap="monte-carlo", n_bootstrap=19, random_state=0),
         case, fitted)


@FEW
@given(case=cases(min_rows=4, bandwidths=False), fitted=st.booleans())
def test_ksd_test_moments(case, fitted):
    # the fourth moment whitens each half of X about the other: a half may coincide
    _gof(lambda: KSDTest(case.model, n_bandwidths=3, n_bootstrap=50, moments=True,
                         random_state=0),
         case, fitted, maybe={"X"} if case.data.repeats else ())


def student_t_score(X):
    """The score of independent Student-t(3) coordinates (a model the tilt takes)."""
    X = np.asarray(X, dtype=np.float64)
    with np.errstate(over="ignore"):  # -4 x / (3 + x^2) -> 0 where x^2 overflows
        return -4.0 * X / (3.0 + X * X)


@FUZZ
@given(case=cases(bandwidths=False), fitted=st.booleans(),
       tilt=st.sampled_from(["auto", 0.5, 2.0]))
def test_ksd_test_tilted(case, fitted, tilt):
    case.model = student_t_score
    case.fail -= {"model"}
    case.maybe -= {"model"}
    _gof(lambda: KSDTest(case.model, n_bandwidths=3, n_bootstrap=50, tilt=tilt,
                         random_state=0), case, fitted)


@FEW
@given(case=cases(min_rows=4, max_n=10, sliced=True), variant=st.sampled_from(["g", "rg"]),
       cv=st.sampled_from([None, 2]), moment=st.sampled_from([False, "pooled"]))
def test_maxsksd_test_unfitted(case, variant, cv, moment):
    # one split (the default, train_size=0.2): 2 samples on either side, 8 at least;
    # cross-fitted (cv=2): two folds of at least 2 samples, 4 in all. With repeated rows
    # a learning part may coincide (no median bandwidth there), and so may a half that
    # the pooled fourth moment whitens (no whitening)
    maybe = _split_repeats(case)
    if moment and case.data.repeats:
        maybe |= {"X"}
    _gof(lambda: MaxSKSDTest(case.model, variant=variant, bandwidth=case.bandwidth, cv=cv,
                             moment=moment, max_iter=3, n_bootstrap=50, random_state=0),
         case, False, fail={"X"} if cv is None and _n(case) < 8 else (), maybe=maybe)


@FEW
@given(case=cases(sliced=True), data=st.data(), variant=st.sampled_from(["g", "rg"]))
def test_maxsksd_test_given_directions(case, data, variant):
    d = _width(case)
    G, bad = _directions(data.draw, d, m=d if variant == "g" else None)
    fail = {"init"} if bad else set()
    if len(G) > d:
        fail.add("n_slices")  # at most n_features slices
    _gof(lambda: MaxSKSDTest(case.model, variant=variant, init=G, n_slices=len(G),
                             max_iter=0, validation_fraction=0.0, bandwidth=case.bandwidth,
                             n_bootstrap=50, random_state=0), case, True, fail=fail)


@FEW
@given(case=cases(max_n=10), optimize=st.booleans())
def test_fssd_test(case, optimize):
    # optimised locations are learned on a train_size=0.2 split of X: 8 samples at least
    _gof(lambda: FSSDTest(case.model, n_locations=2, optimize=optimize, max_iter=3,
                          bandwidth=case.bandwidth, n_simulate=50, random_state=0),
         case, False, fail={"X"} if optimize and _n(case) < 8 else (),
         maybe=_split_repeats(case) if optimize else ())


@FEW
@given(case=cases(), fitted=st.booleans())
def test_linear_ksd_test(case, fitted):
    # the linear-time test needs 4 samples (2 disjoint pairs at least)
    _gof(lambda: LinearKSDTest(case.model, bandwidth=case.bandwidth, random_state=0),
         case, fitted, fail={"X"} if _n(case) < 4 else ())


class _NormalSampler:
    """N(0, I) in any dimension, with an exact sampler: the polynomial test learns
    coordinates on its draws too (``reference="auto"``) for such a model."""

    rvs_kind = "exact"

    def __init__(self, d):
        self.d = d

    def grad_logpdf(self, X):
        return std_normal_score(X)

    def rvs(self, n, random_state=None):
        return np.random.default_rng(random_state).standard_normal((n, self.d))


@FEW
@given(case=cases(bandwidths=False), fitted=st.booleans(),
       degree=st.sampled_from([1, 3, (1, 4)]), whiten=st.booleans(), sampler=st.booleans())
def test_polynomial_ksd_test(case, fitted, degree, whiten, sampler):
    model = case.model
    shape = np.shape(case.data.X)
    if sampler and model is std_normal_score and len(shape) == 2:
        model = _NormalSampler(shape[1])
    _gof(lambda: PolynomialKSDTest(model, degree=degree, whiten=whiten, n_bootstrap=50,
                                   random_state=0), case, fitted)


@FEW
@given(case=cases(), fitted=st.booleans())
def test_rfsd_test(case, fitted):
    _gof(lambda: RFSDTest(case.model, n_features=3, bandwidth=case.bandwidth,
                          n_simulate=50, random_state=0), case, fitted)


@FEW
@given(case=cases(), fitted=st.booleans())
def test_mmd_gof_test(case, fitted):
    case.fail.discard("model")
    case.maybe.discard("model")
    d = _width(case)
    _gof(lambda: MMDGOFTest(Gaussian(np.zeros(d)), bandwidth=case.bandwidth,
                            n_permutations=50, random_state=0), case, fitted)


def shifted_score(X):
    return 0.5 - np.asarray(X, dtype=np.float64)


@FEW
@given(case=cases(min_rows=3, max_n=10, model_name="model_p", sliced=True),
       fitted=st.booleans(), discrepancy=st.sampled_from(["ksd", "ksd", "maxsksd"]))
def test_relative_ksd_test(case, fitted, discrepancy):
    # the unfitted maxSKSD comparison cross-fits on two halves: 8 samples at least
    fail = {"X"} if discrepancy == "maxsksd" and not fitted and _n(case) < 8 else set()

    def make():
        return RelativeKSDTest(case.model, shifted_score, discrepancy=discrepancy,
                               bandwidth=case.bandwidth, n_bandwidths=3, random_state=0)

    unfitted_maxsksd = discrepancy == "maxsksd" and not fitted
    _gof(make, case, fitted, fail=fail, maybe=_split_repeats(case) if unfitted_maxsksd else ())


def shifted_student_t_score(X):
    return student_t_score(np.asarray(X, dtype=np.float64) - 0.5)


@FUZZ
@given(case=cases(min_rows=3, max_n=10, model_name="model_p", bandwidths=False),
       fitted=st.booleans(), tilt=st.sampled_from(["auto", 0.5, 2.0]))
def test_relative_ksd_test_tilted(case, fitted, tilt):
    case.model = student_t_score
    case.fail -= {"model_p"}
    case.maybe -= {"model_p"}
    _gof(lambda: RelativeKSDTest(case.model, shifted_student_t_score, n_bandwidths=3,
                                 tilt=tilt, random_state=0), case, fitted)


@FEW
@given(case=cases(min_rows=3), fitted=st.booleans())
def test_relative_mmd_test(case, fitted):
    case.fail.discard("model")
    case.maybe.discard("model")
    d = _width(case)
    _gof(lambda: RelativeMMDTest(Gaussian(np.zeros(d)), Gaussian(np.ones(d)),
                                 bandwidth=case.bandwidth, random_state=0), case, fitted)


@FEW
@given(case=cases(min_rows=1, model_name="target"),
       cls=st.sampled_from([SVGD, SlicedSVGD]),
       optimizer=st.sampled_from(["adagrad", "sgd", "adam"]))
def test_samplers(case, cls, optimizer):
    def fn(X):
        est = cls(case.model, n_iter=3, bandwidth=case.bandwidth, optimizer=optimizer,
                  random_state=0).fit(X)
        assert est.particles_.shape == np.shape(case.data.canonical)
        return _finite(est.particles_)

    run(case, fn, lambda P: P, maybe=("X0",))  # the data are fit's X0


@FEW
@given(case=cases(min_rows=2, model_name="target", bandwidths=False),
       cls=st.sampled_from([SVGD, SlicedSVGD]))
def test_sampler_score(case, cls):
    run(case, lambda X: cls(case.model, n_iter=0, random_state=0).score(X), _finite)


# ---------------------------------------------------------------------------
# Cases the fuzzing found, kept as plain tests
# ---------------------------------------------------------------------------


def test_dataframes_are_read_as_their_values():
    pd = pytest.importorskip("pandas")
    X = np.random.default_rng(0).normal(size=(6, 3))
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    assert ksd(df, std_normal_score) == ksd(X, std_normal_score)
    est = KSDTest(std_normal_score, bandwidth="median", n_bootstrap=50, random_state=0)
    ref = KSDTest(std_normal_score, bandwidth="median", n_bootstrap=50, random_state=0)
    res, ref_res = est.fit(df).test(df), ref.fit(X).test(X)
    assert list(est.feature_names_in_) == ["a", "b", "c"]
    assert (res.statistic, res.pvalue) == (ref_res.statistic, ref_res.pvalue)


def test_wide_bandwidth_gives_the_constant_kernel_limit():
    # as h -> inf the RBF kernel tends to 1 and h_p(x, y) to s(x) . s(y); 1e300 used to
    # raise an OverflowError in h**2
    X = np.random.default_rng(0).normal(size=(6, 3))
    S = -X
    total = S.sum(axis=0) @ S.sum(axis=0)
    np.testing.assert_allclose(ksd(X, std_normal_score, bandwidth=1e300),
                               (total - np.sum(S * S)) / 30, rtol=1e-12)
    np.testing.assert_allclose(ksd(X, std_normal_score, bandwidth=1e300, statistic="v"),
                               total / 36, rtol=1e-12)
    np.testing.assert_array_equal(RBF(1e300)(X, X), 1.0)
    assert np.isfinite(max_sksd(X, std_normal_score, bandwidth=1e300))


@pytest.mark.parametrize("call", [
    lambda X: ksd(X, std_normal_score, bandwidth=1e-300),
    lambda X: max_sksd(X, std_normal_score, bandwidth=1e-300),
    lambda X: KSDTest(std_normal_score, bandwidth=1e-300).test(X),
    lambda X: SVGD(std_normal_score, bandwidth=1e-300, n_iter=2).fit(X),
    lambda X: RBF(1e-300),
])
def test_vanishing_bandwidth_is_refused_by_name(call):
    # 1/h**4 overflows: a ZeroDivisionError in compiled code or a NaN before
    X = np.random.default_rng(0).normal(size=(6, 2))
    with pytest.raises(ValueError, match="bandwidth"):
        call(X)


@pytest.mark.parametrize("X", [np.ones((1, 2)), [["a", "b"], ["c", "d"]], np.ones((2, 2, 2)),
                               np.array([[1.0, np.nan], [0.0, 1.0]])])
def test_bad_samples_are_named(X):
    for call in (lambda: ksd(X, std_normal_score), lambda: KSDTest(std_normal_score).fit(X),
                 lambda: median_bandwidth(X)):
        with pytest.raises(ValueError, match=r"\bX\b"):
            call()


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # before the refusal
def test_overflowing_data_and_scores_are_refused():
    X = np.array([[1e200], [0.0]])
    for call in (lambda: median_bandwidth(X), lambda: ksd(X, std_normal_score, bandwidth=1.0),
                 lambda: linear_ksd(X, std_normal_score, bandwidth=1.0)):
        with pytest.raises(ValueError, match=r"\bX\b"):
            call()
    huge = MODELS["huge"][0]
    Y = np.array([[0.0], [1.0]])
    with pytest.raises(ValueError, match="model"):
        ksd(Y, huge, bandwidth=1.0)
    with pytest.raises(ValueError, match="scores"):
        SlicedSVGD(huge, n_iter=0).score(Y)  # was -inf
    with pytest.raises(ValueError, match="target"):
        SVGD(huge, n_iter=2).fit(np.zeros((1, 1)))  # the adagrad step overflowed to 0


def test_rfsd_with_a_degenerate_feature_covariance():
    # equal rows: no component of the feature covariance is active; the simulated null
    # broadcast an empty set of eigenvectors into the draws and failed
    res = RFSDTest(std_normal_score, n_features=3, bandwidth=1.0, n_simulate=50,
                   random_state=0).test(np.zeros((2, 1)))
    assert np.isfinite(res.statistic) and 0 < res.pvalue <= 1
    np.testing.assert_array_equal(res.null_distribution, 0.0)


def test_fssd_refuses_an_unknown_bandwidth_rule():
    # every string used to mean "median"
    with pytest.raises(ValueError, match="bandwidth"):
        FSSDTest(std_normal_score, bandwidth="wide").test(np.eye(3))


@pytest.mark.filterwarnings("ignore:the multinomial bootstrap's level")
def test_small_training_parts_skip_the_held_out_selection():
    # a direction search on 3 to 5 samples could hold out no valid validation part, so an
    # unfitted MaxSKSDTest failed on 13 to 27 samples (training parts of 3 to 5)
    X = np.random.default_rng(0).normal(size=(15, 2))
    res = MaxSKSDTest(std_normal_score, max_iter=3, n_bootstrap=50, random_state=0).test(X)
    assert np.isfinite(res.statistic) and 0 < res.pvalue <= 1
    # the cross-fitted relative test learns on halves of 4 (its documented minimum is 8)
    res = RelativeKSDTest(std_normal_score, shifted_score, discrepancy="maxsksd",
                          random_state=0).test(X[:8])
    assert np.isfinite(res.statistic) and 0 <= res.pvalue <= 1


def test_data_driven_starts_along_which_the_samples_coincide_are_dropped():
    # from two points a Stein-moment start can be orthogonal to their difference
    X = np.array([[0.0, 0.0], [1.0, 1.0]])
    res = search_directions(X, std_normal_score, init="auto", max_iter=3, random_state=0)
    assert np.all(np.isfinite(res.directions)) and "identity" in [c[0] for c in res.candidates]


def test_starts_along_which_the_samples_coincide_up_to_rounding_are_dropped():
    # two distinct points repeated: a data-driven start orthogonal to their difference
    # projects them to values that differ by rounding only (bandwidth ~1e-16 before)
    X = np.repeat(np.random.default_rng(0).standard_normal((2, 2)), 150, axis=0)
    res = MaxSKSDTest(Gaussian(np.zeros(2)), moment=False, random_state=0).test(X)
    assert np.min(res.bandwidths) > 1e-3
    assert np.max(res.statistics) < 1e3


def test_two_equal_columns_give_no_rounding_bandwidth():
    # a start orthogonal to two equal columns projects every point to rounding noise
    # (~1e-17, small against the data but not against the largest projection): it is
    # dropped, not tested with a bandwidth of 2e-17 (a statistic of 3e32 before)
    x = np.random.default_rng(1).standard_normal((200, 1))
    res = MaxSKSDTest(Gaussian(np.zeros(2)), random_state=0).test(np.c_[x, x])
    assert np.nanmin(res.bandwidths) > 1e-3
    assert np.all(np.isfinite(res.statistics)) and res.statistic < 1e3


def test_fitted_maxsksd_names_x_when_the_moment_terms_overflow():
    # learned on well-scaled points, tested on points 1e150 times larger: the moment
    # statistics' terms overflow; a clear error, not a NaN statistic with a p-value
    X = np.random.default_rng(0).standard_normal((40, 2))
    test = MaxSKSDTest(Gaussian(np.zeros(2)), random_state=0).fit(X)
    with pytest.raises(ValueError, match=r"moment statistics overflow .* rescale X"):
        test.test(X * 1e150)
    assert np.isfinite(test.test(X * 1e40).statistic)


def test_data_constant_along_a_feature_takes_the_other_directions_median():
    # no median heuristic along the constant feature's axis: that direction takes the
    # median of the other directions' bandwidths (an error naming the argument before),
    # and the test sees that the model's unit variance is missing there
    X = np.random.default_rng(0).standard_normal((100, 4))
    X[:, 2] = 0.0
    model = Gaussian(np.zeros(4))
    for kw in ({}, {"test_bandwidth": "aggregate"}, {"bandwidth": 1.0}):
        res = MaxSKSDTest(model, n_bootstrap=100, random_state=0, **kw).test(X)
        assert res.reject and np.isfinite(res.statistic), kw
    h = max_sksd(X, model, return_pairs=True)[2]
    others = median_bandwidth_1d(X[:, [0, 1, 3]])
    np.testing.assert_allclose(h[[0, 1, 3]], others)
    assert h[2] == np.median(others)
    # along every direction: no bandwidth to borrow, an error naming the argument
    with pytest.raises(ValueError, match=r"bandwidth='median': all samples coincide along "
                                         r"every direction"):
        max_sksd(np.ones((5, 2)), Gaussian(np.zeros(2)))


def test_sliced_median_counts_a_spread_of_rounding_as_flat():
    from skstein.discrepancy import resolve_sliced_bandwidth, resolve_sliced_bandwidths

    # along the difference of two equal columns every projection is rounding: with the
    # samples behind the projections that direction takes the others' median bandwidth
    x = np.random.default_rng(3).standard_normal((300, 1))
    X = np.c_[x, x, np.random.default_rng(4).standard_normal((300, 1))]
    G = np.array([[1.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]) / [[2**0.5], [1], [1]]
    U = X @ G.T
    assert 0 < np.ptp(U[:, 0]) < 1e-14
    h = resolve_sliced_bandwidth(U, "median", samples=(X, G))
    np.testing.assert_allclose(h[1:], median_bandwidth_1d(U[:, 1:]))
    assert h[0] == np.median(h[1:])
    assert resolve_sliced_bandwidth(U, "median")[0] < 1e-14    # the projections alone
    rows = resolve_sliced_bandwidths(U, "aggregate", 4, samples=(X, G))
    np.testing.assert_allclose(rows / rows[:, :1], np.broadcast_to(h / h[0], (4, 3)))
    # an explicit bandwidth is left as given
    np.testing.assert_array_equal(resolve_sliced_bandwidth(U, 0.5, samples=(X, G)), 0.5)


def test_rank_samples_names_the_candidate():
    test = KSDTest(std_normal_score, bandwidth="median")
    with pytest.raises(ValueError, match=r"samples\['b'\] has 2 features"):
        rank_samples({"a": np.eye(3), "b": np.ones((3, 2))}, test, n_bootstrap=20)
    # a constant candidate has no median distance of its own; the pooled one serves
    cands = {"a": np.eye(3), "b": np.ones((3, 3))}
    with pytest.raises(ValueError, match=r"on samples\['b'\]: .*coincide"):
        rank_samples(cands, {"a": test, "b": test}, n_bootstrap=20)
    assert np.all(np.isfinite(rank_samples(cands, test, n_bootstrap=20).values))
