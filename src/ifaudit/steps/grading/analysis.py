"""A run's statistics and the comparison of two runs, from verified grades (no I/O here).

Every estimate comes with a cluster-bootstrap interval and both standard errors (bootstrap and
analytic clustered); comparisons are paired (the same resampled prompts for both sides). Which
metrics and which within-run comparisons a run has is its task's declaration (ifaudit.tasks.registry).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ifaudit.core import bounds
from ifaudit.core.errors import IfauditError, InputError
from ifaudit.core.metrics import score_tables
from ifaudit.core.records import Prompt
from ifaudit.core.stats import (
    INTERVAL_METHODS,
    Resamples,
    estimate_ratio,
    paired_difference,
    paired_differences,
    wilson,
)
from ifaudit.tasks.base import Task


@dataclass(frozen=True)
class Settings:
    resamples: int = 10_000
    level: float = 0.95
    method: str = "percentile"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.method not in INTERVAL_METHODS:
            raise InputError(
                f"unknown interval method {self.method!r}; choose {' or '.join(INTERVAL_METHODS)}",
                field="statistics.interval",
            )
        if self.resamples < 2 or not 0 < self.level < 1:
            raise InputError("need at least 2 resamples and a level between 0 and 1", field="statistics")
        for name, within in (("resamples", bounds.RESAMPLES), ("level", bounds.LEVEL), ("seed", bounds.SEED)):
            if problem := within.problem(getattr(self, name)):
                raise InputError(problem, field=f"statistics.{name}")


def _interval_fields(estimate: Any) -> dict[str, Any]:
    fields = asdict(estimate)
    bounds = fields.pop("interval")
    return {**fields, "ci_low": bounds["low"], "ci_high": bounds["high"]}


def breakdown(
    task: Task, prompts: Sequence[Prompt], grades: Sequence[dict[str, Any]], level: float
) -> list[dict[str, Any]]:
    """Accuracy per instruction type and per category for each grading mode (ungated), with
    Wilson intervals; samples of one prompt are averaged first, so `followed` may be fractional."""
    samples: dict[Any, int] = defaultdict(int)
    for record in grades:
        samples[record["key"]] += 1
    cells: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for prompt in prompts:
        for instruction_id in prompt.instruction_id_list:
            for mode in task.modes:
                for group, kind in ((instruction_id, "type"), (instruction_id.split(":")[0], "category")):
                    cells[mode, group, kind][1] += 1
    for record in grades:
        weight = 1 / samples[record["key"]]
        for mode in task.modes:
            for instruction_id, ok in zip(record["instruction_id_list"], record[mode]["follow_instruction_list"]):
                for group, kind in ((instruction_id, "type"), (instruction_id.split(":")[0], "category")):
                    cells[mode, group, kind][0] += weight * ok
    rows = []
    for (mode, group, kind), (followed, total) in sorted(cells.items()):
        bounds = wilson(followed, total, level)
        rows.append(
            {
                "mode": mode,
                "kind": kind,
                "group": group,
                "followed": followed,
                "total": int(total),
                "value": followed / total,
                "wilson_low": bounds.low,
                "wilson_high": bounds.high,
            }
        )
    return rows


def run_statistics(
    task: Task, prompts: Sequence[Prompt], grades: Sequence[dict[str, Any]], settings: Settings
) -> dict[str, Any]:
    """Every metric of the task with its interval, the task's within-run comparisons (loose minus
    strict, gated minus ungated) and the per-type breakdown."""
    pairs = {name: table.pair() for name, table in score_tables(prompts, grades, task.metrics).items()}
    resamples = Resamples.draw(settings.seed, settings.resamples, len(prompts))
    replicates = dict(zip(pairs, resamples.ratios(list(pairs.values()))))
    estimates = {
        spec.name: {
            "title": spec.title,
            **_interval_fields(
                estimate_ratio(*pairs[spec.name], replicates[spec.name], settings.level, settings.method)
            ),
        }
        for spec in task.metrics
    }
    within = [
        {
            "a": a,
            "b": b,
            **_interval_fields(
                paired_difference(pairs[a], pairs[b], (replicates[a], replicates[b]), settings.level, settings.method)
            ),
        }
        for a, b in task.within_run
    ]
    return {
        "task": task.name,
        "settings": asdict(settings),
        "prompts": len(prompts),
        "estimates": estimates,
        "within_run": within,
        "breakdown": breakdown(task, prompts, grades, settings.level),
    }


def compare_runs(
    task: Task,
    prompts_a: Sequence[Prompt],
    grades_a: Sequence[dict[str, Any]],
    prompts_b: Sequence[Prompt],
    grades_b: Sequence[dict[str, Any]],
    settings: Settings,
) -> dict[str, Any]:
    """A minus B for each of the task's metrics, paired by prompt."""
    runs = {"A": (prompts_a, grades_a), "B": (prompts_b, grades_b)}
    return compare_many(task, runs, [("A", "B")], settings)[0]


