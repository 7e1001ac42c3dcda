"""Writing experiment results: a CSV of the numbers next to a PNG plot."""

import csv
import os

__all__ = ["write_csv", "pyplot", "format_table"]


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
