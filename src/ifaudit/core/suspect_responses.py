"""Responses that may not be answers, found in a run's texts and named: never filtered.

The grader grades every response as it is; a reader of the score must still be told when some of
what was graded is not a model's answer to its prompt. Four kinds, each decided by the text graded
(what follows the last closing thinking tag) or by what the log says of it, in this order (a
response is counted under the first that fits; a cut one is counted apart, as it is still an answer):

- `empty`: nothing but whitespace (lm-eval 0.4.13 and lighteval 0.13.0 write an empty text where
  the API returned no content or failed; OpenCompass's API wrappers on an invalid prompt), or
  `null` in upstream's own format (M-IFEval's committed o1 responses), read as the empty text and
  counted apart among the empty ones (`null`).
- `placeholder`: exactly (after trimming whitespace) a text a harness writes in place of an
  answer, from the short sourced list `PLACEHOLDERS`.
- `repeated_text`: one text (trimmed) answering at least `REPEATED_TEXT_PROMPTS` distinct prompts:
  a replay's miss (`NO MATCH`), an error string or a refusal the harness logged for each prompt
  alike. A true answer can repeat too: IFEval asks some prompts for one of three fixed phrases,
  and Google's GPT-4 run answers four "My answer is maybe." and three "My answer is no.". A
  repeated text that follows every instruction of every prompt it answers (strict) is the answer
  each prompt asked for by the grader's own measure, and is not named; one that fails any of them
  is.
- `length_limited`: the log or the generation store says the server stopped at its length limit
  (`finish_reason` or inspect's `stop_reason`, one of `LENGTH_REASONS`).

Pure and deterministic: the same responses give the same findings, in prompt and sample order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ifaudit.core.records import PromptKey

REPEATED_TEXT_PROMPTS = 2  # a non-empty text given to this many distinct prompts or more is named
PREVIEW_CHARACTERS = 80  # a named text is shown this long at most (its sha256 and length kept)
MODES = ("strict", "loose")

# Texts harnesses write in place of an answer, each with where it comes from. Kept small: a text
# here is called a placeholder wherever it is the whole response, so only texts no instruction
# asks for. ("None", which OpenCompass's xunfei wrapper returns, is left out: a model may mean it.)
PLACEHOLDERS: Mapping[str, str] = {
    "(no content)": "inspect-ai 0.3.285 `NO_CONTENT` (inspect_ai/_util/constants.py), the Google "
    "provider's answer when the API returns no candidate",
    "all empty response": "OpenCompass 0.5.4 xunfei_api.py, when every try came back empty",
    "context_length_exceeded": "OpenCompass 0.5.4 unigpt_api.py, when the prompt is too long",
    "error:too long": "OpenCompass 0.5.4 sensetime_api.py, when the prompt is too long",
    "error:unsafe": "OpenCompass 0.5.4 sensetime_api.py, when the API refuses the prompt",
    "request blocked by allesapin": "OpenCompass 0.5.4 claude_allesapin.py, when the API blocks the request",
    "Sensitive content": "OpenCompass 0.5.4 zhipuai_v2_api.py, when the API refuses the prompt",
    "Thinking mode too long to extract answer": "OpenCompass 0.5.4 bluelm_api.py, when no answer follows the reasoning",
}

# What servers and harnesses say when they stopped at the length limit: OpenAI-compatible servers
# (and the generation store, and Batch API bodies) `finish_reason: length`; inspect-ai's
# `stop_reason` `max_tokens` (the request's limit) or `model_length` (the context window).
LENGTH_REASONS = frozenset({"length", "max_tokens", "model_length"})


@dataclass(frozen=True)
class Answer:
    """What the detector reads of one response."""

    key: PromptKey
    sample: int
    text: str  # the text graded: what follows the last closing thinking tag
    finish_reason: str | None = None  # as the log or store records it; None where it does not say
    null: bool = False  # the file holds `null`, read as the empty text (ifaudit.io.responses)


def _preview(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARACTERS else text[: PREVIEW_CHARACTERS - 1] + "…"


def _kind(answer: Answer, repeated: set[str]) -> str | None:
    text = answer.text.strip()
    if not text:
        return "empty"
    if text in PLACEHOLDERS:
        return "placeholder"
    if text in repeated:
        return "repeated_text"
    return None


Grades = Mapping[tuple[PromptKey, int], Mapping[str, Any]]


def _follows_all(answer: Answer, grades: Grades) -> bool:
    verdict = grades.get((answer.key, answer.sample), {}).get("strict")
    return bool(verdict and verdict["follow_all_instructions"])


def repeated_texts(answers: Sequence[Answer], grades: Grades) -> set[str]:
    """The trimmed non-empty texts that answer at least REPEATED_TEXT_PROMPTS distinct prompts,
    less those that follow every instruction (strict) wherever they answer: those are the answer
    each of their prompts asked for (a fixed phrase), by the grader's own verdicts."""
    given: dict[str, list[Answer]] = {}
    for answer in answers:
        text = answer.text.strip()
        if text and text not in PLACEHOLDERS:
            given.setdefault(text, []).append(answer)
    return {
        text
        for text, members in given.items()
        if len({answer.key for answer in members}) >= REPEATED_TEXT_PROMPTS
        and not all(_follows_all(answer, grades) for answer in members)
    }


