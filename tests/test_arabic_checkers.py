"""The Arabic IFEval checkers against the reference's verdicts (shared/data/arabic_ifeval)."""

from __future__ import annotations

import random

import langdetect
import nltk
import pytest
from conftest import DATA, assert_every_arabic_prompt_builds, read_jsonl

from ifaudit.checkers.arabic.inception_registry import INSTRUCTION_DICT

ARABIC = DATA / "arabic_ifeval"
VECTORS = read_jsonl(ARABIC / "checker_vectors.jsonl")
NLTK_GE_3_10 = tuple(int(part) for part in nltk.__version__.split(".")[:2]) >= (3, 10)


@pytest.fixture(autouse=True)
def _punkt(punkt):
    return punkt


def expected_verdict(vector: dict) -> bool:
    """NLTK 3.10 tokenizes `\\w+` with the `regex` engine, where tashkeel stays inside words."""
    if NLTK_GE_3_10:
        return vector.get("expected_if_nltk_ge_3_10", {}).get("expected", vector["expected"])
    return vector["expected"]


def test_registry_has_the_31_ids() -> None:
    assert len(INSTRUCTION_DICT) == 31


@pytest.mark.parametrize("vector", VECTORS, ids=[vector["id"] for vector in VECTORS])
def test_checker_vector(vector: dict) -> None:
    random.seed(0)
    langdetect.DetectorFactory.seed = 0
    checker = INSTRUCTION_DICT[vector["instruction_id"]](vector["instruction_id"])
    checker.build_description(**vector["kwargs"])
    assert checker.check_following(vector["response"]) is expected_verdict(vector)


def test_every_dataset_prompt_builds() -> None:
    assert_every_arabic_prompt_builds(INSTRUCTION_DICT)
