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
from ifaudit.core.records import PromptKey
from ifaudit.inputs.importers.fields import ImportOptions, LogRecord
from ifaudit.inputs.importers.model import HarnessLog, HarnessSample, one_model, unique_samples
from ifaudit.io.jsonl import iter_objects

DEFAULT_PATTERN = "{key}"
OPTIONS = ("custom_id",)


def custom_id_parser(pattern: str) -> re.Pattern[str]:
    """The regular expression of a `custom_id` pattern: `{key}` once, `{sample}` at most once."""
    if pattern.count("{key}") != 1 or pattern.count("{sample}") > 1:
        raise InputError(
            f"custom_id pattern {pattern!r} must hold {{key}} once and {{sample}} at most once",
            field="import.custom_id",
        )
    regex = re.escape(pattern).replace(r"\{key\}", r"(?P<key>.+?)").replace(r"\{sample\}", r"(?P<sample>[0-9]+)")
    return re.compile(f"^{regex}$")


def _text(choice: LogRecord) -> str:
    """A chat choice's `message.content` (null: the empty answer) or a completion's `text`."""
    message = choice.maybe_record("message")
    if message is not None:
        return "" if message.value.get("content") is None else message.text("content")
    if choice.has("text"):
        return choice.text("text")
    raise choice.error("message", "a choice holds neither message.content nor text")


def _choices(body: LogRecord) -> list[LogRecord]:
    """The body's choices in their `index` order (their position where they carry none)."""
    choices = body.records("choices")
    if not choices:
        raise body.error("choices", "no choices")
    indexes = [choice.integer_or("index", position, minimum=0) for position, choice in enumerate(choices)]
    if len(set(indexes)) != len(indexes):
        raise body.error("choices", f"two choices carry the same index ({sorted(indexes)})")
    return [choice for _, choice in sorted(zip(indexes, choices), key=lambda pair: pair[0])]


def _key(raw: str) -> PromptKey:
    """A key as the pattern caught it: ASCII digits are an integer key, anything else a string."""
    return int(raw) if raw.isascii() and raw.isdigit() else raw


def _line_samples(record: LogRecord, parser: re.Pattern[str], pattern: str) -> list[HarnessSample]:
    """The responses of one line of the batch output: one per choice."""
    custom_id = record.text("custom_id")
    match = parser.match(custom_id)
    if not match:
        raise record.error("custom_id", f"{custom_id!r} does not match the pattern {pattern!r}")
    if record.value.get("error"):
        raise record.error(
            "error",
            f"the request failed in the batch: {record.value['error']}",
            hint="re-run the failed requests; an audit needs every response",
        )
    response = record.record("response")
    if response.value.get("status_code") != 200:
        raise response.error("status_code", f"status {response.value.get('status_code')!r}, not 200")
    body = response.record("body")
    choices = _choices(body)
    base = int(match.group("sample")) * len(choices) if "sample" in parser.groupindex else 0
    model = body.maybe_text("model")
    return [
        HarnessSample(
            key=_key(match.group("key")),
            sample=base + index,
            response=_text(choice),
            where=record.where,
            model=model,
            key_field="custom_id",
            sample_field="custom_id",
            finish_reason=choice.maybe_text("finish_reason"),
        )
        for index, choice in enumerate(choices)
    ]


def read(path: Path, options: dict[str, Any]) -> HarnessLog:
    pattern = ImportOptions.of(options, "openai-batch", OPTIONS).text_or("custom_id", DEFAULT_PATTERN)
    parser = custom_id_parser(pattern)
    samples = []
    for line, obj in iter_objects(path):
        samples.extend(_line_samples(LogRecord(obj, f"{path}:{line}"), parser, pattern))
    return HarnessLog(
        format="openai-batch",
        tool={"name": "OpenAI Batch API", "version": None},
        task="ifeval",
        model=one_model(samples, str(path)),
        samples=unique_samples(samples, str(path)),
    )
