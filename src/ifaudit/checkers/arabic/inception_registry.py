"""The 31 instruction checkers of Inception's Arabic IFEval (task `ifeval_arabic_inception`).

Behaviour follows shared/specs/arabic_ifeval.md §6.1; the quirks of §11 are kept on purpose. A
checker judges exactly the text it is given: thinking strip, cleaning and the empty-response rule
belong to the pipeline (spec §1-§3). Python `re` is used throughout, so Arabic combining marks are
not word characters (spec conventions).

A setting left out is drawn with `random` (spec §6 "Build-time defaults"; the driver seeds it). The
ranges and word pools of those draws are ours: the dataset never leaves a setting out.
"""

from __future__ import annotations

import json
import random
import re
import string
import unicodedata
from collections.abc import Sequence

import langdetect
import nltk

from ifaudit.checkers.arabic.text import TASHKEEL, remove_every_al, remove_leading_al, strip_tashkeel

LESS_THAN = "less than"
AT_LEAST = "at least"
EXACTLY = "exactly"  # accepted only by registries that allow it (the Hugging Face variant)
RELATIONS = (LESS_THAN, AT_LEAST)

_RANDOM_WORDS = ("كتاب", "مدرسة", "بحر", "شمس", "مدينة", "علم", "صديق", "طريق", "سماء", "حديقة")
_RANDOM_LETTERS = "ابتثجحخدذرزسشصضطظعغفقكلمنهوي"
_RANDOM_LANGUAGES = ("ar", "en", "fr", "de", "es", "it", "pt", "ru", "tr", "fa", "ur")
_RANDOM_END_PHRASES = ("هل هناك أي شيء آخر يمكنني مساعدتك به؟", "شكرا لكم.")
_WORD_TOKENIZER = nltk.tokenize.RegexpTokenizer(r"\w+")


def threshold_or_random(value: int | None, high: int) -> int:
    """A missing or negative threshold is drawn from 1..high."""
    return random.randint(1, high) if value is None or value < 0 else value


def compare_count(count: int, relation: str, threshold: int) -> bool:
    if relation == EXACTLY:
        return count == threshold
    return count < threshold if relation == LESS_THAN else count >= threshold


def random_words(count: int) -> list[str]:
    return random.sample(_RANDOM_WORDS, count)


def _langdetect_is(value: str, language: str) -> bool:
    """Detection failures (no letters at all, say) count as followed (spec §6.1 #7, §11.12)."""
    try:
        return bool(langdetect.detect(value) == language)
    except langdetect.LangDetectException:
        return True


class Instruction:
    """One instruction: build it with its settings, then ask whether a response follows it."""

    relations: tuple[str, ...] = RELATIONS  # the comparison words a setting may use

    def __init__(self, instruction_id: str) -> None:
        self.id = instruction_id

    def parse_relation(self, relation: str | None) -> str:
        """A missing relation is drawn from "less than" / "at least"; an unknown one is an error."""
        if relation is None:
            return random.choice(RELATIONS)
        if relation not in self.relations:
            raise ValueError(f"relation must be one of {self.relations}, got {relation!r}")
        return relation

    def build_description(self, **kwargs: object) -> str:
        raise NotImplementedError

    def get_instruction_args(self) -> dict[str, object]:
        return {}

    def get_instruction_args_keys(self) -> list[str]:
        return list(self.get_instruction_args())

    def check_following(self, value: str) -> bool:
        raise NotImplementedError


class KeywordChecker(Instruction):
    """Every keyword is an unescaped, case-insensitive regex searched as a substring: قط is found
    in فقط. Faithful (spec §6.1 #1, §11.5)."""

    def build_description(self, *, keywords: Sequence[str] | None = None) -> str:
        self._keywords = sorted(keywords if keywords is not None else random_words(2))
        return f"Include the keywords {self._keywords} in the response."

    def get_instruction_args(self) -> dict[str, object]:
        return {"keywords": self._keywords}

    def check_following(self, value: str) -> bool:
        return all(re.search(keyword, value, flags=re.IGNORECASE) for keyword in self._keywords)


