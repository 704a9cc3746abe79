"""Time aggregation (per-prompt tables, cluster bootstrap, paired comparison) at 541 prompts
x {1, 5, 20} samples, 10,000 resamples. Offline; uses the reference grades in ../shared/data.

    .venv/bin/python bench/aggregation.py [--shared ../shared] [--repeats 3]

Samples beyond the first are the reference grades with each instruction flipped at random (fixed
seed), so the tables are realistic in size and in how often prompts disagree across samples.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from functools import partial
from pathlib import Path

from ifaudit.steps.grading.analysis import Settings, compare_runs, run_statistics
from ifaudit.core.metrics import score_tables
from ifaudit.tasks.registry import TASKS
from ifaudit.io.prompts import read_prompts


def samples_of(reference: list[dict], count: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    grades = []
    for record in reference:
        for sample in range(count):
            modes = {}
            for mode in ("strict", "loose"):
                followed = [
                    ok if sample == 0 or rng.random() > 0.1 else not ok
                    for ok in record[mode]["follow_instruction_list"]
                ]
                modes[mode] = {"follow_all_instructions": all(followed), "follow_instruction_list": followed}
            grades.append({**record, **modes, "sample": sample})
    return grades


def best_of(repeats: int, work) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    data = args.shared / "data" / "ifeval"
    prompts = read_prompts(data / "input_data.jsonl")
    reference = [json.loads(line) for line in (data / "reference_grades_gpt4.jsonl").open()]

    print(
        f"{'samples':>7} {'responses':>9} {'tables (s)':>10} {'percentile (s)':>14} {'bca (s)':>8} {'paired (s)':>10}"
    )
    for count in (1, 5, 20):
        a, b = samples_of(reference, count, seed=1), samples_of(reference, count, seed=2)
        task = TASKS["ifeval"]
        tables = best_of(args.repeats, partial(score_tables, prompts, a, task.metrics))
        percentile = best_of(args.repeats, partial(run_statistics, task, prompts, a, Settings(seed=1)))
        bca = best_of(args.repeats, partial(run_statistics, task, prompts, a, Settings(seed=1, method="bca")))
        paired = best_of(args.repeats, partial(compare_runs, task, prompts, a, prompts, b, Settings(seed=1)))
        print(f"{count:>7} {len(a):>9} {tables:>10.3f} {percentile:>14.3f} {bca:>8.3f} {paired:>10.3f}")
    print(
        "10,000 resamples each; 'percentile' and 'bca' include the four accuracies, loose-minus-strict "
        "and the per-type breakdown; best of",
        args.repeats,
    )


if __name__ == "__main__":
    main()
