"""The HF variant's checkers (task ifeval_arabic_inception_hf) against hand-written cases whose
verdicts follow from shared/specs/arabic_ifeval.md §9 (and §6.1 for Inception's side of a
difference). No reference vectors exist for this task."""

from __future__ import annotations

import random

import langdetect
import pytest
from conftest import assert_every_arabic_prompt_builds

from ifaudit.checkers.arabic import hf_registry as arabic_hf_checkers
from ifaudit.checkers.arabic import inception_registry as arabic_checkers
from ifaudit.checkers.arabic.hf_registry import ARABIC_ALPHABET, INSTRUCTION_DICT

DROPPED = {
    "detectable_format:word_repetition",
    "detectable_format:sent_repetition",
    "detectable_format:check_punct_lang",
    "change_case:capital_word_frequency",
    "change_case:english_capital",
    "change_case:english_lowercase",
}
# The ids §9 does not mention: they behave as Inception's.
UNCHANGED = {
    "length_constraints:number_paragraphs",
    "detectable_content:number_placeholders",
    "detectable_format:number_bullet_lists",
    "detectable_format:number_highlighted_sections",
    "detectable_format:multiple_sections",
    "detectable_format:json_format",
    "combination:two_responses",
    "combination:repeat_prompt",
    "startend:end_checker",
    "punctuation:no_comma",
}

ARABIC_TEXT = "هذا نص عربي طويل بما يكفي لكي تتعرف أداة الكشف على لغته العربية بسهولة ووضوح تام"
ENGLISH_TEXT = "This is a plain English sentence that is long enough for language detection to work well"

EXIST = "keywords:existence"
LIST = "keywords:list_existence"
FREQ = "keywords:frequency"
LETTERS = "keywords:letter_list_freq"
FORBID = "keywords:forbidden_words"
LETTER = "keywords:letter_frequency"
LANG = "language:response_language"
SENT = "length_constraints:number_sentences"
WORDS = "length_constraints:number_words"
NTH = "length_constraints:nth_paragraph_first_word"
PS = "detectable_content:postscript"
CONSTRAINED = "detectable_format:constrained_response"
TITLE = "detectable_format:title"
TASHKEEL = "detectable_format:tashkeel"
QUOTE = "startend:quotation"

