"""The records everything else is about: a prompt (with its instructions' settings) and a
response to it. Plain values; reading them from files is ifaudit.io.prompts' and
ifaudit.io.responses' business."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PromptKey = int | str


@dataclass(frozen=True)
class Prompt:
    key: PromptKey
    prompt: str
    instruction_id_list: tuple[str, ...]
    kwargs: tuple[dict[str, Any], ...]
    path: str
    line: int
    lang: tuple[str, ...] | str | None = None  # the language(s) a response must be in (Arabic IFEval)
    subset: str | None = None  # a named part of the dataset (InFoBench's Easy_set / Hard_set)
    context: str = ""  # text the instruction applies to (InFoBench's input)


@dataclass(frozen=True)
class Response:
    key: PromptKey
    sample: int
    text: str
    line: int
    null: bool = False  # the file's `null`, read as the empty text (ifaudit.io.responses)
