"""Where two versions of a file first differ, in words a reader can check: the first JSON field
that differs (its path, both values, shortened), else the first differing line."""

from __future__ import annotations

import json
from typing import Any

SHOWN = 60  # characters of a value or line shown


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def _first_field(a: Any, b: Any, path: str) -> str | None:
    """The path of the first differing value of two JSON documents, keys in sorted order."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            where = f"{path}.{key}" if path else str(key)
            if key not in a or key not in b:
                return f"field {where}: only in the {'bundled' if key in b else 'recomputed'} file"
            if (found := _first_field(a[key], b[key], where)) is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for index, (x, y) in enumerate(zip(a, b)):
            if (found := _first_field(x, y, f"{path}[{index}]")) is not None:
                return found
        return None if len(a) == len(b) else f"field {path}: {len(a)} items recomputed, {len(b)} bundled"
    if a == b and type(a) is type(b):
        return None
    return f"field {path or '(the document)'}: recomputed {_short(a)}, bundled {_short(b)}"


def first_difference(recomputed: bytes, bundled: bytes, name: str) -> str:
    """The first difference of two versions of the file `name` (a .json file by field)."""
    if name.endswith(".json"):
        try:
            found = _first_field(json.loads(recomputed), json.loads(bundled), "")
        except (ValueError, UnicodeDecodeError):
            found = None
        if found is not None:
            return found
    ours, theirs = recomputed.splitlines(), bundled.splitlines()
    for number, (x, y) in enumerate(zip(ours, theirs), start=1):
        if x != y:
            shown = [_short(line.decode("utf-8", "replace")) for line in (x, y)]
            return f"line {number}: recomputed {shown[0]!r}, bundled {shown[1]!r}"
    if len(ours) != len(theirs):
        return f"line {min(len(ours), len(theirs)) + 1}: {len(ours)} lines recomputed, {len(theirs)} bundled"
    return "the same lines, other bytes (line endings or a binary file)"
