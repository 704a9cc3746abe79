"""Any JSONL log: the config names which field holds what.

    import: {format: jsonl, fields: {key: id, response: output.text, sample: n, model: model}}

A field is a dotted path into the line's object (`output.text`); `key` and `response` are
required, `sample` defaults to 0 and `model`, when named, must be the same on every line;
`finish_reason`, when named, says why the server stopped (a string or null; `length`: at the
length limit, see ifaudit.core.suspect_responses).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ifaudit.core.errors import InputError
from ifaudit.inputs.importers.fields import ImportOptions, kind_of
from ifaudit.inputs.importers.model import HarnessLog, HarnessSample, one_model, unique_samples
from ifaudit.io.jsonl import iter_objects

DEFAULT_FIELDS = {"key": "key", "response": "response", "sample": "sample"}
FIELDS = ("key", "response", "sample", "model", "finish_reason")
OPTIONS = ("fields",)


def dig(obj: Any, dotted: str, where: str) -> Any:
    value = obj
    for part in dotted.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise InputError("missing", path=where, field=dotted)
    return value


def _sample(obj: dict[str, Any], where: str, fields: dict[str, str]) -> HarnessSample:
    """One line's response, each field read from its dotted path with its type."""
    key = dig(obj, fields["key"], where)
    if isinstance(key, bool) or not isinstance(key, int | str):
        raise InputError(f"expected an integer or a string, got {kind_of(key)}", path=where, field=fields["key"])
    response = dig(obj, fields["response"], where)
    if not isinstance(response, str):
        raise InputError(f"expected a string, got {kind_of(response)}", path=where, field=fields["response"])
    sample = dig(obj, fields["sample"], where) if _has(obj, fields["sample"]) else 0
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        raise InputError(f"expected a non-negative integer, got {kind_of(sample)}", path=where, field=fields["sample"])
    model = dig(obj, fields["model"], where) if "model" in fields else None
    if model is not None and not isinstance(model, str):
        raise InputError(f"expected a string, got {kind_of(model)}", path=where, field=fields["model"])
    reason = dig(obj, fields["finish_reason"], where) if "finish_reason" in fields else None
    if reason is not None and not isinstance(reason, str):
        raise InputError(f"expected a string or null, got {kind_of(reason)}", path=where, field=fields["finish_reason"])
    return HarnessSample(
        key=key,
        sample=sample,
        response=response,
        where=where,
        model=model,
        finish_reason=reason,
        key_field=fields["key"],
        sample_field=fields["sample"],
    )


def read(path: Path, options: dict[str, Any]) -> HarnessLog:
    fields = {**DEFAULT_FIELDS, **ImportOptions.of(options, "jsonl", OPTIONS).names("fields", FIELDS)}
    samples = [_sample(obj, f"{path}:{line}", fields) for line, obj in iter_objects(path)]
    return HarnessLog(
        format="jsonl",
        tool={"name": "generic JSONL", "version": None},
        task="ifeval",
        model=one_model(samples, str(path)),
        samples=unique_samples(samples, str(path)),
    )


def _has(obj: Any, dotted: str) -> bool:
    try:
        dig(obj, dotted, "")
    except InputError:
        return False
    return True
