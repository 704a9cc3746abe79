"""Tables by prompt set and by each task's headline metric (issue 49 item 3): runs of different
prompt sets (IFBench's 294 and 300 rows are different benchmarks) are never ranked in one table;
a task's runs are ranked by the figure its benchmark is quoted by (IFBench: prompt-level loose),
whose interval the headline line gives; every table names the prompt set, and no column is titled
by a bare variable name (`final_acc`). The HTML report's first screen says why audited and claimed
differ. Before the fix, the three IFBench runs below were ranked in one table by prompt-level
strict, and the headline line gave an interval for prompt-level strict only."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ifaudit.io.formats.table import Table
from ifaudit.tasks.registry import TASKS

# (run, prompt set, prompts, prompt-level strict, prompt-level loose): ranked by strict, c294 would
# lead the 294 rows; by loose (IFBench's headline) a294 does.
RUNS = (
    ("a294", "ifbench_prompts_294", 294, 0.26, 0.30),
    ("b300", "ifbench_prompts_300", 300, 0.40, 0.20),
    ("c294", "ifbench_prompts_294", 294, 0.28, 0.25),
)


def _rows(task: str = "ifbench") -> list[dict[str, Any]]:
    rows = []
    for run, prompt_set, size, strict, loose in RUNS:
        values = {"prompt_level_strict_acc": strict, "prompt_level_loose_acc": loose}
        for spec in TASKS[task].metrics:
            value = values.get(spec.name, 0.5)
            rows.append(
                {"run": run, "label": run, "task": task, "prompt_set": prompt_set, "prompt_set_size": size}
                | {
                    "grader": "allenai/IFBench@c6767a1",
                    "grader_kind": "upstream",
                    "counted": True,
                    "metric": spec.name,
                    "headline": spec.name == TASKS[task].headline_metric,
                    "title": spec.title,
                }
                | {"value": value, "ci_low": value - 0.05, "ci_high": value + 0.05, "bootstrap_se": 0.02}
                | {"clustered_se": 0.02, "correct": 1, "total": size, "level": 0.95, "interval": "percentile"}
                | {"resamples": 1000, "published": None}
            )
    return rows


def test_the_leaderboard_never_ranks_two_prompt_sets_together_and_ranks_ifbench_by_prompt_level_loose() -> None:
    from ifaudit.steps.reporting.report import leaderboard_tables

    tables = leaderboard_tables(Table.of(_rows()), 95, str)
    assert [(task, prompt_set) for task, prompt_set, _, _ in tables] == [
        ("ifbench", "ifbench_prompts_294 (294 prompts)"),
        ("ifbench", "ifbench_prompts_300 (300 prompts)"),
    ]
    (_, _, header, first), (_, _, _, second) = tables
    assert header[:5] == ["#", "run", "prompt set", "counted", "prompt-level loose (IFBench's headline) [95 % CI]"]
    assert [row[1] for row in first] == ["a294", "c294"] and [row[1] for row in second] == ["b300"]
    assert {row[2] for row in first} == {"ifbench_prompts_294 (294 prompts)"}
    assert header[-1] == "mean of the four (inspect's final_acc)" and "final_acc" not in header


def test_report_md_runs_tables_plot_and_latex_keep_each_prompt_set_apart(tmp_path: Path) -> None:
    from ifaudit.steps.reporting.paper_latex import runs_latex
    from ifaudit.steps.reporting.plots import plot_leaderboard
    from ifaudit.steps.reporting.report import _leaderboard_section, _runs_section

    metrics = Table.of(_rows())
    for section in (_leaderboard_section(metrics, 95), _runs_section(metrics)):
        text = "\n".join(section)
        tables = re.findall(r"^Task `ifbench`, prompt set (.*):\n\n((?:\|.*\n?)+)", text, re.M)
        assert [heading for heading, _ in tables] == [
            "ifbench_prompts_294 (294 prompts)",
            "ifbench_prompts_300 (300 prompts)",
        ]
        assert "b300" not in tables[0][1] and "a294" not in tables[1][1] and "c294" not in tables[1][1]
        assert "| final_acc" not in text
    plot_leaderboard(metrics, tmp_path / "leaderboard")
    svg = (tmp_path / "leaderboard.svg").read_text()
    assert "ifbench, ifbench_prompts_294 (294 prompts): prompt-level loose (IFBench&#x27;s headline)" in svg or (
        "ifbench, ifbench_prompts_294 (294 prompts): prompt-level loose (IFBench's headline)" in svg
    )
    labels = re.findall(r'text-anchor="end"[^>]*>(a294|b300|c294)</text>', svg)
    assert labels == ["a294", "c294", "b300"]
    latex = runs_latex(metrics, "ifbench", "ifbench_prompts_300")
    assert "b300" in latex and "a294" not in latex and "prompt set ifbench_prompts_300 (300 prompts)" in latex


def test_the_headline_line_gives_the_tasks_headline_metric_first_with_its_interval() -> None:
    from ifaudit.steps.reporting.headlines import headline

    ifbench = [row for row in _rows("ifbench") if row["run"] == "a294"]
    assert headline("a294", ifbench).startswith(
        "a294: counted; prompt-level loose (IFBench's headline) 30.00 [25.00, 35.00], prompt-level strict 26.00, "
    )
    ifeval = [row for row in _rows("ifeval") if row["run"] == "a294"]
    assert headline("a294", ifeval).startswith("a294: counted; prompt-level strict 26.00 [21.00, 31.00], ")


def _claims(causes: dict[str, int], verdicts: int = 1) -> dict[str, Any]:
    figures = {"value": 430 / 541, "correct": 430, "total": 541}
    metric = {
        "title": "prompt-level loose",
        "reported": 430 / 541,
        "recomputed_from_harness": figures,
        "audited": {"value": 431 / 541, "correct": 431, "total": 541},
        "audited_minus_claimed": {"value": 1 / 541, "ci_low": 0.0, "ci_high": 0.0055},
        "audited_minus_reported": 1 / 541,
    }
    return {
        "harness": {"format": "lm-eval", "tool": {"name": "lm-evaluation-harness"}, "model": "m"},
        "metrics": {"prompt_level_loose_acc": metric},
        "headline_mismatches": {},
        "responses_with_harness_verdicts": verdicts,
        "disagreements": [{"cause": cause} for cause, count in causes.items() for _ in range(count)],
        "causes": causes,
        "unexplained": causes.get("unexplained", 0),
    }


def test_the_first_screen_says_why_audited_and_claimed_differ(tmp_path: Path) -> None:
    import json

    from ifaudit.steps.auditing.claims_report import claims_differences
    from ifaudit.steps.reporting.report_html import overview_fragment

    cases = {
        "one": (_claims({"substituted_setting": 1}), "cause: 1 verdict differs from the pinned grader's: "
                "1 substituted_setting (the grader replaces the instruction's setting with a random draw)"),
        "two": (_claims({"grader_version": 1, "unexplained": 2}), "cause: 3 verdicts differ from the pinned "
                "grader's: 1 grader_version (another pinned version of the grader gives the harness's verdict); "
                "2 unexplained (NO CAUSE ifaudit can establish)"),
        "none": (_claims({}, verdicts=0), "cause: the log records no per-response verdicts, so no cause can be "
                 "established"),
    }  # fmt: skip
    for run, (claims, _) in cases.items():
        (tmp_path / f"{run}.json").write_text(json.dumps(claims))
    plan = {
        "runs": {run: {"task": "ifeval"} for run in cases},
        "claims": {run: str(tmp_path / f"{run}.json") for run in cases},
    }
    lines = claims_differences(plan)
    for line, (_, cause) in zip(lines, cases.values(), strict=True):
        assert line.endswith(f"; {cause}."), line
    front = overview_fragment("intro", {}, lines)
    assert front.count('class="differs"') == 3 and "cause: 1 verdict differs" in front


def test_the_claims_overview_leads_with_the_tasks_headline_metric(tmp_path: Path) -> None:
    """An imported IFBench run's row in the claims overview is its prompt-level loose figure (an
    IFEval run's, prompt-level strict), when both agree with the claim."""
    import json

    from ifaudit.steps.auditing.claims_report import claims_overview

    claims = _claims({})
    loose = claims["metrics"]["prompt_level_loose_acc"]
    agreeing = {**loose, "audited": loose["recomputed_from_harness"], "audited_minus_reported": 0.0}
    agreeing["audited_minus_claimed"] = {"value": 0.0, "ci_low": 0.0, "ci_high": 0.0}
    claims["metrics"] = {
        "prompt_level_strict_acc": {**agreeing, "title": "prompt-level strict"},
        "prompt_level_loose_acc": {**agreeing, "title": "prompt-level loose (IFBench's headline)"},
    }
    (tmp_path / "claims.json").write_text(json.dumps(claims))
    for task, first in (("ifbench", "prompt-level loose (IFBench's headline)"), ("ifeval", "prompt-level strict")):
        plan = {"runs": {"r": {"task": task}}, "claims": {"r": str(tmp_path / "claims.json")}}
        _, rows = claims_overview(plan, 95, str)
        assert [row[3] for row in rows] == [first], task