# Runs whose bootstrap values are computed in one matrix product: 32 runs of IFEval's 4 metrics are
# 256 columns, 20 MB of sums at 10,000 resamples.
_RUNS_AT_ONCE = 32


def compare_many(
    task: Task,
    runs: Mapping[str, tuple[Sequence[Prompt], Sequence[dict[str, Any]]]],
    pairs: Sequence[tuple[str, str]],
    settings: Settings,
) -> list[dict[str, Any]]:
    """compare_runs for each pair (A, B) of `runs` (name -> prompts, grades), in order, each the
    same bytes as compared alone: every resample draws A's prompts with the same seed, so a run's
    bootstrap values are computed once, whichever pairs it is in, and the pairs' differences are
    reduced together (ifaudit.core.stats.paired_differences)."""
    tables = {name: score_tables(prompts, grades, task.metrics) for name, (prompts, grades) in runs.items()}
    for a, b in pairs:
        if next(iter(tables[a].values())).keys != next(iter(tables[b].values())).keys:
            raise InputError(
                f"runs {a} and {b} were not graded on the same prompts in the same order; "
                "a paired comparison needs the same prompt set",
                field="comparisons",
            )
    names = [spec.name for spec in task.metrics]
    order = list(dict.fromkeys(run for pair in pairs for run in pair))
    index = {run: position for position, run in enumerate(order)}
    sizes = {len(runs[a][0]) for a, _ in pairs}  # one prompt set: pairs share prompts
    draws = {size: Resamples.draw(settings.seed, settings.resamples, size) for size in sizes}
    differences: dict[tuple[str, str], dict[str, Any]] = {pair: {} for pair in pairs}
    for size, resamples in draws.items():
        chosen = [pair for pair in pairs if len(runs[pair[0]][0]) == size]
        for name in names:
            columns = [tables[run][name].pair() for run in order]
            replicates = np.concatenate(
                [
                    np.stack(resamples.ratios(columns[start : start + _RUNS_AT_ONCE]))
                    for start in range(0, len(order), _RUNS_AT_ONCE)
                ]
            )
            found = paired_differences(
                columns,
                replicates,
                [(index[a], index[b]) for a, b in chosen],
                settings.level,
                settings.method,
            )
            for pair, difference in zip(chosen, found):
                differences[pair][name] = _interval_fields(difference)
    return [
        {"task": task.name, "settings": asdict(settings), "prompts": len(runs[a][0]), "a_minus_b": differences[a, b]}
        for a, b in pairs
    ]


def agreement_step(annotations: Path, out: Path) -> str:
    """Fleiss' kappa and WPLD of pairwise annotations, written to `out`; the line that says it."""
    from ifaudit.core.agreement import agreement_summary
    from ifaudit.io.canonical import write_json
    from ifaudit.io.jsonl import iter_objects

    rows = [row for _, row in iter_objects(annotations)]
    try:
        result = agreement_summary(rows)
    except ValueError as error:
        raise IfauditError(f"{annotations}: {error}") from None
    write_json(out, result)
    return f"{result['items']} items, {result['annotators']} annotators: Fleiss' kappa {result['fleiss_kappa']}"