class KeywordListChecker(Instruction):
    """Response and keywords lose every "ال" pair (not only the article), then the tashkeel, before
    an unescaped case-insensitive substring search. Faithful (spec §6.1 #2, §11.3)."""

    MODES = ("all", "any", "none")

    def build_description(self, *, keywords: Sequence[str] | None = None, mode: str | None = None) -> str:
        self._keywords = list(keywords if keywords is not None else random_words(3))
        self._mode = (mode if mode is not None else random.choice(self.MODES)).lower()
        if self._mode not in self.MODES:
            raise ValueError(f"mode must be one of {self.MODES}, got {mode!r}")
        return f"Use {self._mode} of the words {self._keywords}."

    def get_instruction_args(self) -> dict[str, object]:
        return {"keywords": self._keywords, "mode": self._mode}

    def check_following(self, value: str) -> bool:
        text = strip_tashkeel(remove_every_al(value))
        found = [
            re.search(strip_tashkeel(remove_every_al(keyword)), text, flags=re.IGNORECASE) is not None
            for keyword in self._keywords
        ]
        if self._mode == "all":
            return all(found)
        if self._mode == "any":
            return any(found)
        return not any(found)


class KeywordFrequencyChecker(Instruction):
    """Counts non-overlapping case-insensitive substring matches: رجل counts inside الرجل.
    Faithful (spec §6.1 #3, §11.5)."""

    def build_description(
        self, *, keyword: str | None = None, frequency: int | None = None, relation: str | None = None
    ) -> str:
        self._keyword = (keyword if keyword is not None else random_words(1)[0]).strip()
        self._frequency = threshold_or_random(frequency, 3)
        self._relation = self.parse_relation(relation)
        return f"Use the word {self._keyword!r} {self._relation} {self._frequency} times."

    def get_instruction_args(self) -> dict[str, object]:
        return {"keyword": self._keyword, "frequency": self._frequency, "relation": self._relation}

    def count(self, value: str) -> int:
        return len(re.findall(self._keyword, value, flags=re.IGNORECASE))

    def check_following(self, value: str) -> bool:
        return compare_count(self.count(value), self._relation, self._frequency)


class LetterListFrequencyChecker(Instruction):
    """Words are whitespace tokens, lower-cased, stripped of a leading "ال" and then of tashkeel (in
    that order, so اَلثعلب keeps its ال); attached punctuation stays. A response with no words
    fails whatever the relation. Faithful (spec §6.1 #4, §11.4)."""

    POSITIONS = ("start", "end", "any")

    def build_description(
        self,
        *,
        letters: Sequence[str] | None = None,
        frequency: int | None = None,
        relation: str | None = None,
        position: str | None = None,
    ) -> str:
        if letters is None:
            letters = random.sample(_RANDOM_LETTERS, 3)
        if not letters or not all(isinstance(letter, str) and len(letter) == 1 for letter in letters):
            raise ValueError(f"letters must be a non-empty list of single characters, got {letters!r}")
        self._letters = [letter.lower() for letter in letters]
        self._frequency = threshold_or_random(frequency, 10)
        self._relation = self.parse_relation(relation)
        self._position = position if position is not None else random.choice(self.POSITIONS)
        if self._position not in self.POSITIONS:
            raise ValueError(f"position must be one of {self.POSITIONS}, got {position!r}")
        return f"Use {self._relation} {self._frequency} words with a letter of {self._letters} at {self._position}."

    def get_instruction_args(self) -> dict[str, object]:
        return {
            "letters": self._letters,
            "frequency": self._frequency,
            "relation": self._relation,
            "position": self._position,
        }

    def _matches(self, word: str) -> bool:
        if self._position == "start":
            return word[0] in self._letters
        if self._position == "end":
            return word[-1] in self._letters
        return any(letter in word for letter in self._letters)

    def check_following(self, value: str) -> bool:
        words = value.split()
        if not words:
            return False
        normalized = (strip_tashkeel(remove_leading_al(word.lower())) for word in words)
        count = sum(1 for word in normalized if word and self._matches(word))
        return compare_count(count, self._relation, self._frequency)


