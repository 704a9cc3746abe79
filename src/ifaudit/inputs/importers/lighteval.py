"""Hugging Face lighteval: its details parquet (`details/<model>/<time>/details_<task>_<time>.parquet`)
and results JSON (`results/<model>/results_<time>.json`).

A details row is one sample: `doc` (the prompt as lighteval built it: `query`, the dataset's
prompt text, and `specific` with `instructions_id_list` and `kwargs`; no IFEval key, only the
row's place in `id`), `model_response` (`input`: the messages sent, whose prompt its endpoint
models strip of surrounding whitespace; `text`: what the model generated; `text_post_processed`:
what was graded, after its reasoning-tag removal) and `metric` (the harness's verdicts:
`inst_level_strict_acc` one bool per instruction, and loose). With no key in the log, a sample is
matched to the pinned prompt by its exact text (`doc.query`). The results file holds the aggregates under `results.<task>|<shots>` and the run's
configuration (`config_general`), but not lighteval's version (0.13.0 writes `lighteval_sha: "?"`
when not run from a git checkout): the import's `version` setting says which release ran, and the
harness record says the version came from there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ifaudit.inputs.importers.fields import ImportOptions, LogRecord, kind_of
from ifaudit.inputs.importers.leaderboard import read_parquet
from ifaudit.inputs.importers.lm_eval import read_results
from ifaudit.inputs.importers.model import IFEVAL_METRICS, HarnessLog, HarnessSample, as_bool_list, unique_samples

OPTIONS = ("results", "version")
VERDICTS = {"strict": "inst_level_strict_acc", "loose": "inst_level_loose_acc"}


def _first_text(record: LogRecord, field: str) -> str | None:
    """The first text of a list field (`text`, `text_post_processed`), or None where absent."""
    if record.value.get(field) is None:
        return None
    texts = record.items(field)
    if not texts:
        return None
    if not isinstance(texts[0], str):
        raise record.error(f"{field}[0]", f"expected a generated text, got {kind_of(texts[0])}")
    return texts[0]


def sent_differs(row: Any) -> bool:
    """Whether the prompt lighteval sent (`model_response.input`'s last message) is not its own
    copy (`doc.query`): its endpoint models strip the prompt before sending it."""
    messages = row.get("model_response", {}).get("input") or []
    sent = messages[-1].get("content") if messages and isinstance(messages[-1], dict) else None
    return isinstance(sent, str) and sent != row.get("doc", {}).get("query")


def sample_from_row(row: Any, where: str) -> HarnessSample:
    record = LogRecord.at(row, where)
    doc = record.record("doc")
    specific = doc.record("specific")
    if not specific.has("instructions_id_list"):
        raise specific.error("instructions_id_list", "missing: not an IFEval document; this log is of another task")
    row_id = f"row {doc.text('id')}"  # the row's place in the dataset, not a prompt's key
    prompt = {
        "key": row_id,
        "prompt": doc.text("query"),
        "instruction_id_list": specific.items("instructions_id_list"),
        "kwargs": specific.items("kwargs"),
    }
    response = record.record("model_response")
    text = _first_text(response, "text")
    if text is None:
        raise response.error("text", "missing: the model's generated text is not in this row")
    metric = record.record("metric")
    verdicts = {mode: as_bool_list(metric.raw(name), where, f"metric.{name}") for mode, name in VERDICTS.items()}
    return HarnessSample(
        key=row_id,  # no key in the log: matched by `doc.query`
        sample=0,
        response=text,
        where=where,
        graded_text=_first_text(response, "text_post_processed"),
        doc=prompt,
        verdicts=verdicts,
        key_field="doc.query",
        sample_field="model_response.text",
        doc_field="doc",
    )


def _reported(results: LogRecord) -> tuple[str, dict[str, float]]:
    tasks = results.record("results")
    for task, figures in sorted(tasks.value.items()):
        if task == "all" or not isinstance(figures, dict):
            continue
        found = {
            name: float(value)
            for name, value in figures.items()
            if name in IFEVAL_METRICS and isinstance(value, int | float) and not isinstance(value, bool)
        }
        if found:
            return task, found
    raise tasks.error("results", "reports no IFEval metric (prompt_level_strict_acc, ...); this log is of another task")


def read(path: Path, options: dict[str, Any]) -> HarnessLog:
    """`path`: the details parquet; `options["results"]`: the results JSON of the same run."""
    settings = ImportOptions.of(options, "lighteval", OPTIONS)
    results_path = settings.text("results")
    rows = read_parquet(path)
    samples = [sample_from_row(row, f"{path}:{index + 1}") for index, row in enumerate(rows)]
    # prompts sent otherwise than logged (stripped), by their row in the details
    sent = [sample.where.rsplit(":", 1)[1] for sample, row in zip(samples, rows, strict=True) if sent_differs(row)]
    task, model, version = "ifeval", None, None
    reported: dict[str, float] = {}
    generation: dict[str, Any] = {}
    if results_path is not None:
        results = read_results(Path(results_path)).record
        task, reported = _reported(results)
        general = results.maybe_record("config_general")
        if general is not None:
            model = general.maybe_text("model_name")
            sha = general.maybe_text("lighteval_sha")
            version = sha if sha and sha != "?" else None
            config = general.maybe_record("model_config")
            parameters = config.maybe_record("generation_parameters") if config else None
            generation = {k: v for k, v in parameters.value.items() if v is not None} if parameters else {}
    declared = settings.text("version")
    tool: dict[str, Any] = {"name": "lighteval", "version": version or declared}
    if declared is not None and version is None:
        tool["version_from"] = "the import's `version` setting (the log names none)"
    return HarnessLog(
        format="lighteval",
        tool=tool,
        task=task,
        model=model,
        samples=unique_samples(samples, str(path)),
        reported=reported,
        generation=generation,
        provenance={"prompt_sent_differs_at_rows": sent} if sent else {},
    )
