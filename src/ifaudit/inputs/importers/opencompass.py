"""OpenCompass: its predictions JSON (`predictions/<model>/<dataset>.json`) and results JSON
(`results/<model>/<dataset>.json`).

The predictions file is one object keyed by the row's index ("0", "1", ...): `origin_prompt`
(the prompt as sent), `prediction` (the model's answer) and `gold` (the dataset's row: key, prompt,
instruction_id_list, kwargs). The results file holds the four aggregates in percent
(`Prompt-level-strict-accuracy`, ...; IFBench adds `score`, the mean of the four) and, with
`--dump-eval-details` (the default), `details`: one entry per row, named by `example_abbr`
(`IFEval_12`), whose `is_strict_correct`/`is_loose_correct` (a list of one per repeat) are the
harness's only per-response verdicts: prompt level, not which instructions. Neither file names
OpenCompass's version: the import's `version` setting says which release ran.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ifaudit.core.errors import InputError
from ifaudit.inputs.importers.fields import ImportOptions, LogRecord, kind_of
from ifaudit.inputs.importers.lm_eval import read_results
from ifaudit.inputs.importers.model import HarnessLog, HarnessSample, unique_samples

OPTIONS = ("results", "version")
REPORTED = {
    "Prompt-level-strict-accuracy": "prompt_level_strict_acc",
    "Inst-level-strict-accuracy": "inst_level_strict_acc",
    "Prompt-level-loose-accuracy": "prompt_level_loose_acc",
    "Inst-level-loose-accuracy": "inst_level_loose_acc",
}
VERDICTS = {"strict": "is_strict_correct", "loose": "is_loose_correct"}


def _index(name: str, where: str) -> int:
    if not (name.isascii() and name.isdigit()):
        raise InputError(f"holds an entry {name!r} that is not a row index", path=where)
    return int(name)


def _details(results: LogRecord, dataset: str) -> dict[str, LogRecord]:
    """The results' `details` by row index: a list whose entries name their row
    (`example_abbr`: `IFEval_12`), or, from OpenCompass's evaluator itself, an object keyed by it."""
    if isinstance(results.value.get("details"), dict):
        return {name: results.record("details").record(name) for name in results.value["details"]}
    found = {}
    for entry in results.records("details"):
        abbr = entry.text("example_abbr")
        prefix, _, index = abbr.rpartition("_")
        if prefix != dataset or not (index.isascii() and index.isdigit()):
            raise entry.error("example_abbr", f"is {abbr!r}, not a row of {dataset}")
        found[index] = entry
    return found


def _verdicts(details: dict[str, LogRecord] | None, name: str, where: str) -> dict[str, list[bool]] | None:
    """The row's prompt-level verdicts from the results' `details`, where they were dumped: a
    boolean, or a list of one per repeat (OpenCompass's n), of which the first is the sample's."""
    if details is None:
        return None
    if name not in details:
        raise InputError(f"has no verdicts for row {name} of the predictions file", path=where, field="details")
    row = details[name]
    found = {}
    for mode, field in VERDICTS.items():
        value = row.raw(field)
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        if not isinstance(value, bool):
            raise row.error(field, f"expected a boolean (or a list of one), got {kind_of(value)}")
        found[mode] = [value]
    return found


def _samples(
    predictions: LogRecord, details: dict[str, LogRecord] | None, results_where: str = ""
) -> list[HarnessSample]:
    samples = []
    for name in sorted(predictions.value, key=lambda n: (len(n), n)):
        _index(name, predictions.where)
        entry = predictions.record(name)
        doc = entry.record("gold")
        if not (doc.has("instruction_id_list") and doc.has("key")):
            raise doc.error("key", "missing: not an IFEval-shaped dataset row; this log is of another dataset")
        samples.append(
            HarnessSample(
                key=doc.key("key"),
                sample=0,
                response=entry.text("prediction"),
                where=f"{predictions.where}:{name}",
                doc=dict(doc.value),
                verdicts=_verdicts(details, name, results_where),
                prompt_only=True,
                per_instruction=False,
                key_field=f"{name}.gold.key",
                sample_field=name,
                doc_field=f"{name}.gold",
            )
        )
    if details is not None:
        extra = sorted(set(details) - set(predictions.value))
        if extra:
            entry = details[extra[0]]
            raise InputError(
                f"names row {extra[0]}, which the predictions file does not hold; import one run's two files",
                path=entry.where,
                field=entry.prefix,
            )
    return samples


def read(path: Path, options: dict[str, Any]) -> HarnessLog:
    """`path`: the predictions JSON; `options["results"]`: the results JSON of the same run."""
    settings = ImportOptions.of(options, "opencompass", OPTIONS)
    results_path, version = settings.text("results"), settings.text("version")
    predictions = read_results(path).record
    reported: dict[str, float] = {}
    composites: dict[str, float] = {}
    details = None
    if results_path is not None:
        results = read_results(Path(results_path)).record
        for name, ours in REPORTED.items():
            if results.has(name):
                reported[ours] = results.number(name) / 100  # OpenCompass reports percent
        if not reported:
            raise results.error("Prompt-level-strict-accuracy", "missing: this results file reports no IFEval metric")
        if results.has("score"):
            composites["mean_of_four"] = results.number("score")
        details = _details(results, path.stem) if results.value.get("details") is not None else None
    tool: dict[str, Any] = {"name": "opencompass", "version": version}
    if version is not None:
        tool["version_from"] = "the import's `version` setting (the log names none)"
    return HarnessLog(
        format="opencompass",
        tool=tool,
        task=path.stem,
        model=path.parent.name or None,
        samples=unique_samples(_samples(predictions, details, str(results_path)), str(path)),
        reported=reported,
        composites=composites,
    )