def in_doubt(answers: Sequence[Answer], grades: Grades) -> list[tuple[PromptKey, int]]:
    """The (key, sample) of each response that may not be an answer (empty, a placeholder or a
    repeated text), in the order given."""
    repeated = repeated_texts(answers, grades)
    return [(answer.key, answer.sample) for answer in answers if _kind(answer, repeated) is not None]


def passes(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """What grade records pass, per grading mode they hold: responses following every
    instruction, and instructions followed of all."""
    found = {}
    for mode in MODES:
        graded = [record[mode] for record in records if mode in record]
        if graded:
            found[mode] = {
                "responses_passing": sum(bool(verdict["follow_all_instructions"]) for verdict in graded),
                "instructions_followed": sum(sum(map(bool, v["follow_instruction_list"])) for v in graded),
                "instructions": sum(len(verdict["follow_instruction_list"]) for verdict in graded),
            }
    return found


def _group(members: Sequence[Answer], grades: Grades) -> dict[str, Any]:
    return {
        "responses": len(members),
        "prompts": len({answer.key for answer in members}),
        "keys": list(dict.fromkeys(answer.key for answer in members)),
        "passes": passes([grades[a.key, a.sample] for a in members if (a.key, a.sample) in grades]),
    }


def _named(text: str, members: Sequence[Answer], grades: Grades) -> dict[str, Any]:
    return {
        "text": _preview(text),
        "characters": len(text),
        "sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
        **_group(members, grades),
    }


def _nulls(answers: Sequence[Answer]) -> int:
    return sum(answer.null for answer in answers)


def suspect_responses(answers: Sequence[Answer], grades: Grades) -> dict[str, Any]:
    """The findings of one run: `answers` in prompt and sample order, `grades` its grade records by
    (key, sample). `length_limited` is None where no response's log says why it stopped."""
    repeated = repeated_texts(answers, grades)
    by_kind: dict[str, list[Answer]] = {"empty": [], "placeholder": [], "repeated_text": []}
    for answer in answers:
        kind = _kind(answer, repeated)
        if kind is not None:
            by_kind[kind].append(answer)
    texts: dict[str, dict[str, list[Answer]]] = {"placeholder": {}, "repeated_text": {}}
    for kind, named in texts.items():
        for answer in by_kind[kind]:
            named.setdefault(answer.text.strip(), []).append(answer)
    said = any(answer.finish_reason is not None for answer in answers)
    cut = [answer for answer in answers if answer.finish_reason in LENGTH_REASONS]
    flagged = [answer for kind in by_kind.values() for answer in kind]
    order = {(answer.key, answer.sample): index for index, answer in enumerate(answers)}
    flagged.sort(key=lambda answer: order[answer.key, answer.sample])
    return {
        "repeated_text_prompts": REPEATED_TEXT_PROMPTS,
        "in_doubt": _group(flagged, grades),  # empty, placeholder or repeated: each named below
        # how many of the empty ones the file holds as `null` (named only where there are any)
        "empty": {
            **_group(by_kind["empty"], grades),
            **({"null": nulls} if (nulls := _nulls(by_kind["empty"])) else {}),
        },
        "placeholders": [
            {**_named(text, members, grades), "source": PLACEHOLDERS[text]}
            for text, members in texts["placeholder"].items()
        ],
        "repeated_texts": [_named(text, members, grades) for text, members in texts["repeated_text"].items()],
        "length_limited": _group(cut, grades) if said else None,
    }
