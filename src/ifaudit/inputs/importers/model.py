"""What every importer produces: the harness's samples, verdicts, claims and provenance."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ifaudit.core.errors import InputError
from ifaudit.core.records import PromptKey

# IFEval's four aggregates, in the names every harness reports them under (ours on the left).
IFEVAL_METRICS = ("prompt_level_strict_acc", "inst_level_strict_acc", "prompt_level_loose_acc", "inst_level_loose_acc")


@dataclass(frozen=True)
class HarnessSample:
    """One generated response as the harness logged it."""

    key: PromptKey
    sample: int
    response: str  # the text the harness logged as the model's output
    where: str  # file:line (or member) in the log, for messages
    graded_text: str | None = None  # the text the harness graded, when it logs it apart from the output
    doc: dict[str, Any] | None = None  # the harness's copy of the prompt record
    verdicts: dict[str, list[bool]] | None = None  # mode -> per-instruction verdicts, as the harness graded
    model: str | None = None
    per_instruction: bool = True  # False: the harness recorded only how many were followed (in any order)
    finish_reason: str | None = None  # why the server stopped, where the log says (`length`: the limit)
    # True: only whether all were followed (OpenCompass); `verdicts` then holds one bool per mode
    prompt_only: bool = False
    # Where the log holds the sample's identity and prompt, for messages: its key, its sample
    # number and its copy of the prompt record (dotted paths in the log's record).
    key_field: str = "key"
    sample_field: str = "sample"
    doc_field: str = "doc"


@dataclass(frozen=True)
class HarnessLog:
    format: str
    tool: dict[str, Any]  # name, version
    task: str
    model: str | None
    samples: tuple[HarnessSample, ...]
    reported: dict[str, float] = field(default_factory=dict)  # our metric name -> the harness's figure
    # a composite name (claims.COMPOSITES) -> the harness's figure, on the composite's own scale
    composites: dict[str, float] = field(default_factory=dict)
    generation: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)  # dates, commands, hashes: manifest only


def one_model(samples: list[HarnessSample], source: str) -> str | None:
    """The single model every sample names; a log mixing models is refused."""
    models = sorted({s.model for s in samples if s.model})
    if len(models) > 1:
        first = {m: next(s.where for s in samples if s.model == m) for m in models[:2]}
        raise InputError(
            f"mixes models: {models[0]!r} ({first[models[0]]}) and {models[1]!r} ({first[models[1]]})",
            path=source,
            hint="import one model's log per run",
        )
    return models[0] if models else None


def unique_samples(samples: list[HarnessSample], source: str) -> tuple[HarnessSample, ...]:
    seen: dict[tuple[PromptKey, int], str] = {}
    for s in samples:
        if (s.key, s.sample) in seen:
            raise InputError(
                f"prompt {s.key!r} sample {s.sample} appears twice ({seen[s.key, s.sample]} and {s.where})",
                path=source,
                hint="a log holds each response once; import one run's log",
            )
        seen[s.key, s.sample] = s.where
    if not samples:
        raise InputError("holds no samples", path=source)
    return tuple(samples)


def as_bool_list(value: Any, where: str, field_name: str) -> list[bool]:
    if isinstance(value, bool):
        return [value]
    if isinstance(value, list) and all(isinstance(v, bool) for v in value):
        return list(value)
    raise InputError(f"expected a list of booleans, got {type(value).__name__}", path=where, field=field_name)
