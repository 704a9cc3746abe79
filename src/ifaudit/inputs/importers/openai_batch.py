"""OpenAI Batch API output: one line per request, `custom_id` naming it, `response.body` the
chat completion (or completion) the API returned.

The config says how a `custom_id` names a prompt and a sample, as a pattern with `{key}` and
optionally `{sample}`: `import: {format: openai-batch, custom_id: "ifeval-{key}-{sample}"}`.
Several choices in one body (`n > 1`) are samples 0, 1, ... of that request, after the request's
own sample number times `n`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ifaudit.core.errors import InputError
from ifaudit.inputs.importers.model import HarnessLog, HarnessSample, one_model, unique_samples
from ifaudit.io.jsonl import iter_objects, require

DEFAULT_PATTERN = "{key}"


def custom_id_parser(pattern: str) -> re.Pattern[str]:
    if "{key}" not in pattern:
        raise InputError(f"custom_id pattern {pattern!r} has no {{key}}", field="import.custom_id")
    regex = re.escape(pattern).replace(r"\{key\}", r"(?P<key>.+?)").replace(r"\{sample\}", r"(?P<sample>\d+)")
    return re.compile(f"^{regex}$")


def _text(choice: dict[str, Any], where: str) -> str:
    if isinstance(choice.get("message"), dict):
        content = choice["message"].get("content")
        if isinstance(content, str):
            return content
        if content is None:
            return ""
    if isinstance(choice.get("text"), str):
        return choice["text"]
    raise InputError("a choice holds neither message.content nor text", path=where, field="response.body.choices")


def read(path: Path, options: dict[str, Any]) -> HarnessLog:
    parser = custom_id_parser(options.get("custom_id", DEFAULT_PATTERN))
    samples = []
    for line, obj in iter_objects(path):
        where = f"{path}:{line}"
        custom_id = require(obj, "custom_id", str, path, line)
        match = parser.match(custom_id)
        if not match:
            raise InputError(
                f"{custom_id!r} does not match the pattern {options.get('custom_id', DEFAULT_PATTERN)!r}",
                path=path,
                line=line,
                field="custom_id",
            )
        if obj.get("error"):
            raise InputError(
                f"the request failed in the batch: {obj['error']}",
                path=path,
                line=line,
                field="error",
                hint="re-run the failed requests; an audit needs every response",
            )
        response = require(obj, "response", dict, path, line)
        if response.get("status_code") != 200:
            raise InputError(
                f"status {response.get('status_code')!r}, not 200", path=path, line=line, field="response.status_code"
            )
        body = require(response, "body", dict, path, line)
        choices = require(body, "choices", list, path, line)
        if not choices:
            raise InputError("no choices", path=path, line=line, field="response.body.choices")
        raw_key = match.group("key")
        key: int | str = int(raw_key) if raw_key.isdigit() else raw_key
        base = int(match.group("sample")) * len(choices) if "sample" in parser.groupindex else 0
        for index, choice in enumerate(sorted(choices, key=lambda c: c.get("index", 0))):
            samples.append(
                HarnessSample(
                    key=key,
                    sample=base + index,
                    response=_text(choice, where),
                    where=where,
                    model=body.get("model") if isinstance(body.get("model"), str) else None,
                )
            )
    return HarnessLog(
        format="openai-batch",
        tool={"name": "OpenAI Batch API", "version": None},
        task="ifeval",
        model=one_model(samples, str(path)),
        samples=unique_samples(samples, str(path)),
    )