class ForbiddenWords(Instruction):
    """Whole-word search with Python `re` `\\b`, where tashkeel is not a word character: مال is
    found in مالٌ. Faithful (spec §6.1 #5, §11.5)."""

    def build_description(self, *, forbidden_words: Sequence[str] | None = None) -> str:
        self._forbidden_words = sorted(set(forbidden_words if forbidden_words is not None else random_words(2)))
        return f"Do not include the words {self._forbidden_words}."

    def get_instruction_args(self) -> dict[str, object]:
        return {"forbidden_words": self._forbidden_words}

    def check_following(self, value: str) -> bool:
        return not any(re.search(rf"\b{word}\b", value, flags=re.IGNORECASE) for word in self._forbidden_words)


class LetterFrequencyChecker(Instruction):
    """A letter that is missing, longer than one character or not ASCII a-z after lower-casing is
    silently replaced by `random.choice(string.ascii_letters)`, lower-cased, as Google's grader
    does: an Arabic letter setting is never used. Faithful (spec §6.1 #6, §11.11)."""

    def build_description(
        self, *, letter: str | None = None, let_frequency: int | None = None, let_relation: str | None = None
    ) -> str:
        self._letter = self.choose_letter(letter)
        self._frequency = threshold_or_random(let_frequency, 10)
        self._relation = self.parse_relation(let_relation)
        return f"Use the letter {self._letter!r} {self._relation} {self._frequency} times."

    @staticmethod
    def choose_letter(letter: str | None) -> str:
        if not letter or len(letter) > 1 or not "a" <= letter.lower() <= "z":
            letter = random.choice(string.ascii_letters)
        return letter.strip().lower()

    def get_instruction_args(self) -> dict[str, object]:
        return {"letter": self._letter, "let_frequency": self._frequency, "let_relation": self._relation}

    def check_following(self, value: str) -> bool:
        return compare_count(value.lower().count(self._letter), self._relation, self._frequency)


class ResponseLanguageChecker(Instruction):
    def build_description(self, *, language: str | None = None) -> str:
        self._language = language if language is not None else random.choice(_RANDOM_LANGUAGES)
        return f"Answer in the language {self._language!r} only."

    def get_instruction_args(self) -> dict[str, object]:
        return {"language": self._language}

    def check_following(self, value: str) -> bool:
        return _langdetect_is(value, self._language)


class NumberOfSentences(Instruction):
    """Sentences by NLTK's pre-trained English Punkt model: only ASCII . ? ! followed by whitespace
    end a sentence, ؟ never does (spec §6.1 #8, §11.7)."""

    def build_description(self, *, num_sentences: int | None = None, relation: str | None = None) -> str:
        self._num_sentences = threshold_or_random(num_sentences, 20)
        self._relation = self.parse_relation(relation)
        return f"Answer in {self._relation} {self._num_sentences} sentences."

    def get_instruction_args(self) -> dict[str, object]:
        return {"num_sentences": self._num_sentences, "relation": self._relation}

    def count(self, value: str) -> int:
        return len(nltk.tokenize.sent_tokenize(value, language="english"))

    def check_following(self, value: str) -> bool:
        return compare_count(self.count(value), self._relation, self._num_sentences)


