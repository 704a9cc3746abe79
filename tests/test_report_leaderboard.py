"""The report at many runs (issue 29 item 3): a leaderboard table ranked by the primary metric with
its interval and the published figure beside it, and a forest plot with one line per run."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from conftest import IFEVAL_PROMPTS, REFERENCE_GRADES, passed_canary_environment, read_jsonl, write_jsonl


def _run(tmp: Path, run: str, label: str, start: int, published: float | None = None) -> dict:
    """A run of 20 IFEval prompts (from `start` in the pinned set) graded as Google's reference
    grades say: its summary and statistics, as the report plan names them."""
    from ifaudit.io.canonical import write_json
    from ifaudit.io.prompts import read_prompts
    from ifaudit.steps.grading.analysis import Settings, run_statistics
    from ifaudit.steps.grading.summary import summarize
    from ifaudit.tasks.registry import get_task

    folder = tmp / run
    folder.mkdir()
    task = get_task("ifeval")
    prompts = read_prompts(IFEVAL_PROMPTS)[start : start + 20]
    keys = {prompt.key for prompt in prompts}
    grader = {
        "kind": "upstream",
        "name": "google-research/instruction_following_eval",
        "version": "test",
        "upstream": True,
    }
    grades = [{**g, "sample": 0, "grader": grader} for g in read_jsonl(REFERENCE_GRADES) if g["key"] in keys]
    grades_path = write_jsonl(folder / "grades.jsonl", grades)
    canary = folder / "canary.json"
    canary.write_text(
        json.dumps({"passed": True, "disagreements": [], "environment": passed_canary_environment(grader)})
    )
    write_json(folder / "summary.json", summarize(task, run, label, grades_path, prompts, canary))
    write_json(folder / "stats.json", run_statistics(task, prompts, grades, Settings(resamples=100, seed=0)))
    spec = {"summary": str(folder / "summary.json"), "stats": str(folder / "stats.json"), "prompts": "p"}
    return {
        **spec,
        "task": "ifeval",
        **({"published": {"source": "a paper", "prompt_level_strict_acc": published}} if published is not None else {}),
    }


def test_the_leaderboard_ranks_runs_by_the_primary_metric_and_the_forest_plot_draws_each_once(
    tmp_path: Path,
) -> None:
    from ifaudit.steps.reporting.report import write_report

    starts = {f"r{index}": 20 * index for index in range(12)}
    runs = {
        run: _run(tmp_path, run, f"model {run}", start, 0.5 if run == "r3" else None) for run, start in starts.items()
    }
    write_report({"runs": runs, "comparisons": [], "audits": {}, "canaries": {}}, tmp_path / "report")
    with (tmp_path / "report" / "metrics.csv").open(newline="") as table:
        strict = {
            r["run"]: float(r["value"]) for r in csv.DictReader(table) if r["metric"] == "prompt_level_strict_acc"
        }
    expected = sorted(starts, key=lambda run: -strict[run])  # highest first; equal values keep the config's order
    report = (tmp_path / "report" / "report.md").read_text()
    heading = "Task `ifeval`, prompt set p (20 prompts):\n\n"
    board = report.split("## Leaderboard", 1)[1].split(heading, 1)[1].split("\n\n", 1)[0].splitlines()
    assert board[0].startswith("| # | run | prompt set | counted | prompt-level strict [95 % CI] | published |")
    ranked = [
        re.match(r"\| (\d+) \| model (r\d+) \((r\d+)\) \| p \(20 prompts\) \| yes \| ", row).groups()
        for row in board[2:]
    ]
    # runs with equal values share a rank (1, 1, 3): the rank is 1 + the number of runs above
    assert [int(rank) for rank, _, _ in ranked] == [
        1 + sum(v > strict[run] for v in strict.values()) for run in expected
    ]
    assert len({int(rank) for rank, _, _ in ranked}) < 12  # the 12 runs hold ties: checked as ties
    assert [run for _, run, _ in ranked] == expected
    published = next(row for row in board[2:] if "(r3)" in row).split(" | ")[5]
    assert published == "50.00" + ("" if runs_inside(tmp_path, "r3", 0.5) else " (outside our CI)")
    # The forest plot: one labelled line per run, in the table's order, top to bottom.
    svg = (tmp_path / "report" / "plots" / "leaderboard.svg").read_text()
    labels = re.findall(r'text-anchor="end"[^>]*>model (r\d+) \(r\d+\)</text>', svg)
    assert labels == expected
    assert svg.count("<circle") == 12 and svg.count("<polygon") == 2  # a dot per run; the diamond and its legend
    assert (tmp_path / "report" / "plots" / "leaderboard.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def runs_inside(tmp: Path, run: str, figure: float) -> bool:
    stats = json.loads((tmp / run / "stats.json").read_text())["estimates"]["prompt_level_strict_acc"]
    return stats["ci_low"] <= figure <= stats["ci_high"]
