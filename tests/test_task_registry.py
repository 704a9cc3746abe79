"""Tasks are plug-ins: nothing outside the task declarations branches on a task's name, kind,
registry or gate; the workflow's copies of the task list are tied to ifaudit.tasks.registry; the grader's
identity is one value type written as the same JSON as before."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from conftest import REPO
from ifaudit.checkers.gates import GATES
from ifaudit.tasks.graders import GRADER_CHOICES
from ifaudit.core.identity import RECORDED_JUDGE, GraderIdentity, GraderKind
from ifaudit.tasks.registry import TASKS
from ifaudit.tasks.base import CheckerTask

# The registry: the task declarations, the gate classes, the grader kinds and registries.
REGISTRY = {
    "src/ifaudit/tasks/registry.py",
    "src/ifaudit/tasks/names.py",
    "src/ifaudit/tasks/base.py",
    "src/ifaudit/tasks/ifeval.py",
    "src/ifaudit/tasks/arabic.py",
    "src/ifaudit/tasks/infobench.py",
    "src/ifaudit/tasks/ifbench.py",
    "src/ifaudit/checkers/gates.py",
    "src/ifaudit/core/identity.py",
    "src/ifaudit/tasks/graders.py",
}
# The importers record a harness's own label for its task (lm-eval's "ifeval") as data; they never
# choose behaviour by it.
HARNESS_LABELS = "src/ifaudit/inputs/importers/"


def _quoted(names) -> str:
    return "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))


KINDS = "upstream|stand-in|judge|imported|ifaudit"
FORBIDDEN = {
    # (not a path segment: vendor/infobench/ holds InFoBench's pinned script, not a task)
    "task name": re.compile(rf"""(?<!/ )["']({_quoted(TASKS)})["'](?! /)"""),
    "registry constant": re.compile(r"(?<![.\w])(GOOGLE|JUDGE|ARABIC_HF|ARABIC_INCEPTION)\b"),
    "gate name": re.compile(rf"""gate\b.*["']({_quoted(GATES)})["']|\.gate\s*==|gate_verdict"""),
    "grader kind compared as a string": re.compile(
        rf"""(==|!=|\bin)\s*\(?["']({KINDS})["']|kind["']?\]?\s*(==|!=)\s*["']({KINDS})["']"""
        r"""|==\s*(UPSTREAM|STAND_IN)\b"""
    ),
    "task kind": re.compile(r"\.registry\s*(==|!=)|prompt_format"),
}


def _code_files() -> list[Path]:
    files = [*(REPO / "src/ifaudit").rglob("*.py"), *(REPO / "workflow").rglob("*.smk"), REPO / "Snakefile"]
    return sorted(
        path
        for path in files
        if path.relative_to(REPO).as_posix() not in REGISTRY
        and not path.relative_to(REPO).as_posix().startswith(HARNESS_LABELS)
    )


def test_nothing_outside_the_registry_names_a_task_kind_or_gate() -> None:
    found = []
    for path in _code_files():
        text = path.read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            found += [
                f"{path.relative_to(REPO)}:{number}: {what}: {line.strip()}"
                for what, pattern in FORBIDDEN.items()
                if pattern.search(line)
            ]
    assert not found, "\n".join(found)


def test_the_command_lines_default_tasks_are_the_registrys() -> None:
    from ifaudit.tasks.names import DEFAULT_JUDGED_TASK, DEFAULT_TASK, TaskNames

    assert not TASKS[DEFAULT_TASK].judged and TASKS[DEFAULT_JUDGED_TASK].judged
    assert list(TaskNames()) == sorted(TASKS) and "ifeval" in TaskNames() and "nope" not in TaskNames()


def test_the_check_finds_what_it_looks_for() -> None:
    """The patterns are not vacuous: each catches the branch it forbids."""
    for line in (
        "if task.registry == GOOGLE:",
        'task = "infobench"',
        'if task.gate == "english":',
        'kind not in ("judge", "imported")',
        'if grader["kind"] == "stand-in":',
        'JUDGED = {"infobench"}',
        "if args.grader == UPSTREAM:",
    ):
        assert any(pattern.search(line) for pattern in FORBIDDEN.values()), line


