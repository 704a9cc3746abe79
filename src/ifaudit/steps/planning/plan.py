"""The run plan's fixed parts, named once: where every file of a run lives (the results layout),
the hash seed of each grading pass, which tasks are judged, and what the report reads.

The workflow (workflow/rules/*.smk) asks these functions for its paths and params, the bundle
verifier replays the same values, and nothing else spells a results path or a pass seed. Each
function takes names, or Snakemake wildcards such as "{run}", and returns the path as a string
relative to the project, so one definition serves the rule's pattern and a concrete run alike.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


RESULTS = "results"
RESOURCES = "resources"
LOGS = "logs"
STAGED = ".snakemake/ifaudit"  # what a job reads that is too long for its command line
# Left by a DAG `make run` ran once it said what `ifaudit counted` says, and every result counted:
# `make run` then does not ask that command again (workflow/rules/common.smk, the Makefile).
COUNTED_SAID = f"{STAGED}/counted-said"
# The pins, relative to the project (a checkout, or a bundle's project/).
GRADER_PIN = "vendor/google_ifeval/pin.toml"  # Google's grader, file by file
INFOBENCH_PIN = "vendor/infobench/pin.toml"  # InFoBench's evaluation.py, by version
# Two grading passes per run, in separate processes; different hash seeds make any dependence on
# dict or set order show up as a difference between them.
PASS_HASH_SEEDS: Mapping[str, str] = {"a": "0", "b": "1"}
# Where the recorded requests and answers go unless the config says otherwise.
DEFAULT_JUDGEMENT_STORE = f"{RESULTS}/judgements"
DEFAULT_GENERATION_STORE = f"{RESULTS}/generations"
# The report step's tables beside report.md, recomputed by the bundle verifier.
REPORT_TABLES = ("report.md", "metrics.csv", "comparisons.csv", "breakdown.csv", "tables.json")


def judged_tasks() -> frozenset[str]:
    """Tasks graded from an LLM judge's recorded verdicts, not by checkers (a task says so itself)."""
    from ifaudit.tasks.registry import TASKS  # here: the layout's other names need no task

    return frozenset(name for name, task in TASKS.items() if task.judged)


def task_pin_file(task: str) -> str:
    """The pin of a task's upstream grader, relative to the project: Google's, or the task's own."""
    from ifaudit.tasks.registry import TASKS

    return TASKS[task].pin_file


def task_refusal(task: str) -> str | None:
    """Why a task cannot grade here at all, in one line (ifaudit.tasks.base.Task.refusal), or None."""
    from ifaudit.tasks.registry import TASKS

    return TASKS[task].refusal()


def task_names() -> list[str]:
    from ifaudit.tasks.registry import TASKS

    return sorted(TASKS)


# --- inputs ---------------------------------------------------------------------------------------


def dataset_file(name: str) -> str:
    return f"{RESOURCES}/data/{name}.jsonl"


def dataset_record(name: str) -> str:
    return f"{RESOURCES}/data/{name}.json"


def environment_record(task: str) -> str:
    return f"{RESOURCES}/environment/{task}.json"


# --- one run ----------------------------------------------------------------------------------------


def run_folder(run: str) -> str:
    return f"{RESULTS}/{run}"


def run_file(run: str, name: str) -> str:
    """A file of the run's folder by name: grades.jsonl, summary.json, stats.json, MANIFEST.json,
    verify.json, canary.json, claims.json, disagreements.csv, judge.json, generation.json,
    responses.jsonl (generated), imported/responses.jsonl, imported/harness.json."""
    return f"{run_folder(run)}/{name}"


def pass_grades(run: str, pass_: str) -> str:
    return run_file(run, f"passes/{pass_}.jsonl")


def shard_grades(run: str, pass_: str, shard: int | str, shards: int | str) -> str:
    return run_file(run, f"passes/{pass_}/shard-{shard}-of-{shards}.jsonl")


def process_record(run: str, pass_: str, kind: str, shard: int | str, shards: int | str) -> str:
    """What one grading process writes beside its shard: its canary verdict or its prompt audit."""
    return run_file(run, f"passes/{pass_}/{kind}-{shard}-of-{shards}.json")


def process_records(kind: str, shards_of: Mapping[str, int]) -> list[str]:
    """`kind` records of every grading process of the runs in `shards_of` (run -> shard count)."""
    return [
        process_record(run, pass_, kind, index, count)
        for run, count in shards_of.items()
        for pass_ in PASS_HASH_SEEDS
        for index in range(count)
    ]


def run_log(run: str, name: str) -> str:
    return f"{LOGS}/{run}/{name}"


# --- across runs ------------------------------------------------------------------------------------


CANARIES = f"{RESULTS}/canary"  # the task-wide canary verdicts (the report's)


def task_canary(task: str) -> str:
    return f"{CANARIES}/{task}.json"


PROMPT_AUDITS = f"{RESULTS}/prompts"
COMPARISONS = f"{RESULTS}/comparisons"


def prompt_audit(dataset: str) -> str:
    return f"{PROMPT_AUDITS}/{dataset}.json"


