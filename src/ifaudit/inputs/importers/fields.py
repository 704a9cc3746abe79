"""Typed access to what a log holds: every field an importer reads is checked for its JSON type,
and a field that is missing or of another type is one `InputError` naming the log's location
(its path and line, zip member or record index) and the field's dotted path in the record.

`LogRecord` wraps one JSON object of a log; `ImportOptions` wraps a run's import settings, whose
names are checked against those the format reads, so a misspelt or misshapen setting is refused
rather than ignored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ifaudit.core.errors import InputError
from ifaudit.core.records import PromptKey
from ifaudit.io.jsonl import is_kind

_KINDS = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", dict: "an object", list: "a list"}


def kind_of(value: Any) -> str:
    """A JSON value's kind as a message names it (`null`, `a string 'x'`, `a list`)."""
    if value is None:
        return "null"
    name = _KINDS.get(type(value), type(value).__name__)
    return f"{name} {value!r}" if isinstance(value, str | int | float) and len(repr(value)) <= 40 else name


@dataclass(frozen=True)
class LogRecord:
    """One JSON object of a log, at `where` (`path:line`, `path!member`, `path:samples[3]`); its
    fields are named from the record's top, after `prefix` (`output.choices[0]`)."""

    value: Mapping[str, Any]
    where: str
    prefix: str = ""

    @classmethod
    def at(cls, value: Any, where: str, prefix: str = "") -> LogRecord:
        if not isinstance(value, dict):
            raise InputError(f"expected an object, got {kind_of(value)}", path=where, field=prefix or None)
        return cls(value, where, prefix)

    def name(self, field: str) -> str:
        return f"{self.prefix}.{field}" if self.prefix else field

    def error(self, field: str, message: str, hint: str | None = None) -> InputError:
        return InputError(message, path=self.where, field=self.name(field), hint=hint)

    def has(self, field: str) -> bool:
        return field in self.value

    def raw(self, field: str) -> Any:
        """The field's value, whatever its type; a missing field is an error."""
        if field not in self.value:
            raise self.error(field, "missing")
        return self.value[field]

    def _typed(self, field: str, kind: type | tuple[type, ...], what: str) -> Any:
        """The field's value if it is of the JSON type `kind` (as `io.jsonl.require` checks a
        line's fields); else an error saying `what` was expected and what was found."""
        value = self.raw(field)
        if not is_kind(value, kind):
            raise self.error(field, f"expected {what}, got {kind_of(value)}")
        return value

    def text(self, field: str) -> str:
        return self._typed(field, str, "a string")

    def maybe_text(self, field: str) -> str | None:
        """A string, or None where the field is absent or null."""
        return None if self.value.get(field) is None else self.text(field)

    def integer(self, field: str, minimum: int | None = None) -> int:
        value: int = self._typed(field, int, "an integer")
        if minimum is not None and value < minimum:
            raise self.error(field, f"expected an integer of at least {minimum}, got {value}")
        return value

    def integer_or(self, field: str, default: int, minimum: int | None = None) -> int:
        return self.integer(field, minimum) if field in self.value else default

    def number(self, field: str) -> float:
        return float(self._typed(field, (int, float), "a number"))

    def key(self, field: str) -> PromptKey:
        """A prompt's key: an integer or a string, as prompt sets hold them."""
        return self._typed(field, (int, str), "an integer or a string (a prompt's key)")

    def items(self, field: str) -> list[Any]:
        return self._typed(field, list, "a list")

    def record(self, field: str) -> LogRecord:
        return LogRecord.at(self.raw(field), self.where, self.name(field))

    def maybe_record(self, field: str) -> LogRecord | None:
        """An object, or None where the field is absent or null."""
        return None if self.value.get(field) is None else self.record(field)

    def records(self, field: str) -> list[LogRecord]:
        """A list of objects, each named by its index (`choices[2]`)."""
        return [LogRecord.at(item, self.where, f"{self.name(field)}[{i}]") for i, item in enumerate(self.items(field))]


@dataclass(frozen=True)
class ImportOptions:
    """A run's import settings (`import:` in the config, `--options-json` on the command line),
    each read with its type; a name the format does not read is refused, naming those it does."""

    values: Mapping[str, Any]

    @classmethod
    def of(cls, values: Mapping[str, Any], format_name: str, known: tuple[str, ...]) -> ImportOptions:
        for name in sorted(values):
            if name not in known:
                raise InputError(
                    f"is not a setting of the {format_name} format",
                    field=f"import.{name}",
                    hint=f"it reads {', '.join(known)}" if known else "it takes no settings",
                )
        return cls(values)

    def _error(self, name: str, what: str) -> InputError:
        return InputError(f"expected {what}, got {kind_of(self.values[name])}", field=f"import.{name}")

    def text(self, name: str) -> str | None:
        """A non-empty string, or None where the setting is not given."""
        if name not in self.values:
            return None
        value = self.values[name]
        if not isinstance(value, str) or not value:
            raise self._error(name, "a non-empty string")
        return value

    def number(self, name: str) -> float | None:
        """A finite number (a published figure), or None where the setting is not given."""
        if name not in self.values:
            return None
        value = self.values[name]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise self._error(name, "a finite number")
        return float(value)

    def text_or(self, name: str, default: str) -> str:
        given = self.text(name)
        return default if given is None else given

    def names(self, name: str, allowed: tuple[str, ...]) -> dict[str, str]:
        """An object of non-empty strings under `allowed` names (the generic JSONL's `fields`)."""
        if name not in self.values:
            return {}
        value = self.values[name]
        if not isinstance(value, dict):
            raise self._error(name, f"an object naming {', '.join(allowed)}")
        for entry, given in value.items():
            if entry not in allowed:
                raise InputError(f"names no field ({', '.join(allowed)})", field=f"import.{name}.{entry}")
            if not isinstance(given, str) or not given:
                raise InputError(
                    f"expected a non-empty dotted path, got {kind_of(given)}", field=f"import.{name}.{entry}"
                )
        return dict(value)
