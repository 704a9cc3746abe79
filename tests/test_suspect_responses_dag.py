"""End-to-end: an lm-eval log whose model answered seven prompts with a replay server's miss
(`NO MATCH`) imported as docs/importing.md says and run through the real DAG (offline mirror,
pinned upstream grader). The seven are graded as they are, and the run counts; its summary, the
report, the HTML report's first screen, the headline line and the claims audit each name them with
their number and what they pass, which this test computes apart with the upstream grader."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from test_workflow import snakemake, write_config

from conftest import IFAUDIT, IFEVAL_PROMPTS, UPSTREAM_SOURCE, cli_env

pytestmark = pytest.mark.e2e

LOGS = Path(__file__).parent / "data" / "harness_logs" / "lm_eval"
RUN = "replayed_with_misses"
MISS = "NO MATCH"
MISSED = (1000, 1001, 1005, 1012, 1019, 1092, 1147)
METRICS = {  # lm-eval's aggregate -> (mode, level)
    "prompt_level_strict_acc": ("strict", "prompt"),
    "inst_level_strict_acc": ("strict", "inst"),
    "prompt_level_loose_acc": ("loose", "prompt"),
    "inst_level_loose_acc": ("loose", "inst"),
}


def _log_with_misses(upstream, folder: Path) -> tuple[Path, Path, dict]:
    """The committed lm-eval samples with the seven prompts answered `NO MATCH`, their verdicts
    as the grader gives them (lm-eval grades what it logged), and a results file whose aggregates
    are those of the new samples, as lm-eval would write them. Returns both files and the seven's
    verdicts."""
    from ifaudit.io.prompts import read_prompts
    from ifaudit.tasks.grading import follow_list, loose_variants, reset_randomness

    by_key = {prompt.key: prompt for prompt in read_prompts(IFEVAL_PROMPTS)}
    records = [json.loads(line) for line in next(LOGS.glob("samples_*.jsonl")).read_text().splitlines()]
    missed = {}
    for record in records:
        if record["doc"]["key"] in MISSED:
            prompt = by_key[record["doc"]["key"]]
            reset_randomness()
            strict = follow_list(upstream, prompt, [MISS])
            reset_randomness()
            loose = follow_list(upstream, prompt, loose_variants(MISS))
            missed[prompt.key] = {"strict": strict, "loose": loose}
            record.update(resps=[[MISS]], filtered_resps=[MISS])
            record.update(inst_level_strict_acc=strict, prompt_level_strict_acc=all(strict))
            record.update(inst_level_loose_acc=loose, prompt_level_loose_acc=all(loose))
    samples = folder / "samples_ifeval_local_missed.jsonl"
    samples.write_text("".join(json.dumps(record) + "\n" for record in records))
    results = json.loads(next(LOGS.glob("results_*.json")).read_text())
    figures = results["results"]["ifeval_local"]
    for name, (_, level) in METRICS.items():
        if level == "prompt":
            figures[f"{name},none"] = sum(bool(r[name]) for r in records) / len(records)
        else:
            figures[f"{name},none"] = sum(sum(r[name]) for r in records) / sum(len(r[name]) for r in records)
    results_path = folder / "results_missed.json"
    results_path.write_text(json.dumps(results))
    return samples, results_path, missed


def test_seven_prompts_answered_no_match_are_named_everywhere_and_the_run_counts(
    default_run_copy: Path, upstream
) -> None:
    workdir = default_run_copy
    samples, results, missed = _log_with_misses(upstream, workdir)
    strict_passing = sum(all(v["strict"]) for v in missed.values())
    strict_followed = sum(sum(v["strict"]) for v in missed.values())
    instructions = sum(len(v["strict"]) for v in missed.values())
    assert 0 < strict_passing < len(MISSED) and strict_followed > strict_passing  # the miss passes some
    write_config(
        workdir,
        {
            "grader": "upstream",
            "grader_sources": [UPSTREAM_SOURCE],
            "statistics": {"resamples": 200, "level": 0.95, "interval": "percentile", "seed": 0},
            "datasets": {"missed_samples": {"path": str(samples)}, "missed_results": {"path": str(results)}},
            "runs": {
                RUN: {
                    "task": "ifeval",
                    "prompts": "ifeval_prompts_github",
                    "responses": "missed_samples",
                    "import": {"format": "lm-eval", "results": "missed_results"},
                }
            },
        },
    )
    snakemake(workdir)
    run = workdir / "results" / RUN

    # The summary: graded as they are, counted, the seven named with what they pass.
    summary = json.loads((run / "summary.json").read_text())
    assert summary["counted"] is True and summary["responses"] == 541
    found = summary["suspect_responses"]
    [repeated] = [item for item in found["repeated_texts"] if item["text"] == MISS]
    assert sorted(repeated["keys"]) == sorted(MISSED) and repeated["responses"] == 7
    passes = {
        "responses_passing": strict_passing,
        "instructions_followed": strict_followed,
        "instructions": instructions,
    }
    assert repeated["passes"]["strict"] == passes
    # Google's GPT-4 responses repeat two texts of their own, the fixed phrases their prompts ask
    # for, each passing every prompt it answers: answers, not named.
    assert [item["text"] for item in found["repeated_texts"]] == [MISS]
    assert found["in_doubt"]["responses"] == 7

    # report.md: a section near its top names the text, its number and what it passes.
    report = (workdir / "results" / "report.md").read_text()
    section = report.split("## Responses that may not be answers", 1)[1].split("\n## ", 1)[0]
    assert report.index("## Responses that may not be answers") < report.index("## Runs")
    [line] = [line for line in section.splitlines() if f"`{MISS}`" in line]
    assert "7 responses to 7 prompts" in line
    assert f"{strict_passing} pass every instruction (strict), {strict_followed} of their {instructions}" in line
    assert f"**{RUN}**: 7 responses may not be answers" in section

    # The claims audit: both the harness's figures and the audit's count them, and say so.
    claims = json.loads((run / "claims.json").read_text())
    assert claims["suspect_responses"]["claimed"]["strict"]["responses_passing"] >= strict_passing
    claimed = report.split("## Claimed vs audited", 1)[1]
    assert "7 responses may not be answers" in claimed and "Both the claim and the audit count them" in claimed

    # The HTML report's first screen.
    overview = (workdir / "results" / "html" / "overview.html").read_text()
    block = overview.split('<p class="in-doubt">', 1)[1].split("</p>", 1)[0]
    assert overview.index(block) < overview.index('id="ifaudit-leaderboard"')  # before any table
    assert "graded as they are, and the runs count" in block
    assert f"<br>{RUN}: 7 responses may not be answers: " in block and f"&#x27;{MISS}&#x27; (7 prompts)" in block

    # The headline line `make run` ends with.
    done = subprocess.run(
        [str(IFAUDIT), "counted", "--results", str(workdir / "results")],
        cwd=workdir,
        env=cli_env(workdir / "resources"),
        capture_output=True,
        text=True,
    )
    [headline] = [line for line in done.stdout.splitlines() if line.startswith(f"{RUN}: counted; ")]
    assert (
        f"; NOTE: 7 responses may not be answers: 7 are one text given to several prompts: '{MISS}' (7 prompts); of them"
        in headline
    )
    assert headline.index("(percent, 95 % interval)") < headline.index("NOTE")  # after the figures it concerns
