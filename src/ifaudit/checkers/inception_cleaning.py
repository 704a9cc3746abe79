"""Inception's cleaning of a response before its Arabic checkers and gate (spec §2)."""

from __future__ import annotations

import unicodedata

import regex

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
    collapsed: str = _WHITESPACE.sub(" ", text)  # `regex` is untyped
    return collapsed.strip()
