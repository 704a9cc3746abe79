"""Every environment variable ifaudit reads, read here and nowhere else.

A DAG job's work is decided by its config; these variables can change where a job looks for
things or how much it reads. Each run's manifest names those that were set
(`taken_from_environment`), so a result that depended on one says so. A credential (the judge's
or a model's API key, under the name its config gives) is read by `credential` and never named.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ifaudit.core.bounds import MAX_BYTES
from ifaudit.core.errors import IfauditError, InputError
from ifaudit.io import paths


@dataclass(frozen=True)
class Variable:
    name: str
    meaning: str


RESOURCES = Variable("IFAUDIT_RESOURCES", "the resources/ cache: materialized pins, NLTK data, fetch checksums")
PIN = Variable("IFAUDIT_PIN", "the pin of Google's grader, instead of vendor/google_ifeval/pin.toml")
GRADER = Variable("IFAUDIT_GRADER", "the default of --grader: upstream or the registry stand-in")
GRADER_SOURCE = Variable("IFAUDIT_GRADER_SOURCE", "places holding the pinned grader files, tried before the pin's own")
INFOBENCH_SOURCE = Variable("IFAUDIT_INFOBENCH_SOURCE", "places holding InFoBench's pinned evaluation.py")
NLTK_MIRROR = Variable("IFAUDIT_NLTK_MIRROR", "a folder laid out as NLTK_DATA holding punkt_tab")
MAX_LINE_BYTES = Variable("IFAUDIT_MAX_LINE_BYTES", "the longest JSONL line read")
MAX_MEMBER_BYTES = Variable("IFAUDIT_MAX_MEMBER_BYTES", "the largest member of an inspect .eval log read")
HTML_REPORT = Variable("IFAUDIT_HTML_REPORT", "where `make run` has the workflow render Snakemake's HTML report")
# The workflow's own bookkeeping, never a setting: it changes no byte of any result, so a manifest
# does not name it (it is left out of VARIABLES).
READS = Variable("IFAUDIT_READS", "where a DAG's job leaves the sha256 of the inputs it read (the content ledger)")

VARIABLES = (
    RESOURCES,
    PIN,
    GRADER,
    GRADER_SOURCE,
    INFOBENCH_SOURCE,
    NLTK_MIRROR,
    MAX_LINE_BYTES,
    MAX_MEMBER_BYTES,
    HTML_REPORT,
)


def export(variable: Variable, value: str) -> None:
    """Set `variable` for the processes this one starts (the workflow's jobs)."""
    os.environ[variable.name] = value


def text(variable: Variable) -> str | None:
    """The variable's value, or None when it is unset or empty."""
    return os.environ.get(variable.name) or None


def _checked(variable: Variable, check: Callable[[str], None]) -> Path | None:
    """The path the variable names, once `check` passes it (refused in one line naming the path
    and the variable: a folder, a FIFO or a device where a file is wanted fails at once, not
    when, or never after, it is read), or None when the variable is unset or empty."""
    found = text(variable)
    if found is None:
        return None
    try:
        check(found)
    except InputError as error:
        raise InputError(error.message, path=error.path, hint=f"named by {variable.name}") from None
    return Path(found)


def input_file(variable: Variable) -> Path | None:
    """The readable regular file the variable names (IFAUDIT_PIN), or None when it is unset."""
    return _checked(variable, paths.check_input)


def input_folder(variable: Variable) -> Path | None:
    """The readable folder the variable names (IFAUDIT_NLTK_MIRROR), or None when it is unset."""
    return _checked(variable, paths.check_input_folder)


def output_folder(variable: Variable) -> Path | None:
    """The folder (or where one can be made) the variable names (IFAUDIT_RESOURCES), or None."""
    return _checked(variable, paths.check_output_folder)


def places(variable: Variable) -> list[str]:
    """A list of places in the variable, separated as PATH is."""
    return [part for part in (text(variable) or "").split(os.pathsep) if part]


def positive_bytes(variable: Variable, default: int) -> int:
    """A byte cap from the variable (a positive integer in ASCII digits, at most MAX_BYTES), else
    `default`. Python's int() also reads other scripts' digits ("١٠٠", fullwidth "１０") and
    str.isdigit() passes superscripts that int() refuses: only 0-9 are taken here."""
    raw = (text(variable) or "").strip()
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit() and len(raw) <= len(str(MAX_BYTES)) and 1 <= int(raw) <= MAX_BYTES):
        shown = raw if len(raw) <= 40 else raw[:40] + "..."
        raise IfauditError(
            f"{variable.name}={shown!r}: expected a positive number of bytes, written in the digits 0-9, "
            f"at most {MAX_BYTES}"
        )
    return int(raw)


def credential(name: str) -> str | None:
    """A secret from the variable its config names: never logged, recorded or bundled."""
    return os.environ.get(name) or None


def taken_from_environment() -> dict[str, str]:
    """The variables of ifaudit set in this process, by name: what the manifest names."""
    return {variable.name: value for variable in VARIABLES if (value := text(variable)) is not None}


def without_ifaudit_variables() -> dict[str, str]:
    """This process's environment less every IFAUDIT_ variable: for a step that must decide from
    its own command line only (a bundle's replay)."""
    return {name: value for name, value in os.environ.items() if not name.startswith("IFAUDIT_")}