class ParagraphChecker(Instruction):
    """Paragraphs are separated by *** (with one optional whitespace character either side), not
    by blank lines; an empty paragraph between two separators fails (spec §6.1 #9)."""

    def build_description(self, *, num_paragraphs: int | None = None) -> str:
        self._num_paragraphs = threshold_or_random(num_paragraphs, 5)
        return f"Write exactly {self._num_paragraphs} paragraphs separated by ***."

    def get_instruction_args(self) -> dict[str, object]:
        return {"num_paragraphs": self._num_paragraphs}

    def check_following(self, value: str) -> bool:
        pieces = re.split(r"\s?\*\*\*\s?", value)
        if any(not piece.strip() for piece in pieces[1:-1]):
            return False
        return sum(1 for piece in pieces if piece.strip()) == self._num_paragraphs


class NumberOfWords(Instruction):
    """Words are NLTK `RegexpTokenizer(r"\\w+")` tokens, so the count depends on the NLTK version:
    from 3.10 tashkeel stays inside words (spec §6.1 #10, §11.6)."""

    def build_description(self, *, num_words: int | None = None, relation: str | None = None) -> str:
        self._num_words = num_words if num_words is not None and num_words >= 0 else random.randint(100, 500)
        self._relation = self.parse_relation(relation)
        return f"Answer with {self._relation} {self._num_words} words."

    def get_instruction_args(self) -> dict[str, object]:
        return {"num_words": self._num_words, "relation": self._relation}

    def count(self, value: str) -> int:
        return len(_WORD_TOKENIZER.tokenize(value))

    def check_following(self, value: str) -> bool:
        return compare_count(self.count(value), self._relation, self._num_words)


class ParagraphFirstWordCheck(Instruction):
    """Paragraphs split on the exact "\\n\\n": blank pieces are left out of the count but not out of
    the indexing, so four newlines make paragraph 2 empty. Faithful (spec §6.1 #11)."""

    _WORD_ENDS = frozenset(".,?!'\"،؛؟…")

    def build_description(
        self, *, num_paragraphs: int | None = None, nth_paragraph: int | None = None, first_word: str | None = None
    ) -> str:
        self._num_paragraphs = threshold_or_random(num_paragraphs, 5)
        self._nth_paragraph = threshold_or_random(nth_paragraph, self._num_paragraphs)
        self._first_word = (first_word if first_word is not None else random_words(1)[0]).lower()
        return (
            f"Write {self._num_paragraphs} paragraphs separated by blank lines; "
            f"paragraph {self._nth_paragraph} starts with {self._first_word!r}."
        )

    def get_instruction_args(self) -> dict[str, object]:
        return {
            "num_paragraphs": self._num_paragraphs,
            "nth_paragraph": self._nth_paragraph,
            "first_word": self._first_word,
        }

    def check_following(self, value: str) -> bool:
        pieces = value.split("\n\n")
        count = sum(1 for piece in pieces if piece.strip())
        if self._nth_paragraph > count:
            return False
        paragraph = pieces[self._nth_paragraph - 1].strip()
        if not paragraph:
            return False
        word = paragraph.split()[0].lstrip("'").lstrip('"')
        end = next((i for i, char in enumerate(word) if char in self._WORD_ENDS), len(word))
        return count == self._num_paragraphs and word[:end].lower() == self._first_word


class PlaceholderChecker(Instruction):
    def build_description(self, *, num_placeholders: int | None = None) -> str:
        self._num_placeholders = threshold_or_random(num_placeholders, 4)
        return f"Include at least {self._num_placeholders} placeholders in square brackets."

    def get_instruction_args(self) -> dict[str, object]:
        return {"num_placeholders": self._num_placeholders}

    def check_following(self, value: str) -> bool:
        return len(re.findall(r"\[.*?\]", value)) >= self._num_placeholders


