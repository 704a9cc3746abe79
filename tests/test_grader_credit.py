"""Every output credits each run to the grader that graded it, from its task, never from a fixed
sentence (issue 49 item 2): for every task of the registry (a task added later is covered as it
is registered) and every kind of grader it can have, the paper's artifact text, the report's
disclosures and CITATION.cff name that grader's own title, name, commit, repository and pin file,
the task's own metrics and the run's own prompt set, and no other task's grader, pin or benchmark.
Before the fix, an IFBench run's artifact text read "graded by Google's IFEval grader
`allenai/IFBench` ... (`vendor/google_ifeval/pin.toml`)"."""

from __future__ import annotations

import re
import tomllib
from typing import Any

import pytest
import yaml

from conftest import REPO
from ifaudit.core.identity import GraderIdentity, GraderKind
from ifaudit.io.formats.table import Table
from ifaudit.tasks.base import Task
from ifaudit.tasks.registry import TASKS

COMMIT = "0123456789abcdef0123456789abcdef01234567"  # no real pin's: it can only come from the identity
RUN, PROMPT_SET = "the_run", "the_prompt_set"
PIN_FILES = sorted(path.relative_to(REPO).as_posix() for path in (REPO / "vendor").glob("*/pin.toml"))


def _identity(task: Task, kind: GraderKind) -> GraderIdentity:
    """A grader of `kind` as a run of `task` records it, with a commit no pin holds."""
    upstream = task.upstream_grader()
    if kind is GraderKind.UPSTREAM:
        assert upstream is not None, f"task {task.name} is graded by a pinned upstream grader it does not declare"
        return GraderIdentity(kind, upstream.name, COMMIT)
    if kind is GraderKind.STAND_IN:
        return GraderIdentity(kind, "if-verifiable", "0.1.2")
    if kind is GraderKind.OWN:
        return GraderIdentity(kind, "ifaudit.checkers.own_registry", "9.9.9")
    if kind is GraderKind.IMPORTED:
        return GraderIdentity.imported("verdicts.jsonl", "ab" * 32)
    reference = (
        {"repository": upstream.repository, "version": "v", "commit": COMMIT, "path": "evaluation.py", "sha256": "cd"}
        if upstream
        else None
    )
    protocol = {"name": "reference", **({"reference": reference} if reference else {})}
    return GraderIdentity.judge("judge-model", "protocol=reference,temperature=0", protocol)


CASES = [
    pytest.param(task, kind, id=f"{name}-{kind.value}") for name, task in TASKS.items() for kind in task.grader_kinds()
]


def _summary(task: Task, identity: GraderIdentity) -> dict[str, Any]:
    return {
        "label": "a run",
        "task": task.name,
        "prompts": 7,
        "responses": 7,
        "counted": True,
        "grader": identity.as_record(),
        "samples_per_prompt": {"min": 1, "max": 1},
    }


def _metrics(task: Task) -> Table:
    figures = {"value": 0.5, "ci_low": 0.4, "ci_high": 0.6, "correct": 1, "total": 2, "counted": True}
    settings = {"level": 0.95, "interval": "percentile", "resamples": 200}
    return Table.of(
        [
            {"run": RUN, "task": task.name, "prompt_set": PROMPT_SET, "prompt_set_size": 7, "metric": spec.name}
            | {"title": spec.title, **figures, **settings}
            for spec in task.metrics
        ]
    )


def _outputs(task: Task, identity: GraderIdentity) -> dict[str, str]:
    """What the paper's artifact text, the report's disclosures and CITATION.cff say of a run of
    `task` graded by `identity`."""
    from ifaudit.steps.artifact.bundle import citation
    from ifaudit.steps.reporting.paper_artifact import render_artifact
    from ifaudit.steps.reporting.report import _disclosures_section

    summary = _summary(task, identity)
    facts = {"grader": summary["grader"], "canary_passed": True, "counted": True, "not_counted_because": []}
    disclosed = {"runs": {RUN: facts | {"missing_prompts": [], "cut": {}}}, "prompt_sets": {}, "canaries": {}}
    plan = {"runs": {RUN: {"task": task.name, "prompts": PROMPT_SET}}}
    description = {"project": {"commit": "c0ffee", "date": "2026-12-07T00:00:00+00:00"}, "runs": [RUN]}
    return {
        "artifact.md": render_artifact({RUN: summary}, _metrics(task), {}),
        "report.md": "\n".join(_disclosures_section(plan, disclosed)),
        "CITATION.cff": citation(description, {}, _credits(task, identity)).decode("utf-8"),
    }


