"""Hostile input for the readers, through the real CLI with each grader (the pinned upstream and
the stand-in): each case either stops with one line naming the file, line and field (exit 2, no
traceback, nothing written) or has a documented, tested treatment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import (
    GPT4_RESPONSES,
    IFEVAL_PROMPTS,
    grade_args,
    passed_canary_environment,
    read_jsonl,
    run_cli,
    write_jsonl,
)

PROMPTS = read_jsonl(IFEVAL_PROMPTS)[:5]  # keys 1000, 1001, 1005, 1012, 1019
ANSWERS = {r["prompt"]: r["response"] for r in read_jsonl(GPT4_RESPONSES)}
GOOD = [json.dumps({"key": p["key"], "response": ANSWERS[p["prompt"]]}).encode() for p in PROMPTS]


def grade(tmp_path: Path, resources: Path, grader: str, responses: bytes, prompts: list[dict] = PROMPTS):
    prompt_file = write_jsonl(tmp_path / "prompts.jsonl", prompts)
    response_file = tmp_path / "responses.jsonl"
    response_file.write_bytes(responses)
    out = tmp_path / "grades.jsonl"
    done = run_cli(
        grade_args(prompt_file, response_file, out, grader=grader),
        resources,
        check=False,
    )
    return done, out, response_file


REFUSED = [
    ("truncated last line", b"\n".join(GOOD[:2]) + b"\n" + GOOD[2][:40], 3, None, "malformed JSON"),
    (
        "raw NUL byte",
        GOOD[0] + b"\n" + GOOD[1][:30] + b"\x00" + GOOD[1][30:],
        2,
        None,
        "malformed JSON: Invalid control character",
    ),
    ("invalid UTF-8", GOOD[0] + b"\n" + b'{"key": 1001, "response": "caf\xe9"}', 2, None, "invalid UTF-8 at byte 31"),
    ("response is a number", b'{"key": 1000, "response": 42}', 1, "response", "expected string, got int"),
    ("response is null", b'{"key": 1000, "response": null}', 1, "response", "expected string, got null"),
    ("field given twice", b'{"key": 1000, "key": 1001, "response": "x"}', 1, "key", "given twice in one object"),
    ("NaN", b'{"key": 1000, "response": "x", "sample": NaN}', 1, "sample", "NaN is not a finite number"),
    (
        "prompt not in the dataset",
        GOOD[0] + b'\n{"key": 999999, "response": "x"}',
        2,
        "key",
        "no prompt has key 999999",
    ),
    ("duplicate key and sample", GOOD[0] + b"\n" + GOOD[0], 2, "sample", "duplicate response for key 1000, sample 0"),
    ("sample not an integer", b'{"key": 1000, "response": "x", "sample": "2"}', 1, "sample", "non-negative integer"),
    ("a JSON array line", b'[1000, "x"]', 1, None, "expected a JSON object, got list"),
    ("empty file", b"", None, None, "file is empty"),
    ("only white space", b"\n \r\n\t\n", None, None, "file is empty"),
]


@pytest.mark.parametrize("content, line, field, message", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_refused_with_file_line_and_field(
    grader: str, resources: Path, tmp_path: Path, content: bytes, line, field, message
) -> None:
    done, out, response_file = grade(tmp_path, resources, grader, content)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    where = f"{response_file}:{line}: " if line else f"{response_file}: "
    assert last.startswith(f"ifaudit: error: {where}" + (f"field '{field}': " if field else "")), last
    assert message in last
    assert "Traceback" not in done.stderr
    assert not out.exists() and not list(tmp_path.glob(".grades.jsonl.*"))


@pytest.mark.parametrize(
    "prompts, field, message",
    [
        (
            [{**PROMPTS[0], "instruction_id_list": ["no:such"], "kwargs": [{}]}],
            "instruction_id_list[0]",
            "unknown instruction id",
        ),
        (
            [{**PROMPTS[1], "instruction_id_list": ["keywords:existence"], "kwargs": [{"keywords": 5}]}],
            "kwargs[0]",
            "cannot build",
        ),
        (
            [
                {
                    **PROMPTS[1],
                    "instruction_id_list": ["length_constraints:number_words"],
                    "kwargs": [{"num_words": "many", "relation": "at least"}],
                }
            ],
            "kwargs[0]",
            "cannot build",
        ),
        ([{**PROMPTS[1], "kwargs": "none"}], "kwargs", "a string that is not JSON"),
    ],
)
def test_bad_prompt_sets_are_refused_before_grading(
    grader: str, resources: Path, tmp_path: Path, prompts, field, message
) -> None:
    response = json.dumps({"key": prompts[0]["key"], "response": "x"}).encode()
    done, out, _ = grade(tmp_path, resources, grader, response, prompts)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and f"prompts.jsonl:1: field '{field}': " in last and message in last, last
    assert "Traceback" not in done.stderr and not out.exists()


def test_a_checker_failing_on_its_settings_names_the_prompt(tmp_path: Path) -> None:
    """A setting that building accepts but checking cannot use is reported, not a traceback."""
    from ifaudit.core.errors import InputError
    from ifaudit.tasks.graders import CheckerRegistry
    from ifaudit.core.identity import GraderKind
    from ifaudit.tasks.grading import grade_response
    from ifaudit.io.prompts import read_prompts
    from ifaudit.core.records import Response
    from ifaudit.tasks.registry import TASKS

    class Fragile:
        def __init__(self, instruction_id: str) -> None:
            self.words = None

        def build_description(self, **kwargs) -> str:
            self.words = kwargs.get("words")
            return ""

        def get_instruction_args(self) -> dict:
            return {"words": self.words}

        def check_following(self, value: str) -> bool:
            return len(value.split()) > self.words  # a string setting fails only here

    registry = CheckerRegistry("fragile", "1", GraderKind.OWN, {"x:fragile": Fragile}, {})
    prompts = read_prompts(
        write_jsonl(
            tmp_path / "p.jsonl",
            [{"key": 1, "prompt": "p", "instruction_id_list": ["x:fragile"], "kwargs": [{"words": "ten"}]}],
        )
    )
    with pytest.raises(InputError, match=r"p.jsonl:1: field 'kwargs\[0\]': x:fragile cannot check a response"):
        grade_response(registry, TASKS["ifeval"], prompts[0], Response(1, 0, "a b c", 1))


def test_bom_and_crlf_are_tolerated(grader: str, resources: Path, tmp_path: Path) -> None:
    (tmp_path / "clean").mkdir()
    (tmp_path / "messy").mkdir()
    clean, clean_out, _ = grade(tmp_path / "clean", resources, grader, b"\n".join(GOOD) + b"\n")
    messy, messy_out, _ = grade(tmp_path / "messy", resources, grader, b"\xef\xbb\xbf" + b"\r\n".join(GOOD) + b"\r\n")
    assert clean.returncode == messy.returncode == 0, messy.stderr
    assert clean_out.read_bytes() == messy_out.read_bytes()


def test_escaped_nul_and_a_ten_megabyte_response_are_graded(grader: str, resources: Path, tmp_path: Path) -> None:
    big = "A sentence without commas. " * 400_000  # 10.8 MB; prompt 1001 asks for no commas
    content = (
        json.dumps({"key": 1001, "response": big})
        + "\n"
        + json.dumps({"key": 1000, "response": "nul \u0000 inside"})
        + "\n"
    ).encode()
    assert len(content) > 10_000_000
    done, out, _ = grade(tmp_path, resources, grader, content)
    assert done.returncode == 0, done.stderr
    by_key = {g["key"]: g for g in read_jsonl(out)}
    assert by_key[1001]["strict"]["follow_instruction_list"] == [True]
    assert by_key[1000]["strict"]["follow_all_instructions"] is False


def test_prompts_without_a_response_are_listed_and_count_as_failed(
    grader: str, registry, resources: Path, tmp_path: Path
) -> None:
    from ifaudit.io.prompts import read_prompts
    from ifaudit.steps.grading.summary import summarize
    from ifaudit.tasks.registry import TASKS

    done, out, _ = grade(tmp_path, resources, grader, b"\n".join(GOOD[:2]))
    assert done.returncode == 0
    canary = tmp_path / "canary.json"
    environment = passed_canary_environment(registry.identity().as_record())
    canary.write_text(json.dumps({"passed": True, "disagreements": [], "environment": environment}))
    result = summarize(TASKS["ifeval"], "partial", None, out, read_prompts(tmp_path / "prompts.jsonl"), canary)
    assert result["counted"] is True  # the canary's grader is the run's
    assert result["missing_prompts"] == [1005, 1012, 1019]
    assert result["metrics"]["prompt_level_strict_acc"]["total"] == 5
    graded = read_jsonl(out)
    assert result["metrics"]["prompt_level_strict_acc"]["correct"] == sum(
        g["strict"]["follow_all_instructions"] for g in graded
    )


def test_missing_and_folder_paths(grader: str, resources: Path, tmp_path: Path) -> None:
    prompt_file = write_jsonl(tmp_path / "prompts.jsonl", PROMPTS)
    for responses, message in ((tmp_path / "nowhere.jsonl", "file not found"), (tmp_path, "is a folder")):
        done = run_cli(
            grade_args(prompt_file, responses, tmp_path / "g.jsonl", grader=grader),
            resources,
            check=False,
        )
        assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
