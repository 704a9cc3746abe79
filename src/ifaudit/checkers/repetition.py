"""Degenerate repetition: the three detectors of Inception's gate (spec §4.2), the
back-to-back block test the Hugging Face gate shares, and the markup the gates strip first."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import regex

from ifaudit.checkers.verdict import PASS, GateVerdict

_LEADING_FENCE = regex.compile(r"^```\w*\n?")
_TRAILING_FENCE = regex.compile(r"\n?```$")
_GATE_DELETE = str.maketrans({c: None for c in '{}[]:,"`*' + "".join(chr(c) for c in range(0x2080, 0x208A))})


def strip_markup(text: str) -> str:
    """Code fences at the very start and end, JSON punctuation, subscript digits, backticks, `*`."""
    text = _TRAILING_FENCE.sub("", _LEADING_FENCE.sub("", text))
    return text.translate(_GATE_DELETE)


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
