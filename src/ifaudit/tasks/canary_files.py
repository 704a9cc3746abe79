"""The committed canaries (package data under ifaudit/tasks/canaries/): which a task has, and the
datasets it reads. The run plan asks this before any grading; ifaudit.steps.grading.canary runs them."""

from __future__ import annotations

import functools
import json
from importlib import resources
from pathlib import Path
from typing import Any

from ifaudit.core.errors import InputError


def load_canary(name: str) -> dict[str, Any]:
    """A committed canary (package data under ifaudit/tasks/canaries/)."""
    try:
        text = resources.files("ifaudit.tasks.canaries").joinpath(f"{name}.json").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"no canary named {name!r}", field="canary") from None
    return json.loads(text)


def load_canary_file(path: Path) -> dict[str, Any]:
    """A canary given as a file instead of the committed one (tests tamper with a copy)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:  # a binary file: not UTF-8
        raise InputError(f"cannot read canary: {exc}", path=path) from None


def needs_datasets(canary: dict[str, Any]) -> bool:
    return "responses" in canary


@functools.cache
def canary_dataset_names(task: str) -> tuple[str, ...]:
    """The prompt and response datasets the committed canary of `task` reads, by name (none when
    the canary carries its responses inline): the workflow fetches them for its grading jobs."""
    canary = load_canary(task)
    return (canary["prompts"]["dataset"], canary["responses"]["dataset"]) if needs_datasets(canary) else ()
