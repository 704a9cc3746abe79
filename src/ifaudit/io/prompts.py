"""Prompt sets: IFEval's upstream JSONL and the Hugging Face form of the same data.

The Hugging Face copy pads every instruction's kwargs with nulls for all keys any instruction
takes; upstream lists only the keys set. Nulls are dropped so both forms build identical
instructions (a null passed to `build_description` would make the checker draw a random value).
`kwargs`, or any one entry of it, may also arrive as JSON text (as some Arabic IFEval copies
store it); it is parsed, as the Arabic reference does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ifaudit.core.errors import InputError
from ifaudit.io.jsonl import iter_objects, require
from ifaudit.core.records import Prompt, PromptKey


def _parse_json_text(raw: Any, path: Path, line: int, field: str) -> Any:
    """A value that may arrive as JSON text (Arabic IFEval spec §1: `kwargs` as a JSON string)."""
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError as error:
        raise InputError(
            f"a string that is not JSON ({error.msg} at character {error.pos})", path=path, line=line, field=field
        ) from None


def _clean_kwargs(raw: Any, path: Path, line: int, index: int) -> dict[str, Any]:
    field = f"kwargs[{index}]"
    raw = _parse_json_text(raw, path, line, field)
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise InputError(f"expected an object, got {type(raw).__name__}", path=path, line=line, field=field)
    return {name: value for name, value in raw.items() if value is not None}


def prompt_from_record(obj: dict[str, Any], path: str | Path, line: int) -> Prompt:
    """One prompt from its JSON object, validating every field."""
    path = Path(path)
    key = require(obj, "key", (int, str), path, line)
    text = require(obj, "prompt", str, path, line)
    ids = require(obj, "instruction_id_list", list, path, line)
    for index, instruction_id in enumerate(ids):
        if not isinstance(instruction_id, str):
            raise InputError("expected a string", path=path, line=line, field=f"instruction_id_list[{index}]")
    if isinstance(obj.get("kwargs"), str):
        obj = {**obj, "kwargs": _parse_json_text(obj["kwargs"], path, line, "kwargs")}
    kwargs = require(obj, "kwargs", list, path, line)
    if len(kwargs) != len(ids):
        raise InputError(
            f"has {len(kwargs)} entries but instruction_id_list has {len(ids)}",
            path=path,
            line=line,
            field="kwargs",
        )
    lang = obj.get("lang")
    if lang is not None and not (
        isinstance(lang, str) or (isinstance(lang, list) and all(isinstance(c, str) for c in lang))
    ):
        raise InputError("expected a language code or a list of them", path=path, line=line, field="lang")
    return Prompt(
        key=key,
        prompt=text,
        instruction_id_list=tuple(ids),
        kwargs=tuple(_clean_kwargs(raw, path, line, i) for i, raw in enumerate(kwargs)),
        path=str(path),
        line=line,
        lang=tuple(lang) if isinstance(lang, list) else lang,
    )


def read_prompts(path: str | Path) -> list[Prompt]:
    """Read a prompt set, validating every field; order is the file's order."""
    path = Path(path)
    prompts: list[Prompt] = []
    seen: dict[PromptKey, int] = {}
    for line, obj in iter_objects(path):
        prompt = prompt_from_record(obj, path, line)
        if prompt.key in seen:
            raise InputError(
                f"duplicate key {prompt.key!r} (first on line {seen[prompt.key]})", path=path, line=line, field="key"
            )
        seen[prompt.key] = line
        prompts.append(prompt)
    return prompts


def prompt_lookup(prompts: list[Prompt]) -> tuple[dict[PromptKey, Prompt], dict[str, PromptKey]]:
    """Prompts by key, and keys by prompt text: how a response file (or a harness's log) names
    the prompt each response answers. Where two prompts share a text, the text names the first."""
    by_key = {prompt.key: prompt for prompt in prompts}
    by_text: dict[str, PromptKey] = {}
    for prompt in prompts:
        by_text.setdefault(prompt.prompt, prompt.key)
    return by_key, by_text
