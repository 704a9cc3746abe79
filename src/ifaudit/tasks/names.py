"""The tasks' names, for the command line, without importing the tasks: a command that grades
nothing (verify, combine-canaries, manifest, ...) starts without the registry's imports (≈ 60 ms
of each small job's ≈ 110). The registry is the one list; the defaults are named here."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

DEFAULT_TASK = "ifeval"  # what a subcommand grades when --task is not given
DEFAULT_JUDGED_TASK = "infobench"  # the same, for the judge


class TaskNames(Sequence[str]):
    """The registry's task names, sorted, read from it on first use (argparse's `choices`)."""

    def _names(self) -> list[str]:
        from ifaudit.tasks.registry import TASKS

        return sorted(TASKS)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()
