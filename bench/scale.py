"""Many runs in one DAG (issue 29): jobs planned, planning time, the whole pipeline against N bare
upstream runs in the same sitting, and the no-op, for N runs.

    .venv/bin/python bench/scale.py [--shared ../shared] [--runs 1 10 100 300] [--full 1 10 100]
                                    [--pipeline-only] [--work DIR] [--json FILE]

N runs are the offline default run (Google's 541 GPT-4 responses, `gpt4_google`) and N - 1 runs
of the same responses under other names (`copy_001`, ...), with the default comparisons; the DAG
is `config/config.yaml` + `config/offline.yaml` with `grader: upstream` from the shared copy and
`make run`'s Snakemake options on 2 cores, as bench/pipeline.py runs it (its helpers are used
here). For every N:

- resources first (vendored grader, NLTK data, fetched datasets, environment records), not timed;
- planning: `snakemake -n` from an empty results/ (wall, CPU of the process tree, jobs planned);

and for the sizes in --full, in this order:

- upstream: the unmodified `evaluation_main` N times on the 541 responses (bench/pipeline.py);
- pipeline: the whole DAG from an empty results/ (each job's `ifaudit` through bench/shim, so the
  CPU is also split by command);
- `make run` once more, which renders report.html (Snakemake's `--report`);
- no-op: `make run` again with nothing to do, beside Snakemake's own start on an empty workflow
  (one rule, nothing to do; the faster of two).

--pipeline-only leaves out the upstream baseline (for a size too large to run both in a sitting);
--upstream-sample K measures K bare upstream runs per size in the sitting and scales them to N
(every bare run is the same work in a process of its own; the table says when it was scaled).
CPU is user + sys of the whole process tree (getrusage(RUSAGE_CHILDREN)). Offline.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pipeline import BIN, REPO, SHIM, by_command, jobs, make_command, measured, prepared, snakemake_command, upstream  # noqa: E402


def runs_config(runs: int) -> dict:
    """The default run and runs - 1 copies of it under other names."""
    copy = {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "gpt4_responses"}
    return {"runs": {f"copy_{index:03d}": copy for index in range(1, runs)}}


def planned_jobs(output: str) -> int:
    found = re.search(r"^total\s+(\d+)$", output, flags=re.MULTILINE)
    if found is None:
        raise SystemExit(f"scale.py: no job count in Snakemake's dry run:\n{output}")
    return int(found.group(1))


def plan(workdir: Path, shared: Path, env: dict) -> dict:
    """`snakemake -n` as a user types it before any work: wall, CPU and the jobs it plans."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    done = subprocess.run(
        snakemake_command(workdir, shared, "-n"), env=env, cwd=workdir, capture_output=True, text=True, check=True
    )
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {"jobs": planned_jobs(done.stdout), "wall": wall, "cpu": cpu}


def bench_runs(
    runs: int,
    full: bool,
    baseline: bool,
    shared: Path,
    work: Path,
    upstream_copy: Path,
    env: dict,
    baseline_sample: int = 0,
) -> dict:
    workdir = work / f"runs{runs}"
    workdir.mkdir()
    (workdir / "bench.yaml").write_text(json.dumps(runs_config(runs)))
    quiet = {"cwd": workdir, "capture_output": True}
    subprocess.run(snakemake_command(workdir, shared, "--until", "fetch", "environment"), check=True, env=env, **quiet)
    result: dict = {"runs": runs, "plan": plan(workdir, shared, env), "load": os.getloadavg()[0]}
    if not full:
        return result
    if baseline:
        data = shared / "data" / "ifeval"
        prompts, responses = data / "input_data.jsonl", data / "input_response_data_gpt4_20231107_145030.jsonl"
        # Each bare run is the same work in a process of its own: measured `sample` times in the
        # sitting (all N unless --upstream-sample), scaled to N.
        sample = min(runs, baseline_sample or runs)
        cost = upstream(upstream_copy, prompts, responses, sample, work / f"upstream-{runs}", env)
        result["upstream"] = {"cpu": cost.cpu * runs / sample, "wall": cost.wall * runs / sample, "measured": sample}
    log = workdir / "jobs.tsv"
    shimmed = {**env, "PATH": f"{SHIM}{os.pathsep}{env['PATH']}", "IFAUDIT_BENCH_LOG": str(log),
               "IFAUDIT_BENCH_REAL": str(BIN / "ifaudit")}  # fmt: skip
    result["pipeline"] = measured(snakemake_command(workdir, shared), env=shimmed, **quiet).__dict__
    result["html_report"] = measured(make_command(workdir, shared), env=env, **quiet).__dict__
    result["noop"] = measured(make_command(workdir, shared), env=env, **quiet).__dict__
    result["noop_again"] = measured(make_command(workdir, shared), env=env, **quiet).__dict__
    empty = work / "empty"  # Snakemake's own start, on a workflow of one rule with nothing to do
    empty.mkdir(exist_ok=True)
    (empty / "Snakefile").write_text("rule all:\n    input: []\n")
    starts = [measured([str(BIN / "snakemake"), "--cores", "1", "--quiet"], env=env, cwd=empty, capture_output=True)]
    starts.append(
        measured([str(BIN / "snakemake"), "--cores", "1", "--quiet"], env=env, cwd=empty, capture_output=True)
    )
    result["empty_start"] = min(starts, key=lambda cost: cost.wall).__dict__
    result["jobs"] = by_command(jobs(log))
    result["load_after"] = os.getloadavg()[0]
    return result