class PostscriptChecker(Instruction):
    """The marker may occur anywhere, even inside a longer word (الملاحظة contains ملاحظة): the
    reference searches each line for optional whitespace, the marker and the rest of the line,
    which any occurrence satisfies. Faithful (spec §6.1 #13, §11.10)."""

    _PATTERNS = {"P.P.S": r"p\.\s?p\.\s?s", "P.S.": r"p\.\s?s\."}

    def build_description(self, *, postscript_marker: str | None = None) -> str:
        marker = postscript_marker if postscript_marker is not None else random.choice(tuple(self._PATTERNS))
        self._marker = marker.strip()
        return f"End with a postscript starting with {self._marker!r}."

    def get_instruction_args(self) -> dict[str, object]:
        return {"postscript_marker": self._marker}

    def check_following(self, value: str) -> bool:
        pattern = self._PATTERNS.get(self._marker, self._marker.lower())
        return re.search(pattern, value.lower(), flags=re.MULTILINE) is not None


class BulletListChecker(Instruction):
    """Bullets are counted per line, so in the pipeline (newlines deleted) the count is 0 or 1
    (spec §6.1 #14, §11.1)."""

    def build_description(self, *, num_bullets: int | None = None) -> str:
        self._num_bullets = threshold_or_random(num_bullets, 5)
        return f"Use exactly {self._num_bullets} markdown bullet points."

    def get_instruction_args(self) -> dict[str, object]:
        return {"num_bullets": self._num_bullets}

    def check_following(self, value: str) -> bool:
        stars = re.findall(r"^\s*\*[^*].*$", value, flags=re.MULTILINE)
        dashes = re.findall(r"^\s*-.*$", value, flags=re.MULTILINE)
        return len(stars) + len(dashes) == self._num_bullets


class ConstrainedResponseChecker(Instruction):
    """The Arabic "yes" option carries a stray leading period and the "maybe" option no final one,
    exactly as stored in the reference. Faithful (spec §6.1 #15, §11.2)."""

    OPTIONS = (
        "My answer is yes.",
        "My answer is no.",
        "My answer is maybe.",
        ".إجابتي هي نعم.",
        "إجابتي هي لا.",
        "إجابتي هي ربما",
    )

    def build_description(self) -> str:
        return f"Answer with one of the options {self.OPTIONS}."

    def check_following(self, value: str) -> bool:
        value = value.strip()
        return any(option in value for option in self.OPTIONS)


class HighlightSectionChecker(Instruction):
    def build_description(self, *, num_highlights: int | None = None) -> str:
        self._num_highlights = threshold_or_random(num_highlights, 4)
        return f"Highlight at least {self._num_highlights} sections with markdown, *like this*."

    def get_instruction_args(self) -> dict[str, object]:
        return {"num_highlights": self._num_highlights}

    def check_following(self, value: str) -> bool:
        single = re.findall(r"\*[^\n*]*\*", value)
        double = re.findall(r"\*\*[^\n*]*\*\*", value)
        count = sum(1 for match in single if match.strip("*").strip())
        count += sum(1 for match in double if match[2:-2].strip())
        return count >= self._num_highlights


class SectionChecker(Instruction):
    """The splitter is an unescaped regex that may match inside a longer word (بالمقطع 2), and the
    number of sections only has to reach num_sections (spec §6.1 #17)."""

    def build_description(self, *, section_spliter: str | None = None, num_sections: int | None = None) -> str:
        splitter = section_spliter if section_spliter is not None else random.choice(("القسم", "المقطع"))
        self._section_spliter = splitter.strip()
        self._num_sections = threshold_or_random(num_sections, 5)
        return f"Write at least {self._num_sections} sections, each starting with '{self._section_spliter} X'."

    def get_instruction_args(self) -> dict[str, object]:
        return {"section_spliter": self._section_spliter, "num_sections": self._num_sections}

    def check_following(self, value: str) -> bool:
        pieces = re.split(rf"\s?{self._section_spliter}\s?\d+\s?", value)
        return len(pieces) - 1 >= self._num_sections


class WordRepetitionChecker(Instruction):
    def build_description(self) -> str:
        return "Do not repeat a word three times in a row."

    def check_following(self, value: str) -> bool:
        tokens = value.split()
        return not any(tokens[i] == tokens[i + 1] == tokens[i + 2] for i in range(len(tokens) - 2))


