"""Google's IFEval, as is and behind the English language gate (seed §1)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from ifaudit.checkers.gates import EnglishGate
from ifaudit.core.metrics import LANGUAGE_CHECK, MetricSpec, ifeval_metrics
from ifaudit.core.records import Prompt
from ifaudit.io.prompts import read_prompts
from ifaudit.tasks.base import GOOGLE, CheckerTask

# M-IFEval's English prompts are Google's with every id prefixed by its language (`en:`), one
# prompt aside (key 2785 asks for one placeholder, not three): another data version of IFEval,
# graded by Google's grader (docs/mifeval.md).
MIFEVAL_ENGLISH = "en:"


def google_ids(prompt: Prompt) -> Prompt:
    """The prompt with M-IFEval's `en:` prefix read off its ids, so Google's registry names them."""
    ids = tuple(name.removeprefix(MIFEVAL_ENGLISH) for name in prompt.instruction_id_list)
    return prompt if ids == prompt.instruction_id_list else dataclasses.replace(prompt, instruction_id_list=ids)


@dataclass(frozen=True)
class GoogleTask(CheckerTask):
    """A task of Google's registry: reads IFEval's prompts, and M-IFEval's English copy of them."""

    def read_prompts(self, path: Path) -> list[Prompt]:
        return [google_ids(prompt) for prompt in read_prompts(path)]


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


IFEVAL = GoogleTask(
    name="ifeval",
    benchmark="IFEval",
    description="Google's IFEval, graded by the pinned upstream grader, strict and loose",
    registry=GOOGLE,
    modes=("strict", "loose"),
    metrics=ifeval_metrics(),
    within_run=strict_vs_loose(),
)
IFEVAL_LANGCHECK = GoogleTask(
    name="ifeval_langcheck",
    benchmark="IFEval",
    description="IFEval with the English language and repetition gate (seed §1)",
    registry=GOOGLE,
    modes=("strict", "loose"),
    gate=EnglishGate(),
    metrics=gated_metrics(),
    within_run=gated_vs_ungated(),
)
