"""Key material taken out of text before it is stored or printed.

A server may echo any part of the API key it was sent: the whole key, a slice of it, or an
encoding (the `Authorization` header in base64, the key percent-encoded in a URL it quotes, in
hex, JSON-escaped inside a string, lower-cased in a host name). What is redacted, for a key of 8
characters or more, is every stretch of 8 or more consecutive characters of the key or of one of
its encodings, in any letter case; a shorter key is redacted whole, with its whole
encodings, as written (a short key may be a word: `EMPTY`). Each redacted stretch becomes one
`REDACTED`.

The search is one pass over the text: a window of 8 characters that is one of the 8-grams of the
key or of its encodings marks those 8 characters; each maximal run of marked characters is one
stretch. A stretch of 8 or more shared with the key is covered by its own 8-character windows, so
nothing longer is missed, and nothing that shares less than 8 characters with the key is touched.

Base64 depends on where the key falls in the encoded text (after `Bearer `, after `user:`, at the
start): the key is encoded at each of the three byte offsets, and only the characters that depend
on the key's bytes alone are kept, so any base64 text that holds the key holds one of them.
"""

from __future__ import annotations

import base64
import functools
import json
import re
import string
import urllib.parse

REDACTED = "[redacted: the API key]"
WINDOW = 8  # the shortest stretch of the key that is redacted
_QUARTER = WINDOW // 2
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def _folded(text: str) -> str:
    """`text` in lower case, every character where it was (its ASCII letters only, where lower
    case would change its length, as the lower case of `İ` does)."""
    lower = text.lower()
    return lower if len(lower) == len(text) else text.translate(_ASCII_LOWER)


def _base64_cores(data: bytes) -> list[str]:
    """For each byte offset of `data` in an encoded text, the base64 characters (standard and
    URL-safe alphabets) that only `data`'s bytes decide."""
    cores = []
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + data)
        first, end = -(-8 * offset // 6), 8 * (offset + len(data)) // 6
        core = encoded[first:end].decode("ascii")
        cores += [core, core.translate(str.maketrans("+/", "-_"))]
    return cores


def encodings(key: str) -> list[str]:
    """The key as it is usually written into text: as is, JSON-escaped, percent-encoded, in hex
    and in base64 (for a key under WINDOW characters, the whole base64 of the key alone and of the
    Authorization header, since its cores would be too short to tell from other text)."""
    data = key.encode("utf-8")
    forms = [
        key,
        json.dumps(key)[1:-1],
        urllib.parse.quote(key, safe=""),
        urllib.parse.quote(key, safe="").lower(),
        urllib.parse.quote_plus(key),
        data.hex(),
        data.hex().upper(),
    ]
    if len(key) >= WINDOW:
        forms += _base64_cores(data)
    else:
        for whole in (data, b"Bearer " + data):
            encoded = base64.b64encode(whole).decode("ascii")
            forms += [encoded, encoded.rstrip("="), base64.urlsafe_b64encode(whole).decode("ascii")]
    return list(dict.fromkeys(form for form in forms if form))


class Redactor:
    """Redacts one key (see the module doc) from text, and counts the stretches it redacted."""

    def __init__(self, key: str) -> None:
        forms = encodings(key)
        self._short: re.Pattern[str] | None = None
        self._grams: frozenset[str] = frozenset()
        if len(key) >= WINDOW:
            self._grams = frozenset(
                _folded(form[start : start + WINDOW]) for form in forms for start in range(len(form) - WINDOW + 1)
            )
        else:
            ordered = sorted(forms, key=len, reverse=True)  # the longest form first: one marker each
            self._short = re.compile("|".join(map(re.escape, ordered)))
        # Every window of WINDOW characters holds a whole block of QUARTER characters starting at a
        # multiple of QUARTER: a text is scanned by those blocks, and windows are looked at only
        # around a block that occurs in a key window (four times fewer look-ups in ordinary text).
        self._quarters = frozenset(gram[start : start + _QUARTER] for gram in self._grams for start in range(5))

    def _windows(self, text: str) -> list[int]:
        """The starts of the windows of `text` that are key windows, in order."""
        text = _folded(text)
        grams, found, checked = self._grams, [], -1
        for block in range(0, len(text) - _QUARTER + 1, _QUARTER):
            if text[block : block + _QUARTER] not in self._quarters:
                continue
            for start in range(max(block - _QUARTER, checked + 1), min(block, len(text) - WINDOW) + 1):
                if text[start : start + WINDOW] in grams:
                    found.append(start)
            checked = block
        return found

    def text(self, text: str) -> tuple[str, int]:
        """`text` with every stretch of key material replaced by REDACTED, and how many there were."""
        if self._short is not None:
            return self._short.subn(REDACTED, text)
        starts = self._windows(text)
        if not starts:
            return text, 0
        parts, kept, stretches = [], 0, 0  # text[kept:] is not yet copied to parts
        start, end = starts[0], starts[0] + WINDOW  # the stretch being marked: text[start:end]
        for position in starts[1:]:
            if position > end:  # not touching the stretch being marked: that one is finished
                parts += [text[kept:start], REDACTED]
                kept, stretches, start = end, stretches + 1, position
            end = position + WINDOW
        parts += [text[kept:start], REDACTED, text[end:]]
        return "".join(parts), stretches + 1

    def line(self, text: str) -> str:
        """`text` redacted, for a message that is printed."""
        return self.text(text)[0]


@functools.lru_cache(maxsize=4)
def redactor(key: str) -> Redactor:
    """The Redactor of `key`, built once per key (a request reads the key each time it is sent)."""
    return Redactor(key)