def comparison_name(a: str, b: str) -> str:
    """A comparison's file inside the comparisons folder (the compare step writes it there)."""
    return f"{a}/{b}.json"


def comparison(a: str, b: str) -> str:
    return f"{COMPARISONS}/{comparison_name(a, b)}"


# `comparisons: all`: every pair of runs of a task on the same prompt set, as before issue 29.
ALL_PAIRS = "all"


def _group(spec: Mapping[str, Any]) -> tuple[str, str]:
    return spec["task"], spec["prompts"]


def _in_config_order(names: Iterable[str], order: Sequence[str]) -> tuple[str, str]:
    first, second = sorted(names, key=order.index)
    return first, second


def comparison_pairs(
    runs: Mapping[str, Mapping[str, Any]], setting: str | Sequence[Sequence[str]] | None
) -> list[tuple[str, str]]:
    """The pairs (A, B) compared as A minus B, in order, each once.

    `setting` is the config's `comparisons`: a list of pairs as given, `all` (every pair of runs of
    a task on the same prompt set), or None for the default: each run against the first run of its
    task and prompt set in the config (the baseline), so the comparisons grow with the runs, not
    with their pairs. A run's own `compare: [run, ...]` names the runs it is compared with instead
    of that default (`compare: []`: none), and adds to a list or `all`. Except in a listed pair,
    A is the run that comes first in the config, as in every pair before."""
    order = list(runs)
    if setting == ALL_PAIRS:
        chosen = [(a, b) for i, a in enumerate(order) for b in order[i + 1 :] if _group(runs[a]) == _group(runs[b])]
    elif setting is None:
        baselines: dict[tuple[str, str], str] = {}
        for run, spec in runs.items():
            baselines.setdefault(_group(spec), run)
        chosen = [
            (baselines[_group(spec)], run)
            for run, spec in runs.items()
            if "compare" not in spec and baselines[_group(spec)] != run
        ]
    else:
        chosen = [(a, b) for a, b in setting]
    chosen += [_in_config_order((run, other), order) for run, spec in runs.items() for other in spec.get("compare", ())]
    return list(dict.fromkeys(chosen))


def _rule_name(text: str, taken: set[str]) -> str:
    """`text` as a Python identifier (a Snakemake rule's name), numbered if another job has it."""
    base = re.sub(r"\W", "_", text)
    name, number = base, 1
    while name in taken:
        name, number = f"{base}_{number}", number + 1
    return name


# The most pairs one compare job writes. Snakemake asks, for each file a job reads, whether it is
# among its producer's inputs and which of the producer's outputs it is, each a walk of a list: a
# job of every pair of a leaderboard made planning quadratic (4,580 runs: 42 million comparisons of
# paths, a third of `snakemake -n`). A pair's bytes do not depend on the pairs beside it.
PAIRS_PER_COMPARE_JOB = 250


