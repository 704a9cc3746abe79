"""The task registry: every task by name. Adding a task is one module declaring it and one line here."""

from __future__ import annotations

from ifaudit.core.errors import InputError
from ifaudit.tasks.arabic import ARABIC_HF_LANGCHECK, ARABIC_HF_TASK, ARABIC_INCEPTION_TASK
from ifaudit.tasks.base import Task
from ifaudit.tasks.ifbench import IFBENCH, IFBENCH_DB69A6F
from ifaudit.tasks.ifeval import IFEVAL, IFEVAL_LANGCHECK
from ifaudit.tasks.infobench import INFOBENCH
from ifaudit.tasks.mifeval import MIFEVAL_ES, MIFEVAL_FR, MIFEVAL_JA

TASKS: dict[str, Task] = {
    task.name: task
    for task in (
        IFEVAL,
        IFEVAL_LANGCHECK,
        ARABIC_HF_TASK,
        ARABIC_HF_LANGCHECK,
        ARABIC_INCEPTION_TASK,
        INFOBENCH,
        IFBENCH,
        IFBENCH_DB69A6F,
        MIFEVAL_FR,
        MIFEVAL_JA,
        MIFEVAL_ES,
    )
}


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise InputError(f"unknown task {name!r}; known: {', '.join(sorted(TASKS))}", field="task") from None
