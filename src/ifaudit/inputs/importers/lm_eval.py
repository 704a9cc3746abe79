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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ifaudit.core.errors import InputError
from ifaudit.inputs.importers.fields import ImportOptions, LogRecord, kind_of
from ifaudit.inputs.importers.model import (
    IFEVAL_METRICS,
    HarnessLog,
    HarnessSample,
    as_bool_list,
    one_model,
    unique_samples,
)
from ifaudit.io.jsonl import iter_objects, loads_document
from ifaudit.io.paths import open_input

VERDICT_FIELDS = {"strict": "inst_level_strict_acc", "loose": "inst_level_loose_acc"}
OPTIONS = ("results",)


def _texts(record: LogRecord, field: str) -> list[str]:
    """`resps`: a list holding one list of generated texts (one per repeat)."""
    outer = record.items(field)
    first = outer[0] if outer else None
    if not isinstance(first, list) or not first:
        raise record.error(field, "expected a list holding a list of generated texts")
    for index, text in enumerate(first):
        if not isinstance(text, str):
            raise record.error(f"{field}[0][{index}]", f"expected a generated text, got {kind_of(text)}")
    return first


def _graded_text(record: LogRecord) -> str | None:
    """The text the harness graded (`filtered_resps[0]`, or its first text), where it logs one."""
    filtered = record.value.get("filtered_resps")
    first = filtered[0] if isinstance(filtered, list) and filtered else None
    if isinstance(first, list):
        first = first[0] if first else None
    return first if isinstance(first, str) else None


def sample_from_record(obj: Any, where: str) -> list[HarnessSample]:
    """The responses of one logged document: one per repeat; the verdicts belong to the first
    (lm-eval grades `filtered_resps[0]`)."""
    record = LogRecord.at(obj, where)
    if not isinstance(record.value.get("doc"), dict):
        raise record.error("doc", "missing or not an object")
    doc = record.record("doc")
    if not (doc.has("instruction_id_list") and doc.has("key")):
        raise record.error(
            "doc", "is not an IFEval document (no 'key' or 'instruction_id_list'); this log is of another task"
        )
    missing = [name for name in VERDICT_FIELDS.values() if not record.has(name)]
    if missing:
        raise record.error(
            missing[0],
            "missing: the harness's IFEval verdicts are not in this record; "
            "this log is of another task or was not written with --log_samples",
        )
    key = doc.key("key")
    texts = _texts(record, "resps")
    graded = _graded_text(record)
    verdicts = {mode: as_bool_list(record.raw(name), where, name) for mode, name in VERDICT_FIELDS.items()}
    return [
        HarnessSample(
            key=key,
            sample=index,
            response=text,
            where=where,
            graded_text=graded if index == 0 else None,
            doc=dict(doc.value),
            verdicts=verdicts if index == 0 else None,
            key_field="doc.key",
            sample_field=f"resps[0][{index}]",
        )
        for index, text in enumerate(texts)
    ]


def read_samples(path: Path) -> list[HarnessSample]:
    samples: list[HarnessSample] = []
    for line, obj in iter_objects(path):
        samples.extend(sample_from_record(obj, f"{path}:{line}"))
    return samples


@dataclass(frozen=True)
class Results:
    """A run's `results_*.json`, with the path its messages name."""

    path: Path
    record: LogRecord


def _reported(results: Results) -> tuple[str, dict[str, float]]:
    """The task's reported IFEval aggregates: `results.<task>."<metric>,<filter>"`."""
    tasks = results.record.record("results")
    for task, figures in sorted(tasks.value.items()):
        if not isinstance(figures, dict):
            continue
        found = {}
        for name, value in figures.items():
            metric = name.split(",", 1)[0]
            if metric in IFEVAL_METRICS and isinstance(value, int | float) and not isinstance(value, bool):
                found[metric] = float(value)
        if found:
            return task, found
    raise results.record.error(
        "results", "reports no IFEval metric (prompt_level_strict_acc, ...); this log is of another task"
    )


def read_results(path: Path) -> Results:
    try:
        with open_input(path) as handle:  # a FIFO or a device is refused, not waited on or read forever
            results = loads_document(handle.read().decode("utf-8"), path)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno} (truncated?)", path=path
        ) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", path=path) from None
    return Results(path, LogRecord.at(results, str(path)))


def _model(results: LogRecord) -> str | None:
    """The model the results file names: `model_name`, else `model`/`pretrained` in `model_args`."""
    if named := results.maybe_text("model_name"):
        return named
    config = results.maybe_record("config")
    args = config.value.get("model_args") if config else None
    if isinstance(args, str):
        for part in args.split(","):
            name, _, value = part.partition("=")
            if name.strip() in ("model", "pretrained"):
                return value.strip()
    if isinstance(args, dict):
        given = LogRecord.at(args, results.where, "config.model_args")
        return given.maybe_text("model") or given.maybe_text("pretrained")
    return None


def _generation(results: LogRecord, task: str) -> dict[str, Any]:
    """The task's generation settings: `configs.<task>.generation_kwargs`."""
    configs = results.maybe_record("configs")
    task_config = configs.maybe_record(task) if configs else None
    settings = task_config.maybe_record("generation_kwargs") if task_config else None
    return dict(settings.value) if settings else {}


PROVENANCE = (
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


def from_parts(
    samples: list[HarnessSample], given: Results | None, source: str, format_name: str = "lm-eval"
) -> HarnessLog:
    model = one_model(samples, source)
    task, reported = _reported(given) if given is not None else ("ifeval", {})
    results = given.record if given is not None else LogRecord({}, source)
    return HarnessLog(
        format=format_name,
        tool={"name": "lm-evaluation-harness", "version": results.maybe_text("lm_eval_version")},
        task=task,
        model=_model(results) or model,
        samples=unique_samples(samples, source),
        reported=reported,
        generation=_generation(results, task),
        provenance={key: results.value[key] for key in PROVENANCE if key in results.value},
    )


def read(path: Path, options: dict[str, Any]) -> HarnessLog:
    """`path` is the samples file; `options["results"]` the results file, if any."""
    results_path = ImportOptions.of(options, "lm-eval", OPTIONS).text("results")
    results = read_results(Path(results_path)) if results_path is not None else None
    return from_parts(read_samples(path), results, str(path))
