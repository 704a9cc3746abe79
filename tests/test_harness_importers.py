"""lighteval, evalscope and OpenCompass logs in, claims audited: real logs each harness wrote
(tools/harness_logs/make_logs.py, against the loopback replay of Google's GPT-4 answers and of
IFBench's sample outputs), imported, graded by the pinned grader and set beside the harness's
verdicts; and the Open LLM Leaderboard's composite IFEval figure checked against its details."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from conftest import IFEVAL_PROMPTS, grade_args, read_jsonl, run_cli, write_jsonl

LOGS = Path(__file__).parent / "data" / "harness_logs"
SHARED_IFBENCH = IFEVAL_PROMPTS.parent.parent / "ifbench" / "IFBench_test_300.jsonl"
EVALSCOPE = LOGS / "evalscope"
EVALSCOPE_REVIEWS = EVALSCOPE / "reviews" / "gpt-4-0613-replay"
EVALSCOPE_REPORTS = EVALSCOPE / "reports" / "gpt-4-0613-replay"
EVALSCOPE_CONFIG = EVALSCOPE / "configs" / "task_config.yaml"
# The pinned grader on Google's GPT-4 answers: prompt strict, inst strict, prompt loose, inst loose.
EXPECTED = {
    "prompt_level_strict_acc": (417, 541),
    "inst_level_strict_acc": (698, 834),
    "prompt_level_loose_acc": (431, 541),
    "inst_level_loose_acc": (714, 834),
}


def audit(
    tmp: Path, resources: Path, fmt: str, log: Path, options: dict, task: str = "ifeval", prompts: Path = IFEVAL_PROMPTS
) -> dict:
    """import-log, grade with the pinned grader, audit-claims: the DAG's three steps."""
    responses, harness, grades = tmp / "responses.jsonl", tmp / "harness.json", tmp / "grades.jsonl"
    common = ["--task", task, "--prompts", str(prompts)]
    run_cli(
        ["import-log", "--format", fmt, "--log", str(log), *common, "--options-json", json.dumps(options)]
        + ["--out", str(responses), "--harness", str(harness)],
        resources,
    )
    offline = ["--offline"] if task != "ifeval" else []
    run_cli(
        grade_args(prompts, responses, grades, "--task", task, "--jobs", "2", *offline, grader="upstream"), resources
    )
    run_cli(
        ["audit-claims", *common, "--responses", str(responses), "--grades", str(grades), "--harness", str(harness)]
        + ["--resamples", "200", "--grader", "upstream", *offline]
        + ["--out", str(tmp / "claims.json"), "--table", str(tmp / "disagreements.csv")],
        resources,
    )
    return json.loads((tmp / "claims.json").read_text())


def rows(tmp: Path) -> list[dict]:
    with (tmp / "disagreements.csv").open(newline="") as table:
        return list(csv.DictReader(table))


def audited_as_pinned(claims: dict) -> None:
    for name, (correct, total) in EXPECTED.items():
        audited = claims["metrics"][name]["audited"]
        assert (audited["correct"], audited["total"]) == (correct, total), name