# The rule-based sentence splitter of sent_repetition (spec §6.1 #19). Periods that must not end a
# sentence are first swapped for _KEPT_DOT; _BREAK marks where a sentence ends.
_KEPT_DOT = "\ue000"
_BREAK = "\ue001"
# Words that open a new sentence even after an acronym or a company suffix.
_STARTERS = (
    r"(Mr|Mrs|Ms|Dr|Prof|Capt|Cpt|Lt|He\s|She\s|It\s|They\s|Their\s|Our\s|We\s|But\s|However\s"
    r"|That\s|This\s|Wherever)"
)
_SPLITTER_RULES: tuple[tuple[str, str], ...] = (
    (r"(Mr|St|Mrs|Ms|Dr)\.", rf"\1{_KEPT_DOT}"),
    (r"\.(com|net|org|io|gov|edu|me)", rf"{_KEPT_DOT}\1"),
    (r"([0-9])\.([0-9])", rf"\1{_KEPT_DOT}\2"),
)
_LATIN_RULES: tuple[tuple[str, str], ...] = (
    (r"\s([A-Za-z])\. ", rf" \1{_KEPT_DOT} "),
    (rf"([A-Z]\.[A-Z]\.(?:[A-Z]\.)?) {_STARTERS}", rf"\1{_BREAK} \2"),
    (r"([A-Za-z])\.([A-Za-z])\.([A-Za-z])\.", rf"\1{_KEPT_DOT}\2{_KEPT_DOT}\3{_KEPT_DOT}"),
    (r"([A-Za-z])\.([A-Za-z])\.", rf"\1{_KEPT_DOT}\2{_KEPT_DOT}"),
    (rf" (Inc|Ltd|Jr|Sr|Co)\. {_STARTERS}", rf" \1{_BREAK} \2"),
    (r" (Inc|Ltd|Jr|Sr|Co)\.", rf" \1{_KEPT_DOT}"),
    (r" ([A-Za-z])\.", rf" \1{_KEPT_DOT}"),
)
_QUOTE_MOVES = ((".”", "”."), ('."', '".'), ('!"', '"!'), ('?"', '"?'))


def split_sentences(text: str) -> list[str]:
    """Break after every ASCII . ? ! (no whitespace needed) except protected periods; `؟` never
    breaks. A final empty piece is dropped, other empty pieces are kept."""
    text = f" {text}  ".replace("\n", " ")
    for pattern, replacement in _SPLITTER_RULES:
        text = re.sub(pattern, replacement, text)
    text = re.sub(r"\.{2,}", lambda dots: _KEPT_DOT * len(dots.group()) + _BREAK, text)
    text = text.replace("Ph.D.", f"Ph{_KEPT_DOT}D{_KEPT_DOT}")
    for pattern, replacement in _LATIN_RULES:
        text = re.sub(pattern, replacement, text)
    for before, after in _QUOTE_MOVES:
        text = text.replace(before, after)
    for terminator in ".?!":
        text = text.replace(terminator, terminator + _BREAK)
    sentences = [piece.strip() for piece in text.replace(_KEPT_DOT, ".").split(_BREAK)]
    return sentences[:-1] if sentences and not sentences[-1] else sentences


class SentenceRepetitionChecker(Instruction):
    """Fails when any sentence, terminator included, occurs twice anywhere (spec §6.1 #19)."""

    def build_description(self) -> str:
        return "Do not repeat a sentence."

    def check_following(self, value: str) -> bool:
        sentences = split_sentences(value)
        return len(set(sentences)) == len(sentences)


