"""The submit host's CPU per job on a real single-node Slurm cluster, at several numbers of runs in
one DAG (issue 39): what Snakemake pays on the machine it runs on, for each job it hands to Slurm.

    .venv/bin/python bench/slurm.py [--shared ../shared] [--runs 10 50 200] [--responses 20]
                                    [--batch-runs auto] [--work DIR] [--json FILE]

Runs as root: without a cluster (no IFAUDIT_SLURM_WORK), it brings one up on localhost the way
CI's cluster step does (tools/slurm_local.sh: Debian's slurm-wlm and munge, accounting off) and
runs itself inside it; the daemons stop at the end.

N runs are the default run and N - 1 copies of it under other names (bench/scale.py's DAG), each
grading the first --responses of Google's GPT-4 responses: the cluster's work is kept small,
since what is measured is the submit host, not the grading. --batch-runs is the config's
`batch_runs` (auto: a job per run and step up to 8 runs, batches above, docs/scale.md). For each
N, in its own folder:

- the local rules' resources first (vendored grader, NLTK data, fetched datasets, environment
  records: `--until fetch environment`, locally), not timed;
- the DAG through `snakemake --profile profiles/slurm --slurm-no-account
  --slurm-init-seconds-before-status-checks 5 --verbose` (CI's options, and --verbose for the
  scheduler's passes), from an empty results/; its CPU is user + sys of Snakemake's whole process
  tree on the submit host (getrusage(RUSAGE_CHILDREN): Snakemake, its sbatch and squeue calls,
  its local jobs), minus nothing; the Slurm jobs run under slurmd and are not in it.

Counted from Snakemake's output: Slurm jobs submitted ("has been submitted with SLURM jobid"),
jobs finished ("Finished jobid", one per rule of a group job), the scheduler's passes ("Ready
jobs", as tests/test_scaling.py counts them locally) and the passes that found the job rate limit
reached. Per job is per Slurm job submitted; the marginal CPU per run (and per job, when their
number grows) between two sizes leaves out what does not grow with N (Snakemake's start, the local
jobs). From slurmctld's log: the most
of the DAG's submissions (sbatch) slurmctld took in one second of its clock.
"""

from __future__ import annotations

import argparse
from collections import Counter
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pipeline import REPO, dag_args, measured  # noqa: E402

# The environment CI's cluster step runs Snakemake from: it holds the Slurm executor plugin.
BIN = REPO / ".venv" / "bin"
CLUSTER = REPO / "tools" / "slurm_local.sh"
DATASET = "bench_first_responses"
# CI's cluster options (tools/slurm_ci.sh): no accounts, status checks from 5 s after submission.
SLURM_OPTIONS = ("--slurm-no-account", "--slurm-init-seconds-before-status-checks", "5")
COUNTED = {
    "submitted": r"has been submitted with SLURM jobid",
    "finished": r"^Finished jobid",
    "passes": r"^Ready (?:subsampled )?jobs",
    "rate_limited": r"^Job rate limit reached",
}
SUBMITTED_AS = re.compile(r"submitted with SLURM jobid (\d+)")
TAKEN = re.compile(r"^\[([^\]]+)\] _slurm_rpc_submit_batch_job: JobId=(\d+)", flags=re.MULTILINE)


def first_responses(source: Path, count: int, path: Path) -> Path:
    with source.open(encoding="utf-8") as lines:
        path.write_text("".join(next(lines) for _ in range(count)), encoding="utf-8")
    return path


