"""End-to-end: config/mifeval.yaml's runs on the offline config through the real DAG (three of
its fifteen: one per language, to keep the suite's time), each counted with its canary passed,
the French and Japanese grades upstream's committed verdicts but where langdetect's draw decides
(test_mifeval_reference), each published figure beside the audited one with what it fits
(counted from the committed verdicts the config names), and runs ranked per language; a fourth
run's response file holds `null`s (upstream's format), graded as following nothing and disclosed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import REPO, read_jsonl, write_jsonl
from test_mifeval_reference import MIFEVAL, committed, differences

pytestmark = pytest.mark.e2e

# run -> (language, model file name part, audited instruction-level strict (followed, total))
RUNS = {
    "mifeval_fr_qwen25_7b": ("fr", "Qwen__Qwen2.5-7B-Instruct-GPTQ-Int4", (265, 345)),
    "mifeval_ja_mistral7b": ("ja", "mistralai__Mistral-7B-Instruct-v0.3", (66, 226)),
    "mifeval_en_llama31_8b": ("en", "hugging-quants__Meta-Llama-3.1-8B-Instruct-AWQ-INT4", (668, 834)),
}
NULLED = (0, 1, 2)  # rows of Qwen 2.5 7B's French responses made `null` for a fourth run, mifeval_fr_nulls


@pytest.fixture(scope="module")
def mifeval_dag_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from test_workflow import snakemake_call

    workdir = tmp_path_factory.mktemp("mifeval_dag")
    config = yaml.safe_load((REPO / "config" / "mifeval.yaml").read_text(encoding="utf-8"))
    config["runs"] = {"gpt4_google": None, **{run: config["runs"][run] for run in RUNS}}
    # Qwen 2.5 7B's French responses with NULLED made `null`, as o1's committed English files hold them
    lines = (MIFEVAL / "data" / f"fr_input_response_data_{RUNS['mifeval_fr_qwen25_7b'][1]}.jsonl").read_text("utf-8")
    records = [json.loads(line) for line in lines.splitlines()]
    for index in NULLED:
        records[index]["response"] = None
    write_jsonl(workdir / "fr_qwen_nulls.jsonl", records)
    config["datasets"]["mifeval_fr_qwen_nulls"] = {"path": "fr_qwen_nulls.jsonl"}
    config["runs"]["mifeval_fr_nulls"] = {"task": "mifeval_fr", "prompts": "mifeval_fr_prompts"} | {
        "responses": "mifeval_fr_qwen_nulls"
    }
    (workdir / "test.yaml").write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False), encoding="utf-8")
    shutil.copy(REPO / "config" / "mifeval.yaml", workdir / "mifeval.yaml")  # the file the runs came from
    command, env = snakemake_call(workdir)
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return workdir


def test_mifeval_runs_through_the_dag_reproduce_the_committed_verdicts(mifeval_dag_run: Path) -> None:
    for run, (language, model, expected) in RUNS.items():
        summary = json.loads((mifeval_dag_run / "results" / run / "summary.json").read_text())
        assert summary["counted"] is True and summary["canary"]["passed"] is True, run
        followed = summary["metrics"]["inst_level_strict_acc"]
        assert (followed["correct"], followed["total"]) == expected, run
        if language != "en":
            grades = read_jsonl(mifeval_dag_run / "results" / run / "grades.jsonl")
            assert {grade["grader"]["name"] for grade in grades} == {"lightblue-tech/M-IFEval"}
            found = differences(language, model, grades)
            assert [entry for entry in found if entry[3] == "unexplained"] == [], found
    for task in ("mifeval_fr", "mifeval_ja", "ifeval"):
        assert json.loads((mifeval_dag_run / "results" / "canary" / f"{task}.json").read_text())["passed"] is True


def test_null_responses_are_graded_as_following_nothing_and_the_report_says_so(mifeval_dag_run: Path) -> None:
    """A response file holding `null` (upstream's format) is audited, not refused: each null follows
    nothing (as M-IFEval's evaluation_main.py grades it), the others keep their verdicts, and the
    report names the nulls among the empty answers."""
    strict = committed("fr", RUNS["mifeval_fr_qwen25_7b"][1], "strict")
    lost = sum(sum(strict[index]["follow_instruction_list"]) for index in NULLED)
    summary = json.loads((mifeval_dag_run / "results" / "mifeval_fr_nulls" / "summary.json").read_text())
    followed = summary["metrics"]["inst_level_strict_acc"]
    assert lost > 0 and (followed["correct"], followed["total"]) == (265 - lost, 345)
    assert summary["counted"] is True
    empty = summary["suspect_responses"]["empty"]
    assert (empty["responses"], empty["null"]) == (len(NULLED), len(NULLED))
    report = (mifeval_dag_run / "results" / "report.md").read_text(encoding="utf-8")
    assert "3 are empty (3 of them null in the file, graded as the empty response" in report
    assert "  - empty or only whitespace (3 of them `null` in the file, graded as empty): 3 responses" in report


def test_the_report_sets_each_published_figure_beside_ours_and_ranks_per_language(mifeval_dag_run: Path) -> None:
    report = (mifeval_dag_run / "results" / "report.md").read_text(encoding="utf-8")
    for counts in ("265 / 345 vs 265 / 345", "66 / 226 vs 66 / 226", "668 / 834 vs 668 / 834"):
        assert counts in report
    for counts in ("265/345", "66/226", "668/834"):  # computed from the committed verdicts and our grades
        assert (
            f"fits the committed verdicts ({counts}) and our regrade of the committed responses ({counts}), "
            "rounded to 0.1 points"
        ) in report
    for run in RUNS:  # the committed verdicts counted by the summary, from the dataset the config names
        summary = json.loads((mifeval_dag_run / "results" / run / "summary.json").read_text())
        assert summary["published_verdicts"]["responses"] == {"fr": 235, "ja": 172, "en": 541}[RUNS[run][0]]
    leaderboard = report.split("## Leaderboard", 1)[1].split("\n## ", 1)[0]
    sections = [part.split("`", 1)[0] for part in leaderboard.split("Task `")[1:]]
    assert sections == ["mifeval_fr", "mifeval_ja", "ifeval"]
    for task, run in zip(sections, RUNS):
        assert leaderboard.split(f"Task `{task}`", 1)[1].split("Task `", 1)[0].count("| 1 |") == 1
        assert f"({run})" in leaderboard.split(f"Task `{task}`", 1)[1].split("Task `", 1)[0]
    french = leaderboard.split("Task `mifeval_fr`", 1)[1].split("Task `", 1)[0]
    assert "| 2 | mifeval_fr_nulls |" in french  # ranked with the French run, below it, and nowhere else
    assert leaderboard.count("mifeval_fr_nulls") == 1
