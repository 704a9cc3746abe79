"""OpenCompass: its predictions JSON (`predictions/<model>/<dataset>.json`) and results JSON
(`results/<model>/<dataset>.json`).

The predictions file is one object keyed by the row's index ("0", "1", ...): `origin_prompt`
(the prompt as sent), `prediction` (the model's answer) and `gold` (the dataset's row: key, prompt,
instruction_id_list, kwargs). The results file holds the four aggregates in percent
(`Prompt-level-strict-accuracy`, ...; IFBench adds `score`, the mean of the four) and, with
`--dump-eval-details` (the default), `details` keyed by the same index, whose
`is_strict_correct`/`is_loose_correct` are the harness's only per-response verdicts: prompt level,
not which instructions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ifaudit.core.errors import InputError
from ifaudit.inputs.importers.fields import ImportOptions, LogRecord
from ifaudit.inputs.importers.lm_eval import read_results
from ifaudit.inputs.importers.model import HarnessLog, HarnessSample, unique_samples

OPTIONS = ("results",)
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


def _verdicts(details: LogRecord | None, name: str) -> dict[str, list[bool]] | None:
    """The row's prompt-level verdicts from the results' `details`, where they were dumped."""
    if details is None:
        return None
    row = details.record(name)
    found = {}
    for mode, field in VERDICTS.items():
        value = row.raw(field)
        if not isinstance(value, bool):
            raise row.error(field, f"expected a boolean, got {type(value).__name__}")
        found[mode] = [value]
    return found


def _samples(predictions: LogRecord, details: LogRecord | None) -> list[HarnessSample]:
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
                verdicts=_verdicts(details, name),
                prompt_only=True,
                per_instruction=False,
                key_field=f"{name}.gold.key",
                sample_field=name,
                doc_field=f"{name}.gold",
            )
        )
    if details is not None:
        extra = sorted(set(details.value) - set(predictions.value))
        if extra:
            raise details.error(extra[0], "is a row the predictions file does not hold; import one run's two files")
    return samples


def read(path: Path, options: dict[str, Any]) -> HarnessLog:
    """`path`: the predictions JSON; `options["results"]`: the results JSON of the same run."""
    results_path = ImportOptions.of(options, "opencompass", OPTIONS).text("results")
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
        details = results.maybe_record("details")
    return HarnessLog(
        format="opencompass",
        tool={"name": "opencompass", "version": None},
        task=path.stem,
        model=path.parent.name or None,
        samples=unique_samples(_samples(predictions, details), str(path)),
        reported=reported,
        composites=composites,
    )
