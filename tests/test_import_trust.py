"""Trust nothing a harness's log says: what grading would refuse is refused at import, naming the
log (not a file derived from it); a mistyped field is one line, not a traceback; a headline its
own samples do not support is flagged; free text from a config lands in the report's tables
without breaking them.

The logs are the committed real ones (tests/data/harness_logs, see tests/test_importers.py), each
altered in the one field a test is about."""

from __future__ import annotations

import copy
import json
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import (
    IFEVAL_PROMPTS,
    REFERENCE_GRADES,
    grade_args,
    passed_canary_environment,
    read_jsonl,
    run_cli,
    write_jsonl,
)

LOGS = Path(__file__).parent / "data" / "harness_logs"
LM_EVAL_SAMPLES = next((LOGS / "lm_eval").glob("samples_*.jsonl"))
LM_EVAL_RESULTS = next((LOGS / "lm_eval").glob("results_*.json"))
INSPECT_JSON = next((LOGS / "inspect").glob("*.json"))
BATCH = {"custom_id": "ifeval-{key}-{sample}"}


def _import_args(fmt: str, log: Path, tmp: Path, options: dict | None) -> list[str]:
    args = ["import-log", "--format", fmt, "--log", str(log), "--prompts", str(IFEVAL_PROMPTS)]
    args += ["--out", str(tmp / "r.jsonl"), "--harness", str(tmp / "h.json")]
    return args + (["--options-json", json.dumps(options)] if options is not None else [])


def _refused(resources: Path, tmp: Path, fmt: str, log: Path, options: dict | None = None) -> str:
    """`import-log` of `log` stops with exit 2 and one `ifaudit: error:` line, writing nothing."""
    done = run_cli(_import_args(fmt, log, tmp, options), resources, check=False)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("ifaudit: error: "), done.stderr
    assert not (tmp / "r.jsonl").exists() and not (tmp / "h.json").exists()
    return lines[0]


def _lm_eval_records(count: int = 4) -> list[dict]:
    return read_jsonl(LM_EVAL_SAMPLES)[:count]


def _inspect_log(tmp: Path, name: str, change) -> Path:  # noqa: ANN001 - a function altering the log
    log = json.loads(INSPECT_JSON.read_text())
    change(log)
    path = tmp / name
    path.write_text(json.dumps(log))
    return path


def _score(log: dict, index: int = 0) -> dict:
    return log["samples"][index]["scores"]["instruction_following"]["value"]


def test_imports_refuse_a_doc_key_given_as_an_integer_and_as_a_string_naming_the_logs_line(
    resources: Path, tmp_path: Path
) -> None:
    records = _lm_eval_records()
    again = copy.deepcopy(records[0])
    again["doc"]["key"] = str(again["doc"]["key"])  # "1000" beside 1000: the same prompt twice
    log = write_jsonl(tmp_path / "samples.jsonl", [*records, again])
    line = _refused(resources, tmp_path, "lm-eval", log)
    assert f"{log}:5: field 'doc.key'" in line
    assert "prompt 1000 sample 0 appears twice" in line and f"{log}:1" in line


def test_imports_refuse_an_unknown_key_matched_by_prompt_text_beside_the_real_one(
    resources: Path, tmp_path: Path
) -> None:
    records = _lm_eval_records()
    renamed = copy.deepcopy(records[0])
    renamed["doc"]["key"] = 999999  # no such prompt: matched by its text, to prompt 1000 again
    log = write_jsonl(tmp_path / "samples.jsonl", [*records, renamed])
    line = _refused(resources, tmp_path, "lm-eval", log)
    assert f"{log}:5: field 'doc.key'" in line and "prompt 1000 sample 0 appears twice: as 999999" in line


def test_imports_refuse_inspect_epoch_zero_naming_the_sample_and_field(resources: Path, tmp_path: Path) -> None:
    log = _inspect_log(tmp_path, "epoch0.json", lambda log: log["samples"][2].update(epoch=0))
    line = _refused(resources, tmp_path, "inspect", log)
    assert f"{log}:samples[2]: field 'epoch'" in line and "at least 1, got 0" in line


def test_imports_report_a_malformed_doc_kwargs_against_the_log_not_the_prompt_file(
    resources: Path, tmp_path: Path
) -> None:
    records = _lm_eval_records()
    records[3]["doc"]["kwargs"][0] = 5
    line = _refused(resources, tmp_path, "lm-eval", write_jsonl(tmp_path / "samples.jsonl", records))
    assert f"{tmp_path / 'samples.jsonl'}:4: field 'doc.kwargs[0]': expected an object" in line
    assert str(IFEVAL_PROMPTS) not in line
    log = _inspect_log(tmp_path, "kwargs.json", lambda log: log["samples"][1]["metadata"].update(kwargs={}))
    line = _refused(resources, tmp_path, "inspect", log)
    assert f"{log}:samples[1]: field 'metadata.kwargs.0': missing" in line


