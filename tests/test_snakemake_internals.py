"""Snakemake beyond its documented interface is reached in one module only
(ifaudit.io.snakemake_internals), and each thing it reaches is checked here against the
pinned Snakemake: a release that renames or reshapes one fails a test below that names it,
instead of the workflow failing (or silently doing nothing) at run time. Why each stays:
docs/snakemake.md."""

from __future__ import annotations

import json
import os
import shutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from ifaudit.io import snakemake_internals
from ifaudit.io.snakemake_internals import NAMES

MODULE = Path(snakemake_internals.__file__).resolve()

# A workflow of three rules that goes through every function of the module: `made` from nothing,
# `bad` from `made` (it fails when config["fail"] is set), `after` from `bad`.
TOY = r"""
import dataclasses
import json
import threading
from pathlib import Path

from ifaudit.io import snakemake_internals as internals

configfile: "own.yaml"

if internals.runs_the_dag(workflow):
    Path("parsed.json").write_text(json.dumps({
        "overrides": internals.config_overrides(workflow),
        "files": [[Path(p).name for p in paths] for paths in internals.config_files(workflow)],
        "lock_left": internals.lock_left(workflow),
    }))


def timers():
    return [t for t in threading.enumerate() if isinstance(t, threading.Timer)]


def cancelled():
    alive = timers()
    internals.cancel_rescheduling_timers()
    return {"timers": len(alive), "all_cancelled": all(t.finished.is_set() for t in alive)}


onstart:
    internals.relook_only_at_the_rate_limit(workflow)


onsuccess:
    internals.render_html_report(workflow, Path("report.html"))
    Path("onsuccess.json").write_text(json.dumps(
        {"planned": sorted(internals.planned_outputs(workflow)), **cancelled()}))


onerror:
    Path("onerror.json").write_text(json.dumps({
        "failed": [dataclasses.asdict(job) for job in internals.failed_jobs(workflow)],
        "stale": [str(path) for path in internals.outputs_downstream_of_failures(workflow, ())],
        "kept": [str(path) for path in internals.outputs_downstream_of_failures(workflow, ["after"])],
        "unfinished": internals.unfinished_outputs(workflow),
        **cancelled(),
    }))


rule all:
    input: "after.txt"


rule made:
    output: "made.txt"
    shell: "echo made > {output}"


rule bad:
    input: "made.txt"
    output: "bad_{n}.txt"
    log: "logs/bad_{n}.log"
    params: fail=config.get("fail", 0)
    shell: "echo bad > {log}; test {params.fail} = 0 && echo bad > {output}"


rule after:
    input: "bad_1.txt"
    output: "after.txt"
    shell: "echo after > {output}"
"""


def run_toy(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (workdir / "Snakefile").write_text(TOY)
    (workdir / "own.yaml").write_text("own: 1\n")
    (workdir / "given.yaml").write_text("given: 1\n")
    command = [str(Path(sys.executable).parent / "snakemake"), "--cores", "1", "--configfile", "given.yaml", *args]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    # A guard, not a measure: a timer the module failed to cancel would hold the exit for an hour.
    return subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def succeeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("toy")
    done = run_toy(workdir, "--config", "extra=1")
    assert done.returncode == 0, done.stderr
    return workdir


@pytest.fixture(scope="module")
def failed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toy made once, then `bad` forced again and failing, under a user's own rate limit of one
    job an hour: `bad` takes the hour's one slot, so the scheduler arms its re-look for an hour
    later, which would outlive the run."""
    workdir = tmp_path_factory.mktemp("toy_failing")
    assert run_toy(workdir).returncode == 0
    done = run_toy(workdir, "--forcerun", "bad", "--config", "fail=1", "--max-jobs-per-timespan", "1/1h")
    assert done.returncode != 0
    return workdir


def test_no_file_of_the_workflow_or_the_package_but_the_module_names_a_snakemake_internal() -> None:
    files = [REPO / "Snakefile", *sorted((REPO / "workflow").rglob("*.smk")), *sorted((REPO / "src").rglob("*.py"))]
    named = [
        f"{path.relative_to(REPO)}: {name}"
        for path in files
        if path.resolve() != MODULE
        for name in NAMES
        if name in path.read_text(encoding="utf-8")
    ]
    assert not named, named
    module = MODULE.read_text(encoding="utf-8")
    assert all(name in module.split("NAMES = ")[1] for name in NAMES)


def test_the_dag_process_is_told_from_a_job_and_the_config_overrides_from_the_config_files(succeeded: Path) -> None:
    """workflow.is_main_process, workflow.config_settings (config, configfiles), workflow.configfiles."""
    parsed = json.loads((succeeded / "parsed.json").read_text())
    assert parsed["overrides"] == {"extra": 1}
    assert parsed["files"] == [["given.yaml"], ["given.yaml", "own.yaml"]]


def test_a_rate_limit_that_holds_no_job_back_arms_no_timer(succeeded: Path) -> None:
    """workflow.scheduler (its job_rate_limiter, _schedule_reevalutation and _open_jobs) and
    workflow.dag.queue_input_jobs: under Snakemake's default limit, which three jobs never reach,
    the scheduler armed a re-look timer after every pass that saw a ready job; now none."""
    assert json.loads((succeeded / "onsuccess.json").read_text())["timers"] == 0


# Six jobs that can all run at once, for a rate limit of one job a second to hold back.
SIX = r"""
from ifaudit.io import snakemake_internals as internals

onstart:
    internals.relook_only_at_the_rate_limit(workflow)

onsuccess:
    internals.cancel_rescheduling_timers()

rule all:
    input: expand("out_{n}.txt", n=range(6))

rule one:
    output: "out_{n}.txt"
    shell: "echo {wildcards.n} > {output}"
"""


def test_a_binding_rate_limit_holds_and_is_relooked_at_by_one_timer_at_a_time(tmp_path: Path) -> None:
    """A user's limit of one job a second is kept (the scheduler finds it reached), its re-look
    comes (all six jobs run), and the scheduler passes stay within one per finished job and one
    per re-look: Snakemake armed a timer on every pass while jobs waited, and each timer's pass
    armed another, so the re-looks multiplied with the finished jobs."""
    (tmp_path / "Snakefile").write_text(SIX)
    snakemake = str(Path(sys.executable).parent / "snakemake")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    command = [snakemake, "--cores", "6", "--max-jobs-per-timespan", "1/1s", "--verbose"]
    # A guard, not a measure: a limit never looked at again would leave the run waiting.
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    finished = len(re.findall(r"^Finished jobid", log, flags=re.MULTILINE))
    passes = len(re.findall(r"^Ready (?:subsampled )?jobs", log, flags=re.MULTILINE))
    assert finished == 7 and "Job rate limit reached" in log, log[-3000:]
    # One pass to start, one per finished job, and one per re-look: at most one a job selected.
    assert passes <= 1 + finished + 6, (passes, finished)


def test_a_limited_scheduler_arms_timers_and_they_are_cancelled(failed: Path) -> None:
    """The scheduler's re-look is a threading.Timer (a user's limit keeps the limiter), and
    cancelling them lets Snakemake exit: the run above ended instead of waiting an hour."""
    record = json.loads((failed / "onerror.json").read_text())
    assert record["timers"] >= 1 and record["all_cancelled"]


def test_the_html_report_is_rendered_from_the_dag_that_ran(succeeded: Path) -> None:
    """snakemake.report.auto_report, GlobalReportSettings, the html ReportPluginRegistry entry,
    workflow.async_run and workflow.dag."""
    assert "<html" in (succeeded / "report.html").read_text(encoding="utf-8", errors="replace").lower()


def test_the_planned_outputs_are_every_output_of_the_dag(succeeded: Path) -> None:
    """workflow.dag.jobs and each job's output."""
    planned = json.loads((succeeded / "onsuccess.json").read_text())["planned"]
    assert planned == ["after.txt", "bad_1.txt", "made.txt"]


