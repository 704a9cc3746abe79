"""The 25 instruction checkers of the Hugging Face variant of Arabic IFEval
(task `ifeval_arabic_inception_hf`), following shared/specs/arabic_ifeval.md §9.

The registry is Inception's (inception_registry.py) without word_repetition, sent_repetition,
check_punct_lang, capital_word_frequency, english_capital and english_lowercase. The ten ids §9
does not mention reuse Inception's classes unchanged. The others differ as follows:

* existence, frequency, forbidden_words: the keyword is escaped and matched as a whole word
  (`\\b…\\b`), case-sensitively, instead of as a case-insensitive substring regex.
* list_existence, letter_list_freq, number_words: words are runs of `\\w` or U+0600–06FF, so
  tashkeel (and Arabic punctuation, which lies in that block) stays inside a word.
* list_existence: a keyword is found only as an exact word, with no normalization.
* letter_list_freq: each letter is counted on its own and every letter must meet the relation;
  position "any" counts nothing.
* number_sentences: a sentence ends at `.`, `?`, `!` or `؟` followed by whitespace (no Punkt).
* number_sentences, number_words, keywords:frequency, letter_frequency: relation "exactly" is
  accepted too.
* tashkeel: Sukun is not a valid mark. title: only `<<…>>`. quotation: only ASCII `"…"`.
* postscript: the marker is escaped. constrained_response: the Arabic options end with a period
  and the "yes" one has no stray leading period.
* nth_paragraph_first_word: the nth non-empty paragraph is taken and its first word is stripped
  of ASCII punctuation and ،؛؟»«… at both ends.
* response_language: a missing language means "ar". letter_frequency: any letter is accepted and a
  missing one is drawn from the Arabic alphabet.

Where §9 is silent the Inception checker's behaviour is kept; the classes say where. Settings: the
HF reference drops every falsy setting (0, "", []) before building, while our caller drops only
nulls. The dataset has no falsy setting, so this known difference is not handled at all.
"""

from __future__ import annotations

import random
import re
import string

from ifaudit.checkers.arabic.inception_registry import (
    AT_LEAST,
    EXACTLY,
    RELATIONS,
    BulletListChecker,
    CommaChecker,
    ConstrainedResponseChecker,
    EndChecker,
    ForbiddenWords,
    HighlightSectionChecker,
    Instruction,
    JsonFormat,
    KeywordChecker,
    KeywordFrequencyChecker,
    KeywordListChecker,
    LetterFrequencyChecker,
    LetterListFrequencyChecker,
    NumberOfSentences,
    NumberOfWords,
    ParagraphChecker,
    ParagraphFirstWordCheck,
    PlaceholderChecker,
    PostscriptChecker,
    QuotationChecker,
    RepeatPromptThenAnswer,
    ResponseLanguageChecker,
    SectionChecker,
    TashkeelChecker,
    TitleChecker,
    TwoResponsesChecker,
)
from ifaudit.checkers.arabic.text import remove_leading_al, strip_tashkeel

ARABIC_ALPHABET = "ابتثجحخدذرزسشصضطظعغفقكلمنهوي"
# §9's word: a run of `\w` or of U+0600–06FF. Tashkeel and ، ؛ ؟ lie in that block, so
# they never split a word.
_WORD = re.compile(r"[\w\u0600-\u06FF]+")


def _words(value: str) -> list[str]:
    return _WORD.findall(value)


def _whole_word(keyword: str) -> str:
    return rf"\b{re.escape(keyword)}\b"


class HfKeywordChecker(KeywordChecker):
    def check_following(self, value: str) -> bool:
        return all(re.search(_whole_word(keyword), value) for keyword in self._keywords)


class HfKeywordListChecker(KeywordListChecker):
    """Modes as Inception's ("none" included, mode lower-cased), which §9 does not restate."""

    def check_following(self, value: str) -> bool:
        words = set(_words(value))
        found = [keyword in words for keyword in self._keywords]
        if self._mode == "all":
            return all(found)
        if self._mode == "any":
            return any(found)
        return not any(found)


class HfKeywordFrequencyChecker(KeywordFrequencyChecker):
    relations = (*RELATIONS, EXACTLY)

    def count(self, value: str) -> int:
        return len(re.findall(_whole_word(self._keyword), value))


class HfLetterListFrequencyChecker(LetterListFrequencyChecker):
    """Where §9 is silent this keeps Inception's rules: relations "less than"/"at least" only, each
    word lower-cased and stripped of a leading "ال" then of tashkeel (empty words skipped), and a
    response with no words fails whatever the relation."""

    def _counts(self, word: str, letter: str) -> bool:
        if self._position == "start":
            return word[0] == letter
        if self._position == "end":
            return word[-1] == letter
        return False

    def check_following(self, value: str) -> bool:
        tokens = _words(value)
        if not tokens:
            return False
        words = [word for word in (strip_tashkeel(remove_leading_al(token.lower())) for token in tokens) if word]
        counts = [sum(1 for word in words if self._counts(word, letter)) for letter in self._letters]
        if self._relation == AT_LEAST:
            return all(count >= self._frequency for count in counts)
        return all(count < self._frequency for count in counts)


class HfForbiddenWords(ForbiddenWords):
    def check_following(self, value: str) -> bool:
        return not any(re.search(_whole_word(word), value) for word in self._forbidden_words)


