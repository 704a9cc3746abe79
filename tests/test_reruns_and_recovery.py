"""Content decides what runs again, and a user recovers in one step, through the real DAG and
`make run`: a touched input of the same bytes plans no job; the ledger records the bytes the jobs
read, not those on disk after them; a hand-edited ledger, a truncated table, a config switch, two
`make run` at once and a Snakemake killed outright each leave a state the next step clears."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from conftest import GPT4_RESPONSES, IFAUDIT, REPO, read_jsonl, write_jsonl
from test_failures_dag import environment, error_lines, make_run
from test_workflow import snakemake, snakemake_call, summary, write_config

pytestmark = pytest.mark.e2e

MINE = {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "mine"}


def counted(workdir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(IFAUDIT), "counted"], cwd=workdir, env=environment(), capture_output=True, text=True)


def add_mine(workdir: Path, records: list[dict], **settings: object) -> Path:
    """The user's own response file `mine.jsonl`, and a run of it beside the default one."""
    responses = write_jsonl(workdir / "mine.jsonl", records)
    runs = {"mine": MINE, **settings.pop("runs", {})}  # type: ignore[dict-item]
    write_config(workdir, {"datasets": {"mine": {"path": str(responses)}}, "runs": runs, **settings})
    return responses


def test_a_touched_input_of_the_same_bytes_plans_no_job(default_run_copy: Path) -> None:
    """Over Snakemake's checksum size (1 MB) a newer modification time alone reran every job after
    the file (a harness's log touched: the whole run regraded)."""
    workdir = default_run_copy
    logged = [{**record, "harness_trace": "t" * 100_000} for record in read_jsonl(GPT4_RESPONSES)[:12]]
    responses = add_mine(workdir, logged)
    assert responses.stat().st_size > 1_000_000
    snakemake(workdir)
    for path in (responses, workdir / "resources/data/mine.jsonl", workdir / "results/mine/grades.jsonl"):
        os.utime(path)  # `touch`: the same bytes, now
    for _ in range(2):  # the second start finds the new times recorded
        planned = snakemake(workdir, "--dry-run")
        assert "Nothing to be done" in planned.stdout + planned.stderr, planned.stdout[-3000:]
        assert "ifaudit:" not in planned.stderr, planned.stderr


SHIM = """#!/bin/sh
# `ifaudit` as the DAG's jobs call it; the first `summarize` first cuts the response file the run
# was graded from (the fetched copy under resources/data/) to three lines, its modification time
# kept: a file emptied while its run is graded.
if [ "$1" = summarize ] && [ ! -e cut ]; then
  : > cut
  "{python}" - <<'EOF'
import os
name = "resources/data/mine.jsonl"
before = os.stat(name)
with open(name, "rb") as handle:
    lines = handle.readlines()[:3]
with open(name, "wb") as handle:
    handle.writelines(lines)
os.utime(name, ns=(before.st_atime_ns, before.st_mtime_ns))
EOF
fi
exec "{ifaudit}" "$@"
"""


def test_responses_cut_while_graded_are_not_recorded_as_graded(default_run_copy: Path) -> None:
    """The ledger records what the jobs read: grades of twelve responses are never counted beside
    a response file of three (`ifaudit counted` said "counted" over grades of bytes no longer
    there, and every rerun failed on the run's manifest)."""
    workdir = default_run_copy
    add_mine(workdir, read_jsonl(GPT4_RESPONSES)[:12])
    shim = workdir / "shim"
    shim.mkdir()
    (shim / "ifaudit").write_text(SHIM.format(python=sys.executable, ifaudit=IFAUDIT))
    (shim / "ifaudit").chmod(0o755)
    command, env = snakemake_call(workdir)
    env["PATH"] = f"{shim}{os.pathsep}{env['PATH']}"
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True)
    # The run's manifest finds the copy no longer what was fetched, and fails the DAG.
    assert done.returncode != 0 and "changed after it was fetched" in done.stderr, done.stderr[-3000:]
    assert (workdir / "cut").exists() and len(read_jsonl(workdir / "resources/data/mine.jsonl")) == 3
    assert len(read_jsonl(workdir / "results/mine/grades.jsonl")) == 12  # graded before the cut
    # Recorded as the jobs read it (they read twelve responses, and three), never as it is now: not
    # counted meanwhile, and the next run clears it (recorded as it is now, every rerun failed so).
    refused = counted(workdir)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    said = error_lines(refused.stderr)
    copy = "ifaudit: error: resources/data/mine.jsonl: it changed while the DAG's jobs read it (they read different"
    assert any(line.startswith(copy) for line in said), said
    again = snakemake(workdir)  # the copy fetched again from the user's file, the run graded again
    assert "resources/data/mine.jsonl: it changed while the DAG's jobs read it" in again.stderr
    assert len(read_jsonl(workdir / "resources/data/mine.jsonl")) == 12
    assert len(read_jsonl(workdir / "results/mine/grades.jsonl")) == 12
    assert len(summary(workdir, "mine")["missing_prompts"]) == 541 - 12
    assert counted(workdir).returncode == 0


