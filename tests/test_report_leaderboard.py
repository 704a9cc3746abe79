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


def test_a_leaderboard_of_more_runs_than_a_table_shows_is_cut_and_says_what_the_rest_span(tmp_path: Path) -> None:
    """Issue 53: a report of many runs shows each leaderboard's first `top` runs (report.md, the
    HTML report's first page, the forest and accuracy plots) with a line saying how many runs the
    rest are and what they score; the per-run table and plots of report.md make way for a link;
    runs.html and metrics.csv keep every run. Here 6 runs cut at 2 (the report's threshold is 30)."""
    from ifaudit.steps.reporting.report import write_report

    runs = {f"r{index}": _run(tmp_path, f"r{index}", f"model r{index}", 40 * index) for index in range(6)}
    out = tmp_path / "report"
    write_report({"runs": runs, "comparisons": [], "audits": {}, "canaries": {}}, out, top=2)
    with (out / "metrics.csv").open(newline="") as table:
        strict = {
            r["run"]: float(r["value"]) for r in csv.DictReader(table) if r["metric"] == "prompt_level_strict_acc"
        }
    order = sorted(runs, key=lambda run: -strict[run])
    rest = [100 * strict[run] for run in order[2:]]
    said = f"the other 4 of 6 runs score {min(rest):.2f} to {max(rest):.2f}"
    report = (out / "report.md").read_text()
    board = report.split("## Leaderboard", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"^\| \d+ \| model (r\d+) \(", board, flags=re.MULTILINE) == order[:2]
    assert f"The first 2 by rank; {said}. Every run: [html/runs.html](html/runs.html)" in board
    detail = report.split("\n## Runs\n", 1)[1].split("\n## ", 1)[0]
    assert "| run |" not in detail and "6 runs: more than the 2 a table here shows." in detail
    assert "](plots/breakdown/" not in report and "`plots/breakdown/<run>.png` (6 plots)" in report
    assert sorted(path.stem for path in (out / "plots" / "breakdown").glob("*.png")) == sorted(runs)
    overview = (out / "html" / "overview.html").read_text()
    shown = re.findall(r"<td>model (r\d+) \(", overview)  # a table and its "(continued)", each in rank order
    assert list(dict.fromkeys(shown)) == order[:2] and f"{said}. Every run: runs.html" in overview
    page = (out / "html" / "runs.html").read_text()
    assert all(f"model {run} ({run})" in page for run in runs) and "the other 4" not in page  # not cut
    svg = (out / "plots" / "leaderboard.svg").read_text()
    assert re.findall(r'text-anchor="end"[^>]*>model (r\d+) \(r\d+\)</text>', svg) == order[:2]
    assert svg.count("<circle") == 2 and f"... {said}</text>" in svg
    paired = report.split("\n## Paired comparisons\n", 1)[1].split("\n## ", 1)[0]  # within-run differences here
    within = {line.split(" | ")[0][2:].split(":")[0] for line in paired.splitlines() if re.match(r"\| r\d+:", line)}
    assert within == set(order[:2]) and "differences: those between the runs the leaderboard shows." in paired
    differences = (out / "plots" / "differences.svg").read_text()
    assert set(re.findall(r">(r\d+): ", differences)) == set(order[:2])
    accuracy = (out / "plots" / "accuracy.svg").read_text()
    assert "the leaderboards&#x27; first 2 of 6 runs" in accuracy or "the leaderboards' first 2 of 6 runs" in accuracy
    assert {f"model {run}" for run in order[:2]} == set(re.findall(r">(model r\d+)</text>", accuracy))
