"""A batch job: the one-run jobs of many runs, run after run in one process.

A leaderboard of a thousand runs was six thousand jobs, each a process and a job Snakemake plans,
schedules and records, and those costs, not grading, were most of its price. A batch job runs the
very command lines the one-run jobs run (ifaudit.steps.planning.jobs), in one process: a grading
pass of many runs loads its grader, runs the canary and audits each prompt set once
(ifaudit.steps.grading.grade), and every run's files are the bytes its own jobs would write.

A run fails on its own. When a step of a run refuses (bad input: one `ifaudit: error:` line), the
run's next steps are skipped, the line is printed naming the run, and the batch goes on with the
next run. The job still succeeds, so that Snakemake keeps what the other runs made (it removes
every output of a failed job): a failed run's outputs that were not written are left empty, and
the batch's record names the run, its reason and its outputs. The jobs after (the batch's next
step, with `--after`) skip it, and the check of every batch (`check-batches`) removes what it left
and fails the DAG naming it, so nothing of a failed run is left that looks like a result, the
other runs' results stand, and the next start makes the failed run's batch again. A crash (not a
refusal) fails the job, as a one-run job's crash does.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ifaudit.core.errors import IfauditError, InputError
from ifaudit.io.canonical import atomic_write_bytes, write_json
from ifaudit.steps.planning.plan import RESULTS  # where a failed run's files may be left, and removed

RunStep = Callable[[Sequence[str]], int]  # an ifaudit command line run in this process, its exit status


def _text_list(value: Any, where: str, path: Path) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InputError(f"{where} is not a list of text", path=path)
    return value


def read_batch(steps: Any, path: Path) -> tuple[str, str, list[dict[str, Any]]]:
    """The staged batch (its name, its step, and per run its command lines, its outputs and what
    the batch's earlier jobs made of it), checked for shape: a file named on the command line is
    not trusted."""
    if not isinstance(steps, dict) or not isinstance(steps.get("runs"), list):
        raise InputError("not a batch: an object with `batch`, `step` and `runs`", path=path)
    batch, step = steps.get("batch"), steps.get("step")
    if not isinstance(batch, str) or not isinstance(step, str):
        raise InputError("`batch` and `step` must be text", path=path)
    runs = []
    for index, entry in enumerate(steps["runs"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("run"), str):
            raise InputError(f"runs.{index} is not an object naming its `run`", path=path)
        commands = entry.get("steps")
        if not isinstance(commands, list) or not commands:
            raise InputError(f"runs.{index}.steps is not a list of command lines", path=path)
        lines = [_text_list(line, f"runs.{index}.steps", path) for line in commands]
        outputs = _text_list(entry.get("outputs"), f"runs.{index}.outputs", path)
        made_before = _text_list(entry.get("made_before", []), f"runs.{index}.made_before", path)
        for output in (*outputs, *made_before):
            if not _in_results(output):
                raise InputError(f"runs.{index}: {output} is not a file under {RESULTS}/", path=path)
        runs.append({"run": entry["run"], "steps": lines, "outputs": outputs, "made_before": made_before})
    return batch, step, runs


def _in_results(path: str) -> bool:
    parts = Path(path).parts
    return len(parts) > 1 and parts[0] == RESULTS and ".." not in parts and not Path(path).is_absolute()


def failed_runs(records: Sequence[Path]) -> dict[str, dict[str, Any]]:
    """The runs that failed in the batch records `records` (run -> its reason and outputs), in order."""
    failed: dict[str, dict[str, Any]] = {}
    for path in records:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            found = record["failed"]
            if not isinstance(found, dict):
                raise TypeError("`failed` is not an object")
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise InputError(f"not a batch record ({error})", path=path) from None
        for run, failure in found.items():
            failed.setdefault(run, failure)
    return failed


def run_batch(steps: Any, path: Path, run_step: RunStep, after: Sequence[Path], record: Path) -> str:
    """Run the batch staged in `path` (its JSON `steps`), run after run, each run's steps in order;
    the runs that failed in the records `after` are skipped. Writes the batch's record; returns
    its one line."""
    batch, step, runs = read_batch(steps, path)
    failed_before = failed_runs(after)
    failed: dict[str, dict[str, Any]] = {}
    for number, entry in enumerate(runs, start=1):
        run = entry["run"]
        print(f"{batch} {step}: run {number} of {len(runs)}, {run}", flush=True)
        if run in failed_before:
            reason = failed_before[run]["reason"]
        else:
            reason = _run_steps(entry["steps"], run_step)
            if reason is None:
                continue
            print(f"ifaudit: error: run {run}: {reason}", file=sys.stderr, flush=True)
        for output in entry["outputs"]:  # Snakemake keeps a job's outputs only if all are there
            if not Path(output).exists():
                atomic_write_bytes(output, b"")
        left = [*entry["made_before"], *entry["outputs"]]  # what `check-batches` removes
        failed[run] = {"reason": reason, "outputs": list(dict.fromkeys(left))}
    write_json(record, {"batch": batch, "step": step, "runs": [entry["run"] for entry in runs], "failed": failed})
    counted = len(runs) - len(failed)
    return f"{batch} {step}: {counted} of {len(runs)} runs done" + (f", {len(failed)} failed" if failed else "")


def _run_steps(commands: Sequence[Sequence[str]], run_step: RunStep) -> str | None:
    """A run's steps in order, until one refuses: its reason, or None when all succeeded."""
    for command in commands:
        try:
            status = run_step(command)
        except IfauditError as error:
            return str(error)
        if status != 0:
            return f"`ifaudit {command[0]}` ended with exit status {status}"
    return None


def check_batches(records: Sequence[Path], out: Path) -> list[str]:
    """Every batch's last record read: the files its failed runs left removed, and one line per
    failed run (none when every run of every batch is done, and then `out` records it)."""
    failed = failed_runs(records)
    for failure in failed.values():
        for output in failure.get("outputs", []):
            if isinstance(output, str) and _in_results(output):
                Path(output).unlink(missing_ok=True)
    if not failed:
        write_json(out, {"batches": len(records), "failed": {}})
    return [f"run {run} failed in its batch and does not count: {failure['reason']}" for run, failure in failed.items()]
