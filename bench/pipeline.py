"""The whole audited pipeline against one bare upstream run, measured in the same sitting.

    .venv/bin/python bench/pipeline.py [--shared ../shared] [--sizes 1 5 20] [--repeat 3] [--work DIR]

For each size N (Google's 541 GPT-4 responses repeated as samples 0..N-1; N = 1 is the default
run's own file) it measures, as CPU (user + sys of the whole process tree, from
getrusage(RUSAGE_CHILDREN)) and wall time, everything in `make run`'s environment (.venv-runtime,
built first if missing):

- upstream: the unmodified `evaluation_main` of the pinned grader, run N times on the 541
  responses (it cannot grade several responses per prompt), from a temporary copy on PYTHONPATH;
- `make run`: as the user pays it, the DAG and its HTML report (`make run` with the offline
  default config: `config/config.yaml` + `config/offline.yaml`, grader upstream from the shared
  copy) from a clean `results/`, resources kept (vendor, NLTK data, fetched datasets: a first,
  untimed run makes them); this is the headline ratio;
- pipeline: the same DAG alone (no HTML report) from a clean `results/`, with `make run`'s
  Snakemake options on 2 cores, its jobs timed one by one;
- per job: every `ifaudit` call of that run, through bench/shim/ifaudit (first on PATH), which
  runs the real command under /usr/bin/time; Snakemake's own share is the rest of the CPU; from
  the jobs' start times, the wall before the first job, between jobs and after the last one;
- no-op: `make run` again with nothing to do (Snakemake's check plus the Makefile's report step).

Each size is measured --repeat times, upstream and the pipeline alternating, and the table marks
the repetition with the median `make run` CPU ratio, and prints the medians of both of its ratios
(the machine's speed drifts by tens of percent within minutes, which one pair cannot tell from a
change of code). Ratios are against upstream on the same
responses in the same sitting; absolute times depend on
the machine and its load. Offline; about 5 minutes on 2 idle cores for the default sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shlex
import shutil
import subprocess
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# `make run`'s environment (requirements-runtime.lock, what the image holds): the DAG, its jobs and
# upstream's baseline all run in it, so neither side imports what only the tests need.
RUNTIME = REPO / ".venv-runtime"
BIN = RUNTIME / "bin"
SHIM = Path(__file__).resolve().parent / "shim"
GRADING_JOBS = ("grade", "verify")  # both passes, merged and verified


@dataclass(frozen=True)
class Cost:
    cpu: float
    wall: float


def measured(command: list[str], **kwargs) -> Cost:
    """CPU of the command's whole process tree (every waited-for descendant) and its wall time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, **kwargs)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return Cost(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall)


def upstream(copy: Path, prompts: Path, responses: Path, times: int, work: Path, env: dict) -> Cost:
    total = Cost(0.0, 0.0)
    for index in range(times):
        out = work / f"upstream-{index}"
        out.mkdir(parents=True, exist_ok=True)  # evaluation_main does not create it
        cost = measured(
            [
                str(BIN / "python"),
                "-m",
                "instruction_following_eval.evaluation_main",
                f"--input_data={prompts}",
                f"--input_response_data={responses}",
                f"--output_dir={out}",
            ],
            env={**env, "PYTHONPATH": str(copy)},
            capture_output=True,
        )
        total = Cost(total.cpu + cost.cpu, total.wall + cost.wall)
    return total


def dag_args(workdir: Path, shared: Path) -> list[str]:
    """The Snakefile and the bench's configuration."""
    configs = [str(REPO / "config/config.yaml"), str(REPO / "config/offline.yaml")]
    if (workdir / "bench.yaml").is_file():
        configs.append(str(workdir / "bench.yaml"))
    return [
        "-s",
        str(REPO / "Snakefile"),
        "--configfile",
        *configs,
        "--config",
        f"mirror={shared / 'data'}",
        f"nltk_mirror={shared / 'data' / 'nltk'}",
        "grader=upstream",
        f"grader_sources=[{shared / 'upstream' / 'google_ifeval'}]",
    ]


def makefile_options() -> list[str]:
    """The Snakemake options `make run` gives (the Makefile's SNAKEMAKE line), so the timed DAG
    runs as a user's does while its jobs' `ifaudit` still resolves to the shim."""
    line = re.search(r"^SNAKEMAKE = .*/snakemake (.*) \$\(ARGS\)$", (REPO / "Makefile").read_text(), re.MULTILINE)
    if line is None:
        raise SystemExit(f"pipeline.py: no SNAKEMAKE line in {REPO / 'Makefile'}")
    return shlex.split(line.group(1))


def snakemake_command(workdir: Path, shared: Path, *extra: str) -> list[str]:
    """The DAG with `make run`'s options, on 2 cores."""
    return [str(BIN / "snakemake"), *makefile_options(), "--cores", "2", *dag_args(workdir, shared), *extra]


def make_command(workdir: Path, shared: Path) -> list[str]:
    """`make run` as a user types it, with the bench's configuration passed through ARGS."""
    args = " ".join(dag_args(workdir, shared))
    return ["make", "--no-print-directory", "-f", str(REPO / "Makefile"), "run", f"ARGS={args}"]


