"""The report's leaderboard: per task and prompt set, its runs ranked by the task's headline
metric; and how the report's tables name a run's metric, its prompt set, and a tie between two runs.

The headline metric is the one the benchmark is quoted by (`Task.headline_metric`: IFEval's
prompt-level strict accuracy, IFBench's prompt-level loose). Runs of different prompt sets (data
versions, languages: IFBench's 294 and 300 rows are different benchmarks) are never ranked in one
table. Runs are sorted by the headline's value, highest first; runs with equal values keep the
config's order, so the ranking depends only on the numbers and the config.

A leaderboard of many runs (the Open LLM Leaderboard's thousands) shows its first `TOP` runs in
report.md, on the HTML report's first page and in the forest plot, and says what the rest span;
every run stays in the HTML report's runs page and in metrics.csv.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ifaudit.io.formats.table import Table
from ifaudit.tasks.registry import get_task


# The runs a board shows before the rest are summarized: report.md's and the first page's tables
# and the forest plot (at 24 pixels a line, about 1,000 pixels a board) stay readable at any size.
TOP = 30


@dataclass(frozen=True)
class Ranked:
    """One task's runs on one prompt set, ranked: each run's rows by metric name, best first."""

    task: str
    prompt_set: str  # prompt_set_label's: the data's name and its number of prompts
    primary: str  # the metric ranked by: the task's headline
    titles: dict[str, str]  # metric name -> title, in the task's order (those any run has)
    runs: list[tuple[str, dict[str, dict[str, Any]]]]

    def ranks(self) -> dict[str, int]:
        """Each run's rank: 1 + the number of runs with a higher primary value. Runs with equal values
        (identical runs, or runs that happen to tie) share a rank, and the next rank is skipped
        (1, 1, 3). One pass over the ranked runs: a run's rank is its place unless it ties the one
        above."""
        out: dict[str, int] = {}
        above: tuple[str, float] | None = None
        for place, (name, by_metric) in enumerate(self.runs, start=1):
            value = float(by_metric[self.primary]["value"])
            out[name] = out[above[0]] if above is not None and above[1] == value else place
            above = (name, value)
        return out

    def rest(self, top: int) -> str:
        """What the runs after the first `top` span ("" when there are none): how many, and their
        headline values in points."""
        cut = self.runs[top:]
        if not cut:
            return ""
        values = [100 * float(by_metric[self.primary]["value"]) for _, by_metric in cut]
        return f"the other {len(cut):,} of {len(self.runs):,} runs score {min(values):.2f} to {max(values):.2f}"


def primary_metric(task: str) -> str:
    """The metric a task's runs are ranked by: the benchmark's headline."""
    return get_task(task).headline_metric


def prompt_set_label(row: dict[str, Any]) -> str:
    """A run's prompt set as the tables name it: the data's name and its number of prompts."""
    return f"{row['prompt_set']} ({row['prompt_set_size']} prompts)"


def by_prompt_set(rows: Sequence[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Metrics rows grouped by task and prompt set, in the config's order of first appearance:
    each group is what one table may hold."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["task"], prompt_set_label(row)), []).append(row)
    return groups


def ranked(metrics: Table) -> list[Ranked]:
    """Per task and prompt set in the config's order of first appearance, its runs by the task's
    headline metric."""
    out = []
    for (task, prompt_set), rows in by_prompt_set(metrics.rows).items():
        by_run: dict[str, dict[str, dict[str, Any]]] = {}
        for row in rows:
            by_run.setdefault(row["run"], {})[row["metric"]] = row
        primary = primary_metric(task)
        order = sorted(by_run.items(), key=lambda item: -float(item[1][primary]["value"]))  # stable: ties in run order
        titles = {row["metric"]: row["title"] for row in rows}
        out.append(Ranked(task, prompt_set, primary, titles, order))
    return out


def shown_comparisons(metrics: Table, comparisons: Table, top: int) -> Table:
    """The comparisons between runs the leaderboards show (each one's first `top`): all of them
    when no leaderboard is cut. A within-run comparison's sides are "run:metric"."""
    boards = ranked(metrics)
    if all(len(board.runs) <= top for board in boards):
        return comparisons
    shown = {run for board in boards for run, _ in board.runs[:top]}
    rows = [row for row in comparisons.rows if {row[side].split(":")[0] for side in ("a", "b")} <= shown]
    return Table(comparisons.columns, tuple(rows))


def metric_titles(metrics: Table) -> dict[tuple[str, str], str]:
    """Each run's metrics' titles by (run, metric): a metric's title is its task's (a language-gated
    task calls its `prompt_level_strict_acc` "prompt-level strict (gated)", IFEval does not)."""
    return {(row["run"], row["metric"]): row["title"] for row in metrics.rows}


def share_a_greater(row: dict[str, Any]) -> str:
    """P(A > B) as a table shows it; "tie" when A and B are equal in every resample (a difference
    of 0 with no spread: the same responses, or the same grades), where the share of resamples
    with A higher, 0, would read as B better."""
    if row["value"] == 0 and row["bootstrap_se"] == 0:
        return "tie"
    return f"{row['share_a_greater']:.3f}"
