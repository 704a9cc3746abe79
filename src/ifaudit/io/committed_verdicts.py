"""Upstream's committed strict verdicts: the per-response verdicts a published figure was computed
from, in the format upstream's `evaluation_main.py` writes them (`eval_results_strict.jsonl`: one
object per response with `prompt`, `instruction_id_list`, `follow_instruction_list`,
`follow_all_instructions`; the compact copies in ../shared/data/mifeval/evaluations keep exactly
these). Each row names its prompt by its text and must list that prompt's instructions (ids
compared without a language prefix such as M-IFEval's `en:`, which the `ifeval` task reads off),
one boolean verdict each. Read as grade records of one mode, so the task's metrics compute the
figure the committed verdicts give (config `published.strict_verdicts`, docs/mifeval.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ifaudit.core.errors import InputError
from ifaudit.core.records import Prompt
from ifaudit.io.jsonl import iter_objects, require
from ifaudit.io.prompts import prompt_lookup


def _unprefixed(instruction_id: str) -> str:
    """`en:keywords:existence` -> `keywords:existence`; an id without a language prefix as it is."""
    return instruction_id.split(":", 1)[1] if instruction_id.count(":") >= 2 else instruction_id


def read_committed_verdicts(path: str | Path, prompts: list[Prompt], mode: str = "strict") -> list[dict[str, Any]]:
    """The file's verdicts as grade records (`key`, `sample` 0, `mode`), in the file's order; a row
    naming no prompt of `prompts`, another prompt's instructions, a second verdict for one prompt,
    or a verdict that is not a boolean is refused naming its line and field."""
    path = Path(path)
    _, by_text = prompt_lookup(prompts)
    by_key = {prompt.key: prompt for prompt in prompts}
    records: list[dict[str, Any]] = []
    seen: dict[Any, int] = {}
    for line, obj in iter_objects(path):
        text = require(obj, "prompt", str, path, line)
        if text not in by_text:
            raise InputError("matches no prompt's text exactly", path=path, line=line, field="prompt")
        key = by_text[text]
        if key in seen:
            raise InputError(f"a second verdict for this prompt (first on line {seen[key]})", path=path, line=line)
        seen[key] = line
        ids = require(obj, "instruction_id_list", list, path, line)
        if [_unprefixed(str(i)) for i in ids] != [_unprefixed(i) for i in by_key[key].instruction_id_list]:
            raise InputError(
                "is not the instructions of the prompt its text names",
                path=path,
                line=line,
                field="instruction_id_list",
            )
        verdicts = require(obj, "follow_instruction_list", list, path, line)
        if len(verdicts) != len(ids) or not all(isinstance(v, bool) for v in verdicts):
            raise InputError(
                f"expected {len(ids)} booleans, one per instruction",
                path=path,
                line=line,
                field="follow_instruction_list",
            )
        records.append(
            {
                "key": key,
                "sample": 0,
                mode: {"follow_all_instructions": all(verdicts), "follow_instruction_list": verdicts},
            }
        )
    return records