def jobs(log: Path) -> list[dict]:
    rows = []
    for line in log.read_text().splitlines():
        name, user, system, wall, out, start = line.split("\t")
        rows.append(
            {
                "command": name,
                "cpu": float(user) + float(system),
                "wall": float(wall),
                "out": out,
                "start": float(start),
            }
        )
    return rows


def chain(rows: list[dict], start: float, wall: float) -> dict:
    """Where the wall time goes around the jobs: Snakemake's start-up until the first job starts,
    the time after the last job ends, and the time in between with no job running."""
    spans = sorted((row["start"] - start, row["start"] - start + row["wall"]) for row in rows)
    idle, reach = 0.0, spans[0][0]
    for begin, end in spans:
        idle += max(0.0, begin - reach)
        reach = max(reach, end)
    return {"first_job": spans[0][0], "after_last_job": wall - reach, "no_job_between": idle}


def sample_file(source: Path, copies: int, path: Path) -> Path:
    originals = [json.loads(line) for line in source.open(encoding="utf-8")]
    rows = [{"prompt": r["prompt"], "response": r["response"], "sample": s} for s in range(copies) for r in originals]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def bench_size(copies: int, repeat: int, shared: Path, work: Path, upstream_copy: Path, env: dict) -> dict:
    data = shared / "data" / "ifeval"
    prompts, responses = data / "input_data.jsonl", data / "input_response_data_gpt4_20231107_145030.jsonl"
    workdir = work / f"x{copies}"
    workdir.mkdir()
    if copies > 1:
        path = sample_file(responses, copies, workdir / f"responses_x{copies}.jsonl")
        name = f"bench_x{copies}"
        (workdir / "bench.yaml").write_text(
            json.dumps({"datasets": {name: {"path": str(path)}}, "runs": {"gpt4_google": {"responses": name}}})
        )
    quiet = {"cwd": workdir, "capture_output": True}
    # The resources a user keeps (vendored grader, NLTK data, fetched datasets, environment
    # records), made first and not timed.
    subprocess.run(snakemake_command(workdir, shared, "--until", "fetch", "environment"), check=True, env=env, **quiet)
    log = workdir / "jobs.tsv"
    shimmed = {
        **env,
        "PATH": f"{SHIM}{os.pathsep}{env['PATH']}",
        "IFAUDIT_BENCH_LOG": str(log),
        "IFAUDIT_BENCH_REAL": str(BIN / "ifaudit"),
    }
    sittings = []
    for _ in range(repeat):  # upstream and the pipeline alternate, so a change of load meets both
        for made in ("results", "logs"):
            shutil.rmtree(workdir / made, ignore_errors=True)
        log.unlink(missing_ok=True)
        up = upstream(upstream_copy, prompts, responses, copies, work / f"upstream-x{copies}", env)
        # `make run` as the user pays it: the DAG and its HTML report, from a clean results/.
        whole = measured(make_command(workdir, shared), env=env, **quiet)
        if not (workdir / "results" / "report.html").is_file():
            raise SystemExit(f"pipeline.py: make run left no report.html in {workdir}")
        noop = measured(make_command(workdir, shared), env=env, **quiet)
        # The DAG alone again, each job's `ifaudit` through the shim: where the time goes.
        for made in ("results", "logs"):
            shutil.rmtree(workdir / made, ignore_errors=True)
        start = time.time()  # the shim's clock
        pipeline = measured(snakemake_command(workdir, shared), env=shimmed, **quiet)
        sittings.append(
            {
                "upstream": up.__dict__,
                "make_run": whole.__dict__,
                "pipeline": pipeline.__dict__,
                "noop": noop.__dict__,
                "jobs": jobs(log),
                "chain": chain(jobs(log), start, pipeline.wall),
                "load": os.getloadavg()[0],
            }
        )
    return {"copies": copies, "sittings": sittings}


