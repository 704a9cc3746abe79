"""What a run's summary says of its responses that may not be answers, in words: one sentence for
the headline line, the report, its first HTML screen and the claims audit alike, so each says the
same. The run still counts (see ifaudit.steps.grading.summary): the sentence says what its figures
hold, it takes nothing out of them. `text` escapes a response's text for the output at hand."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

Text = Callable[[object], str]
_SHOWN = 3  # texts quoted in a sentence; the report lists every one


def _quoted(named: Sequence[Mapping[str, Any]], text: Text) -> str:
    """`'NO MATCH' (7 prompts), 'My answer is no.' (3)`: each text with the prompts it answers."""
    shown = ", ".join(
        f"'{text(item['text'])}' ({item['prompts']}{_prompts(item['prompts']) if index == 0 else ''})"
        for index, item in enumerate(named[:_SHOWN])
    )
    return shown + (f" and {len(named) - _SHOWN} more" if len(named) > _SHOWN else "")


def _prompts(count: int) -> str:
    return " prompt" if count == 1 else " prompts"


def _are(count: int) -> str:
    return f"{count} is" if count == 1 else f"{count} are"


def kinds(found: Mapping[str, Any], text: Text) -> list[str]:
    """Each kind of response in doubt that the run has, with its number and texts."""
    parts = []
    if found["empty"]["responses"]:
        parts.append(f"{_are(found['empty']['responses'])} empty{_null(found['empty'].get('null', 0))}")
    if placeholders := found["placeholders"]:
        count = sum(item["responses"] for item in placeholders)
        parts.append(f"{_are(count)} a harness's placeholder text: {_quoted(placeholders, text)}")
    if repeated := found["repeated_texts"]:
        count = sum(item["responses"] for item in repeated)
        which = "one text" if len(repeated) == 1 else f"{len(repeated)} texts each"
        parts.append(f"{_are(count)} {which} given to several prompts: {_quoted(repeated, text)}")
    return parts


def _null(count: int) -> str:
    """How many of the empty responses are `null` in the file (upstream's format; graded as empty)."""
    if not count:
        return ""
    return f" ({count} of them null in the file, graded as the empty response, as M-IFEval's grader grades a null)"


def passes_phrase(passes: Mapping[str, Mapping[str, int]], mode: str = "strict") -> str:
    """`2 pass every instruction (strict), 5 of their 12 instructions followed`."""
    if mode not in passes:
        return ""
    found = passes[mode]
    return (
        f"{found['responses_passing']} pass every instruction ({mode}), {found['instructions_followed']} of their "
        f"{found['instructions']} instructions followed"
    )


def in_doubt_sentence(found: Mapping[str, Any] | None, text: Text) -> str:
    """`7 responses may not be answers: 7 are one text given to several prompts: 'NO MATCH' (7
    prompts); of them 3 pass every instruction (strict), 4 of their 10 instructions followed`; ""
    for none."""
    if not found or not found["in_doubt"]["responses"]:
        return ""
    doubt = found["in_doubt"]
    sentence = f"{doubt['responses']} responses may not be answers: {'; '.join(kinds(found, text))}"
    graded = passes_phrase(doubt["passes"])
    return sentence + (f"; of them {graded}" if graded else "")


def length_sentence(found: Mapping[str, Any] | None) -> str:
    """`4 responses were cut at the length limit; of them 1 pass every instruction ...`; "" for none."""
    cut = found.get("length_limited") if found else None
    if not cut or not cut["responses"]:
        return ""
    graded = passes_phrase(cut["passes"])
    return f"{cut['responses']} responses were cut at the length limit" + (f"; of them {graded}" if graded else "")


def said(found: Mapping[str, Any] | None, text: Text) -> list[str]:
    """Both sentences, those that apply."""
    return [sentence for sentence in (in_doubt_sentence(found, text), length_sentence(found)) if sentence]
