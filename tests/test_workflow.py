"""End-to-end: the real Snakemake DAG on the offline mirror, graded by the pinned upstream grader
(from the shared mirror of upstream files, as config/offline.yaml says)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from fractions import Fraction
import sys
from pathlib import Path

import pytest
import yaml

from conftest import (
    DATA,
    GPT4_RESPONSES,
    IFAUDIT,
    NLTK_MIRROR,
    REPO,
    UPSTREAM_SOURCE,
    copy_of_scenario,
    disagreeing_second_pass,
    read_jsonl,
    write_jsonl,
)

pytestmark = pytest.mark.e2e

FACTS_GPT4 = {  # FACTS §3: the reference grades' four accuracies
    "prompt_level_strict_acc": (417, 541, 0.7707948243992606),
    "inst_level_strict_acc": (698, 834, 0.8369304556354916),
    "prompt_level_loose_acc": (431, 541, 0.7966728280961183),
    "inst_level_loose_acc": (714, 834, 0.8561151079136691),
}


def snakemake_call(workdir: Path, *args: str, cores: int = 2) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that run the project's Snakefile in `workdir` with the
    default and offline configs plus the test's own `test.yaml` (if any) on top. The mirrors are
    given as absolute paths, since the workdir is not the project."""
    configs = [str(REPO / "config/config.yaml"), str(REPO / "config/offline.yaml")]
    if (workdir / "test.yaml").is_file():
        configs.append(str(workdir / "test.yaml"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("IFAUDIT_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    command = [
        str(Path(sys.executable).parent / "snakemake"),
        "-s",
        str(REPO / "Snakefile"),
        "--cores",
        str(cores),
        "--configfile",
        *configs,
        "--config",
        f"mirror={DATA}",
        f"nltk_mirror={NLTK_MIRROR}",
        f"grader_sources=[{UPSTREAM_SOURCE.replace(os.pathsep, ', ')}]",
        *args,
    ]
    return command, env


def snakemake(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run the project's Snakefile in `workdir` (see snakemake_call)."""
    command, env = snakemake_call(workdir, *args)
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise AssertionError(f"snakemake exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


# What Snakemake itself prints at every start since the workflow has a default profile
# (profiles/default: rerun-incomplete), before any line of ours.
PROFILE_NOTE = "Using workflow specific profile "


def without_profile_note(stderr: str) -> str:
    """`stderr` without Snakemake's note on the default profile it read."""
    return "".join(line for line in stderr.splitlines(keepends=True) if not line.startswith(PROFILE_NOTE))


def write_config(workdir: Path, settings: dict) -> None:
    (workdir / "test.yaml").write_text(yaml.safe_dump(settings))


def three_per_prompt(path: Path) -> Path:
    """Three responses per prompt from Google's GPT-4 file: as is, its first half, in capitals."""
    records = []
    for record in read_jsonl(GPT4_RESPONSES):
        text = record["response"]
        for sample, variant in enumerate([text, text[: len(text) // 2], text.upper()]):
            records.append({"prompt": record["prompt"], "response": variant, "sample": sample})
    return write_jsonl(path, records)


def summary(workdir: Path, run: str) -> dict:
    return json.loads((workdir / "results" / run / "summary.json").read_text())


@pytest.fixture(scope="module")
def two_runs(scenario_run) -> Path:
    """Google's GPT-4 run beside its half-length copy, its three-samples-per-prompt copy (both on
    two shards) and its English-gated run: the digest check's `comparison` scenario, whose one
    session run these tests share."""
    return scenario_run("comparison").workdir


@pytest.fixture
def two_runs_copy(scenario_run, tmp_path: Path) -> Path:
    """A copy of `two_runs` for a test that runs Snakemake there or writes to it: the session's
    run is read-only (conftest.scenario_run)."""
    return copy_of_scenario(scenario_run, "comparison", tmp_path)


def test_canary_passes_and_both_runs_are_graded_twice_and_verified(two_runs: Path) -> None:
    canary = json.loads((two_runs / "results/canary/ifeval.json").read_text())
    assert canary["passed"] and canary["items"] == 20 and canary["disagreements"] == []
    combined = (two_runs / "logs/canary/ifeval.log").read_text()
    # gpt4_google, gpt4_halves and gpt4_x3 (the ifeval runs) x 2 passes x 2 shards
    assert "canary of 12 grading processes: passed" in combined
    audited = (two_runs / "logs/audit_prompts/ifeval_prompts_github.log").read_text()
    assert "prompt audit of 12 grading processes, all identical" in audited
    for pass_, shard in ((p, s) for p in "ab" for s in range(2)):  # each grading process regraded it first
        log = (two_runs / f"logs/gpt4_x3/grade-{pass_}-{shard}-of-2.log").read_text()
        assert log.index("canary ifeval: 20 responses regraded, all agree") < log.index("graded ")
    for run, responses in (("gpt4_google", 541), ("gpt4_x3", 1623)):
        folder = two_runs / "results" / run
        first, second = (folder / "passes/a.jsonl").read_bytes(), (folder / "passes/b.jsonl").read_bytes()
        assert first == second == (folder / "grades.jsonl").read_bytes()
        verify = json.loads((folder / "verify.json").read_text())
        assert verify["identical"] and verify["records"] == responses
        result = summary(two_runs, run)
        assert result["counted"] and result["responses"] == responses and result["missing_prompts"] == []
        manifest = json.loads((folder / "MANIFEST.json").read_text())
        assert manifest["files"]["pass_a"]["sha256"] == manifest["files"]["pass_b"]["sha256"] == verify["sha256"]
        assert "created_utc" in manifest and "created_utc" not in result


def test_gpt4_run_reproduces_the_reference_figures(two_runs: Path) -> None:
    result = summary(two_runs, "gpt4_google")
    for name, (correct, total, value) in FACTS_GPT4.items():
        assert result["metrics"][name] == {"correct": correct, "total": total, "value": value}
    assert result["grader"]["kind"] == "upstream" and result["grader"]["upstream"] is True


def test_several_responses_per_prompt_are_averaged_within_the_prompt(two_runs: Path) -> None:
    result = summary(two_runs, "gpt4_x3")
    assert result["samples_per_prompt"] == {"min": 3, "max": 3}
    strict = result["metrics"]["prompt_level_strict_acc"]
    assert strict["total"] == 541
    grades = read_jsonl(two_runs / "results/gpt4_x3/grades.jsonl")
    exact = Fraction(sum(g["strict"]["follow_all_instructions"] for g in grades), 3)
    assert Fraction(strict["correct"]) == exact  # an integer when whole, else "p/q": exact either way
    assert isinstance(strict["correct"], int if exact.denominator == 1 else str)


def test_second_invocation_has_nothing_to_do(two_runs_copy: Path) -> None:
    done = snakemake(two_runs_copy)
    assert "Nothing to be done" in done.stdout + done.stderr


def test_adding_a_run_grades_only_that_run(two_runs_copy: Path) -> None:
    settings = yaml.safe_load((two_runs_copy / "test.yaml").read_text())
    subset = write_jsonl(two_runs_copy / "gpt4_subset.jsonl", read_jsonl(GPT4_RESPONSES)[:40])
    settings["datasets"]["gpt4_subset"] = {"path": str(subset)}
    settings["runs"]["gpt4_subset"] = {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "gpt4_subset"}
    write_config(two_runs_copy, settings)
    planned = snakemake(two_runs_copy, "--dry-run").stdout
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", planned, flags=re.MULTILINE))
    assert jobs["grade_shard"] == "4", planned  # 2 passes x 2 shards, of the new run only
    # compared with its task's first run (the linear default), in the one compare job of the task
    # and prompt set, which makes every pair of the group again (ifaudit.steps.planning.plan.comparison_jobs)
    assert jobs["verify"] == "1" and jobs["stats"] == "1"
    assert jobs["compare_ifeval_ifeval_prompts_github"] == "1"
    assert "environment" not in jobs
    # The task's canary verdict and the prompt set's audit now also cover the new run's grading
    # processes (cheap combines).
    assert jobs["canary"] == "1" and jobs["audit_prompts"] == "1"


def _csv(path: Path) -> list[dict]:
    import csv

    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_report_shows_intervals_published_figures_and_disclosures(two_runs: Path) -> None:
    report = (two_runs / "results/report.md").read_text()
    rows = [r for r in _csv(two_runs / "results/metrics.csv") if r["run"] == "gpt4_google"]
    assert len(rows) == 4
    for row in rows:  # every number in the report is the CSV's number, formatted
        value, low, high = (100 * float(row[k]) for k in ("value", "ci_low", "ci_high"))
        assert f"{value:.2f} [{low:.2f}, {high:.2f}]" in report
        assert float(row["ci_low"]) < float(row["value"]) < float(row["ci_high"])
    for published in ("76.89", "83.57", "79.30", "85.37"):
        assert f"| {published} |" in report
    assert "417 / 541 vs 416 / 541" in report
    assert "prompt 1122: `keywords:letter_frequency` is given letter = '#' but the grader checks 'y'" in report
    assert "prompt 1129: `keywords:letter_frequency` is given letter = '!' but the grader checks 'y'" in report
    assert "at most 0.37 points" in report
    assert "graded by the pinned upstream grader" in report and "registry stand-in" not in report
    assert "Canary `ifeval`: 20 fixed responses regraded in this environment, all agree." in report
    comparison = [r for r in _csv(two_runs / "results/comparisons.csv") if r["comparison"] == "gpt4_google − gpt4_x3"]
    assert {r["metric"] for r in comparison} == set(FACTS_GPT4)
    assert all(float(r["max_shift_from_substitutes"]) > 0 for r in comparison)
    for plot in ("accuracy", "differences", "breakdown/gpt4_google", "breakdown/gpt4_x3"):
        assert (two_runs / f"results/plots/{plot}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert b"<svg" in (two_runs / f"results/plots/{plot}.svg").read_bytes()[:500]


def test_report_is_reproducible_byte_for_byte(two_runs_copy: Path) -> None:
    """Tables, report and plots made again from the same verified outputs are the same bytes."""
    names = [
        "report.md",
        "metrics.csv",
        "comparisons.csv",
        "breakdown.csv",
        "tables.json",
        "plots/accuracy.png",
        "plots/accuracy.svg",
        "plots/differences.png",
        "html/overview.html",
        "html/runs.html",
        "html/published.html",
        "html/comparisons.html",
    ]
    before = {name: (two_runs_copy / "results" / name).read_bytes() for name in names}
    snakemake(two_runs_copy, "--forcerun", "report")
    assert {name: (two_runs_copy / "results" / name).read_bytes() for name in names} == before


def test_html_report_opens_on_the_leaderboard_with_intervals(two_runs_copy: Path) -> None:
    """The first page of Snakemake's report (the workflow description) starts with the leaderboard:
    the runs ranked by the primary metric with its interval, the other metrics and inspect's
    final_acc; then claimed vs audited, the paired comparisons, and only then how the numbers were
    made (the job graph comes below). The runs page holds every metric with its interval and SE."""
    snakemake(two_runs_copy, "--report", "results/report.html")
    html = (two_runs_copy / "results/report.html").read_text(errors="replace")
    for item in ("runs.html", "published.html", "comparisons.html", "accuracy.png", "leaderboard.png", "metrics.csv"):
        assert item in html, item
    first_page = json.loads(re.search(r'var workflow_desc = ("(?:[^"\\]|\\.)*");', html).group(1))
    headings = re.findall(r"<h2[^>]*>(.*?)</h2>", first_page)
    assert headings[:3] == ["Leaderboard", "Claimed vs audited", "Paired comparisons"], headings
    board = first_page[first_page.index(">Leaderboard</h2>") : first_page.index(">Claimed vs audited")]
    rows = _csv(two_runs_copy / "results/metrics.csv")
    strict = {r["run"]: r for r in rows if r["metric"] == "prompt_level_strict_acc" and r["task"] == "ifeval"}
    ranked = sorted(strict, key=lambda run: -float(strict[run]["value"]))
    places = [max(board.find(f"({run})</td>"), board.find(f"<td>{run}</td>")) for run in ranked]
    assert -1 not in places and places == sorted(places)  # ranked by the primary metric, highest first
    for row in rows:  # the primary metric with its interval, the others' values
        value, low, high = (100 * float(row[k]) for k in ("value", "ci_low", "ci_high"))
        cell = f"{value:.2f} [{low:.2f}, {high:.2f}]" if row["metric"] == "prompt_level_strict_acc" else f"{value:.2f}"
        assert f'<td class="num">{cell}</td>' in board, row["metric"]
    google = {r["metric"]: float(r["value"]) for r in rows if r["run"] == "gpt4_google"}
    assert f'<td class="num">{100 * sum(google[m] for m in FACTS_GPT4) / 4:.2f}</td>' in board  # final_acc
    assert first_page.index("Paired comparisons") < first_page.index("How these numbers were made")
    runs_page = (two_runs_copy / "results/html/runs.html").read_text()
    for row in rows:  # every run's every metric, with its interval and clustered SE
        value, low, high, se = (100 * float(row[k]) for k in ("value", "ci_low", "ci_high", "clustered_se"))
        assert f'<td class="num">{value:.2f} [{low:.2f}, {high:.2f}] (SE {se:.2f})</td>' in runs_page, row["metric"]


def test_shard_count_does_not_change_the_grades(two_runs: Path, scenario_run) -> None:
    one_shard = scenario_run("offline_default").workdir  # the default config: shards: 1
    assert yaml.safe_load((REPO / "config/config.yaml").read_text())["shards"] == 1
    assert yaml.safe_load((two_runs / "test.yaml").read_text())["shards"] == 2
    assert (one_shard / "results/gpt4_google/grades.jsonl").read_bytes() == (
        two_runs / "results/gpt4_google/grades.jsonl"
    ).read_bytes()


def test_a_failed_canary_marks_the_runs_not_counted(default_run_copy: Path) -> None:
    workdir = default_run_copy  # the default run finished: its canary and what depends on it run again
    from ifaudit.tasks.canary_files import load_canary

    canary = load_canary("ifeval")
    item = next(i for i in canary["items"] if i["key"] == 1122)
    item["strict"][0] = not item["strict"][0]
    (workdir / "tampered.json").write_text(json.dumps(canary))
    write_config(workdir, {"canary": {"ifeval": str(workdir / "tampered.json")}})
    done = snakemake(workdir, check=False)
    assert done.returncode == 1  # a run that does not count fails the DAG, after everything is written
    assert done.stderr.strip().splitlines()[-1].startswith("ifaudit: error: run gpt4_google NOT COUNTED: ")
    verdict = json.loads((workdir / "results/canary/ifeval.json").read_text())
    assert not verdict["passed"]
    assert verdict["disagreements"] == [
        {
            "key": 1122,
            "sample": 0,
            "mode": "strict",
            "index": 0,
            "instruction_id": item["instruction_id_list"][0],
            "expected": item["strict"][0],
            "got": not item["strict"][0],
            "problem": "grade differs",
        }
    ]
    assert {"python", "packages", "nltk_data", "grader"} <= set(verdict["environment"])
    result = summary(workdir, "gpt4_google")
    assert result["counted"] is False
    assert result["not_counted_because"] == ["canary failed: 1 disagreements in results/gpt4_google/canary.json"]
    # With nothing left to do Snakemake calls no hook and exits 0: `make run` then asks `ifaudit counted`.
    assert "Nothing to be done" in snakemake(workdir).stderr
    again = subprocess.run([IFAUDIT, "counted"], cwd=workdir, capture_output=True, text=True)
    assert again.returncode == 1
    assert again.stderr.splitlines() == [
        "ifaudit: error: run gpt4_google NOT COUNTED: canary failed: 1 disagreements in results/gpt4_google/canary.json"
    ]

    # The same workdir: the second grading pass disagrees on one grade, and verify must fail loudly.
    disagreeing_second_pass(workdir / "results/gpt4_google")
    done = snakemake(workdir, check=False)
    assert done.returncode != 0
    log = (workdir / "logs/gpt4_google/verify.log").read_text()
    assert "grading passes differ" in log and "first differ at line 1" in log
    assert not (workdir / "results/gpt4_google/grades.jsonl").exists()


def test_english_gate_on_gpt4_responses(two_runs: Path) -> None:
    """ifeval_langcheck: a gate verdict per response; gated metrics never above the ungated."""
    canary = json.loads((two_runs / "results/canary/ifeval_langcheck.json").read_text())
    assert canary["passed"]
    grades = read_jsonl(two_runs / "results/gpt4_langcheck/grades.jsonl")
    assert len(grades) == 541 and all(set(g["gate"]) == {"passed", "rule"} for g in grades)
    failed = [g for g in grades if not g["gate"]["passed"]]
    assert len(failed) == 43 and {g["gate"]["rule"] for g in failed} == {"non_english_word", "arabic_punctuation"}
    ungraded = {g["key"]: g for g in read_jsonl(two_runs / "results/gpt4_google/grades.jsonl")}
    assert all(g["strict"] == ungraded[g["key"]]["strict"] for g in grades)  # the gate does not touch grading
    metrics = summary(two_runs, "gpt4_langcheck")["metrics"]
    assert metrics["language_check_acc"]["correct"] == 498
    for mode in ("strict", "loose"):
        for level in ("prompt", "inst"):
            gated, ungated = metrics[f"{level}_level_{mode}_acc"], metrics[f"{level}_level_{mode}_ungated_acc"]
            assert gated["value"] <= ungated["value"]
            assert ungated == summary(two_runs, "gpt4_google")["metrics"][f"{level}_level_{mode}_acc"]
    report = (two_runs / "results/report.md").read_text()
    assert "prompt-level strict (gated)" in report and "language check" in report
    assert "gpt4_langcheck: prompt-level strict (gated) − prompt-level strict" in report


def test_lint_is_clean() -> None:
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "snakemake"),
            "--lint",
            "--configfile",
            str(REPO / "config/config.yaml"),
            str(REPO / "config/offline.yaml"),
            "--config",
            f"mirror={DATA}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Congratulations, your workflow is in a good condition!" in done.stdout + done.stderr


@pytest.mark.parametrize(
    "settings, named",
    [
        ({"shard": 2}, "1: config: shard: unknown key; did you mean 'shards'?\n"),
        (
            {"runs": {"mine": {"task": "ifeval", "prompts": "ifeval_prompts_github", "respones": "x"}}},
            "4: config: runs.mine.respones: unknown key; did you mean 'responses'?\n",
        ),
    ],
)
def test_schema_rejects_a_misspelled_key(tmp_path: Path, settings: dict, named: str) -> None:
    write_config(tmp_path, settings)
    done = snakemake(tmp_path, "--dry-run", check=False)
    assert done.returncode == 2
    # one line, not the schema: the file and line the key was written at
    assert without_profile_note(done.stderr) == f"ifaudit: error: {tmp_path / 'test.yaml'}:{named}"
    assert not (tmp_path / "results").exists()


def test_a_missing_response_file_fails_before_any_job(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        {
            "datasets": {"mine": {"path": str(tmp_path / "nowhere.jsonl")}},
            "runs": {"mine": {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "mine"}},
        },
    )
    done = snakemake(tmp_path, check=False)
    assert done.returncode != 0
    assert f"config: datasets.mine.path: file not found: {tmp_path / 'nowhere.jsonl'}" in done.stdout + done.stderr
    assert not (tmp_path / "results").exists() and not (tmp_path / "resources").exists()


@pytest.mark.parametrize(
    "settings, named",
    [
        (
            {"datasets": {"x": {"mirror": "../../etc/passwd"}}},
            "config: datasets.x.mirror: '../../etc/passwd' leads out of the mirror folder",
        ),
        (
            {"datasets": {"x": {"mirror": "/etc/passwd"}}},
            "config: datasets.x.mirror: '/etc/passwd' leads out of the mirror folder",
        ),
        (
            {"datasets": {"x": {"path": "../outside.jsonl"}}},
            "config: datasets.x.path: '../outside.jsonl' leads out of the project",
        ),
        ({"judgement_store": "../../judgements"}, "config: judgement_store: leads out of the project"),
        ({"datasets": {"../x": {"path": "x.jsonl"}}}, "'../x' does not match"),
    ],
)
def test_config_paths_cannot_escape(tmp_path: Path, settings: dict, named: str) -> None:
    write_config(tmp_path, settings)
    done = snakemake(tmp_path, "--dry-run", check=False)
    assert done.returncode != 0 and named in done.stdout + done.stderr, done.stdout + done.stderr
    assert not (tmp_path / "results").exists()


def test_response_text_is_never_a_path_or_a_command(default_run_copy: Path) -> None:
    """Text that looks like a path or a shell command is graded as text, and nothing else happens."""
    workdir = default_run_copy  # the default run finished: only this test's run is graded
    hostile = ["../../../../etc/passwd", "$(touch pwned) `touch pwned2` ; touch pwned3", "{config[grader]}"]
    records = [
        {"prompt": r["prompt"], "response": text, "sample": index}
        for r in read_jsonl(GPT4_RESPONSES)[:2]
        for index, text in enumerate(hostile)
    ]
    write_config(
        workdir,
        {
            "datasets": {"hostile": {"path": str(write_jsonl(workdir / "hostile.jsonl", records))}},
            "runs": {"hostile": {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "hostile"}},
        },
    )
    snakemake(workdir)
    assert len(read_jsonl(workdir / "results/hostile/grades.jsonl")) == 6
    assert not list(workdir.rglob("pwned*"))


def test_the_stand_in_is_an_explicit_labelled_choice(tmp_path: Path) -> None:
    """`grader: stand-in` on top of the offline config: the same four figures, every output saying
    it is the registry stand-in and not upstream."""
    write_config(tmp_path, {"grader": "stand-in"})
    snakemake(tmp_path)
    result = summary(tmp_path, "gpt4_google")
    for name, (correct, total, value) in FACTS_GPT4.items():
        assert result["metrics"][name] == {"correct": correct, "total": total, "value": value}
    assert result["grader"] == {"kind": "stand-in", "name": "if-verifiable", "upstream": False, "version": "0.1.2"}
    assert result["counted"]  # its canary ran with the stand-in too
    grades = read_jsonl(tmp_path / "results/gpt4_google/grades.jsonl")
    assert all(g["grader"]["upstream"] is False for g in grades)
    report = (tmp_path / "results/report.md").read_text()
    assert "registry stand-in if-verifiable==0.1.2, not the pinned upstream grader" in report


def test_a_file_of_the_report_gone_makes_the_report_again(default_run_copy: Path) -> None:
    """Snakemake reruns a job for the missing outputs some job asks for; the report's files are
    all asked for, so an existing results/ missing one (deleted, or new in this version) is mended."""
    (default_run_copy / "results/plots/leaderboard.svg").unlink()
    planned = snakemake(default_run_copy, "--dry-run").stdout
    assert re.search(r"^report\s+1$", planned, flags=re.MULTILINE), planned
    assert "Missing output files" in planned or "missing output" in planned.lower(), planned
