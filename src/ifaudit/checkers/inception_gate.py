"""Inception's per-prompt gate (spec §4): repetition first, then the language rule the
prompt's `lang` selects (§4.3 - §4.6), faithfully, quirks included."""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

import regex

from ifaudit.checkers.arabic.text import is_arabic_char, is_ascii_letter
from ifaudit.checkers.verdict import PASS, GateVerdict
from ifaudit.checkers.repetition import repetition_verdict, strip_markup


def inception_preprocess(text: str) -> str:
    """Spec §4.1: cut at the first `P.P.S.`, then strip_markup."""
    cut = text.find("P.P.S.")
    return strip_markup(text if cut < 0 else text[:cut])


_LETTER_RUN = regex.compile(r"\p{L}+")
_ENGLISH_RATIO_CAP_AR = 0.05


def _ar_en_char(char: str) -> bool:
    return is_ascii_letter(char) or is_arabic_char(char) or 0x2080 <= ord(char) <= 0x2089


def language_rule(lang: object) -> str:
    """Spec §4.3: which rule a prompt's `lang` selects ("ar", "ar+en" or "en")."""
    if isinstance(lang, str):
        lang = [lang] if lang else []
    codes = set(cast("Iterable[str]", lang or ["en"]))  # a list of codes, as read from the prompt file
    if codes == {"ar", "en"}:
        return "ar+en"
    first = min(codes)
    if first in ("ar", "en"):
        return first
    raise ValueError(f"unsupported lang {lang!r}")


def arabic_rule(text: str) -> GateVerdict:
    runs = _LETTER_RUN.findall(text)
    if not runs:
        return GateVerdict(False, "language:no_letters")
    english = 0
    for run in runs:
        if all(is_arabic_char(char) for char in run):
            continue
        if all(is_ascii_letter(char) for char in run):
            english += 1
            continue
        return GateVerdict(False, "language:other_script")
    if english / len(runs) > _ENGLISH_RATIO_CAP_AR:
        return GateVerdict(False, "language:english_ratio")
    if english == len(runs):
        return GateVerdict(False, "language:no_arabic")
    return PASS


def arabic_english_rule(text: str) -> GateVerdict:
    if not any(_ar_en_char(char) for char in text):
        return GateVerdict(False, "language:no_arabic_or_english")
    for run in _LETTER_RUN.findall(text):
        if not all(_ar_en_char(char) for char in run):
            return GateVerdict(False, "language:other_script")
    return PASS


_EN_FORBIDDEN = (
    (0x0600, 0x06FF),
    (0x0750, 0x077F),
    (0x08A0, 0x08FF),
    (0xFB50, 0xFDFF),
    (0xFE70, 0xFEEF),
    (0x0590, 0x05FF),
    (0x0400, 0x04FF),
    (0x4E00, 0x9FFF),
    (0x3040, 0x309F),
    (0x30A0, 0x30FF),
    (0xAC00, 0xD7AF),
)


def english_rule(text: str) -> GateVerdict:
    """Spec §4.6 (not used by the dataset): no Arabic, Hebrew, Cyrillic, CJK, kana or Hangul."""
    for char in text:
        code = ord(char)
        if char in "،؛؟" or any(low <= code <= high for low, high in _EN_FORBIDDEN):
            return GateVerdict(False, "language:non_english")
    return PASS


_RULES = {"ar": arabic_rule, "ar+en": arabic_english_rule, "en": english_rule}


def inception_gate(cleaned: str, lang: object) -> GateVerdict:
    """Spec §4: repetition detectors (always), then the language rule `lang` selects, on the
    gate-preprocessed form of the cleaned response."""
    text = inception_preprocess(cleaned)
    verdict = repetition_verdict(text)
    return verdict if not verdict.passed else _RULES[language_rule(lang)](text)
