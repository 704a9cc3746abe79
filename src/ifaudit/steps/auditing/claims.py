"""Claimed vs audited: a harness's reported score set beside what the pinned grader gives, and
every response on which the two disagree, each with the cause ifaudit can establish.

A cause is established by regrading that one instruction the way the harness could have, and
seeing the harness's verdict come back:
- `prompt_differs`: with the harness's copy of the prompt (another revision, other settings:
  the data version);
- `grader_version`: with another pinned version of the grader (IFBench's two commits), which
  reproduces the harness's verdict (the harness's own copy may be of another commit still);
- `graded_other_text`: on the text the harness graded, which is not the text it logged
  (lm-eval's `filtered_resps` vs `resps`);
- `thinking_graded`: on the whole response, reasoning included, where ifaudit grades the answer;
- `substituted_setting`: under other seeds, on an instruction whose setting the grader replaces
  with a random draw (IFEval's letter_frequency asked for `#` or `!`, prompts 1122 and 1129);
- `language_detection`: under other seeds, on an instruction decided by langdetect;
- `grader_randomness`: under other seeds, anything else that moves with them;
- `harness_checker`: no regrading gives the harness's verdict, and the harness's own copy of that
  checker, read in its package at the version its log names, is not upstream's;
- `unexplained`: none of these; flagged loudly.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import langdetect

from ifaudit.steps.grading.analysis import Settings
from ifaudit.steps.grading.disclosures import substituted_settings
from ifaudit.tasks.graders import CheckerRegistry
from ifaudit.tasks.grading import follow_list, loose_variants
from ifaudit.core.metrics import MetricSpec, accuracies, score_tables
from ifaudit.io.prompts import prompt_from_record
from ifaudit.core.records import Prompt, PromptKey
from ifaudit.core.stats import Resamples, paired_difference

PROBE_SEEDS = tuple(range(32))  # seeds tried when asking whether a verdict moves with the grader's randomness
CAUSES = (
    "prompt_differs",
    "grader_version",
    "graded_other_text",
    "thinking_graded",
    "substituted_setting",
    "language_detection",
    "grader_randomness",
    "harness_checker",
    "unexplained",
)


@dataclass(frozen=True)
class HarnessVerdicts:
    """One response's verdicts as the harness recorded them, with what it graded them on."""

    key: PromptKey
    sample: int
    verdicts: dict[str, list[bool]]
    graded_text: str | None  # set only where the harness graded another text than it logged
    doc: dict[str, Any] | None  # set only where the harness's prompt differs from the pinned one
    per_instruction: bool = True  # False: only the number followed is known (inspect's IFEval scorer)
    prompt_only: bool = False  # True: only whether all were followed is known (OpenCompass), one bool per mode
    # instruction id -> how the harness's own copy of that checker differs from upstream's, as read
    # in the harness's package at the version its log names (harness_copies.py)
    modified_checkers: Mapping[str, str] = field(default_factory=dict)


def prompt_difference(pinned: Prompt, doc: dict[str, Any]) -> list[str]:
    """Which of the prompt's fields the harness's copy holds differently (nulls dropped, as the
    prompt reader does)."""
    theirs = prompt_from_record(doc, pinned.path, pinned.line)
    return [
        name for name in ("prompt", "instruction_id_list", "kwargs") if getattr(theirs, name) != getattr(pinned, name)
    ]


def _followed(registry: CheckerRegistry, prompt: Prompt, text: str, mode: str, seed: int) -> list[bool]:
    random.seed(seed)
    langdetect.DetectorFactory.seed = seed
    return follow_list(registry, prompt, [text] if mode == "strict" else loose_variants(text))