def test_after_a_hand_edited_ledger_the_rerun_makes_everything_again(default_run_copy: Path) -> None:
    """Every file the DAG made is removed; the folders they leave empty go too (an empty
    punkt_tab/english/ made every later run fail on `Directory not empty`)."""
    workdir = default_run_copy
    grades = workdir / "results/gpt4_google/grades.jsonl"
    original = grades.read_bytes()
    (written,) = (workdir / ".snakemake/ifaudit").glob("content-ledger-*.json")
    written.write_bytes(written.read_bytes().replace(b'"kept"', b'"kept" ', 1))
    done = snakemake(workdir, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "the content ledger was changed by hand: every result is made again" in done.stderr
    assert grades.read_bytes() == original
    assert counted(workdir).returncode == 0


def test_a_truncated_table_is_one_line_then_a_clean_rerun(default_run_copy: Path) -> None:
    workdir = default_run_copy
    tables = workdir / "results/tables.json"
    original = tables.read_bytes()
    before = tables.stat()
    tables.write_bytes(original[: len(original) // 2])
    os.utime(tables, ns=(before.st_atime_ns, before.st_mtime_ns))
    refused = counted(workdir)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
    [line] = error_lines(refused.stderr)
    assert line.startswith("ifaudit: error: results/tables.json: ") and "run" in line
    assert refused.stdout == ""  # no headline from a table cut short
    snakemake(workdir)
    assert tables.read_bytes() == original
    assert counted(workdir).returncode == 0


def test_a_bundle_after_switching_configs_asks_one_step(default_run_copy: Path) -> None:
    """The bundle names the earlier config's run folder; once it is removed the bundle is made
    (it took three tries: the ledger then called the removed files changed, and the rerun it asked
    for said "made again" of files it did not make)."""
    workdir = default_run_copy
    add_mine(workdir, read_jsonl(GPT4_RESPONSES)[:12], runs={"gpt4_google": None})
    done = snakemake(workdir)
    assert "made again" not in done.stderr
    bundle = [str(IFAUDIT), "bundle", "--out", str(workdir / "artifact"), "--project", str(REPO), "--allow-dirty"]
    refused = subprocess.run(bundle, cwd=workdir, env=environment(), capture_output=True, text=True)
    assert refused.returncode == 2, refused.stderr
    [line] = error_lines(refused.stderr)
    assert "results/gpt4_google/" in line and "remove them" in line
    shutil.rmtree(workdir / "results/gpt4_google")
    assert counted(workdir).returncode == 0
    bundled = subprocess.run(bundle, cwd=workdir, env=environment(), capture_output=True, text=True)
    assert bundled.returncode == 0, bundled.stderr
    assert (workdir / "artifact/results/mine/grades.jsonl").is_file()
    rerun = snakemake(workdir)
    assert "made again" not in rerun.stderr and "Nothing to be done" in rerun.stdout + rerun.stderr


def _grading_started(dag: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for child in psutil.Process(dag.pid).children(recursive=True):
            try:
                if "grade" in child.cmdline()[2:3]:
                    return
            except (psutil.NoSuchProcess, IndexError):
                continue
        time.sleep(0.1)
    raise AssertionError("no grading job started")


def test_two_make_runs_at_once_and_a_killed_one_recover_in_one_step_each(default_run_copy: Path) -> None:
    workdir = default_run_copy
    assert make_run(workdir).returncode == 0  # the HTML report of the default run
    report = workdir / "results/report.html"
    rendered = report.read_bytes()
    add_mine(workdir, read_jsonl(GPT4_RESPONSES)[:12])
    first = subprocess.Popen(
        ["make", "--no-print-directory", "-f", str(REPO / "Makefile"), "run", f"ARGS={_args(workdir)}"],
        cwd=workdir,
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _grading_started(first)
        second = make_run(workdir, workdir / "test.yaml")
        assert second.returncode != 0
        [line] = error_lines(second.stderr)
        assert "another run is running in this folder (Snakemake, pid " in line, second.stderr
        assert "Traceback" not in second.stderr and report.read_bytes() == rendered
        os.killpg(first.pid, signal.SIGKILL)  # killed outright: Snakemake's lock stays
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    # A plain rerun names the one step; the unlock only unlocks and says so; then a run completes.
    stuck = make_run(workdir, workdir / "test.yaml")
    assert stuck.returncode != 0 and report.read_bytes() == rendered
    [line] = error_lines(stuck.stderr)
    assert 'make run ARGS="--unlock"' in line, stuck.stderr
    unlocked = make_run(workdir, workdir / "test.yaml", extra="--unlock")
    assert unlocked.returncode == 0, unlocked.stdout + unlocked.stderr
    assert "Unlocked working directory" in unlocked.stdout + unlocked.stderr
    assert error_lines(unlocked.stderr) == [] and "counted" not in unlocked.stdout
    assert report.read_bytes() == rendered
    done = make_run(workdir, workdir / "test.yaml")
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(read_jsonl(workdir / "results/mine/grades.jsonl")) == 12


def _args(workdir: Path) -> str:
    from test_failures_dag import MIRRORS, OFFLINE

    return " ".join([*OFFLINE, str(workdir / "test.yaml"), *MIRRORS, "--cores", "2"])


def test_a_changed_copy_of_a_pinned_file_is_said_to_be_removed_not_made_again(default_run_copy: Path) -> None:
    """No job makes a materialized grader file: it is copied again, checked against its pin, when
    a grading process needs it; the line says so (it said "made again")."""
    workdir = default_run_copy
    (pinned,) = (workdir / "resources/vendor/google_ifeval").glob("*/instruction_following_eval/instructions_util.py")
    before = pinned.stat()
    pinned.write_bytes(pinned.read_bytes() + b"\n# edited\n")
    os.utime(pinned, ns=(before.st_atime_ns, before.st_mtime_ns))
    planned = snakemake(workdir, "--dry-run")
    relative = pinned.relative_to(workdir)
    [line] = [line for line in planned.stderr.splitlines() if line.startswith(f"ifaudit: {relative}:")]
    assert line.endswith(": removed; copied again when a job needs it"), line
    assert not pinned.exists()
    add_mine(workdir, read_jsonl(GPT4_RESPONSES)[:12])  # a run to grade: its processes copy it again
    snakemake(workdir)
    assert pinned.read_bytes().endswith(b"\n") and b"# edited" not in pinned.read_bytes()


def test_empty_resource_folders_left_by_an_earlier_version_are_cleared(default_run_copy: Path) -> None:
    """What an earlier version left after a hand-edited ledger (punkt_tab's files removed, its
    folders kept, the ledger recorded again after the failed run): the next run gets punkt_tab
    again instead of failing on `Directory not empty` at every start."""
    workdir = default_run_copy
    punkt = workdir / "resources/nltk_data/tokenizers/punkt_tab"
    for path in [path for path in punkt.rglob("*") if path.is_file()]:
        path.unlink()
    (workdir / "resources/environment/ifeval.json").unlink()  # made again for the run to grade
    add_mine(workdir, read_jsonl(GPT4_RESPONSES)[:12])
    done = snakemake(workdir, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (punkt / "english/sent_starters.txt").is_file()
