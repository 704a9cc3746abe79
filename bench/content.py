"""What deciding by content costs a DAG's start (issue 37): the content ledger at N runs.

    .venv/bin/python bench/content.py --results WORKDIR [--runs 1 10 100 300] [--repeat 5]

WORKDIR is a project folder after the offline default run (`make run ARGS="--configfile
config/offline.yaml"`): its results/ and resources/. For each N, a scratch copy holds results/
with the default run's folder and N - 1 copies of it under other names (a run's files, as a
100-run DAG leaves them, without grading them again), and resources/. Then, in this process:

- record (cold): the ledger written from nothing, every file hashed (the first DAG end);
- start (warm): what every later start does, the files listed and each compared by its stat key,
  none read (`ifaudit.steps.planning.content.redo_changed` without changes);
- start after an edit: one run's responses rewritten and back-dated, so that one file is hashed again;
- record (warm): the ledger written again after a DAG that changed nothing.

Times are wall seconds, the median of --repeat; files and bytes are those the ledger holds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ifaudit.io import ledger
from ifaudit.steps.planning import plan

PRODUCTS = (plan.RESULTS, plan.RESOURCES)


def median_seconds(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def scratch_project(source: Path, runs: int, work: Path) -> Path:
    """`work` holding `source`'s resources/ and results/ with `runs` run folders."""
    shutil.copytree(source / plan.RESOURCES, work / plan.RESOURCES, symlinks=True)
    shutil.copytree(source / plan.RESULTS, work / plan.RESULTS, symlinks=True)
    default = work / plan.run_folder("gpt4_google")
    for index in range(1, runs):
        shutil.copytree(default, work / plan.run_folder(f"copy_{index:03d}"), symlinks=True)
    return work


def measure(source: Path, runs: int, repeat: int) -> dict[str, float | int]:
    with tempfile.TemporaryDirectory(prefix="ifaudit-content-") as folder:
        work = scratch_project(source, runs, Path(folder))
        cwd = os.getcwd()
        os.chdir(work)
        try:
            staged = Path(plan.STAGED)

            def cold_record() -> object:
                for old in staged.glob("content-ledger-*.json"):
                    old.unlink()
                return ledger.write(staged, ledger.walk_files(PRODUCTS), {})

            cold = median_seconds(cold_record, repeat)
            recorded = ledger.read(staged) or {}

            def start() -> object:
                ledger.walk_files(PRODUCTS)
                return ledger.changes(ledger.read(staged) or {})

            warm_start = median_seconds(start, repeat)
            responses = Path(plan.run_file("gpt4_google", "grades.jsonl"))

            def edited_start() -> object:
                before = responses.stat()
                responses.write_bytes(responses.read_bytes())  # same bytes, new change time
                os.utime(responses, ns=(before.st_atime_ns, before.st_mtime_ns))
                return start()

            after_edit = median_seconds(edited_start, repeat)
            warm_record = median_seconds(lambda: ledger.write(staged, ledger.walk_files(PRODUCTS), recorded), repeat)
            size = sum(os.path.getsize(path) for path in recorded)
        finally:
            os.chdir(cwd)
    return {
        "runs": runs,
        "files": len(recorded),
        "megabytes": round(size / 1e6, 1),
        "record_cold_s": cold,
        "start_s": warm_start,
        "start_after_edit_s": after_edit,
        "record_warm_s": warm_record,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, required=True, help="a project folder after the default run")
    parser.add_argument("--runs", type=int, nargs="+", default=[1, 10, 100, 300])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print("| runs | files | MB | record, cold | start | start after one edit | record, warm |")
    print("|---|---|---|---|---|---|---|")
    for runs in args.runs:
        m = measure(args.results.resolve(), runs, args.repeat)
        print(
            f"| {m['runs']} | {m['files']} | {m['megabytes']} | {m['record_cold_s']:.3f} s | {m['start_s']:.3f} s "
            f"| {m['start_after_edit_s']:.3f} s | {m['record_warm_s']:.3f} s |"
        )


if __name__ == "__main__":
    main()
