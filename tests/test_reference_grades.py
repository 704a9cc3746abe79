"""Our driver reproduces the unmodified upstream grader's grades on Google's 541 GPT-4 responses."""

from __future__ import annotations

import json
from pathlib import Path


from conftest import (
    GPT4_RESPONSES,
    IFEVAL_PROMPTS,
    REFERENCE_GRADES,
    grade_args,
    read_jsonl,
    run_cli,
    write_jsonl,
)

# FACTS §3: the reference grades' totals.
REFERENCE_COUNTS = {"strict": (417, 698), "loose": (431, 714)}


def assert_matches_reference(grades_path: Path) -> None:
    reference = read_jsonl(REFERENCE_GRADES)
    graded = read_jsonl(grades_path)
    assert [g["key"] for g in graded] == [r["key"] for r in reference]
    mismatches = [
        (r["key"], mode)
        for r, g in zip(reference, graded)
        for mode in ("strict", "loose")
        if g[mode] != r[mode] or g["instruction_id_list"] != r["instruction_id_list"]
    ]
    assert mismatches == []
    for mode, (prompts_followed, instructions_followed) in REFERENCE_COUNTS.items():
        assert sum(g[mode]["follow_all_instructions"] for g in graded) == prompts_followed
        assert sum(sum(g[mode]["follow_instruction_list"]) for g in graded) == instructions_followed


def test_stand_in_reproduces_reference_grades(standin_gpt4_grades: Path) -> None:
    assert_matches_reference(standin_gpt4_grades)


def test_stand_in_is_labelled_in_every_record(standin_gpt4_grades: Path) -> None:
    graders = {json.dumps(g["grader"], sort_keys=True) for g in read_jsonl(standin_gpt4_grades)}
    assert graders == {
        json.dumps({"kind": "stand-in", "name": "if-verifiable", "upstream": False, "version": "0.1.2"}, sort_keys=True)
    }


def test_pinned_upstream_reproduces_reference_grades(resources: Path, tmp_path: Path) -> None:
    out = tmp_path / "upstream.jsonl"
    run_cli(
        grade_args(IFEVAL_PROMPTS, GPT4_RESPONSES, out, "--offline", grader="upstream"),
        resources,
    )
    assert_matches_reference(out)
    assert all(g["grader"]["upstream"] is True for g in read_jsonl(out))


def _perturbed(responses: list[dict]) -> list[dict]:
    """Answers that take the checkers down other paths: case changes, cut lines, markdown, empty."""
    variants = []
    for index, record in enumerate(responses):
        text = record["response"]
        lines = text.split("\n")
        for sample, changed in enumerate(
            [
                text.upper(),
                text.lower(),
                "\n".join(lines[1:]),
                "*" + text.replace(" ", "* *", 3) + "*",
                "Sure!\n" + text + "\nP.S. done",
                "",
                "   \n ",
                text[: len(text) // 3],
            ],
            start=1,
        ):
            if (index + sample) % 3 == 0:  # a third of the combinations keeps the run short
                variants.append({"prompt": record["prompt"], "response": changed, "sample": sample})
    return variants


def test_driver_equals_upstream_evaluation_lib(upstream, resources: Path) -> None:
    """The one driver, run over the upstream registry, equals upstream's own evaluation_lib
    functions (called with a one-entry mapping) on the GPT-4 responses and perturbed ones."""
    import random

    import langdetect

    from ifaudit.tasks.grading import grade_response
    from ifaudit.io.prompts import read_prompts
    from ifaudit.io.responses import read_responses
    from ifaudit.tasks.registry import TASKS

    registry = upstream  # the pinned files from the session's upstream copy, materialized and verified
    from instruction_following_eval import evaluation_lib

    prompts = read_prompts(IFEVAL_PROMPTS)
    by_key = {p.key: p for p in prompts}
    originals = read_jsonl(GPT4_RESPONSES)
    extra = write_jsonl(resources / "perturbed.jsonl", originals + _perturbed(originals))
    responses = read_responses(extra, prompts)
    assert len(responses) > 1500
    for response in responses:
        prompt = by_key[response.key]
        ours = grade_response(registry, TASKS["ifeval"], prompt, response)
        example = evaluation_lib.InputExample(
            key=prompt.key,
            instruction_id_list=list(prompt.instruction_id_list),
            prompt=prompt.prompt,
            kwargs=[dict(k) for k in prompt.kwargs],
        )
        mapping = {prompt.prompt: response.text}
        langdetect.DetectorFactory.seed = 0
        random.seed(0)
        strict = evaluation_lib.test_instruction_following_strict(example, mapping)
        random.seed(0)
        loose = evaluation_lib.test_instruction_following_loose(example, mapping)
        assert ours["strict"]["follow_instruction_list"] == strict.follow_instruction_list, (
            prompt.key,
            response.sample,
        )
        assert ours["loose"]["follow_instruction_list"] == loose.follow_instruction_list, (prompt.key, response.sample)
