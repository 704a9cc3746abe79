"""Killing a grading job mid-way, then running the DAG again, gives the same bytes as a run that
was never interrupted (atomic writes: a killed job leaves no output that looks finished). The rerun
is a plain one: the workflow's default profile (profiles/default) redoes the jobs a stopped run
left marked incomplete, and a signal to Snakemake alone (a scheduler's, `timeout`'s, a hang-up)
leaves no lock behind."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from test_workflow import snakemake, snakemake_call, write_config

pytestmark = pytest.mark.e2e

# A second run of the default run's responses: the default run (finished in the copy) holds the
# grades a run never interrupted gives, and the DAG has only this run to do.
RUN = "gpt4_again"


def configure(workdir: Path) -> None:
    write_config(
        workdir, {"runs": {RUN: {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "gpt4_responses"}}}
    )


def start(workdir: Path) -> subprocess.Popen:
    command, env = snakemake_call(workdir, cores=1)
    return subprocess.Popen(
        command, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )


# A grading process of the 541 responses does 1.2-2.5 s of CPU work, as the machine goes: one
# that has done this much is mid-way on any machine (a wall-clock pause was not: on a fast one the
# job had finished and the DAG succeeded before the signal).
MIDWAY_CPU_SECONDS = 0.5


def _cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def grading_process(dag: subprocess.Popen, timeout: float = 120) -> psutil.Process:
    """The first `ifaudit grade` job, once it has done part of its work (MIDWAY_CPU_SECONDS)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for child in psutil.Process(dag.pid).children(recursive=True):
            try:
                command = child.cmdline()
            except psutil.NoSuchProcess:
                continue
            if (
                len(command) > 2
                and command[1].endswith("ifaudit")
                and command[2] == "grade"
                and RUN in " ".join(command)
            ):
                while _cpu_seconds(child) < MIDWAY_CPU_SECONDS:  # its imports and canary under way
                    time.sleep(0.02)
                return child
        time.sleep(0.1)
    raise AssertionError("no grading job started")


@pytest.fixture(scope="module")
def uninterrupted(scenario_run) -> bytes:
    """The same responses' grades from the session's default run, never interrupted."""
    return (scenario_run("offline_default").workdir / "results/gpt4_google/grades.jsonl").read_bytes()


@pytest.mark.parametrize("how", ["SIGKILL the grading job", "SIGTERM the workflow"])
def test_kill_then_resume_gives_identical_grades(uninterrupted: bytes, default_run_copy: Path, how: str) -> None:
    workdir = default_run_copy  # the default run finished: the DAG has only RUN to do
    configure(workdir)
    dag = start(workdir)
    job = grading_process(dag)
    if how.startswith("SIGKILL"):
        job.send_signal(signal.SIGKILL)
    else:
        os.killpg(dag.pid, signal.SIGTERM)
    assert dag.wait(timeout=120) != 0
    passes = workdir / f"results/{RUN}/passes"
    finished = [p for p in passes.rglob("*.jsonl") if not p.name.startswith(".")] if passes.exists() else []
    for path in finished:  # whatever exists is whole: every line parses
        assert path.read_bytes().endswith(b"\n")
    assert not (workdir / f"results/{RUN}/grades.jsonl").exists()

    snakemake(workdir)
    assert (workdir / f"results/{RUN}/grades.jsonl").read_bytes() == uninterrupted
    assert not list(passes.rglob(".*.tmp")), "a rerun leaves no temporary file behind"


def signal_main_process_then_rerun(workdir: Path, number: signal.Signals) -> bytes:
    """The grades of a plain rerun after `number` was sent to Snakemake's main process alone, not
    to its jobs, mid-way through grading (as a batch scheduler or `kill PID` does): the rerun must
    exit 0, with no job left marked incomplete."""
    configure(workdir)
    dag = start(workdir)
    grading_process(dag)
    os.kill(dag.pid, number)
    assert dag.wait(timeout=300) != 0
    snakemake(workdir)  # no --unlock, no --rerun-incomplete
    incomplete = workdir / ".snakemake/incomplete"
    assert not incomplete.exists() or not any(incomplete.iterdir())
    return (workdir / f"results/{RUN}/grades.jsonl").read_bytes()


def test_sigint_to_main_process_then_plain_rerun_completes(uninterrupted: bytes, default_run_copy: Path) -> None:
    """Snakemake waits for its running jobs and exits without recording them: their outputs stay
    marked incomplete (plain rerun: IncompleteFilesException)."""
    assert signal_main_process_then_rerun(default_run_copy, signal.SIGINT) == uninterrupted


def test_sighup_to_main_process_then_plain_rerun_completes(uninterrupted: bytes, default_run_copy: Path) -> None:
    """Python's default for SIGHUP ends Snakemake at once, its lock left (plain rerun: LockException)."""
    assert signal_main_process_then_rerun(default_run_copy, signal.SIGHUP) == uninterrupted


def test_sigterm_to_main_process_then_plain_rerun_completes(uninterrupted: bytes, default_run_copy: Path) -> None:
    """Snakemake's own handler: it finishes the running jobs, then stops."""
    assert signal_main_process_then_rerun(default_run_copy, signal.SIGTERM) == uninterrupted
