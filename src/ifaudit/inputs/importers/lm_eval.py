"""EleutherAI lm-evaluation-harness: `--log_samples` output and its `results_*.json`.

A samples file holds one JSON object per document: `doc` (the harness's copy of the prompt),
`resps` (what the model generated: one list per request, one text per repeat), `filtered_resps`
(what the harness graded, after its filters) and one field per metric with the harness's verdict
(`prompt_level_strict_acc`: bool, `inst_level_strict_acc`: one bool per instruction, and loose).
The results file holds the reported aggregates under `results.<task>."<metric>,<filter>"` and the
run's provenance (`lm_eval_version`, `config.model_args`, `date`, ...).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ifaudit.core.errors import InputError
from ifaudit.inputs.importers.model import (
    IFEVAL_METRICS,
    HarnessLog,
    HarnessSample,
    as_bool_list,
    one_model,
    unique_samples,
)
from ifaudit.io.jsonl import iter_objects, require
from ifaudit.io.paths import open_input

VERDICT_FIELDS = {"strict": "inst_level_strict_acc", "loose": "inst_level_loose_acc"}


def sample_from_record(obj: dict[str, Any], where: str) -> list[HarnessSample]:
    """The responses of one logged document: one per repeat; the verdicts belong to the first
    (lm-eval grades `filtered_resps[0]`)."""
    doc = obj.get("doc")
    if not isinstance(doc, dict):
        raise InputError("missing or not an object", path=where, field="doc")
    if "instruction_id_list" not in doc or "key" not in doc:
        raise InputError(
            "is not an IFEval document (no 'key' or 'instruction_id_list'); this log is of another task",
            path=where,
            field="doc",
        )
    missing = [name for name in VERDICT_FIELDS.values() if name not in obj]
    if missing:
        raise InputError(
            "missing: the harness's IFEval verdicts are not in this record; "
            "this log is of another task or was not written with --log_samples",
            path=where,
            field=missing[0],
        )
    resps = obj.get("resps")
    if not (
        isinstance(resps, list)
        and resps
        and isinstance(resps[0], list)
        and resps[0]
        and all(isinstance(text, str) for text in resps[0])
    ):
        raise InputError("expected a list holding a list of generated texts", path=where, field="resps")
    filtered = obj.get("filtered_resps")
    graded = filtered[0] if isinstance(filtered, list) and filtered and isinstance(filtered[0], str) else None
    if graded is None and isinstance(filtered, list) and filtered and isinstance(filtered[0], list) and filtered[0]:
        graded = filtered[0][0] if isinstance(filtered[0][0], str) else None
    verdicts = {mode: as_bool_list(obj[name], where, name) for mode, name in VERDICT_FIELDS.items()}
    key = doc["key"]
    return [
        HarnessSample(
            key=key,
            sample=index,
            response=text,
            where=where,
            graded_text=graded if index == 0 else None,
            doc=doc,
            verdicts=verdicts if index == 0 else None,
        )
        for index, text in enumerate(resps[0])
    ]


def read_samples(path: Path) -> list[HarnessSample]:
    samples: list[HarnessSample] = []
    for line, obj in iter_objects(path):
        samples.extend(sample_from_record(obj, f"{path}:{line}"))
    return samples


def _reported(results: dict[str, Any], path: Path) -> tuple[str, dict[str, float]]:
    """The task's reported IFEval aggregates: `results.<task>."<metric>,<filter>"`."""
    tasks = require(results, "results", dict, path, 1)
    for task, figures in sorted(tasks.items()):
        if not isinstance(figures, dict):
            continue
        found = {}
        for name, value in figures.items():
            metric = name.split(",", 1)[0]
            if metric in IFEVAL_METRICS and isinstance(value, int | float) and not isinstance(value, bool):
                found[metric] = float(value)
        if found:
            return task, found
    raise InputError(
        "reports no IFEval metric (prompt_level_strict_acc, ...); this log is of another task",
        path=path,
        field="results",
    )


def read_results(path: Path) -> dict[str, Any]:
    try:
        with open_input(path) as handle:  # a FIFO or a device is refused, not waited on or read forever
            results = json.loads(handle.read().decode("utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(
            f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno} (truncated?)", path=path
        ) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", path=path) from None
    if not isinstance(results, dict):
        raise InputError("expected a JSON object", path=path)
    return results


def _model(results: dict[str, Any]) -> str | None:
    config = results["config"] if isinstance(results.get("config"), dict) else {}
    if isinstance(results.get("model_name"), str) and results["model_name"]:
        return results["model_name"]
    args = config.get("model_args")
    if isinstance(args, str):
        for part in args.split(","):
            name, _, value = part.partition("=")
            if name.strip() in ("model", "pretrained"):
                return value.strip()
    if isinstance(args, dict):
        return args.get("model") or args.get("pretrained")
    return None


def from_parts(
    samples: list[HarnessSample], results: dict[str, Any] | None, source: str, format_name: str = "lm-eval"
) -> HarnessLog:
    model = one_model(samples, source)
    task, reported = _reported(results, Path(source)) if results is not None else ("ifeval", {})
    results = results or {}
    configs = results["configs"] if isinstance(results.get("configs"), dict) else {}
    task_config = configs.get(task, {}) if isinstance(configs.get(task, {}), dict) else {}
    return HarnessLog(
        format=format_name,
        tool={"name": "lm-evaluation-harness", "version": results.get("lm_eval_version")},
        task=task,
        model=_model(results) or model,
        samples=unique_samples(samples, source),
        reported=reported,
        generation=task_config.get("generation_kwargs", {})
        if isinstance(task_config.get("generation_kwargs"), dict)
        else {},
        provenance={
            key: results[key]
            for key in (
                "date",
                "git_hash",
                "start_time",
                "end_time",
                "total_evaluation_time_seconds",
                "task_hashes",
                "model_source",
                "system_instruction",
                "chat_template",
                "config",
            )
            if key in results
        },
    )


def read(path: Path, options: dict[str, Any]) -> HarnessLog:
    """`path` is the samples file; `options["results"]` the results file, if any."""
    results_path = options.get("results")
    results = read_results(Path(results_path)) if results_path else None
    return from_parts(read_samples(path), results, str(path))