def _batch_line(key: int, choices: list) -> dict:
    body = {"object": "chat.completion", "model": "gpt-4-0613", "choices": choices}
    return {"id": "batch_req_1", "custom_id": f"ifeval-{key}-0", "response": {"status_code": 200, "body": body}}


MISTYPED = {
    "inspect epoch 'x'": (
        "inspect",
        lambda log: log["samples"][0].update(epoch="x"),
        "field 'epoch': expected an integer, got a string 'x'",
    ),
    "inspect num_instructions 'many'": (
        "inspect",
        lambda log: _score(log).update(num_instructions="many"),
        "field 'scores.instruction_following.value.num_instructions': expected an integer, got a string 'many'",
    ),
    "inspect score not an object": (
        "inspect",
        lambda log: log["samples"][0]["scores"].update(instruction_following="1/3"),
        "field 'scores.instruction_following': expected an object, got a string '1/3'",
    ),
}


@pytest.mark.parametrize("case", sorted(MISTYPED))
def test_clarity_a_mistyped_inspect_field_is_one_line_naming_the_sample_and_field(
    resources: Path, tmp_path: Path, case: str
) -> None:
    fmt, change, said = MISTYPED[case]
    log = _inspect_log(tmp_path, "log.json", change)
    line = _refused(resources, tmp_path, fmt, log)
    assert f"{log}:samples[0]: {said}" in line


def test_clarity_a_batch_choice_that_is_a_string_or_mixed_indexes_are_one_line_each(
    resources: Path, tmp_path: Path
) -> None:
    string = write_jsonl(tmp_path / "string.jsonl", [_batch_line(1000, ["Hello"])])
    line = _refused(resources, tmp_path, "openai-batch", string, BATCH)
    assert f"{string}:1: field 'response.body.choices[0]': expected an object, got a string 'Hello'" in line
    choices = [{"index": 0, "message": {"content": "a"}}, {"index": "1", "message": {"content": "b"}}]
    mixed = write_jsonl(tmp_path / "mixed.jsonl", [_batch_line(1000, choices)])
    line = _refused(resources, tmp_path, "openai-batch", mixed, BATCH)
    assert f"{mixed}:1: field 'response.body.choices[1].index': expected an integer, got a string '1'" in line