# (case id, instruction id, kwargs, response, HF verdict, Inception verdict where §6.1 gives a
# different one, else None).
CASES = [
    # existence: escaped keyword, whole word, case-sensitive.
    ("existence-whole-word-not-substring", EXIST, {"keywords": ["قط"]}, "أريد هذا فقط", False, True),
    ("existence-whole-word-found", EXIST, {"keywords": ["نهر", "النيل"]}, "نهر النيل طويل", True, None),
    ("existence-case-sensitive", EXIST, {"keywords": ["Peace"]}, "we want peace", False, True),
    ("existence-keyword-escaped-dot-is-literal", EXIST, {"keywords": ["a.b"]}, "axb", False, True),
    ("existence-tashkeel-is-a-boundary", EXIST, {"keywords": ["مال"]}, "هذا مالٌ كثير", True, None),
    # frequency: whole words, case-sensitive, "exactly" accepted.
    (
        "frequency-whole-word-count",
        FREQ,
        {"keyword": "رجل", "frequency": 2, "relation": "at least"},
        "الرجل رجل",
        False,
        True,
    ),
    (
        "frequency-case-sensitive-exactly-two-of-three",
        FREQ,
        {"keyword": "peace", "frequency": 2, "relation": "exactly"},
        "Peace peace peace",
        True,
        None,
    ),
    (
        "frequency-case-sensitive-at-least-three",
        FREQ,
        {"keyword": "peace", "frequency": 3, "relation": "at least"},
        "Peace peace peace",
        False,
        True,
    ),
    ("frequency-exactly-met", FREQ, {"keyword": "ست", "frequency": 2, "relation": "exactly"}, "ست ستة ست", True, None),
    # forbidden_words: whole words, case-sensitive.
    ("forbidden-case-sensitive-other-case-passes", FORBID, {"forbidden_words": ["json"]}, "Use JSON here", True, False),
    ("forbidden-same-case-fails", FORBID, {"forbidden_words": ["json"]}, "use json here", False, None),
    ("forbidden-inside-longer-word-passes", FORBID, {"forbidden_words": ["ميدان"]}, "في الميدان", True, None),
    # list_existence: exact tokens, no normalization.
    ("list-all-exact-tokens", LIST, {"keywords": ["أنا", "نحن"], "mode": "all"}, "أنا ونحن؛ أنا و نحن", True, None),
    ("list-all-one-missing", LIST, {"keywords": ["أنا", "نحن"], "mode": "all"}, "أنا هنا", False, None),
    ("list-any-one-token", LIST, {"keywords": ["أنا", "نحن"], "mode": "any"}, "نحن هنا", True, None),
    ("list-substring-is-not-a-token", LIST, {"keywords": ["نحن"], "mode": "any"}, "فنحن هنا", False, True),
    ("list-no-al-removal", LIST, {"keywords": ["الكتاب"], "mode": "all"}, "كتاب جميل", False, True),
    ("list-no-tashkeel-removal", LIST, {"keywords": ["كتب"], "mode": "all"}, "كَتَبَ الولد", False, True),
    ("list-case-sensitive", LIST, {"keywords": ["Peace"], "mode": "any"}, "peace now", False, True),
    ("list-hamza-not-unified", LIST, {"keywords": ["انا"], "mode": "any"}, "أنا هنا", False, None),
    # letter_list_freq: every letter on its own, tokens without ASCII punctuation, "any" counts nothing.
    (
        "letters-at-least-needs-every-letter",
        LETTERS,
        {"letters": ["ث", "ذ"], "frequency": 2, "relation": "at least", "position": "start"},
        "ثوب ثمر ذهب",
        False,
        True,
    ),
    (
        "letters-at-least-every-letter-reached",
        LETTERS,
        {"letters": ["ث", "ذ"], "frequency": 2, "relation": "at least", "position": "start"},
        "ثوب ثمر ذهب ذيل",
        True,
        None,
    ),
    (
        "letters-less-than-every-letter-below",
        LETTERS,
        {"letters": ["ث", "ذ"], "frequency": 2, "relation": "less than", "position": "start"},
        "ثوب ذهب",
        True,
        False,
    ),
    (
        "letters-less-than-one-letter-reaches",
        LETTERS,
        {"letters": ["ث", "ذ"], "frequency": 2, "relation": "less than", "position": "start"},
        "ثوب ثمر ذهب",
        False,
        None,
    ),
    (
        "letters-position-any-counts-nothing",
        LETTERS,
        {"letters": ["ذ"], "frequency": 1, "relation": "at least", "position": "any"},
        "ذهب ذيل",
        False,
        True,
    ),
    (
        "letters-position-any-less-than-passes",
        LETTERS,
        {"letters": ["ذ", "ظ"], "frequency": 1, "relation": "less than", "position": "any"},
        "ذهب ظل",
        True,
        False,
    ),
    (
        "letters-end-ascii-period-not-in-token",
        LETTERS,
        {"letters": ["ب"], "frequency": 1, "relation": "at least", "position": "end"},
        "كتاب.",
        True,
        False,
    ),
    (
        "letters-end-tashkeel-in-token-then-stripped-as-inception",
        LETTERS,
        {"letters": ["ب"], "frequency": 1, "relation": "at least", "position": "end"},
        "كَتَبَ",
        True,
        None,
    ),
    (
        "letters-start-leading-al-dropped-as-inception",
        LETTERS,
        {"letters": ["ث"], "frequency": 1, "relation": "at least", "position": "start"},
        "الثعلب",
        True,
        None,
    ),
    (
        "letters-no-words-fails-as-inception",
        LETTERS,
        {"letters": ["ث"], "frequency": 1, "relation": "less than", "position": "start"},
        "... !!!",
        False,
        None,
    ),
    # letter_frequency: any letter, "exactly" accepted.
    (
        "letter-frequency-arabic-letter-exactly",
        LETTER,
        {"letter": "ب", "let_frequency": 2, "let_relation": "exactly"},
        "باب",
        True,
        None,
    ),
    (
        "letter-frequency-arabic-letter-exactly-missed",
        LETTER,
        {"letter": "ب", "let_frequency": 3, "let_relation": "exactly"},
        "باب",
        False,
        None,
    ),
    # response_language: a missing language means "ar".
    ("language-missing-means-ar-arabic-passes", LANG, {}, ARABIC_TEXT, True, None),
    ("language-missing-means-ar-english-fails", LANG, {}, ENGLISH_TEXT, False, None),
    # number_sentences: break after . ? ! ؟ followed by whitespace; "exactly" accepted.
    (
        "sentences-arabic-question-mark-splits",
        SENT,
        {"num_sentences": 2, "relation": "at least"},
        "كيف حالك؟ أنا بخير",
        True,
        False,
    ),
    (
        "sentences-abbreviation-period-splits",
        SENT,
        {"num_sentences": 2, "relation": "at least"},
        "Dr. Smith came",
        True,
        False,
    ),
    (
        "sentences-terminator-needs-whitespace",
        SENT,
        {"num_sentences": 1, "relation": "exactly"},
        "جملة.جملة؟أخرى",
        True,
        None,
    ),
    ("sentences-exactly-three", SENT, {"num_sentences": 3, "relation": "exactly"}, "One. Two! Three?", True, None),
    ("sentences-less-than-three", SENT, {"num_sentences": 3, "relation": "less than"}, "One. Two! Three?", False, None),
    (
        "sentences-trailing-whitespace-adds-none",
        SENT,
        {"num_sentences": 1, "relation": "exactly"},
        "جملة واحدة.  ",
        True,
        None,
    ),
    ("sentences-empty-text-is-zero-as-inception", SENT, {"num_sentences": 1, "relation": "less than"}, "", True, None),
    # number_words: runs of \w or U+0600-06FF; "exactly" accepted.
    ("words-tashkeel-stays-inside-words", WORDS, {"num_words": 2, "relation": "exactly"}, "كَتَبَ الطَّالِبُ", True, None),
    ("words-hyphen-splits", WORDS, {"num_words": 2, "relation": "exactly"}, "e-mail", True, None),
    ("words-arabic-comma-inside-block-glues", WORDS, {"num_words": 1, "relation": "exactly"}, "مرحبا،بكم", True, None),
    ("words-ascii-comma-splits", WORDS, {"num_words": 2, "relation": "exactly"}, "hello,world", True, None),
    ("words-less-than", WORDS, {"num_words": 3, "relation": "less than"}, "واحد اثنان ثلاثة", False, None),
    # nth_paragraph_first_word: nth non-empty paragraph, punctuation stripped from both ends.
    (
        "nth-indexes-non-empty-paragraphs",
        NTH,
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "ثانيا"},
        "أولا هنا\n\n\n\nثانيا هنا",
        True,
        False,
    ),
    (
        "nth-strips-guillemets",
        NTH,
        {"num_paragraphs": 2, "nth_paragraph": 1, "first_word": "مرحبا"},
        "«مرحبا» يا صديقي\n\nفقرة ثانية",
        True,
        False,
    ),
    (
        "nth-strips-ascii-colon",
        NTH,
        {"num_paragraphs": 2, "nth_paragraph": 1, "first_word": "الخلاصة"},
        "الخلاصة: نص\n\nفقرة ثانية",
        True,
        False,
    ),
    (
        "nth-strips-ends-only-not-cut-at-comma",
        NTH,
        {"num_paragraphs": 2, "nth_paragraph": 1, "first_word": "مرحبا"},
        "مرحبا،وسهلا بكم\n\nفقرة ثانية",
        False,
        True,
    ),
    (
        "nth-paragraph-count-must-match",
        NTH,
        {"num_paragraphs": 2, "nth_paragraph": 1, "first_word": "أولا"},
        "أولا\n\nثانيا\n\nثالثا",
        False,
        None,
    ),
    (
        "nth-beyond-paragraph-count",
        NTH,
        {"num_paragraphs": 2, "nth_paragraph": 3, "first_word": "أولا"},
        "أولا\n\nثانيا",
        False,
        None,
    ),
    # postscript: escaped marker, found anywhere in the trimmed, lower-cased response.
    ("postscript-marker-escaped", PS, {"postscript_marker": "ملاحظة(1)"}, "نص\nملاحظة(1): شكرا", True, False),
    ("postscript-marker-found", PS, {"postscript_marker": " ملاحظة:"}, "  نص. ملاحظة: شكرا  ", True, None),
    ("postscript-meem-dot-literal-fallback", PS, {"postscript_marker": "م."}, "نص م: شكرا", False, True),
    # constrained_response: Arabic options end with a period, no stray leading period.
    ("constrained-arabic-yes-without-stray-period", CONSTRAINED, {}, "إجابتي هي نعم.", True, False),
    ("constrained-arabic-maybe-needs-period", CONSTRAINED, {}, "إجابتي هي ربما", False, True),
    ("constrained-arabic-no", CONSTRAINED, {}, "  إجابتي هي لا.  ", True, None),
    ("constrained-english-yes", CONSTRAINED, {}, "My answer is yes.", True, None),
    # title: only <<...>>.
    ("title-double-angle", TITLE, {}, "<<عنوان>> نص", True, None),
    ("title-guillemets-are-not-a-title", TITLE, {}, "«عنوان» نص", False, True),
    ("title-blank-double-angle-fails", TITLE, {}, "<< >> نص", False, None),
    # tashkeel: the same exact count.
    ("tashkeel-shadda-exact-count", TASHKEEL, {"tashkeel_name": "Shadda", "count": 2}, "شدّة مرّة", True, None),
    ("tashkeel-shadda-count-not-at-least", TASHKEEL, {"tashkeel_name": "Shadda", "count": 1}, "شدّة مرّة", False, None),
    # quotation: only ASCII double quotes.
    ("quotation-ascii-double-quotes", QUOTE, {}, ' "مرحبا" ', True, None),
    ("quotation-guillemets-fail", QUOTE, {}, "«مرحبا»", False, True),
    ("quotation-curly-quotes-fail", QUOTE, {}, "“hello”", False, True),
]


