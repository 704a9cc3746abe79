"""ModelScope evalscope: its reviews JSONL (`reviews/<model>/<benchmark>_<subset>.jsonl`), its
report JSON (`reports/<model>/<benchmark>.json`) and its task config (`configs/task_config.yaml`).

A review line holds one sample: `messages` (the prompt sent, the model's answer), and under
`sample_score` the prompt record the harness graded against (`sample_metadata`: key, prompt,
instruction_id_list, kwargs), the answer as generated (`score.prediction`) and as graded
(`score.extracted_prediction`), the repeat (`generation_index`), and the verdicts as fractions:
`score.value.inst_level_strict` is the share of the prompt's instructions followed (0.5 of two),
not which ones. Those shares are imported as counts. The report gives each aggregate rounded to
four decimals (`metrics[].identity.name`, `score`); the task config the version
(`evalscope_version`), the seed and the generation settings.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

from ifaudit.core.errors import InputError
from ifaudit.inputs.importers.fields import ImportOptions, LogRecord
from ifaudit.inputs.importers.lm_eval import read_results
from ifaudit.inputs.importers.model import HarnessLog, HarnessSample, one_model, unique_samples
from ifaudit.io.jsonl import iter_objects
from ifaudit.io.paths import open_input

OPTIONS = ("results", "task_config")
SHARES = {"strict": "inst_level_strict", "loose": "inst_level_loose"}
REPORTED = {
    "prompt_level_strict": "prompt_level_strict_acc",
    "inst_level_strict": "inst_level_strict_acc",
    "prompt_level_loose": "prompt_level_loose_acc",
    "inst_level_loose": "inst_level_loose_acc",
}


def _counts(values: LogRecord, instructions: int) -> dict[str, list[bool]]:
    """A share of `instructions` followed as a count (followed first); a share that is not k/n
    of the prompt's instructions is refused."""
    counts = {}
    for mode, name in SHARES.items():
        share = values.number(name)
        followed = round(share * instructions)
        if not 0 <= followed <= instructions or abs(Fraction(followed, instructions) - Fraction(share)) > 1e-9:
            raise values.error(name, f"is {share}, not a share of the prompt's {instructions} instructions")
        counts[mode] = [True] * followed + [False] * (instructions - followed)
    return counts


def _answer(record: LogRecord) -> str:
    """The model's answer: the last assistant message."""
    for index in range(len(record.items("messages")) - 1, -1, -1):
        message = record.records("messages")[index]
        if message.value.get("role") == "assistant":
            return message.text("content")
    raise record.error("messages", "holds no assistant message (the model's answer)")


def sample_from_record(obj: Any, where: str) -> HarnessSample:
    record = LogRecord.at(obj, where)
    score = record.record("sample_score")
    doc = score.record("sample_metadata")
    if not (doc.has("instruction_id_list") and doc.has("key")):
        raise doc.error("key", "missing: not an IFEval-shaped prompt record; this log is of another benchmark")
    instructions = len(doc.items("instruction_id_list"))
    verdict = score.record("score")
    values = verdict.record("value")
    if not values.value:
        raise values.error(
            SHARES["strict"], "missing: evalscope failed to grade this sample (see `score.status` and its log)"
        )
    response = _answer(record)
    graded = verdict.maybe_text("extracted_prediction")
    model = next((m.value.get("model") for m in record.records("messages") if m.value.get("role") == "assistant"), None)
    return HarnessSample(
        key=doc.key("key"),
        sample=score.integer_or("generation_index", 0, minimum=0),
        response=response,
        where=where,
        graded_text=graded,
        doc=dict(doc.value),
        verdicts=_counts(values, instructions),
        model=model if isinstance(model, str) else None,
        per_instruction=False,
        key_field="sample_score.sample_metadata.key",
        sample_field="sample_score.generation_index",
        doc_field="sample_score.sample_metadata",
    )


def _reported(path: Path) -> tuple[str | None, str | None, dict[str, float]]:
    report = read_results(path).record
    found = {}
    for metric in report.records("metrics"):
        name = metric.record("identity").text("name")
        if name in REPORTED:
            found[REPORTED[name]] = metric.number("score")
    if not found:
        raise report.error(
            "metrics", "reports no IFEval metric (prompt_level_strict, ...); this report is of another benchmark"
        )
    return report.maybe_text("model_name"), report.maybe_text("dataset_name"), found


def _config(path: Path) -> dict[str, Any]:
    import yaml

    from ifaudit.io import bounded_yaml

    try:
        with open_input(path) as handle:
            loaded = bounded_yaml.load(handle.read().decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InputError(f"evalscope's task config does not parse ({exc.__class__.__name__})", path=path) from None
    if not isinstance(loaded, dict):
        raise InputError("is not evalscope's task config (a YAML mapping)", path=path)
    return loaded


def read(path: Path, options: dict[str, Any]) -> HarnessLog:
    """`path`: the reviews JSONL; `options["results"]`: the report JSON; `options["task_config"]`: the
    task config (version, seed, generation settings)."""
    settings = ImportOptions.of(options, "evalscope", OPTIONS)
    samples = [sample_from_record(obj, f"{path}:{line}") for line, obj in iter_objects(path)]
    results, config_path = settings.text("results"), settings.text("task_config")
    model, task, reported = _reported(Path(results)) if results else (None, None, {})
    config = _config(Path(config_path)) if config_path else {}
    generation = config.get("generation_config")
    return HarnessLog(
        format="evalscope",
        tool={"name": "evalscope", "version": config.get("evalscope_version")},
        task=task or "ifeval",
        model=model or one_model(samples, str(path)),
        samples=unique_samples(samples, str(path)),
        reported=reported,
        generation=dict(generation) if isinstance(generation, dict) else {},
        provenance={key: config[key] for key in ("seed", "eval_type", "model_id", "repeats") if key in config},
    )
