"""Settings and output of the experiments: the run's configuration, a CSV of the numbers
next to a PNG plot."""

import csv
import os

__all__ = ["write_csv", "pyplot", "format_table", "run_config", "save_figure", "panel_row",
           "finish_rate_panels", "offset_rate_curves", "rate_panels_by_case"]


def write_csv(rows, path):
    """Write a list of flat dicts as CSV (columns in first-seen order)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    columns = []
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _fmt(v) for k, v in row.items()})
    return path


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.6g}"
    return v


def pyplot():
    """matplotlib.pyplot with the non-interactive Agg backend, or None if not installed."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def format_table(rows, columns):
    """A plain-text table of ``rows`` (dicts) restricted to ``columns``."""
    cells = [[_fmt(r.get(c, "")) for c in columns] for r in rows]
    cells = [[f"{v:.4g}" if isinstance(v, float) else str(v) for v in row] for row in cells]
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c)
              for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


def run_config(quick_cfg, full_cfg, quick, n_trials=None, **grids):
    """The settings of a run: ``quick_cfg`` or ``full_cfg`` (copied), with the overrides.

    ``n_trials`` replaces ``"n_trials"`` when given; each keyword of ``grids`` that is
    not None replaces the grid of that name, as a tuple.
    """
    cfg = dict(quick_cfg if quick else full_cfg)
    if n_trials is not None:
        cfg["n_trials"] = n_trials
    for name, values in grids.items():
        if values is not None:
            cfg[name] = tuple(values)
    return cfg


def save_figure(fig, path):
    """Lay out ``fig``, write it to ``path`` (PNG, 120 dpi), close it; returns ``path``."""
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    pyplot().close(fig)
    return path


def panel_row(n_panels, width, height):
    """``(fig, axes)``: one row of ``n_panels`` panels of ``width`` x ``height`` inches each
    (``axes`` of shape (1, n_panels)), or ``(None, None)`` without matplotlib."""
    plt = pyplot()
    if plt is None:
        return None, None
    return plt.subplots(1, n_panels, figsize=(width * n_panels, height), squeeze=False)


def finish_rate_panels(fig, axes, path, legend_size="small"):
    """Label the rejection rates of a row of panels (y axis of the first, legend in the
    last) and save the figure to ``path``; returns ``path``."""
    axes[0, 0].set_ylabel("rejection rate")
    axes[0, -1].legend(fontsize=legend_size)
    return save_figure(fig, path)


def offset_rate_curves(ax, rows, methods, x, spread, markers="osD^v<>"):
    """Each method's rejection rate (binomial error bars) against ``x``, on ``ax``.

    ``rows`` are the rows of one panel. Methods often agree, so method ``k`` is shifted
    sideways by ``(k - (len(methods) - 1) / 2) * spread`` and drawn with its own marker.
    """
    for k, method in enumerate(methods):
        sub = [r for r in rows if r["method"] == method]
        shift = (k - (len(methods) - 1) / 2) * spread
        ax.errorbar([r[x] + shift for r in sub], [r["rejection_rate"] for r in sub],
                    yerr=[r["stderr"] for r in sub], marker=markers[k % len(markers)],
                    capsize=2, label=method)


def rate_panels_by_case(rows, path, cases, titles, *, width, xlabel, null_case,
                        markers="osD^v<>"):
    """Rejection rate against ``n``, one panel of ``width`` inches per case; returns ``path``.

    The panels follow the order of ``cases``, keeping those ``rows`` have, titled by
    ``titles[case]``; methods are drawn as in :func:`offset_rate_curves`, and a dashed
    line marks the level 0.05 on the panels where ``null_case(case)`` holds. Returns
    None without matplotlib.
    """
    cases = [c for c in cases if any(r["case"] == c for r in rows)]
    fig, axes = panel_row(len(cases), width, 3.4)
    if fig is None:
        return None
    methods = list(dict.fromkeys(r["method"] for r in rows))
    ns = sorted({r["n"] for r in rows})
    spread = 0.015 * (ns[-1] - ns[0] if len(ns) > 1 else ns[0])
    for ax, case in zip(axes[0], cases):
        offset_rate_curves(ax, [r for r in rows if r["case"] == case], methods, "n", spread,
                           markers=markers)
        ax.set_title(titles[case], fontsize="small")
        ax.set_xlabel(xlabel)
        ax.set_ylim(-0.03, 1.03)
        if null_case(case):
            ax.axhline(0.05, color="grey", lw=0.8, ls="--")
    return finish_rate_panels(fig, axes, path)
