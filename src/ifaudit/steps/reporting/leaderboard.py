"""The report's leaderboard: per task, its runs ranked by the task's primary metric.

The primary metric is the task's first (IFEval's prompt-level strict accuracy, the figure papers
and leaderboards quote). Runs are sorted by its value, highest first; runs with equal values keep
the config's order, so the ranking depends only on the numbers and the config.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ifaudit.io.formats.table import Table
from ifaudit.tasks.registry import get_task


@dataclass(frozen=True)
class Ranked:
    """One task's runs, ranked: each run's rows by metric name, best first."""

    task: str
    primary: str  # the metric ranked by
    titles: dict[str, str]  # metric name -> title, in the task's order (those any run has)
    runs: list[tuple[str, dict[str, dict[str, Any]]]]


def primary_metric(task: str) -> str:
    return get_task(task).metrics[0].name


def ranked(metrics: Table) -> list[Ranked]:
    """Per task in the config's order of first appearance, its runs by the primary metric."""
    out = []
    for task in dict.fromkeys(metrics.column("task")):
        rows = metrics.where(task=str(task))
        by_run: dict[str, dict[str, dict[str, Any]]] = {}
        for row in rows:
            by_run.setdefault(row["run"], {})[row["metric"]] = row
        primary = primary_metric(str(task))
        order = sorted(by_run.items(), key=lambda item: -float(item[1][primary]["value"]))  # stable: ties in run order
        titles = {row["metric"]: row["title"] for row in rows}
        out.append(Ranked(str(task), primary, titles, order))
    return out
