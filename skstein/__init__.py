"""skstein: kernel Stein discrepancies for scikit-learn."""

__version__ = "0.1.0.dev0"

from . import distributions  # noqa: E402
from ._result import GOFTestResult, RelativeTestResult  # noqa: E402
from ._validation import HeavyTailWarning  # noqa: E402
from .discrepancy import ksd, ksd_power_criterion, max_sksd, stein_matrix  # noqa: E402
from .gof import KSDTest, MaxSKSDTest, PerturbedKSDTest, PolynomialKSDTest  # noqa: E402
from .gof import FSSDTest, LinearKSDTest, MMDGOFTest, RFSDTest, linear_ksd  # noqa: E402
from .features import fssd, rfsd  # noqa: E402
from .directions import search_directions  # noqa: E402
from .kernels import IMQ, RBF, median_bandwidth  # noqa: E402
from .svgd import SVGD, SlicedSVGD  # noqa: E402
from .bnn import BNNRegressor  # noqa: E402
from .relative import RelativeKSDTest, RelativeMMDTest, relative_ksd  # noqa: E402
from .ranking import SampleRanking, rank_samples  # noqa: E402
from . import learning  # noqa: E402
from . import samplers  # noqa: E402
from . import experiments  # noqa: E402

__all__ = [
    "BNNRegressor",
    "SVGD",
    "SlicedSVGD",
    "__version__",
    "distributions",
    "GOFTestResult",
    "RelativeTestResult",
    "RelativeKSDTest",
    "RelativeMMDTest",
    "relative_ksd",
    "rank_samples",
    "SampleRanking",
    "learning",
    "samplers",
    "HeavyTailWarning",
    "KSDTest",
    "MaxSKSDTest",
    "PerturbedKSDTest",
    "PolynomialKSDTest",
    "max_sksd",
    "search_directions",
    "ksd",
    "ksd_power_criterion",
    "stein_matrix",
    "RBF",
    "IMQ",
    "median_bandwidth",
]
__all__ += ["FSSDTest", "LinearKSDTest", "RFSDTest", "MMDGOFTest", "fssd", "rfsd", "linear_ksd"]
