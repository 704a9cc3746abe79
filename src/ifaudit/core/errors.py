"""The errors a user can cause, each naming where the problem is and how to fix it.

Tracebacks are for bugs; anything raised from here is printed by the CLI as one line.
"""

from __future__ import annotations

import os


class IfauditError(Exception):
    """Base of every error the CLI reports in one line and exits non-zero on."""

    exit_code = 2


class InputError(IfauditError):
    """Bad input: names the file, the line (1-based) and the field where known, and a fix."""

    def __init__(
        self,
        message: str,
        *,
        path: str | os.PathLike[str] | None = None,
        line: int | None = None,
        field: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        self.field = field
        self.hint = hint
        super().__init__(str(self))

    def __str__(self) -> str:
        text = ""
        if self.path:
            text = f"{self.path}:{self.line}: " if self.line is not None else f"{self.path}: "
        if self.field:
            text += f"field '{self.field}': "
        text += self.message
        if self.hint:
            text += f" (hint: {self.hint})"
        return text


class ConfigError(IfauditError):
    """A config mistake, named by its key path ("runs.x.judge.infobench_version") and, once the
    config check has found where it was written, its place ("config/mine.yaml:12", "--config")."""

    def __init__(self, where: str, message: str, place: str | None = None) -> None:
        self.where = where
        self.message = message
        self.place = place
        named = f"--config {where}" if place == "--config" else f"{place + ': ' if place else ''}config: {where}"
        super().__init__(f"{named}: {message}")

    def at(self, place: str | None) -> ConfigError:
        """The same mistake, named at `place`."""
        return ConfigError(self.where, self.message, place) if place else self


class VerificationError(IfauditError):
    """Bytes that do not match their pin, or two results that should be identical but are not."""

    exit_code = 3
