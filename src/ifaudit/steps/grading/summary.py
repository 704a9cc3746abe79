"""A run's summary: its metrics from verified grades, and whether the run counts.

A run counts only when the canary of its environment passed and was graded by the same grader
as the run, and, graded under a Unicode database other than the reference one, when none of its
texts holds a code point that database classifies differently (ifaudit.tasks.unicode_exposure);
the reasons it does not are written out. Responses that may not be answers (empty, a harness's
placeholder, one text answering several prompts, cut at the length limit) are named with what
they pass (`suspect_responses`), and the run still counts: its figures are a true grading of
those bytes, which every output that shows them says. The summary has no time stamps: two
machines that grade the same responses write the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ifaudit.core.errors import InputError
from ifaudit.core.identity import GraderIdentity
from ifaudit.io.jsonl import iter_objects
from ifaudit.core.metrics import accuracies, score_tables
from ifaudit.core.suspect_responses import LENGTH_REASONS, Answer, suspect_responses
from ifaudit.checkers.thinking import strip_thinking
from ifaudit.steps.grading.canary import failure_reason
from ifaudit.tasks.base import Task
from ifaudit.core.records import Prompt
from ifaudit.io.responses import read_responses
from ifaudit.tasks.unicode_exposure import (
    REFERENCE_UNICODE,
    exposed_characters,
    exposure_check,
    exposure_problem,
    exposure_sha256,
)


def read_grades(path: Path) -> list[dict[str, Any]]:
    """Verified grades; a run with no responses at all has an empty file and still gets a summary."""
    return [record for _, record in iter_objects(path, allow_empty=True)]


def length_limited(responses_path: Path | None) -> int | None:
    """Responses the server cut at the length limit (a `finish_reason` of LENGTH_REASONS, as
    generated files and imported logs that say so record it); None when the file does not say."""
    if responses_path is None:
        return None
    records = [record for _, record in iter_objects(responses_path, allow_empty=True)]
    if not any("finish_reason" in record for record in records):
        return None
    return sum(record.get("finish_reason") in LENGTH_REASONS for record in records)


def graded_answers(responses_path: Path, prompts: Sequence[Prompt]) -> list[Answer]:
    """The run's responses as the detector reads them, in prompt and sample order: the text graded
    (after the last closing thinking tag) and the `finish_reason` its file records, if any."""
    reasons = {line: record.get("finish_reason") for line, record in iter_objects(responses_path, allow_empty=True)}
    position = {prompt.key: index for index, prompt in enumerate(prompts)}
    responses = sorted(read_responses(responses_path, list(prompts)), key=lambda r: (position[r.key], r.sample))
    return [
        Answer(
            r.key,
            r.sample,
            strip_thinking(r.text)[0],
            reason if isinstance(reason := reasons[r.line], str) else None,
            r.null,
        )
        for r in responses
    ]


def suspect_findings(
    responses_path: Path | None, prompts: Sequence[Prompt], grades: Sequence[dict[str, Any]]
) -> dict[str, Any] | None:
    """The run's responses that may not be answers (ifaudit.core.suspect_responses), each with what
    it passes; None without the response file."""
    if responses_path is None:
        return None
    answers = graded_answers(responses_path, prompts)
    return suspect_responses(answers, {(record["key"], record["sample"]): record for record in grades})


def unicode_check(
    environment: dict[str, Any], prompts: Sequence[Prompt], graded_keys: set[Any], responses_path: Path | None
) -> tuple[dict[str, Any], list[str]]:
    """The exposure check of a run graded in `environment` (its canary's fingerprint, which names
    the Unicode database that graded) over the prompts it graded (`graded_keys`) and its responses,
    and the reasons it gives not to count the run."""
    version = environment.get("unicodedata")
    if version is None:  # a verdict written by hand, or by something else than `ifaudit canary`
        problem = "the canary's grading fingerprint names no Unicode version"
        return {"version": None, "reference": REFERENCE_UNICODE, "passed": False, "problem": problem}, [problem]
    graded_with = environment.get("unicodedata_exposure")
    reasons = []
    if graded_with != exposure_sha256():
        reasons.append(
            f"the grading environment's exposure sets (sha256 {graded_with}) are not these ({exposure_sha256()})"
        )
    needs_texts = bool(exposed_characters(version))
    if needs_texts and responses_path is None:
        reasons.append(f"graded under Unicode {version}: the exposure check needs the response file")
    responses = read_responses(responses_path, list(prompts)) if needs_texts and responses_path is not None else []
    check = exposure_check(version, [prompt for prompt in prompts if prompt.key in graded_keys], responses)
    if not check["passed"]:
        reasons.append(exposure_problem(check))
    return check, reasons


def summarize(
    task: Task,
    run: str,
    label: str | None,
    grades_path: Path,
    prompts: Sequence[Prompt],
    canary_path: Path,
    responses_path: Path | None = None,
    published_verdicts: Path | None = None,
) -> dict[str, Any]:
    """The run's summary; with `published_verdicts` (upstream's committed strict verdicts of the
    same responses), also what the task's strict metrics give on them, for the report to say which
    published figure they fit."""
    grades = read_grades(grades_path)
    verdict = json.loads(canary_path.read_text(encoding="utf-8"))
    graders = {json.dumps(record["grader"], sort_keys=True) for record in grades}
    if len(graders) > 1:
        raise InputError(f"grades come from {len(graders)} different graders", path=grades_path, field="grader")
    grader = json.loads(graders.pop()) if graders else None
    identity = GraderIdentity.from_record(grader) if grader is not None else None
    canary_identity = GraderIdentity.from_record(verdict["environment"]["grader"])

    reasons = []
    if not verdict["passed"]:
        flipped = verdict.get("sentinels_flipped", [])
        reasons.append(
            f"canary failed: {failure_reason(verdict)} in {canary_path}"
            + (f" (sentinels flipped: {', '.join(flipped)})" if flipped else "")
        )
    # A judged task's canary checks the grading path, not the judge: its grader is the judge's.
    if identity is not None and not identity.kind.judged and identity != canary_identity:
        reasons.append(f"canary was graded by {canary_identity.as_record()}, the run by {grader}")

    graded_keys = {record["key"] for record in grades}
    # A judged task's verdicts are the judge's, read back as booleans: no character property decides them.
    unicode, exposure_reasons = (
        (None, []) if task.judged else unicode_check(verdict["environment"], prompts, graded_keys, responses_path)
    )
    reasons += exposure_reasons

    tables = score_tables(prompts, grades, task.metrics)
    samples = [int(n) for n in next(iter(tables.values())).samples]
    return {
        **task.summary_extras(grades),
        "run": run,
        "label": label or run,
        "task": task.name,
        "grader": grader,
        "counted": not reasons,
        "not_counted_because": reasons,
        "canary": {"passed": verdict["passed"], "disagreements": len(verdict["disagreements"])},
        "prompts": len(prompts),
        "responses": len(grades),
        "samples_per_prompt": {"min": min(samples, default=0), "max": max(samples, default=0)},
        "missing_prompts": [p.key for p in prompts if p.key not in graded_keys],
        "cut": {
            "thinking": sum(bool(record.get("thinking_stripped")) for record in grades),
            "length_limit": length_limited(responses_path),
        },
        "suspect_responses": suspect_findings(responses_path, prompts, grades),
        "metrics": accuracies(tables),
        **({"unicode": unicode} if unicode is not None else {}),
        **({"published_verdicts": committed_figures(task, prompts, published_verdicts)} if published_verdicts else {}),
    }


def committed_figures(task: Task, prompts: Sequence[Prompt], path: Path) -> dict[str, Any]:
    """The task's strict metrics (ungated) on upstream's committed verdicts, over the prompts they
    give a verdict for (as upstream computed its figures)."""
    from ifaudit.io.committed_verdicts import read_committed_verdicts

    records = read_committed_verdicts(path, list(prompts))
    keys = {record["key"] for record in records}
    specs = [spec for spec in task.metrics if spec.mode == "strict" and not spec.gated and spec.subset is None]
    return {
        "responses": len(records),
        "metrics": accuracies(score_tables([p for p in prompts if p.key in keys], records, specs)),
    }
