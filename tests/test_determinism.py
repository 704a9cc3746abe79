"""Grades are a function of (prompt, response, grader) alone: not of the process, the hash seed,
the other responses in the file, or their order."""

from __future__ import annotations

import random
from pathlib import Path

from conftest import GPT4_RESPONSES, IFEVAL_PROMPTS, read_jsonl, write_jsonl
from grader_fixtures import grade_gpt4
from ifaudit.tasks.registry import TASKS


def test_two_processes_with_different_hash_seeds_write_identical_bytes(
    grader: str, gpt4_grades: Path, resources: Path, tmp_path: Path
) -> None:
    """The session's CLI grading of all 541 GPT-4 responses by `grader` (hash seed 1), and the
    same again in a process with hash seed 4242. The whole file with each grader: about 3 s of
    CPU a grading on the 2-core machine, so no subset is needed for the upstream grader."""
    out = grade_gpt4(tmp_path / "grades-4242.jsonl", resources, "4242", grader)
    outputs = [gpt4_grades.read_bytes(), out.read_bytes()]
    assert outputs[0] == outputs[1]
    assert len(outputs[0].splitlines()) == 541
    assert {g["grader"]["kind"] for g in read_jsonl(out)} == {grader}


def _grade_file(registry, path: Path) -> dict[tuple, dict]:
    from ifaudit.tasks.grading import canonical_order, grade_all
    from ifaudit.io.prompts import read_prompts
    from ifaudit.io.responses import read_responses

    prompts = read_prompts(IFEVAL_PROMPTS)
    records = grade_all(registry, TASKS["ifeval"], prompts, canonical_order(prompts, read_responses(path, prompts)))
    return {(r["key"], r["sample"]): r for r in records}


def test_each_response_grades_the_same_whatever_else_is_in_the_file(registry, tmp_path: Path) -> None:
    originals = read_jsonl(GPT4_RESPONSES)[:120]
    # Three samples per prompt: the original, a shortened one and one in capitals, so that the
    # language and case checks and letter_frequency's random draw run between samples.
    many = []
    for record in originals:
        text = record["response"]
        for sample, variant in enumerate([text, text[: len(text) // 2], text.upper()]):
            many.append({"prompt": record["prompt"], "response": variant, "sample": sample})
    shuffled = many[:]
    random.Random(7).shuffle(shuffled)
    subset = [r for i, r in enumerate(shuffled) if i % 4 == 0]

    full = _grade_file(registry, write_jsonl(tmp_path / "ordered.jsonl", many))
    reordered = _grade_file(registry, write_jsonl(tmp_path / "shuffled.jsonl", shuffled))
    alone = _grade_file(registry, write_jsonl(tmp_path / "subset.jsonl", subset))

    assert len(full) == 360
    assert reordered == full
    assert alone and all(alone[pair] == full[pair] for pair in alone)
    # The samples really differ, so equality above is not vacuous.
    assert len({(r["strict"]["follow_all_instructions"], r["response_sha256"]) for r in full.values()}) > 300


def test_output_order_follows_the_prompt_file_then_sample(registry, tmp_path: Path) -> None:
    from ifaudit.tasks.grading import canonical_order, grade_all
    from ifaudit.io.prompts import read_prompts
    from ifaudit.io.responses import read_responses

    originals = read_jsonl(GPT4_RESPONSES)[:30]
    records = [{"prompt": r["prompt"], "response": r["response"], "sample": s} for r in originals for s in (2, 0)]
    random.Random(3).shuffle(records)
    prompts = read_prompts(IFEVAL_PROMPTS)
    responses = read_responses(write_jsonl(tmp_path / "r.jsonl", records), prompts)
    graded = grade_all(registry, TASKS["ifeval"], prompts, canonical_order(prompts, responses))
    order = {p.key: i for i, p in enumerate(prompts)}
    assert [(r["key"], r["sample"]) for r in graded] == sorted(
        ((r["key"], r["sample"]) for r in graded), key=lambda pair: (order[pair[0]], pair[1])
    )
