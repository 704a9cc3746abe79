"""Hostile content through the real DAG: a response file holding a lone surrogate stops its grading
job with the one-line reason in the job's log, and no grades of that run exist anywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import GPT4_RESPONSES, read_jsonl
from test_workflow import snakemake, write_config

pytestmark = pytest.mark.e2e


def test_a_lone_surrogate_fails_the_run_and_leaves_no_grades(default_run_copy: Path) -> None:
    workdir = default_run_copy  # the default run finished: only this test's run is graded
    records = read_jsonl(GPT4_RESPONSES)[:3]
    lines = [json.dumps(record) for record in records]
    lines[1] = json.dumps({**records[1], "response": "half of a pair: \ud800"})  # written as "\ud800"
    responses = workdir / "surrogate.jsonl"
    responses.write_text("\n".join(lines) + "\n", encoding="ascii")
    write_config(
        workdir,
        {
            "datasets": {"surrogate": {"path": str(responses)}},
            "runs": {"surrogate": {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "surrogate"}},
        },
    )
    done = snakemake(workdir, check=False)
    assert done.returncode != 0
    left = [path.relative_to(workdir) for path in (workdir / "results").rglob("*") if path.is_file()]
    assert not [path for path in left if "surrogate" in str(path)], left
    reasons = [
        line
        for log in (workdir / "logs").rglob("*.log")
        for line in log.read_text().splitlines()
        if "unpaired UTF-16 surrogate" in line
    ]
    assert reasons and all(
        ":2: field 'response': unpaired UTF-16 surrogate \\ud800 at character 17" in r for r in reasons
    ), reasons
    assert not any("Traceback" in log.read_text() for log in (workdir / "logs").rglob("*.log"))