def explain(
    registry: CheckerRegistry,
    prompt: Prompt,
    record: dict[str, Any],
    harness: HarnessVerdicts,
    response: str,
    mode: str,
    index: int,
    wanted: bool,
    substituted: set[tuple[PromptKey, int]],
    others: Sequence[CheckerRegistry] = (),
) -> tuple[str, str]:
    """The cause of the harness's verdict `wanted` on one instruction, and a line of detail; see
    the module's docstring."""
    from ifaudit.checkers.thinking import strip_thinking

    answer, _ = strip_thinking(response)
    if harness.doc is not None:
        theirs = prompt_from_record(harness.doc, prompt.path, prompt.line)
        if _followed(registry, theirs, answer, mode, 0)[index] == wanted:
            return (
                "prompt_differs",
                f"the harness's prompt differs in {', '.join(prompt_difference(prompt, harness.doc))}",
            )
    for other in others:
        if _followed(other, prompt, answer, mode, 0)[index] == wanted:
            return (
                "grader_version",
                f"{other.name}@{other.version[:7]} reproduces the harness's verdict (which copy of the "
                "grader the harness ran, and at which commit, its log does not say)",
            )
    if harness.graded_text is not None and _followed(registry, prompt, harness.graded_text, mode, 0)[index] == wanted:
        return "graded_other_text", "the harness graded its filtered text, not the response it logged"
    if record.get("thinking_stripped") and _followed(registry, prompt, response, mode, 0)[index] == wanted:
        return "thinking_graded", "the harness graded the reasoning text too; ifaudit grades the answer after it"
    seen = Counter(_followed(registry, prompt, answer, mode, seed)[index] for seed in PROBE_SEEDS)
    if seen[wanted]:
        share = f"{seen[wanted]} of {len(PROBE_SEEDS)} seeds give the harness's verdict"
        instruction_id = prompt.instruction_id_list[index]
        if (prompt.key, index) in substituted:
            return "substituted_setting", f"the grader replaces a setting with a random draw; {share}"
        if instruction_id.startswith("language:"):
            return "language_detection", f"langdetect's verdict moves with its seed; {share}"
        return "grader_randomness", share
    modified = harness.modified_checkers.get(prompt.instruction_id_list[index])
    if modified is not None:
        return "harness_checker", f"the harness's own copy of this checker differs: {modified} (read, not regraded)"
    return "unexplained", "no regrading reproduces the harness's verdict"


def _disagreements(
    registry: CheckerRegistry,
    prompt: Prompt,
    record: dict[str, Any],
    harness: HarnessVerdicts,
    response: str,
    mode: str,
    substituted: set[tuple[PromptKey, int]],
    others: Sequence[CheckerRegistry] = (),
) -> list[dict[str, Any]]:
    """One row per instruction whose verdicts differ. Where the harness recorded only a count,
    the rows are the instructions whose other verdict a cause reproduces, as many as the counts
    differ by; a difference no instruction accounts for is one `unexplained` row."""
    mine, theirs = record[mode]["follow_instruction_list"], harness.verdicts[mode]

    def row(index: int | str, harness_verdict: Any, pinned: Any, cause: str, detail: str) -> dict[str, Any]:
        instruction_id = prompt.instruction_id_list[index] if isinstance(index, int) else ""
        return {
            "key": prompt.key,
            "sample": harness.sample,
            "mode": mode,
            "index": index,
            "instruction_id": instruction_id,
            "harness": harness_verdict,
            "pinned": pinned,
            "cause": cause,
            "detail": detail,
        }

    if harness.prompt_only:
        return _prompt_level_rows(registry, prompt, record, harness, response, mode, substituted, others, row)
    if harness.per_instruction:
        return [
            row(index, b, a, *explain(registry, prompt, record, harness, response, mode, index, b, substituted, others))
            for index, (a, b) in enumerate(zip(mine, theirs, strict=True))
            if a != b
        ]
    gap = sum(theirs) - sum(mine)
    if not gap:
        return []
    candidates = [index for index, followed in enumerate(mine) if followed == (gap < 0)]
    rows = []
    for index in candidates:
        cause, detail = explain(registry, prompt, record, harness, response, mode, index, gap > 0, substituted, others)
        if cause != "unexplained":
            rows.append(row(index, gap > 0, gap < 0, cause, detail + " (the harness recorded only counts)"))
        if len(rows) == abs(gap):
            return rows
    counts = f"{sum(theirs)} of {len(theirs)} followed"
    rows.append(
        row(
            "",
            counts,
            f"{sum(mine)} of {len(mine)} followed",
            "unexplained",
            f"{abs(gap) - len(rows)} of the count difference has no established cause",
        )
    )
    return rows


