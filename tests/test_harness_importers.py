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

pytest_plugins = ["grader_fixtures"]

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
    return {"results": str(EVALSCOPE_REPORTS / f"{benchmark}.json"), "task_config": str(EVALSCOPE_CONFIG)}


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


# The Open LLM Leaderboard's composite: 100 × mean(prompt-level strict, instruction-level strict)


def test_the_leaderboard_composite_is_the_mean_of_the_two_strict_figures() -> None:
    """lm-eval #2200, FACTS §13: Llama-2-7b's published 25.19 = 100 × (0.1848 + 0.3189) / 2."""
    from ifaudit.steps.auditing.composites import COMPOSITES

    composite = COMPOSITES["leaderboard_ifeval"]
    assert round(composite.of({"prompt_level_strict_acc": 0.1848, "inst_level_strict_acc": 0.3189}), 2) == 25.19
    assert composite.of({"prompt_level_strict_acc": 0.1848}) is None
    assert "prompt-level strict" in composite.formula and "instruction-level strict" in composite.formula


@pytest.mark.parametrize("published, supported", [(80.39, True), (81.5, False)])
def test_a_published_leaderboard_figure_is_checked_against_its_details_and_the_pinned_grader(
    resources: Path, tmp_path: Path, published: float, supported: bool
) -> None:
    from test_importers import IFEVAL_CONFIG, details_folder

    from ifaudit.steps.auditing.claims_report import claims_section

    folder = details_folder(tmp_path / "details")
    options = {"config": IFEVAL_CONFIG, "split": "latest", "published": published}
    claims = audit(tmp_path, resources, "leaderboard", folder, options)
    found = claims["composites"]["leaderboard_ifeval"]
    # the details' own strict verdicts: 417/541 and 698/834, the pinned grader's too
    expected = 100 * (417 / 541 + 698 / 834) / 2
    assert found["recomputed_from_harness"] == pytest.approx(expected, abs=1e-12)
    assert found["audited"] == pytest.approx(expected, abs=1e-12)
    assert found["reported"] == published and found["reported_is_recomputed"] is supported
    assert found["formula"] == "100 × mean(prompt-level strict, instruction-level strict)"
    report = "\n".join(
        claims_section(
            {
                "runs": {"leaderboard_run": {"task": "ifeval"}},
                "claims": {"leaderboard_run": str(tmp_path / "claims.json")},
            },
            95,
        )
    )
    assert "100 × mean(prompt-level strict, instruction-level strict)" in report
    assert f"{published:g} published; 80.39 from the harness's verdicts" in report
    assert ("do not give it" in report) is not supported


# OpenCompass 0.5.4, run twice on the same answers

OPENCOMPASS = LOGS / "opencompass"


def opencompass_files(run: int, dataset: str) -> tuple[Path, Path]:
    predictions = next((OPENCOMPASS / f"run{run}").rglob(f"predictions/*/{dataset}.json"))
    return predictions, next((OPENCOMPASS / f"run{run}").rglob(f"results/*/{dataset}.json"))


def test_opencompass_prompt_level_verdicts_audit_to_the_pinned_grader(resources: Path, tmp_path: Path) -> None:
    predictions, results = opencompass_files(1, "IFEval")
    claims = audit(tmp_path, resources, "opencompass", predictions, {"results": str(results), "version": "0.5.4"})
    audited_as_pinned(claims)
    # Only prompt-level verdicts are in its log: the instruction-level figures are reported,
    # not recomputed; the prompt-level ones are what its details give, in percent on its page.
    assert claims["metrics"]["inst_level_strict_acc"]["recomputed_from_harness"] is None
    assert claims["metrics"]["inst_level_strict_acc"]["reported"] is not None
    for name in ("prompt_level_strict_acc", "prompt_level_loose_acc"):
        metric = claims["metrics"][name]
        assert metric["reported"] == pytest.approx(metric["recomputed_from_harness"]["value"], abs=1e-12)
    assert not claims["headline_mismatches"] and claims["unexplained"] == 0
    found = {(r["key"], r["mode"], r["instruction_id"], r["cause"]) for r in rows(tmp_path)}
    assert found == {("1122", "loose", "keywords:letter_frequency", "substituted_setting")}
    assert "never seeded" in claims["grader_copy"]["random"]
    from ifaudit.steps.auditing.claims_report import claims_section

    report = "\n".join(
        claims_section({"runs": {"oc": {"task": "ifeval"}}, "claims": {"oc": str(tmp_path / "claims.json")}}, 95)
    )
    assert "not which: instruction-level strict, instruction-level loose as reported only" in report


def test_two_identical_opencompass_runs_differ_only_where_the_grader_draws() -> None:
    """OpenCompass seeds no `random`: its two runs on the same answers reported 417/541 and
    415/541 prompt-level strict, differing at 1122 and 1129 (letter_frequency's drawn letter) and
    nowhere else."""
    from ifaudit.inputs.importers import opencompass

    logs = [
        opencompass.read(predictions, {"results": str(results)})
        for predictions, results in (opencompass_files(run, "IFEval") for run in (1, 2))
    ]
    assert [s.response for s in logs[0].samples] == [s.response for s in logs[1].samples]
    verdicts = [{s.key: s.verdicts for s in log.samples} for log in logs]
    assert {key for key in verdicts[0] if verdicts[0][key] != verdicts[1][key]} == {1122, 1129}
    strict = [round(log.reported["prompt_level_strict_acc"] * 541) for log in logs]
    assert strict == [417, 415]


