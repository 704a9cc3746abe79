"""Determinism under variation, as properties: grades do not depend on the order of responses,
the shard count, the number of worker processes, the hash seed or the locale; the linear-time
repetition detector equals its quadratic definition."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import GPT4_RESPONSES, IFEVAL_PROMPTS, grade_args, read_jsonl, run_cli, write_jsonl
from ifaudit.checkers.repetition import repeats_back_to_back
from ifaudit.tasks.registry import TASKS

PROPERTY = settings(
    max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def repeats_by_definition(items: list[str], copies: int, shortest: int, longest: int) -> bool:
    for n in range(shortest, min(len(items) // copies, longest) + 1):
        for start in range(len(items) - copies * n + 1):
            block = items[start : start + n]
            if all(items[start + k * n : start + (k + 1) * n] == block for k in range(1, copies)):
                return True
    return False


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    items=st.lists(st.sampled_from("abc"), max_size=40),
    copies=st.integers(2, 3),
    shortest=st.integers(1, 5),
    span=st.integers(0, 8),
)
def test_linear_repetition_detector_equals_the_definition(items, copies, shortest, span) -> None:
    assert repeats_back_to_back(items, copies, shortest, shortest + span) == repeats_by_definition(
        items, copies, shortest, shortest + span
    )


@pytest.fixture(scope="module")
def graded_reference(registry, tmp_path_factory: pytest.TempPathFactory):
    """Forty responses (20 prompts x 2 samples) and their grades by the `registry` in turn, graded
    once in order."""
    from ifaudit.tasks.grading import canonical_order, grade_all
    from ifaudit.io.prompts import read_prompts
    from ifaudit.io.responses import read_responses

    prompts = read_prompts(IFEVAL_PROMPTS)
    originals = read_jsonl(GPT4_RESPONSES)[:20]
    records = [
        {"prompt": r["prompt"], "response": text, "sample": sample}
        for r in originals
        for sample, text in enumerate([r["response"], r["response"].upper()])
    ]
    responses = read_responses(write_jsonl(tmp_path_factory.mktemp("p") / "r.jsonl", records), prompts)
    ordered = canonical_order(prompts, responses)
    return prompts, responses, grade_all(registry, TASKS["ifeval"], prompts, ordered)


@PROPERTY
@given(data=st.data(), shards=st.integers(1, 9))
def test_order_and_shard_count_do_not_matter(registry, graded_reference, data, shards: int) -> None:
    from ifaudit.tasks.grading import canonical_order, grade_all
    from ifaudit.steps.grading.passes import shard_slice

    prompts, responses, reference = graded_reference
    shuffled = data.draw(st.permutations(responses))
    ordered = canonical_order(prompts, shuffled)
    merged = [
        record
        for index in range(shards)
        for record in grade_all(registry, TASKS["ifeval"], prompts, shard_slice(ordered, index, shards))
    ]
    assert merged == reference


@pytest.mark.parametrize("jobs", [2, 3])
def test_worker_count_does_not_matter(registry, graded_reference, jobs: int) -> None:
    from ifaudit.tasks.grading import canonical_order, grade_in_parallel

    prompts, responses, reference = graded_reference
    assert grade_in_parallel(registry, TASKS["ifeval"], prompts, canonical_order(prompts, responses), jobs) == reference


def test_locale_and_hash_seed_do_not_matter(grader: str, resources: Path, tmp_path: Path) -> None:
    responses = write_jsonl(tmp_path / "r.jsonl", read_jsonl(GPT4_RESPONSES)[:60])
    outputs = []
    for locale, seed in (("C", "0"), ("C.UTF-8", "123"), ("POSIX", "99999")):
        out = tmp_path / f"{locale}.jsonl"
        run_cli(
            grade_args(IFEVAL_PROMPTS, responses, out, grader=grader),
            resources,
            LC_ALL=locale,
            LANG=locale,
            PYTHONHASHSEED=seed,
        )
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1] == outputs[2]
    assert {g["grader"]["kind"] for g in read_jsonl(out)} == {grader}