def _prompt_level_rows(
    registry: CheckerRegistry,
    prompt: Prompt,
    record: dict[str, Any],
    harness: HarnessVerdicts,
    response: str,
    mode: str,
    substituted: set[tuple[PromptKey, int]],
    others: Sequence[CheckerRegistry],
    row: Any,
) -> list[dict[str, Any]]:
    """Where the harness recorded only whether all instructions were followed: a harness that
    failed what the pinned grader passes is explained by one instruction whose failure a cause
    reproduces; one that passed what the pinned grader fails, by every failed instruction's pass.
    What no cause accounts for is one `unexplained` row."""
    mine, theirs = record[mode]["follow_instruction_list"], harness.verdicts[mode][0]
    if all(mine) == theirs:
        return []
    wanted = bool(theirs)
    candidates = [index for index, followed in enumerate(mine) if followed != wanted]
    rows = []
    for index in candidates:
        cause, detail = explain(registry, prompt, record, harness, response, mode, index, wanted, substituted, others)
        if cause != "unexplained":
            rows.append(
                row(index, wanted, not wanted, cause, detail + " (the harness recorded only the prompt's verdict)")
            )
            if not wanted:
                return rows
    if wanted and len(rows) == len(candidates):
        return rows
    followed = "all followed" if wanted else "not all followed"
    pinned = f"{sum(mine)} of {len(mine)} followed"
    return rows + [row("", followed, pinned, "unexplained", "no cause reproduces the harness's prompt-level verdict")]


def harness_records(harness: Sequence[HarnessVerdicts]) -> list[dict[str, Any]]:
    """The harness's verdicts in the shape of grade records, for the same metrics."""
    return [
        {
            "key": h.key,
            "sample": h.sample,
            **{
                mode: {"follow_all_instructions": all(v), "follow_instruction_list": v}
                for mode, v in h.verdicts.items()
            },
        }
        for h in harness
    ]


def _tolerance(reported: float) -> float:
    """How far a reported figure may sit from the recomputed one and still be the same: half a
    unit of its last written decimal (0.95 stands for anything in [0.945, 0.955]), and at least
    1e-9 for a figure written in full (floating-point sums differ in the last bits)."""
    written = repr(float(reported))
    if "e" in written or "." not in written:
        return 1e-9
    return max(1e-9, 0.5 * 10.0 ** -len(written.split(".", 1)[1]))


def headline_mismatches(
    prompts: Sequence[Prompt],
    judged: Sequence[HarnessVerdicts],
    compared: Sequence[MetricSpec],
    reported: dict[str, float],
) -> dict[str, dict[str, float]]:
    """Each reported aggregate that the harness's own per-response verdicts do not give, with
    both figures. Recomputed on the prompts that carry verdicts, as the harness computed it (a
    log of 25 samples reports on 25 prompts)."""
    keys = {h.key for h in judged}
    theirs = accuracies(score_tables([p for p in prompts if p.key in keys], harness_records(judged), compared))
    return {
        spec.name: {"reported": reported[spec.name], "recomputed_from_harness": theirs[spec.name]["value"]}
        for spec in compared
        if spec.name in reported
        and abs(reported[spec.name] - theirs[spec.name]["value"]) > _tolerance(reported[spec.name])
    }