class PunctuationLanguageChecker(Instruction):
    """The English set includes the period, so any ASCII `.` fails "ar" (spec §6.1 #20, §11.8)."""

    ALLOWED = {"ar": frozenset("،؛؟!"), "en": frozenset(",;?!.")}
    _WATCHED = ALLOWED["ar"] | ALLOWED["en"]

    def build_description(self, *, language: str | None = None) -> str:
        self._language = language if language is not None else random.choice(tuple(self.ALLOWED))
        if self._language not in self.ALLOWED:
            raise ValueError(f"language must be one of {tuple(self.ALLOWED)}, got {language!r}")
        return f"Use only {self._language} punctuation."

    def get_instruction_args(self) -> dict[str, object]:
        return {"language": self._language}

    def check_following(self, value: str) -> bool:
        return (set(value) & self._WATCHED) <= self.ALLOWED[self._language]


class JsonFormat(Instruction):
    def build_description(self) -> str:
        return "Wrap the whole answer in JSON."

    def check_following(self, value: str) -> bool:
        value = value.strip()
        for fence in ("```json", "```Json", "```JSON", "```"):
            value = value.removeprefix(fence)
        value = value.removesuffix("```").strip()
        try:
            json.loads(value)
        except ValueError:
            return False
        return True


class TitleChecker(Instruction):
    """Any «…» quotation counts as a title, even a blank one, since only `<` and `>` are stripped
    before the emptiness test. Faithful (spec §6.1 #22, §11.9)."""

    def build_description(self) -> str:
        return "Give the answer a title in double angular brackets, like <<title>>."

    def check_following(self, value: str) -> bool:
        titles = re.findall(r"<<[^\n]+>>|«[^\n]+?»", value)
        return any(title.lstrip("<").rstrip(">").strip() for title in titles)


class TashkeelChecker(Instruction):
    """The named mark is counted after NFKD, so presentation forms that decompose to marks count;
    the count must be met exactly (spec §6.1 #23)."""

    def build_description(self, *, tashkeel_name: str | None = None, count: int = 1) -> str:
        if tashkeel_name not in TASHKEEL:
            raise ValueError(f"tashkeel_name must be one of {tuple(TASHKEEL)}, got {tashkeel_name!r}")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"count must be a non-negative integer, got {count!r}")
        self._tashkeel_name = tashkeel_name
        self._count = count
        return f"Use the mark {tashkeel_name} exactly {count} times."

    def get_instruction_args(self) -> dict[str, object]:
        return {"tashkeel_name": self._tashkeel_name, "count": self._count}

    def check_following(self, value: str) -> bool:
        decomposed = unicodedata.normalize("NFKD", value)
        return decomposed.count(TASHKEEL[self._tashkeel_name]) == self._count


class TwoResponsesChecker(Instruction):
    def build_description(self) -> str:
        return "Give two different responses separated by ******."

    def check_following(self, value: str) -> bool:
        pieces = value.split("******")
        if any(not piece.strip() for piece in pieces[1:-1]):
            return False
        responses = [piece.strip() for piece in pieces if piece.strip()]
        return len(responses) == 2 and responses[0] != responses[1]


class RepeatPromptThenAnswer(Instruction):
    def build_description(self, *, prompt_to_repeat: str | None = None) -> str:
        if not prompt_to_repeat:
            raise ValueError("prompt_to_repeat must be set")
        self._prompt_to_repeat = prompt_to_repeat
        return "Repeat the request word for word first, then answer it."

    def get_instruction_args(self) -> dict[str, object]:
        return {"prompt_to_repeat": self._prompt_to_repeat}

    def check_following(self, value: str) -> bool:
        return value.strip().lower().startswith(self._prompt_to_repeat.strip().lower())


class EndChecker(Instruction):
    def build_description(self, *, end_phrase: str | None = None) -> str:
        phrase = end_phrase if end_phrase is not None else random.choice(_RANDOM_END_PHRASES)
        self._end_phrase = phrase.strip()
        return f"End the answer with the exact phrase {self._end_phrase!r}."

    def get_instruction_args(self) -> dict[str, object]:
        return {"end_phrase": self._end_phrase}

    def check_following(self, value: str) -> bool:
        return value.strip().strip('"').lower().endswith(self._end_phrase.lower())


