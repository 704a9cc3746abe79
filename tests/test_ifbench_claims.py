"""A harness's IFBench log audited: each verdict that differs from the pinned grader's comes with its
cause (the harness's data version, the other pinned grader's verdict), and the claim's
denominator names the data it used (k/294 or k/300)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import grade_args, read_jsonl, run_cli, write_jsonl
from test_ifbench_reference import PROMPTS, SAMPLE_OUTPUTS

MODES = ("strict", "loose")


def harness_responses(out: Path) -> Path:
    """The sample outputs keyed to the 300-row data, as a harness on it would have answered:
    key 268 (whose prompt the 300 rows replace) with the 294-row sample output, the six new
    prompts with the empty response."""
    by_text = {row["prompt"].strip(): row["response"] for row in read_jsonl(SAMPLE_OUTPUTS)}
    old = {row["key"]: row["prompt"].strip() for row in read_jsonl(PROMPTS["294"])}
    rows = [
        {"key": p["key"], "response": by_text.get(p["prompt"].strip(), by_text.get(old.get(p["key"], ""), ""))}
        for p in read_jsonl(PROMPTS["300"])
    ]
    return write_jsonl(out, rows)


@pytest.fixture(scope="module")
def harness_log(resources: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    """An lm-eval-shaped log of a harness that graded the 300-row data with the newest grader
    (db69a6f), its verdicts computed here; its samples are the 294 prompts the pinned set has."""
    tmp = tmp_path_factory.mktemp("ifbench_claims")
    responses = harness_responses(tmp / "harness_responses.jsonl")
    graded = tmp / "harness_grades.jsonl"
    run_cli(
        grade_args(PROMPTS["300"], responses, graded, "--task", "ifbench_db69a6f", "--offline", grader="upstream"),
        resources,
    )
    grades = {g["key"]: g for g in read_jsonl(graded)}
    texts = {r["key"]: r["response"] for r in read_jsonl(responses)}
    pinned = {p["key"] for p in read_jsonl(PROMPTS["294"])}
    samples = []
    for doc_id, doc in enumerate(read_jsonl(PROMPTS["300"])):
        if doc["key"] not in pinned:
            continue
        grade, text = grades[doc["key"]], texts[doc["key"]]
        sample = {"doc_id": doc_id, "doc": doc, "resps": [[text]], "filtered_resps": [text]}
        for mode in MODES:
            sample[f"prompt_level_{mode}_acc"] = grade[mode]["follow_all_instructions"]
            sample[f"inst_level_{mode}_acc"] = grade[mode]["follow_instruction_list"]
        samples.append(sample)
    log = write_jsonl(tmp / "samples_ifbench_2026-12-02T00-00-00.jsonl", samples)
    every = list(grades.values())
    reported = {
        f"{level}_level_{mode}_acc,none": (
            sum(g[mode]["follow_all_instructions"] for g in every) / len(every)
            if level == "prompt"
            else sum(map(sum, (g[mode]["follow_instruction_list"] for g in every)))
            / sum(len(g[mode]["follow_instruction_list"]) for g in every)
        )
        for mode in MODES
        for level in ("prompt", "inst")
    }
    results = tmp / "results_2026-12-02T00-00-00.json"
    results.write_text(
        json.dumps(
            {
                "results": {"ifbench": {"alias": "ifbench", **reported}},
                "lm_eval_version": "0.4.13",
                "config": {"model": "hf", "model_args": "pretrained=sample-outputs"},
                "model_name": "sample-outputs",
                "date": 0,
            }
        )
    )
    return log, results, reported


def test_harness_verdicts_differing_from_the_pin_are_explained_by_data_and_grader_version(
    harness_log: tuple[Path, Path, dict], resources: Path, tmp_path: Path
) -> None:
    log, results, reported = harness_log
    responses, harness, grades = tmp_path / "responses.jsonl", tmp_path / "harness.json", tmp_path / "grades.jsonl"
    options = json.dumps({"results": str(results)})
    run_cli(
        ["import-log", "--format", "lm-eval", "--log", str(log), "--options-json", options, "--task", "ifbench"]
        + ["--prompts", str(PROMPTS["294"]), "--out", str(responses), "--harness", str(harness)],
        resources,
    )
    run_cli(
        grade_args(PROMPTS["294"], responses, grades, "--task", "ifbench", "--offline", grader="upstream"), resources
    )
    claims_out = tmp_path / "claims.json"
    done = run_cli(
        ["audit-claims", "--task", "ifbench", "--prompts", str(PROMPTS["294"]), "--responses", str(responses)]
        + ["--grades", str(grades), "--harness", str(harness), "--resamples", "200", "--offline"]
        + ["--grader", "upstream", "--out", str(claims_out), "--table", str(tmp_path / "disagreements.csv")],
        resources,
    )
    claims = json.loads(claims_out.read_text())
    rows = claims["disagreements"]
    assert rows and claims["unexplained"] == 0
    by_key = {(row["key"], row["mode"]): row for row in rows}
    assert by_key["163", "strict"]["cause"] == "grader_version"
    # What is known: the pin reproduces the verdict; not that the harness ran that commit (lm-eval's
    # copy of the grader is of another commit).
    detail = by_key["163", "strict"]["detail"]
    assert detail.startswith("allenai/IFBench@db69a6f reproduces the harness's verdict") and "is that of" not in detail
    assert {row["cause"] for row in rows if row["key"] != "163"} <= {"prompt_differs"}
    # The claim's denominator: its prompt-level figures are k/300, the April 2026 data.
    over = claims["claimed_over"]["prompt_level_strict_acc"]
    assert over["over"] == 300 and over["correct"] == round(reported["prompt_level_strict_acc,none"] * 300)
    assert "300 prompts" in over["data"]
    assert f"claimed prompt_level_strict_acc: {over['correct']}/300, over IFBench's 300 prompts" in done.stderr
