"""Tasks as data: the checker registry, grading modes, preprocessing, gate and metrics of each.

The generic driver (ifaudit.grading), the statistics and the report read these declarations;
no task has code of its own beyond its registry and its gate.
"""

from __future__ import annotations

from dataclasses import dataclass

from ifaudit.errors import InputError
from ifaudit.metrics import LANGUAGE_CHECK, MetricSpec, ifeval_metrics

# Checker registries: Google's (the pinned upstream, or the registry stand-in) and our own.
GOOGLE = "google_ifeval"
ARABIC_INCEPTION = "arabic_inception"


@dataclass(frozen=True)
class Task:
    name: str
    description: str
    registry: str
    modes: tuple[str, ...]  # "strict", and "loose" where the task grades loosely
    clean: bool  # Inception's cleaning (NFKC, invisible and Cc/Cf characters out) before checking
    gate: str | None  # the language/repetition gate, if any
    metrics: tuple[MetricSpec, ...]
    within_run: tuple[tuple[str, str], ...]  # paired comparisons (A, B) between a run's own metrics
    # The committed canary of a task is ifaudit/canaries/<name>.json.


def _strict_vs_loose() -> tuple[tuple[str, str], ...]:
    return (("prompt_level_loose_acc", "prompt_level_strict_acc"), ("inst_level_loose_acc", "inst_level_strict_acc"))


TASKS: dict[str, Task] = {task.name: task for task in (
    Task(
        name="ifeval",
        description="Google's IFEval, graded by the pinned upstream grader, strict and loose",
        registry=GOOGLE, modes=("strict", "loose"), clean=False, gate=None,
        metrics=ifeval_metrics(), within_run=_strict_vs_loose(),
    ),
    Task(
        name="ifeval_arabic_inception",
        description="Inception's Arabic IFEval: 31 checkers on cleaned text, per-prompt language gate, strict only",
        registry=ARABIC_INCEPTION, modes=("strict",), clean=True, gate="inception",
        metrics=(
            MetricSpec("prompt_level_strict_acc", "strict", "prompt"),
            MetricSpec("inst_level_strict_acc", "strict", "inst"),
            MetricSpec("prompt_level_strict_langcheck_acc", "strict", "prompt", gated=True),
            MetricSpec("inst_level_strict_langcheck_acc", "strict", "inst", gated=True),
            LANGUAGE_CHECK,
        ),
        within_run=(("prompt_level_strict_langcheck_acc", "prompt_level_strict_acc"),
                    ("inst_level_strict_langcheck_acc", "inst_level_strict_acc")),
    ),
)}


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise InputError(f"unknown task {name!r}; known: {', '.join(sorted(TASKS))}", field="task") from None
