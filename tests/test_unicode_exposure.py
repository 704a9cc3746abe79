"""The exposure sets (src/ifaudit/tasks/unicode_exposure.json): what they hold, that
tools/unicode_exposure.py regenerates them byte for byte from the interpreters, and the check a
run's summary makes with them under a Unicode version other than the reference (14.0)."""

from __future__ import annotations

import json
import subprocess
import sys
import unicodedata
from pathlib import Path

from conftest import GPT4_RESPONSES, IFEVAL_PROMPTS, REPO
from ifaudit.core.records import Response
from ifaudit.io.prompts import read_prompts
from ifaudit.io.responses import read_responses
from ifaudit.steps.grading.canary import expected_verdicts
from ifaudit.steps.grading.summary import unicode_check
from ifaudit.tasks.unicode_exposure import (
    REFERENCE_UNICODE,
    exposed_characters,
    exposure_check,
    exposure_problem,
    exposure_sha256,
    parse_ranges,
)

DATA = REPO / "src" / "ifaudit" / "tasks" / "unicode_exposure.json"
CANARIES = REPO / "src" / "ifaudit" / "tasks" / "canaries"
NEW_IN_15 = "\U0001df25"  # unassigned in Unicode 14.0, a lowercase letter from 15.0 on
OTHER_VERSIONS = ("15.0.0", "15.1.0")  # Python 3.12's and 3.13's


def data() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


def test_the_reference_is_this_pythons_unicode_and_exposes_nothing() -> None:
    assert unicodedata.unidata_version == REFERENCE_UNICODE == data()["reference"]
    assert exposed_characters(REFERENCE_UNICODE) == frozenset()
    assert sorted(data()["exposed"]) == [REFERENCE_UNICODE, *OTHER_VERSIONS]


def test_the_ranges_are_sorted_disjoint_and_counted() -> None:
    for version, exposed in data()["exposed"].items():
        spans = [[int(end, 16) for end in item.split("..")] for item in exposed["ranges"]]
        assert all(span[0] < span[-1] for span in spans if len(span) == 2), version
        # In order, apart, and merged: each range starts more than one past the previous one's end.
        assert all(before[-1] + 1 < after[0] for before, after in zip(spans, spans[1:])), version
        assert len(parse_ranges(exposed["ranges"])) == exposed["code_points"]


def test_the_sentinels_character_is_exposed_and_ascii_is_not() -> None:
    for version in OTHER_VERSIONS:
        exposed = exposed_characters(version)
        assert exposed is not None and NEW_IN_15 in exposed
        assert not exposed & {chr(cp) for cp in range(0x250)}  # no Latin letter, digit or space moved
    # U+A7CF (Unicode 17.0) is unassigned in 14.0, 15.0 and 15.1 alike: not exposed (regex's own
    # tables decide it, and they come with the pinned regex, the same under every Python).
    assert all("\ua7cf" not in exposed_characters(version) for version in OTHER_VERSIONS)


def test_the_exposure_check_passes_googles_541_responses_under_15_1() -> None:
    prompts = read_prompts(IFEVAL_PROMPTS)
    responses = read_responses(GPT4_RESPONSES, prompts)
    for version in OTHER_VERSIONS:
        check = exposure_check(version, prompts, responses)
        assert check["passed"] and check["exposed"] == [] and check["version"] == version
        assert check["reference"] == REFERENCE_UNICODE and check["exposure_sha256"] == exposure_sha256()


