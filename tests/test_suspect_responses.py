"""Responses that may not be answers (ifaudit.core.suspect_responses): one text answering several
prompts, empty texts, harness placeholders and length-limited answers are found and named with
what they pass; nothing is filtered, and the findings do not depend on the order of anything but
the responses'."""

from __future__ import annotations

import random
from pathlib import Path

from conftest import IFEVAL_PROMPTS
from ifaudit.core.suspect_responses import (
    LENGTH_REASONS,
    PLACEHOLDERS,
    REPEATED_TEXT_PROMPTS,
    Answer,
    suspect_responses,
)


INSPECT_LOGS = Path(__file__).parent / "data" / "harness_logs" / "inspect"


def _grade(key: object, sample: int, strict: list[bool], loose: list[bool] | None = None) -> dict:
    record = {
        "key": key,
        "sample": sample,
        "strict": {"follow_all_instructions": all(strict), "follow_instruction_list": strict},
    }
    if loose is not None:
        record["loose"] = {"follow_all_instructions": all(loose), "follow_instruction_list": loose}
    return record


def _by_identity(records: list[dict]) -> dict:
    return {(record["key"], record["sample"]): record for record in records}


def test_one_text_answering_seven_prompts_is_named_with_what_it_passes() -> None:
    answers = [Answer(key, 0, "NO MATCH") for key in range(7)] + [Answer(100 + k, 0, f"answer {k}") for k in range(5)]
    grades = [_grade(k, 0, [k < 2], [k < 3]) for k in range(7)] + [_grade(100 + k, 0, [True]) for k in range(5)]
    found = suspect_responses(answers, _by_identity(grades))
    [named] = found["repeated_texts"]
    assert named["text"] == "NO MATCH" and named["prompts"] == 7 and named["responses"] == 7
    assert named["keys"] == list(range(7))
    assert named["passes"] == {
        "strict": {"responses_passing": 2, "instructions_followed": 2, "instructions": 7},
        "loose": {"responses_passing": 3, "instructions_followed": 3, "instructions": 7},
    }
    assert found["in_doubt"]["responses"] == 7 and found["in_doubt"]["passes"] == named["passes"]
    assert found["empty"]["responses"] == 0 and found["placeholders"] == []
    assert found["length_limited"] is None  # no response's log says why it stopped


def test_the_threshold_is_distinct_prompts_not_samples() -> None:
    """Samples of one prompt may well be identical (temperature 0): that is no repeated text; the
    same text for REPEATED_TEXT_PROMPTS distinct prompts is."""
    assert REPEATED_TEXT_PROMPTS == 2
    same_prompt = [Answer(1, sample, "Paris.") for sample in range(5)]
    assert suspect_responses(same_prompt, {})["repeated_texts"] == []
    two_prompts = [Answer(1, 0, "Yes"), Answer(2, 0, "Yes ")]  # trimmed: the same text
    [named] = suspect_responses(two_prompts, {})["repeated_texts"]
    assert (named["text"], named["prompts"], named["responses"]) == ("Yes", 2, 2)


def test_a_repeated_text_the_grader_credits_on_every_prompt_is_an_answer_not_named() -> None:
    """Fixed phrases a prompt asks for ("My answer is no.") repeat in true answers: a text that
    follows every instruction (strict) of every prompt it answers is not in doubt; the same text
    failing one of its prompts is named, with all its responses."""
    answers = [Answer(key, 0, "My answer is no.") for key in (3750, 3751, 3753)]
    credited = _by_identity([_grade(key, 0, [True], [True]) for key in (3750, 3751, 3753)])
    found = suspect_responses(answers, credited)
    assert found["repeated_texts"] == [] and found["in_doubt"]["responses"] == 0
    one_fails = {**credited, (3753, 0): _grade(3753, 0, [False], [True])}
    [named] = suspect_responses(answers, one_fails)["repeated_texts"]
    assert named["responses"] == 3 and named["keys"] == [3750, 3751, 3753]
    loose_only = {**credited, (3751, 0): _grade(3751, 0, [False], [True])}
    assert suspect_responses(answers, loose_only)["in_doubt"]["responses"] == 3  # strict decides


