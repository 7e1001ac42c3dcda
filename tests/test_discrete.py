"""Discrete Stein operators: kernels against loops, Stein identities, engine invariances."""

import numpy as np
import pytest

from _reference_discrete import TableModel, all_states, stein_matrix_loop
from skstein._bootstrap import bootstrap_null
from skstein._numba import numba_threads
from skstein.discrete import (
    DISCRETE_KERNELS,
    OPERATORS,
    DiscreteKernel,
    check_discrete_samples,
    discrete_ksd,
    discrete_median_bandwidth,
    discrete_stein_matrix,
    discrete_stein_row_blocks,
    discrete_stein_sums,
    embedded_sqdist,
    operator_coefficients,
    resolve_operator,
)
from skstein.distributions import Categorical, Gaussian


def _categorical(rng, D, L, conc=1.0):
    return Categorical(rng.dirichlet(np.full(L, conc), size=D))


@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("kernel", list(DISCRETE_KERNELS))
def test_stein_matrix_matches_loop(operator, kernel):
    rng = np.random.default_rng(0)
    p = _categorical(rng, 4, 5)
    X = p.rvs(25, random_state=1)
    nvals = np.full(4, 5)
    C, _ = operator_coefficients(p, X, operator)
    kern = DiscreteKernel(kernel, 1.3, {"beta": -0.3} if "imq" in kernel else None)
    H = discrete_stein_matrix(X, C, kern, operator, nvals)
    R = stein_matrix_loop(X, C, operator, kern, nvals)
    np.testing.assert_allclose(H, R, rtol=1e-12, atol=1e-12 * np.abs(R).max())
    np.testing.assert_allclose(H, H.T, rtol=0, atol=1e-13 * np.abs(R).max())


@pytest.mark.parametrize("operator", OPERATORS)
def test_stein_matrix_matches_loop_mixed_sizes_and_binary(operator):
    """Per-coordinate n_values (one-hot kernels) and L = 2, where x + e_j = x - e_j."""
    rng = np.random.default_rng(1)
    logp = np.log(rng.dirichlet(np.ones(2 * 3 * 4))).reshape(2, 3, 4)

    class Mixed(TableModel):
        def __init__(self, logp):
            super().__init__(logp)
            self.n_values = np.array(logp.shape)

        def log_ratio(self, X, shift):
            out = np.empty(X.shape)
            for j in range(3):
                Xs = X.copy()
                Xs[:, j] = (Xs[:, j] + shift) % self.n_values[j]
                out[:, j] = self.logp[tuple(Xs.T)] - self.logp[tuple(X.T)]
            return out

    model = Mixed(logp)
    X = np.stack([rng.integers(0, L, 20) for L in (2, 3, 4)], axis=1)
    C, _ = operator_coefficients(model, X, operator)
    for kernel in ("rbf", "imq"):
        kern = DiscreteKernel(kernel, 0.9)
        H = discrete_stein_matrix(X, C, kern, operator, model.n_values)
        R = stein_matrix_loop(X, C, operator, kern, model.n_values)
        np.testing.assert_allclose(H, R, rtol=1e-12, atol=1e-12 * np.abs(R).max())


def test_embedded_distances_match_explicit_embeddings():
    from _reference_discrete import embed

    rng = np.random.default_rng(2)
    X = rng.integers(0, 6, size=(12, 7))
    nvals = np.full(7, 6)
    for kernel in ("rbf", "rbf-bow"):
        kern = DiscreteKernel(kernel, 1.0)
        E = np.array([embed(x, kernel, nvals) for x in X])
        T = ((E[:, None, :] - E[None, :, :]) ** 2).sum(-1)
        np.testing.assert_array_equal(kern.sqdist(X, X, nvals), T)
        pairs = np.sqrt(T[np.triu_indices(12, 1)])
        assert discrete_median_bandwidth(X, kern.embedding, nvals) == np.median(pairs)