def bad(resources: Path, tmp_path: Path, fmt: str, log: Path, options: dict, prompts: Path = IFEVAL_PROMPTS) -> str:
    """A refused import: exit 2, one line, nothing written."""
    out, harness = tmp_path / "r.jsonl", tmp_path / "h.json"
    done = run_cli(
        ["import-log", "--format", fmt, "--log", str(log), "--prompts", str(prompts), "--out", str(out)]
        + ["--harness", str(harness), "--options-json", json.dumps(options)],
        resources,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ifaudit: error: "), done.stderr
    assert not out.exists() and not harness.exists()
    return lines[0]


# evalscope 1.14.1


def evalscope_options(benchmark: str) -> dict:
    return {"results": str(EVALSCOPE_REPORTS / f"{benchmark}.json"), "config": str(EVALSCOPE_CONFIG)}


def test_evalscope_ifeval_log_audits_to_the_pinned_grader_and_each_count_is_explained(
    resources: Path, tmp_path: Path
) -> None:
    claims = audit(
        tmp_path, resources, "evalscope", EVALSCOPE_REVIEWS / "ifeval_default.jsonl", evalscope_options("ifeval")
    )
    audited_as_pinned(claims)
    # What evalscope printed (four decimals) is what its own per-sample shares give: 416/541,
    # 697/834, 430/541, 713/834, one verdict short in each mode, at 1122 and 1129.
    recomputed = {name: m["recomputed_from_harness"]["correct"] for name, m in claims["metrics"].items()}
    assert recomputed == {
        "prompt_level_strict_acc": 416,
        "inst_level_strict_acc": 697,
        "prompt_level_loose_acc": 430,
        "inst_level_loose_acc": 713,
    }
    assert claims["metrics"]["prompt_level_strict_acc"]["reported"] == 0.7689
    assert not claims["headline_mismatches"] and claims["unexplained"] == 0
    found = {(r["key"], r["mode"], r["instruction_id"], r["cause"]) for r in rows(tmp_path)}
    assert found == {
        ("1122", "loose", "keywords:letter_frequency", "substituted_setting"),
        ("1129", "strict", "keywords:letter_frequency", "substituted_setting"),
    }
    copy = claims["grader_copy"]
    assert copy["package"] == "evalscope==1.14.1" and copy["read"] and "42" in copy["random"]
    harness = json.loads((tmp_path / "harness.json").read_text())
    assert harness["tool"] == {"name": "evalscope", "version": "1.14.1"}
    assert harness["generation"]["temperature"] == 0.0 and harness["provenance"]["seed"] == 42
    assert harness["samples"] == 541 and not harness["prompt_differences"]


def test_evalscope_ifbench_log_differs_through_its_own_checker_copy_and_an_older_grader(
    resources: Path, tmp_path: Path
) -> None:
    claims = audit(
        tmp_path,
        resources,
        "evalscope",
        EVALSCOPE_REVIEWS / "ifbench_default.jsonl",
        evalscope_options("ifbench"),
        task="ifbench_db69a6f",
        prompts=SHARED_IFBENCH,
    )
    assert claims["unexplained"] == 0
    found = {(r["key"], r["mode"], r["instruction_id"], r["cause"]) for r in rows(tmp_path)}
    assert found == {
        (key, mode, instruction, cause)
        for mode in ("strict", "loose")
        for key, instruction, cause in (
            ("148", "ratio:overlap", "harness_checker"),
            ("214", "ratio:overlap", "harness_checker"),
            ("163", "ratio:sentence_type", "grader_version"),
        )
    }
    # Its prompt-level figures are k/300: the data Hugging Face serves.
    assert claims["claimed_over"]["prompt_level_strict_acc"]["over"] == 300
    assert claims["metrics"]["prompt_level_strict_acc"]["recomputed_from_harness"]["correct"] == 78


def test_bad_evalscope_logs_stop_with_one_line(resources: Path, tmp_path: Path) -> None:
    reviews = read_jsonl(EVALSCOPE_REVIEWS / "ifeval_default.jsonl")[:3]
    no_record = json.loads(json.dumps(reviews))
    del no_record[1]["sample_score"]["sample_metadata"]
    line = bad(resources, tmp_path, "evalscope", write_jsonl(tmp_path / "no_record.jsonl", no_record), {})
    assert "no_record.jsonl:2" in line and "sample_score.sample_metadata" in line
    odd = json.loads(json.dumps(reviews))
    odd[0]["sample_score"]["score"]["value"]["inst_level_strict"] = 0.4  # of 3 instructions
    line = bad(resources, tmp_path, "evalscope", write_jsonl(tmp_path / "odd.jsonl", odd), {})
    assert "odd.jsonl:1" in line and "sample_score.score.value.inst_level_strict" in line and "0.4" in line
    failed = json.loads(json.dumps(reviews))
    failed[2]["sample_score"]["score"]["value"] = {}  # what evalscope writes when its checker raised
    line = bad(resources, tmp_path, "evalscope", write_jsonl(tmp_path / "failed.jsonl", failed), {})
    assert "failed.jsonl:3" in line and "failed to grade" in line
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"model_name": "m", "metrics": [{"identity": {"name": "acc"}, "score": 1}]}))
    line = bad(resources, tmp_path, "evalscope", EVALSCOPE_REVIEWS / "ifeval_default.jsonl", {"results": str(report)})
    assert "report.json" in line and "metrics" in line


