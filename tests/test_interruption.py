"""Killing a grading job mid-way, then running the DAG again, gives the same bytes as a run that
was never interrupted (atomic writes: a killed job leaves no output that looks finished)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from test_workflow import snakemake, snakemake_call, three_per_prompt, write_config

pytestmark = pytest.mark.e2e


def configure(workdir: Path) -> None:
    write_config(
        workdir,
        {
            "datasets": {"gpt4_x3": {"path": str(three_per_prompt(workdir / "gpt4_x3.jsonl"))}},
            "runs": {"gpt4_x3": {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "gpt4_x3"}},
        },
    )


def start(workdir: Path) -> subprocess.Popen:
    command, env = snakemake_call(workdir, cores=1)
    return subprocess.Popen(
        command, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )


def grading_process(dag: subprocess.Popen, timeout: float = 120) -> psutil.Process:
    """The first `ifaudit grade` job, once it has been working for a moment."""
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
                and "gpt4_x3" in " ".join(command)
            ):
                time.sleep(1.5)  # mid-way: imports done, grading under way (1623 responses take several seconds)
                return child
        time.sleep(0.1)
    raise AssertionError("no grading job started")


@pytest.fixture(scope="module")
def uninterrupted(scenario_run) -> bytes:
    """The same responses' grades from the session's run that was never interrupted (the digest
    check's `comparison` scenario, which grades gpt4_x3.jsonl too; the shard count changes no
    grade, test_workflow.test_shard_count_does_not_change_the_grades)."""
    return (scenario_run("comparison").workdir / "results/gpt4_x3/grades.jsonl").read_bytes()


@pytest.mark.parametrize("how", ["SIGKILL the grading job", "SIGTERM the workflow"])
def test_kill_then_resume_gives_identical_grades(uninterrupted: bytes, default_run_copy: Path, how: str) -> None:
    workdir = default_run_copy  # the default run finished: the DAG has only gpt4_x3 to do
    configure(workdir)
    dag = start(workdir)
    job = grading_process(dag)
    if how.startswith("SIGKILL"):
        job.send_signal(signal.SIGKILL)
    else:
        os.killpg(dag.pid, signal.SIGTERM)
    assert dag.wait(timeout=120) != 0
    passes = workdir / "results/gpt4_x3/passes"
    finished = [p for p in passes.rglob("*.jsonl") if not p.name.startswith(".")] if passes.exists() else []
    for path in finished:  # whatever exists is whole: every line parses
        assert path.read_bytes().endswith(b"\n")
    assert not (workdir / "results/gpt4_x3/grades.jsonl").exists()

    snakemake(workdir, "--rerun-incomplete")
    assert (workdir / "results/gpt4_x3/grades.jsonl").read_bytes() == uninterrupted
    assert not list(passes.rglob(".*.tmp")), "a rerun leaves no temporary file behind"
