"""Measured on the dataset: what Inception's cleaning (newlines deleted before the checkers run)
does to the paragraph and bullet checks. docs/arabic_ifeval.md quotes these numbers."""

from __future__ import annotations

import pytest

from conftest import DATA, read_jsonl
from ifaudit.checkers.arabic.inception_registry import INSTRUCTION_DICT
from ifaudit.checkers.inception_cleaning import inception_clean

AFFECTED = (
    "detectable_format:number_bullet_lists",
    "length_constraints:nth_paragraph_first_word",
    "length_constraints:number_paragraphs",
)


def ideal_answer(instruction_id: str, kwargs: dict) -> str:
    """A response written to satisfy the instruction as a person reads it, with real line breaks."""
    if instruction_id == "detectable_format:number_bullet_lists":
        return "\n".join(f"* نقطة رقم {i}" for i in range(1, kwargs["num_bullets"] + 1))
    if instruction_id == "length_constraints:nth_paragraph_first_word":
        paragraphs = [f"فقرة رقم {i} عن الموضوع." for i in range(1, kwargs["num_paragraphs"] + 1)]
        paragraphs[kwargs["nth_paragraph"] - 1] = f"{kwargs['first_word']} تبدأ هذه الفقرة."
        return "\n\n".join(paragraphs)
    return "\n***\n".join(f"فقرة رقم {i}." for i in range(1, kwargs["num_paragraphs"] + 1))


def verdicts() -> dict[str, list[tuple[int, bool, bool]]]:
    """Per instruction type: (prompt key, raw verdict, verdict on the cleaned answer)."""
    found: dict[str, list[tuple[int, bool, bool]]] = {name: [] for name in AFFECTED}
    for prompt in read_jsonl(DATA / "arabic_ifeval" / "ar_input_data.jsonl"):
        for instruction_id, kwargs in zip(prompt["instruction_id_list"], prompt["kwargs"]):
            if instruction_id in AFFECTED:
                checker = INSTRUCTION_DICT[instruction_id](instruction_id)
                checker.build_description(**kwargs)
                answer = ideal_answer(instruction_id, kwargs)
                found[instruction_id].append(
                    (prompt["key"], checker.check_following(answer), checker.check_following(inception_clean(answer)))
                )
    return found


@pytest.fixture(scope="module")
def measured():
    return verdicts()


def test_bullet_lists_of_two_or_more_can_never_pass(measured) -> None:
    bullets = measured["detectable_format:number_bullet_lists"]
    assert len(bullets) == 27
    assert sum(raw for _, raw, _ in bullets) == 27  # the ideal answers pass the raw checker
    assert sum(raw and not cleaned for _, raw, cleaned in bullets) == 24  # lost to cleaning: num_bullets >= 2
    assert sum(cleaned for _, _, cleaned in bullets) == 3  # the three num_bullets = 1 instances


def test_nth_paragraph_first_word_can_never_pass(measured) -> None:
    nth = measured["length_constraints:nth_paragraph_first_word"]
    assert len(nth) == 11
    raw_passes = sum(raw for _, raw, _ in nth)
    assert raw_passes == 10  # one first_word is three words ("عطلة نهاية الأسبوع") and never matches a token
    assert sum(cleaned for _, _, cleaned in nth) == 0


def test_asterisk_paragraphs_survive_cleaning(measured) -> None:
    paragraphs = measured["length_constraints:number_paragraphs"]
    assert len(paragraphs) == 21
    assert all(raw and cleaned for _, raw, cleaned in paragraphs)


def test_prompts_with_an_instruction_that_can_never_pass(measured) -> None:
    never = {key for name in AFFECTED for key, _, cleaned in measured[name] if not cleaned}
    assert len(never) == 35  # spec §7: 35 prompts can never be fully followed in the pipeline
