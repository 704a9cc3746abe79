"""The run plan's fixed parts, named once: where every file of a run lives (the results layout),
the hash seed of each grading pass, which tasks are judged, and what the report reads.

The workflow (workflow/rules/*.smk) asks these functions for its paths and params, the bundle
verifier replays the same values, and nothing else spells a results path or a pass seed. Each
function takes names, or Snakemake wildcards such as "{run}", and returns the path as a string
relative to the project, so one definition serves the rule's pattern and a concrete run alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ifaudit.tasks.registry import TASKS

RESULTS = "results"
RESOURCES = "resources"
LOGS = "logs"
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
    return frozenset(name for name, task in TASKS.items() if task.judged)


def task_names() -> list[str]:
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


def comparison(a: str, b: str) -> str:
    return f"{COMPARISONS}/{a}/{b}.json"


def report_file(name: str) -> str:
    """A file of the report: report.md, the tables, plots/<name>, html/<name>."""
    return f"{RESULTS}/{name}"


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


def paper_files(report: Mapping[str, Any]) -> list[str]:
    """The files of `paper/` the report step writes for the report plan `report`, relative to the
    results folder, in order (ifaudit.steps.paper): they depend only on its tasks and imported runs."""
    tasks = dict.fromkeys(spec["task"] for spec in report["runs"].values())
    return [
        *(f"paper/runs_{task}.tex" for task in tasks),
        "paper/comparisons.tex",
        *(f"paper/claims_{run}.tex" for run in report.get("claims", {})),
        "paper/artifact.md",
    ]