def test_empty_whitespace_and_placeholders_are_not_answers_and_each_placeholder_is_sourced() -> None:
    answers = [
        Answer(1, 0, ""),
        Answer(2, 0, " \n\t"),
        Answer(3, 0, "(no content)\n"),
        Answer(4, 0, "a real answer"),
    ]
    grades = _by_identity([_grade(k, 0, [k == 2, False]) for k in range(1, 5)])
    found = suspect_responses(answers, grades)
    assert found["empty"]["keys"] == [1, 2]
    assert found["empty"]["passes"]["strict"] == {"responses_passing": 0, "instructions_followed": 1, "instructions": 4}
    [placeholder] = found["placeholders"]
    assert placeholder["text"] == "(no content)" and placeholder["keys"] == [3]
    assert placeholder["source"].startswith("inspect-ai 0.3.285")
    assert found["in_doubt"]["keys"] == [1, 2, 3]
    assert all(source.strip() for source in PLACEHOLDERS.values())


def test_a_placeholder_repeated_is_counted_once_as_a_placeholder() -> None:
    answers = [Answer(key, 0, "error:unsafe") for key in range(3)]
    found = suspect_responses(answers, {})
    assert found["repeated_texts"] == [] and found["placeholders"][0]["responses"] == 3
    assert found["in_doubt"]["responses"] == 3


def test_length_limited_answers_are_counted_apart_from_those_in_doubt() -> None:
    reasons = ["stop", "length", "max_tokens", "model_length", None]
    answers = [Answer(key, 0, f"text {key}", reason) for key, reason in enumerate(reasons)]
    found = suspect_responses(answers, {})
    assert {"length", "max_tokens", "model_length"} == LENGTH_REASONS
    assert found["length_limited"]["keys"] == [1, 2, 3]
    assert found["in_doubt"]["responses"] == 0


def test_a_long_repeated_text_is_shown_cut_with_its_length_and_digest() -> None:
    text = "I am sorry, but an error occurred while generating. " * 5
    found = suspect_responses([Answer(1, 0, text), Answer(2, 0, text)], {})
    [named] = found["repeated_texts"]
    assert len(named["text"]) == 80 and named["text"].endswith("…")
    assert named["characters"] == len(text.strip()) and len(named["sha256"]) == 64


