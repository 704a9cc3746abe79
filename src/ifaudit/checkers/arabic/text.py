"""Arabic text facts shared by the Arabic checkers and the language gates: code point blocks,
the tashkeel marks, and the normalizations the Inception reference applies."""

from __future__ import annotations

# The Arabic blocks: Arabic, Arabic Supplement, Arabic Extended-A, Presentation Forms-A and -B.
ARABIC_BLOCKS = ((0x0600, 0x06FF), (0x0750, 0x077F), (0x08A0, 0x08FF), (0xFB50, 0xFDFF), (0xFE70, 0xFEFF))

# Tashkeel-8: fathatan, dammatan, kasratan, fatha, damma, kasra, shadda, sukun (U+064B..U+0652).
TASHKEEL = {
    "Fathatan": "\u064b",
    "Dammatan": "\u064c",
    "Kasratan": "\u064d",
    "Fatha": "\u064e",
    "Damma": "\u064f",
    "Kasra": "\u0650",
    "Shadda": "\u0651",
    "Sukun": "\u0652",
}
TASHKEEL_MARKS = frozenset(TASHKEEL.values())


def is_arabic_char(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in ARABIC_BLOCKS)


def is_ascii_letter(char: str) -> bool:
    return ("a" <= char <= "z") or ("A" <= char <= "Z")


def strip_tashkeel(text: str) -> str:
    return "".join(char for char in text if char not in TASHKEEL_MARKS)


def remove_every_al(text: str) -> str:
    """Delete every "ال" pair wherever it occurs, not only the article: مال becomes م. Faithful to
    the reference's keywords:list_existence (spec §6.1 #2, §11.3)."""
    return text.replace("ال", "")


def remove_leading_al(word: str) -> str:
    """Drop one "ال" at the very start of a word only (وال… and بال… keep theirs)."""
    return word[2:] if word.startswith("ال") else word
