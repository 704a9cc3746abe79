"""The `grade` step: one grading process grades one shard of a run's responses, after certifying
itself with the task's canary and, where asked, auditing the prompt set with the same registry."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ifaudit.core.errors import IfauditError
from ifaudit.io.canonical import write_json, write_jsonl
from ifaudit.io.lifetime import built_to_last
from ifaudit.tasks.base import GradingOptions, Task


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


def grade_shard(request: GradeRequest, options: GradingOptions) -> str:
    from ifaudit.io.responses import read_responses
    from ifaudit.steps.grading.canary import certify
    from ifaudit.steps.grading.passes import parse_shard, shard_slice
    from ifaudit.tasks.grading import canonical_order

    if options.jobs < 1:
        raise IfauditError(f"--jobs {options.jobs}: expected at least 1 worker process")
    index, count = parse_shard(request.shard)
    task = request.task
    prompts = task.read_prompts(request.prompts)
    responses = canonical_order(prompts, read_responses(request.responses, prompts))
    shard = shard_slice(responses, index, count)
    with built_to_last():  # the grader, and the tables the canary's responses make it load
        grading = task.load(options)
        if (canary := request.canary) is not None:  # certify this very process, before it grades
            # The canary's datasets are most often the run's own files, read once for both.
            own_files = (canary.prompts, canary.responses) == (request.prompts, request.responses)
            certify(
                task,
                grading,
                canary.canary,
                canary.prompts,
                canary.responses,
                canary.out,
                "--canary-",
                (prompts, responses) if own_files else None,
            )
    if request.audit_out is not None:  # the prompt set's audit, with the registry this process grades with
        from ifaudit.steps.grading.disclosures import grading_audit

        write_json(request.audit_out, grading_audit(task.name, grading, prompts))
    records = grading.grade(prompts, shard)
    digest = write_jsonl(request.out, records)
    return (
        f"graded {len(records)} of {len(responses)} responses (shard {index + 1} of {count}) -> {request.out} "
        f"(sha256 {digest})"
    )