# lighteval 0.13.0

LIGHTEVAL = LOGS / "lighteval"
LIGHTEVAL_DETAILS = next((LIGHTEVAL / "details").rglob("details_*.parquet"))
LIGHTEVAL_RESULTS = next((LIGHTEVAL / "results").rglob("results_*.json"))


def test_lighteval_log_audits_to_the_pinned_grader_matched_by_prompt_text(resources: Path, tmp_path: Path) -> None:
    options = {"results": str(LIGHTEVAL_RESULTS), "version": "0.13.0"}
    claims = audit(tmp_path, resources, "lighteval", LIGHTEVAL_DETAILS, options)
    audited_as_pinned(claims)
    recomputed = {name: m["recomputed_from_harness"]["correct"] for name, m in claims["metrics"].items()}
    assert recomputed == {
        "prompt_level_strict_acc": 416,
        "inst_level_strict_acc": 697,
        "prompt_level_loose_acc": 430,
        "inst_level_loose_acc": 713,
    }
    assert claims["metrics"]["inst_level_strict_acc"]["reported"] == pytest.approx(697 / 834, abs=1e-15)
    assert not claims["headline_mismatches"] and claims["unexplained"] == 0
    # lighteval seeds `random` once (1234): its draw fails 1122's letter in both modes.
    found = {(r["key"], r["mode"], r["instruction_id"], r["cause"]) for r in rows(tmp_path)}
    assert found == {("1122", mode, "keywords:letter_frequency", "substituted_setting") for mode in ("strict", "loose")}
    assert claims["grader_copy"]["package"] == "lighteval==0.13.0" and "1234" in claims["grader_copy"]["random"]
    harness = json.loads((tmp_path / "harness.json").read_text())
    # no key in the log: every row matched by its prompt's text, 541 of them
    assert harness["samples"] == 541 and not harness["prompt_differences"]
    assert harness["tool"]["version"] == "0.13.0" and "the log names none" in harness["tool"]["version_from"]
    # four prompts (those with surrounding whitespace) were sent stripped
    assert len(harness["provenance"]["prompt_sent_differs_at_rows"]) == 4
    assert harness["generation"] == {"temperature": 0}


def test_a_lighteval_log_names_no_version_and_its_copy_is_then_unread(resources: Path, tmp_path: Path) -> None:
    claims = audit(tmp_path, resources, "lighteval", LIGHTEVAL_DETAILS, {"results": str(LIGHTEVAL_RESULTS)})
    assert claims["grader_copy"] == {"package": "lighteval", "read": False}
    assert claims["harness"]["tool"] == {"name": "lighteval", "version": None}


def test_bad_lighteval_logs_stop_with_one_line(resources: Path, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ifaudit.inputs.importers.leaderboard import read_parquet

    rows = read_parquet(LIGHTEVAL_DETAILS)[:4]
    del rows[2]["metric"]["inst_level_loose_acc"]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "details.parquet")
    line = bad(resources, tmp_path, "lighteval", tmp_path / "details.parquet", {})
    assert "details.parquet:3" in line and "metric.inst_level_loose_acc" in line
    rows = read_parquet(LIGHTEVAL_DETAILS)[:4]
    rows[0]["doc"]["query"] = "A prompt no pinned set holds."
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "unknown.parquet")
    line = bad(resources, tmp_path, "lighteval", tmp_path / "unknown.parquet", {})
    assert "unknown.parquet:1" in line and "doc.query" in line and "not in the pinned prompt set" in line
    assert "import.revision" in bad(resources, tmp_path, "lighteval", LIGHTEVAL_DETAILS, {"revision": "x"})
