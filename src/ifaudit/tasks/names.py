"""The tasks' names, for the command line, without importing the tasks: a command that grades
nothing (verify, combine-canaries, manifest, ...) starts without the registry's imports (≈ 60 ms
of each small job's ≈ 110). The registry is the one list; the defaults are named here."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import overload

DEFAULT_TASK = "ifeval"  # what a subcommand grades when --task is not given
DEFAULT_JUDGED_TASK = "infobench"  # the same, for the judge


class LazyNames(Sequence[str]):
    """Names as the module that owns them lists them, read on first use (when argparse checks a
    value or prints help): importing that module (the registry, the judge, the importers) would
    cost every other command's start-up time."""

    def __init__(self, load: Callable[[], Iterable[str]]) -> None:
        self._load = load

    @functools.cached_property
    def _names(self) -> list[str]:
        return list(self._load())

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._names[index]

    def __len__(self) -> int:
        return len(self._names)


def _registry_names() -> list[str]:
    from ifaudit.tasks.registry import TASKS

    return sorted(TASKS)


class TaskNames(LazyNames):
    """The registry's task names, sorted (argparse's `choices` for --task)."""

    def __init__(self) -> None:
        super().__init__(_registry_names)
