"""The report's tables: rows of plain values, written as CSV and as JSON records.

A column whose values are all numbers, with at least one float or one empty cell, is a column of
floats (an integer in it is written 1.0, as a float); an empty cell is written as nothing in CSV
and as null in JSON; a float as its shortest round-trip text. These are the bytes and values
pandas gave for the same rows (the report was written with it before), without importing it. A
text cell in CSV goes through `escape.csv_cell` (a label could hold a spreadsheet formula).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ifaudit.io.formats.escape import csv_cell


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _column(values: list[Any]) -> list[Any]:
    """The column's values as its cells hold them: floats in a numeric column with a float or an
    empty cell, None for every empty cell."""
    present = [value for value in values if not _empty(value)]
    numeric = bool(present) and all(map(_is_number, present))
    floats = numeric and (len(present) < len(values) or any(isinstance(value, float) for value in present))
    return [None if _empty(value) else float(value) if floats else value for value in values]


@dataclass(frozen=True)
class Table:
    columns: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]

    @classmethod
    def of(cls, rows: Iterable[dict[str, Any]], columns: Sequence[str] | None = None) -> Table:
        """The rows with the given columns, or every key in the order it first appears."""
        rows = tuple(rows)
        names = tuple(columns) if columns is not None else tuple(dict.fromkeys(key for row in rows for key in row))
        cells = {name: _column([row.get(name) for row in rows]) for name in names}
        return cls(names, tuple({name: cells[name][index] for name in names} for index in range(len(rows))))

    def where(self, **equal: Any) -> list[dict[str, Any]]:
        return [row for row in self.rows if all(row[key] == value for key, value in equal.items())]

    def column(self, name: str) -> list[Any]:
        return [row[name] for row in self.rows]

    def csv_bytes(self) -> bytes:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(self.columns)
        writer.writerows(
            ["" if row[name] is None else csv_cell(row[name]) for name in self.columns] for row in self.rows
        )
        return buffer.getvalue().encode("utf-8")

    def records(self) -> list[dict[str, Any]]:
        """Rows as plain Python values at full precision, with empty cells as null."""
        return [dict(row) for row in self.rows]
