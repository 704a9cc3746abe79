"""The English gate (ifeval_langcheck) and the Arabic-HF gate: every example of the seed's tables
(shared/seeds/ifeval_langcheck_tasks.txt) and each rule's boundary."""

from __future__ import annotations

import pytest

from ifaudit.checkers.arabic_hf_gate import arabic_hf_gate
from ifaudit.checkers.english_gate import english_gate

# Ten distinct Arabic words: cycling them never repeats a block of up to six words back to back.
ARABIC = ["ذهب", "أحمد", "إلى", "السوق", "صباحا", "واشترى", "خبزا", "وجبنا", "وبعض", "الفاكهة"]


def arabic_text(arabic_words: int, english_words: int = 0) -> str:
    """Arabic prose with English words spread through it (never two English words in a row)."""
    words = [ARABIC[i % len(ARABIC)] for i in range(arabic_words)]
    english = ["model", "data", "code", "python", "cloud", "server", "token", "vector", "matrix", "kernel"]
    for index in range(english_words):
        words.insert(index * 11 + 5, english[index % len(english)])
    return " ".join(words)


def hf(text: str, instruction_ids: tuple[str, ...] = (), prompt: str = "اكتب فقرة.") -> tuple[bool, str | None]:
    verdict = arabic_hf_gate(text, instruction_ids, prompt)
    return verdict.passed, verdict.rule


def en(text: str) -> tuple[bool, str | None]:
    verdict = english_gate(text)
    return verdict.passed, verdict.rule


# The seed's "Comparison of Repetition Detection" table, both columns.
@pytest.mark.parametrize(
    "text, english, arabic",
    [
        ("hello hello", (True, None), (False, "repeated_words")),
        ("I am fine. I am fine.", (True, None), (False, "repeated_sentences")),
        (" ".join(["hello"] * 7), (False, "repeated_words"), (False, "repeated_words")),
        ("I am fine. " * 3, (False, "repeated_sentences"), (False, "repeated_sentences")),
    ],
)
def test_seed_repetition_table(text: str, english, arabic) -> None:
    assert en(text) == english
    assert hf(text) == arabic


def test_seed_examples_of_single_word_loops() -> None:
    assert en("hello hello hello hello hello hello hello") == (False, "repeated_words")
    assert hf("مرحبا مرحبا") == (False, "repeated_words")  # "even a single word repeated once is flagged"


@pytest.mark.parametrize("count, passes", [(6, True), (7, False)])
def test_english_word_run_boundary(count: int, passes: bool) -> None:
    assert en(" ".join(["hello"] * count) + " and goodbye")[0] is passes


@pytest.mark.parametrize("copies, passes", [(2, True), (3, False)])
def test_english_sentence_boundary(copies: int, passes: bool) -> None:
    assert en("We went home. " + "I am fine. " * copies + "Bye now.")[0] is passes


def test_english_ngram_detector() -> None:
    phrase = "the quick brown fox jumps over the lazy dog today"  # a 10-word phrase
    assert en(" ".join([phrase] * 2))[0] is True
    assert en(" ".join([phrase] * 3)) == (False, "repeated_ngrams")


@pytest.mark.parametrize(
    "text, rule",
    [
        ("", "empty"),
        ("   \n\t", "empty"),
        ("Hello، world", "arabic_punctuation"),
        ("Really؟", "arabic_punctuation"),
        ("50٪ done", "arabic_punctuation"),
        ("«quoted»", "arabic_punctuation"),
        ("End۔", "arabic_punctuation"),
        ("Hello مرحبا", "non_english_word"),
        ("Hello שלום", "non_english_word"),
        ("Hello 你好", "non_english_word"),
        ("Hello Привет", "non_english_word"),
        ("Hello こんにちは", "non_english_word"),
        ("Hello 안녕", "non_english_word"),
        ("angle θ", "non_english_word"),
        ("Helloمرحبا", "non_english_word"),
        ("café au lait", "non_english_word"),
    ],
)
def test_english_gate_rejections(text: str, rule: str) -> None:
    assert en(text) == (False, rule)


def test_english_gate_ignores_numbers_punctuation_and_markup() -> None:
    assert en("In 2024, sales rose 15% (see table #3)! **Great** news: `x = 1`.") == (True, None)
    assert en('```json\n{"name": "Ada", "tags": ["a", "b"]}\n```') == (True, None)


@pytest.mark.parametrize(
    "text, rule",
    [
        ("", "empty"),
        ("هذا Helloمرحبا جيد", "mixed_script_word"),
        ("هذا שלום جيد", "other_script"),
        ("قطة 你好", "other_script"),
        ("قطة Привет", "other_script"),
        ("قطة θ", "other_script"),
    ],
)
def test_arabic_hf_script_rejections(text: str, rule: str) -> None:
    assert hf(text) == (False, rule)


def test_arabic_hf_keeps_tashkeel_on_its_letter() -> None:
    assert hf("كَتَبَ الطَّالِبُ الدَّرْسَ فِي الْمَدْرَسَةِ") == (True, None)


def test_arabic_hf_allows_english_words_up_to_seven_percent() -> None:
    assert hf(arabic_text(93, 7)) == (True, None)  # exactly 7 % passes
    assert hf(arabic_text(92, 8)) == (False, "english_ratio")


@pytest.mark.parametrize(
    "instruction_ids, prompt",
    [
        (("detectable_format:json_format",), "اكتب فقرة."),
        ((), "أجب بصيغة JSON من فضلك."),
        ((), "اكتب ملف jsonl يحوي الأسماء."),
        ((), "اكتب صفحة HTML بسيطة."),
    ],
)
def test_format_exemption_lifts_the_english_cap(instruction_ids, prompt: str) -> None:
    assert hf(arabic_text(80, 20), instruction_ids, prompt) == (True, None)


def test_format_exemption_needs_the_word() -> None:
    assert hf(arabic_text(80, 20), (), "اكتب عن jsonify في بايثون.") == (False, "english_ratio")
