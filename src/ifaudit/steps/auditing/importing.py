"""The import and claims steps: a harness's log in, ifaudit's inputs and the claims audit out.

`import_log` writes the run's response file (every sample the harness generated, keyed as the
pinned prompt set keys it) and a harness record (its verdicts, reported aggregates, provenance,
and every prompt where its copy differs from the pinned set). `audit_claims_step` sets that
record beside the verified grades.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ifaudit.steps.grading.analysis import Settings
from ifaudit.io.canonical import atomic_write_bytes, write_json, write_jsonl
from ifaudit.io.formats.escape import csv_cell
from ifaudit.steps.auditing.claims import HarnessVerdicts, audit_claims, harness_records, prompt_difference
from ifaudit.steps.auditing.composites import composite_figures
from ifaudit.steps.auditing.harness_copies import grader_copy, modified_checkers
from ifaudit.core.suspect_responses import in_doubt, passes, suspect_responses
from ifaudit.steps.grading.suspect_text import in_doubt_sentence
from ifaudit.steps.grading.summary import graded_answers
from ifaudit.core.errors import InputError
from ifaudit.tasks.graders import CheckerRegistry
from ifaudit.inputs.importers import FORMATS
from ifaudit.inputs.importers.model import HarnessLog, HarnessSample
from ifaudit.io.jsonl import iter_objects
from ifaudit.io.prompts import prompt_lookup
from ifaudit.core.records import Prompt, PromptKey
from ifaudit.io.responses import read_responses

DISAGREEMENT_COLUMNS = ("key", "sample", "mode", "index", "instruction_id", "harness", "pinned", "cause", "detail")


def read_log(format_name: str, log: Path, options: dict[str, Any]) -> HarnessLog:
    if format_name not in FORMATS:
        raise InputError(
            f"unknown log format {format_name!r}; known: {', '.join(sorted(FORMATS))}", field="import.format"
        )
    return FORMATS[format_name](log, options)


def _pinned_key(sample: HarnessSample, by_key: dict[PromptKey, Prompt], by_text: dict[str, PromptKey]) -> PromptKey:
    """The pinned prompt's key for a logged sample: by the harness's key, else by its prompt text."""
    key = sample.key
    if key not in by_key and isinstance(key, str) and key.isascii() and key.isdigit() and int(key) in by_key:
        key = int(key)
    if key not in by_key and sample.doc and isinstance(sample.doc.get("prompt"), str):
        key = by_text.get(sample.doc["prompt"], key)
    if key not in by_key:
        raise InputError(
            f"prompt {sample.key!r} is not in the pinned prompt set",
            path=sample.where,
            field=sample.key_field,
            hint="import the log of a run on this task's prompts",
        )
    return key


def _check_identity(sample: HarnessSample, key: PromptKey, seen: dict[tuple[PromptKey, int], HarnessSample]) -> None:
    """What a response file is checked for, checked on the log before anything is written: a
    sample number of 0 or more, and each (pinned key, sample) once, however the log spells the
    key (`1000` and `"1000"`, or an unknown key matched by its prompt's text)."""
    if sample.sample < 0:
        raise InputError(
            f"gives sample number {sample.sample}; a response's sample is 0 or more",
            path=sample.where,
            field=sample.sample_field,
        )
    first = seen.setdefault((key, sample.sample), sample)
    if first is not sample:
        raise InputError(
            f"prompt {key!r} sample {sample.sample} appears twice: as {sample.key!r} here and as {first.key!r} "
            f"at {first.where}",
            path=sample.where,
            field=sample.key_field,
            hint="a log holds each response once; import one run's log",
        )


def _difference(pinned: Prompt, sample: HarnessSample) -> list[str]:
    """How the log's copy of the prompt differs from the pinned one; a malformed copy is an error
    of the log, at the sample's place and under the field that holds the copy."""
    if sample.doc is None:
        return []
    try:
        return prompt_difference(pinned, sample.doc)
    except InputError as error:
        field = f"{sample.doc_field}.{error.field}" if error.field else sample.doc_field
        raise InputError(error.message, path=sample.where, field=field, hint=error.hint) from None


def harness_record(log: HarnessLog, prompts: list[Prompt]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The response records and the harness record of a log, against the pinned prompts; every
    sample is checked before any record is made."""
    by_key, by_text = prompt_lookup(prompts)
    seen: dict[tuple[PromptKey, int], HarnessSample] = {}
    responses, verdicts, differences = [], [], {}
    for sample in log.samples:
        key = _pinned_key(sample, by_key, by_text)
        _check_identity(sample, key, seen)
        differs = _difference(by_key[key], sample)
        if differs:
            differences[key] = differs
        responses.append({"key": key, "sample": sample.sample, "response": sample.response})
        if sample.finish_reason is not None:  # the log says why the server stopped: kept for the summary
            responses[-1]["finish_reason"] = sample.finish_reason
        if sample.verdicts is not None:
            lengths = {mode: len(v) for mode, v in sample.verdicts.items()}
            expected = 1 if sample.prompt_only else len(by_key[key].instruction_id_list)
            if (sample.prompt_only or not differs) and any(n != expected for n in lengths.values()):
                raise InputError(
                    f"holds {lengths} verdicts for {len(by_key[key].instruction_id_list)} instructions",
                    path=sample.where,
                    field="verdicts",
                )
            verdicts.append(
                {
                    "key": key,
                    "sample": sample.sample,
                    "verdicts": sample.verdicts,
                    "per_instruction": sample.per_instruction,
                    **({"prompt_only": True} if sample.prompt_only else {}),
                    "graded_text": sample.graded_text if sample.graded_text not in (None, sample.response) else None,
                    "doc": sample.doc if differs else None,
                }
            )
    record = {
        "format": log.format,
        "tool": log.tool,
        "task": log.task,
        "model": log.model,
        "generation": log.generation,
        "reported": log.reported,
        **({"composites": log.composites} if log.composites else {}),
        "provenance": log.provenance,
        "samples": len(responses),
        "prompt_differences": [{"key": key, "fields": fields} for key, fields in differences.items()],
        "verdicts": verdicts,
    }
    return responses, record


def import_log(
    format_name: str, log: Path, options: dict[str, Any], prompts: list[Prompt], out_responses: Path, out_harness: Path
) -> dict[str, Any]:
    responses, record = harness_record(read_log(format_name, log, options), prompts)
    if record["prompt_differences"]:
        keys = ", ".join(str(d["key"]) for d in record["prompt_differences"][:10])
        print(
            f"ifaudit: note: {len(record['prompt_differences'])} prompts in {log} differ from the pinned prompt set "
            f"(keys {keys}{', ...' if len(record['prompt_differences']) > 10 else ''}); grading against the pinned set",
            file=sys.stderr,
        )
    write_jsonl(out_responses, responses)
    write_json(out_harness, record)
    return record


def read_harness(path: Path) -> tuple[dict[str, Any], list[HarnessVerdicts]]:
    record = json.loads(path.read_text(encoding="utf-8"))
    modified = modified_checkers(record["tool"])
    return record, [
        HarnessVerdicts(
            key=v["key"],
            sample=v["sample"],
            verdicts=v["verdicts"],
            graded_text=v.get("graded_text"),
            doc=v.get("doc"),
            per_instruction=v["per_instruction"],
            prompt_only=v.get("prompt_only", False),
            modified_checkers=modified,
        )
        for v in record["verdicts"]
    ]


def disagreements_csv(rows: list[dict[str, Any]]) -> bytes:
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=DISAGREEMENT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({name: csv_cell(value) for name, value in row.items()} for row in rows)
    return out.getvalue().encode("utf-8")


@dataclass(frozen=True)
class ClaimsFiles:
    """What `audit-claims` reads (the verified grades, the imported responses, the harness record)
    and writes (the claims JSON, the disagreements CSV)."""

    grades: Path
    responses: Path
    harness: Path
    out: Path
    table: Path


def audit_claims_step(
    registry: CheckerRegistry,
    task_metrics: Any,
    prompts: list[Prompt],
    files: ClaimsFiles,
    settings: Settings,
    others: Sequence[CheckerRegistry] = (),
    denominators: Mapping[int, str] | None = None,
) -> dict[str, Any]:
    record, harness = read_harness(files.harness)
    grades = [obj for _, obj in iter_objects(files.grades)]
    responses = {(r.key, r.sample): r.text for r in read_responses(files.responses, prompts)}
    reported = record["reported"]
    audit = audit_claims(
        registry, task_metrics, prompts, grades, responses, harness, reported, settings, others, denominators
    )
    if record.get("composites"):
        audit["composites"] = composite_figures(record["composites"], audit["metrics"])
    result = {
        "harness": {name: record[name] for name in ("format", "tool", "task", "model")},
        "grader_copy": grader_copy(record["tool"]),
        "prompt_differences": record["prompt_differences"],
        **audit,
        "suspect_responses": claimed_in_doubt(files.responses, prompts, grades, harness),
    }
    write_json(files.out, result)
    atomic_write_bytes(files.table, disagreements_csv(audit["disagreements"]))
    if audit["headline_mismatches"]:
        print(headline_warning(audit, files.out), file=sys.stderr)
    return result


def claimed_in_doubt(
    responses: Path, prompts: Sequence[Prompt], grades: Sequence[dict[str, Any]], harness: Sequence[HarnessVerdicts]
) -> dict[str, Any]:
    """The run's responses that may not be answers (as its summary names them), with what the
    audit and what the harness's own verdicts pass of them: the harness's claim counts them too."""
    answers = graded_answers(responses, prompts)
    by_response = {(record["key"], record["sample"]): record for record in grades}
    found = suspect_responses(answers, by_response)
    flagged = set(in_doubt(answers, by_response))
    theirs = [record for record in harness_records(harness) if (record["key"], record["sample"]) in flagged]
    return {
        "sentence": in_doubt_sentence(found, str),
        "responses": found["in_doubt"]["responses"],
        "audited": found["in_doubt"]["passes"],
        "claimed": passes(theirs),
        "with_harness_verdicts": len(theirs),
    }


def claims_lines(result: dict[str, Any], files: ClaimsFiles) -> list[str]:
    """What `audit-claims` says: how many verdicts differ, and a warning for those without a cause."""
    lines = [
        f"claims of {result['harness']['tool']['name']}: {len(result['disagreements'])} verdicts differ from the "
        f"pinned grader's ({result['unexplained']} unexplained) -> {files.out}"
    ]
    if result["unexplained"]:
        lines.append(
            f"ifaudit: warning: {result['unexplained']} disagreements with the harness have no established cause; "
            f"see {files.table}"
        )
    doubt = result.get("suspect_responses")
    if doubt and doubt["responses"]:
        lines.append(
            f"ifaudit: note: {doubt['sentence']}; the harness's figures and the audit's both count them as graded"
        )
    lines += [
        f"claimed {name}: {found['correct']}/{found['over']}, over {found['data']}"
        for name, found in result.get("claimed_over", {}).items()
        if found["over"] is not None
    ]
    return lines


def headline_warning(audit: dict[str, Any], out: Path) -> str:
    """One line: each reported aggregate the harness's own verdicts do not give, both in percent."""
    figures = "; ".join(
        f"{audit['metrics'][name]['title']} {100 * found['reported']:.2f} reported, "
        f"{100 * found['recomputed_from_harness']:.2f} from its own verdicts"
        for name, found in audit["headline_mismatches"].items()
    )
    return f"ifaudit: warning: the harness's headline is not what its own samples give: {figures}; see {out}"
