"""Which texts another Unicode database could grade differently: the exposure check.

The reference grades are made on Python 3.11, whose Unicode database is 14.0. Python 3.12 (15.0)
and 3.13 (15.1) classify some code points differently (U+1DF25 is a lowercase letter from 15.0 on),
so a text holding one of them can get another verdict there; a text holding none of them cannot,
since every property the graders read of a character is the same (docs/environment_sensitivity.md).
`unicode_exposure.json`, made by tools/unicode_exposure.py from each Python's own `unicodedata`,
`str` and `re`, lists per Unicode version the code points whose properties differ from 14.0's: its
exposure set. Its sha256 is in every checker task's grading fingerprint.

A run graded under another Unicode version counts only if no prompt and no response it grades
holds a code point of that version's exposure set; a version without a set counts no run.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from importlib import resources
from typing import Any

from ifaudit.core.records import Prompt, Response
from ifaudit.io.canonical import sha256_bytes

REFERENCE_UNICODE = "14.0.0"
_DATA = "unicode_exposure.json"
# Code points and places a reason line names before it says how many more (the summary lists all).
_NAMED = 10


@functools.cache
def exposure_bytes() -> bytes:
    return resources.files("ifaudit.tasks").joinpath(_DATA).read_bytes()


def exposure_sha256() -> str:
    """What the grading fingerprint records of the exposure data."""
    return sha256_bytes(exposure_bytes())


def parse_ranges(ranges: Iterable[str]) -> frozenset[str]:
    """`1DF25..1DF2A` and `0CF3` (UCD notation) as the set of their characters."""
    characters: set[str] = set()
    for item in ranges:
        first, _, last = item.partition("..")
        characters.update(map(chr, range(int(first, 16), int(last or first, 16) + 1)))
    return frozenset(characters)


@functools.cache
def exposed_characters(version: str) -> frozenset[str] | None:
    """The exposure set of Unicode `version` (empty for the reference), None if there is none."""
    exposed = json.loads(exposure_bytes())["exposed"].get(version)
    return None if exposed is None else parse_ranges(exposed["ranges"])


def code_point(char: str) -> str:
    return f"U+{ord(char):04X}"


def prompt_texts(prompt: Prompt) -> Iterable[str]:
    """Every text of a prompt a checker reads: the prompt, its context and its settings' strings."""
    yield prompt.prompt
    yield prompt.context
    for kwargs in prompt.kwargs:
        yield from _strings(kwargs)


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _place(where: Mapping[str, Any]) -> str:
    return f"response {where['key']}/{where['sample']}" if "sample" in where else f"prompt {where['key']}"


def exposure_check(version: str, prompts: Iterable[Prompt], responses: Iterable[Response]) -> dict[str, Any]:
    """The record of a run's exposure check under Unicode `version`: `passed`, and each exposed code
    point with the prompts (`key`) and responses (`key`, `sample`) that hold it."""
    exposed = exposed_characters(version)
    record: dict[str, Any] = {"version": version, "reference": REFERENCE_UNICODE, "exposure_sha256": exposure_sha256()}
    if exposed is None:
        return {**record, "passed": False, "problem": f"no exposure set for Unicode {version}", "exposed": []}
    found: dict[str, list[dict[str, Any]]] = {}
    places: list[tuple[dict[str, Any], Iterable[str]]] = [({"key": p.key}, prompt_texts(p)) for p in prompts]
    places += [({"key": r.key, "sample": r.sample}, [r.text]) for r in responses]
    for where, texts in places:
        held = set().union(*(exposed.intersection(text) for text in texts)) if exposed else set()
        for char in held:
            found.setdefault(code_point(char), []).append(where)
    listed = [{"code_point": name, "in": found[name]} for name in sorted(found, key=lambda name: int(name[2:], 16))]
    return {**record, "passed": not listed, "exposed": listed}


def exposure_problem(check: Mapping[str, Any]) -> str:
    """Why a failed check refuses the run, in one phrase naming code points and places."""
    if "problem" in check:
        return f"graded under Unicode {check['version']}: {check['problem']}, so no text is known to grade as under {check['reference']}"
    named = [
        f"{item['code_point']} ({', '.join(_place(where) for where in item['in'][:_NAMED])}"
        + (f" and {len(item['in']) - _NAMED} more)" if len(item["in"]) > _NAMED else ")")
        for item in check["exposed"][:_NAMED]
    ]
    more = len(check["exposed"]) - _NAMED
    return (
        f"graded under Unicode {check['version']}, whose properties differ from {check['reference']} at code points "
        f"the run's texts hold: {'; '.join(named)}" + (f"; and {more} more code points" if more > 0 else "")
    )