@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("kernel", ["rbf", "imq-bow"])
def test_sums_blocks_and_threads_agree(operator, kernel):
    rng = np.random.default_rng(3)
    p = _categorical(rng, 6, 7)
    X = p.rvs(61, random_state=4)
    nvals = np.full(6, 7)
    C, _ = operator_coefficients(p, X, operator)
    kern = DiscreteKernel(kernel, 2.0)
    H = discrete_stein_matrix(X, C, kern, operator, nvals)
    full = discrete_stein_sums(X, C, kern, operator, nvals, return_matrix=True)
    offdiag = H - np.diag(np.diag(H))
    np.testing.assert_allclose(full.rowsums, offdiag.sum(axis=1), rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(full.offdiag_sum, offdiag.sum(), rtol=1e-12)
    np.testing.assert_allclose(full.diag, np.diag(H), rtol=1e-13)
    assert full.upper.flags.c_contiguous
    np.testing.assert_array_equal(np.tril(full.upper), 0.0)
    np.testing.assert_allclose(full.upper, np.triu(H, 1), rtol=1e-14)
    for memory in (8 * 61 * 5, 8 * 61 * 17, 10**9):
        blocked = discrete_stein_sums(X, C, kern, operator, nvals, max_memory=memory)
        np.testing.assert_allclose(blocked.rowsums, full.rowsums, rtol=1e-12, atol=1e-11)
        np.testing.assert_allclose(blocked.statistic("u"), full.statistic("u"), rtol=1e-11)
        np.testing.assert_allclose(blocked.statistic("v"), full.statistic("v"), rtol=1e-11)
        rows = np.vstack([blk for _, _, blk in discrete_stein_row_blocks(
            X, C, kern, operator, nvals, max_memory=memory)])
        np.testing.assert_allclose(rows, offdiag, rtol=1e-12, atol=1e-13 * np.abs(H).max())
    with numba_threads(1):
        serial = discrete_stein_sums(X, C, kern, operator, nvals, return_matrix=True)
    np.testing.assert_array_equal(serial.upper, full.upper)
    np.testing.assert_array_equal(serial.diag, full.diag)


@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("L", [2, 4])
def test_one_pass_over_many_kernels_matches_the_loop(operator, L):
    # every one-hot kernel's sums and forms from one pass over the pairs: against the
    # slow loop of the operator's definition, for any block size and thread count
    # (L = 2: a shift by +1 and by -1 land on the same value)
    from skstein._bootstrap import bootstrap_forms, bootstrap_weights
    from skstein.discrete import discrete_stein_sums_many

    rng = np.random.default_rng(5)
    p = _categorical(rng, 5, L)
    nvals = np.full(5, L)
    X = p.rvs(41, random_state=6)
    X[1] = X[0]   # a pair at Hamming distance 0
    C, _ = operator_coefficients(p, X, operator)
    kernels = [DiscreteKernel("rbf", 0.7), DiscreteKernel("imq", 1.5, {"beta": -0.3}),
               DiscreteKernel("rbf", 4.0)]
    V = bootstrap_weights("rademacher", 41, 30, np.random.default_rng(7))
    sums, forms = discrete_stein_sums_many(X, C, kernels, operator, nvals, V)
    for k, kern in enumerate(kernels):
        R = stein_matrix_loop(X, C, operator, kern, nvals)
        off = R - np.diag(np.diag(R))
        scale = np.abs(R).max()
        np.testing.assert_allclose(sums[k].diag, np.diag(R), rtol=1e-12, atol=1e-13 * scale)
        np.testing.assert_allclose(sums[k].rowsums, off.sum(axis=1), rtol=1e-11,
                                   atol=1e-11 * scale)
        np.testing.assert_allclose(sums[k].offdiag_sum, off.sum(), rtol=1e-11,
                                   atol=1e-10 * scale)
        np.testing.assert_allclose(forms[:, k], bootstrap_forms(np.triu(off, 1), V),
                                   rtol=1e-10, atol=1e-10 * scale)
    for memory in (8 * 41 * 3 * 4, 8 * 41 * 3 * 15):   # blocks of 4 and of 15 rows
        blocked, bforms = discrete_stein_sums_many(X, C, kernels, operator, nvals, V,
                                                   max_memory=memory)
        for k in range(len(kernels)):
            np.testing.assert_allclose(blocked[k].rowsums, sums[k].rowsums, rtol=1e-12,
                                       atol=1e-12 * np.abs(sums[k].rowsums).max())
        np.testing.assert_allclose(bforms, forms, rtol=1e-10, atol=1e-10 * np.abs(forms).max())
    with numba_threads(1):
        serial, sforms = discrete_stein_sums_many(X, C, kernels, operator, nvals, V)
    for a, b in zip(serial, sums):
        np.testing.assert_array_equal(a.rowsums, b.rowsums)
        assert a.offdiag_sum == b.offdiag_sum
    np.testing.assert_array_equal(sforms, forms)
    with pytest.raises(ValueError, match="one-hot"):
        discrete_stein_sums_many(X, C, [DiscreteKernel("rbf-bow", 1.0)], operator,
                                 np.full(5, 5))


def test_bootstrap_accepts_discrete_sums_and_row_blocks():
    rng = np.random.default_rng(5)
    p = _categorical(rng, 5, 4)
    X = p.rvs(40, random_state=6)
    nvals = np.full(5, 4)
    C, _ = operator_coefficients(p, X, "zanella-barker")
    kern = DiscreteKernel("rbf", 2.0)
    sums = discrete_stein_sums(X, C, kern, "zanella-barker", nvals, return_matrix=True)
    for method in ("multinomial", "rademacher"):
        a = bootstrap_null(sums.upper, method, 200, np.random.default_rng(0))
        blocks = discrete_stein_row_blocks(X, C, kern, "zanella-barker", nvals,
                                           max_memory=8 * 40 * 7)
        b = bootstrap_null(blocks, method, 200, np.random.default_rng(0), n=40)
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-14)