def _stored_zip_with_method(path: Path, members: dict[str, bytes], method: int) -> Path:
    """A zip whose members claim compression `method` in both their local and central headers."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    raw = bytearray(path.read_bytes())
    for signature, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
        at = raw.find(signature)
        while at >= 0:
            raw[at + offset : at + offset + 2] = struct.pack("<H", method)
            at = raw.find(signature, at + 4)
    path.write_bytes(bytes(raw))
    return path


def test_clarity_an_eval_archive_with_an_unsupported_compression_method_is_one_line(
    resources: Path, tmp_path: Path
) -> None:
    log = json.loads(INSPECT_JSON.read_text())
    members = {"header.json": json.dumps({k: v for k, v in log.items() if k != "samples"}).encode()}
    members["samples/1000_epoch_1.json"] = json.dumps(log["samples"][0]).encode()
    archive = _stored_zip_with_method(tmp_path / "ppmd.eval", members, 98)  # PPMd: zipfile cannot read it
    line = _refused(resources, tmp_path, "inspect", archive)
    assert f"ifaudit: error: {archive}: " in line and "compressed with a method this reader does not support" in line


OPTIONS = {
    "{sample} twice in custom_id": (
        "openai-batch",
        {"custom_id": "ifeval-{key}-{sample}-{sample}"},
        "field 'import.custom_id': custom_id pattern 'ifeval-{key}-{sample}-{sample}' must hold {key} once and "
        "{sample} at most once",
    ),
    "fields as a string": (
        "jsonl",
        {"fields": "meta.prompt_id"},
        "field 'import.fields': expected an object naming key, response, sample, model, finish_reason, got a string",
    ),
    "a field path that is not a string": (
        "jsonl",
        {"fields": {"key": 5}},
        "field 'import.fields.key': expected a non-empty dotted path, got an integer 5",
    ),
    "results not a path": ("lm-eval", {"results": 5}, "field 'import.results': expected a non-empty string"),
    "a setting the format does not read": (
        "lm-eval",
        {"result": str(LM_EVAL_RESULTS)},
        "field 'import.result': is not a setting of the lm-eval format (hint: it reads results)",
    ),
}


@pytest.mark.parametrize("case", sorted(OPTIONS))
def test_clarity_import_options_of_the_wrong_shape_are_one_line_naming_the_setting(
    resources: Path, tmp_path: Path, case: str
) -> None:
    fmt, options, said = OPTIONS[case]
    log = write_jsonl(tmp_path / "log.jsonl", [{"key": 1000, "response": "x"}]) if fmt != "lm-eval" else LM_EVAL_SAMPLES
    assert said in _refused(resources, tmp_path, fmt, log, options)


def test_clarity_a_results_file_without_results_is_named_not_the_samples_file(resources: Path, tmp_path: Path) -> None:
    results = json.loads(LM_EVAL_RESULTS.read_text())
    del results["results"]
    edited = tmp_path / "results.json"
    edited.write_text(json.dumps(results))
    line = _refused(resources, tmp_path, "lm-eval", LM_EVAL_SAMPLES, {"results": str(edited)})
    assert line == f"ifaudit: error: {edited}: field 'results': missing"


# A harness's headline against its own samples: the committed lm-eval run, graded once; its results
# file as written, and with the prompt-level strict headline edited to 0.95.


def _audit_claims_args(tmp: Path, harness: Path, grades: Path, out: Path) -> list[str]:
    args = ["audit-claims", "--prompts", str(IFEVAL_PROMPTS), "--responses", str(tmp / "responses.jsonl")]
    args += ["--grades", str(grades), "--harness", str(harness), "--resamples", "200"]
    return args + ["--out", str(out), "--table", str(out.with_suffix(".csv"))]


@dataclass(frozen=True)
class HeadlineAudit:
    claims: dict
    stderr: str  # audit-claims' own
    out: Path  # the claims file


@pytest.fixture(scope="module")
def headline_audits(resources: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, HeadlineAudit]:
    """audit-claims of the committed lm-eval log, with its results file as written and inflated."""
    tmp = tmp_path_factory.mktemp("headline")
    inflated = json.loads(LM_EVAL_RESULTS.read_text())
    task = next(iter(inflated["results"]))
    inflated["results"][task]["prompt_level_strict_acc,none"] = 0.95
    (tmp / "inflated.json").write_text(json.dumps(inflated))
    audits = {}
    for name, results in (("as_written", LM_EVAL_RESULTS), ("inflated", tmp / "inflated.json")):
        args = ["import-log", "--format", "lm-eval", "--log", str(LM_EVAL_SAMPLES), "--prompts", str(IFEVAL_PROMPTS)]
        args += ["--options-json", json.dumps({"results": str(results)}), "--out", str(tmp / "responses.jsonl")]
        run_cli([*args, "--harness", str(tmp / f"{name}.json")], resources)
        if name == "as_written":  # the responses are the same whatever the results file says
            responses, grades = tmp / "responses.jsonl", tmp / "grades.jsonl"
            run_cli(grade_args(IFEVAL_PROMPTS, responses, grades, "--jobs", "2", grader="upstream"), resources)
        out = tmp / f"claims_{name}.json"
        done = run_cli(_audit_claims_args(tmp, tmp / f"{name}.json", tmp / "grades.jsonl", out), resources)
        audits[name] = HeadlineAudit(json.loads(out.read_text()), done.stderr, out)
    return audits


def test_claims_flag_an_inflated_headline_with_reported_and_recomputed_and_warn_once(
    headline_audits: dict[str, HeadlineAudit],
) -> None:
    audit = headline_audits["inflated"]
    mismatch = audit.claims["headline_mismatches"]
    assert list(mismatch) == ["prompt_level_strict_acc"]
    assert mismatch["prompt_level_strict_acc"]["reported"] == 0.95
    assert mismatch["prompt_level_strict_acc"]["recomputed_from_harness"] == pytest.approx(417 / 541, abs=1e-12)
    strict = audit.claims["metrics"]["prompt_level_strict_acc"]
    assert strict["audited_minus_claimed"]["value"] == 0.0  # against the recomputed claim: no gap
    assert strict["audited_minus_reported"] == pytest.approx(417 / 541 - 0.95, abs=1e-12)  # the headline's gap
    warnings = [line for line in audit.stderr.splitlines() if line.startswith("ifaudit: warning: ")]
    assert warnings == [
        "ifaudit: warning: the harness's headline is not what its own samples give: prompt-level strict "
        f"95.00 reported, 77.08 from its own verdicts; see {audit.out}"
    ]


def test_claims_flag_nothing_and_warn_nothing_when_the_headline_is_what_the_samples_give(
    headline_audits: dict[str, HeadlineAudit],
) -> None:
    audit = headline_audits["as_written"]
    assert audit.claims["headline_mismatches"] == {}
    assert "ifaudit: warning:" not in audit.stderr
    loose = audit.claims["metrics"]["prompt_level_loose_acc"]
    assert loose["audited_minus_reported"] == pytest.approx(431 / 541 - 430 / 541, abs=1e-12)


def test_claims_report_sets_an_unsupported_headline_in_bold_with_audited_minus_reported(
    headline_audits: dict[str, HeadlineAudit],
) -> None:
    from ifaudit.steps.auditing.claims_report import claims_section

    audit = headline_audits["inflated"]
    plan = {"runs": {"inflated_run": {"task": "ifeval"}}, "claims": {"inflated_run": str(audit.out)}}
    section = "\n".join(claims_section(plan, 95))
    row = next(line for line in section.splitlines() if line.startswith("| prompt-level strict |"))
    assert row.startswith("| prompt-level strict | **95.00 ⚠** | 77.08 (417/541) | 77.08 (417/541) | +0.00 [")
    assert row.endswith(" | **-17.92** |")
    assert (
        "**⚠ HEADLINE NOT SUPPORTED BY ITS OWN SAMPLES: prompt-level strict: 95.00 reported, 77.08 from its own "
        "verdicts." in section
    )
    loose = next(line for line in section.splitlines() if line.startswith("| prompt-level loose |"))
    assert loose.startswith("| prompt-level loose | 79.48 |") and loose.endswith(" | +0.18 |")


# A run label from a config, in the report's tables.


def _small_run(tmp: Path, label: str) -> dict:
    """The report plan of one run of 20 IFEval prompts graded as Google's reference grades say."""
    from ifaudit.io.canonical import write_json
    from ifaudit.io.prompts import read_prompts
    from ifaudit.steps.grading.analysis import Settings, run_statistics
    from ifaudit.steps.grading.summary import summarize
    from ifaudit.tasks.registry import get_task

    task = get_task("ifeval")
    prompts = read_prompts(IFEVAL_PROMPTS)[:20]
    keys = {prompt.key for prompt in prompts}
    grader = {
        "kind": "upstream",
        "name": "google-research/instruction_following_eval",
        "version": "test",
        "upstream": True,
    }
    grades = [{**g, "sample": 0, "grader": grader} for g in read_jsonl(REFERENCE_GRADES) if g["key"] in keys]
    grades_path = write_jsonl(tmp / "grades.jsonl", grades)
    canary = tmp / "canary.json"
    environment = passed_canary_environment(grader)
    canary.write_text(json.dumps({"passed": True, "disagreements": [], "environment": environment}))
    write_json(tmp / "summary.json", summarize(task, "r1", label, grades_path, prompts, canary))
    write_json(tmp / "stats.json", run_statistics(task, prompts, grades, Settings(resamples=100, seed=0)))
    run = {"summary": str(tmp / "summary.json"), "stats": str(tmp / "stats.json"), "prompts": "p", "task": "ifeval"}
    return {"runs": {"r1": run}, "comparisons": [], "audits": {}, "canaries": {}}


def _cells(row: str) -> int:
    """The cells Markdown sees in a table row: `|` not preceded by a backslash separates them."""
    return sum(1 for i, char in enumerate(row) if char == "|" and (i == 0 or row[i - 1] != "\\")) - 1


def test_clarity_report_escapes_a_label_with_a_pipe_and_a_newline_in_the_runs_table(tmp_path: Path) -> None:
    from ifaudit.steps.reporting.report import write_report

    plan = _small_run(tmp_path, "a | b\nc")
    write_report(plan, tmp_path / "report")
    report = (tmp_path / "report" / "report.md").read_text()
    board, table = (
        part.split("Task `ifeval`, prompt set p (20 prompts):\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
        for part in (report.split("## Leaderboard", 1)[1], report.split("## Runs", 1)[1])
    )
    # The label is free text: one line, its `|` a character reference (ifaudit.io.formats.escape.markdown).
    assert board[2].startswith("| 1 | a &#124; b c (r1) | p (20 prompts) | yes | ")
    assert table[2].startswith(
        "| a &#124; b c (r1) | p (20 prompts) | yes | google-research/instruction_following_eval@test |"
    )
    for rows in (board, table):
        assert len(rows) == 3 and {_cells(row) for row in rows} == {_cells(rows[0])}
