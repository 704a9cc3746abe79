"""The English gate of ifeval_langcheck (seed §1; docs/language_gates.md where it is silent)."""

from __future__ import annotations

import regex

from ifaudit.checkers.verdict import GateVerdict
from ifaudit.checkers.repetition import repetition_verdict, strip_markup

_LETTER_RUN = regex.compile(r"\p{L}+")
ARABIC_PUNCTUATION = frozenset("،؛؟٪٫٬۔«»")
_ENGLISH_WORD = regex.compile(r"^[a-zA-Z]+$")


def english_gate(text: str) -> GateVerdict:
    r"""In order, first failure wins: empty; Arabic punctuation; any letter-word (\p{L}+) not
    purely ASCII letters; repetition (Inception's three detectors) after strip_markup."""
    if not text.strip():
        return GateVerdict(False, "empty")
    if any(char in ARABIC_PUNCTUATION for char in text):
        return GateVerdict(False, "arabic_punctuation")
    if any(not _ENGLISH_WORD.match(word) for word in _LETTER_RUN.findall(text)):
        return GateVerdict(False, "non_english_word")
    return repetition_verdict(strip_markup(text))
