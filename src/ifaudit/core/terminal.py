"""Text from outside (a file name, a field of a log) printed to a terminal as one line of itself.

A name holding a line break would print a line of its own (`…\nbundle verifies: …`), an escape
sequence could erase or recolour what was printed before, a bidi override reorder what follows.
Every control, format and line/paragraph-separator character, any lone surrogate and the
noncharacters U+FFFE and U+FFFF (not writable in XML) is shown as its Python escape (`\\n`,
`\\x1b`, `\\u2028`, `\\u202e`); everything else is left as it is. The output formats' one-line
text (ifaudit.io.formats.escape.one_line) is this too, after its line breaks became spaces.
"""

from __future__ import annotations

import unicodedata

_ESCAPED = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_NONCHARACTERS = frozenset("\ufffe\uffff")


def printable(text: str) -> str:
    """`text` with every character a terminal would act on rather than show escaped."""
    if text.isprintable():  # the common case; isprintable is False for every escaped category
        return text
    return "".join(
        char.encode("unicode_escape").decode("ascii")
        if unicodedata.category(char) in _ESCAPED or char in _NONCHARACTERS
        else char
        for char in text
    )


def first_unprintable(text: str) -> str | None:
    """The first character of `text` that `printable` escapes, or None."""
    if text.isprintable():
        return None
    return next(
        (char for char in text if unicodedata.category(char) in _ESCAPED or char in _NONCHARACTERS),
        None,
    )


def unshowable(text: str) -> str | None:
    """Why free text an output shows (a run's label, a title) is refused, or None: a control,
    format (a bidi override) or line-separator character would be shown escaped by one output and
    acted on by another (a spreadsheet, a YAML reader, an editor), so no output could hold the
    text as it was given."""
    char = first_unprintable(text)
    if char is None:
        return None
    name = unicodedata.name(char, "a control character")
    return (
        f"holds U+{ord(char):04X} ({name}), a control, format or line-separator character that outputs "
        "cannot show as itself: remove it"
    )
