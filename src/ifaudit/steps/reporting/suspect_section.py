"""The report's word on responses that may not be answers: a section of `report.md` near its top
naming, per run, every such text with its number and what it passes, and one line per run for the
HTML report's first screen. Read from the runs' summaries as the report's disclosures hold them
(`disclosures()["runs"][run]["suspect_responses"]`); nothing is recomputed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ifaudit.core.suspect_responses import MODES
from ifaudit.io.formats.escape import markdown, markdown_code, one_line
from ifaudit.steps.grading.suspect_text import in_doubt_sentence, length_sentence, passes_phrase, said

_KEYS_SHOWN = 20


def _keys(keys: Sequence[Any]) -> str:
    shown = ", ".join(markdown(key) for key in keys[:_KEYS_SHOWN])
    return shown + (f" and {len(keys) - _KEYS_SHOWN} more" if len(keys) > _KEYS_SHOWN else "")


def _passes(passes: Mapping[str, Mapping[str, int]]) -> str:
    return "; ".join(phrase for mode in MODES if (phrase := passes_phrase(passes, mode)))


def _group_line(what: str, group: Mapping[str, Any]) -> str:
    return (
        f"  - {what}: {group['responses']} responses to {group['prompts']} prompts (keys {_keys(group['keys'])}); "
        f"{_passes(group['passes']) or 'not graded'}."
    )


def _run_lines(run: str, found: Mapping[str, Any]) -> list[str]:
    sentences = [sentence for sentence in (in_doubt_sentence(found, markdown), length_sentence(found)) if sentence]
    lines = [f"- **{markdown(run)}**: {'. '.join(sentences)}."]
    if found["empty"]["responses"]:
        nulls = found["empty"].get("null", 0)
        what = "empty or only whitespace" + (f" ({nulls} of them `null` in the file, graded as empty)" if nulls else "")
        lines.append(_group_line(what, found["empty"]))
    for item in found["placeholders"]:
        lines.append(_group_line(f"the placeholder {markdown_code(item['text'])} of {markdown(item['source'])}", item))
    for item in found["repeated_texts"]:
        text = f"the text {markdown_code(item['text'])} ({item['characters']} characters, sha256 {item['sha256'][:12]})"
        lines.append(_group_line(text, item))
    if found.get("length_limited") and found["length_limited"]["responses"]:
        lines.append(_group_line("cut at the length limit", found["length_limited"]))
    return lines


def suspect_section(runs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """`## Responses that may not be answers` for the runs (in order) that have any; none else."""
    named: dict[str, Mapping[str, Any]] = {
        run: facts["suspect_responses"] for run, facts in runs.items() if said(facts.get("suspect_responses"), str)
    }
    if not named:
        return []
    threshold = next(iter(named.values()))["repeated_text_prompts"]
    lines = [line for run, found in named.items() for line in _run_lines(run, found)]
    return [
        "## Responses that may not be answers",
        "",
        "Graded as they are by the run's grader, nothing filtered: the runs count, and their figures above hold "
        "these responses as graded. A response is in doubt when its text (after any reasoning) is empty, is a "
        f"text a harness writes in place of an answer, or is one text given to {threshold} or more distinct "
        "prompts (a true answer can repeat, as a prompt asking for a fixed phrase gets it: such texts are named "
        "here, not judged); a response is cut when its log or the generation store says the server stopped at "
        "its length limit. See docs/importing.md.",
        "",
        *lines,
        "",
    ]


def front_lines(runs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per run that has any, for the HTML report's first screen (plain text)."""
    return [
        f"{one_line(run)}: {'. '.join(sentences)}."
        for run, facts in runs.items()
        if (sentences := said(facts.get("suspect_responses"), one_line))
    ]