def test_findings_depend_only_on_the_responses_in_their_order() -> None:
    answers = [
        Answer(key % 9, key // 9, ["x", "", "NO MATCH", f"own {key}"][key % 4], "length" if key % 5 else "stop")
        for key in range(60)
    ]
    grades = _by_identity([_grade(a.key, a.sample, [a.key % 2 == 0, True]) for a in answers])
    shuffled = list(grades.items())
    random.Random(3).shuffle(shuffled)
    assert suspect_responses(answers, grades) == suspect_responses(answers, dict(shuffled))


def _no_match_run() -> dict:
    answers = [Answer(key, 0, "NO MATCH") for key in range(7)] + [Answer(9, 0, "", "length")]
    grades = _by_identity([_grade(k, 0, [k < 2, k < 5], [k < 3, True]) for k in range(7)] + [_grade(9, 0, [False])])
    return suspect_responses(answers, grades)


def test_the_headline_says_after_its_figures_what_may_not_be_answers_and_what_they_pass() -> None:
    from ifaudit.steps.reporting.headlines import headline

    row = {"title": "prompt-level strict", "value": 0.5, "ci_low": 0.4, "ci_high": 0.6, "counted": True, "level": 0.95}
    line = headline("run", [row], (0, 8), _no_match_run())
    assert line == (
        "run: counted; prompt-level strict 50.00 [40.00, 60.00] (percent, 95 % interval); NOTE: 8 responses may not "
        "be answers: 1 is empty; 7 are one text given to several prompts: 'NO MATCH' (7 prompts); of them 2 pass every "
        "instruction (strict), 7 of their 15 instructions followed; NOTE: 1 responses were cut at the length limit; "
        "of them 0 pass every instruction (strict), 0 of their 1 instructions followed"
    )
    assert headline("run", [row], (0, 8)) == line.split("; NOTE")[0]  # nothing in doubt: nothing said


def test_the_report_section_names_each_text_with_its_number_keys_and_passes() -> None:
    from ifaudit.steps.reporting.suspect_section import front_lines, suspect_section

    runs = {
        "clean": {"suspect_responses": suspect_responses([Answer(1, 0, "a")], {})},
        "run": {"suspect_responses": _no_match_run()},
    }
    section = suspect_section(runs)
    assert section[0] == "## Responses that may not be answers" and "**clean**" not in "\n".join(section)
    [named] = [line for line in section if "`NO MATCH`" in line]
    assert named.startswith("  - the text `NO MATCH` (8 characters, sha256 ")
    assert named.endswith(
        "7 responses to 7 prompts (keys 0, 1, 2, 3, 4, 5, 6); 2 pass every instruction (strict), 7 of their 14 "
        "instructions followed; 3 pass every instruction (loose), 10 of their 14 instructions followed."
    )
    assert any(line.startswith("  - empty or only whitespace: 1 responses to 1 prompts (keys 9)") for line in section)
    assert any(line.startswith("  - cut at the length limit: 1 responses") for line in section)
    assert suspect_section({"clean": runs["clean"]}) == []
    [front] = front_lines(runs)
    assert front.startswith("run: 8 responses may not be answers: ") and front.endswith("instructions followed.")


def test_importers_keep_the_finish_reason_their_logs_record(tmp_path) -> None:
    import json

    from ifaudit.inputs.importers import generic_jsonl, inspect_log, openai_batch
    from ifaudit.io.prompts import read_prompts
    from ifaudit.steps.auditing.importing import harness_record

    def line(custom_id: str, reason: str) -> dict:
        choice = {"index": 0, "finish_reason": reason, "message": {"role": "assistant", "content": "Hi."}}
        body = {"model": "m", "choices": [choice]}
        return {"id": "b", "custom_id": custom_id, "response": {"status_code": 200, "body": body}, "error": None}

    log = tmp_path / "batch.jsonl"
    log.write_text(
        "".join(json.dumps(line(key, reason)) + "\n" for key, reason in (("1000", "length"), ("1001", "stop")))
    )
    samples = openai_batch.read(log, {}).samples
    assert [sample.finish_reason for sample in samples] == ["length", "stop"]
    # The imported response file carries it, so the run's summary can count the cut ones.
    responses, _ = harness_record(openai_batch.read(log, {}), read_prompts(IFEVAL_PROMPTS))
    assert [record.get("finish_reason") for record in responses] == ["length", "stop"]
    # A generic JSONL log names the field that holds it, if it has one.
    generic = tmp_path / "generic.jsonl"
    generic.write_text('{"id": 1000, "text": "Hi.", "why": "length"}\n{"id": 1001, "text": "Yo.", "why": null}\n')
    fields = {"fields": {"key": "id", "response": "text", "finish_reason": "why"}}
    assert [sample.finish_reason for sample in generic_jsonl.read(generic, fields).samples] == ["length", None]
    # inspect records why each sample stopped as `stop_reason`.
    inspect_json = next(INSPECT_LOGS.glob("*.json"))
    assert {sample.finish_reason for sample in inspect_log.read(inspect_json, {}).samples} == {"stop"}


def test_the_first_screen_names_five_runs_and_counts_the_others() -> None:
    from ifaudit.steps.reporting.report_html import overview_fragment

    lines = [f"run{index}: 7 responses may not be answers" for index in range(7)]
    fragment = overview_fragment("intro", {"leaderboard": "<table></table>"}, [], lines)
    [block] = [part.split("</p>")[0] for part in fragment.split('<p class="in-doubt">')[1:]]
    assert block.count("<br>run") == 5 and "run4:" in block and "run5:" not in block
    assert block.endswith("<br>… and 2 more runs with such responses.")
    assert fragment.index("in-doubt") < fragment.index('id="ifaudit-leaderboard"')
    assert 'class="in-doubt"' not in overview_fragment("intro", {"leaderboard": ""}, [], [])