# --- Stein identities, all states weighted exactly -----------------------------------


def _expectation(model_p, model_h, operator, kernel, L, D):
    """E_{x, y ~ p} h_q(x, y) summed over every state, and the scale of the terms."""
    X = all_states(L, D)
    p = np.exp(model_p.logp[tuple(X.T)])
    C, _ = operator_coefficients(model_h, X, operator)
    H = discrete_stein_matrix(X, C, DiscreteKernel(kernel, 1.5), operator, np.full(D, L))
    return float(p @ H @ p), float(p @ np.abs(H) @ p)


@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("kernel", list(DISCRETE_KERNELS))
def test_stein_identity_exact_on_enumerable_distribution(operator, kernel):
    """E_p h_p = 0 to rounding for a dependent p on {0,1,2}^3; E_p h_q > 0 for q != p."""
    rng = np.random.default_rng(7)
    L, D = 3, 3
    p = TableModel(np.log(rng.dirichlet(np.ones(L**D))).reshape((L,) * D))
    q = TableModel(np.log(rng.dirichlet(np.ones(L**D))).reshape((L,) * D))
    value, scale = _expectation(p, p, operator, kernel, L, D)
    assert abs(value) <= 1e-13 * scale
    value_q, scale_q = _expectation(p, q, operator, kernel, L, D)
    assert value_q > 1e-3 * scale_q


def test_zanella_barker_identity_holds_with_zero_probabilities():
    """Zanella-Barker weights vanish into zero-probability states: the identity still holds."""
    rng = np.random.default_rng(8)
    L, D = 4, 2
    probs = rng.dirichlet(np.ones(L**D))
    probs[[1, 6, 11]] = 0.0
    probs /= probs.sum()
    with np.errstate(divide="ignore"):
        p = TableModel(np.log(probs).reshape(L, L))
    X = all_states(L, D)
    keep = probs > 0
    C, _ = operator_coefficients(p, X[keep], "zanella-barker")
    H = discrete_stein_matrix(X[keep], C, DiscreteKernel("rbf", 1.0), "zanella-barker",
                              np.full(D, L))
    w = probs[keep]
    assert abs(w @ H @ w) <= 1e-13 * (w @ np.abs(H) @ w)