def ratio(sitting: dict, what: str, of: str = "make_run") -> float:
    """`of`'s CPU or wall time over upstream's in the same repetition."""
    return sitting[of][what] / sitting["upstream"][what]


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def median_sitting(result: dict) -> dict:
    """The repetition whose `make run` CPU ratio is the median (the lower middle one for an even count)."""
    ordered = sorted(result["sittings"], key=lambda sitting: ratio(sitting, "cpu"))
    return ordered[(len(ordered) - 1) // 2]


def by_command(rows: list[dict]) -> dict[str, dict]:
    table: dict[str, dict] = defaultdict(lambda: {"jobs": 0, "cpu": 0.0, "wall": 0.0})
    for row in rows:
        entry = table[row["command"]]
        entry["jobs"] += 1
        entry["cpu"] += row["cpu"]
        entry["wall"] += row["wall"]
    return dict(table)


def markdown(results: list[dict]) -> str:
    lines = [
        "| responses | upstream CPU / wall | `make run` CPU / wall | its CPU ratio | its wall ratio | "
        "DAG alone CPU / wall | its CPU ratio | 2 passes + verify CPU | its ratio | no-op `make run` wall |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for sitting in r["sittings"]:
            up, whole, pipe = sitting["upstream"], sitting["make_run"], sitting["pipeline"]
            passes = sum(j["cpu"] for j in sitting["jobs"] if j["command"] in GRADING_JOBS)
            mark = " (median)" if sitting is median_sitting(r) and len(r["sittings"]) > 1 else ""
            lines.append(
                f"| {541 * r['copies']}{mark} | {up['cpu']:.1f} s / {up['wall']:.1f} s | "
                f"{whole['cpu']:.1f} s / {whole['wall']:.1f} s | {ratio(sitting, 'cpu'):.2f}x | "
                f"{ratio(sitting, 'wall'):.2f}x | {pipe['cpu']:.1f} s / {pipe['wall']:.1f} s | "
                f"{ratio(sitting, 'cpu', 'pipeline'):.2f}x | {passes:.1f} s | {passes / up['cpu']:.2f}x | "
                f"{sitting['noop']['wall']:.2f} s |"
            )
    lines.append("")
    for r in results:
        sittings = r["sittings"]
        cpu, wall = (median([ratio(s, what) for s in sittings]) for what in ("cpu", "wall"))
        dag = median([ratio(s, "cpu", "pipeline") for s in sittings])
        noops = sorted(s["noop"]["wall"] for s in sittings)
        lines.append(
            f"{541 * r['copies']} responses, median of {len(sittings)}: `make run` {cpu:.2f}x CPU, "
            f"{wall:.2f}x wall of upstream (DAG alone {dag:.2f}x CPU); no-op {noops[0]:.2f}-{noops[-1]:.2f} s."
        )
    for r in results:
        sitting = median_sitting(r)
        rows = by_command(sitting["jobs"])
        total = sum(entry["cpu"] for entry in rows.values())
        upstream_cpu = sitting["upstream"]["cpu"]
        lines += [
            "",
            f"Per job, {541 * r['copies']} responses, the median repetition (CPU and wall summed over "
            "the command's jobs):",
            "",
            "| command | jobs | CPU | wall | CPU / upstream |",
            "|---|---|---|---|---|",
        ]
        for name, entry in sorted(rows.items(), key=lambda item: -item[1]["cpu"]):
            lines.append(
                f"| {name} | {entry['jobs']} | {entry['cpu']:.2f} s | {entry['wall']:.2f} s | "
                f"{entry['cpu'] / upstream_cpu:.2f}x |"
            )
        own = sitting["pipeline"]["cpu"] - total
        lines.append(f"| Snakemake itself (the rest) | | {own:.2f} s | | {own / upstream_cpu:.2f}x |")
        c = sitting["chain"]
        lines += [
            "",
            f"Wall around the jobs: {c['first_job']:.2f} s until the first job starts, "
            f"{c['no_job_between']:.2f} s with no job running in between, {c['after_last_job']:.2f} s "
            f"after the last job ends (of {sitting['pipeline']['wall']:.2f} s).",
        ]
    return "\n".join(lines)


def prepared(shared: Path, work: Path | None, prefix: str) -> tuple[Path, Path, dict[str, str]]:
    """The work folder, a copy of upstream's grader in it, and the environment both sides run in,
    with the runtime venv built and every module compiled before anything is timed."""
    work = work or Path(tempfile.mkdtemp(prefix=prefix))
    work.mkdir(parents=True, exist_ok=True)
    upstream_copy = work / "upstream"
    shutil.copytree(shared / "upstream" / "google_ifeval" / "instruction_following_eval",
                    upstream_copy / "instruction_following_eval")  # fmt: skip
    # Bytecode as a user's second run has it, for ours and upstream's alike: a shell that sets
    # PYTHONDONTWRITEBYTECODE would otherwise have every job compile its modules from source.
    env = {k: v for k, v in os.environ.items() if not k.startswith("IFAUDIT_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(NLTK_DATA=str(shared / "data" / "nltk"), PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}")
    subprocess.run(["make", "--no-print-directory", "-C", str(REPO), ".venv-runtime/.installed"], check=True)
    subprocess.run([str(BIN / "python"), "-m", "compileall", "-q", str(REPO / "src"), str(upstream_copy)], env=env,
                   check=True, capture_output=True)  # fmt: skip
    return work, upstream_copy, env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 5, 20])
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="alternate upstream and the pipeline this many times per size (the table marks the median)",
    )
    parser.add_argument("--work", type=Path, default=None, help="a new folder for the runs (default: a temp folder)")
    parser.add_argument("--json", type=Path, default=None, help="also write the raw measurements here")
    args = parser.parse_args()
    shared = args.shared.resolve()
    work, upstream_copy, env = prepared(shared, args.work, "ifaudit-pipeline-")
    results = [bench_size(copies, args.repeat, shared, work, upstream_copy, env) for copies in args.sizes]
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, sort_keys=True))
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; work folder {work}\n")
    print(markdown(results))


if __name__ == "__main__":
    main()
