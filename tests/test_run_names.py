"""Security, run names: a run's name becomes a folder under results/ and a wildcard, so only a
short safe name is accepted, in full, and any other is one line before any job runs, with nothing
written (a run named `..` once wrote its grades into the project root)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ifaudit.core.names import RUN_NAME_RULE, run_name_problem
from test_workflow import snakemake, without_profile_note, write_config

HOSTILE = ["..", ".", "-rf", "--help", "canary", "comparisons", "report.md", "a" * 300, "mine\n", "a/b", "a b", ""]


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_run_name_is_refused_in_words(name: str) -> None:
    problem = run_name_problem(name)
    assert problem is not None and "\n" not in problem and problem.endswith(RUN_NAME_RULE)


@pytest.mark.parametrize("name", ["gpt4_google", "Llama-3.1-8B", "m.2", "a" * 64, "7b"])
def test_a_plain_run_name_is_accepted(name: str) -> None:
    assert run_name_problem(name) is None


@pytest.mark.e2e
@pytest.mark.parametrize("name", ["..", "-rf", "canary", "a" * 300, "mine\n"])
def test_the_dag_refuses_a_hostile_run_name_in_one_line_writing_nothing(tmp_path: Path, name: str) -> None:
    write_config(
        tmp_path,
        {"runs": {name: {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "gpt4_responses"}}},
    )
    done = snakemake(tmp_path, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    # Snakemake's own note on the default profile it read aside, the refusal is one line
    said = f"ifaudit: error: {tmp_path / 'test.yaml'}:1: config: runs: {run_name_problem(name)}\n"
    assert without_profile_note(done.stderr) == said
    # Snakemake's own .snakemake/ aside, nothing: no results/, logs/ or grades, here or above
    assert sorted(path.name for path in tmp_path.iterdir()) == [".snakemake", "test.yaml"]
    assert not (tmp_path.parent / "grades.jsonl").exists() and not (tmp_path.parent / "passes").exists()
