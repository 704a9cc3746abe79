"""Per-prompt scores from verified grades, as exact integers, and the accuracies made of them.

Several responses to one prompt are averaged within the prompt first, so a prompt weighs the
same however many samples it has; a prompt with no response counts as failed (and is listed).
Averages are kept as integer numerators over a common denominator (the least common multiple of
the sample counts), so every sum below, including each bootstrap resample's, is exact: the
result cannot depend on summation order, BLAS, or the machine.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ifaudit.prompts import Prompt, PromptKey

MODES = ("strict", "loose")
METRIC_TITLES = {
    "prompt_level_strict_acc": "prompt-level strict",
    "inst_level_strict_acc": "instruction-level strict",
    "prompt_level_loose_acc": "prompt-level loose",
    "inst_level_loose_acc": "instruction-level loose",
}


@dataclass(frozen=True)
class ScoreTable:
    """One row per prompt, in prompt order. A prompt's prompt-level score is
    prompt_num / scale; its instruction-level score is inst_num / inst_den."""

    keys: tuple[PromptKey, ...]
    samples: np.ndarray  # responses per prompt
    scale: int  # common denominator of the within-prompt averages
    prompt_num: np.ndarray  # int64: follow-all successes, scaled
    inst_num: np.ndarray  # int64: instructions followed, scaled
    inst_den: np.ndarray  # int64: instructions in the prompt, scaled

    @property
    def prompt_den(self) -> np.ndarray:
        return np.full(len(self.keys), self.scale, dtype=np.int64)

    def numerator_denominator(self, level: str) -> tuple[np.ndarray, np.ndarray]:
        if level == "prompt":
            return self.prompt_num, self.prompt_den
        return self.inst_num, self.inst_den


def score_tables(prompts: Sequence[Prompt], grades: Iterable[dict[str, Any]]) -> dict[str, ScoreTable]:
    """Per mode (strict, loose), the exact per-prompt table of a run."""
    by_key: dict[PromptKey, list[dict[str, Any]]] = defaultdict(list)
    for record in grades:
        by_key[record["key"]].append(record)
    samples = np.array([len(by_key.get(p.key, ())) for p in prompts], dtype=np.int64)
    scale = math.lcm(*(int(n) for n in samples if n)) if samples.any() else 1
    tables = {}
    for mode in MODES:
        prompt_num, inst_num = [], []
        for prompt, n in zip(prompts, samples):
            records = by_key.get(prompt.key, ())
            weight = scale // int(n) if n else 0
            prompt_num.append(weight * sum(r[mode]["follow_all_instructions"] for r in records))
            inst_num.append(weight * sum(sum(r[mode]["follow_instruction_list"]) for r in records))
        tables[mode] = ScoreTable(
            keys=tuple(p.key for p in prompts),
            samples=samples,
            scale=scale,
            prompt_num=np.array(prompt_num, dtype=np.int64),
            inst_num=np.array(inst_num, dtype=np.int64),
            inst_den=np.array([scale * len(p.instruction_id_list) for p in prompts], dtype=np.int64),
        )
    return tables


def metric_name(level: str, mode: str) -> str:
    return f"{level}_level_{mode}_acc" if level == "prompt" else f"inst_level_{mode}_acc"


def accuracies(tables: dict[str, ScoreTable]) -> dict[str, dict[str, Any]]:
    """The four IFEval metrics with the counts they are made of."""
    metrics: dict[str, dict[str, Any]] = {}
    for mode, table in tables.items():
        for level in ("prompt", "inst"):
            num, den = table.numerator_denominator(level)
            total = int(den.sum()) // table.scale
            metrics[metric_name(level, mode)] = {
                "correct": int(num.sum()) / table.scale,
                "total": total,
                "value": int(num.sum()) / int(den.sum()) if den.sum() else 0.0,
            }
    return metrics
