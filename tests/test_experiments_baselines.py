import numpy as np
import pytest

from skstein import FSSDTest, GOFTestResult, LinearKSDTest, MMDGOFTest, RFSDTest
from skstein.distributions import Gaussian, Laplace
from skstein.experiments._baselines import BASELINES, make_baseline


@pytest.mark.parametrize("method", BASELINES)
def test_each_baseline_runs_on_a_small_case(method):
    model = Gaussian(np.zeros(3))
    X = Laplace(3).rvs(200, random_state=0)
    test = make_baseline(method, model, 100).set_params(random_state=0)
    res = test.test(X)
    assert isinstance(res, GOFTestResult)
    assert 0 < res.pvalue <= 1 and np.isfinite(res.statistic)
    assert res.reject == (res.pvalue <= 0.05)
    if method != "LinearKSD":
        assert res.n_bootstrap == 100


def test_paper_settings():
    model = Gaussian(np.zeros(4))
    opt = make_baseline("FSSD-opt", model, 500)
    assert isinstance(opt, FSSDTest) and opt.optimize and opt.n_locations == 10
    assert opt.train_size == 0.2 and opt.max_iter == 40 and opt.n_simulate == 500
    rand = make_baseline("FSSD-rand", model, 500)
    assert not rand.optimize and rand.n_locations == 10
    imq = make_baseline("RFSD-IMQ", model, 500)
    assert isinstance(imq, RFSDTest) and imq.feature == "l1-imq" and imq.n_features == 10
    assert imq.gamma == 0.25 and imq.nu_df == 0.5 and imq.null_samples == 5000 + 500 * 4
    assert make_baseline("RFSD-SechExp", model, 500).null_samples == 5000
    # the paper's Gaussian null, also where the covariance comes from the data
    for method in ("RFSD-IMQ", "RFSD-SechExp", "RFF-Gauss", "RFF-Cauchy"):
        assert make_baseline(method, model, 500, model_null=False).null == "gaussian"
    assert make_baseline("RFF-Cauchy", model, 500).feature == "rff-cauchy"
    assert make_baseline("RFF-Gauss", model, 500).feature == "rff-gauss"
    mmd = make_baseline("MMD", model, 500)
    assert isinstance(mmd, MMDGOFTest) and mmd.n_permutations == 500
    assert isinstance(make_baseline("LinearKSD", model, 500), LinearKSDTest)
    # a model given by its score alone: the random-feature tests fall back on the data
    assert make_baseline("RFF-Gauss", lambda X: -X, 500).null_samples is None
    with pytest.raises(ValueError, match="unknown baseline"):
        make_baseline("KSD-sliced", model, 500)


@pytest.mark.slow
def test_trials_do_not_depend_on_n_jobs():
    from skstein.experiments import rejection_rate

    model = Gaussian(np.zeros(3))
    for method in ("FSSD-opt", "RFSD-SechExp"):
        test = make_baseline(method, model, 100)
        a = rejection_rate(test, Laplace(3), 300, n_trials=4, random_state=5, n_jobs=1)
        b = rejection_rate(test, Laplace(3), 300, n_trials=4, random_state=5, n_jobs=2)
        assert np.array_equal(a.pvalues, b.pvalues)
        assert np.array_equal(a.statistics, b.statistics)
