"""The report of many runs (issue 53 item 3): the report step and the HTML report at N runs, from
real per-run outputs, without a DAG of N runs.

    .venv/bin/python bench/report_scale.py [--shared ../shared] [--runs 1000] [--work DIR]

A DAG of two runs (the offline default run `gpt4_google` and `copy_001`, its responses under
another name: scale.py's configuration) runs once, end to end. Its `copy_001` results (grades,
summary, statistics, manifest) and its comparison with the default run are then copied to
`copy_002` ... `copy_<N-1>`, and the report plan the DAG staged is widened to the N runs: every
file the report reads is a real output of the pipeline, named as the N-run DAG names it. Then:

- `ifaudit report` on that plan (CPU and wall; the sizes of report.md, the HTML pages and plots);
- headless Chromium's screenshot of each HTML page the report step writes (wall, start to exit).

Snakemake's own report.html is not made here: `--report` of the N-run configuration does not take
the copied files as its DAG's outputs.

Every copy has the same numbers: they share a rank, and the leaderboard is cut at its first runs
all the same. CPU is user + sys of the process tree (getrusage(RUSAGE_CHILDREN)). Offline.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ifaudit.io.canonical import staged_json  # noqa: E402
from pipeline import BIN, REPO, measured, prepared, snakemake_command  # noqa: E402
from scale import runs_config  # noqa: E402


def widened(plan: dict, runs: int) -> dict:
    """The two-run report plan with copy_001 repeated as copy_002 ... copy_<runs - 1>."""
    spec, comparison = plan["runs"]["copy_001"], plan["comparisons"][0]
    names = [f"copy_{index:03d}" for index in range(2, runs)]
    more = {name: json.loads(json.dumps(spec).replace("copy_001", name)) for name in names}
    extra = [json.loads(json.dumps(comparison).replace("copy_001", name)) for name in names]
    return {**plan, "order": plan["order"] + names, "runs": {**plan["runs"], **more},
            "comparisons": plan["comparisons"] + extra}  # fmt: skip


def copied(workdir: Path, runs: int) -> None:
    """copy_001's results and comparison files under every other copy's name."""
    results = workdir / "results"
    comparison = results / "comparisons" / "gpt4_google" / "copy_001.json"
    for index in range(2, runs):
        name = f"copy_{index:03d}"
        shutil.copytree(results / "copy_001", results / name)
        shutil.copyfile(comparison, comparison.with_name(f"{name}.json"))


def chromium(html: Path, out: Path) -> dict:
    """Headless Chromium opening report.html and writing a screenshot of its first screen."""
    command = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={out}",
               "--window-size=1280,900", html.as_uri()]  # fmt: skip
    return measured(command, capture_output=True).__dict__


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--work", type=Path, default=None, help="a new folder (default: a temp folder)")
    args = parser.parse_args()
    shared = args.shared.resolve()
    work, _, env = prepared(shared, args.work, "ifaudit-report-")
    workdir = work / "report"
    workdir.mkdir()
    quiet = {"cwd": workdir, "capture_output": True, "env": env}
    (workdir / "bench.yaml").write_text(json.dumps(runs_config(2)))
    subprocess.run(snakemake_command(workdir, shared), check=True, **quiet)  # type: ignore[call-overload]
    staged = workdir / ".snakemake" / "ifaudit"
    plan = json.loads(next(staged.glob("report-plan*.json")).read_text())
    copied(workdir, args.runs)
    plan_file, digest = staged_json(staged, "report-plan", widened(plan, args.runs))
    results = workdir / "results"
    report = [str(BIN / "ifaudit"), "report", "--plan", str(plan_file), "--plan-sha256", digest, "--out-dir", "results"]
    timed = {"report": measured(report, **quiet).__dict__}
    pages = sorted(results.glob("html/*.html"))
    timed |= {f"chromium {page.name}": chromium(page, work / f"{page.stem}.png") for page in pages}
    sizes = {path.name: path.stat().st_size for path in [results / "report.md", *pages, *results.glob("plots/*.png")]}
    print(json.dumps({"runs": args.runs, "timed": timed, "bytes": sizes}, indent=1))
    print(f"work folder {work}")


if __name__ == "__main__":
    main()