class HfLetterFrequencyChecker(LetterFrequencyChecker):
    """A letter is accepted when it is one character for which `str.isalpha()` holds (§9: "any
    letter"); otherwise, as in Inception, a random one is drawn, here from the Arabic alphabet."""

    relations = (*RELATIONS, EXACTLY)

    @staticmethod
    def choose_letter(letter: str | None) -> str:
        if not letter or len(letter) > 1 or not letter.isalpha():
            letter = random.choice(ARABIC_ALPHABET)
        return letter.lower()


class HfResponseLanguageChecker(ResponseLanguageChecker):
    def build_description(self, *, language: str | None = None) -> str:
        return super().build_description(language=language if language is not None else "ar")


class HfNumberOfSentences(NumberOfSentences):
    """Split after . ? ! or ؟ followed by whitespace, without NLTK (§9). Blank pieces are not
    sentences, so the empty text has 0 and trailing whitespace adds none, as with Punkt."""

    relations = (*RELATIONS, EXACTLY)
    _BREAK = re.compile(r"(?<=[.?!؟])\s+")

    def count(self, value: str) -> int:
        return sum(1 for piece in self._BREAK.split(value) if piece.strip())


class HfNumberOfWords(NumberOfWords):
    relations = (*RELATIONS, EXACTLY)

    def count(self, value: str) -> int:
        return len(_words(value))


class HfParagraphFirstWordCheck(ParagraphFirstWordCheck):
    """Paragraphs split on "\\n\\n", a whitespace-only piece is not a paragraph, and `first_word`
    is only lower-cased: as Inception, since §9 changes only the indexing and the stripping."""

    _STRIPPED = string.punctuation + "،؛؟»«…"

    def check_following(self, value: str) -> bool:
        paragraphs = [piece for piece in value.split("\n\n") if piece.strip()]
        if self._nth_paragraph > len(paragraphs):
            return False
        word = paragraphs[self._nth_paragraph - 1].split()[0].strip(self._STRIPPED).lower()
        return len(paragraphs) == self._num_paragraphs and word == self._first_word


class HfPostscriptChecker(PostscriptChecker):
    """§9 names special patterns for the markers "م." and "ملحوظة" without saying what they match,
    so those markers are matched as their own escaped text, like any other. Otherwise as
    Inception: P.P.S / P.S. patterns kept, response and marker lower-cased, marker found anywhere
    (so §9's trimming of the response cannot change a verdict and is left out)."""

    def check_following(self, value: str) -> bool:
        pattern = self._PATTERNS.get(self._marker, re.escape(self._marker.lower()))
        return re.search(pattern, value.lower()) is not None


class HfConstrainedResponseChecker(ConstrainedResponseChecker):
    OPTIONS = (
        "My answer is yes.",
        "My answer is no.",
        "My answer is maybe.",
        "إجابتي هي نعم.",
        "إجابتي هي لا.",
        "إجابتي هي ربما.",
    )


class HfTitleChecker(TitleChecker):
    def check_following(self, value: str) -> bool:
        titles = re.findall(r"<<[^\n]+>>", value)
        return any(title.lstrip("<").rstrip(">").strip() for title in titles)


class HfTashkeelChecker(TashkeelChecker):
    def build_description(self, *, tashkeel_name: str | None = None, count: int = 1) -> str:
        if tashkeel_name == "Sukun":
            raise ValueError("tashkeel_name Sukun is not available in the HF task")
        return super().build_description(tashkeel_name=tashkeel_name, count=count)


class HfQuotationChecker(QuotationChecker):
    PAIRS = (('"', '"'),)


INSTRUCTION_DICT: dict[str, type[Instruction]] = {
    "keywords:existence": HfKeywordChecker,
    "keywords:list_existence": HfKeywordListChecker,
    "keywords:frequency": HfKeywordFrequencyChecker,
    "keywords:letter_list_freq": HfLetterListFrequencyChecker,
    "keywords:forbidden_words": HfForbiddenWords,
    "keywords:letter_frequency": HfLetterFrequencyChecker,
    "language:response_language": HfResponseLanguageChecker,
    "length_constraints:number_sentences": HfNumberOfSentences,
    "length_constraints:number_paragraphs": ParagraphChecker,
    "length_constraints:number_words": HfNumberOfWords,
    "length_constraints:nth_paragraph_first_word": HfParagraphFirstWordCheck,
    "detectable_content:number_placeholders": PlaceholderChecker,
    "detectable_content:postscript": HfPostscriptChecker,
    "detectable_format:number_bullet_lists": BulletListChecker,
    "detectable_format:constrained_response": HfConstrainedResponseChecker,
    "detectable_format:number_highlighted_sections": HighlightSectionChecker,
    "detectable_format:multiple_sections": SectionChecker,
    "detectable_format:json_format": JsonFormat,
    "detectable_format:title": HfTitleChecker,
    "detectable_format:tashkeel": HfTashkeelChecker,
    "combination:two_responses": TwoResponsesChecker,
    "combination:repeat_prompt": RepeatPromptThenAnswer,
    "startend:end_checker": EndChecker,
    "punctuation:no_comma": CommaChecker,
    "startend:quotation": HfQuotationChecker,
}
