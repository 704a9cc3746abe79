"""Plots of the report, each written as PNG and SVG with no time stamp in the file."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - the backend must be chosen first
import pandas as pd  # noqa: E402

from ifaudit.canonical import atomic_write_bytes  # noqa: E402
from ifaudit.graders import STAND_IN  # noqa: E402

plt.rcParams.update({"svg.hashsalt": "ifaudit", "font.size": 10, "axes.spines.top": False,
                     "axes.spines.right": False})


def _save(figure: plt.Figure, stem: Path) -> None:
    import io

    stem.parent.mkdir(parents=True, exist_ok=True)
    for fmt, metadata in (("png", {"Software": None}), ("svg", {"Date": None})):
        buffer = io.BytesIO()
        figure.savefig(buffer, format=fmt, dpi=150, bbox_inches="tight", metadata=metadata)
        atomic_write_bytes(stem.with_suffix(f".{fmt}"), buffer.getvalue())
    plt.close(figure)


def plot_accuracy(metrics: pd.DataFrame, stem: Path) -> None:
    """One row per metric; each run a point with its interval; published figures as diamonds."""
    runs = list(dict.fromkeys(metrics["run"]))
    titles = list(dict.fromkeys(metrics["title"]))
    figure, axes = plt.subplots(figsize=(7.5, 1.1 + 0.55 * len(titles) * max(1, len(runs)) ** 0.5))
    step = 0.7 / max(1, len(runs))
    for index, run in enumerate(runs):
        rows = metrics[metrics["run"] == run]
        y = [titles.index(title) - 0.35 + step * (index + 0.5) for title in rows["title"]]
        value = 100 * rows["value"]
        error = [value - 100 * rows["ci_low"], 100 * rows["ci_high"] - value]
        first = rows.iloc[0]
        label = first["label"] + (" · stand-in grader" if first["grader_kind"] == STAND_IN else "")
        label += "" if first["counted"] else " (NOT COUNTED)"
        axes.errorbar(value, y, xerr=error, fmt="o", capsize=4, label=label)
        for text_y, v, low, high in zip(y, value, 100 * rows["ci_low"], 100 * rows["ci_high"]):
            axes.annotate(f"{v:.1f} [{low:.1f}, {high:.1f}]", (high, text_y), xytext=(6, 0),
                          textcoords="offset points", va="center", fontsize=8)
        published = rows[rows["published"].notna()]
        if len(published):
            published_y = [y[list(rows.index).index(i)] for i in published.index]
            axes.scatter(100 * published["published"].astype(float), published_y, marker="D", facecolors="none",
                         edgecolors="black", zorder=3, label=f"published ({run})")
    axes.set_yticks(range(len(titles)), titles)
    axes.invert_yaxis()
    level = int(round(100 * metrics["level"].iloc[0]))
    axes.set_xlabel(f"accuracy (%) with {level} % cluster-bootstrap interval")
    low, high = 100 * metrics["ci_low"].min(), 100 * metrics["ci_high"].max()
    axes.set_xlim(max(0, low - 5), min(100, high + 12))
    axes.grid(axis="x", alpha=0.3)
    axes.legend(loc="lower left", fontsize=8, frameon=False, bbox_to_anchor=(0, 1.0), ncol=2)
    _save(figure, stem)


def plot_differences(comparisons: pd.DataFrame, stem: Path) -> None:
    """Each paired difference with its interval, in points, around a zero line."""
    labels = [f"{row['comparison']}\n{row['metric']}" for _, row in comparisons.iterrows()]
    figure, axes = plt.subplots(figsize=(7.5, 1.0 + 0.45 * max(1, len(labels))))
    value = 100 * comparisons["value"]
    error = [value - 100 * comparisons["ci_low"], 100 * comparisons["ci_high"] - value]
    axes.errorbar(value, range(len(labels)), xerr=error, fmt="o", capsize=4, color="tab:purple")
    axes.axvline(0, color="grey", linewidth=1)
    axes.set_yticks(range(len(labels)), labels, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel("difference (points) with paired-bootstrap interval")
    axes.grid(axis="x", alpha=0.3)
    _save(figure, stem)


def plot_breakdown(breakdown: pd.DataFrame, run: str, stem: Path) -> None:
    """Strict accuracy per instruction type, sorted, with Wilson intervals and cell sizes."""
    rows = breakdown[(breakdown["mode"] == "strict") & (breakdown["kind"] == "type")].sort_values("value")
    figure, axes = plt.subplots(figsize=(7.5, 1.0 + 0.28 * max(1, len(rows))))
    value = 100 * rows["value"]
    error = [value - 100 * rows["wilson_low"], 100 * rows["wilson_high"] - value]
    axes.errorbar(value, range(len(rows)), xerr=error, fmt="o", capsize=3, color="tab:green")
    axes.set_yticks(range(len(rows)), [f"{g} (n={t})" for g, t in zip(rows["group"], rows["total"])], fontsize=8)
    axes.set_xlabel("strict accuracy (%) with Wilson interval")
    axes.set_title(f"{run}: per instruction type", fontsize=10)
    axes.set_xlim(0, 102)
    axes.grid(axis="x", alpha=0.3)
    _save(figure, stem)
