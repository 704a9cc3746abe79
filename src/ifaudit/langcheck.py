"""Language and repetition gates: pure functions on strings.

A gate decides whether a response is in the language a task demands and free of degenerate
repetition; a response that fails keeps its place in the denominator with every instruction
counted as not followed. Each verdict names the rule that failed first.

Inception's Arabic gate follows shared/specs/arabic_ifeval.md §2 and §4 (faithfully, quirks
included). The English gate and the Arabic-HF gate follow the seed document
(shared/seeds/ifeval_langcheck_tasks.txt §1 and §2); where it is silent, docs/language_gates.md
says what we chose.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence

from dataclasses import dataclass
from typing import cast

import numpy as np
import regex

from ifaudit.arabic_text import is_arabic_char, is_ascii_letter

THINK_CLOSE_TAGS = ("</think>", "</think_fast>", "</think_faster>")


@dataclass(frozen=True)
class GateVerdict:
    passed: bool
    rule: str | None = None  # the first rule that failed

    def as_record(self) -> dict[str, object]:
        return {"passed": self.passed, "rule": self.rule}


PASS = GateVerdict(True)


def strip_thinking(text: str) -> tuple[str, bool]:
    """Keep only what follows the last closing thinking tag; say whether anything was cut."""
    cut = max(((text.rfind(tag), tag) for tag in THINK_CLOSE_TAGS), key=lambda found: found[0])
    if cut[0] < 0:
        return text, False
    return text[cut[0] + len(cut[1]) :], True


# --- Inception's cleaning (spec §2) ---------------------------------------------------------
_INVISIBLE: dict[int, str | None] = {
    ord(c): None for c in "\u200b\u200c\u200d\ufeff\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
}
_INVISIBLE[0x00A0] = " "
_WHITESPACE = regex.compile(r"\s+")


def inception_clean(text: str) -> str:
    """NFKC, invisible characters out, every Cc/Cf character deleted (newlines included: they
    are deleted, not turned into spaces, faithfully), white space collapsed, trimmed."""
    text = unicodedata.normalize("NFKC", text).translate(_INVISIBLE)
    text = "".join(char for char in text if unicodedata.category(char) not in ("Cc", "Cf"))
    return _WHITESPACE.sub(" ", text).strip()


# --- Gate preprocessing and the three repetition detectors (spec §4.1, §4.2) ------------------
_LEADING_FENCE = regex.compile(r"^```\w*\n?")
_TRAILING_FENCE = regex.compile(r"\n?```$")
_GATE_DELETE = str.maketrans({c: None for c in '{}[]:,"`*' + "".join(chr(c) for c in range(0x2080, 0x208A))})


def strip_markup(text: str) -> str:
    """Code fences at the very start and end, JSON punctuation, subscript digits, backticks, `*`."""
    text = _TRAILING_FENCE.sub("", _LEADING_FENCE.sub("", text))
    return text.translate(_GATE_DELETE)


def inception_preprocess(text: str) -> str:
    """Spec §4.1: cut at the first `P.P.S.`, then strip_markup."""
    cut = text.find("P.P.S.")
    return strip_markup(text if cut < 0 else text[:cut])


_GATE_WORD = regex.compile(r"\b[0-9A-Za-z\u0621-\u064A]+\b")
_SENTENCE_BREAK = regex.compile(r"[.!?]")
_NOT_WORD_OR_SPACE = regex.compile(r"[^\w\s]")
_WORD = regex.compile(r"\w+")


def has_repeated_words(text: str, run: int = 7) -> bool:
    """`run` or more identical consecutive words (ASCII letters/digits and basic Arabic letters)."""
    count, previous = 0, None
    for word in _GATE_WORD.findall(text):
        count = count + 1 if word == previous else 1
        previous = word
        if count >= run:
            return True
    return False


def has_repeated_sentences(text: str, copies: int = 3, min_words: int = 3) -> bool:
    """`copies` identical consecutive sentences of at least `min_words` words."""
    pieces = [piece.strip() for piece in _SENTENCE_BREAK.split(text)]
    pieces = [piece for piece in pieces if piece]
    for index in range(len(pieces) - copies + 1):
        if len(pieces[index].split()) < min_words:
            continue
        if all(pieces[index + k] == pieces[index] for k in range(1, copies)):
            return True
    return False


def _token_ids(items: Sequence[str]) -> np.ndarray:
    index: dict[str, int] = {}
    return np.fromiter((index.setdefault(item, len(index)) for item in items), dtype=np.int64, count=len(items))


def _longest_true_run(mask: np.ndarray) -> int:
    if not mask.any():
        return 0
    edges = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    return int((np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)).max())


def repeats_back_to_back(items: Sequence[str], copies: int, shortest: int, longest: int) -> bool:
    """Is some block of n items (shortest <= n <= longest) followed at once by copies - 1 more
    copies of itself? Such a block exists exactly when items[j] == items[j + n] holds for
    (copies - 1) * n consecutive j, so each n is one vectorized comparison: linear, not quadratic,
    in the response's length."""
    ids = _token_ids(items)
    for n in range(shortest, min(len(ids) // copies, longest) + 1):
        if _longest_true_run(ids[:-n] == ids[n:]) >= (copies - 1) * n:
            return True
    return False


def has_repeated_ngrams(text: str, copies: int = 3, shortest: int = 5, longest: int = 60, min_tokens: int = 15) -> bool:
    """An n-gram (shortest <= n <= longest) repeated `copies` times back to back."""
    tokens = _WORD.findall(_NOT_WORD_OR_SPACE.sub("", text))
    return len(tokens) >= min_tokens and repeats_back_to_back(tokens, copies, shortest, longest)


REPETITION_DETECTORS = (
    ("repeated_words", has_repeated_words),
    ("repeated_sentences", has_repeated_sentences),
    ("repeated_ngrams", has_repeated_ngrams),
)


def repetition_verdict(text: str) -> GateVerdict:
    for name, detector in REPETITION_DETECTORS:
        if detector(text):
            return GateVerdict(False, name)
    return PASS


# --- Inception's language rules (spec §4.3 - §4.6) --------------------------------------------
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


# --- English gate of ifeval_langcheck (seed §1) ------------------------------------------------
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


# --- Arabic gate of ifeval_arabic_inception_hf_langcheck (seed §2) ----------------------------
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
