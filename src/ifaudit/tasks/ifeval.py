"""Google's IFEval, as is and behind the English language gate (seed §1)."""

from __future__ import annotations

from ifaudit.checkers.gates import EnglishGate
from ifaudit.core.metrics import LANGUAGE_CHECK, MetricSpec, ifeval_metrics
from ifaudit.tasks.base import GOOGLE, CheckerTask


def strict_vs_loose() -> tuple[tuple[str, str], ...]:
    return (("prompt_level_loose_acc", "prompt_level_strict_acc"), ("inst_level_loose_acc", "inst_level_strict_acc"))


def gated_metrics() -> tuple[MetricSpec, ...]:
    """The seed's langcheck tasks: IFEval's four names hold the gated values; the ungated values
    sit beside them, so the gate's effect is visible; and the share passing the gate."""
    return ifeval_metrics(gated=True) + ifeval_metrics(suffix="_ungated") + (LANGUAGE_CHECK,)


def gated_vs_ungated() -> tuple[tuple[str, str], ...]:
    return (
        ("prompt_level_strict_acc", "prompt_level_strict_ungated_acc"),
        ("inst_level_strict_acc", "inst_level_strict_ungated_acc"),
        ("prompt_level_loose_acc", "prompt_level_loose_ungated_acc"),
        ("inst_level_loose_acc", "inst_level_loose_ungated_acc"),
    )


IFEVAL = CheckerTask(
    name="ifeval",
    benchmark="IFEval",
    description="Google's IFEval, graded by the pinned upstream grader, strict and loose",
    registry=GOOGLE,
    modes=("strict", "loose"),
    metrics=ifeval_metrics(),
    within_run=strict_vs_loose(),
)
IFEVAL_LANGCHECK = CheckerTask(
    name="ifeval_langcheck",
    benchmark="IFEval",
    description="IFEval with the English language and repetition gate (seed §1)",
    registry=GOOGLE,
    modes=("strict", "loose"),
    gate=EnglishGate(),
    metrics=gated_metrics(),
    within_run=gated_vs_ungated(),
)
