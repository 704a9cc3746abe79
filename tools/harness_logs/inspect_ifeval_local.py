"""inspect_evals' IFEval task on a local prompt file: its own sample conversion, solver and
scorer, with only the dataset swapped (the hub is not reachable here)."""

from inspect_ai import Task, task
from inspect_ai.dataset import json_dataset
from inspect_ai.solver import generate
from inspect_evals.ifeval.ifeval import instruction_following, record_to_sample


@task
def ifeval_local(path: str) -> Task:
    return Task(dataset=json_dataset(path, record_to_sample), solver=[generate()], scorer=instruction_following())