def test_the_failed_jobs_and_what_depends_on_them_are_found(failed: Path) -> None:
    """workflow.scheduler.failed, a job's is_group, rule, wildcards and log; workflow.dag.finished,
    bfs and depending."""
    record = json.loads((failed / "onerror.json").read_text())
    assert record["failed"] == [{"rule": "bad", "wildcards": {"n": "1"}, "logs": ["logs/bad_1.log"]}]
    assert record["stale"] == ["after.txt"]
    assert record["kept"] == []
    # workflow.dag.needrun_jobs: `after` was planned again (its input was to be made again) and
    # never ran; its earlier output is there.
    assert record["unfinished"] == ["after.txt"]


def test_a_lock_left_by_a_killed_snakemake_is_seen_while_the_snakefile_is_parsed(
    succeeded: Path, tmp_path: Path
) -> None:
    """.snakemake/locks: none after a run that ended; one a Snakemake killed outright leaves."""
    assert json.loads((succeeded / "parsed.json").read_text())["lock_left"] is False
    workdir = tmp_path / "toy"
    shutil.copytree(succeeded, workdir)
    (workdir / ".snakemake/locks").mkdir(exist_ok=True)
    (workdir / ".snakemake/locks/0.output.lock").write_text(str(workdir / "after.txt") + "\n")
    run_toy(workdir, "--dry-run")
    assert json.loads((workdir / "parsed.json").read_text())["lock_left"] is True


UNRECORDED = r"""
from ifaudit.io import snakemake_internals as internals

rule made:
    output: "made.txt"
    params: flag=internals.Unrecorded([config["flag"]]), kept=config["kept"]
    shell: "echo made {params.flag} > {output}"
"""


def test_an_unrecorded_param_reruns_nothing_when_it_changes_and_a_recorded_one_does(tmp_path: Path) -> None:
    """Snakemake leaves a param it cannot record out of its params rerun trigger (generate's
    --replay-only): changing it plans no job, while changing a plain param still does."""
    (tmp_path / "Snakefile").write_text(UNRECORDED)
    snakemake = str(Path(sys.executable).parent / "snakemake")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [snakemake, "--cores", "1", "--workflow-profile", "none", *args]
        return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)

    assert run("--config", "flag=--a", "kept=1").returncode == 0
    assert (tmp_path / "made.txt").read_text() == "made --a\n"
    unrecorded_changed = run("-n", "--config", "flag=--b", "kept=1")
    assert unrecorded_changed.returncode == 0
    assert "Nothing to be done" in unrecorded_changed.stdout + unrecorded_changed.stderr
    recorded_changed = run("-n", "--config", "flag=--a", "kept=2")
    assert "Nothing to be done" not in recorded_changed.stdout + recorded_changed.stderr
    assert "made" in recorded_changed.stdout + recorded_changed.stderr
