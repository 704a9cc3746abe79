"""A `null` response in upstream's own format (`prompt` and `response`, no `key`: the files M-IFEval
commits; 21 of o1-mini's and 22 of o1-preview's English responses) is read as the empty response,
which the pinned graders grade as following nothing, as M-IFEval's `evaluation_main.py` grades a
null (lines 120, 139), and is disclosed: counted among the empty answers, and named as null. A
null in ifaudit's own format (`key`) is still refused (tests/test_inputs.py, test_hostile_inputs.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ifaudit.core.errors import InputError
from ifaudit.core.suspect_responses import suspect_responses
from ifaudit.io.responses import read_responses
from ifaudit.steps.grading.summary import graded_answers, suspect_findings
from ifaudit.tasks.mifeval import MIFEVAL_FR
from test_mifeval_reference import MIFEVAL

GPT4O = "gpt-4o-2024-08-06"
NULLED = (1, 3)  # rows of GPT-4o's French file whose response is made null


def nulled_file(tmp_path: Path, rows: int = 6) -> Path:
    """The first `rows` lines of GPT-4o's committed French responses, the NULLED ones made `null`."""
    lines = (MIFEVAL / "data" / f"fr_input_response_data_{GPT4O}.jsonl").read_text(encoding="utf-8").splitlines()
    out = []
    for index, line in enumerate(lines[:rows]):
        record = json.loads(line)
        if index in NULLED:
            record["response"] = None
        out.append(json.dumps(record, ensure_ascii=False))
    path = tmp_path / "fr_nulls.jsonl"
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def test_a_null_in_upstreams_format_is_read_as_the_empty_response_and_marked(tmp_path: Path) -> None:
    prompts = MIFEVAL_FR.read_prompts(MIFEVAL / "data" / "fr_input_data.jsonl")
    responses = read_responses(nulled_file(tmp_path), prompts)
    assert [r.null for r in responses] == [index in NULLED for index in range(6)]
    assert all(r.text == "" for r in responses if r.null) and all(r.text for r in responses if not r.null)


@pytest.mark.parametrize(
    "record, field",
    [
        ({"key": "K", "response": None}, "response"),  # ifaudit's own format: a failed generation
        ({"key": "K", "prompt": "P", "response": None}, "response"),
        ({"prompt": "P", "output": None}, "output"),  # `output` is not upstream's field
    ],
)
def test_a_null_elsewhere_is_still_refused_naming_its_line(tmp_path: Path, record: dict, field: str) -> None:
    from ifaudit.core.records import Prompt

    prompts = [Prompt("K", "P", ("en:startend:quotation",), ({},), "p.jsonl", 1)]
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_responses(path, prompts)
    assert (caught.value.line, caught.value.field) == (1, field)
    assert "expected string, got null (no output)" in str(caught.value)


def test_nulls_are_counted_among_the_empty_answers_and_named_as_null(tmp_path: Path) -> None:
    from ifaudit.steps.grading.suspect_text import kinds
    from ifaudit.steps.reporting.suspect_section import suspect_section

    prompts = MIFEVAL_FR.read_prompts(MIFEVAL / "data" / "fr_input_data.jsonl")
    path = nulled_file(tmp_path)
    answers = graded_answers(path, prompts)
    assert [answer.null for answer in answers] == [index in NULLED for index in range(6)]
    found = suspect_findings(path, prompts, [])
    assert found is not None and found == suspect_responses(answers, {})
    assert found["empty"]["responses"] == 2 and found["empty"]["null"] == 2
    assert found["empty"]["keys"] == [prompts[index].key for index in NULLED]
    assert kinds(found, str) == [
        "2 are empty (2 of them null in the file, graded as the empty response, as M-IFEval's grader grades a null)"
    ]
    [line] = [line for line in suspect_section({"run": {"suspect_responses": found}}) if "empty or only" in line]
    assert line.startswith("  - empty or only whitespace (2 of them `null` in the file, graded as empty): 2 responses")