class CapitalWordFrequencyChecker(Instruction):
    def build_description(self, *, capital_frequency: int | None = None, capital_relation: str | None = None) -> str:
        self._frequency = threshold_or_random(capital_frequency, 20)
        self._relation = self.parse_relation(capital_relation)
        return f"Use {self._relation} {self._frequency} words in all capital letters."

    def get_instruction_args(self) -> dict[str, object]:
        return {"capital_frequency": self._frequency, "capital_relation": self._relation}

    def check_following(self, value: str) -> bool:
        count = sum(1 for word in nltk.word_tokenize(value) if word.isupper())
        return compare_count(count, self._relation, self._frequency)


class CapitalLettersEnglishChecker(Instruction):
    def build_description(self) -> str:
        return "Answer in English, in capital letters only."

    def check_following(self, value: str) -> bool:
        return value.isupper() and _langdetect_is(value, "en")


class LowercaseLettersEnglishChecker(Instruction):
    def build_description(self) -> str:
        return "Answer in English, in lowercase letters only."

    def check_following(self, value: str) -> bool:
        return value.islower() and _langdetect_is(value, "en")


class CommaChecker(Instruction):
    def build_description(self) -> str:
        return "Do not use any commas."

    def check_following(self, value: str) -> bool:
        return "," not in value and "،" not in value


class QuotationChecker(Instruction):
    PAIRS = (('"', '"'), ("“", "”"), ("«", "»"), ("„", "“"))

    def build_description(self) -> str:
        return "Wrap the whole answer in double quotation marks."

    def check_following(self, value: str) -> bool:
        value = value.strip()
        return len(value) > 1 and any(value.startswith(o) and value.endswith(c) for o, c in self.PAIRS)


INSTRUCTION_DICT: dict[str, type[Instruction]] = {
    "keywords:existence": KeywordChecker,
    "keywords:list_existence": KeywordListChecker,
    "keywords:frequency": KeywordFrequencyChecker,
    "keywords:letter_list_freq": LetterListFrequencyChecker,
    "keywords:forbidden_words": ForbiddenWords,
    "keywords:letter_frequency": LetterFrequencyChecker,
    "language:response_language": ResponseLanguageChecker,
    "length_constraints:number_sentences": NumberOfSentences,
    "length_constraints:number_paragraphs": ParagraphChecker,
    "length_constraints:number_words": NumberOfWords,
    "length_constraints:nth_paragraph_first_word": ParagraphFirstWordCheck,
    "detectable_content:number_placeholders": PlaceholderChecker,
    "detectable_content:postscript": PostscriptChecker,
    "detectable_format:number_bullet_lists": BulletListChecker,
    "detectable_format:constrained_response": ConstrainedResponseChecker,
    "detectable_format:number_highlighted_sections": HighlightSectionChecker,
    "detectable_format:multiple_sections": SectionChecker,
    "detectable_format:word_repetition": WordRepetitionChecker,
    "detectable_format:sent_repetition": SentenceRepetitionChecker,
    "detectable_format:check_punct_lang": PunctuationLanguageChecker,
    "detectable_format:json_format": JsonFormat,
    "detectable_format:title": TitleChecker,
    "detectable_format:tashkeel": TashkeelChecker,
    "combination:two_responses": TwoResponsesChecker,
    "combination:repeat_prompt": RepeatPromptThenAnswer,
    "startend:end_checker": EndChecker,
    "change_case:capital_word_frequency": CapitalWordFrequencyChecker,
    "change_case:english_capital": CapitalLettersEnglishChecker,
    "change_case:english_lowercase": LowercaseLettersEnglishChecker,
    "punctuation:no_comma": CommaChecker,
    "startend:quotation": QuotationChecker,
}
