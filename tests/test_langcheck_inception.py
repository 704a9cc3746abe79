"""Inception's Arabic gate against the reference implementation's vectors."""

from __future__ import annotations

import json

import pytest

from conftest import DATA
from ifaudit.checkers.inception_gate import inception_gate, inception_preprocess
from ifaudit.checkers.inception_cleaning import inception_clean
from ifaudit.checkers.thinking import strip_thinking

VECTORS = [json.loads(line) for line in (DATA / "arabic_ifeval" / "gate_vectors.jsonl").open(encoding="utf-8")]


@pytest.mark.parametrize("vector", VECTORS, ids=[v["id"] for v in VECTORS])
def test_gate_vector(vector: dict) -> None:
    text, _ = strip_thinking(vector["response"])
    cleaned = inception_clean(text)
    assert cleaned == vector["expected_cleaned"]
    assert inception_preprocess(cleaned) == vector["expected_preprocessed"]
    assert inception_gate(cleaned, vector["lang"]).passed is vector["expected_gate"], vector["note"]


@pytest.mark.parametrize(
    "raw, kept, stripped",
    [
        ("<think>plan</think>answer", "answer", True),
        ("<think>a</think_fast>b</think>c", "c", True),
        ("x</think_faster>y</think>z</think_fast>w", "w", True),
        ("<think>unclosed thinking", "<think>unclosed thinking", False),
        ("no tags", "no tags", False),
    ],
)
def test_thinking_is_cut_at_the_last_closing_tag(raw: str, kept: str, stripped: bool) -> None:
    assert strip_thinking(raw) == (kept, stripped)
