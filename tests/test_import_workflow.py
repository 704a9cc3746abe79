"""End-to-end: a run imported from a harness's log through the real Snakemake DAG (offline mirror,
pinned upstream grader): the committed lm-eval samples and results files declared as datasets,
imported, graded twice and verified, audited against lm-eval's own claims, reported, and bundled
(the bundle's verifier imports the log again and recomputes the claims)."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest
from test_workflow import snakemake, write_config

from conftest import IFAUDIT, REPO, UPSTREAM_SOURCE, cli_env

pytestmark = pytest.mark.e2e

LOGS = Path(__file__).parent / "data" / "harness_logs" / "lm_eval"
# Named to sort before the default run it is declared after: the report lists runs in the config's
# order, and a bundle's verifier must recompute that order, not the alphabetical one.
RUN = "as_claimed_by_lm_eval"
AUDITED = {
    "prompt_level_strict_acc": (417, 541),
    "inst_level_strict_acc": (698, 834),
    "prompt_level_loose_acc": (431, 541),
    "inst_level_loose_acc": (714, 834),
}


def test_an_lm_eval_log_declared_as_a_dataset_is_imported_graded_and_its_claims_audited(
    default_run_copy: Path,
) -> None:
    workdir = default_run_copy  # the default run finished: the DAG grades the imported run only
    write_config(
        workdir,
        {
            "grader": "upstream",
            "grader_sources": [UPSTREAM_SOURCE],
            "statistics": {"resamples": 500, "level": 0.95, "interval": "percentile", "seed": 0},
            "datasets": {
                "lm_eval_samples": {"path": str(next(LOGS.glob("samples_*.jsonl")))},
                "lm_eval_results": {"path": str(next(LOGS.glob("results_*.json")))},
            },
            "runs": {
                RUN: {
                    "task": "ifeval",
                    "prompts": "ifeval_prompts_github",
                    "responses": "lm_eval_samples",
                    "import": {"format": "lm-eval", "results": "lm_eval_results"},
                }
            },
        },
    )
    snakemake(workdir)
    run = workdir / "results" / RUN
    claims = json.loads((run / "claims.json").read_text())
    for name, (correct, total) in AUDITED.items():
        audited = claims["metrics"][name]["audited"]
        assert (audited["correct"], audited["total"]) == (correct, total), name
    # The graded, verified summary is the same run's: the import feeds the ordinary grading steps.
    summary = json.loads((run / "summary.json").read_text())
    assert {name: (m["correct"], m["total"]) for name, m in summary["metrics"].items() if name in AUDITED} == AUDITED
    assert summary["grader"]["kind"] == "upstream"
    loose = claims["metrics"]["prompt_level_loose_acc"]
    assert loose["recomputed_from_harness"]["correct"] == 430 and loose["reported"] == pytest.approx(430 / 541)
    with (run / "disagreements.csv").open(newline="") as table:
        rows = list(csv.DictReader(table))
    assert [(r["key"], r["mode"], r["instruction_id"], r["cause"]) for r in rows] == [
        ("1122", "loose", "keywords:letter_frequency", "substituted_setting")
    ]
    report = (workdir / "results" / "report.md").read_text()
    assert report.index("gpt4_google") < report.index(RUN)  # the config's order
    section = report.split("## Claimed vs audited", 1)[1]
    assert f"**{RUN}**: lm-eval log of lm-evaluation-harness 0.4.13" in section
    assert "| prompt-level loose | 79.48 | 79.48 (430/541) | 79.67 (431/541) | +0.18 [" in section
    assert "`substituted_setting` 1" in section and "UNEXPLAINED" not in section

    # A bundle of this run verifies alone: the log imported again, regraded, its claims audited again.
    configs = [REPO / "config/config.yaml", REPO / "config/offline.yaml", workdir / "test.yaml"]
    env = cli_env(workdir / "resources")
    bundled = subprocess.run(
        [
            str(IFAUDIT),
            "bundle",
            "--allow-dirty",
            "--out",
            str(workdir / "bundle"),
            "--project",
            str(REPO),
            *[part for c in configs for part in ("--config", str(c))],
        ],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
    )
    assert bundled.returncode == 0, bundled.stderr
    review = workdir / "review"
    review.mkdir()
    digest = bundled.stdout.strip()
    verified = subprocess.run(
        [str(IFAUDIT), "verify-bundle", str(workdir / "bundle"), "--expect", digest],
        cwd=review,
        env=env,
        capture_output=True,
        text=True,
    )
    assert verified.returncode == 0, verified.stderr
    assert f"regraded byte-identically (both passes): gpt4_google, {RUN}" in verified.stderr  # the config's order
    assert "derived files recomputed identically" in verified.stderr  # report.md among them, in config order
