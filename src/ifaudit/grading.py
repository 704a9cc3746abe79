"""The IFEval driver: one response at a time, strict and loose, with the hidden randomness fixed.

This is the logic of upstream's `evaluation_lib.test_instruction_following_strict/_loose`, run
over whichever checker registry is loaded, with two differences that do not change a grade:
responses are graded one at a time (upstream looks them up by prompt text, so it cannot grade
several responses to one prompt), and both random generators the checkers reach are reset before
each response's strict grading and again before its loose grading. Without that, langdetect and
`letter_frequency`'s substitute letter (prompts 1122 and 1129) make grades vary between runs.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import langdetect

from ifaudit.canonical import sha256_bytes
from ifaudit.errors import InputError
from ifaudit.graders import CheckerRegistry
from ifaudit.prompts import Prompt
from ifaudit.responses import Response

SEED = 0


def reset_randomness() -> None:
    langdetect.DetectorFactory.seed = SEED
    random.seed(SEED)


def loose_variants(response: str) -> list[str]:
    """The eight texts loose grading tries, in upstream's order: as is, without `*`, without the
    first line, the last line, or both, and those three again without `*`."""
    lines = response.split("\n")
    without_first = "\n".join(lines[1:]).strip()
    without_last = "\n".join(lines[:-1]).strip()
    without_both = "\n".join(lines[1:-1]).strip()
    return [
        response,
        response.replace("*", ""),
        without_first,
        without_last,
        without_both,
        without_first.replace("*", ""),
        without_last.replace("*", ""),
        without_both.replace("*", ""),
    ]


def build_instruction(registry: CheckerRegistry, prompt: Prompt, index: int) -> Any:
    instruction_id = prompt.instruction_id_list[index]
    checker = registry.instructions[instruction_id](instruction_id)
    checker.build_description(**prompt.kwargs[index])
    args = checker.get_instruction_args()
    if args and "prompt" in args:
        checker.build_description(prompt=prompt.prompt)
    return checker


def follow_list(registry: CheckerRegistry, prompt: Prompt, texts: Sequence[str]) -> list[bool]:
    """Per instruction: does any of `texts` (tried in order) follow it? Empty texts never do."""
    followed = []
    for index in range(len(prompt.instruction_id_list)):
        checker = build_instruction(registry, prompt, index)
        followed.append(any(text.strip() and checker.check_following(text) for text in texts))
    return followed


def _verdict(followed: list[bool]) -> dict[str, Any]:
    return {"follow_all_instructions": all(followed), "follow_instruction_list": followed}


def grade_response(registry: CheckerRegistry, prompt: Prompt, response: Response, task: str) -> dict[str, Any]:
    """One canonical grade record; depends only on the prompt, the response and the registry."""
    reset_randomness()
    strict = follow_list(registry, prompt, [response.text])
    reset_randomness()
    loose = follow_list(registry, prompt, loose_variants(response.text))
    return {
        "grader": registry.identity(),
        "instruction_id_list": list(prompt.instruction_id_list),
        "key": prompt.key,
        "loose": _verdict(loose),
        "response_sha256": sha256_bytes(response.text.encode("utf-8")),
        "sample": response.sample,
        "strict": _verdict(strict),
        "task": task,
    }


def validate_prompts(registry: CheckerRegistry, prompts: Iterable[Prompt]) -> None:
    """Build every instruction once, so a bad id or kwarg fails before grading, naming its line."""
    for prompt in prompts:
        for index, instruction_id in enumerate(prompt.instruction_id_list):
            if instruction_id not in registry.instructions:
                raise InputError(
                    f"unknown instruction id {instruction_id!r} for grader {registry.name}",
                    path=prompt.path, line=prompt.line, field=f"instruction_id_list[{index}]",
                )
            try:
                build_instruction(registry, prompt, index)
            except (TypeError, ValueError, KeyError, AttributeError) as exc:
                raise InputError(
                    f"cannot build {instruction_id}: {type(exc).__name__}: {exc}",
                    path=prompt.path, line=prompt.line, field=f"kwargs[{index}]",
                ) from None


def canonical_order(prompts: Sequence[Prompt], responses: Iterable[Response]) -> list[Response]:
    """Prompt-file order, then sample number, whatever the order of the response file."""
    position = {prompt.key: index for index, prompt in enumerate(prompts)}
    return sorted(responses, key=lambda r: (position[r.key], r.sample))


def grade_all(
    registry: CheckerRegistry,
    prompts: Sequence[Prompt],
    responses: Sequence[Response],
    task: str,
    progress: Callable[[Iterable[Response], int], Iterable[Response]] = lambda items, total: items,
) -> list[dict[str, Any]]:
    """Grade every response, in the order given (see canonical_order)."""
    by_key = {prompt.key: prompt for prompt in prompts}
    return [grade_response(registry, by_key[r.key], r, task) for r in progress(responses, len(responses))]