def comparison_jobs(runs: Mapping[str, Mapping[str, Any]], pairs: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """The compare jobs: per task and prompt set of the pairs' A runs, in config order, one per
    PAIRS_PER_COMPARE_JOB of its pairs, each with the runs it reads (config order), its pairs, and
    whether those are every pair of them (`all_pairs`, so the command line need not list a
    quadratic number of pairs)."""
    grouped: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for a, b in pairs:
        grouped.setdefault(_group(runs[a]), []).append((a, b))
    jobs: list[dict[str, Any]] = []
    for (task, prompts), all_members in grouped.items():
        parts = range(0, len(all_members), PAIRS_PER_COMPARE_JOB)
        for part, start in enumerate(parts, start=1):
            members = all_members[start : start + PAIRS_PER_COMPARE_JOB]
            named = {run for pair in members for run in pair}
            read = [run for run in runs if run in named]
            every = [(a, b) for i, a in enumerate(read) for b in read[i + 1 :]]
            suffix = f"_part{part}" if len(parts) > 1 else ""
            jobs.append(
                {
                    "task": task,
                    "prompts": prompts,
                    "runs": read,
                    "pairs": members,
                    "all_pairs": members == every,
                    "rule": _rule_name(f"compare_{task}_{prompts}{suffix}", {job["rule"] for job in jobs}),
                    "log": f"{LOGS}/comparisons/{task}/{prompts}{suffix}.log",
                }
            )
    return jobs


def report_file(name: str) -> str:
    """A file of the report: report.md, the tables, plots/<name>, html/<name>."""
    return f"{RESULTS}/{name}"


# The report's per-run plots, one folder (its files <run>.png and <run>.svg).
BREAKDOWN_PLOTS = report_file("plots/breakdown")


def report_plan(
    runs: Mapping[str, Mapping[str, Any]], comparisons: Iterable[tuple[str, str]], prompt_sets: Iterable[str]
) -> dict[str, Any]:
    """What the report reads, by name; the report step trusts only these files. `order` is the
    runs' order in the config (the report's), kept as a list: JSON objects are written with sorted
    keys, so the mapping alone would reach a bundle's verifier in alphabetical order."""
    return {
        "order": list(runs),
        "runs": {
            run: {
                "label": spec.get("label", run),
                "task": spec["task"],
                "prompts": spec["prompts"],
                "published": spec.get("published"),
                "summary": run_file(run, "summary.json"),
                "stats": run_file(run, "stats.json"),
            }
            for run, spec in runs.items()
        },
        "comparisons": [{"a": a, "b": b, "file": comparison(a, b)} for a, b in comparisons],
        "audits": {name: prompt_audit(name) for name in prompt_sets},
        "canaries": {task: task_canary(task) for task in sorted({spec["task"] for spec in runs.values()})},
        "claims": {run: run_file(run, "claims.json") for run, spec in runs.items() if "import" in spec},
    }


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def report_inputs(report: Mapping[str, Any]) -> dict[str, list[str]]:
    """Every file a report plan names, by kind: the report step's inputs. A plan handed in on the
    command line is not trusted, so what is not of a plan's shape is left out here (the report
    step names it when it reads the plan)."""
    runs = [spec for spec in _mapping(report.get("runs")).values() if isinstance(spec, Mapping)]
    comparisons = [item for item in report.get("comparisons") or () if isinstance(item, Mapping)]
    named = {
        "summaries": [spec.get("summary") for spec in runs],
        "stats": [spec.get("stats") for spec in runs],
        "comparisons": [item.get("file") for item in comparisons],
        **{kind: list(_mapping(report.get(kind)).values()) for kind in ("audits", "canaries", "claims")},
    }
    return {kind: [path for path in paths if isinstance(path, str)] for kind, paths in named.items()}


def runs_tables(report: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """The paper's runs tables of the report plan `report`: one per task and prompt set (runs of
    different prompt sets are never set in one table), by (task, prompt set), in the runs' order:
    `paper/runs_<task>.tex` where all of a task's runs share a prompt set, else
    `paper/runs_<task>--<prompt set>.tex`."""
    groups = list(dict.fromkeys((spec["task"], spec["prompts"]) for spec in report["runs"].values()))
    sets = Counter(task for task, _ in groups)
    return {
        (task, prompts): f"paper/runs_{task}.tex" if sets[task] == 1 else f"paper/runs_{task}--{prompts}.tex"
        for task, prompts in groups
    }


def paper_files(report: Mapping[str, Any]) -> list[str]:
    """The files of `paper/` the report step writes for the report plan `report`, relative to the
    results folder, in order (ifaudit.steps.reporting.paper): they depend only on its tasks, their
    prompt sets and its imported runs."""
    return [
        *runs_tables(report).values(),
        "paper/comparisons.tex",
        *(f"paper/claims_{run}.tex" for run in report.get("claims", {})),
        "paper/artifact.md",
    ]


# --- batches: many runs per job ---------------------------------------------------------------------

# Each job is a process and, for Snakemake, a job object planned, scheduled and recorded: about a
# quarter of a second of the submit host's CPU, more than grading a run once. Past a few dozen runs
# the runs of a task are graded, verified and summarized a batch at a time (`batch_runs`), each run's
# files byte for byte those of the one-run jobs (ifaudit.steps.grading.batch).
BATCHES = f"{STAGED}/batches"  # the batch jobs' records: which run failed, and what of it was left
# `batch_runs: auto`: this many batches a task at most, up to 800 runs: a batch's processes (the grader
# loaded, the canary run) and its three jobs cost about as much as grading two runs, so fewer,
# larger batches are cheaper, and eight still keep two cores (or a node's) busy with both passes ...
AUTO_BATCHES = 8
# ... and no batch larger than this, so one batch is a few minutes of one core, not hours.
AUTO_BATCH_RUNS_MAX = 100


def auto_batch_size(runs: int) -> int:
    """`batch_runs: auto` for a config of `runs` runs: 1 (the one-run jobs) up to AUTO_BATCHES runs,
    then the size that makes AUTO_BATCHES batches, at most AUTO_BATCH_RUNS_MAX. It depends on the
    config only, so a laptop and a cluster plan the same jobs."""
    return max(1, min(AUTO_BATCH_RUNS_MAX, -(-runs // AUTO_BATCHES)))


def batches(runs: Mapping[str, Mapping[str, Any]], size: int) -> list[dict[str, Any]]:
    """The batches of `size` runs: per task (one grader, one canary a process), in config order;
    each with its name (a Python identifier: it names the batch's rules) and its runs. Judged runs
    are not batched: their grading reads each run's own verdicts."""
    judged = judged_tasks()
    by_task: dict[str, list[str]] = {}
    for run, spec in runs.items():
        if spec["task"] not in judged:
            by_task.setdefault(spec["task"], []).append(run)
    return [
        {"name": f"{task}_{start // size + 1:04d}", "task": task, "runs": members[start : start + size]}
        for task, members in by_task.items()
        for start in range(0, len(members), size)
    ]


def batch_record(batch: str, step: str) -> str:
    """What a batch job writes beside its runs' files: which runs failed and why (`grade-a`,
    `grade-b`, `finish`)."""
    return f"{BATCHES}/{batch}/{step}.json"


def batch_log(batch: str, step: str) -> str:
    return f"{LOGS}/batches/{batch}/{step}.log"


BATCHES_CHECKED = f"{BATCHES}/checked.json"  # every batch finished, and no run of one failed
