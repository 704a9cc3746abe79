"""Many runs in one DAG (issue 29): the jobs Snakemake plans grow linearly with the runs, not with
their pairs, and on Slurm a run's small steps are one cluster job. Counted from dry runs of the
real Snakefile with N runs of Google's GPT-4 responses under other names (bench/scale.py times the
same DAGs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO
from test_workflow import snakemake, write_config

pytestmark = pytest.mark.e2e


def runs_config(workdir: Path, runs: int, **settings: object) -> Path:
    """The offline default run and runs - 1 copies of it under other names."""
    workdir.mkdir(parents=True, exist_ok=True)
    copy = {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "gpt4_responses"}
    write_config(workdir, {"runs": {f"copy_{index:03d}": copy for index in range(1, runs)}, **settings})
    return workdir


def planned(workdir: Path, *options: str) -> dict[str, int]:
    """Jobs per rule of the whole DAG as a dry run plans it (Snakemake's `Job stats`)."""
    out = snakemake(workdir, "--dry-run", *options).stdout
    table = out[out.index("Job stats:") :].split("\n\n")[0]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", table, flags=re.MULTILINE))
    return {rule: int(count) for rule, count in counts.items() if rule != "total"}


@pytest.mark.parametrize("comparisons", [None, "all"])
def test_planned_jobs_grow_linearly_with_the_runs(tmp_path: Path, comparisons: str | None) -> None:
    from ifaudit.steps.planning.plan import PAIRS_PER_COMPARE_JOB

    one_run_jobs = {"comparisons": comparisons, "batch_runs": 1}
    counted = {n: planned(runs_config(tmp_path / str(n), n, **one_run_jobs)) for n in (3, 30)}
    # A task's pairs are compared in jobs of at most PAIRS_PER_COMPARE_JOB (rules `..._partN`).
    pairs = 435 if comparisons == "all" else 29
    compare_jobs = [count for rule, count in counted[30].items() if rule.startswith("compare")]
    assert sum(compare_jobs) == -(-pairs // PAIRS_PER_COMPARE_JOB) and set(compare_jobs) == {1}
    assert [rule for rule in counted[3] if rule.startswith("compare")] == ["compare_ifeval_ifeval_prompts_github"]
    few, many = ({rule: n for rule, n in counted[k].items() if not rule.startswith("compare")} for k in (3, 30))
    assert set(few) == set(many)
    per_run = {rule: few[rule] // 3 for rule in few if many[rule] != few[rule]}
    for rule in few:  # each rule either a fixed number of jobs, or the same number for every run
        assert many[rule] in (few[rule], 10 * few[rule]) and few[rule] % (3 if rule in per_run else 1) == 0, rule
    assert per_run == {
        "grade_shard": 2,
        "verify": 1,
        "stats": 1,
        "summarize": 1,
        "manifest": 1,
    }
    assert sum(many.values()) - sum(few.values()) == 27 * sum(per_run.values())


def test_on_slurm_a_cluster_job_per_grading_shard_and_per_run(tmp_path: Path) -> None:
    """The profile's groups: a run's verify, canary verdict, statistics, summary and manifest run
    as one Slurm job; the task's canary, the prompt audit and the report as one more."""
    for runs in (3, 30):
        workdir = runs_config(tmp_path / str(runs), runs, batch_runs=1)
        out = snakemake(workdir, "--dry-run", "--profile", str(REPO / "profiles/slurm"), "--config", "shards=1").stdout
        top = re.findall(r"^\[[^\]]+\]\s*(?:Group job (\w+)|\n(?:rule|checkpoint) (\w+):)", out, flags=re.MULTILINE)
        local = {"fetch", "environment", "workflow_manifest", "all"}
        submitted = [group or rule for group, rule in top if rule not in local]
        assert sorted(set(submitted)) == ["combine", "compare_ifeval_ifeval_prompts_github", "grade_shard", "run"]
        assert (submitted.count("grade_shard"), submitted.count("run"), len(submitted)) == (
            2 * runs,
            runs,
            3 * runs + 2,
        )


def test_in_batches_the_jobs_per_run_fall_far_below_one(tmp_path: Path) -> None:
    """`batch_runs: auto` (issue 53): past 8 runs, 8 batches of three jobs (two grading passes and
    the rest), at most 100 runs each; the jobs that do not grow with the runs are as before."""
    counted = {n: planned(runs_config(tmp_path / str(n), n)) for n in (30, 300)}
    for runs, batches, jobs_per_run in ((30, 8, 1.2), (300, 8, 0.15)):
        jobs = counted[runs]
        per_batch = {rule: count for rule, count in jobs.items() if rule.startswith(("grade_ifeval_", "finish_"))}
        assert len(per_batch) == 3 * batches and set(per_batch.values()) == {1}, jobs
        assert not {"grade_shard", "verify", "stats", "summarize", "manifest"} & set(jobs)
        assert jobs["check_batches"] == 1
        assert sum(jobs.values()) < jobs_per_run * runs, jobs  # six or more a run without batches


def test_the_scheduler_wakes_for_finished_jobs_not_once_a_second_for_each(default_run_copy: Path) -> None:
    """Snakemake's default job rate limit armed a one-second timer on every scheduler pass, and
    each timer's pass armed the next: every finished job woke the scheduler once a second for the
    rest of the run, to stat every ready job's inputs (15,677 passes for 709 jobs at 100 runs).
    The workflow's onstart hook arms the timer only when the limit holds jobs back, which 2 cores
    never reach: a pass per finished job."""
    rerun = ("stats", "summarize", "verify", "manifest")
    done = snakemake(default_run_copy, "--forcerun", *rerun, "--verbose")
    log = done.stdout + done.stderr
    finished = len(re.findall(r"^Finished jobid", log, flags=re.MULTILINE))
    passes = len(re.findall(r"^Ready (?:subsampled )?jobs", log, flags=re.MULTILINE))
    assert finished >= len(rerun), log[-3000:]
    assert 1 <= passes <= finished + 2, (passes, finished)


def test_every_pair_of_sixty_runs_reaches_the_report_through_a_staged_file(tmp_path: Path) -> None:
    """1,770 pairs: the report's plan was once on its command line, past Linux's 128 KiB per
    argument from about 50 runs; the command now names a file by its sha256."""
    import hashlib
    import json
    import shlex

    workdir = runs_config(tmp_path, 60, comparisons="all")
    printed = snakemake(workdir, "--dry-run", "--printshellcmds").stdout
    shell = [line.partition("Shell command: ")[2] for line in printed.splitlines()]
    [command] = [line for line in shell if line.startswith("ifaudit report ")]
    assert len(command) < 1024, len(command)
    argv = shlex.split(command)
    staged = workdir / argv[argv.index("--plan") + 1]
    assert hashlib.sha256(staged.read_bytes()).hexdigest() == argv[argv.index("--plan-sha256") + 1]
    plan = json.loads(staged.read_bytes())
    assert len(plan["comparisons"]) == 60 * 59 // 2 and staged.stat().st_size > 128 * 1024