def _credits(task: Task, identity: GraderIdentity) -> dict[str, Any]:
    from ifaudit.steps.reporting.grader_text import run_credit

    return {RUN: run_credit(task.name, identity.as_record())}


def _others(task: Task) -> set[str]:
    """Every other task's pinned grader as outputs could name it: title, name, repository, pin file."""
    own = task.upstream_grader()
    found = {grader for other in TASKS.values() if (grader := other.upstream_grader()) is not None}
    return {text for grader in found - {own} for text in (grader.title, grader.name, grader.repository)}


@pytest.mark.parametrize(("task", "kind"), CASES)
def test_every_output_credits_the_grader_that_graded_and_no_other(task: Task, kind: GraderKind) -> None:
    identity = _identity(task, kind)
    credit = task.credit(identity)
    own_pin = credit.pin_file
    for name, text in _outputs(task, identity).items():
        named_pins = {pin for pin in PIN_FILES if pin in text}
        assert named_pins == ({own_pin} if own_pin else set()), (name, named_pins, text)
        assert not {other for other in _others(task) if other in text}, (name, text)
        assert identity.name in text, (name, text)
        if credit.commit:
            assert credit.commit[:12] in text and credit.repository in text.replace("\\", ""), (name, text)
        if kind is GraderKind.UPSTREAM:
            assert credit.title in text, (name, text)
        else:
            assert "pinned upstream grader," not in text and "pinned at commit" not in text, (name, text)
    cited = yaml.safe_load(_outputs(task, identity)["CITATION.cff"])
    assert cited["keywords"] == ["instruction following", task.benchmark, "replication"]


@pytest.mark.parametrize(("task", "kind"), CASES)
def test_the_artifact_text_names_the_runs_prompt_set_and_only_its_tasks_metrics(task: Task, kind: GraderKind) -> None:
    artifact = _outputs(task, _identity(task, kind))["artifact.md"]
    assert f"| `{RUN}` | a run | `{task.name}` | `{PROMPT_SET}` | 7 | 7 | 1 | yes |" in artifact
    (figures,) = re.findall(rf"^- `{RUN}`: (?!graded by)(.*)\.$", artifact, re.M)
    titles = re.findall(r"(?:^|; )(.+?) 50\.00 \[40\.00, 60\.00\] \(1/2\)", figures)
    assert titles[0] == next(spec.title for spec in task.metrics if spec.name == task.headline_metric)
    assert sorted(titles) == sorted(spec.title for spec in task.metrics)


@pytest.mark.parametrize("task", TASKS.values(), ids=list(TASKS))
def test_each_task_declares_its_benchmark_headline_and_its_pins_own_name_and_repository(task: Task) -> None:
    assert task.benchmark, f"task {task.name} declares no benchmark (CITATION.cff's keywords name it)"
    assert task.headline_metric in [spec.name for spec in task.metrics]
    upstream = task.upstream_grader()
    if GraderKind.UPSTREAM in task.grader_kinds() or upstream is not None:
        assert upstream is not None
        pin = tomllib.loads((REPO / upstream.pin_file).read_text(encoding="utf-8"))
        assert (pin["name"], pin["repository"]) == (upstream.name, upstream.repository)


def test_a_grader_another_tasks_pin_holds_is_refused_naming_both() -> None:
    from ifaudit.core.errors import InputError

    ifbench = TASKS["ifbench"].upstream_grader()
    assert ifbench is not None
    with pytest.raises(InputError, match="task ifeval's runs are not graded by upstream 'allenai/IFBench'"):
        TASKS["ifeval"].credit(GraderIdentity(GraderKind.UPSTREAM, ifbench.name, COMMIT))
    with pytest.raises(InputError, match="task ifbench's runs are not graded by stand-in"):
        TASKS["ifbench"].credit(GraderIdentity(GraderKind.STAND_IN, "if-verifiable", "0.1.2"))


def test_run_credits_read_each_runs_summary(tmp_path) -> None:
    import json

    from ifaudit.steps.artifact.bundle import run_credits

    task = TASKS["ifbench"]
    identity = _identity(task, GraderKind.UPSTREAM)
    (tmp_path / RUN).mkdir()
    (tmp_path / RUN / "summary.json").write_text(json.dumps(_summary(task, identity)))
    assert run_credits(tmp_path, [RUN]) == {RUN: task.credit(identity)}