def test_discrete_ksd_small_under_null_large_under_alternative():
    rng = np.random.default_rng(9)
    p = _categorical(rng, 8, 5, conc=2.0)
    Q = p.probs.copy()
    Q[:, 0] *= 3
    q = Categorical(Q / Q.sum(axis=1, keepdims=True))
    X = p.rvs(400, random_state=10)
    for op in OPERATORS:
        assert abs(discrete_ksd(X, p, operator=op)) < 0.1 * discrete_ksd(X, q, operator=op)


# --- validation ----------------------------------------------------------------------


def test_check_discrete_samples_errors():
    nv = np.array([3, 3])
    assert check_discrete_samples([[0.0, 2.0], [1.0, 1.0]], nv).dtype == np.int64
    assert check_discrete_samples(np.array([[True, False], [False, False]])).tolist() == \
        [[1, 0], [0, 0]]
    with pytest.raises(ValueError, match="whole number"):
        check_discrete_samples([[0.5, 1.0], [1.0, 1.0]], nv)
    with pytest.raises(ValueError, match="outside"):
        check_discrete_samples([[0, 3], [1, 1]], nv)
    with pytest.raises(ValueError, match="negative"):
        check_discrete_samples([[0, -1], [1, 1]], nv)
    with pytest.raises(ValueError, match="NaN"):
        check_discrete_samples([[0, np.nan], [1, 1]], nv)
    with pytest.raises(TypeError, match="integers"):
        check_discrete_samples(np.array([["a", "b"], ["c", "d"]]), nv)
    with pytest.raises(ValueError, match="2-D"):
        check_discrete_samples([0, 1, 2], nv)
    with pytest.raises(ValueError, match="at least 2"):
        check_discrete_samples([[0, 1]], nv)


def test_operator_resolution_and_errors():
    p = Categorical(np.full((2, 3), 1 / 3))
    assert resolve_operator(p, None) == "zanella-barker"
    assert resolve_operator(p, "difference") == "difference"
    assert resolve_operator(Gaussian(np.zeros(2)), None) is None
    with pytest.raises(TypeError, match="continuous model"):
        resolve_operator(Gaussian(np.zeros(2)), "difference")
    with pytest.raises(ValueError, match="operator"):
        resolve_operator(p, "langevin")
    with pytest.raises(TypeError, match="continuous"):
        discrete_ksd([[0, 1], [1, 2]], Gaussian(np.zeros(2)))
    with pytest.raises(ValueError, match="outside"):
        discrete_ksd([[0, 1], [1, 3]], p)
    with pytest.raises(ValueError, match="2 dimensions"):
        discrete_ksd([[0, 1, 1], [1, 2, 0]], p)


def test_difference_overflow_is_reported_and_barker_is_finite():
    """A value of tiny probability next to a likely one: the difference score overflows."""
    probs = np.array([[1e-320, 1.0 - 1e-12, 1e-12]] * 2)
    probs[:, 1] = 1.0 - probs[:, 0] - probs[:, 2]
    p = Categorical(probs)
    X = np.array([[0, 1], [1, 1], [2, 2]])
    with pytest.raises(ValueError, match="zanella-barker"):
        operator_coefficients(p, X, "difference")
    W, _ = operator_coefficients(p, X, "zanella-barker")
    assert np.all((W >= 0) & (W <= 1))


def test_zero_probability_rows_are_rejected():
    p = Categorical([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    with pytest.raises(ValueError, match="probability 0"):
        operator_coefficients(p, np.array([[2, 0], [0, 1]]), "zanella-barker")


def test_bow_kernel_needs_one_vocabulary():
    rng = np.random.default_rng(0)
    X = np.stack([rng.integers(0, 3, 10), rng.integers(0, 4, 10)], axis=1)
    with pytest.raises(ValueError, match="vocabulary"):
        embedded_sqdist(X, X, "bow", np.array([3, 4]))
