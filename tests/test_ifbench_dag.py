"""End-to-end: config/ifbench.yaml on the offline config through the real DAG — IFBench's sample
outputs under both pinned graders in one audit, with intervals, counted, canaries passed, and the
paired comparison of the two."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