def audit_claims(
    registry: CheckerRegistry,
    metrics: Sequence[MetricSpec],
    prompts: Sequence[Prompt],
    grades: Sequence[dict[str, Any]],
    responses: dict[tuple[PromptKey, int], str],
    harness: Sequence[HarnessVerdicts],
    reported: dict[str, float],
    settings: Settings,
    others: Sequence[CheckerRegistry] = (),
    denominators: Mapping[int, str] | None = None,
) -> dict[str, Any]:
    """`others`: the other pinned versions of the grader, for the `grader_version` cause;
    `denominators`: the prompt counts of the task's data versions, by name, for `claimed_over`."""
    by_key = {prompt.key: prompt for prompt in prompts}
    ours = {(record["key"], record["sample"]): record for record in grades}
    substituted = {(found["key"], found["index"]) for found in substituted_settings(registry, prompts)}
    judged = [h for h in harness if (h.key, h.sample) in ours]
    disagreements = []
    for h in judged:
        record = ours[h.key, h.sample]
        for mode in sorted(h.verdicts):
            disagreements.extend(
                _disagreements(
                    registry, by_key[h.key], record, h, responses[h.key, h.sample], mode, substituted, others
                )
            )
    compared = [spec for spec in metrics if spec.mode in ("strict", "loose") and not spec.gated]
    audited = accuracies(score_tables(prompts, grades, compared))
    rows = {
        spec.name: {
            "title": spec.title,
            "reported": reported.get(spec.name),
            "recomputed_from_harness": None,
            "audited": audited[spec.name],
            "audited_minus_claimed": None,
            "audited_minus_reported": (
                audited[spec.name]["value"] - reported[spec.name] if spec.name in reported else None
            ),
        }
        for spec in compared
    }
    # a harness that recorded prompt-level verdicts only (OpenCompass) claims no instruction-level figure
    claimed = [spec for spec in compared if spec.level == "prompt" or not any(h.prompt_only for h in judged)]
    if judged:  # a log without per-response verdicts (a batch file, a generic JSONL) claims nothing to pair
        tables_ours = score_tables(prompts, [ours[h.key, h.sample] for h in judged], claimed)
        tables_theirs = score_tables(prompts, harness_records(judged), claimed)
        recomputed = accuracies(tables_theirs)
        resamples = Resamples.draw(settings.seed, settings.resamples, len(prompts))
        for spec in claimed:
            ours_pair, theirs_pair = tables_ours[spec.name].pair(), tables_theirs[spec.name].pair()
            replicates_ours, replicates_theirs = resamples.ratios([ours_pair, theirs_pair])
            difference = paired_difference(
                ours_pair, theirs_pair, (replicates_ours, replicates_theirs), settings.level, settings.method
            )
            rows[spec.name]["recomputed_from_harness"] = recomputed[spec.name]
            rows[spec.name]["audited_minus_claimed"] = {
                "value": difference.value,
                "ci_low": difference.interval.low,
                "ci_high": difference.interval.high,
            }
    causes = Counter(row["cause"] for row in disagreements)
    return {
        "metrics": rows,
        # the harness's headline figures its own verdicts do not support (none without verdicts)
        "headline_mismatches": headline_mismatches(prompts, judged, claimed, reported) if judged else {},
        "responses_with_harness_verdicts": len(judged),
        "disagreements": disagreements,
        "causes": {cause: causes[cause] for cause in CAUSES if causes[cause]},
        "unexplained": causes["unexplained"],
        "claimed_over": claimed_denominators(reported, denominators or {}),
    }


def claimed_denominators(reported: Mapping[str, float], denominators: Mapping[int, str]) -> dict[str, Any]:
    """Per reported prompt-level figure, the data version whose prompt count makes it k/n (within
    float rounding): a k/294 and a k/300 are different benchmarks. Empty where a task has one."""
    found: dict[str, Any] = {}
    for name, value in sorted(reported.items()):
        if not name.startswith("prompt_level_") or not denominators:
            continue
        fits = [n for n in sorted(denominators) if abs(value * n - round(value * n)) < 1e-6]
        found[name] = (
            {"over": fits[0], "correct": round(value * fits[0]), "data": denominators[fits[0]]}
            if len(fits) == 1
            else {
                "over": None,
                "data": "not k/n for exactly one data version: " + (", ".join(map(str, fits)) or "none fits"),
            }
        )
    return found