def runs_config(runs: int, responses: Path, batch_runs: str) -> dict:
    """The default run and runs - 1 copies of it under other names, all on `responses`."""
    run = {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": DATASET}
    named = {"gpt4_google": {"responses": DATASET}, **{f"copy_{index:03d}": run for index in range(1, runs)}}
    batching = batch_runs if batch_runs == "auto" else int(batch_runs)
    return {"datasets": {DATASET: {"path": str(responses)}}, "runs": named, "batch_runs": batching}


def counted(log: str) -> dict[str, int]:
    return {name: len(re.findall(pattern, log, flags=re.MULTILINE)) for name, pattern in COUNTED.items()}


def peak_submissions(snakemake_log: str, slurmctld_log: str) -> int:
    """The most of this DAG's sbatch requests slurmctld took in one second (of its log's clock)."""
    ours = set(SUBMITTED_AS.findall(snakemake_log))
    return max(Counter(stamp[:19] for stamp, job in TAKEN.findall(slurmctld_log) if job in ours).values(), default=0)


def bench_runs(runs: int, responses: Path, shared: Path, work: Path, env: dict, batch_runs: str) -> dict:
    workdir = work / f"runs{runs}"
    workdir.mkdir()
    (workdir / "bench.yaml").write_text(json.dumps(runs_config(runs, responses, batch_runs)))
    snakemake = [str(BIN / "snakemake"), *dag_args(workdir, shared)]
    resources = [*snakemake, "--cores", "2", "--until", "fetch", "environment"]
    subprocess.run(resources, check=True, env=env, cwd=workdir, capture_output=True)
    load = os.getloadavg()
    log = workdir / "snakemake.log"
    with log.open("w") as out:
        command = [*snakemake, "--profile", str(REPO / "profiles/slurm"), *SLURM_OPTIONS, "--verbose"]
        cost = measured(command, env=env, cwd=workdir, stdout=out, stderr=subprocess.STDOUT)
    output = log.read_text(encoding="utf-8", errors="replace")
    found = counted(output)
    slurmctld = Path(os.environ["IFAUDIT_SLURM_WORK"]) / "log" / "slurmctld.log"
    found["peak_submissions"] = peak_submissions(output, slurmctld.read_text(errors="replace"))
    if not found["submitted"]:
        raise SystemExit(f"slurm.py: no Slurm job submitted; see {log}")
    return {"runs": runs, "cpu": cost.cpu, "wall": cost.wall, "load_before": load, "load_after": os.getloadavg(),
            "batch_runs": batch_runs, **found}  # fmt: skip


def markdown(results: list[dict]) -> str:
    lines = [
        "| runs | Slurm jobs (per run) | jobs finished | submit host CPU (wall) | CPU per run | CPU per Slurm job "
        "| scheduler passes | passes per finished job | passes at the rate limit | most sbatch in a second "
        "| load average (1, 5, 15 min) before |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        cells = [
            str(r["runs"]),
            f"{r['submitted']} ({r['submitted'] / r['runs']:.2f})",
            str(r["finished"]),
            f"{r['cpu']:.1f} s ({r['wall']:.0f} s)",
            f"{r['cpu'] / r['runs']:.3f} s",
            f"{r['cpu'] / r['submitted']:.3f} s",
            str(r["passes"]),
            f"{r['passes'] / r['finished']:.2f}",
            str(r["rate_limited"]),
            str(r["peak_submissions"]),
            ", ".join(f"{value:.1f}" for value in r["load_before"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    for few, many in zip(results, results[1:]):
        per_run = (many["cpu"] - few["cpu"]) / (many["runs"] - few["runs"])
        jobs = many["submitted"] - few["submitted"]  # none more in batches of a size that grows
        per_job = f", per Slurm job {(many['cpu'] - few['cpu']) / jobs:.3f} s" if jobs else ""
        lines.append(f"\nMarginal CPU from {few['runs']} to {many['runs']} runs: per run {per_run:.3f} s{per_job}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--runs", type=int, nargs="+", default=[10, 50, 200], help="numbers of runs in the DAG")
    parser.add_argument(
        "--batch-runs", default="auto", help="the config's batch_runs (default auto: batches above 8 runs)"
    )
    parser.add_argument("--responses", type=int, default=20, help="the first this many of Google's GPT-4 responses")
    parser.add_argument("--work", type=Path, default=None, help="a new folder for the runs (default: a temp folder)")
    parser.add_argument("--json", type=Path, default=None, help="also write the raw measurements here")
    args = parser.parse_args()
    if "IFAUDIT_SLURM_WORK" not in os.environ:  # no cluster yet: bring one up, run inside it
        os.execvp("bash", ["bash", str(CLUSTER), sys.executable, *sys.argv])
    shared = args.shared.resolve()
    work = args.work.resolve() if args.work else Path(tempfile.mkdtemp(prefix="ifaudit-slurm-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    source = shared / "data" / "ifeval" / "input_response_data_gpt4_20231107_145030.jsonl"
    responses = first_responses(source, args.responses, work / f"first_{args.responses}.jsonl")
    env = {key: value for key, value in os.environ.items() if not key.startswith("IFAUDIT_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env['PATH']}"
    results = []
    for runs in args.runs:
        results.append(bench_runs(runs, responses, shared, work, env, args.batch_runs))
        if args.json:
            args.json.write_text(json.dumps(results, indent=1, sort_keys=True))
        print(markdown(results[-1:]), flush=True)
    print(f"\n{os.cpu_count()} cores; work folder {work}\n")
    print(markdown(results))


if __name__ == "__main__":
    main()
