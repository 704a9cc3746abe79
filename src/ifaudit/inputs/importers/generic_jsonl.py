"""Any JSONL log: the config names which field holds what.

    import: {format: jsonl, fields: {key: id, response: output.text, sample: n, model: model}}

A field is a dotted path into the line's object (`output.text`); `key` and `response` are
required, `sample` defaults to 0 and `model`, when named, must be the same on every line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ifaudit.core.errors import InputError
from ifaudit.inputs.importers.model import HarnessLog, HarnessSample, one_model, unique_samples
from ifaudit.io.jsonl import iter_objects

DEFAULT_FIELDS = {"key": "key", "response": "response", "sample": "sample"}


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


def read(path: Path, options: dict[str, Any]) -> HarnessLog:
    fields = {**DEFAULT_FIELDS, **options.get("fields", {})}
    samples = []
    for line, obj in iter_objects(path):
        where = f"{path}:{line}"
        key = dig(obj, fields["key"], where)
        response = dig(obj, fields["response"], where)
        if not isinstance(response, str):
            raise InputError(f"expected a string, got {type(response).__name__}", path=where, field=fields["response"])
        if isinstance(key, bool) or not isinstance(key, int | str):
            raise InputError(
                f"expected an integer or string, got {type(key).__name__}", path=where, field=fields["key"]
            )
        sample = dig(obj, fields["sample"], where) if _has(obj, fields["sample"]) else 0
        if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
            raise InputError(f"expected a non-negative integer, got {sample!r}", path=where, field=fields["sample"])
        model = dig(obj, fields["model"], where) if "model" in fields else None
        samples.append(
            HarnessSample(
                key=key, sample=sample, response=response, where=where, model=model if isinstance(model, str) else None
            )
        )
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
