"""Reading JSONL strictly: every problem is reported with its file and line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ifaudit.errors import InputError

_BOM = b"\xef\xbb\xbf"


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


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def iter_objects(path: str | Path, allow_empty: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line of a JSONL file.

    An empty file is an error unless `allow_empty` (a grades file of a run with no responses).

    A UTF-8 byte-order mark at the start and CRLF line ends are tolerated; invalid UTF-8,
    malformed JSON (raw control characters such as NUL included), NaN or Infinity, a field given
    twice in one object, and lines that are not JSON objects are errors naming the line.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except IsADirectoryError:
        raise InputError("is a folder, not a JSONL file", path=path) from None
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    if not data.strip():
        if allow_empty:
            return
        raise InputError("file is empty", path=path, hint="expected one JSON object per line")
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"invalid UTF-8 at byte {exc.start + 1} of the line", path=path, line=number
            ) from None
        try:
            obj = json.loads(text, object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"malformed JSON: {exc.msg} at column {exc.colno}", path=path, line=number
            ) from None
        except _DuplicateField as exc:
            raise InputError("given twice in one object", path=path, line=number, field=exc.field) from None
        except ValueError as exc:
            raise InputError(f"malformed JSON: {exc}", path=path, line=number) from None
        if not isinstance(obj, dict):
            raise InputError(
                f"expected a JSON object, got {type(obj).__name__}", path=path, line=number
            )
        yield number, obj


def require(obj: dict[str, Any], field: str, kind: type | tuple[type, ...], path: Path, line: int) -> Any:
    """Return obj[field], checking it is present and of the expected JSON type."""
    if field not in obj:
        raise InputError("missing", path=path, line=line, field=field)
    value = obj[field]
    # bool is a subclass of int in Python, but never a valid int field in our formats.
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _as_tuple(kind)):
        raise InputError(
            f"expected {_type_names(kind)}, got {type(value).__name__}", path=path, line=line, field=field
        )
    return value


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _type_names(kind: type | tuple[type, ...]) -> str:
    names = {str: "string", int: "integer", list: "list", dict: "object", bool: "boolean", float: "number"}
    return " or ".join(names.get(k, k.__name__) for k in _as_tuple(kind))
