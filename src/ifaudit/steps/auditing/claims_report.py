"""The report's "Claimed vs audited" section: per imported run, what the harness reported, what
its own per-response verdicts give, what the pinned grader gives, the paired interval of the
difference, and the disagreements counted by cause, with any `unexplained` one flagged loudly.

Reads only the `claims.json` files the report plan names (`plan["claims"]`: run -> file).
"""

from __future__ import annotations

import json
from pathlib import Path
from collections.abc import Callable, Mapping
from typing import Any

from ifaudit.inputs.importers.model import IFEVAL_METRICS
from ifaudit.io.formats.escape import markdown, markdown_code
from ifaudit.tasks.registry import get_task


def markdown_cell(text: object) -> str:
    """Text as one Markdown table cell shows it: a backslash or `|` escaped (a bare `|` would split
    the cell), a line break written `<br>` (a bare one would end the table). Every cell of the
    report goes through here; free text in a cell (run labels, tool and model names from a config
    or a log) is escape.markdown's already, which holds none of these."""
    escaped = str(text).replace("\\", "\\\\").replace("|", "\\|")
    return "<br>".join(escaped.splitlines())


def _figure(value: float | None, correct: float | None = None, total: int | None = None) -> str:
    if value is None:
        return "—"
    counts = f" ({correct:g}/{total})" if correct is not None and total is not None else ""
    return f"{100 * value:.2f}{counts}"


def _points(value: float) -> str:
    return f"{100 * value:+.2f}"


def _metric_row(metric: dict[str, Any], unsupported: bool) -> list[str]:
    """A metric's figures; a reported figure its own verdicts do not give is set in bold, with
    audited − reported beside audited − claimed."""
    recomputed, audited, difference = (
        metric["recomputed_from_harness"],
        metric["audited"],
        metric["audited_minus_claimed"],
    )
    reported, minus_reported = _figure(metric["reported"]), metric.get("audited_minus_reported")
    return [
        metric["title"],
        f"**{reported} ⚠**" if unsupported else reported,
        _figure(recomputed["value"], recomputed["correct"], recomputed["total"]) if recomputed else "—",
        _figure(audited["value"], audited["correct"], audited["total"]),
        (
            f"{_points(difference['value'])} [{_points(difference['ci_low'])}, {_points(difference['ci_high'])}]"
            if difference
            else "—"
        ),
        "—"
        if minus_reported is None
        else (f"**{_points(minus_reported)}**" if unsupported else _points(minus_reported)),
    ]


def _headline_warning(claims: dict[str, Any]) -> list[str]:
    """The bold line under the table when a reported figure is not what the harness's own
    per-response verdicts give: the headline claims more (or less) than its samples hold."""
    mismatches = claims.get("headline_mismatches") or {}
    if not mismatches:
        return []
    figures = "; ".join(
        f"{claims['metrics'][name]['title']}: {100 * found['reported']:.2f} reported, "
        f"{100 * found['recomputed_from_harness']:.2f} from its own verdicts"
        for name, found in mismatches.items()
    )
    return [
        f"**⚠ HEADLINE NOT SUPPORTED BY ITS OWN SAMPLES: {figures}. Audited − claimed above is measured "
        "against the recomputed figure; audited − reported shows the gap to the headline.**",
        "",
    ]


def _metric_order(claims: dict[str, Any]) -> list[str]:
    """The claims' metrics in IFEval's order, any other after them by name."""
    return sorted(
        claims["metrics"],
        key=lambda name: (IFEVAL_METRICS.index(name) if name in IFEVAL_METRICS else len(IFEVAL_METRICS), name),
    )


def log_source(harness: Mapping[str, Any]) -> str:
    """`lm-eval log of lm-evaluation-harness`; `log of inspect` where the format is named after
    its tool (Markdown-escaped)."""
    log_format, tool = harness["format"], harness["tool"]["name"]
    kind = "" if log_format.lower() == tool.lower() else f"{markdown(log_format)} "
    return f"{kind}log of {markdown(tool)}"


