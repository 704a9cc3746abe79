"""Arabic IFEval: the Hugging Face copy (as is and behind its Arabic gate, seed §2) and
Inception's own variant (cleaned text, per-prompt language gate, strict only)."""

from __future__ import annotations

from ifaudit.checkers.gates import ArabicHfGate, InceptionGate
from ifaudit.core.metrics import LANGUAGE_CHECK, MetricSpec, ifeval_metrics
from ifaudit.tasks.base import ARABIC_HF, ARABIC_INCEPTION, CheckerTask
from ifaudit.tasks.ifeval import gated_metrics, gated_vs_ungated, strict_vs_loose


ARABIC_HF_TASK = CheckerTask(
    name="ifeval_arabic_inception_hf",
    benchmark="Arabic IFEval",
    description="Arabic IFEval from the Hugging Face copy: 25 checkers (spec §9), strict and loose, no gate",
    registry=ARABIC_HF,
    modes=("strict", "loose"),
    metrics=ifeval_metrics(),
    within_run=strict_vs_loose(),
)
ARABIC_HF_LANGCHECK = CheckerTask(
    name="ifeval_arabic_inception_hf_langcheck",
    benchmark="Arabic IFEval",
    description="Arabic IFEval (Hugging Face copy) with the Arabic script, repetition and 7 % English gate (seed §2)",
    registry=ARABIC_HF,
    modes=("strict", "loose"),
    gate=ArabicHfGate(),
    metrics=gated_metrics(),
    within_run=gated_vs_ungated(),
)
ARABIC_INCEPTION_TASK = CheckerTask(
    name="ifeval_arabic_inception",
    benchmark="Arabic IFEval",
    headline="prompt_level_strict_langcheck_acc",  # stage 3, the gated figure (docs/arabic_ifeval.md)
    description="Inception's Arabic IFEval: 31 checkers on cleaned text, per-prompt language gate, strict only",
    registry=ARABIC_INCEPTION,
    modes=("strict",),
    clean=True,
    gate=InceptionGate(),
    metrics=(
        MetricSpec("prompt_level_strict_acc", "strict", "prompt"),
        MetricSpec("inst_level_strict_acc", "strict", "inst"),
        MetricSpec("prompt_level_strict_langcheck_acc", "strict", "prompt", gated=True),
        MetricSpec("inst_level_strict_langcheck_acc", "strict", "inst", gated=True),
        LANGUAGE_CHECK,
    ),
    within_run=(
        ("prompt_level_strict_langcheck_acc", "prompt_level_strict_acc"),
        ("inst_level_strict_langcheck_acc", "inst_level_strict_acc"),
    ),
)
