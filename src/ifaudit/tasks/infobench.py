"""InFoBench: decomposed yes/no questions judged by a recorded LLM judge, scored as DRFR."""

from __future__ import annotations

from ifaudit.core.metrics import MetricSpec
from ifaudit.tasks.base import JudgedTask
from ifaudit.tasks.credit import UpstreamGrader

# The reference judge script the reference protocol reads its instruction from (vendor/infobench/pin.toml).
INFOBENCH_REFERENCE = UpstreamGrader(
    "InFoBench's reference judge script",
    "qinyiwei/InfoBench evaluation.py",
    "https://github.com/qinyiwei/InfoBench",
    "vendor/infobench/pin.toml",
)

INFOBENCH_LABELS = ("Content", "Linguistic", "Style", "Format", "Number")


def _drfr_metrics() -> tuple[MetricSpec, ...]:
    """DRFR (the share of decomposed questions answered YES) overall, by subset and by label, over
    all questions (unasked or unparsed: not satisfied); and, overall and by subset, as InFoBench's
    reference computes it, over the verdicts written. The two differ only where a judge stopped early."""
    overall = (
        MetricSpec("drfr", "strict", "inst", display="DRFR (all questions; unasked or unparsed: not satisfied)"),
        MetricSpec("drfr_easy", "strict", "inst", subset="Easy_set", display="DRFR, Easy set"),
        MetricSpec("drfr_hard", "strict", "inst", subset="Hard_set", display="DRFR, Hard set"),
    )
    labels = tuple(
        MetricSpec(f"drfr_{label.lower()}", "strict", "inst", label=label, display=f"DRFR, {label} questions")
        for label in INFOBENCH_LABELS
    )
    reference = (
        MetricSpec("drfr_reference", "strict", "inst", written_only=True, display="DRFR as the reference computes it"),
        MetricSpec(
            "drfr_reference_easy",
            "strict",
            "inst",
            subset="Easy_set",
            written_only=True,
            display="DRFR as the reference computes it, Easy set",
        ),
        MetricSpec(
            "drfr_reference_hard",
            "strict",
            "inst",
            subset="Hard_set",
            written_only=True,
            display="DRFR as the reference computes it, Hard set",
        ),
    )
    return overall + labels + reference


INFOBENCH = JudgedTask(
    name="infobench",
    benchmark="InFoBench",
    description="InFoBench: decomposed yes/no questions judged by a recorded LLM judge (DRFR)",
    modes=("strict",),
    metrics=_drfr_metrics(),
    within_run=(("drfr_easy", "drfr_hard"), ("drfr_reference", "drfr")),
    reference=INFOBENCH_REFERENCE,
)
