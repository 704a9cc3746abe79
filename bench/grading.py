"""Grading throughput, measured against baselines on the same responses in the same run.

    .venv/bin/python bench/grading.py [--shared ../shared] [--sizes 1 5 20]

At 541 x {1, 5, 20} responses (Google's GPT-4 responses repeated as samples) it times:
- baseline: one process, one strict + loose pass over the same checkers, nothing else (no
  seeding, no records, no files); the floor any driver of these checkers has;
- ours, one pass, in process: ifaudit's driver (seeding, canonical records), one core;
- ours as the product runs it: two `ifaudit grade` passes as separate processes plus
  `ifaudit verify`, with 1 and with 2 worker processes per pass (wall time, start-up included);
- upstream: the unmodified `evaluation_main.py`, run once per 541 responses (it cannot grade
  several responses per prompt), when IFAUDIT_GRADER_SOURCE points at a copy of the pinned files.

The checkers are the pinned upstream ones when IFAUDIT_GRADER_SOURCE is set, else the labelled
stand-in (if-verifiable==0.1.2). Offline; about three minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from ifaudit.tasks.graders import load_stand_in, load_upstream
from ifaudit.tasks.grading import build_instruction, canonical_order, grade_all, loose_variants
from ifaudit.io.remote.nltk_data import resolve_punkt
from ifaudit.io.remote.pins import default_sources, load_pin
from ifaudit.io.prompts import read_prompts
from ifaudit.io.responses import read_responses
from ifaudit.tasks.registry import TASKS

REPO = Path(__file__).resolve().parents[1]
IFAUDIT = Path(sys.executable).parent / "ifaudit"


def baseline(registry, by_key, responses) -> None:
    for response in responses:
        prompt = by_key[response.key]
        for texts in ([response.text], loose_variants(response.text)):
            for index in range(len(prompt.instruction_id_list)):
                checker = build_instruction(registry, prompt, index)
                any(text.strip() and checker.check_following(text) for text in texts)


def timed(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def product(prompts: Path, responses: Path, folder: Path, grader: str, jobs: int, env: dict) -> float:
    """Two grading passes in separate processes, then verify: what each DAG run does."""

    def run() -> None:
        for name in ("a", "b"):
            subprocess.run(
                [
                    str(IFAUDIT),
                    "grade",
                    "--quiet",
                    "--grader",
                    grader,
                    "--jobs",
                    str(jobs),
                    "--prompts",
                    str(prompts),
                    "--responses",
                    str(responses),
                    "--out",
                    str(folder / f"{name}-0.jsonl"),
                ],
                check=True,
                env=env,
                stderr=subprocess.DEVNULL,
            )
        subprocess.run(
            [
                str(IFAUDIT),
                "verify",
                "--first",
                str(folder / "a-0.jsonl"),
                "--second",
                str(folder / "b-0.jsonl"),
                "--first-out",
                str(folder / "a.jsonl"),
                "--second-out",
                str(folder / "b.jsonl"),
                "--out",
                str(folder / "grades.jsonl"),
                "--record",
                str(folder / "verify.json"),
            ],
            check=True,
            env=env,
            stderr=subprocess.DEVNULL,
        )

    return timed(run)


def upstream_main(source: Path, prompts: Path, responses: Path, copies: int, folder: Path, env: dict) -> float:
    def run() -> None:
        for copy in range(copies):
            (folder / f"upstream{copy}").mkdir(exist_ok=True)  # evaluation_main does not create it
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "instruction_following_eval.evaluation_main",
                    f"--input_data={prompts}",
                    f"--input_response_data={responses}",
                    f"--output_dir={folder / f'upstream{copy}'}",
                ],
                check=True,
                capture_output=True,
                env={**env, "PYTHONPATH": str(source)},
            )

    return timed(run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 5, 20])
    args = parser.parse_args()
    data = args.shared / "data"
    prompts_path = data / "ifeval" / "input_data.jsonl"
    responses_path = data / "ifeval" / "input_response_data_gpt4_20231107_145030.jsonl"
    work = Path(tempfile.mkdtemp(prefix="ifaudit-bench-"))
    env = {**os.environ, "IFAUDIT_RESOURCES": str(work / "resources"), "NLTK_DATA": str(data / "nltk")}
    resolve_punkt(work / "resources" / "nltk_data", data / "nltk")
    source = os.environ.get("IFAUDIT_GRADER_SOURCE")
    if source:
        pin = load_pin(REPO / "vendor/google_ifeval/pin.toml")
        registry, grader = (
            load_upstream(pin, work / "resources/vendor/google_ifeval", default_sources(pin, [], offline=True)),
            "upstream",
        )
    else:
        registry, grader = load_stand_in(), "stand-in"
    prompts = read_prompts(prompts_path)
    by_key = {p.key: p for p in prompts}
    originals = [json.loads(line) for line in responses_path.open()]
    warm_up = canonical_order(prompts, read_responses(responses_path, prompts))[:60]
    baseline(registry, by_key, warm_up)  # load punkt and langdetect's profiles before any timing
    grade_all(registry, TASKS["ifeval"], prompts, warm_up)
    print(f"checkers: {registry.name}@{registry.version} ({grader}); {os.cpu_count()} cores\n")
    header = (
        f"{'responses':>9} | {'baseline r/s':>12} | {'ours 1 pass r/s':>15} | {'ours / baseline':>15} | "
        f"{'2 passes + verify, 1 job':>24} | {'2 jobs':>7} | {'speed-up':>8} | {'upstream main':>13} | {'ours / upstream':>15}"
    )
    print(header)
    print("-" * len(header))
    for copies in args.sizes:
        rows = [
            {"prompt": r["prompt"], "response": r["response"], "sample": s} for s in range(copies) for r in originals
        ]
        path = work / f"responses_x{copies}.jsonl"
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        responses = canonical_order(prompts, read_responses(path, prompts))
        base = timed(partial(baseline, registry, by_key, responses))
        ours = timed(partial(grade_all, registry, TASKS["ifeval"], prompts, responses))
        folder1, folder2 = work / f"p1_{copies}", work / f"p2_{copies}"
        folder1.mkdir()
        folder2.mkdir()
        one_job = product(prompts_path, path, folder1, grader, 1, env)
        two_jobs = product(prompts_path, path, folder2, grader, 2, env)
        assert (folder1 / "grades.jsonl").read_bytes() == (folder2 / "grades.jsonl").read_bytes()
        n = len(responses)
        upstream = ours_vs_upstream = "n/a"
        if source:
            seconds = upstream_main(Path(source), prompts_path, responses_path, copies, work, env)
            upstream, ours_vs_upstream = f"{seconds:.1f} s", f"{one_job / seconds:.2f}x"
        print(
            f"{n:>9} | {n / base:>12.0f} | {n / ours:>15.0f} | {ours / base:>14.2f}x | {one_job:>22.1f} s | "
            f"{two_jobs:>5.1f} s | {one_job / two_jobs:>7.2f}x | {upstream:>13} | {ours_vs_upstream:>15}"
        )
    print("\nours / baseline: the driver's cost per response over the bare checkers (target <= 1.2x, one core).")
    print("2 passes + verify: wall time of what a DAG run does; speed-up: 1 job over 2 jobs per pass.")
    if not source:
        print("upstream: n/a (set IFAUDIT_GRADER_SOURCE to a copy of the pinned grader files to compare).")


if __name__ == "__main__":
    main()
