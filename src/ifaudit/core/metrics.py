"""Per-prompt scores from verified grades, as exact integers, and the metrics made of them.

Several responses to one prompt are averaged within the prompt first, so a prompt weighs the
same however many samples it has; a prompt with no response counts as failed (and is listed).
Averages are kept as integer numerators over a common denominator (the least common multiple of
the sample counts), so every sum below, including each bootstrap resample's, is exact: the
result cannot depend on summation order, BLAS, or the machine.

A metric is named data (MetricSpec): which grading mode (strict, loose, or the gate itself),
prompt or instruction level, and whether a failed language gate zeroes the response.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ifaudit.core.records import Prompt, PromptKey

if TYPE_CHECKING:  # imported where used: the jobs that only read tasks need no numpy
    import numpy as np

GATE = "gate"


@dataclass(frozen=True)
class MetricSpec:
    name: str
    mode: str  # "strict", "loose", or GATE (share of responses passing the language gate)
    level: str  # "prompt" or "inst"
    gated: bool = False  # a response failing the gate counts as following nothing
    subset: str | None = None  # only prompts of this subset count (others weigh nothing)
    label: str | None = None  # only instructions carrying this label count ("+"-joined in the id)
    display: str | None = None  # the title, where the mode and level do not say it (DRFR)
    # Instruction level: count only the verdicts a judge wrote (`verdicts_written` of a record),
    # as InFoBench's reference does; questions after an early stop weigh nothing.
    written_only: bool = False

    @property
    def title(self) -> str:
        if self.mode == GATE:
            return "language check"
        if self.display:
            return self.display
        level = "prompt-level" if self.level == "prompt" else "instruction-level"
        return f"{level} {self.mode}" + (" (gated)" if self.gated else "")


def ifeval_metrics(gated: bool = False, suffix: str = "") -> tuple[MetricSpec, ...]:
    """IFEval's four: prompt and instruction level, strict then loose."""
    return tuple(
        MetricSpec(f"{level}_level_{mode}{suffix}_acc", mode, level, gated)
        for mode in ("strict", "loose")
        for level in ("prompt", "inst")
    )


LANGUAGE_CHECK = MetricSpec("language_check_acc", GATE, "prompt")


@dataclass(frozen=True)
class ScoreTable:
    """One row per prompt, in prompt order: score = num / den, exactly. Plain integers, so a
    summary needs no numpy; the bootstrap takes them as arrays (`pair`)."""

    keys: tuple[PromptKey, ...]
    samples: tuple[int, ...]  # responses per prompt
    scale: int  # common denominator of the within-prompt averages
    num: tuple[int, ...]
    den: tuple[int, ...]

    def pair(self) -> tuple[np.ndarray, np.ndarray]:
        """(num, den) as int64 arrays, what the resampling sums."""
        import numpy as np

        return np.array(self.num, dtype=np.int64), np.array(self.den, dtype=np.int64)


def _followed(record: dict[str, Any], spec: MetricSpec) -> list[bool]:
    if spec.mode == GATE:
        return [record["gate"]["passed"]]
    followed: list[bool] = record[spec.mode]["follow_instruction_list"]
    if spec.gated and not record["gate"]["passed"]:
        return [False] * len(followed)
    return followed


def score_table(prompts: Sequence[Prompt], grades: Iterable[dict[str, Any]], spec: MetricSpec) -> ScoreTable:
    by_key: dict[PromptKey, list[dict[str, Any]]] = defaultdict(list)
    for record in grades:
        by_key[record["key"]].append(record)
    samples = tuple(len(by_key.get(p.key, ())) for p in prompts)
    scale = math.lcm(*(n for n in samples if n)) if any(samples) else 1
    num: list[int] = []
    den: list[int] = []
    for prompt, n in zip(prompts, samples):
        if spec.subset is not None and prompt.subset != spec.subset:
            num.append(0)
            den.append(0)
            continue
        weight = scale // n if n else 0
        mask = [
            spec.label is None or spec.label in instruction.split("+") for instruction in prompt.instruction_id_list
        ]
        lists = [_followed(record, spec) for record in by_key.get(prompt.key, ())]
        if spec.level == "prompt":
            num.append(weight * sum(all(followed) for followed in lists))
            den.append(scale)
        elif spec.written_only:
            records = by_key.get(prompt.key, ())
            counted = [[m and i < record["verdicts_written"] for i, m in enumerate(mask)] for record in records]
            num.append(
                weight
                * sum(
                    sum(ok for ok, c in zip(_followed(record, spec), cs) if c) for record, cs in zip(records, counted)
                )
            )
            den.append(weight * sum(sum(cs) for cs in counted))
        else:
            num.append(weight * sum(sum(ok for ok, counted in zip(followed, mask) if counted) for followed in lists))
            den.append(scale * sum(mask))
    return ScoreTable(keys=tuple(p.key for p in prompts), samples=samples, scale=scale, num=tuple(num), den=tuple(den))


def score_tables(
    prompts: Sequence[Prompt], grades: Sequence[dict[str, Any]], specs: Sequence[MetricSpec]
) -> dict[str, ScoreTable]:
    return {spec.name: score_table(prompts, grades, spec) for spec in specs}


def exact_count(numerator: int, scale: int) -> int | str:
    """A count made of per-prompt averages, exactly: an integer when whole, else the reduced
    fraction as a string ("1678/3": 1678 thirds of a prompt)."""
    count = Fraction(numerator, scale)
    return count.numerator if count.denominator == 1 else str(count)


def accuracies(tables: dict[str, ScoreTable]) -> dict[str, dict[str, Any]]:
    """Each metric's value with the counts it is made of. `correct` is a sum of per-prompt
    averages, so with several samples per prompt it can be a fraction; it is kept exact."""
    return {
        name: {
            "correct": exact_count(sum(table.num), table.scale),
            "total": sum(table.den) // table.scale,
            "value": sum(table.num) / sum(table.den) if sum(table.den) else 0.0,
        }
        for name, table in tables.items()
    }