def _run_section(run: str, claims: dict[str, Any], level: int) -> list[str]:
    harness = claims["harness"]
    tool = harness["tool"]
    version = f" {markdown(tool['version'])}" if tool.get("version") else ""
    header = [
        "metric",
        "reported by the harness",
        "recomputed from its verdicts",
        "audited (pinned grader)",
        f"audited − claimed (points) [{level} % CI]",
        "audited − reported (points)",
    ]
    unsupported = claims.get("headline_mismatches") or {}
    rows = [_metric_row(claims["metrics"][name], name in unsupported) for name in _metric_order(claims)]
    out = [
        f"**{run}**: {log_source(harness)}{version}, "
        f"model {markdown_code(harness['model'])}; "
        f"{claims['responses_with_harness_verdicts']} responses carry the harness's own verdicts.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(markdown_cell(cell) for cell in row) + " |" for row in rows),
        "",
        *_headline_warning(claims),
        *_composite_lines(claims),
        *_copy_lines(claims.get("grader_copy")),
    ]
    if claims["prompt_differences"]:
        keys = ", ".join(f"{d['key']} ({', '.join(d['fields'])})" for d in claims["prompt_differences"])
        out += [
            f"The harness's copy of {len(claims['prompt_differences'])} prompts differs from the pinned prompt "
            f"set: {keys}; graded against the pinned set.",
            "",
        ]
    out += _in_doubt_lines(claims.get("suspect_responses"))
    if not claims["responses_with_harness_verdicts"]:
        return out + ["This log records no per-response verdicts: only the audited figures are shown.", ""]
    metrics = claims["metrics"]
    unpaired = [metrics[n]["title"] for n in _metric_order(claims) if metrics[n]["recomputed_from_harness"] is None]
    if unpaired:
        out += [
            f"The log records whether each prompt's instructions were all followed, not which: {', '.join(unpaired)} "
            "as reported only, not recomputed from its verdicts.",
            "",
        ]
    from ifaudit.steps.auditing.claims import CAUSES  # the grader's modules, only for a report with an imported run

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


def _in_doubt_lines(found: Mapping[str, Any] | None) -> list[str]:
    """The log's responses that may not be answers, and what the harness and the audit credit
    them with: both figures above count them."""
    if not found or not found["responses"]:
        return []
    credit = [
        f"{name} {figures['strict']['responses_passing']} pass every instruction (strict), "
        f"{figures['strict']['instructions_followed']} of {figures['strict']['instructions']} instructions followed"
        for name, figures in (("the harness's verdicts:", found["claimed"]), ("the audit:", found["audited"]))
        if "strict" in figures
    ]
    return [
        f"**{markdown(found['sentence'])}.** Both the claim and the audit count them as graded: "
        + "; ".join(credit)
        + " (see “Responses that may not be answers”).",
        "",
    ]


def _composite_lines(claims: dict[str, Any]) -> list[str]:
    """A published composite (the leaderboard's IFEval figure, OpenCompass's `score`) with its
    formula, beside the same formula on the harness's verdicts and on the pinned grader's."""

    def shown(value: float | None) -> str:
        return "—" if value is None else f"{value:.2f}"

    lines = []
    for name, found in sorted((claims.get("composites") or {}).items()):
        verdict = {True: "its own verdicts give it", False: "**its own verdicts do not give it**", None: ""}[
            found["reported_is_recomputed"]
        ]
        lines.append(
            f"Published composite `{name}` = {found['formula']}: {found['reported']:g} published; "
            f"{shown(found['recomputed_from_harness'])} from the harness's verdicts"
            + (f" ({verdict})" if verdict else "")
            + f"; {shown(found['audited'])} audited."
        )
    return [*lines, ""] if lines else []


def _copy_lines(copy: dict[str, Any] | None) -> list[str]:
    """Which copy of the grader the harness graded with, from the package version its log names."""
    if not copy:
        return []
    if not copy["read"]:
        return [
            f"The harness's copy of the grader ({markdown_code(copy['package'])}) is of a version ifaudit has not read.",
            "",
        ]
    return [
        f"The harness graded with {markdown_code(copy['package'])}'s copy of the grader ({markdown(copy['module'])}): "
        f"`random` {markdown(copy['random'])}; langdetect {markdown(copy['langdetect'])}; kwargs: "
        f"{markdown(copy['kwargs'])}; reasoning: {markdown(copy['reasoning'])}.",
        "",
    ]


