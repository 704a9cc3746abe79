"""Reading JSONL strictly: every problem is reported with its file and line.

Whatever a line holds, it is read or refused in one line naming the file, line and field:
lines longer than a cap (IFAUDIT_MAX_LINE_BYTES, default 64 MiB: ample for the 10 MB responses
the README promises even when every character is \\u-escaped) are refused after reading at most
the cap, so memory stays bounded whatever the file (a 1 GB line, a file of zeros); objects nested
deeper than MAX_DEPTH levels are refused (Python's parser would raise RecursionError near 1000);
strings holding an unpaired UTF-16 surrogate such as "\\ud800" are refused, since no UTF-8 text
(and so no hash, no grade file) can hold one; so are numbers that are not finite (NaN, Infinity,
or 1e999, which overflows to infinity), which JSON has no words for and no file written from them
(ifaudit.io.canonical) can hold. Whole JSON documents (a harness's results file, a log's members)
are read by the same rules (`loads_document`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ifaudit.io import variables
from ifaudit.core.errors import InputError
from ifaudit.io.paths import open_input

_BOM = b"\xef\xbb\xbf"
MAX_LINE_ENV = variables.MAX_LINE_BYTES.name
DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 64  # IFEval-family records nest 3 deep; no real record comes near
_MAYBE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")  # a line without this cannot decode to one
_MAYBE_SURROGATE_TEXT = re.compile(_MAYBE_SURROGATE.pattern.decode("ascii"))
_SURROGATE = re.compile("[\ud800-\udfff]")
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')  # JSON strings and brackets
_COLON = re.compile(r"\s*:")


class _DuplicateField(ValueError):
    def __init__(self, field: str) -> None:
        super().__init__(field)
        self.field = field


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """JSON allows a field twice and Python keeps the last; for graded data that hides an error."""
    seen: dict[str, Any] = {}
    for name, value in pairs:
        if name in seen:
            raise _DuplicateField(name)
        seen[name] = value
    return seen


class _NonFinite:
    """What the parser makes of NaN, Infinity, -Infinity or a number too large for a float
    (1e999): a mark that the walk over the parsed value (`_field_problem`) names by its field."""

    def __init__(self, text: str) -> None:
        self.text = text


def _finite_float(text: str) -> float | _NonFinite:
    value = float(text)
    return value if math.isfinite(value) else _NonFinite(text)


def _loads(text: str) -> Any:
    """json.loads with a field given twice refused and non-finite numbers marked."""
    return json.loads(text, object_pairs_hook=_reject_duplicates, parse_constant=_NonFinite, parse_float=_finite_float)


def max_line_bytes() -> int:
    """The per-line cap: IFAUDIT_MAX_LINE_BYTES if set (a positive integer), else the default."""
    return variables.positive_bytes(variables.MAX_LINE_BYTES, DEFAULT_MAX_LINE_BYTES)


def _lines(handle: Any, cap: int, path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes without the newline) of every line, none read beyond `cap` bytes."""
    number = 0
    while raw := handle.readline(cap + 1):
        number += 1
        body = raw[:-1] if raw.endswith(b"\n") else raw
        if len(body) > cap:
            raise InputError(
                f"line is longer than {cap} bytes",
                path=path,
                line=number,
                hint=f"set {MAX_LINE_ENV} to a larger number of bytes to read it",
            )
        yield number, body


