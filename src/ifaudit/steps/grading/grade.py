"""The `grade` step: one grading process grades one shard of a run's responses, after certifying
itself with the task's canary and, where asked, auditing the prompt set with the same registry."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ifaudit.core.errors import IfauditError
from ifaudit.core.records import Prompt, Response
from ifaudit.io.canonical import atomic_write_bytes, write_json, write_jsonl
from ifaudit.io.lifetime import built_to_last
from ifaudit.tasks.base import Grading, GradingOptions, Task


@dataclass(frozen=True)
class CanaryFiles:
    """Where the canary's verdict goes, and its files where they are not the committed ones."""

    out: Path
    canary: Path | None = None
    prompts: Path | None = None
    responses: Path | None = None


@dataclass(frozen=True)
class GradeRequest:
    task: Task
    prompts: Path
    responses: Path
    out: Path
    shard: str = "0/1"
    canary: CanaryFiles | None = None
    audit_out: Path | None = None


# A process may grade many runs of a task (a batch, ifaudit.steps.grading.batch): it loads the
# grader, certifies itself with the canary and audits each prompt set once, and gives every run the
# bytes a process of its own would have written (grading resets its randomness before each
# response, so the runs graded before leave no trace). Keys: the options that choose the grader.
_LOADED: dict[Hashable, Grading] = {}
_CERTIFIED: dict[Hashable, bytes] = {}
_AUDITED: dict[Hashable, dict[str, Any]] = {}


def _grader_key(task: Task, options: GradingOptions) -> Hashable:
    """What decides the grading a process loads: the options but its progress bar and the judge's
    settings (made from the others)."""
    return task.name, dataclasses.replace(options, progress=GradingOptions.progress, replay_judge=None)


def grade_shard(request: GradeRequest, options: GradingOptions) -> str:
    from ifaudit.io.responses import read_responses
    from ifaudit.steps.grading.passes import parse_shard, shard_slice
    from ifaudit.tasks.grading import canonical_order

    if options.jobs < 1:
        raise IfauditError(f"--jobs {options.jobs}: expected at least 1 worker process")
    index, count = parse_shard(request.shard)
    task = request.task
    prompts = task.read_prompts(request.prompts)
    responses = canonical_order(prompts, read_responses(request.responses, prompts))
    shard = shard_slice(responses, index, count)
    key = _grader_key(task, options)
    with built_to_last():  # the grader, and the tables the canary's responses make it load
        if key not in _LOADED:
            _LOADED[key] = task.load(options)
        grading = _LOADED[key].with_options(options)
        if request.canary is not None:  # certify this very process, before it grades
            _certify(request, prompts, responses, grading, key)
    if request.audit_out is not None:  # the prompt set's audit, with the registry this process grades with
        from ifaudit.steps.grading.disclosures import grading_audit

        audited = (key, request.prompts)
        if audited not in _AUDITED:
            _AUDITED[audited] = grading_audit(task.name, grading, prompts)
        write_json(request.audit_out, _AUDITED[audited])
    records = grading.grade(prompts, shard)
    digest = write_jsonl(request.out, records)
    return (
        f"graded {len(records)} of {len(responses)} responses (shard {index + 1} of {count}) -> {request.out} "
        f"(sha256 {digest})"
    )


def _certify(
    request: GradeRequest, prompts: list[Prompt], responses: list[Response], grading: Grading, key: Hashable
) -> None:
    """The canary's verdict of this process in `request.canary.out`: run here the first time, the
    same bytes again for each next run the process grades."""
    from ifaudit.steps.grading.canary import certify

    canary = request.canary
    assert canary is not None
    certified = (key, canary.canary, canary.prompts, canary.responses)
    if certified in _CERTIFIED:
        atomic_write_bytes(canary.out, _CERTIFIED[certified])
        return
    # The canary's datasets are most often the run's own files, read once for both.
    own_files = (canary.prompts, canary.responses) == (request.prompts, request.responses)
    certify(
        request.task,
        grading,
        canary.canary,
        canary.prompts,
        canary.responses,
        canary.out,
        "--canary-",
        (prompts, responses) if own_files else None,
    )
    _CERTIFIED[certified] = canary.out.read_bytes()
