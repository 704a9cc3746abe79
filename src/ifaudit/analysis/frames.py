"""`load(results)`: a finished audit's `results/` folder as tidy pandas DataFrames.

Everything is read from the files the report reads (`tables.json`: its metrics, comparisons and
plan; `breakdown.csv`) and from each run's own outputs (`summary.json`, `grades.jsonl`, and for an
imported run `claims.json` and `disagreements.csv`). Nothing is recomputed. Every frame carries the
graders in `DataFrame.attrs`: `attrs["graders"]` maps each run to its grader identity (the
summaries' `kind`, `name`, `version`, `upstream`), and `attrs["grader"]` is that identity when every
run shares it (else None).

Frames, one row per:

- `runs`: run (run, label, task, prompt set, prompts, responses, counted, grader fields);
- `metrics`: run and metric, with the run's prompt set, whether the metric is its task's headline,
  value, interval, SEs and exact counts (`correct` as a float, `correct_exact` as written: `417` or
  `1760/3`);
- `grades`: run, response and instruction and mode (`strict`, `loose`): `followed`, in long form;
- `comparisons`: paired difference (the report's comparisons table);
- `breakdown`: run, instruction type or category, mode (with Wilson intervals);
- `claims`: imported run and metric (reported, recomputed from the harness's verdicts, audited,
  audited − claimed with its interval);
- `disagreements`: imported run and differing verdict, with its cause.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, fields
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd

MODES = ("strict", "loose")


@dataclass(frozen=True)
class Results:
    runs: pd.DataFrame
    metrics: pd.DataFrame
    grades: pd.DataFrame
    comparisons: pd.DataFrame
    breakdown: pd.DataFrame
    claims: pd.DataFrame
    disagreements: pd.DataFrame


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _frame(rows: list[dict[str, Any]], dtypes: dict[str, str]) -> pd.DataFrame:
    """`rows` with exactly the columns `dtypes` names, in its order, each of its dtype (an empty
    frame has them too)."""
    frame = pd.DataFrame(rows, columns=list(dtypes))
    return frame.astype(dtypes)


def _key_dtype(keys: list[Any]) -> str:
    """Prompt keys are integers for IFEval and its kin, strings elsewhere."""
    return "int64" if all(isinstance(key, int) for key in keys) else "string"


def _runs(order: list[str], summaries: dict[str, dict[str, Any]], plan: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for run in order:
        summary, grader = summaries[run], summaries[run]["grader"]
        rows.append(
            {
                "run": run,
                "label": summary["label"],
                "task": summary["task"],
                "prompt_set": plan["runs"][run]["prompts"],
                "prompts": summary["prompts"],
                "responses": summary["responses"],
                "counted": summary["counted"],
                "grader_kind": grader["kind"],
                "grader_name": grader["name"],
                "grader_version": grader["version"],
                "upstream": grader["upstream"],
                "imported": run in plan.get("claims", {}),
            }
        )
    strings = ("run", "label", "task", "prompt_set", "grader_kind", "grader_name", "grader_version")
    return _frame(
        rows,
        {**{name: "string" for name in strings[:4]}, "prompts": "int64", "responses": "int64", "counted": "bool"}
        | {name: "string" for name in strings[4:]}
        | {"upstream": "bool", "imported": "bool"},
    )


def _metrics(records: list[dict[str, Any]]) -> pd.DataFrame:
    rows = [
        {**record, "correct": float(Fraction(str(record["correct"]))), "correct_exact": str(record["correct"])}
        for record in records
    ]
    numbers = ("value", "ci_low", "ci_high", "bootstrap_se", "clustered_se", "correct")
    return _frame(
        rows,
        {"run": "string", "task": "string", "prompt_set": "string", "metric": "string", "title": "string"}
        | {"headline": "boolean"}  # the metric the task's benchmark is quoted by (the leaderboard ranks by it)
        | {name: "float64" for name in numbers}
        | {"correct_exact": "string", "total": "int64", "level": "float64", "interval": "string"}
        | {"resamples": "int64", "published": "float64"},
    )


def _grades(results: Path, order: list[str]) -> pd.DataFrame:
    rows = []
    for run in order:
        for line in (results / run / "grades.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            for mode in (mode for mode in MODES if mode in record):
                followed = record[mode]["follow_instruction_list"]
                for index, (instruction, verdict) in enumerate(zip(record["instruction_id_list"], followed)):
                    rows.append(
                        {
                            "run": run,
                            "key": record["key"],
                            "sample": record["sample"],
                            "index": index,
                            "instruction": instruction,
                            "mode": mode,
                            "followed": verdict,
                        }
                    )
    dtypes = {"run": "string", "key": _key_dtype([row["key"] for row in rows]), "sample": "int64", "index": "int64"}
    return _frame(rows, dtypes | {"instruction": "string", "mode": "string", "followed": "bool"})


def _comparisons(records: list[dict[str, Any]]) -> pd.DataFrame:
    numbers = ("value", "ci_low", "ci_high", "share_a_greater", "bootstrap_se", "clustered_se")
    return _frame(
        records,
        {"comparison": "string", "a": "string", "b": "string", "metric": "string"}
        | {name: "float64" for name in numbers}
        | {"max_shift_from_substitutes": "float64"},
    )


def _breakdown(path: Path) -> pd.DataFrame:
    with path.open(encoding="utf-8", newline="") as table:
        rows = list(csv.DictReader(table))
    return _frame(
        rows,
        {"run": "string", "group": "string", "kind": "string", "mode": "string", "followed": "float64"}
        | {"total": "int64", "value": "float64", "wilson_low": "float64", "wilson_high": "float64"},
    )


def _part(found: dict[str, Any] | None, prefix: str) -> dict[str, Any]:
    found = found or {}
    correct = found.get("correct")
    return {
        f"{prefix}": found.get("value"),
        f"{prefix}_correct": None if correct is None else float(Fraction(str(correct))),
        f"{prefix}_total": found.get("total"),
    }


def _claims(claimed: dict[str, dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for run, found in claimed.items():
        for metric, figures in found["metrics"].items():
            difference = figures["audited_minus_claimed"] or {}
            rows.append(
                {
                    "run": run,
                    "metric": metric,
                    "title": figures["title"],
                    "reported": figures["reported"],
                    **_part(figures["recomputed_from_harness"], "recomputed"),
                    **_part(figures["audited"], "audited"),
                    "audited_minus_claimed": difference.get("value"),
                    "ci_low": difference.get("ci_low"),
                    "ci_high": difference.get("ci_high"),
                    "audited_minus_reported": figures.get("audited_minus_reported"),
                }
            )
    floats = ("reported", "recomputed", "recomputed_correct", "audited", "audited_correct")
    return _frame(
        rows,
        {"run": "string", "metric": "string", "title": "string"}
        | {name: "float64" for name in floats[:3]}
        | {"recomputed_total": "Int64"}
        | {name: "float64" for name in floats[3:]}
        | {"audited_total": "Int64", "audited_minus_claimed": "float64", "ci_low": "float64", "ci_high": "float64"}
        | {"audited_minus_reported": "float64"},
    )


def _disagreements(results: Path, runs: list[str]) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    for run in runs:
        with (results / run / "disagreements.csv").open(encoding="utf-8", newline="") as table:
            rows += [{"run": run, **row} for row in csv.DictReader(table)]
    for row in rows:
        row["key"] = int(row["key"]) if row["key"].lstrip("-").isdigit() else row["key"]
        row["index"] = int(row["index"]) if row["index"] else None  # none: an unexplained count difference
    dtypes = {"run": "string", "key": _key_dtype([row["key"] for row in rows]), "sample": "int64", "mode": "string"}
    return _frame(
        rows,
        dtypes
        | {"index": "Int64", "instruction_id": "string", "harness": "string", "pinned": "string"}
        | {"cause": "string", "detail": "string"},
    )


def load(results: str | Path) -> Results:
    """The audit in the folder `results` (the workflow's `results/`) as tidy DataFrames."""
    results = Path(results)
    tables = _json(results / "tables.json")
    plan = tables["plan"]
    order = plan.get("order", list(plan["runs"]))
    summaries = {run: _json(results / run / "summary.json") for run in order}
    claimed = {run: _json(results / run / "claims.json") for run in order if run in plan.get("claims", {})}
    loaded = Results(
        runs=_runs(order, summaries, plan),
        metrics=_metrics(tables["metrics"]),
        grades=_grades(results, order),
        comparisons=_comparisons(tables["comparisons"]),
        breakdown=_breakdown(results / "breakdown.csv"),
        claims=_claims(claimed),
        disagreements=_disagreements(results, list(claimed)),
    )
    graders = {run: summaries[run]["grader"] for run in order}
    shared = list({json.dumps(grader, sort_keys=True): grader for grader in graders.values()}.values())
    for field in fields(loaded):
        frame = getattr(loaded, field.name)
        frame.attrs["graders"] = graders
        frame.attrs["grader"] = shared[0] if len(shared) == 1 else None
    return loaded
