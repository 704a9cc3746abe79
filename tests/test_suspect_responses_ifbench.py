"""An lm-eval-shaped IFBench log whose model answered seven prompts with a replay server's miss
(`NO MATCH`), imported, graded by the pinned grader and its claims audited by the CLI as
docs/ifbench.md says: the seven are graded as they are (two pass `words:vowel`, the issue's case),
and both the run's findings and the claims audit name them with what they pass."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import grade_args, read_jsonl, run_cli, write_jsonl
from test_ifbench_reference import PROMPTS, keyed_sample_outputs

MISS = "NO MATCH"
MISSED = ("263", "264", "0", "1", "2", "3", "4")  # two words:vowel prompts, five others
MODES = ("strict", "loose")


def test_an_ifbench_log_answering_seven_prompts_no_match_names_them_with_what_they_pass(
    resources: Path, tmp_path: Path
) -> None:
    from ifaudit.io.prompts import read_prompts
    from ifaudit.steps.grading.summary import suspect_findings

    rows = read_jsonl(keyed_sample_outputs("294", tmp_path / "sample_outputs.jsonl"))
    for row in rows:
        if row["key"] in MISSED:
            row["response"] = MISS
    responses = write_jsonl(tmp_path / "answers.jsonl", rows)
    grades_path = tmp_path / "grades.jsonl"
    run_cli(
        grade_args(PROMPTS["294"], responses, grades_path, "--task", "ifbench", "--offline", grader="upstream"),
        resources,
    )
    grades = {grade["key"]: grade for grade in read_jsonl(grades_path)}
    docs = {doc["key"]: doc for doc in read_jsonl(PROMPTS["294"])}
    samples = [  # lm-eval's record: its verdicts are the grader's on what it logged
        {"doc_id": index, "doc": docs[row["key"]], "resps": [[row["response"]]], "filtered_resps": [row["response"]]}
        | {f"prompt_level_{m}_acc": grades[row["key"]][m]["follow_all_instructions"] for m in MODES}
        | {f"inst_level_{m}_acc": grades[row["key"]][m]["follow_instruction_list"] for m in MODES}
        for index, row in enumerate(rows)
    ]
    log = write_jsonl(tmp_path / "samples_ifbench_2026-12-07T00-00-00.jsonl", samples)
    imported, harness = tmp_path / "imported.jsonl", tmp_path / "harness.json"
    run_cli(
        ["import-log", "--format", "lm-eval", "--log", str(log), "--task", "ifbench", "--prompts", str(PROMPTS["294"])]
        + ["--out", str(imported), "--harness", str(harness)],
        resources,
    )
    claims_out = tmp_path / "claims.json"
    audited = run_cli(
        ["audit-claims", "--task", "ifbench", "--prompts", str(PROMPTS["294"]), "--responses", str(imported)]
        + ["--grades", str(grades_path), "--harness", str(harness), "--resamples", "200", "--offline"]
        + ["--grader", "upstream", "--out", str(claims_out), "--table", str(tmp_path / "disagreements.csv")],
        resources,
    )

    missed = [grades[key] for key in MISSED]
    vowel = [grades[key]["strict"]["follow_all_instructions"] for key in ("263", "264")]
    assert vowel == [True, True]  # the miss passes words:vowel: graded as it is, not filtered
    strict = {
        "responses_passing": sum(g["strict"]["follow_all_instructions"] for g in missed),
        "instructions_followed": sum(sum(g["strict"]["follow_instruction_list"]) for g in missed),
        "instructions": sum(len(g["strict"]["follow_instruction_list"]) for g in missed),
    }
    found = suspect_findings(imported, read_prompts(PROMPTS["294"]), list(grades.values()))
    assert found is not None
    [named] = [item for item in found["repeated_texts"] if item["text"] == MISS]
    assert named["keys"] == list(MISSED[2:] + MISSED[:2]) and named["passes"]["strict"] == strict
    claims = json.loads(claims_out.read_text())["suspect_responses"]
    assert claims["responses"] == found["in_doubt"]["responses"] >= 7
    assert claims["claimed"] == claims["audited"] == found["in_doubt"]["passes"]  # the harness graded alike
    assert f"'{MISS}' (7 prompts)" in claims["sentence"]
    # audit-claims says so in one line, as import-log notes prompts that differ.
    [warning] = [line for line in audited.stderr.splitlines() if "may not be answers" in line]
    # The sample outputs' `yes` to keys 100 and 103 passes both prompts: answers, not named.
    assert warning.startswith("ifaudit: note: 7 responses may not be answers: ") and f"'{MISS}' (7 prompts)" in warning