def markdown(results: list[dict]) -> str:
    lines = [
        "| runs | jobs planned | `snakemake -n` wall (CPU) | N bare upstream runs CPU / wall | whole pipeline CPU / wall "
        "| CPU ratio | wall ratio | report.html (`make run` after the DAG) CPU / wall | no-op `make run` wall "
        "| Snakemake's start on an empty workflow, wall |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        plan_cell = f"{r['plan']['wall']:.1f} s ({r['plan']['cpu']:.1f} s)"
        cells = [str(r["runs"]), str(r["plan"]["jobs"]), plan_cell]
        if "pipeline" in r:
            pipe, up = r["pipeline"], r.get("upstream")
            scaled = (
                f" ({up['measured']} measured, x{r['runs'] / up['measured']:g})"
                if up and up["measured"] < r["runs"]
                else ""
            )
            cells.append(f"{up['cpu']:.0f} s / {up['wall']:.0f} s{scaled}" if up else "not run")
            cells.append(f"{pipe['cpu']:.0f} s / {pipe['wall']:.0f} s")
            cells.append(f"{pipe['cpu'] / up['cpu']:.2f}x" if up else "")
            cells.append(f"{pipe['wall'] / up['wall']:.2f}x" if up else "")
            cells.append(f"{r['html_report']['cpu']:.1f} s / {r['html_report']['wall']:.1f} s")
            cells.append(f"{r['noop']['wall']:.2f} s, {r['noop_again']['wall']:.2f} s")
            empty = r.get("empty_start")
            cells.append(f"{empty['wall']:.2f} s ({empty['cpu']:.2f} s CPU)" if empty else "not run")
        else:
            cells += ["not run"] * 7
        lines.append("| " + " | ".join(cells) + " |")
    for r in results:
        if "jobs" not in r:
            continue
        own = r["pipeline"]["cpu"] - sum(entry["cpu"] for entry in r["jobs"].values())
        lines += ["", f"{r['runs']} runs, CPU by command (summed over its jobs):", "",
                  "| command | jobs | CPU | wall |", "|---|---|---|---|"]  # fmt: skip
        for name, entry in sorted(r["jobs"].items(), key=lambda item: -item[1]["cpu"]):
            lines.append(f"| {name} | {entry['jobs']} | {entry['cpu']:.1f} s | {entry['wall']:.1f} s |")
        lines.append(f"| Snakemake itself (the rest) | | {own:.1f} s | |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--runs", type=int, nargs="+", default=[1, 10, 100, 300], help="sizes to plan")
    parser.add_argument("--full", type=int, nargs="*", default=[1, 10, 100], help="sizes also run end to end")
    parser.add_argument("--pipeline-only", action="store_true", help="no upstream baseline for the --full sizes")
    parser.add_argument(
        "--upstream-sample",
        type=int,
        default=0,
        help="bare upstream runs measured per size, scaled to N (default: all N)",
    )
    parser.add_argument("--work", type=Path, default=None, help="a new folder for the runs (default: a temp folder)")
    parser.add_argument("--json", type=Path, default=None, help="also write the raw measurements here")
    args = parser.parse_args()
    shared = args.shared.resolve()
    work, upstream_copy, env = prepared(shared, args.work, "ifaudit-scale-")
    results = []
    for runs in args.runs:
        results.append(
            bench_runs(
                runs, runs in args.full, not args.pipeline_only, shared, work, upstream_copy, env, args.upstream_sample
            )
        )
        if args.json:  # after each size: the large ones take long
            args.json.write_text(json.dumps(results, indent=1, sort_keys=True))
        print(markdown(results[-1:]), flush=True)
    print(f"\n{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; work folder {work}\n")
    print(markdown(results))


if __name__ == "__main__":
    main()
