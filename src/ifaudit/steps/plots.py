"""Plots of the report, each written as PNG and SVG with no time stamp in the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - the backend must be chosen first
import pandas as pd  # noqa: E402

from ifaudit.io.canonical import atomic_write_bytes  # noqa: E402
from ifaudit.core.identity import GraderKind  # noqa: E402

plt.rcParams.update({"svg.hashsalt": "ifaudit", "font.size": 10, "axes.spines.top": False, "axes.spines.right": False})


def _save(figure: plt.Figure, stem: Path) -> None:
    import io

    stem.parent.mkdir(parents=True, exist_ok=True)
    for fmt, metadata in (("png", {"Software": None}), ("svg", {"Date": None})):
        buffer = io.BytesIO()
        figure.savefig(buffer, format=fmt, dpi=150, bbox_inches="tight", metadata=metadata)
        atomic_write_bytes(stem.with_suffix(f".{fmt}"), buffer.getvalue())
    plt.close(figure)


def _legend_below(axes: plt.Axes, handles: list[Any], labels: list[str]) -> None:
    """One entry a line just under the x label: fits any number of runs and any label length."""
    figure = axes.get_figure(root=True)
    assert figure is not None, "the axes belong to a figure"
    axes_height = axes.get_position().height * figure.get_figheight()  # inches
    axes.legend(
        handles,
        labels,
        loc="upper left",
        bbox_to_anchor=(0, -0.62 / axes_height),
        fontsize=8,
        frameon=False,
        ncol=1,
        borderaxespad=0,
    )


def _slots(
    metrics: pd.DataFrame, runs: list[str], titles: list[str]
) -> tuple[dict[tuple[str, str], float], list[float]]:
    """A row for each (metric, run) that exists, grouped by metric in run order, so a metric only
    some runs have (a gated one) takes only their rows: no empty bands."""
    present = set(zip(metrics["title"], metrics["run"]))
    slots, centres, y = {}, [], 0.0
    for title in titles:
        band = [run for run in runs if (title, run) in present]
        for offset, run in enumerate(band):
            slots[title, run] = y + offset
        centres.append(y + (len(band) - 1) / 2)
        y += len(band) + 0.6
    return slots, centres


def plot_accuracy(metrics: pd.DataFrame, stem: Path) -> None:
    """A row per metric and run: the point with its interval, and the run's published figure (if
    any) as a diamond just below the point in the run's colour, so neither hides the other."""
    runs = list(dict.fromkeys(metrics["run"]))
    titles = list(dict.fromkeys(metrics["title"]))
    slots, centres = _slots(metrics, runs, titles)
    figure, axes = plt.subplots(figsize=(7.5, 1.0 + 0.3 * (len(slots) + 0.6 * len(titles))))
    handles: list[Any] = []
    labels: list[str] = []
    any_published = False
    for run in runs:
        rows = metrics[metrics["run"] == run]
        y = [slots[title, run] for title in rows["title"]]
        value = 100 * rows["value"]
        error = [value - 100 * rows["ci_low"], 100 * rows["ci_high"] - value]
        first = rows.iloc[0]
        label = first["label"] + (" · stand-in grader" if first["grader_kind"] == GraderKind.STAND_IN.value else "")
        label += "" if first["counted"] else " (NOT COUNTED)"
        bars = axes.errorbar(value, y, xerr=error, fmt="o", capsize=3, markersize=5, zorder=3)
        handles.append(bars)
        labels.append(label)
        for text_y, v, low, high in zip(y, value, 100 * rows["ci_low"], 100 * rows["ci_high"]):
            axes.annotate(
                f"{v:.1f} [{low:.1f}, {high:.1f}]",
                (high, text_y),
                xytext=(5, 0),
                textcoords="offset points",
                va="center",
                fontsize=7,
            )
        published = rows["published"].notna().to_numpy()
        if published.any():
            any_published = True
            axes.scatter(
                100 * rows["published"][published].astype(float),
                [t + 0.38 for t, p in zip(y, published) if p],
                marker="D",
                s=22,
                facecolors="none",
                edgecolors=bars[0].get_color(),
                linewidths=1.2,
                zorder=4,
            )
    if any_published:
        handles.append(
            plt.Line2D([], [], marker="D", linestyle="none", markerfacecolor="none", markeredgecolor="black")
        )
        labels.append("published figure (diamond under the run it belongs to)")
    axes.set_yticks(centres, titles)
    for previous, title in zip(titles, titles[1:]):  # a faint line between metric bands
        axes.axhline(
            centres[titles.index(title)] - (centres[titles.index(title)] - centres[titles.index(previous)]) / 2,
            color="grey",
            linewidth=0.5,
            alpha=0.4,
        )
    axes.set_ylim(max(slots.values()) + 0.7, -0.7)
    level = int(round(100 * metrics["level"].iloc[0]))
    axes.set_xlabel(f"accuracy (%) with {level} % cluster-bootstrap interval")
    axes.set_title(f"Accuracy of each run, {level} % intervals", fontsize=11, loc="left")
    points = pd.concat(
        [100 * metrics["ci_low"], 100 * metrics["ci_high"], 100 * metrics["published"].dropna().astype(float)]
    )
    axes.set_xlim(max(0, points.min() - 3), min(100, points.max()) + 14)
    axes.grid(axis="x", alpha=0.3)
    _legend_below(axes, handles, labels)
    _save(figure, stem)


def plot_differences(comparisons: pd.DataFrame, titles: dict[str, str], stem: Path) -> None:
    """Each paired difference with its interval, in points, around a zero line; rows labelled
    with the comparison and the metric's title."""
    labels = [
        row["comparison"] if ":" in row["a"] else f"{row['comparison']}: {titles.get(row['metric'], row['metric'])}"
        for _, row in comparisons.iterrows()
    ]
    figure, axes = plt.subplots(figsize=(7.5, 1.1 + 0.32 * max(1, len(labels))))
    value = 100 * comparisons["value"]
    error = [value - 100 * comparisons["ci_low"], 100 * comparisons["ci_high"] - value]
    axes.errorbar(value, range(len(labels)), xerr=error, fmt="o", capsize=3, markersize=5, color="tab:purple")
    for y, v, low, high in zip(range(len(labels)), value, 100 * comparisons["ci_low"], 100 * comparisons["ci_high"]):
        axes.annotate(
            f"{v:+.1f} [{low:+.1f}, {high:+.1f}]",
            (high, y),
            xytext=(5, 0),
            textcoords="offset points",
            va="center",
            fontsize=7,
        )
    axes.axvline(0, color="grey", linewidth=1)
    axes.set_yticks(range(len(labels)), labels, fontsize=8)
    axes.set_ylim(max(1, len(labels)) - 0.5, -0.5)
    if len(labels):
        low = min(0.0, float(100 * comparisons["ci_low"].min()))
        high = max(0.0, float(100 * comparisons["ci_high"].max()))
        span = max(1.0, high - low)
        axes.set_xlim(low - 0.08 * span, high + 0.3 * span)  # room for the labels right of each bar
    else:
        axes.text(0.5, 0.5, "no paired comparisons", transform=axes.transAxes, ha="center", va="center")
        axes.set_yticks([])
    axes.set_xlabel("difference A − B (points) with paired-bootstrap interval")
    axes.set_title("Paired differences", fontsize=11, loc="left")
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
    axes.set_title(f"{run}: strict accuracy per instruction type", fontsize=11, loc="left")
    axes.set_ylim(-0.5, max(1, len(rows)) - 0.5)
    axes.set_xlim(0, 102)
    axes.grid(axis="x", alpha=0.3)
    _save(figure, stem)
