"""Forked grading workers end with their parent: SIGKILL `ifaudit grade --jobs 2` mid-run and
its workers are gone within two seconds (they used to grade on for 5-15 s)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from conftest import GPT4_RESPONSES, IFAUDIT, IFEVAL_PROMPTS, cli_env, grade_args


def children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found.update(int(child) for child in (task / "children").read_text().split())
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU of the process so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def running(pid: int) -> bool:
    """Alive and not a zombie (a dead child its new parent has not reaped yet)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_workers_exit_within_two_seconds_of_their_parent_being_killed(resources: Path, tmp_path: Path) -> None:
    out = tmp_path / "grades.jsonl"
    parent = subprocess.Popen(
        [str(IFAUDIT), *grade_args(IFEVAL_PROMPTS, GPT4_RESPONSES, out, "--jobs", "2")],
        env=cli_env(resources),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while len(workers := children(parent.pid)) < 2:
            assert parent.poll() is None, parent.stderr.read().decode()
            assert time.monotonic() < deadline, "no workers started"
            time.sleep(0.05)
        # The workers are grading: together they do 0.6-1.5 s of CPU work, as the machine goes,
        # so a fifth of a second of it is mid-way on any machine (a pause of wall time was not).
        while sum(cpu_seconds(pid) for pid in workers) < 0.2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert all(running(pid) for pid in workers)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        killed = time.monotonic()
        while any(running(pid) for pid in workers) and time.monotonic() - killed < 2.0:
            time.sleep(0.05)
        left = [pid for pid in workers if running(pid)]
        assert not left, f"workers {left} still running 2 s after their parent was killed"
        assert not out.exists()
    finally:
        if parent.poll() is None:
            parent.kill()
        for pid in children(parent.pid):
            os.kill(pid, signal.SIGKILL)