@pytest.fixture(autouse=True)
def _punkt(punkt):
    return punkt


def verdict(registry: dict, instruction_id: str, kwargs: dict, response: str) -> bool:
    random.seed(0)
    langdetect.DetectorFactory.seed = 0
    checker = registry[instruction_id](instruction_id)
    checker.build_description(**kwargs)
    return checker.check_following(response)


def test_registry_has_the_25_ids() -> None:
    assert set(INSTRUCTION_DICT) == set(arabic_checkers.INSTRUCTION_DICT) - DROPPED
    assert len(INSTRUCTION_DICT) == 25


def test_unmentioned_ids_reuse_the_inception_checkers() -> None:
    for instruction_id in UNCHANGED:
        assert INSTRUCTION_DICT[instruction_id] is arabic_checkers.INSTRUCTION_DICT[instruction_id]
    changed = set(INSTRUCTION_DICT) - UNCHANGED
    assert len(changed) == 15
    for instruction_id in changed:
        assert INSTRUCTION_DICT[instruction_id] is not arabic_checkers.INSTRUCTION_DICT[instruction_id]


def test_every_dataset_prompt_builds() -> None:
    assert_every_arabic_prompt_builds(INSTRUCTION_DICT)


@pytest.mark.parametrize(
    ("instruction_id", "kwargs", "response", "expected", "inception"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_case(instruction_id: str, kwargs: dict, response: str, expected: bool, inception: bool | None) -> None:
    assert verdict(INSTRUCTION_DICT, instruction_id, kwargs, response) is expected
    if inception is not None:
        assert verdict(arabic_checkers.INSTRUCTION_DICT, instruction_id, kwargs, response) is inception


@pytest.mark.parametrize(
    ("instruction_id", "kwargs"),
    [
        (FREQ, {"keyword": "ست", "frequency": 1, "relation": "exactly"}),
        (LETTER, {"letter": "a", "let_frequency": 1, "let_relation": "exactly"}),
        (SENT, {"num_sentences": 1, "relation": "exactly"}),
        (WORDS, {"num_words": 1, "relation": "exactly"}),
    ],
    ids=["frequency", "letter-frequency", "sentences", "words"],
)
def test_exactly_relation_is_hf_only(instruction_id: str, kwargs: dict) -> None:
    INSTRUCTION_DICT[instruction_id](instruction_id).build_description(**kwargs)
    with pytest.raises(ValueError, match="relation"):
        arabic_checkers.INSTRUCTION_DICT[instruction_id](instruction_id).build_description(**kwargs)


@pytest.mark.parametrize(
    ("instruction_id", "kwargs"),
    [
        (TASHKEEL, {"tashkeel_name": "Sukun", "count": 1}),
        (WORDS, {"num_words": 1, "relation": "more than"}),
        (LETTERS, {"letters": ["ب"], "frequency": 1, "relation": "exactly", "position": "end"}),
    ],
    ids=["tashkeel-no-sukun", "words-unknown-relation", "letter-list-no-exactly-as-inception"],
)
def test_build_rejects(instruction_id: str, kwargs: dict) -> None:
    with pytest.raises(ValueError):
        INSTRUCTION_DICT[instruction_id](instruction_id).build_description(**kwargs)


def test_tashkeel_sukun_is_inception_only() -> None:
    """Inception's checker takes Sukun and counts it (U+0652); the HF variant refuses it."""
    inception = arabic_checkers.INSTRUCTION_DICT[TASHKEEL](TASHKEEL)
    inception.build_description(tashkeel_name="Sukun", count=1)
    assert inception.get_instruction_args() == {"tashkeel_name": "Sukun", "count": 1}
    assert inception.check_following("قُلْ") is True and inception.check_following("قل") is False
    with pytest.raises(ValueError, match="Sukun"):
        INSTRUCTION_DICT[TASHKEEL](TASHKEEL).build_description(tashkeel_name="Sukun", count=1)


def test_response_language_defaults_to_ar() -> None:
    checker = INSTRUCTION_DICT[LANG](LANG)
    checker.build_description()
    assert checker.get_instruction_args() == {"language": "ar"}


@pytest.mark.parametrize(("letter", "accepted"), [("ب", True), ("é", True), ("x", True), ("5", False), ("بت", False)])
def test_letter_frequency_accepts_any_single_letter(letter: str, accepted: bool) -> None:
    random.seed(0)
    checker = arabic_hf_checkers.HfLetterFrequencyChecker(LETTER)
    checker.build_description(letter=letter, let_frequency=1, let_relation="at least")
    drawn = checker.get_instruction_args()["letter"]
    assert drawn == letter if accepted else drawn in ARABIC_ALPHABET


def test_letter_frequency_missing_letter_is_drawn_from_the_arabic_alphabet() -> None:
    random.seed(0)
    drawn = set()
    for _ in range(50):
        checker = INSTRUCTION_DICT[LETTER](LETTER)
        checker.build_description()
        drawn.add(checker.get_instruction_args()["letter"])
    assert drawn <= set(ARABIC_ALPHABET)
