"""Prompt sets: IFEval's upstream JSONL and the Hugging Face form of the same data.

The Hugging Face copy pads every instruction's kwargs with nulls for all keys any instruction
takes; upstream lists only the keys set. Nulls are dropped so both forms build identical
instructions (a null passed to `build_description` would make the checker draw a random value).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ifaudit.errors import InputError
from ifaudit.jsonl import iter_objects, require

PromptKey = int | str


@dataclass(frozen=True)
class Prompt:
    key: PromptKey
    prompt: str
    instruction_id_list: tuple[str, ...]
    kwargs: tuple[dict[str, Any], ...]
    path: str
    line: int


def _clean_kwargs(raw: Any, path: Path, line: int, index: int) -> dict[str, Any]:
    field = f"kwargs[{index}]"
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise InputError(f"expected an object, got {type(raw).__name__}", path=path, line=line, field=field)
    return {name: value for name, value in raw.items() if value is not None}


def read_prompts(path: str | Path) -> list[Prompt]:
    """Read a prompt set, validating every field; order is the file's order."""
    path = Path(path)
    prompts: list[Prompt] = []
    seen: dict[PromptKey, int] = {}
    for line, obj in iter_objects(path):
        key = require(obj, "key", (int, str), path, line)
        if key in seen:
            raise InputError(f"duplicate key {key!r} (first on line {seen[key]})", path=path, line=line, field="key")
        seen[key] = line
        text = require(obj, "prompt", str, path, line)
        ids = require(obj, "instruction_id_list", list, path, line)
        for index, instruction_id in enumerate(ids):
            if not isinstance(instruction_id, str):
                raise InputError("expected a string", path=path, line=line, field=f"instruction_id_list[{index}]")
        kwargs = require(obj, "kwargs", list, path, line)
        if len(kwargs) != len(ids):
            raise InputError(
                f"has {len(kwargs)} entries but instruction_id_list has {len(ids)}",
                path=path, line=line, field="kwargs",
            )
        prompts.append(
            Prompt(
                key=key,
                prompt=text,
                instruction_id_list=tuple(ids),
                kwargs=tuple(_clean_kwargs(raw, path, line, i) for i, raw in enumerate(kwargs)),
                path=str(path),
                line=line,
            )
        )
    return prompts
