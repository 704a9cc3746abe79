"""The report's "Claimed vs audited" section: per imported run, what the harness reported, what
its own per-response verdicts give, what the pinned grader gives, the paired interval of the
difference, and the disagreements counted by cause, with any `unexplained` one flagged loudly.

Reads only the `claims.json` files the report plan names (`plan["claims"]`: run -> file).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ifaudit.inputs.importers.model import IFEVAL_METRICS


def _figure(value: float | None, correct: float | None = None, total: int | None = None) -> str:
    if value is None:
        return "—"
    counts = f" ({correct:g}/{total})" if correct is not None and total is not None else ""
    return f"{100 * value:.2f}{counts}"


def _metric_row(metric: dict[str, Any]) -> list[str]:
    recomputed, audited, difference = (
        metric["recomputed_from_harness"],
        metric["audited"],
        metric["audited_minus_claimed"],
    )
    return [
        metric["title"],
        _figure(metric["reported"]),
        _figure(recomputed["value"], recomputed["correct"], recomputed["total"]) if recomputed else "—",
        _figure(audited["value"], audited["correct"], audited["total"]),
        (
            f"{100 * difference['value']:+.2f} [{100 * difference['ci_low']:+.2f}, {100 * difference['ci_high']:+.2f}]"
            if difference
            else "—"
        ),
    ]


def _run_section(run: str, claims: dict[str, Any], level: int) -> list[str]:
    harness = claims["harness"]
    tool = harness["tool"]
    version = f" {tool['version']}" if tool.get("version") else ""
    header = [
        "metric",
        "reported by the harness",
        "recomputed from its verdicts",
        "audited (pinned grader)",
        f"audited − claimed (points) [{level} % CI]",
    ]
    order = sorted(
        claims["metrics"],
        key=lambda name: (IFEVAL_METRICS.index(name) if name in IFEVAL_METRICS else len(IFEVAL_METRICS), name),
    )
    rows = [_metric_row(claims["metrics"][name]) for name in order]
    out = [
        f"**{run}**: {harness['format']} log of {tool['name']}{version}, model `{harness['model']}`; "
        f"{claims['responses_with_harness_verdicts']} responses carry the harness's own verdicts.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
    ]
    if claims["prompt_differences"]:
        keys = ", ".join(f"{d['key']} ({', '.join(d['fields'])})" for d in claims["prompt_differences"])
        out += [
            f"The harness's copy of {len(claims['prompt_differences'])} prompts differs from the pinned prompt "
            f"set: {keys}; graded against the pinned set.",
            "",
        ]
    if not claims["responses_with_harness_verdicts"]:
        return out + ["This log records no per-response verdicts: only the audited figures are shown.", ""]
    from ifaudit.steps.claims import CAUSES  # the grader's modules, only for a report with an imported run

    causes = claims["causes"]
    counted = ", ".join(f"`{cause}` {causes[cause]}" for cause in CAUSES if causes.get(cause))
    out.append(
        f"Verdicts that differ from the pinned grader's: {len(claims['disagreements'])}"
        + (f" — {counted}" if counted else "")
        + f" (every one listed in `{run}/disagreements.csv`)."
    )
    if claims["unexplained"]:
        out.append(
            f"**⚠ UNEXPLAINED: {claims['unexplained']} of them have no cause ifaudit can establish; "
            "the harness graded something this audit cannot reproduce. Read those rows before trusting "
            "either figure.**"
        )
    return out + [""]


def claims_section(plan: dict[str, Any], level: int) -> list[str]:
    """The section's Markdown lines; none when no run was imported."""
    runs = plan.get("claims", {})
    if not runs:
        return []
    out = [
        "## Claimed vs audited",
        "",
        "Runs imported from a harness's log: the harness's reported aggregate, the same aggregate recomputed "
        "from its own per-response verdicts (the claim), and the pinned grader's on the same responses. The "
        "interval of audited − claimed is paired (each resample draws the same prompts for both). Causes: see "
        "docs/importing.md.",
        "",
    ]
    for run, path in runs.items():
        out += _run_section(run, json.loads(Path(path).read_text(encoding="utf-8")), level)
    return out
