"""The report's plots, each written as SVG and PNG (ifaudit.chart): accuracy of each run, the
paired differences and strict accuracy per instruction type, every point with its interval."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ifaudit.io.canonical import atomic_write_bytes
from ifaudit.io.formats.chart import BLACK, COLOURS, Chart, Diamond, Point, Series, layout, png, svg
from ifaudit.core.identity import GraderKind
from ifaudit.io.formats.table import Table
from ifaudit.steps.reporting.leaderboard import TOP, ranked

SMALL_TICKS = 17.0  # long row labels (comparisons, instruction types)


def _save(chart: Chart, stem: Path) -> None:
    drawing = layout(chart)
    atomic_write_bytes(stem.with_suffix(".svg"), svg(drawing))
    atomic_write_bytes(stem.with_suffix(".png"), png(drawing))


def _slots(
    rows: list[dict[str, Any]], runs: list[str], titles: list[str]
) -> tuple[dict[tuple[str, str], float], list[float]]:
    """A row for each (metric, run) that exists, grouped by metric in run order, so a metric only
    some runs have (a gated one) takes only their rows: no empty bands."""
    present = {(row["title"], row["run"]) for row in rows}
    slots, centres, y = {}, [], 0.0
    for title in titles:
        band = [run for run in runs if (title, run) in present]
        for offset, run in enumerate(band):
            slots[title, run] = y + offset
        centres.append(y + (len(band) - 1) / 2)
        y += len(band) + 0.6
    return slots, centres


def _run_label(first: dict[str, Any]) -> str:
    label = first["label"] + (" · stand-in grader" if first["grader_kind"] == GraderKind.STAND_IN.value else "")
    return label + ("" if first["counted"] else " (NOT COUNTED)")


def plot_accuracy(metrics: Table, stem: Path, top: int = TOP) -> None:
    """A row per metric and run: the point with its interval, and the run's published figure (if
    any) as a diamond just below the point in the run's colour, so neither hides the other. Of more
    than `top` runs, the runs the leaderboards show (each one's first `top`)."""
    rows = list(metrics.rows)
    runs = list(dict.fromkeys(row["run"] for row in rows))
    every = len(runs)
    if every > top:
        shown = {run for board in ranked(metrics) for run, _ in board.runs[:top]}
        rows, runs = [row for row in rows if row["run"] in shown], [run for run in runs if run in shown]
    titles = list(dict.fromkeys(row["title"] for row in rows))
    slots, centres = _slots(rows, runs, titles)
    series, diamonds = [], []
    for index, run in enumerate(runs):
        colour = COLOURS[index % len(COLOURS)]
        mine = [row for row in rows if row["run"] == run]
        points = []
        for row in mine:
            y, value, low, high = (
                slots[row["title"], run],
                100 * row["value"],
                100 * row["ci_low"],
                100 * row["ci_high"],
            )
            points.append(Point(y, value, low, high, f"{value:.1f} [{low:.1f}, {high:.1f}]"))
            if row["published"] is not None:
                diamonds.append(Diamond(100 * float(row["published"]), y + 0.38, colour))
        series.append(Series(colour, tuple(points), _run_label(mine[0])))
    separators = tuple((above + below) / 2 for above, below in zip(centres, centres[1:]))
    published = [100 * float(row["published"]) for row in rows if row["published"] is not None]
    extent = [100 * row["ci_low"] for row in rows] + [100 * row["ci_high"] for row in rows] + published
    level = int(round(100 * rows[0]["level"]))
    _save(
        Chart(
            title=f"Accuracy of each run, {level} % intervals"
            + (f" (the leaderboards' first {top} of {every:,} runs)" if every > top else ""),
            xlabel=f"accuracy (%) with {level} % cluster-bootstrap interval",
            xlim=(max(0.0, min(extent) - 3), min(100.0, max(extent)) + 14),
            ylim=(-0.7, max(slots.values()) + 0.7),
            yticks=tuple(zip(centres, titles)),
            series=tuple(series),
            row_height=45,
            diamonds=tuple(diamonds),
            diamond_label="published figure (diamond under the run it belongs to)" if diamonds else "",
            separators=separators,
        ),
        stem,
    )


FOREST_ROW, FOREST_TICKS = 24.0, 15.0  # a run a line, readable at 300 runs (about 7,300 pixels)


def plot_leaderboard(metrics: Table, stem: Path, top: int = TOP) -> None:
    """The forest plot: one line per run, each task's runs on each prompt set ranked by its headline
    metric (as in the report's leaderboard tables), the point with its interval and the published
    figure (if any) as a diamond just under it; a band is headed by a line naming the task, the
    prompt set and the metric. A band of more than `top` runs draws its first `top` and ends with a
    line saying what the others span."""
    series, diamonds, ticks, separators = [], [], [], []
    y = 0.0
    boards = ranked(metrics)
    for board in boards:
        if len(boards) > 1:
            ticks.append((y, f"{board.task}, {board.prompt_set}: {board.titles[board.primary]}"))
            y += 1
        points = []
        for run, by_metric in board.runs[:top]:
            row = by_metric[board.primary]
            value, low, high = 100 * row["value"], 100 * row["ci_low"], 100 * row["ci_high"]
            points.append(Point(y, value, low, high, f"{value:.1f} [{low:.1f}, {high:.1f}]"))
            if row["published"] is not None:
                diamonds.append(Diamond(100 * float(row["published"]), y + 0.3, BLACK))  # just under the dot
            ticks.append((y, _run_label(row) if row["label"] == run else f"{_run_label(row)} ({run})"))
            y += 1
        if len(board.runs) > top:
            ticks.append((y, f"... {board.rest(top)}"))
            y += 1
        series.append(Series(COLOURS[0], tuple(points), dot=4.2))
        separators.append(y - 0.5)
    rows = [row for board in boards for _, by_metric in board.runs[:top] for row in [by_metric[board.primary]]]
    extent = [100 * row["ci_low"] for row in rows] + [100 * row["ci_high"] for row in rows]
    extent += [100 * float(row["published"]) for row in rows if row["published"] is not None]
    level = int(round(100 * rows[0]["level"]))
    title = boards[0].titles[boards[0].primary] if len(boards) == 1 else "each task's headline metric"
    _save(
        Chart(
            title=f"{'Every run' if all(len(b.runs) <= top for b in boards) else f'The first {top} runs'} "
            f"ranked by {title}, {level} % intervals",
            xlabel=f"accuracy (%) with {level} % cluster-bootstrap interval",
            xlim=(max(0.0, min(extent) - 3), min(100.0, max(extent)) + 14),
            ylim=(-0.7, y - 0.3),
            yticks=tuple(ticks),
            series=tuple(series),
            row_height=FOREST_ROW,
            tick_size=FOREST_TICKS,
            diamonds=tuple(diamonds),
            diamond_label="published figure" if diamonds else "",
            separators=tuple(separators[:-1]),
            top_axis=True,
        ),
        stem,
    )


def plot_differences(comparisons: Table, titles: dict[tuple[str, str], str], stem: Path) -> None:
    """Each paired difference with its interval, in points, around a zero line; rows labelled
    with the comparison and the metric's title."""
    rows = list(comparisons.rows)
    labels = [
        row["comparison"]
        if ":" in row["a"]
        else f"{row['comparison']}: {titles.get((row['a'], row['metric']), row['metric'])}"
        for row in rows
    ]
    points = []
    for y, row in enumerate(rows):
        value, low, high = 100 * row["value"], 100 * row["ci_low"], 100 * row["ci_high"]
        points.append(Point(y, value, low, high, f"{value:+.1f} [{low:+.1f}, {high:+.1f}]"))
    low = min([0.0] + [point.low for point in points])
    high = max([0.0] + [point.high for point in points])
    span = max(1.0, high - low)
    _save(
        Chart(
            title="Paired differences",
            xlabel="difference A − B (points) with paired-bootstrap interval",
            xlim=(low - 0.08 * span, high + 0.3 * span) if rows else (-1.0, 1.0),  # room for the notes
            ylim=(-0.5, max(1, len(rows)) - 0.5),
            yticks=tuple(enumerate(labels)),
            series=(Series(COLOURS[4], tuple(points)),),
            row_height=48,
            tick_size=SMALL_TICKS,
            zero_line=True,
            message="" if rows else "no paired comparisons",
        ),
        stem,
    )


def plot_breakdown(rows: list[dict[str, Any]], run: str, stem: Path) -> None:
    """Strict accuracy per instruction type, highest first, with Wilson intervals and cell sizes."""
    types = sorted(
        (row for row in rows if row["mode"] == "strict" and row["kind"] == "type"), key=lambda row: -row["value"]
    )
    _save(
        Chart(
            title=f"{run}: strict accuracy per instruction type",
            xlabel="strict accuracy (%) with Wilson interval",
            xlim=(0.0, 102.0),
            ylim=(-0.5, max(1, len(types)) - 0.5),
            yticks=tuple((y, f"{row['group']} (n={row['total']})") for y, row in enumerate(types)),
            series=(
                Series(
                    COLOURS[2],
                    tuple(
                        Point(y, 100 * row["value"], 100 * row["wilson_low"], 100 * row["wilson_high"])
                        for y, row in enumerate(types)
                    ),
                ),
            ),
            row_height=42,
            tick_size=SMALL_TICKS,
        ),
        stem,
    )