def test_task_names_and_the_judged_set_come_from_the_registry_not_the_schema_or_workflow(tmp_path: Path) -> None:
    """The schema names no task and the workflow no judged task: both take them from the package
    (ifaudit.steps.planning.plan), and a misspelt task is refused with the registry's nearest name."""
    from ifaudit.steps.planning import plan
    from test_workflow import snakemake, write_config

    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text(encoding="utf-8"))
    assert "enum" not in schema["properties"]["runs"]["additionalProperties"]["properties"]["task"]
    assert schema["properties"]["grader"]["enum"] == list(GRADER_CHOICES)
    assert plan.task_names() == sorted(TASKS)
    assert plan.judged_tasks() == {name for name, task in TASKS.items() if task.judged}
    write_config(tmp_path, {"runs": {"x": {"task": "ifevall", "prompts": "ifeval_prompts_github", "responses": "r"}}})
    done = snakemake(tmp_path, "--dry-run", check=False)
    assert done.returncode == 2 and "runs.x.task" in done.stderr and "did you mean 'ifeval'?" in done.stderr


def test_every_task_has_its_canary_and_one_grading_entry_point() -> None:
    """A task refused here (M-IFEval's Spanish: unpinned spaCy models) grades nothing, so has none."""
    for name, task in TASKS.items():
        assert (REPO / "src/ifaudit/tasks/canaries" / f"{name}.json").is_file() != bool(task.refusal()), name
        assert task.name == name and task.metrics
        assert task.judged != isinstance(task, CheckerTask)


@pytest.mark.parametrize(
    ("identity", "legacy"),
    [
        (
            GraderIdentity(GraderKind.UPSTREAM, "google_ifeval", "5b09c22d73a9d35eb6c5d2a99b95677a45053466"),
            {
                "kind": "upstream",
                "name": "google_ifeval",
                "upstream": True,
                "version": "5b09c22d73a9d35eb6c5d2a99b95677a45053466",
            },
        ),
        (
            GraderIdentity(GraderKind.STAND_IN, "if-verifiable", "0.1.2"),
            {"kind": "stand-in", "name": "if-verifiable", "upstream": False, "version": "0.1.2"},
        ),
        (
            GraderIdentity(GraderKind.OWN, "ifaudit.checkers.arabic.inception_registry", "0.1.0"),
            {
                "kind": "ifaudit",
                "name": "ifaudit.checkers.arabic.inception_registry",
                "upstream": False,
                "version": "0.1.0",
            },
        ),
        (
            GraderIdentity.judge("gpt-4o", "protocol=ifaudit,temperature=0.0,max_tokens=64", {"name": "ifaudit"}),
            {
                "kind": "judge",
                "name": "gpt-4o",
                "upstream": False,
                "version": "protocol=ifaudit,temperature=0.0,max_tokens=64",
                "protocol": {"name": "ifaudit"},
            },
        ),
        (
            GraderIdentity.imported("x.jsonl", "0123456789abcdef0123"),
            {"kind": "imported", "name": "x.jsonl", "upstream": False, "version": "0123456789abcdef"},
        ),
        (RECORDED_JUDGE, {"kind": "judge", "name": "recorded judge", "upstream": False, "version": "-"}),
    ],
)
def test_grader_identity_writes_todays_json_and_compares_as_a_value(identity: GraderIdentity, legacy: dict) -> None:
    assert json.dumps(identity.as_record()) == json.dumps(legacy)  # same keys, same order, same bytes
    assert GraderIdentity.from_record(legacy) == identity
    assert identity.commit == (legacy["version"] if legacy["upstream"] else None)
    assert identity.kind.judged == (legacy["kind"] in ("judge", "imported"))
