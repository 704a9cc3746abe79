"""The Arabic gate of ifeval_arabic_inception_hf_langcheck (seed §2; docs/language_gates.md
where it is silent)."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import regex

from ifaudit.checkers.arabic.text import is_arabic_char, is_ascii_letter
from ifaudit.checkers.verdict import PASS, GateVerdict
from ifaudit.checkers.repetition import repeats_back_to_back

ENGLISH_RATIO_CAP_HF = 0.07
_SENTENCE_END_HF = regex.compile(r"[.!?؟\n]+")
_FORMAT_WORDS = regex.compile(r"\b(?:html|json|jsonl)\b", regex.IGNORECASE)


def letter_words(text: str) -> list[str]:
    """Words as runs of alphabetic characters, each keeping the combining marks that follow its
    letters (tashkeel stays on its base letter; the word is not split at a diacritic)."""
    words: list[str] = []
    current: list[str] = []
    for char in text:
        if char.isalpha() or (current and unicodedata.combining(char)):
            current.append(char)
        elif current:
            words.append("".join(current))
            current = []
    if current:
        words.append("".join(current))
    return words


def word_script(word: str) -> str:
    """ "arabic", "english", "mixed" (Arabic and English letters) or "other"."""
    letters = [char for char in word if not unicodedata.combining(char)]
    arabic = sum(is_arabic_char(char) for char in letters)
    english = sum(is_ascii_letter(char) for char in letters)
    if arabic + english < len(letters):
        return "other"
    if arabic and english:
        return "mixed"
    return "arabic" if arabic else "english"


def format_exempt(instruction_ids: Sequence[str], prompt_text: str) -> bool:
    """JSON or HTML output is expected: the English-ratio cap does not apply."""
    return "detectable_format:json_format" in instruction_ids or bool(_FORMAT_WORDS.search(prompt_text))


def arabic_hf_gate(text: str, instruction_ids: Sequence[str], prompt_text: str) -> GateVerdict:
    """In order, first failure wins: empty; script (mixed or other-script words); repetition of
    any 1-4 sentences or 1-6 words twice in a row; more than 7 % English words unless exempt."""
    if not text.strip():
        return GateVerdict(False, "empty")
    words = letter_words(text)
    scripts = [word_script(word) for word in words]
    if "mixed" in scripts:
        return GateVerdict(False, "mixed_script_word")
    if "other" in scripts:
        return GateVerdict(False, "other_script")
    sentences = [piece.strip() for piece in _SENTENCE_END_HF.split(text) if piece.strip()]
    if repeats_back_to_back(sentences, 2, 1, 4):
        return GateVerdict(False, "repeated_sentences")
    if repeats_back_to_back(words, 2, 1, 6):
        return GateVerdict(False, "repeated_words")
    if (
        words
        and scripts.count("english") / len(words) > ENGLISH_RATIO_CAP_HF
        and not format_exempt(instruction_ids, prompt_text)
    ):
        return GateVerdict(False, "english_ratio")
    return PASS
