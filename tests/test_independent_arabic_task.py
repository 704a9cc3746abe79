"""The Arabic tasks' grades, through `ifaudit grade` (the driver the DAG runs), against the
reference implementation's vectors in shared/data/arabic_ifeval.

Each vector becomes a one-instruction prompt of its own, all of a file graded in one CLI call
per task. tests/test_arabic_checkers.py and tests/test_langcheck_inception.py check the
checkers and the gate function by function; these tests check what the task as a whole writes in
its grades: cleaning, thinking strip, the checkers and the per-prompt language gate together.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nltk
import pytest

from test_arabic_hf_checkers import UNCHANGED
from conftest import DATA, grade_args, read_jsonl, run_cli, write_jsonl

ARABIC = DATA / "arabic_ifeval"
CHECKER_VECTORS = read_jsonl(ARABIC / "checker_vectors.jsonl")
GATE_VECTORS = read_jsonl(ARABIC / "gate_vectors.jsonl")
NLTK_GE_3_10 = tuple(int(part) for part in nltk.__version__.split(".")[:2]) >= (3, 10)
# The ids the Hugging Face variant takes unchanged from Inception's registry (spec §9 leaves them
# alone): on raw text they must give the reference checker's own verdict, `expected`.
UNCHANGED_IN_HF = UNCHANGED


def expected(vector: dict[str, Any], field: str) -> bool:
    """The vector's verdict `field`; NLTK 3.10 tokenizes `\\w+` with the `regex` engine, where
    tashkeel stay inside words, and three vectors say what that changes."""
    if NLTK_GE_3_10:
        return vector.get("expected_if_nltk_ge_3_10", {}).get(field, vector[field])
    return vector[field]


def graded(task: str, items: list[tuple[dict[str, Any], str]], folder: Path, resources: Path) -> list[dict[str, Any]]:
    """`ifaudit grade --task task` of one prompt per (prompt fields, response), keyed 1, 2, ...;
    the grades in key order."""
    folder.mkdir()
    prompts = [{"key": key, "prompt": f"vector {key}", **fields} for key, (fields, _) in enumerate(items, 1)]
    responses = [{"key": key, "response": response} for key, (_, response) in enumerate(items, 1)]
    out = folder / "grades.jsonl"
    args = grade_args(
        write_jsonl(folder / "prompts.jsonl", prompts), write_jsonl(folder / "responses.jsonl", responses), out
    )
    run_cli([*args, "--task", task], resources)
    grades = sorted(read_jsonl(out), key=lambda record: record["key"])
    assert [record["key"] for record in grades] == list(range(1, len(items) + 1))
    assert all(record["task"] == task for record in grades)
    return grades


def checker_prompt(vector: dict[str, Any]) -> dict[str, Any]:
    return {"instruction_id_list": [vector["instruction_id"]], "kwargs": [vector["kwargs"]], "lang": ["ar"]}


def test_inception_task_strict_verdicts_are_the_vectors_strict_stage(resources: Path, tmp_path: Path) -> None:
    """All 266 checker vectors: the task cleans, strips thinking and checks, so its strict verdict
    is the reference pipeline's stage-1 verdict (`expected_strict_stage`), which differs from the
    raw checker's on 27 of them (with the pinned NLTK)."""
    items = [(checker_prompt(vector), vector["response"]) for vector in CHECKER_VECTORS]
    grades = graded("ifeval_arabic_inception", items, tmp_path / "inception", resources)
    wrong = [
        vector["id"]
        for vector, record in zip(CHECKER_VECTORS, grades, strict=True)
        if record["strict"]["follow_instruction_list"] != [expected(vector, "expected_strict_stage")]
        or record["strict"]["follow_all_instructions"] is not expected(vector, "expected_strict_stage")
    ]
    assert wrong == []
    differing = [v for v in CHECKER_VECTORS if expected(v, "expected") != expected(v, "expected_strict_stage")]
    assert len(differing) == 27  # the test would not tell the pipeline from the raw checker otherwise


def test_inception_task_gate_verdicts_are_the_gate_vectors(resources: Path, tmp_path: Path) -> None:
    """All 128 gate vectors, each under its own `lang`: the task's gate verdict is the vector's
    `expected_gate`. The prompt asks to repeat the reference's cleaned text first, so the strict
    verdict also shows the checkers see text starting with exactly that cleaned text."""
    items = []
    for vector in GATE_VECTORS:
        cleaned = vector["expected_cleaned"]
        instruction = ("combination:repeat_prompt", {"prompt_to_repeat": cleaned}) if cleaned.strip() else None
        instruction = instruction or ("punctuation:no_comma", {})
        fields = {"instruction_id_list": [instruction[0]], "kwargs": [instruction[1]], "lang": vector["lang"]}
        items.append((fields, vector["response"]))
    grades = graded("ifeval_arabic_inception", items, tmp_path / "gate", resources)
    wrong_gate = [
        vector["id"]
        for vector, record in zip(GATE_VECTORS, grades, strict=True)
        if record["gate"]["passed"] is not vector["expected_gate"]
    ]
    assert wrong_gate == []
    assert sum(record["gate"]["passed"] for record in grades) == 72  # and 56 failing
    not_seeing_the_cleaned_text = [
        vector["id"]
        for vector, record in zip(GATE_VECTORS, grades, strict=True)
        if vector["expected_cleaned"].strip() and record["strict"]["follow_instruction_list"] != [True]
    ]
    assert not_seeing_the_cleaned_text == []


@pytest.mark.parametrize("task", ["ifeval_arabic_inception_hf", "ifeval_arabic_inception_hf_langcheck"])
def test_hf_tasks_grade_the_unchanged_ids_as_the_reference_checker_on_raw_text(
    task: str, resources: Path, tmp_path: Path
) -> None:
    """The Hugging Face variants neither clean nor (for these vectors, which have no thinking
    tags) strip anything: on the ten ids they take from Inception, their strict verdict is the
    reference checker's verdict on the raw response (`expected`), not the pipeline's."""
    vectors = [v for v in CHECKER_VECTORS if v["instruction_id"] in UNCHANGED_IN_HF and "</think" not in v["response"]]
    grades = graded(task, [(checker_prompt(v), v["response"]) for v in vectors], tmp_path / "hf", resources)
    wrong = [
        vector["id"]
        for vector, record in zip(vectors, grades, strict=True)
        if record["strict"]["follow_instruction_list"] != [expected(vector, "expected")]
    ]
    assert wrong == []
    # 82 vectors, 11 of which the cleaning pipeline grades otherwise: raw text is what is tested.
    assert len(vectors) == 82
    assert sum(expected(v, "expected") != expected(v, "expected_strict_stage") for v in vectors) == 11