def _field_problem(obj: Any, check_surrogates: bool) -> tuple[str, str] | None:
    """(field, problem) of a value nested too deep (named by its top-level field), of a string
    holding a lone surrogate or of a non-finite number (each named by its full path), if any.

    Walked with an explicit stack, so no object can exhaust Python's recursion."""
    stack: list[tuple[Any, str, str, int]] = [(obj, "", "", 0)]
    while stack:
        value, field, top, depth = stack.pop()
        if isinstance(value, _NonFinite):
            return field, f"{value.text} is not a finite number (JSON has no NaN or infinity)"
        if isinstance(value, str):
            if check_surrogates and (found := _SURROGATE.search(value)):
                return field, f"unpaired UTF-16 surrogate \\u{ord(found.group()):04x} at character {found.start() + 1}"
        elif depth >= MAX_DEPTH and isinstance(value, (dict, list)):
            return top, f"nested more than {MAX_DEPTH} levels deep"
        elif isinstance(value, dict):
            for name, item in value.items():
                where = f"{field}.{name}" if field else name
                if check_surrogates and _SURROGATE.search(name):
                    return _printable(where), "unpaired UTF-16 surrogate in the field name"
                stack.append((item, where, top or name, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{field}[{index}]", top, depth + 1) for index, item in enumerate(value))
    return None


def _printable(text: str) -> str:
    """`text` with any lone surrogate written as its escape, so it can be printed and stored."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _too_deep(text: str) -> tuple[str | None, int]:
    """(top-level field, column) where `text` first nests deeper than MAX_DEPTH: for the text
    Python's parser gave up on, found by a flat scan of its strings and brackets."""
    depth, field = 0, None
    for token in _TOKEN.finditer(text):
        mark = token.group()
        if mark[0] == '"':
            if depth == 1 and _COLON.match(text, token.end()):
                field = _printable(json.loads(mark))
            continue
        depth += 1 if mark in "[{" else -1
        if depth > MAX_DEPTH:
            return field, token.start() + 1
    return field, len(text)


def iter_objects(path: str | Path, allow_empty: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line of a JSONL file.

    An empty file is an error unless `allow_empty` (a grades file of a run with no responses).

    A UTF-8 byte-order mark at the start and CRLF line ends are tolerated; invalid UTF-8,
    malformed JSON (raw control characters such as NUL included), NaN or Infinity, a field given
    twice in one object, lines that are not JSON objects, lines over the cap, nesting deeper than
    MAX_DEPTH and unpaired surrogates are errors naming the line (and the field where there is one).
    """
    path = Path(path)
    cap = max_line_bytes()
    found = False
    with open_input(path) as handle:
        for number, raw in _lines(handle, cap, path):
            if number == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
            if not raw.strip():
                continue
            found = True
            yield number, _parse(raw, path, number)
    if not found and not allow_empty:
        raise InputError("file is empty", path=path, hint="expected one JSON object per line")


def _parse(raw: bytes, path: Path, number: int) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"invalid UTF-8 at byte {exc.start + 1} of the line", path=path, line=number) from None
    try:
        obj = _loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON: {exc.msg} at column {exc.colno}", path=path, line=number) from None
    except _DuplicateField as exc:
        raise InputError("given twice in one object", path=path, line=number, field=exc.field) from None
    except RecursionError:
        field, column = _too_deep(text)
        raise InputError(
            f"nested more than {MAX_DEPTH} levels deep (at column {column})", path=path, line=number, field=field
        ) from None
    except ValueError as exc:
        raise InputError(f"malformed JSON: {exc}", path=path, line=number) from None
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, got {type(obj).__name__}", path=path, line=number)
    if problem := _field_problem(obj, check_surrogates=_MAYBE_SURROGATE.search(raw) is not None):
        field, message = problem
        raise InputError(message, path=path, line=number, field=field)
    return obj


def require(obj: dict[str, Any], field: str, kind: type | tuple[type, ...], path: Path, line: int) -> Any:
    """Return obj[field], checking it is present and of the expected JSON type."""
    if field not in obj:
        raise InputError("missing", path=path, line=line, field=field)
    value = obj[field]
    if not is_kind(value, kind):
        raise InputError(f"expected {_type_names(kind)}, got {type(value).__name__}", path=path, line=line, field=field)
    return value


def is_kind(value: Any, kind: type | tuple[type, ...]) -> bool:
    """Is `value` of the JSON type (or one of the types) `kind`? A bool is an int to Python, but
    never an integer or a number in our formats."""
    return isinstance(value, kind) and (not isinstance(value, bool) or bool in _as_tuple(kind))


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _type_names(kind: type | tuple[type, ...]) -> str:
    names = {str: "string", int: "integer", list: "list", dict: "object", bool: "boolean", float: "number"}
    return " or ".join(names.get(k, k.__name__) for k in _as_tuple(kind))


def loads_document(text: str, path: str | Path) -> Any:
    """A whole JSON document, held to the rules of a JSONL line: a field given twice, nesting
    deeper than MAX_DEPTH, a lone surrogate or a non-finite number is an InputError naming `path`
    (and the field). Malformed JSON raises json.JSONDecodeError, for the caller to word."""
    try:
        obj = _loads(text)
    except _DuplicateField as exc:
        raise InputError("given twice in one object", path=path, field=exc.field) from None
    except RecursionError:
        field, column = _too_deep(text)
        raise InputError(
            f"nested more than {MAX_DEPTH} levels deep (at character {column})", path=path, field=field
        ) from None
    if problem := _field_problem(obj, check_surrogates=_MAYBE_SURROGATE_TEXT.search(text) is not None):
        field, message = problem
        raise InputError(message, path=path, field=field or None)
    return obj
