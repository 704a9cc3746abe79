"""Tasks as data: the checker registry, grading modes, preprocessing, gate and metrics of each.

The generic driver (ifaudit.grading), the statistics and the report read these declarations;
no task has code of its own beyond its registry and its gate.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ifaudit.errors import InputError
from ifaudit.metrics import LANGUAGE_CHECK, MetricSpec, ifeval_metrics
from ifaudit.prompts import Prompt, read_prompts

# Checker registries: Google's (the pinned upstream, or the registry stand-in) and our own.
GOOGLE = "google_ifeval"
ARABIC_INCEPTION = "arabic_inception"
ARABIC_HF = "arabic_hf"
JUDGE = "judge"  # no checkers: an LLM judge's recorded verdicts (InFoBench)
INFOBENCH_LABELS = ("Content", "Linguistic", "Style", "Format", "Number")


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
    prompt_format: str = "ifeval"  # how the prompt set is read: IFEval JSONL or InFoBench's
    # The committed canary of a task is ifaudit/canaries/<name>.json.


def _strict_vs_loose() -> tuple[tuple[str, str], ...]:
    return (("prompt_level_loose_acc", "prompt_level_strict_acc"), ("inst_level_loose_acc", "inst_level_strict_acc"))


def _gated_metrics() -> tuple[MetricSpec, ...]:
    """The seed's langcheck tasks: IFEval's four names hold the gated values; the ungated values
    sit beside them, so the gate's effect is visible; and the share passing the gate."""
    return ifeval_metrics(gated=True) + ifeval_metrics(suffix="_ungated") + (LANGUAGE_CHECK,)


def _gated_vs_ungated() -> tuple[tuple[str, str], ...]:
    return (("prompt_level_strict_acc", "prompt_level_strict_ungated_acc"),
            ("inst_level_strict_acc", "inst_level_strict_ungated_acc"),
            ("prompt_level_loose_acc", "prompt_level_loose_ungated_acc"),
            ("inst_level_loose_acc", "inst_level_loose_ungated_acc"))


def _drfr_metrics() -> tuple[MetricSpec, ...]:
    """DRFR (the share of decomposed questions answered YES) overall, by subset and by label, over
    all questions (unasked or unparsed: not satisfied); and, overall and by subset, as InFoBench's
    reference computes it, over the verdicts written. The two differ only where a judge stopped early."""
    overall = (MetricSpec("drfr", "strict", "inst", display="DRFR (all questions; unasked or unparsed: not satisfied)"),
               MetricSpec("drfr_easy", "strict", "inst", subset="Easy_set", display="DRFR, Easy set"),
               MetricSpec("drfr_hard", "strict", "inst", subset="Hard_set", display="DRFR, Hard set"))
    labels = tuple(MetricSpec(f"drfr_{label.lower()}", "strict", "inst", label=label,
                              display=f"DRFR, {label} questions") for label in INFOBENCH_LABELS)
    reference = (
        MetricSpec("drfr_reference", "strict", "inst", written_only=True, display="DRFR as the reference computes it"),
        MetricSpec("drfr_reference_easy", "strict", "inst", subset="Easy_set", written_only=True,
                   display="DRFR as the reference computes it, Easy set"),
        MetricSpec("drfr_reference_hard", "strict", "inst", subset="Hard_set", written_only=True,
                   display="DRFR as the reference computes it, Hard set"))
    return overall + labels + reference


TASKS: dict[str, Task] = {task.name: task for task in (
    Task(
        name="ifeval",
        description="Google's IFEval, graded by the pinned upstream grader, strict and loose",
        registry=GOOGLE, modes=("strict", "loose"), clean=False, gate=None,
        metrics=ifeval_metrics(), within_run=_strict_vs_loose(),
    ),
    Task(
        name="ifeval_langcheck",
        description="IFEval with the English language and repetition gate (seed §1)",
        registry=GOOGLE, modes=("strict", "loose"), clean=False, gate="english",
        metrics=_gated_metrics(), within_run=_gated_vs_ungated(),
    ),
    Task(
        name="ifeval_arabic_inception_hf",
        description="Arabic IFEval from the Hugging Face copy: 25 checkers (spec §9), strict and loose, no gate",
        registry=ARABIC_HF, modes=("strict", "loose"), clean=False, gate=None,
        metrics=ifeval_metrics(), within_run=_strict_vs_loose(),
    ),
    Task(
        name="ifeval_arabic_inception_hf_langcheck",
        description="Arabic IFEval (Hugging Face copy) with the Arabic script, repetition and 7 % English gate (seed §2)",
        registry=ARABIC_HF, modes=("strict", "loose"), clean=False, gate="arabic_hf",
        metrics=_gated_metrics(), within_run=_gated_vs_ungated(),
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
    Task(
        name="infobench",
        description="InFoBench: decomposed yes/no questions judged by a recorded LLM judge (DRFR)",
        registry=JUDGE, modes=("strict",), clean=False, gate=None,
        metrics=_drfr_metrics(), within_run=(("drfr_easy", "drfr_hard"), ("drfr_reference", "drfr")),
        prompt_format="infobench",
    ),
)}


def read_task_prompts(task: Task, path: Path) -> list[Prompt]:
    """The task's prompt set, read in its own format (IFEval JSONL, or InFoBench's)."""
    if task.prompt_format == "infobench":
        from ifaudit.infobench import read_infobench

        return read_infobench(path)
    return read_prompts(path)


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise InputError(f"unknown task {name!r}; known: {', '.join(sorted(TASKS))}", field="task") from None
