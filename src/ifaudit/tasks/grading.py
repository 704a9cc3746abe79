"""The IFEval driver: one response at a time, strict and loose, with the hidden randomness fixed.

It serves every task (ifaudit.tasks.registry): Google's registry or ours, with or without loose grading,
cleaning and a language gate.

This is the logic of upstream's `evaluation_lib.test_instruction_following_strict/_loose`, run
over whichever checker registry is loaded, with two differences that do not change a grade:
responses are graded one at a time (upstream looks them up by prompt text, so it cannot grade
several responses to one prompt), and both random generators the checkers reach are reset before
each response's strict grading and again before its loose grading. Without that, langdetect and
`letter_frequency`'s substitute letter (prompts 1122 and 1129) make grades vary between runs.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import langdetect

from ifaudit.io.canonical import sha256_bytes
from ifaudit.core.errors import InputError
from ifaudit.tasks.graders import CheckerRegistry
from ifaudit.checkers.inception_cleaning import inception_clean
from ifaudit.checkers.thinking import strip_thinking
from ifaudit.io.lifetime import die_with_parent
from ifaudit.core.records import Prompt
from ifaudit.core.records import Response
from ifaudit.checkers.gates import Gate

SEED = 0


class Task(Protocol):
    """What the driver reads of a task graded by checkers (ifaudit.tasks.base.CheckerTask): the
    driver serves the task kinds, so it names what it needs rather than importing them."""

    @property
    def name(self) -> str: ...
    @property
    def modes(self) -> tuple[str, ...]: ...
    @property
    def clean(self) -> bool: ...
    @property
    def gate(self) -> Gate | None: ...


# What a checker raises on settings it cannot use: reported against the prompt, never a traceback.
CHECKER_FAILURES = (TypeError, ValueError, KeyError, AttributeError, IndexError, re.error)


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


def follow_list(
    registry: CheckerRegistry, prompt: Prompt, texts: Sequence[str], first: Sequence[bool] | None = None
) -> list[bool]:
    """Per instruction: does any of `texts` (tried in order) follow it? Empty texts never do.

    `first`, if given, is already known per instruction for texts[0]: the strict verdicts, when
    loose grading's first variant is the strict text. Every checker is still built, in the same
    order after the same reset, so the random draws of building are the same as in the strict
    pass; checking draws none (langdetect seeds a generator of its own per call), so the
    verdict on texts[0] is the strict one and checking it again only costs time.

    Each distinct text is checked once: loose grading's variants repeat themselves whenever a
    response has no `*`, or one line (half of them, then), and a checker's verdict on a text is
    the same at every call (checking draws no randomness; the one checker that changes itself
    when checking, upstream's `end_checker`, only normalizes its phrase, the same way each time),
    so `any` over the distinct texts is `any` over all of them.

    A checker that fails on a response (a setting of the wrong type that building accepted, say)
    is reported against the prompt's line and setting, not as a traceback."""
    distinct = list(dict.fromkeys(texts))  # texts[0] first, then the others in order
    rest = distinct if first is None else distinct[1:]
    followed = []
    for index in range(len(prompt.instruction_id_list)):
        checker = build_instruction(registry, prompt, index)
        known = first is not None and first[index]
        try:
            followed.append(known or any(text.strip() and checker.check_following(text) for text in rest))
        except CHECKER_FAILURES as exc:
            raise InputError(
                f"{prompt.instruction_id_list[index]} cannot check a response with these settings: "
                f"{type(exc).__name__}: {exc}",
                path=prompt.path,
                line=prompt.line,
                field=f"kwargs[{index}]",
            ) from None
    return followed


def _verdict(followed: list[bool]) -> dict[str, Any]:
    return {"follow_all_instructions": all(followed), "follow_instruction_list": followed}


def grade_response(registry: CheckerRegistry, task: Task, prompt: Prompt, response: Response) -> dict[str, Any]:
    """One canonical grade record; depends only on the prompt, the response and the registry.

    Every task grades the answer after the last closing thinking tag; tasks that clean (Inception's
    Arabic IFEval) check the cleaned text. Randomness is reset before each grading mode."""
    text, thinking_stripped = strip_thinking(response.text)
    if task.clean:
        text = inception_clean(text)
    record: dict[str, Any] = {
        "grader": registry.identity().as_record(),
        "instruction_id_list": list(prompt.instruction_id_list),
        "key": prompt.key,
        "response_sha256": sha256_bytes(response.text.encode("utf-8")),
        "sample": response.sample,
        "task": task.name,
        "thinking_stripped": thinking_stripped,
    }
    for mode in task.modes:
        reset_randomness()
        if mode == "strict":
            record[mode] = _verdict(follow_list(registry, prompt, [text]))
        else:  # loose tries the strict text first: its verdicts are the strict ones
            strict = record.get("strict", {}).get("follow_instruction_list")
            record[mode] = _verdict(follow_list(registry, prompt, loose_variants(text), first=strict))
    if task.gate is not None:
        record["gate"] = task.gate.verdict(prompt, text).as_record()
    return record


def validate_prompts(registry: CheckerRegistry, prompts: Iterable[Prompt]) -> None:
    """Build every instruction once, so a bad id or kwarg fails before grading, naming its line."""
    for prompt in prompts:
        for index, instruction_id in enumerate(prompt.instruction_id_list):
            if instruction_id not in registry.instructions:
                raise InputError(
                    f"unknown instruction id {instruction_id!r} for grader {registry.name}",
                    path=prompt.path,
                    line=prompt.line,
                    field=f"instruction_id_list[{index}]",
                )
            try:
                build_instruction(registry, prompt, index)
            except CHECKER_FAILURES as exc:
                raise InputError(
                    f"cannot build {instruction_id}: {type(exc).__name__}: {exc}",
                    path=prompt.path,
                    line=prompt.line,
                    field=f"kwargs[{index}]",
                ) from None


def canonical_order(prompts: Sequence[Prompt], responses: Iterable[Response]) -> list[Response]:
    """Prompt-file order, then sample number, whatever the order of the response file."""
    position = {prompt.key: index for index, prompt in enumerate(prompts)}
    return sorted(responses, key=lambda r: (position[r.key], r.sample))


def grade_all(
    registry: CheckerRegistry,
    task: Task,
    prompts: Sequence[Prompt],
    responses: Sequence[Response],
    progress: Callable[[Iterable[Any], int], Iterable[Any]] = lambda items, total: items,
) -> list[dict[str, Any]]:
    """Grade every response, in the order given (see canonical_order)."""
    by_key = {prompt.key: prompt for prompt in prompts}
    return [grade_response(registry, task, by_key[r.key], r) for r in progress(responses, len(responses))]


_WORKER: dict[str, Any] = {}
_CHUNK = 32  # responses per work item: small enough for an even spread, large enough to be cheap


def _grade_chunk(chunk: Sequence[Response]) -> list[dict[str, Any]]:
    registry, task, by_key = _WORKER["registry"], _WORKER["task"], _WORKER["by_key"]
    return [grade_response(registry, task, by_key[response.key], response) for response in chunk]


def grade_in_parallel(
    registry: CheckerRegistry,
    task: Task,
    prompts: Sequence[Prompt],
    responses: Sequence[Response],
    jobs: int,
    progress: Callable[[Iterable[Any], int], Iterable[Any]] = lambda items, total: items,
) -> list[dict[str, Any]]:
    """grade_all over `jobs` forked worker processes. Each worker inherits the loaded registry and
    NLTK/langdetect state, so those costs are paid once; chunks come back in order, and since every
    response is graded alone with its randomness reset, the records equal grade_all's exactly."""
    if jobs <= 1 or len(responses) <= _CHUNK:
        return grade_all(registry, task, prompts, responses, progress)
    import multiprocessing

    _WORKER.update(registry=registry, task=task, by_key={prompt.key: prompt for prompt in prompts})
    chunks = [responses[start : start + _CHUNK] for start in range(0, len(responses), _CHUNK)]
    with multiprocessing.get_context("fork").Pool(jobs, initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
        graded = (record for part in pool.imap(_grade_chunk, chunks) for record in part)
        return list(progress(graded, len(responses)))
