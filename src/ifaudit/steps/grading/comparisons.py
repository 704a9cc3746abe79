"""The compare step of one task and prompt set: every pair the run plan names (ifaudit.steps.planning.plan.
comparison_pairs), in one process, each pair's file the same bytes `ifaudit compare` writes for it.

One process per task instead of one per pair: the pairs grow with the square of the runs, and
each process paid its start-up and the bootstrap of both its runs; here each run's bootstrap is
computed once (ifaudit.steps.grading.analysis.compare_many).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ifaudit.core.errors import InputError
from ifaudit.io.canonical import all_or_nothing, write_json
from ifaudit.steps.grading.analysis import Settings, compare_many
from ifaudit.steps.planning.plan import comparison_name
from ifaudit.steps.grading.summary import read_grades
from ifaudit.tasks.base import Task


def every_pair(runs: Sequence[str]) -> list[tuple[str, str]]:
    """Each pair of `runs` once, A before B in the given order (`comparisons: all`)."""
    return [(a, b) for index, a in enumerate(runs) for b in runs[index + 1 :]]


def write_comparisons(
    task: Task,
    runs: Sequence[str],
    grades: Sequence[Path],
    prompts: Sequence[Path],
    pairs: Sequence[tuple[str, str]],
    settings: Settings,
    out_dir: Path,
) -> list[Path]:
    """Compare `pairs` of `runs` (their grades and prompt sets given in the same order) and write
    each pair's file under `out_dir`; all of them or, on any failure, none."""
    if not len(runs) == len(grades) == len(prompts):
        raise InputError(f"{len(runs)} runs, {len(grades)} grade files and {len(prompts)} prompt sets; give one each")
    if len(set(runs)) != len(runs):
        raise InputError("a run is named twice", field="runs")
    unknown = sorted({run for pair in pairs for run in pair} - set(runs))
    if unknown:
        raise InputError(f"pairs name runs not given with --runs: {', '.join(unknown)}", field="pairs")
    prompt_sets = {path: task.read_prompts(path) for path in dict.fromkeys(prompts)}  # each file once
    named = {run: (prompt_sets[path], read_grades(grade)) for run, grade, path in zip(runs, grades, prompts)}
    results = compare_many(task, {run: named[run] for run in runs}, pairs, settings)
    written = []
    with all_or_nothing():
        for (a, b), result in zip(pairs, results):
            written.append(out_dir / comparison_name(a, b))
            write_json(written[-1], result)
    return written
