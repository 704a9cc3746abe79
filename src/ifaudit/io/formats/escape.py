"""Free text (a run's label, a model or tool name from a log, a published figure's source) as each
output format must hold it: one function per format, used by every writer of that format.

Free text comes from a config or an imported log, so it may hold anything. Each function writes it
so that the format shows the literal text and nothing else: no markup, formula, tag or command of
the text's own reaches the file's reader. Text of the ordinary kind (letters, digits, spaces,
parentheses, commas, periods, hyphens, apostrophes) comes out unchanged in every format, so an
ordinary report's bytes do not depend on this module.

- `one_line`: the base of the others. Line breaks and tabs become spaces; then every other control
  or format character, a lone surrogate and the noncharacters U+FFFE and U+FFFF (none of them
  printable, some not even writable as UTF-8 or XML) are written visibly as a Python escape,
  `\\x1b`, `\\ud800`, as on the terminal (ifaudit.core.terminal.printable).
- `markdown`: inline text (a table cell or a sentence, never the start of a line) with every
  character that could start markup written as an HTML character reference, which every Markdown
  renderer shows as the character itself and none reads as structure: raw HTML and autolinks
  (`<`, `>`, `&`), links and images (`[`, `]`), code spans, emphasis and strikethrough, GitHub's
  math, table pipes and backslash escapes. An underscore inside a word stays (it cannot emphasise).
  `markdown_code` is the same text as a code span, its fence longer than any run of backticks in it.
- `csv_cell`: OWASP's rule against formula injection: a text cell starting with `=`, `+`, `-`,
  `@`, a tab or a carriage return gets a leading `'`. Numbers are never text cells, so a negative
  difference stays a number; the csv module quotes the rest (a carriage return made a line break
  first, so it is quoted too). Every other character `one_line` escapes (a bidi override, U+2028)
  but a tab and a line break is written as its escape: CSV has no escapes of its own, and a
  spreadsheet or an editor acts on them.
- `yaml_string`: a YAML double-quoted scalar on one line that every YAML reader reads back as the
  text itself: JSON's escapes, and each character `one_line` escapes as YAML's `\\u` escape (YAML
  reads a raw U+2028 as a line break and folds it).
- `xml_text`: `one_line`, then `&`, `<`, `>` and `"` as entities: well-formed in an element or
  an attribute.
- `latex`: see its docstring.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from ifaudit.core.terminal import first_unprintable, printable

# What str.splitlines breaks a line at, and a tab: each one space on one line.
_BREAKS = "\t\n\v\f\r\x1c\x1d\x1e\x85\u2028\u2029"
_SPACES = str.maketrans(dict.fromkeys(_BREAKS, " "))


def one_line(text: object) -> str:
    """`text` on one line, every character of it printable (see the module's docstring)."""
    return printable(str(text).translate(_SPACES))


_MARKDOWN = {char: f"&#{ord(char)};" for char in "\\`*[]|~$"} | {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# `_` opens or closes emphasis only beside something that is not a letter or digit.
_LONE_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")


def markdown(text: object) -> str:
    """`text` as inline Markdown that shows it literally (see the module's docstring)."""
    escaped = "".join(_MARKDOWN.get(char, char) for char in one_line(text))
    return _LONE_UNDERSCORE.sub("&#95;", escaped)


def markdown_code(text: object) -> str:
    """`text` as a Markdown code span (shown literally by its nature): fenced by one backtick more
    than its longest run of them, padded with a space where it starts or ends with one."""
    line = one_line(text)
    fence = "`" * (1 + max((len(run) for run in re.findall("`+", line)), default=0))
    padded = f" {line} " if line.startswith("`") or line.endswith("`") else line
    return f"{fence}{padded}{fence}"


_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A CSV cell's value with OWASP's rule applied to text; anything else unchanged. A carriage
    return in text is written as a line break: the csv module leaves a field holding a bare one
    unquoted (before Python 3.13, with LF as the line terminator), which splits the row for every
    reader, while a field holding a line break is quoted."""
    if not isinstance(value, str):
        return value
    lines = value.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    text = "\n".join("\t".join(map(printable, line.split("\t"))) for line in lines)
    return f"'{text}" if value.startswith(_FORMULA_STARTS) else text


def yaml_string(text: object) -> str:
    """`text` as a YAML double-quoted scalar that reads back as itself (see the module's docstring)."""
    quoted = json.dumps(str(text), ensure_ascii=False)
    if first_unprintable(quoted) is None:
        return quoted
    return "".join(
        (f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}") if first_unprintable(char) else char
        for char in quoted
    )


_XML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}


def xml_text(text: object) -> str:
    """`text` as XML character data or an attribute's value, well-formed whatever it held."""
    return "".join(_XML.get(char, char) for char in one_line(text))


# LaTeX's ten special characters, the ASCII ones OT1 text fonts draw as other glyphs, and the
# brackets (a cell starting with `[` is read as the optional argument of the `\\` or `\midrule`
# before it).
_LATEX_ASCII = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "%": r"\%",
    "&": r"\&",
    "#": r"\#",
    "$": r"\$",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    "[": "{[}",
    "]": "{]}",
}
# Characters the report's own text uses, and letters with no accent to build them from.
_LATEX_UNICODE = {
    "−": "$-$",
    "–": "--",
    "—": "---",
    "…": r"\ldots{}",
    "×": r"$\times$",
    "⚠": "(!)",
    "ß": r"\ss{}",
    "æ": r"\ae{}",
    "Æ": r"\AE{}",
    "œ": r"\oe{}",
    "Œ": r"\OE{}",
    "ø": r"\o{}",
    "Ø": r"\O{}",
    "ł": r"\l{}",
    "Ł": r"\L{}",
    "ı": r"\i{}",
}
# The accents every text font encoding (OT1 too) has, by their combining character.
_LATEX_ACCENTS = {
    "\u0300": "`",
    "\u0301": "'",
    "\u0302": "^",
    "\u0303": "~",
    "\u0304": "=",
    "\u0306": "u",
    "\u0307": ".",
    "\u0308": '"',
    "\u030a": "r",
    "\u030b": "H",
    "\u030c": "v",
    "\u0327": "c",
}


def _latex_char(char: str) -> str:
    if char in _LATEX_ASCII:
        return _LATEX_ASCII[char]
    if " " <= char <= "~":
        return char
    if char in _LATEX_UNICODE:
        return _LATEX_UNICODE[char]
    decomposed = unicodedata.normalize("NFD", char)
    base, marks = decomposed[0], decomposed[1:]
    if base.isascii() and base.isalpha() and marks in _LATEX_ACCENTS:
        letter = {"i": r"\i", "j": r"\j"}.get(base, base)  # the dotless letter under an accent
        return f"\\{_LATEX_ACCENTS[marks]}{{{letter}}}"
    return f"{{[}}U+{ord(char):04X}{{]}}"


def latex(text: object) -> str:
    """`text` as LaTeX text that prints it, in any document that `\\input`s it, with pdflatex and
    whatever font encoding (OT1, T1) the document chose: ASCII only. Printable ASCII is written
    as itself, LaTeX's specials and brackets escaped; a Latin letter with one common accent as
    LaTeX's accent command on the letter (`é` as `\\'{e}`), a few letters as their own commands
    (`ß` as `\\ss{}`); every other character (an emoji, CJK, Arabic, a lone combining mark) as its
    code point in brackets, `[U+1F600]`, since pdflatex has no glyph for it in its text fonts and
    stops at the first undefined one. Line breaks are spaces and control characters visible, as in
    `one_line`."""
    return "".join(map(_latex_char, one_line(text)))
