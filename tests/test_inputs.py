"""Readers: both prompt forms, and bad input stopped with file, line and field, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import GPT4_RESPONSES, IFEVAL_PROMPTS, grade_args, read_jsonl, run_cli, write_jsonl
from ifaudit.core.errors import InputError
from ifaudit.io.prompts import read_prompts
from ifaudit.io.responses import read_responses
from ifaudit.tasks.registry import TASKS

PROMPT = {
    "key": 7,
    "prompt": "Write in capitals.",
    "instruction_id_list": ["change_case:english_capital"],
    "kwargs": [{}],
}


def hugging_face_form(records: list[dict]) -> list[dict]:
    """Pad every kwargs object with nulls for every kwarg name any instruction uses, as the
    Hugging Face copy of IFEval does."""
    names = sorted({name for r in records for kwargs in r["kwargs"] for name in kwargs})
    return [{**r, "kwargs": [{n: kwargs.get(n) for n in names} for kwargs in r["kwargs"]]} for r in records]


def test_hugging_face_form_grades_like_upstream_form(stand_in, tmp_path: Path) -> None:
    from ifaudit.tasks.grading import grade_all

    upstream_form = read_jsonl(IFEVAL_PROMPTS)
    hf_path = write_jsonl(tmp_path / "hf.jsonl", hugging_face_form(upstream_form))
    assert None in json.loads(hf_path.read_text().splitlines()[0])["kwargs"][0].values()
    upstream_prompts, hf_prompts = read_prompts(IFEVAL_PROMPTS), read_prompts(hf_path)
    assert [p.kwargs for p in hf_prompts] == [p.kwargs for p in upstream_prompts]
    responses = write_jsonl(tmp_path / "r.jsonl", read_jsonl(GPT4_RESPONSES)[:80])
    task = TASKS["ifeval"]
    assert grade_all(stand_in, task, hf_prompts, read_responses(responses, hf_prompts)) == grade_all(
        stand_in, task, upstream_prompts, read_responses(responses, upstream_prompts)
    )


def test_responses_match_by_key_or_by_exact_prompt_text(tmp_path: Path) -> None:
    prompts_path = write_jsonl(tmp_path / "p.jsonl", [PROMPT])
    prompts = read_prompts(prompts_path)
    by_key = read_responses(write_jsonl(tmp_path / "a.jsonl", [{"key": 7, "response": "HI"}]), prompts)
    by_text = read_responses(
        write_jsonl(tmp_path / "b.jsonl", [{"prompt": PROMPT["prompt"], "response": "HI"}]), prompts
    )
    assert by_key[0].key == by_text[0].key == 7 and by_key[0].sample == 0


BAD_RESPONSES = [
    ("unknown key", b'{"key": 8, "response": "x"}\n', 1, "key", "no prompt has key 8"),
    ("unknown prompt text", b'{"prompt": "Write in capital.", "response": "x"}\n', 1, "prompt", "matches no prompt"),
    (
        "duplicate pair",
        b'{"key": 7, "response": "A"}\n{"key": 7, "response": "B", "sample": 0}\n',
        2,
        "sample",
        "duplicate response for key 7, sample 0 (first on line 1)",
    ),
    ("missing response", b'{"key": 7}\n', 1, "response", "missing"),
    ("missing key and prompt", b'{"response": "x"}\n', 1, "key", "needs 'key' or 'prompt'"),
    ("response null", b'{"key": 7, "response": null}\n', 1, "response", "expected string, got null (no output)"),
    ("response a number", b'{"key": 7, "response": 3}\n', 1, "response", "expected string, got int"),
    ("negative sample", b'{"key": 7, "response": "x", "sample": -1}\n', 1, "sample", "non-negative integer"),
    (
        "invalid UTF-8",
        b'{"key": 7, "response": "ok"}\n{"key": 7, "sample": 1, "response": "\xff"}\n',
        2,
        None,
        "invalid UTF-8",
    ),
    ("malformed JSON", b'{"key": 7, "response": "x"}\n{"key": 7, "response": \n', 2, None, "malformed JSON"),
    ("not an object", b'["key", 7]\n', 1, None, "expected a JSON object"),
]


@pytest.mark.parametrize(
    "content, line, field, message", [case[1:] for case in BAD_RESPONSES], ids=[case[0] for case in BAD_RESPONSES]
)
def test_bad_responses_name_file_line_and_field(tmp_path: Path, content: bytes, line: int, field, message: str) -> None:
    prompts = read_prompts(write_jsonl(tmp_path / "p.jsonl", [PROMPT]))
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    with pytest.raises(InputError) as caught:
        read_responses(path, prompts)
    error = caught.value
    assert (error.path, error.line, error.field) == (str(path), line, field)
    assert message in str(error)
    assert str(error).startswith(f"{path}:{line}: ")


BAD_PROMPTS = [
    ("kwargs length", {**PROMPT, "kwargs": []}, "kwargs", "has 0 entries but instruction_id_list has 1"),
    ("id not a string", {**PROMPT, "instruction_id_list": [3]}, "instruction_id_list[0]", "expected a string"),
    ("kwargs not an object", {**PROMPT, "kwargs": [3]}, "kwargs[0]", "expected an object"),
    ("missing prompt", {k: v for k, v in PROMPT.items() if k != "prompt"}, "prompt", "missing"),
]


@pytest.mark.parametrize("record, field, message", [case[1:] for case in BAD_PROMPTS], ids=[c[0] for c in BAD_PROMPTS])
def test_bad_prompts_name_file_line_and_field(tmp_path: Path, record: dict, field: str, message: str) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [{**PROMPT, "key": 1}, record])
    with pytest.raises(InputError) as caught:
        read_prompts(path)
    assert (caught.value.line, caught.value.field) == (2, field)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    "instruction, kwargs, field, message",
    [
        ("no:such_instruction", {}, "instruction_id_list[0]", "unknown instruction id 'no:such_instruction'"),
        (
            "length_constraints:number_words",
            {"num_words": 3, "relation": "at least", "colour": "red"},
            "kwargs[0]",
            "colour",
        ),
    ],
)
def test_instructions_that_cannot_be_built_stop_before_grading(
    stand_in, tmp_path: Path, instruction, kwargs, field, message
) -> None:
    from ifaudit.tasks.grading import validate_prompts

    path = write_jsonl(tmp_path / "p.jsonl", [{**PROMPT, "instruction_id_list": [instruction], "kwargs": [kwargs]}])
    with pytest.raises(InputError) as caught:
        validate_prompts(stand_in, read_prompts(path))
    assert (caught.value.line, caught.value.field) == (1, field)
    assert message in str(caught.value)


def test_cli_reports_bad_input_in_one_line_and_keeps_the_previous_output(resources: Path, tmp_path: Path) -> None:
    prompts = write_jsonl(tmp_path / "p.jsonl", [PROMPT])
    out = tmp_path / "grades.jsonl"
    out.write_text("previous grades\n")
    bad = tmp_path / "r.jsonl"
    bad.write_bytes(b'{"key": 7, "response": "A"}\n{"key": 9, "response": "B"}\n')
    done = run_cli(
        grade_args(prompts, bad, out),
        resources,
        check=False,
    )
    assert done.returncode == 2
    assert (
        done.stderr.strip().splitlines()[-1] == f"ifaudit: error: {bad}:2: field 'key': no prompt has key 9 "
        "(hint: check that the responses belong to this prompt set)"
    )
    assert "Traceback" not in done.stderr
    assert out.read_text() == "previous grades\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".grades")] == []


def test_kwargs_as_json_text_read_like_kwargs_as_json(tmp_path: Path) -> None:
    """Arabic IFEval spec §1: `kwargs` may arrive as a JSON string (the whole list or one entry)."""
    from conftest import DATA

    records = read_jsonl(DATA / "arabic_ifeval" / "ar_input_data.jsonl")
    as_text = [
        {**r, "kwargs": json.dumps(r["kwargs"], ensure_ascii=False)}
        if i % 2
        else {**r, "kwargs": [json.dumps(k, ensure_ascii=False) for k in r["kwargs"]]}
        for i, r in enumerate(records)
    ]
    original = TASKS["ifeval_arabic_inception"]

    plain = original.read_prompts(write_jsonl(tmp_path / "plain.jsonl", records))
    text = original.read_prompts(write_jsonl(tmp_path / "text.jsonl", as_text))
    assert [(p.key, p.kwargs) for p in text] == [(p.key, p.kwargs) for p in plain]
    assert any(p.kwargs and any(p.kwargs) for p in text)


@pytest.mark.parametrize("kwargs, field", [("[{", "kwargs"), (["{'a': 1}"], "kwargs[0]"), ("{}", "kwargs")])
def test_kwargs_text_that_is_not_json_names_the_field(tmp_path: Path, kwargs, field: str) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [{**PROMPT, "kwargs": kwargs}])
    with pytest.raises(InputError) as caught:
        read_prompts(path)
    assert (caught.value.line, caught.value.field) == (1, field)


@pytest.mark.parametrize(
    "content", [b'{"key": 7, "response": null}\n', b'{"key": 7, "output": null}\n', b'{"key": 7}\n']
)
def test_a_missing_or_null_output_is_a_stated_deviation_not_an_empty_answer(tmp_path: Path, content: bytes) -> None:
    """The Arabic reference grades it as ""; we refuse it and say why and how to grade it empty."""
    prompts = read_prompts(write_jsonl(tmp_path / "p.jsonl", [PROMPT]))
    path = tmp_path / "r.jsonl"
    path.write_bytes(content)
    with pytest.raises(InputError) as caught:
        read_responses(path, prompts)
    assert caught.value.line == 1 and "graded as empty" in str(caught.value) and '"response": ""' in str(caught.value)