def _load_claims(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {run: json.loads(Path(path).read_text(encoding="utf-8")) for run, path in plan.get("claims", {}).items()}


def _differs(metric: dict[str, Any]) -> bool:
    """Whether the audit and the claim (or the reported headline) differ on this metric."""
    difference, minus_reported = metric["audited_minus_claimed"], metric.get("audited_minus_reported")
    return bool(difference and difference["value"]) or bool(minus_reported)


def _overview_metrics(claims: dict[str, Any], headline: str) -> list[str]:
    """The task's headline metric (else the first), then every other metric on which audited and
    claimed differ, in the metrics' order: a difference on the other figures is not hidden behind
    a headline that agrees."""
    names = _metric_order(claims)
    primary = headline if headline in claims["metrics"] else sorted(claims["metrics"])[0]
    mismatches = claims.get("headline_mismatches") or {}
    return [primary] + [
        name for name in names if name != primary and (_differs(claims["metrics"][name]) or name in mismatches)
    ]


def claims_overview(
    plan: dict[str, Any], level: int, text: Callable[[object], str]
) -> tuple[list[str], list[list[str]]]:
    """Per imported run, a row for its task's headline metric and for every metric on which
    audited and claimed differ: what the harness reported, what its own verdicts
    give, what the pinned grader gives, the paired interval of the difference, and the run's
    disagreements (unexplained ones counted apart). The log's free text is written by `text`
    (escape.markdown for report.md)."""
    header = [
        "run",
        "log",
        "model",
        "metric",
        "reported",
        "recomputed from its verdicts",
        "audited",
        f"audited − claimed (points) [{level} % CI]",
        "verdicts that differ",
        "unexplained",
    ]
    rows = []
    for run, claims in _load_claims(plan).items():
        harness, mismatches = claims["harness"], claims.get("headline_mismatches") or {}
        for name in _overview_metrics(claims, get_task(plan["runs"][run]["task"]).headline_metric):
            cells = _metric_row(claims["metrics"][name], name in mismatches)
            rows.append(
                [run, text(harness["format"]), text(harness["model"]), *cells[:5]]
                + [str(len(claims["disagreements"])), f"**{claims['unexplained']}**" if claims["unexplained"] else "0"]
            )
    return header, rows


# What each cause of a differing verdict means, as the first screen says it (docs/importing.md).
CAUSE_MEANINGS = {
    "prompt_differs": "the harness graded its own copy of the prompt",
    "grader_version": "another pinned version of the grader gives the harness's verdict",
    "graded_other_text": "the harness graded another text than it logged",
    "thinking_graded": "the harness graded the reasoning too",
    "substituted_setting": "the grader replaces the instruction's setting with a random draw",
    "language_detection": "langdetect's verdict moves with its seed",
    "grader_randomness": "the verdict moves with the grader's random seed",
    "unexplained": "NO CAUSE ifaudit can establish",
}


def difference_causes(claims: dict[str, Any]) -> str:
    """Why audited and claimed differ, as claims.json establishes it: the differing verdicts
    counted by cause, each with what it means; a headline its own verdicts do not give; or that
    the log holds no verdicts to find a cause in."""
    parts = []
    if claims.get("headline_mismatches"):
        parts.append("the reported figure is not what the harness's own verdicts give")
    if not claims["responses_with_harness_verdicts"]:
        parts.append("the log records no per-response verdicts, so no cause can be established")
    elif claims["disagreements"]:
        counted = "; ".join(
            f"{count} {cause} ({CAUSE_MEANINGS.get(cause, cause)})" for cause, count in claims["causes"].items()
        )
        many = len(claims["disagreements"])
        verdicts = "1 verdict differs" if many == 1 else f"{many} verdicts differ"
        parts.append(f"{verdicts} from the pinned grader's: {counted}")
    return "cause: " + "; ".join(parts) if parts else ""


def claims_differences(plan: dict[str, Any]) -> list[str]:
    """One plain line per imported run whose audit and claim differ on any metric, naming each
    such metric with both figures and the difference, and the cause (for the first screen of
    the HTML report)."""
    lines = []
    for run, claims in _load_claims(plan).items():
        mismatches = claims.get("headline_mismatches") or {}
        figures = []
        for name in (name for name in _metric_order(claims) if _differs(claims["metrics"][name])):
            metric = claims["metrics"][name]
            title, reported, recomputed, audited, difference, _ = _metric_row(metric, False)
            claimed = f"reported {reported}"
            if metric["recomputed_from_harness"]:
                claimed = f"claimed {recomputed}" + (f" (reported {reported})" if name in mismatches else "")
            figures.append(f"{title}: {claimed}, audited {audited}, audited − claimed {difference}")
        if figures:
            cause = difference_causes(claims)
            lines.append(
                f"{run} ({claims['harness']['format']} log): "
                + "; ".join(figures)
                + (f"; {cause}" if cause else "")
                + "."
            )
    return lines


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
    header, rows = claims_overview(plan, level, markdown)
    out += [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(markdown_cell(cell) for cell in row) + " |" for row in rows),
        "",
        "Per imported run, every metric:",
        "",
    ]
    for run, claims in _load_claims(plan).items():
        out += _run_section(run, claims, level)
    return out
