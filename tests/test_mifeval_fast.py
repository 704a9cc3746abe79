"""A handful of M-IFEval responses graded in this process by the materialized pinned grader, in
seconds: upstream's committed verdicts, the registry cut to each language, what the stand-ins saw
(both spaCy models asked for at import and never used, `nltk.download('punkt_tab')` refused), and
the materialized folder exactly the pinned files. The grader's modules and folder are taken out of
sys.modules and sys.path afterwards (IFBench's flat layout names a module `instructions` too)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import NLTK_MIRROR, REPO
from ifaudit.core.records import Response
from ifaudit.io.responses import read_responses
from ifaudit.tasks.base import Grading, GradingOptions
from ifaudit.tasks.mifeval import MIFEVAL_FR, MIFEVAL_JA, MIFEVAL_PIN
from test_mifeval_reference import MIFEVAL, committed

GPT4O = "gpt-4o-2024-08-06"
HANDFUL = {"fr": 6, "ja": 2}  # responses graded per language (janome builds a tokenizer per call)


@pytest.fixture(scope="module")
def gradings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Grading]]:
    from ifaudit.tasks import ifbench_grader, mifeval_grader

    options = GradingOptions(
        tmp_path_factory.mktemp("mifeval_resources"), pin=REPO / MIFEVAL_PIN, offline=True, nltk_mirror=NLTK_MIRROR
    )
    mifeval_grader.SPACY_LOADS.clear()
    ifbench_grader.REFUSED_DOWNLOADS.clear()
    try:
        loaded = {"fr": MIFEVAL_FR.load(options), "ja": MIFEVAL_JA.load(options)}
        for language, grading in loaded.items():  # warmed: langdetect's profiles, punkt's French model
            grading.grade(*handful(language, 1))
        yield {**loaded, "resources": options.resources}  # type: ignore[dict-item]
    finally:
        for name in [name for name in sys.modules if name.split(".")[0] in mifeval_grader.OWN_PACKAGES]:
            del sys.modules[name]
        vendor = str(options.resources.resolve() / "vendor" / "lightblue_mifeval")
        sys.path[:] = [entry for entry in sys.path if not entry.startswith(vendor)]


def handful(language: str, count: int | None = None) -> tuple[list, list[Response]]:
    task = {"fr": MIFEVAL_FR, "ja": MIFEVAL_JA}[language]
    prompts = task.read_prompts(MIFEVAL / "data" / f"{language}_input_data.jsonl")
    responses = read_responses(MIFEVAL / "data" / f"{language}_input_response_data_{GPT4O}.jsonl", prompts)
    return prompts, responses[: count or HANDFUL[language]]


@pytest.mark.parametrize("language", ["fr", "ja"])
def test_a_handful_of_responses_get_upstreams_committed_verdicts(gradings: dict, language: str) -> None:
    prompts, responses = handful(language)
    grades = gradings[language].grade(prompts, responses)
    for mode in ("strict", "loose"):
        expected = [row["follow_instruction_list"] for row in committed(language, GPT4O, mode)[: len(responses)]]
        assert [grade[mode]["follow_instruction_list"] for grade in grades] == expected


def test_each_registry_holds_its_languages_ids_only(gradings: dict) -> None:
    for language, count in (("fr", 30), ("ja", 33)):
        names = list(gradings[language].checkers.instructions)
        assert len(names) == count and all(name.startswith(f"{language}:") for name in names)


def test_the_stand_ins_saw_the_spacy_loads_and_the_download(gradings: dict) -> None:
    from ifaudit.tasks import ifbench_grader, mifeval_grader

    assert sorted(set(mifeval_grader.SPACY_LOADS)) == ["es_core_news_sm", "xx_sent_ud_sm"]
    assert "punkt_tab" in ifbench_grader.REFUSED_DOWNLOADS
    assert "spacy" not in sys.modules  # stood in for the import only


def test_the_materialized_folder_is_exactly_the_pinned_files(gradings: dict) -> None:
    from ifaudit.io.remote.pins import load_pin

    pin = load_pin(REPO / MIFEVAL_PIN)
    folder: Path = gradings["resources"] / "vendor" / "lightblue_mifeval" / pin.commit
    found = sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())
    assert found == sorted(file.path for file in pin.files)


def test_a_null_response_in_upstreams_format_follows_nothing_as_upstream_grades_it(gradings: dict, tmp_path) -> None:
    """M-IFEval's evaluation_main.py grades a response that is not a string as following nothing
    (lines 120, 139); ifaudit reads it as the empty response and grades it so, the others as
    committed."""
    from test_mifeval_null import NULLED, nulled_file

    prompts = MIFEVAL_FR.read_prompts(MIFEVAL / "data" / "fr_input_data.jsonl")
    responses = read_responses(nulled_file(tmp_path), prompts)
    grades = gradings["fr"].grade(prompts, responses)
    for mode in ("strict", "loose"):
        expected = [row["follow_instruction_list"] for row in committed("fr", GPT4O, mode)[: len(responses)]]
        got = [grade[mode]["follow_instruction_list"] for grade in grades]
        assert [got[index] for index in NULLED] == [[False] * len(expected[index]) for index in NULLED]
        assert any(any(expected[index]) for index in NULLED)  # the null took verdicts away
        assert [got[i] for i in range(len(got)) if i not in NULLED] == [
            expected[i] for i in range(len(got)) if i not in NULLED
        ]
