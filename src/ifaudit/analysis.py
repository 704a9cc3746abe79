"""A run's statistics and the comparison of two runs, from verified grades (no I/O here).

Every estimate comes with a cluster-bootstrap interval and both standard errors (bootstrap and
analytic clustered); comparisons are paired (the same resampled prompts for both sides).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ifaudit.errors import InputError
from ifaudit.metrics import MODES, ScoreTable, metric_name, score_tables
from ifaudit.prompts import Prompt
from ifaudit.stats import INTERVAL_METHODS, estimate_ratio, paired_difference, resample_indices, wilson

LEVELS = ("prompt", "inst")


@dataclass(frozen=True)
class Settings:
    resamples: int = 10_000
    level: float = 0.95
    method: str = "percentile"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.method not in INTERVAL_METHODS:
            raise InputError(f"unknown interval method {self.method!r}; choose {' or '.join(INTERVAL_METHODS)}",
                             field="statistics.interval")
        if self.resamples < 2 or not 0 < self.level < 1:
            raise InputError("need at least 2 resamples and a level between 0 and 1", field="statistics")


def _interval_fields(estimate: Any) -> dict[str, Any]:
    fields = asdict(estimate)
    bounds = fields.pop("interval")
    return {**fields, "ci_low": bounds["low"], "ci_high": bounds["high"]}


def breakdown(prompts: Sequence[Prompt], grades: Sequence[dict[str, Any]], level: float) -> list[dict[str, Any]]:
    """Accuracy per instruction type and per category, with Wilson intervals; samples of one
    prompt are averaged first, so `followed` may be fractional."""
    samples: dict[Any, int] = defaultdict(int)
    for record in grades:
        samples[record["key"]] += 1
    cells: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for prompt in prompts:
        for instruction_id in prompt.instruction_id_list:
            for mode in MODES:
                for group in (instruction_id, instruction_id.split(":")[0]):
                    cells[mode, group, "type" if group == instruction_id else "category"][1] += 1
    for record in grades:
        weight = 1 / samples[record["key"]]
        for instruction_id, *followed in zip(record["instruction_id_list"],
                                             *(record[m]["follow_instruction_list"] for m in MODES)):
            for mode, ok in zip(MODES, followed):
                for group, kind in ((instruction_id, "type"), (instruction_id.split(":")[0], "category")):
                    cells[mode, group, kind][0] += weight * ok
    rows = []
    for (mode, group, kind), (followed, total) in sorted(cells.items()):
        bounds = wilson(followed, total, level)
        rows.append({"mode": mode, "kind": kind, "group": group, "followed": followed, "total": int(total),
                     "value": followed / total, "wilson_low": bounds.low, "wilson_high": bounds.high})
    return rows


def run_statistics(prompts: Sequence[Prompt], grades: Sequence[dict[str, Any]], settings: Settings) -> dict[str, Any]:
    tables = score_tables(prompts, grades)
    indices = resample_indices(settings.seed, settings.resamples, len(prompts))
    estimates = {}
    for mode, table in tables.items():
        for level in LEVELS:
            num, den = table.numerator_denominator(level)
            estimates[metric_name(level, mode)] = _interval_fields(
                estimate_ratio(num, den, indices, settings.level, settings.method))
    strict_vs_loose = {
        level: _interval_fields(paired_difference(tables["loose"].numerator_denominator(level),
                                                  tables["strict"].numerator_denominator(level),
                                                  indices, settings.level, settings.method))
        for level in LEVELS
    }
    return {
        "settings": asdict(settings),
        "prompts": len(prompts),
        "estimates": estimates,
        "loose_minus_strict": strict_vs_loose,
        "breakdown": breakdown(prompts, grades, settings.level),
    }


def _same_prompts(a: ScoreTable, b: ScoreTable) -> None:
    if a.keys != b.keys:
        raise InputError("the two runs were not graded on the same prompts in the same order; "
                         "a paired comparison needs the same prompt set", field="comparisons")


def compare_runs(prompts_a: Sequence[Prompt], grades_a: Sequence[dict[str, Any]], prompts_b: Sequence[Prompt],
                 grades_b: Sequence[dict[str, Any]], settings: Settings) -> dict[str, Any]:
    """A minus B for each of the four metrics, paired by prompt."""
    tables_a, tables_b = score_tables(prompts_a, grades_a), score_tables(prompts_b, grades_b)
    _same_prompts(tables_a["strict"], tables_b["strict"])
    indices = resample_indices(settings.seed, settings.resamples, len(prompts_a))
    differences = {}
    for mode in MODES:
        for level in LEVELS:
            differences[metric_name(level, mode)] = _interval_fields(paired_difference(
                tables_a[mode].numerator_denominator(level), tables_b[mode].numerator_denominator(level),
                indices, settings.level, settings.method))
    return {"settings": asdict(settings), "prompts": len(prompts_a), "a_minus_b": differences}
