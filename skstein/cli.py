"""The ``skstein`` console command (also ``python -m skstein``).

::

    skstein demo [--quick] [--out DIR]
    skstein reproduce NAME [--quick] [--trials N] [--n-jobs N] [--seed S] [--out DIR]
                      [--verbose | --quiet] [--methods A,B,...]
    skstein reproduce --list
    skstein precompile [--families F ...] [--n-jobs N]

``reproduce`` shows a progress bar per setting and one over all settings, with the
time left, on standard error when that is a terminal; ``--verbose`` shows them
anywhere (e.g. in a log) and ``--quiet`` never. The numbers do not depend on them.
"""

import argparse
import os
import sys
import time

__all__ = ["main", "demo"]


def demo(*, quick=False, out_dir="skstein_results", random_state=0, stream=None):
    """Goodness-of-fit tests of a standard-normal model against four data sets.

    Prints a table (statistic, p-value, decision, seconds per test) and writes a
    plot of each test's bootstrap null distribution with its statistic.
    Returns the rows.
    """
    import numpy as np

    from .experiments._output import format_table, pyplot
    from .experiments.gof_gaussian import CASES, setting
    from .gof import KSDTest

    stream = stream or sys.stdout
    # the high-dimensional part's kernels compile in another process meanwhile
    background = _compile_in_background(["maxsksd"])
    dim, n = (5, 300) if quick else (10, 1000)
    rng = np.random.default_rng(random_state)
    print(f"skstein demo: is the sample N(0, I_{dim})?  (n = {n}, alpha = 0.05)\n", file=stream)
    rows, results = [], []
    for case in CASES:
        model, data = setting(case, dim)
        X = data.rvs(n, random_state=rng)
        for kernel in ("rbf", "imq"):
            test = KSDTest(model, kernel=kernel, n_bootstrap=1000, random_state=rng)
            t0 = time.perf_counter()
            res = test.test(X)
            rows.append({"data": case, "test": f"KSD-{kernel}", "statistic": res.statistic,
                         "p-value": res.pvalue, "reject H0": "yes" if res.reject else "no",
                         "seconds": time.perf_counter() - t0})
            results.append((case, kernel, res))
    print(format_table(rows, list(rows[0])), file=stream)
    print("\n'null' is drawn from the model (H0 true); the other rows are alternatives.",
          file=stream)
    if background is not None:
        background.wait()
    rows += _demo_high_dim(quick, rng, stream)
    plt = pyplot()
    if plt is None:
        print("(matplotlib not installed: no plot; pip install 'skstein[plot]')", file=stream)
        return rows
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "demo.png")
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(2, len(CASES), figsize=(3.2 * len(CASES), 5.6))
    for ax, (case, kernel, res) in zip(axes.T.ravel(), results):
        ax.hist(res.null_distribution, bins=40, color="0.75", label="bootstrap null")
        ax.axvline(res.statistic, color="C3", label="statistic")
        ax.set_title(f"{case}, KSD-{kernel}\np = {res.pvalue:.3g}", fontsize="small")
        # The statistics are of order 1e-3 to 1e-2: a few ticks, with the power of ten
        # written once at the end of the axis, keep the labels apart at this size.
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
        ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 0))
        ax.xaxis.get_offset_text().set_fontsize("x-small")
        ax.tick_params(labelsize="x-small")
    for ax in axes[:, 0]:
        ax.set_ylabel("bootstrap draws", fontsize="small")
    axes[0, 0].legend(fontsize="x-small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"\nplot written to {path}", file=stream)
    return rows


def _compile_in_background(families):
    """Start ``skstein precompile`` of ``families`` in another process, or return None.

    Only when some of their kernels are not in numba's cache and the machine has a
    second core: a first use of skstein then compiles them while the caller runs (and
    compiles) something else, instead of one after the other. The caller waits for the
    returned process (``.wait()``) before it uses those families; if it fails, the
    caller's own first call compiles them. On 2 cores the first ``skstein demo
    --quick`` took 19.6 s with it and 23.6-24.6 s without.
    """
    from .precompile import cold_families

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if (cores or 1) < 2 or not cold_families(families):
        return None
    import subprocess

    try:
        return subprocess.Popen([sys.executable, "-m", "skstein", "precompile", "--families",
                                 *families, "--n-jobs", "1"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return None


def _demo_high_dim(quick, rng, stream):
    """KSD against maxSKSD-g in 50 dimensions: Laplace coordinates against a normal model."""
    import numpy as np

    from .distributions import Gaussian, Laplace
    from .experiments._output import format_table
    from .gof import KSDTest, MaxSKSDTest

    dim, n = 50, (500 if quick else 1000)
    model = Gaussian(np.zeros(dim))
    print(f"\nIn {dim} dimensions: is a sample of independent unit-variance Laplace "
          f"coordinates N(0, I_{dim})?  (n = {n})", file=stream)
    X = Laplace(dim).rvs(n, random_state=rng)
    tests = [("KSD-rbf", KSDTest(model, n_bootstrap=1000, random_state=rng)),
             ("maxSKSD-g", MaxSKSDTest(model, n_bootstrap=1000, random_state=rng))]
    rows = []
    for name, test in tests:
        t0 = time.perf_counter()
        res = test.test(X)
        rows.append({"data": f"laplace-{dim}d", "test": name, "statistic": res.statistic,
                     "p-value": res.pvalue, "reject H0": "yes" if res.reject else "no",
                     "seconds": time.perf_counter() - t0})
    print(format_table(rows, list(rows[0])), file=stream)
    print(f"The KSD's {dim}-dimensional kernel barely sees the heavier tails, whose effect is "
          "spread thinly over all coordinates; maxSKSD compares sample and model along learned "
          "1-D directions (fitted on 20% of the sample, tested on the rest), and in the "
          "second and fourth moments of the whole sample, and finds them.",
          file=stream)
    return rows


def _count_settings(name, kwargs):
    """The number of settings of experiment ``name`` run with ``kwargs`` (None: unknown)."""
    import importlib

    from .experiments import EXPERIMENTS
    from .experiments._runner import count_settings

    entry = EXPERIMENTS.get(name)
    if entry is None:
        return None
    path, extra = (entry, {}) if isinstance(entry, str) else entry
    kwargs = dict(kwargs, verbose=0, **extra)
    if kwargs["methods"] is None:
        del kwargs["methods"]
    return count_settings(importlib.import_module(path).run, **kwargs)


def _reproduce(args):
    from ._progress import progress_enabled
    from .experiments import EXPERIMENTS, reproduce, table
    from .experiments._runner import overall_progress

    if args.list or not args.name:
        print("experiments: " + ", ".join(sorted(EXPERIMENTS)))
        return 0
    verbose = 1 if args.verbose else 0 if args.quiet else "auto"
    kwargs = dict(quick=args.quick, n_trials=args.trials, n_jobs=args.n_jobs,
                  random_state=args.seed,
                  methods=args.methods.split(",") if args.methods else None)
    # The overall bar needs the number of settings: the experiment's bookkeeping is run
    # once without its trials to count them (only when the bar is shown).
    total = _count_settings(args.name, kwargs) if progress_enabled(verbose) else None
    with overall_progress(total, verbose=verbose, desc=f"{args.name}, all settings"):
        rows, csv_path, png_path, elapsed = reproduce(args.name, out_dir=args.out,
                                                      verbose=verbose, **kwargs)
    print(table(rows))
    print(f"\n{len(rows)} rows in {elapsed:.1f} s; numbers in {csv_path}")
    if png_path:
        print(f"plot in {png_path}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="skstein", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_demo = sub.add_parser("demo", help="short end-to-end demonstration")
    p_demo.add_argument("--quick", action="store_true", help="smaller, a few seconds")
    p_demo.add_argument("--out", default="skstein_results", help="folder for the plot")
    p_demo.add_argument("--seed", type=int, default=0)
    p_rep = sub.add_parser("reproduce", help="run a paper reproduction; writes CSV and PNG")
    p_rep.add_argument("name", nargs="?")
    p_rep.add_argument("--list", action="store_true", help="list the experiments")
    p_rep.add_argument("--quick", action="store_true", help="CI-sized run")
    p_rep.add_argument("--trials", type=int, default=None, help="trials per setting")
    p_rep.add_argument("--n-jobs", type=int, default=None, help="joblib workers (-1: all)")
    p_rep.add_argument("--seed", type=int, default=0)
    p_rep.add_argument("--out", default="skstein_results")
    shown = p_rep.add_mutually_exclusive_group()
    shown.add_argument("-v", "--verbose", action="store_true",
                       help="progress bars on standard error even when it is not a terminal")
    shown.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    p_rep.add_argument("--methods", default=None,
                       help="comma-separated test names (experiments with a method set)")
    p_pre = sub.add_parser("precompile", help="compile the kernels for this environment, "
                           "one family per process (fills numba's cache)")
    p_pre.add_argument("--families", nargs="*", default=None,
                       help="ksd, maxsksd, relative, svgd, discrete (default: all)")
    p_pre.add_argument("--n-jobs", type=int, default=None, help="processes (default: cores)")
    args = parser.parse_args(argv)
    if args.command == "precompile":
        from .precompile import precompile

        times = precompile(args.families, n_jobs=args.n_jobs)
        for name, sec in times.items():
            print(f"{name:10s} {sec:6.1f} s")
        return 0
    if args.command == "demo":
        demo(quick=args.quick, out_dir=args.out, random_state=args.seed)
        return 0
    return _reproduce(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
