"""Tasks as data: which checker registry grades them and which grading modes apply.

Later tasks (language gates, Arabic IFEval, InFoBench) add their declarations here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ifaudit.errors import InputError


@dataclass(frozen=True)
class Task:
    name: str
    description: str
    registry: str  # "ifeval": the pinned upstream grader or its stand-in


TASKS: dict[str, Task] = {
    "ifeval": Task(
        name="ifeval",
        description="Google's IFEval, graded by the pinned upstream grader, strict and loose",
        registry="ifeval",
    ),
}


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise InputError(f"unknown task {name!r}; known: {', '.join(sorted(TASKS))}", field="task") from None