def test_a_response_or_a_prompt_setting_holding_an_exposed_code_point_fails_it_named() -> None:
    prompts = read_prompts(IFEVAL_PROMPTS)[:3]
    first, second, third = prompts
    settings = first.kwargs[0] | {"keywords": [f"data{NEW_IN_15}"]}
    prompts[0] = type(first)(**{**first.__dict__, "kwargs": (settings, *first.kwargs[1:])})
    responses = [
        Response(first.key, 0, "fine", 1),
        Response(second.key, 1, f"NASA{NEW_IN_15} ok \u4e24", 2),
        Response(third.key, 0, "plain ASCII", 3),
    ]
    check = exposure_check("15.1.0", prompts, responses)
    assert check["passed"] is False
    assert check["exposed"] == [
        {"code_point": "U+4E24", "in": [{"key": second.key, "sample": 1}]},  # a numeric value from 15.1 on
        {"code_point": "U+1DF25", "in": [{"key": first.key}, {"key": second.key, "sample": 1}]},
    ]
    assert exposure_problem(check) == (
        "graded under Unicode 15.1.0, whose properties differ from 14.0.0 at code points the run's texts hold: "
        f"U+4E24 (response {second.key}/1); U+1DF25 (prompt {first.key}, response {second.key}/1)"
    )
    # Under 15.0 U+4E24 was not yet numeric: only U+1DF25 is named.
    assert [item["code_point"] for item in exposure_check("15.0.0", prompts, responses)["exposed"]] == ["U+1DF25"]
    # Under the reference nothing is exposed.
    assert exposure_check(REFERENCE_UNICODE, prompts, responses)["passed"] is True


def test_a_unicode_version_without_an_exposure_set_counts_no_run() -> None:
    check = exposure_check("16.0.0", read_prompts(IFEVAL_PROMPTS)[:1], [])
    assert check["passed"] is False
    assert exposure_problem(check) == (
        "graded under Unicode 16.0.0: no exposure set for Unicode 16.0.0, so no text is known to grade as under 14.0.0"
    )


def test_the_summarys_check_reads_the_graded_texts_and_the_fingerprints_exposure_data(tmp_path: Path) -> None:
    prompts = read_prompts(IFEVAL_PROMPTS)
    key = prompts[0].key
    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps({"key": key, "response": f"ALL CAPITALS {NEW_IN_15}"}) + "\n")
    environment = {"unicodedata": "15.1.0", "unicodedata_exposure": exposure_sha256()}
    check, reasons = unicode_check(environment, prompts, {key}, responses)
    assert [item["in"] for item in check["exposed"]] == [[{"key": key, "sample": 0}]] and len(reasons) == 1
    # Under the reference the response file is not even needed; other exposure data are a reason.
    check, reasons = unicode_check({**environment, "unicodedata": "14.0.0"}, prompts, {key}, None)
    assert check["passed"] and reasons == []
    _, reasons = unicode_check({**environment, "unicodedata_exposure": "0" * 64}, prompts, {key}, responses)
    assert reasons[0].startswith(f"the grading environment's exposure sets (sha256 {'0' * 64}) are not these")
    _, reasons = unicode_check({"grader": {}}, prompts, {key}, responses)
    assert reasons == ["the canary's grading fingerprint names no Unicode version"]


def test_the_python_unicode_sentinels_carry_a_verdict_per_unicode_version() -> None:
    seen = 0
    for path in sorted(CANARIES.glob("*.json")):
        for sentinel in json.loads(path.read_text(encoding="utf-8")).get("sentinels", []):
            if sentinel["name"].startswith("python_unicode_"):
                seen += 1
                assert sorted(sentinel["expected_by_unicode"]) == list(OTHER_VERSIONS), sentinel["name"]
                for version in OTHER_VERSIONS:  # each flips there by design, so each version's verdict is its own
                    assert expected_verdicts(sentinel, version) != sentinel["expected"], sentinel["name"]
                assert expected_verdicts(sentinel, REFERENCE_UNICODE) == sentinel["expected"]
                assert expected_verdicts(sentinel, "16.0.0") == sentinel["expected"]  # no verdict: the reference's
            else:
                assert "expected_by_unicode" not in sentinel, sentinel["name"]
    assert seen == 9  # 2 in each of ifeval, ifeval_langcheck, Inception's; 1 and 2 in the Hugging Face ones


def test_the_script_regenerates_the_data_byte_for_byte() -> None:
    """Python 3.11, 3.12 and 3.13 probed again (on PATH or under ~/.pyenv; CI machines have them)."""
    done = subprocess.run(
        [sys.executable, str(REPO / "tools" / "unicode_exposure.py"), "check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "regenerated byte for byte" in done.stderr
