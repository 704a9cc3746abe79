"""Response files: one JSON object per line, any number of responses per prompt.

A response names its prompt by `key` (or `id`, as InFoBench files do), or by the exact `prompt`
text (upstream's own response format); its text is `response` (or `output`). `sample` (default
0) tells several responses to one prompt apart: repeat passes or sampled answers. A (key,
sample) pair may occur once.

A record that says two things is refused, naming both fields: `response` and `output` together,
`key` and `id` together, or a `key` whose prompt's text differs from the record's `prompt`.

A `null` response is refused, except in upstream's own format (`prompt` and `response`, no `key`:
the files M-IFEval commits), whose graders define it: M-IFEval's `evaluation_main.py` grades a
response that is not a string as following nothing (`isinstance(response, str) and ...`, lines
120 and 139), as the Arabic IFEval reference grades a null output as the empty string. There it
is read as the empty response, which every task's grader grades so, and marked `null` for the
disclosures (ifaudit.core.suspect_responses counts it among the empty answers).
"""

from __future__ import annotations

from pathlib import Path

from ifaudit.core.errors import InputError
from ifaudit.io.jsonl import iter_objects, require
from ifaudit.io.prompts import prompt_lookup
from ifaudit.core.records import Prompt, PromptKey, Response


# A deliberate deviation from the Arabic IFEval reference, which grades a missing or null output
# as the empty string (spec §1): here a failed generation is never scored silently. Only upstream's
# own format (keyed by prompt text) reads a null as upstream's graders do (the module's docstring).
NO_OUTPUT_HINT = (
    "a response with no text is refused, not graded as empty (as the Arabic IFEval reference "
    'would); if the model really answered nothing, write "response": "" (a null is read as empty '
    "only in upstream's own format, 'prompt' and 'response' without 'key', as M-IFEval grades it)"
)


def read_responses(path: str | Path, prompts: list[Prompt]) -> list[Response]:
    """Read responses and tie each to a prompt of `prompts`; unknown prompts are errors."""
    path = Path(path)
    by_key, by_text = prompt_lookup(prompts)
    responses: list[Response] = []
    seen: dict[tuple[PromptKey, int], int] = {}
    for line, obj in iter_objects(path):
        text_field = _one_of(obj, "response", "output", path, line)
        null = _upstream_null(obj)
        if obj.get(text_field) is None and not null:
            raise InputError(
                "missing" if text_field not in obj else "expected string, got null (no output)",
                path=path,
                line=line,
                field=text_field,
                hint=NO_OUTPUT_HINT,
            )
        text = "" if null else require(obj, text_field, str, path, line)
        key_field = _one_of(obj, "key", "id", path, line)
        if key_field in obj:
            key = require(obj, key_field, (int, str), path, line)
            if key not in by_key:
                raise InputError(
                    f"no prompt has key {key!r}",
                    path=path,
                    line=line,
                    field=key_field,
                    hint="check that the responses belong to this prompt set",
                )
            if "prompt" in obj and obj["prompt"] != by_key[key].prompt:
                raise InputError(
                    f"is not the text of the prompt that '{key_field}' {key!r} names "
                    f"({by_key[key].path}:{by_key[key].line}): {_preview(str(obj['prompt']))}",
                    path=path,
                    line=line,
                    field="prompt",
                    hint=f"drop 'prompt' or correct '{key_field}'",
                )
        elif "prompt" in obj:
            prompt_text = require(obj, "prompt", str, path, line)
            if prompt_text not in by_text:
                raise InputError(
                    f"matches no prompt's text exactly: {_preview(prompt_text)}",
                    path=path,
                    line=line,
                    field="prompt",
                    hint="add a 'key' field, or use the prompt set these responses answer",
                )
            key = by_text[prompt_text]
        else:
            raise InputError("missing: a response needs 'key' or 'prompt'", path=path, line=line, field="key")
        sample = obj.get("sample", 0)
        if not isinstance(sample, int) or isinstance(sample, bool) or sample < 0:
            raise InputError(f"expected a non-negative integer, got {sample!r}", path=path, line=line, field="sample")
        if (key, sample) in seen:
            raise InputError(
                f"duplicate response for key {key!r}, sample {sample} (first on line {seen[key, sample]})",
                path=path,
                line=line,
                field="sample",
                hint="give each response to the same prompt its own 'sample' number",
            )
        seen[key, sample] = line
        responses.append(Response(key=key, sample=sample, text=text, line=line, null=null))
    return responses


def _upstream_null(obj: dict) -> bool:
    """A `null` response in upstream's own format: named by its prompt's text, with no key."""
    return "response" in obj and obj["response"] is None and "prompt" in obj and not {"key", "id", "output"} & set(obj)


def _one_of(obj: dict, first: str, second: str, path: Path, line: int) -> str:
    """The field naming one thing (`first` unless only `second` is there); both at once is an error."""
    if first in obj and second in obj:
        raise InputError(
            f"given together with '{first}'; a response has one of them",
            path=path,
            line=line,
            field=second,
            hint=f"keep '{first}' or '{second}', not both",
        )
    return second if second in obj else first


def _preview(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= width else flat[: width - 1] + "…")
