"""End-to-end: config/ifbench.yaml on the offline config through the real DAG — IFBench's sample
outputs under both pinned graders in one audit, with intervals, counted, canaries passed, and the
paired comparison of the two; and beside them a run on the 300-row data, which no table ranks with
the runs on the 294 rows, every output crediting AllenAI's grader at the commit that graded."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import IFBENCH_300_RUN

pytestmark = pytest.mark.e2e

# (followed, total) per metric: upstream's committed verdicts (c6767a1) and the newest grader's.
EXPECTED = {
    "ifbench_sample": {
        "prompt_level_strict_acc": (77, 294),
        "inst_level_strict_acc": (93, 335),
        "prompt_level_loose_acc": (88, 294),
        "inst_level_loose_acc": (109, 335),
    },
    "ifbench_sample_db69a6f": {
        "prompt_level_strict_acc": (76, 294),
        "inst_level_strict_acc": (92, 335),
        "prompt_level_loose_acc": (87, 294),
        "inst_level_loose_acc": (108, 335),
    },
    # docs/ifbench.md: the seven prompts without a sample output follow nothing
    IFBENCH_300_RUN: {
        "prompt_level_strict_acc": (76, 300),
        "inst_level_strict_acc": (92, 344),
        "prompt_level_loose_acc": (86, 300),
        "inst_level_loose_acc": (107, 344),
    },
}


def test_ifbench_sample_outputs_under_both_pins_through_the_dag(ifbench_dag_run: Path) -> None:
    for run, expected in EXPECTED.items():
        summary = json.loads((ifbench_dag_run / "results" / run / "summary.json").read_text())
        assert summary["counted"] is True and summary["canary"]["passed"] is True
        assert {name: (m["correct"], m["total"]) for name, m in summary["metrics"].items()} == expected
        stats = json.loads((ifbench_dag_run / "results" / run / "stats.json").read_text())
        for name in expected:
            interval = stats["estimates"][name]
            assert interval["ci_low"] < interval["value"] < interval["ci_high"]
    for task in ("ifbench", "ifbench_db69a6f"):
        assert json.loads((ifbench_dag_run / "results" / "canary" / f"{task}.json").read_text())["passed"] is True
    report = (ifbench_dag_run / "results" / "report.md").read_text()
    assert "ifbench_sample − ifbench_sample_db69a6f | prompt-level loose" in report
    assert "88 / 294 vs 88 / 294" in report  # the published (committed) figure, matched


def test_no_output_ranks_the_294_and_300_rows_together_or_credits_another_grader(ifbench_dag_run: Path) -> None:
    from ifaudit.steps.reporting.headlines import headline_lines

    results = ifbench_dag_run / "results"
    report = (results / "report.md").read_text()
    board = report.split("## Leaderboard", 1)[1].split("## Runs", 1)[0]
    tables = dict(re.findall(r"^Task `ifbench_db69a6f`, prompt set (.*):\n\n((?:\|.*\n)+)", board, re.M))
    assert list(tables) == ["ifbench_prompts_294 (294 prompts)", "ifbench_prompts_300 (300 prompts)"]
    assert IFBENCH_300_RUN not in tables["ifbench_prompts_294 (294 prompts)"]
    assert "ifbench_sample_db69a6f" not in tables["ifbench_prompts_300 (300 prompts)"]
    header = tables["ifbench_prompts_300 (300 prompts)"].splitlines()[0]
    assert header.startswith("| # | run | prompt set | counted | prompt-level loose (IFBench's headline) [95 % CI] |")
    lines = {line.split(":", 1)[0]: line for line in headline_lines(results)}
    assert lines[IFBENCH_300_RUN].startswith(
        f"{IFBENCH_300_RUN}: counted; 7 of 300 prompts have no response and count as failed; "
        "prompt-level loose (IFBench's headline) 28.67 ["
    )
    artifact = (results / "paper" / "artifact.md").read_text()
    assert "Google's IFEval grader `allenai/IFBench`" not in artifact
    for commit in ("c6767a19bd82ac0536cab950f2f8f6bcc6fabe7c", "db69a6f05689830b0068b8f1529ebcfd2f3b164c"):
        assert (
            "graded by AllenAI's IFBench grader `allenai/IFBench` (https://github.com/allenai/IFBench), pinned at "
            f"commit `{commit}` with the sha256 of each of its files (`vendor/allenai_ifbench/pin.toml`)"
        ) in artifact
    assert (
        f"| `{IFBENCH_300_RUN}` | IFBench sample outputs on the 300 rows, grader db69a6f | `ifbench_db69a6f` | `ifbench_prompts_300` | 300 | 293 |"
        in artifact
    )
    paper = sorted(path.name for path in (results / "paper").glob("runs_*.tex"))
    assert paper == [
        "runs_ifbench.tex",
        "runs_ifbench_db69a6f--ifbench_prompts_294.tex",
        "runs_ifbench_db69a6f--ifbench_prompts_300.tex",
        "runs_ifeval.tex",
    ]
    overview = (results / "html" / "overview.html").read_text()
    assert "prompt set ifbench_prompts_300 (300 prompts):" in overview and "final_acc</th>" not in overview