def test_opencompass_ifbench_log_differs_through_its_copy_and_an_older_grader(resources: Path, tmp_path: Path) -> None:
    predictions, results = opencompass_files(1, "IFBench")
    options = {"results": str(results), "version": "0.5.4"}
    claims = audit(
        tmp_path, resources, "opencompass", predictions, options, task="ifbench_db69a6f", prompts=SHARED_IFBENCH
    )
    assert claims["unexplained"] == 0
    found = {(r["key"], r["mode"], r["instruction_id"], r["cause"]) for r in rows(tmp_path)}
    # format:emoji: its copy needs `emoji`, which opencompass does not install; 163: an older grader
    assert found == {
        (key, mode, instruction, cause)
        for mode in ("strict", "loose")
        for key, instruction, cause in (
            ("65", "format:emoji", "harness_checker"),
            ("66", "format:emoji", "harness_checker"),
            ("70", "format:emoji", "harness_checker"),
            ("163", "ratio:sentence_type", "grader_version"),
        )
    }
    # its `score`, the mean of the four in percent, beside the same formula on the pinned grades
    score = claims["composites"]["mean_of_four"]
    assert score["reported"] == pytest.approx(json.loads(results.read_text())["score"], abs=1e-12)
    assert score["recomputed_from_harness"] is None  # its instruction-level verdicts are not in its log
    audited = [claims["metrics"][name]["audited"]["value"] for name in EXPECTED]
    assert score["audited"] == pytest.approx(100 * sum(audited) / 4, abs=1e-12)


def test_bad_opencompass_logs_stop_with_one_line(resources: Path, tmp_path: Path) -> None:
    predictions, results = opencompass_files(1, "IFEval")
    kept = json.loads(predictions.read_text())
    first = dict(list(kept.items())[:3])
    del first["1"]["gold"]
    (tmp_path / "IFEval.json").write_text(json.dumps(first))
    line = bad(resources, tmp_path, "opencompass", tmp_path / "IFEval.json", {})
    assert "IFEval.json" in line and "1.gold" in line
    details = json.loads(results.read_text())
    details["details"][2]["is_strict_correct"] = ["yes"]
    (tmp_path / "results.json").write_text(json.dumps(details))
    line = bad(resources, tmp_path, "opencompass", predictions, {"results": str(tmp_path / "results.json")})
    assert "results.json" in line and "details[2].is_strict_correct" in line
    assert "import.config" in bad(resources, tmp_path, "opencompass", predictions, {"config": "x"})


def test_the_second_opencompass_run_is_explained_by_the_same_draw(resources: Path, tmp_path: Path) -> None:
    predictions, results = opencompass_files(2, "IFEval")
    claims = audit(tmp_path, resources, "opencompass", predictions, {"results": str(results), "version": "0.5.4"})
    audited_as_pinned(claims)
    assert claims["metrics"]["prompt_level_strict_acc"]["recomputed_from_harness"]["correct"] == 415
    found = {(r["key"], r["mode"], r["cause"]) for r in rows(tmp_path)}
    assert found == {(key, mode, "substituted_setting") for key in ("1122", "1129") for mode in ("strict", "loose")}
    assert claims["unexplained"] == 0


def test_prompt_level_verdicts_are_explained_by_one_instruction_or_said_unexplained(upstream) -> None:
    """Where a harness recorded only whether all instructions were followed: its failure of a
    prompt the pinned grader passes is one instruction whose failure a cause reproduces (1000: the
    commas are in the reasoning, which the harness graded too); its pass of a prompt the pinned
    grader fails, with no cause, is one `unexplained` row (1001)."""
    from ifaudit.io.prompts import read_prompts
    from ifaudit.steps.auditing.claims import HarnessVerdicts, audit_claims
    from ifaudit.core.metrics import ifeval_metrics
    from ifaudit.steps.grading.analysis import Settings

    prompts = [p for p in read_prompts(IFEVAL_PROMPTS) if p.key in (1000, 1001)]

    def record(key: int, followed: list[bool], **extra: object) -> dict:
        verdicts = {"follow_all_instructions": all(followed), "follow_instruction_list": followed}
        return {"key": key, "sample": 0, "strict": verdicts, "loose": verdicts, **extra}

    grades = [record(1000, [True, True, True], thinking_stripped=True), record(1001, [False])]
    thinking = "<think>First, plan it; then, write it, carefully.</think>An answer without a single comma."
    responses = {(1000, 0): thinking, (1001, 0): "Commas, here."}
    harness = [
        HarnessVerdicts(
            1000, 0, {"strict": [False], "loose": [True]}, None, None, per_instruction=False, prompt_only=True
        ),
        HarnessVerdicts(
            1001, 0, {"strict": [True], "loose": [False]}, None, None, per_instruction=False, prompt_only=True
        ),
    ]
    audit = audit_claims(upstream, ifeval_metrics(), prompts, grades, responses, harness, {}, Settings(resamples=20))
    found = [(r["key"], r["mode"], r["index"], r["harness"], r["pinned"], r["cause"]) for r in audit["disagreements"]]
    assert found == [
        (1000, "strict", 0, False, True, "thinking_graded"),
        (1001, "strict", "", "all followed", "0 of 1 followed", "unexplained"),
    ]
    assert audit["metrics"]["inst_level_strict_acc"]["recomputed_from_harness"] is None
    assert audit["metrics"]["prompt_level_strict_acc"]["recomputed_from_harness"]["correct"] == 1
