"""Composite figures a harness or a leaderboard publishes instead of (or beside) the four
aggregates, each a fixed formula over them, set beside the same formula on the harness's own
verdicts and on the pinned grader's grades.

- `leaderboard_ifeval`: the Open LLM Leaderboard v2's IFEval figure, 100 × the mean of
  prompt-level strict and instruction-level strict (lm-eval #2200; its documentation does not say
  so): Llama-2-7b's 25.19 = 100 × (0.1848 + 0.3189) / 2.
- `mean_of_four`: OpenCompass's IFBench `score`, the mean of its four metrics, in percent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ifaudit.core.errors import InputError
from ifaudit.steps.auditing.claims import _tolerance


@dataclass(frozen=True)
class Composite:
    formula: str  # as the report names it
    parts: tuple[str, ...]  # the aggregates averaged (our metric names)
    scale: float = 100.0  # the figure is scale × the mean of the parts

    def of(self, values: Mapping[str, float | None]) -> float | None:
        found = [values.get(part) for part in self.parts]
        if any(value is None for value in found):
            return None
        return self.scale * sum(value for value in found if value is not None) / len(found)


COMPOSITES = {
    "leaderboard_ifeval": Composite(
        "100 × mean(prompt-level strict, instruction-level strict)",
        ("prompt_level_strict_acc", "inst_level_strict_acc"),
    ),
    "mean_of_four": Composite(
        "100 × mean(prompt-level strict, instruction-level strict, prompt-level loose, instruction-level loose)",
        ("prompt_level_strict_acc", "inst_level_strict_acc", "prompt_level_loose_acc", "inst_level_loose_acc"),
    ),
}


def composite(name: str, field: str) -> Composite:
    if name not in COMPOSITES:
        raise InputError(f"names no known composite; known: {', '.join(sorted(COMPOSITES))}", field=field)
    return COMPOSITES[name]


def composite_figures(reported: Mapping[str, float], metrics: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Per reported composite: its formula, the figure published, the formula on the harness's
    own verdicts (None where they do not give every part) and on the pinned grader's grades, and
    whether the published figure is what the harness's verdicts give, to the precision written."""
    recomputed = {
        name: (row["recomputed_from_harness"] or {}).get("value") if row["recomputed_from_harness"] else None
        for name, row in metrics.items()
    }
    audited = {name: row["audited"]["value"] for name, row in metrics.items()}
    found = {}
    for name, published in sorted(reported.items()):
        spec = composite(name, f"composites.{name}")
        theirs, ours = spec.of(recomputed), spec.of(audited)
        found[name] = {
            "formula": spec.formula,
            "reported": published,
            "recomputed_from_harness": theirs,
            "audited": ours,
            "reported_is_recomputed": None if theirs is None else abs(published - theirs) <= _tolerance(published),
            "audited_minus_reported": None if ours is None else ours - published,
        }
    return found
