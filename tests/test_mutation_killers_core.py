"""Behaviours of core/ and of the canary (steps/grading/canary.py) that `make mutation` found
unpinned: each test here failed against a surviving mutant (tests/mutation_survivors.md lists the
survivors left, and why). The canary's tests grade with a grader whose verdicts are set by hand
per response text, so what the canary must conclude is known without the code under test; they
run in this process, where mutmut's stats run sees which functions they reach (the CLI tests of
the canary run it in a child process, which mutmut cannot attribute)."""

from __future__ import annotations

import hashlib
import json
import math
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from conftest import DATA, GPT4_RESPONSES, IFEVAL_PROMPTS
from ifaudit.core.errors import ConfigError, IfauditError, InputError, VerificationError
from ifaudit.core.identity import GraderIdentity, GraderKind
from ifaudit.core.metrics import LANGUAGE_CHECK, MetricSpec, score_table, score_tables
from ifaudit.core.records import Prompt, Response
from ifaudit.core.stats import (
    Interval,
    Resamples,
    _exact_dot,
    clustered_se,
    estimate_ratio,
    jackknife_ratios,
    paired_clustered_se,
    paired_difference,
    paired_differences,
    ratio,
    wilson,
)
from ifaudit.core.terminal import printable
from ifaudit.io.prompts import prompt_from_record
from ifaudit.steps.grading.canary import (
    check_canary,
    check_sentinels,
    combine_verdicts,
    combined_line,
    environment_differences,
    environment_leaves,
    expected_verdicts,
    explain,
    inline_inputs,
    failure_reason,
    leaf_name,
    run_canary,
    selfcheck,
    certify,
)
from ifaudit.tasks.base import GradingOptions
from ifaudit.tasks.canary_files import load_canary
from ifaudit.tasks.environment import sensitive_versions, unicode_version
from ifaudit.tasks.registry import TASKS

IFEVAL = TASKS["ifeval"]
TWO = ["punctuation:no_comma", "detectable_format:title"]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _prompt_record(key: int, ids: list[str] = TWO) -> dict[str, Any]:
    return {"key": key, "prompt": f"prompt {key}", "instruction_id_list": list(ids), "kwargs": [{} for _ in ids]}


def _sentinel(name: str, response: str, expected: dict[str, Any], key: int = 900, **more: Any) -> dict[str, Any]:
    return {
        "name": name,
        "guards": f"what {name} guards",
        "prompt": _prompt_record(key),
        "response": response,
        "response_sha256": _sha(response),
        "expected": expected,
        **more,
    }


class Grader:
    """A grading whose verdicts are set by hand for each response text; it keeps every call."""

    def __init__(self, verdicts: Mapping[str, Mapping[str, Any]], version: str | None = "pinned") -> None:
        self.verdicts = verdicts
        self.version = version
        self.calls: list[tuple[Prompt, Response]] = []

    def __call__(self, prompt: Prompt, response: Response) -> dict[str, Any]:
        self.calls.append((prompt, response))
        given = self.verdicts[response.text]
        graded: dict[str, Any] = {
            m: {"follow_instruction_list": list(given[m])} for m in ("strict", "loose") if m in given
        }
        if "gate" in given:
            graded["gate"] = {"passed": given["gate"], "rule": "the response is in Arabic letters"}
        if self.version is not None:
            graded["grader"] = {"version": self.version}
        return graded


# --- core/metrics.py: the language gate, subsets, labels and written verdicts, counted by hand --------------


def _scored(key: int, ids: tuple[str, ...], subset: str | None = None) -> Prompt:
    return Prompt(
        key=key,
        prompt=f"p{key}",
        instruction_id_list=ids,
        kwargs=tuple({} for _ in ids),
        path="p",
        line=key,
        subset=subset,
    )


def _grade(key: int, strict: list[bool], gate: bool = True, written: int = 0) -> dict[str, Any]:
    return {
        "key": key,
        "strict": {"follow_instruction_list": strict},
        "gate": {"passed": gate},
        "verdicts_written": written,
    }


# Prompt 1 has two samples (the first failing the gate), prompt 2 one, prompt 3 none: the common
# denominator is lcm(2, 1) = 2, so prompt 1's samples weigh 1 each and prompt 2's weighs 2.
GATED_PROMPTS = [_scored(1, ("a:x", "b:y")), _scored(2, ("a:x",)), _scored(3, ("a:x",))]
GATED_GRADES = [_grade(1, [True, True], gate=False), _grade(1, [True, False]), _grade(2, [True])]


def test_the_language_check_counts_responses_passing_the_gate_and_gated_metrics_zero_the_others() -> None:
    def table(spec: MetricSpec) -> tuple[tuple[int, ...], tuple[int, ...]]:
        scored = score_table(GATED_PROMPTS, GATED_GRADES, spec)
        assert (scored.keys, scored.samples, scored.scale) == ((1, 2, 3), (2, 1, 0), 2)
        return scored.num, scored.den

    assert table(LANGUAGE_CHECK) == ((1, 2, 0), (2, 2, 2))
    assert table(MetricSpec("x", "strict", "prompt")) == ((1, 2, 0), (2, 2, 2))
    assert table(MetricSpec("x", "strict", "prompt", gated=True)) == ((0, 2, 0), (2, 2, 2))
    assert table(MetricSpec("x", "strict", "inst")) == ((3, 2, 0), (4, 2, 2))
    assert table(MetricSpec("x", "strict", "inst", gated=True)) == ((1, 2, 0), (4, 2, 2))
    assert score_tables(GATED_PROMPTS, GATED_GRADES, [LANGUAGE_CHECK])["language_check_acc"].num == (1, 2, 0)


def test_a_run_with_no_responses_scores_every_prompt_zero_over_a_denominator_of_one() -> None:
    scored = score_table(GATED_PROMPTS, [], MetricSpec("x", "strict", "inst"))
    assert (scored.samples, scored.scale, scored.num, scored.den) == ((0, 0, 0), 1, (0, 0, 0), (2, 1, 1))


def test_a_subset_metric_weighs_other_prompts_nothing_and_a_label_counts_only_its_instructions() -> None:
    prompts = [
        _scored(1, ("a:x", "b:y+lab"), "Easy_set"),
        _scored(2, ("c:z+lab",), "Hard_set"),
        _scored(3, ("a:x",), "Easy_set"),
    ]
    grades = [_grade(1, [False, True]), _grade(2, [True]), _grade(3, [True])]
    easy = score_table(prompts, grades, MetricSpec("x", "strict", "inst", subset="Easy_set"))
    assert (easy.num, easy.den) == ((1, 0, 1), (2, 0, 1))
    labelled = score_table(prompts, grades, MetricSpec("x", "strict", "inst", label="lab"))
    assert (labelled.num, labelled.den) == ((1, 1, 0), (1, 1, 0))


def test_written_only_counts_each_samples_verdicts_before_its_judge_stopped() -> None:
    prompts = [_scored(1, ("a:x", "b:y", "c:z")), _scored(2, ("a:x", "b:y+lab")), _scored(3, ("a:x",))]
    grades = [
        _grade(1, [True, True, False], written=2),  # the third question never asked
        _grade(1, [False, True, True], written=3),
        _grade(2, [True, True], written=1),
    ]
    scored = score_table(prompts, grades, MetricSpec("x", "strict", "inst", written_only=True))
    # Prompt 1: weight 1, (1 + 1) + (0 + 1 + 1) of 2 + 3 written; prompt 2: weight 2, 1 of 1;
    # prompt 3, with no response, nothing written.
    assert (scored.scale, scored.num, scored.den) == (2, (4, 2, 0), (5, 2, 0))
    labelled = score_table(prompts, grades, MetricSpec("x", "strict", "inst", label="lab", written_only=True))
    assert (labelled.num, labelled.den) == ((0, 0, 0), (0, 0, 0))


# --- core/terminal.py and core/errors.py ---------------------------------------------------------------


def test_printable_escapes_controls_format_separators_surrogates_and_noncharacters_and_nothing_else() -> None:
    assert printable("plain – café 中文") == "plain – café 中文"
    escaped = "a\nb\tc\x1b[31m\x7f\u2028\u2029\u202e\xad\U000e0001\ud800\ufffe\uffff"
    assert printable(escaped) == ("a\\nb\\tc\\x1b[31m\\x7f\\u2028\\u2029\\u202e\\xad\\U000e0001\\ud800\\ufffe\\uffff")
    # Not printable for Python, yet nothing a terminal acts on: a no-break space, an unassigned
    # code point, a private-use one, and the text around an escaped character, are kept as they are.
    assert printable("a\xa0b\u0378\ue000é\n") == "a\xa0b\u0378\ue000é\\n"


def test_a_config_error_names_its_key_path_then_the_problem() -> None:
    error = ConfigError("runs.x.judge.infobench_version", "unknown version '9'")
    assert str(error) == "config: runs.x.judge.infobench_version: unknown version '9'"
    assert (error.where, error.message, error.exit_code) == ("runs.x.judge.infobench_version", "unknown version '9'", 2)
    assert (InputError("x").exit_code, VerificationError("x").exit_code) == (2, 3)


# --- core/identity.py -------------------------------------------------------------------------------


def test_a_judge_and_an_imported_file_are_graders_of_their_own_kind() -> None:
    judge = GraderIdentity.judge("gpt-4o", "temperature=0.0", {"name": "ifaudit"})
    assert (judge.kind, judge.name, judge.version, judge.protocol) == (
        GraderKind.JUDGE,
        "gpt-4o",
        "temperature=0.0",
        {"name": "ifaudit"},
    )
    imported = GraderIdentity.imported("log.jsonl", "0123456789abcdef0123")
    assert (imported.kind, imported.name, imported.version, imported.protocol) == (
        GraderKind.IMPORTED,
        "log.jsonl",
        "0123456789abcdef",
        None,
    )


# --- core/stats.py -----------------------------------------------------------------------------------


def test_a_ratio_with_no_denominator_is_zero_with_zero_clustered_se() -> None:
    empty = (np.array([0, 0], dtype=np.int64), np.array([0, 0], dtype=np.int64))
    some = (np.array([1, 2], dtype=np.int64), np.array([2, 2], dtype=np.int64))
    assert ratio(*empty) == 0.0 and clustered_se(*empty) == 0.0
    assert paired_clustered_se(empty, some) == 0.0 and paired_clustered_se(some, empty) == 0.0
    (difference,) = paired_differences([some, empty], np.array([[0.5, 0.75], [0.0, 0.0]]), [(0, 1)], 0.9, "percentile")
    assert difference.clustered_se == 0.0 and difference.value == 0.75


def test_a_left_out_prompt_holding_every_denominator_gives_a_jackknife_value_of_zero() -> None:
    # Leaving prompt 0 out leaves no denominator: its value is 0 by rule, not 0/0.
    assert jackknife_ratios(np.array([1, 0, 0]), np.array([2, 0, 0])).tolist() == [0.0, 0.5, 0.5]


def test_a_resample_that_drew_no_denominator_has_the_value_zero() -> None:
    # Prompt 1 has no denominator; the first resample drew it twice, the second both prompts.
    resamples = Resamples(np.array([[0.0, 2.0], [1.0, 1.0]]))
    (values,) = resamples.ratios([(np.array([1, 0], dtype=np.int64), np.array([2, 0], dtype=np.int64))])
    assert values.tolist() == [0.0, 0.5]


def test_resample_sums_are_integers_exact_past_float64s_53_bits() -> None:
    resamples = Resamples(np.array([[1.0, 1.0], [2.0, 0.0]]))
    sums = resamples.sums(np.array([[2**52 + 1], [2**52]], dtype=np.int64))
    assert sums.dtype == np.int64
    assert sums[:, 0].tolist() == [2**53 + 1, 2**53 + 2]
    small = resamples.sums(np.array([[3], [4]], dtype=np.int64))
    assert small.dtype == np.int64 and small[:, 0].tolist() == [7, 6]


def test_dot_products_past_int64_keep_every_low_bit() -> None:
    odd = np.array([2**32 + 1, 2**32 + 1], dtype=np.int64)  # each square needs 65 bits
    assert _exact_dot(odd, odd) == 2 * (2**32 + 1) ** 2


def test_bootstrap_se_is_the_sample_standard_deviation_and_zero_from_a_single_resample() -> None:
    num, den = np.array([1, 1], dtype=np.int64), np.array([2, 2], dtype=np.int64)
    two = np.array([0.25, 0.75])
    assert estimate_ratio(num, den, two, 0.9, "percentile").bootstrap_se == pytest.approx(math.sqrt(0.125))
    assert estimate_ratio(num, den, two[:1], 0.9, "percentile").bootstrap_se == 0.0
    pair = ((num, den), (num, den))
    assert paired_difference(*pair, (two, two[::-1]), 0.9, "percentile").bootstrap_se == pytest.approx(math.sqrt(0.5))
    assert paired_difference(*pair, (two[:1], two[1:]), 0.9, "percentile").bootstrap_se == 0.0
    columns = [(num, den), (num, den)]
    (many,) = paired_differences(columns, np.array([two, two[::-1]]), [(0, 1)], 0.9, "percentile")
    assert many.bootstrap_se == pytest.approx(math.sqrt(0.5))
    (single,) = paired_differences(columns, np.array([two[:1], two[1:]]), [(0, 1)], 0.9, "percentile")
    assert single.bootstrap_se == 0.0


def test_wilson_of_no_trials_is_the_whole_range_and_of_all_successes_ends_at_one() -> None:
    assert wilson(0, 0, 0.95) == Interval(0.0, 1.0)
    # At 12 of 12 (90 %) the formula's upper end rounds to 1.0000000000000002; it is held at 1.
    assert wilson(12, 12, 0.9).high == 1.0


# --- the sentinels ------------------------------------------------------------------------------


def test_a_flipped_sentinel_names_what_it_guards_its_mode_instructions_both_verdicts_and_the_unicode() -> None:
    holds = _sentinel("holds", "a text that holds", {"strict": [True, True]})
    flips = _sentinel("flips", "a text that flips", {"strict": [True, False], "loose": [True, True]}, key=901)
    grader = Grader(
        {
            holds["response"]: {"strict": [True, True]},
            flips["response"]: {"strict": [False, False], "loose": [True, False]},
        }
    )
    found = check_sentinels({"sentinels": [holds, flips]}, grader, "15.1.0")
    where = {"sentinel": "flips", "guards": "what flips guards"}
    assert found == [  # the modes in order
        {
            **where,
            "mode": "loose",
            "instruction_id_list": TWO,
            "expected": [True, True],
            "got": [True, False],
            "problem": "sentinel flipped",
            "unicode": "15.1.0",
        },
        {
            **where,
            "mode": "strict",
            "instruction_id_list": TWO,
            "expected": [True, False],
            "got": [False, False],
            "problem": "sentinel flipped",
            "unicode": "15.1.0",
        },
    ]


def test_an_edited_sentinel_text_is_named_by_both_sha256_left_ungraded_and_the_next_still_checked() -> None:
    edited = {**_sentinel("edited", "the text as pinned", {"strict": [True, True]}), "response": "the text, edited"}
    flips = _sentinel("flips", "a text that flips", {"strict": [True, True]}, key=901)
    grader = Grader({flips["response"]: {"strict": [True, False]}})
    found = check_sentinels({"sentinels": [edited, flips]}, grader, "14.0.0")
    assert found[0] == {
        "sentinel": "edited",
        "guards": "what edited guards",
        "problem": "sentinel text differs",
        "expected_sha256": _sha("the text as pinned"),
        "got_sha256": _sha("the text, edited"),
    }
    assert [flip["sentinel"] for flip in found[1:]] == ["flips"]
    assert [response.text for _, response in grader.calls] == ["a text that flips"]


def test_each_sentinel_is_graded_as_sample_0_of_its_own_prompt_numbered_from_one() -> None:
    first = _sentinel("first", "first text", {"strict": [True, True]}, key=900)
    second = _sentinel("second", "second text", {"strict": [True, True]}, key=901)
    grader = Grader({"first text": {"strict": [True, True]}, "second text": {"strict": [True, True]}})
    assert check_sentinels({"sentinels": [first, second]}, grader, "14.0.0") == []
    seen = [
        (p.key, p.prompt, p.instruction_id_list, p.path, p.line, r.key, r.sample, r.text, r.line)
        for p, r in grader.calls
    ]
    assert seen == [
        (900, "prompt 900", tuple(TWO), "<canary sentinel>", 1, 900, 0, "first text", 1),
        (901, "prompt 901", tuple(TWO), "<canary sentinel>", 2, 901, 0, "second text", 2),
    ]


def test_a_canary_without_sentinels_checks_none() -> None:
    grader = Grader({})
    assert check_sentinels({"task": "ifeval", "items": []}, grader, "14.0.0") == []
    assert grader.calls == []


# One sentinel whose verdicts hang on the grader (IFBench's two pins) and on the Unicode version.
VERSIONED = _sentinel(
    "versioned",
    "a versioned text",
    {"strict": [True, True]},
    expected_by_unicode={"15.1.0": {"strict": [False, True]}},
    expected_by_grader={"v2": {"strict": [True, False]}},
)


def test_sentinel_expectations_are_the_graders_then_the_unicode_versions_then_the_pinned_environments() -> None:
    assert expected_verdicts(VERSIONED, "15.1.0", "v2") == {"strict": [True, False]}
    assert expected_verdicts(VERSIONED, "15.1.0", "v1") == {"strict": [False, True]}
    assert expected_verdicts(VERSIONED, "15.1.0") == {"strict": [False, True]}
    assert expected_verdicts(VERSIONED, "14.0.0", "v1") == {"strict": [True, True]}
    plain = _sentinel("plain", "plain", {"loose": [False, True]})
    assert expected_verdicts(plain, "15.1.0", "v2") == {"loose": [False, True]}


@pytest.mark.parametrize(
    ("version", "unicode", "verdicts"),
    [("v2", "15.1.0", [True, False]), ("v1", "15.1.0", [False, True]), ("v1", "14.0.0", [True, True])],
)
def test_a_sentinel_is_held_to_the_verdicts_for_the_grader_version_its_grade_names(
    version: str, unicode: str, verdicts: list[bool]
) -> None:
    canary = {"sentinels": [VERSIONED]}
    assert check_sentinels(canary, Grader({"a versioned text": {"strict": verdicts}}, version), unicode) == []
    wrong = [not verdicts[0], verdicts[1]]
    found = check_sentinels(canary, Grader({"a versioned text": {"strict": wrong}}, version), unicode)
    assert [(flip["expected"], flip["got"]) for flip in found] == [(verdicts, wrong)]


def test_a_gate_sentinel_is_held_to_the_gates_verdict() -> None:
    gate = _sentinel("gate", "نص عربي", {"gate": True})
    assert check_sentinels({"sentinels": [gate]}, Grader({"نص عربي": {"gate": True}}), "14.0.0") == []
    found = check_sentinels({"sentinels": [gate]}, Grader({"نص عربي": {"gate": False}}), "14.0.0")
    assert [(flip["mode"], flip["expected"], flip["got"]) for flip in found] == [("gate", True, False)]


# --- the canary's items -----------------------------------------------------------------------------


def _item(key: int, sample: int, text: str, **verdicts: Any) -> dict[str, Any]:
    return {"key": key, "sample": sample, "instruction_id_list": TWO, "response_sha256": _sha(text), **verdicts}


def _inputs(keys: list[int], texts: dict[tuple[int, int], str]) -> tuple[list[Prompt], list[Response]]:
    prompts = [prompt_from_record(_prompt_record(key), "prompts.jsonl", line) for line, key in enumerate(keys, 1)]
    responses = [Response(key=k, sample=s, text=t, line=i) for i, ((k, s), t) in enumerate(texts.items(), 1)]
    return prompts, responses


def test_the_canary_names_each_disagreeing_item_by_key_sample_mode_and_instruction_and_each_flipped_sentinel() -> None:
    canary = {
        "task": "ifeval",
        "items": [
            _item(1, 0, "one", strict=[True, False], loose=[True, True]),  # strict's second verdict differs
            _item(2, 0, "two as pinned", strict=[True, True]),  # the response file holds other text
            _item(3, 1, "three", strict=[True, True]),  # no sample 1 of prompt 3
            _item(4, 0, "four", strict=[True, True]),  # no prompt 4
            _item(5, 0, "five", strict=[True, True], gate=True),  # no loose verdicts pinned: loose not compared
            _item(6, 0, "six", loose=[True, True]),  # no strict verdicts pinned: loose still compared
        ],
        "sentinels": [
            _sentinel("zeta", "zeta text", {"strict": [True, True], "loose": [True, True]}, key=901),
            _sentinel("alpha", "alpha text", {"strict": [True, True]}, key=902),
        ],
    }
    prompts, responses = _inputs(
        [1, 2, 3, 5, 6],
        {(1, 0): "one", (2, 0): "two, edited", (3, 0): "three", (4, 0): "four", (5, 0): "five", (6, 0): "six"},
    )
    grader = Grader(
        {
            "one": {"strict": [True, True], "loose": [True, True]},
            "five": {"strict": [True, True], "loose": [False, False], "gate": False},
            "six": {"strict": [False, False], "loose": [True, False]},
            "zeta text": {"strict": [False, True], "loose": [True, False]},
            "alpha text": {"strict": [True, False]},
        }
    )
    verdict = check_canary(canary, grader, IFEVAL, prompts, responses, "14.0.0")
    assert verdict["disagreements"][:6] == [
        {
            "key": 1,
            "sample": 0,
            "mode": "strict",
            "index": 1,
            "instruction_id": TWO[1],
            "expected": False,
            "got": True,
            "problem": "grade differs",
        },
        {
            "key": 2,
            "sample": 0,
            "problem": "response text differs",
            "expected_sha256": _sha("two as pinned"),
            "got_sha256": _sha("two, edited"),
        },
        {"key": 3, "sample": 1, "problem": "response or prompt missing"},
        {"key": 4, "sample": 0, "problem": "response or prompt missing"},
        {
            "key": 5,
            "sample": 0,
            "mode": "gate",
            "expected": True,
            "got": False,
            "rule": "the response is in Arabic letters",
            "problem": "gate verdict differs",
        },
        {
            "key": 6,
            "sample": 0,
            "mode": "loose",
            "index": 1,
            "instruction_id": TWO[1],
            "expected": True,
            "got": False,
            "problem": "grade differs",
        },
    ]
    assert [(d["sentinel"], d["mode"]) for d in verdict["disagreements"][6:]] == [
        ("zeta", "loose"),
        ("zeta", "strict"),
        ("alpha", "strict"),
    ]
    assert {k: v for k, v in verdict.items() if k != "disagreements"} == {
        "task": "ifeval",
        "items": 6,
        "passed": False,
        "sentinels": 2,
        "sentinels_flipped": ["alpha", "zeta"],
    }
    assert [(p.key, r.key, r.sample) for p, r in grader.calls[:2]] == [(1, 1, 0), (5, 5, 0)]


def test_a_canary_whose_every_item_and_sentinel_agrees_passes() -> None:
    canary = {
        "task": "ifeval",
        "items": [_item(1, 0, "one", strict=[True, False], loose=[True, True], gate=False)],
        "sentinels": [],
    }
    prompts, responses = _inputs([1], {(1, 0): "one"})
    grader = Grader({"one": {"strict": [True, False], "loose": [True, True], "gate": False}})
    verdict = check_canary(canary, grader, IFEVAL, prompts, responses, "14.0.0")
    assert verdict == {
        "task": "ifeval",
        "items": 1,
        "passed": True,
        "disagreements": [],
        "sentinels": 0,
        "sentinels_flipped": [],
    }
    no_sentinels = {"task": "ifeval", "items": canary["items"]}
    assert check_canary(no_sentinels, grader, IFEVAL, prompts, responses, "14.0.0")["sentinels"] == 0


def test_a_grader_giving_fewer_verdicts_than_the_item_pins_fails_the_canary_naming_the_counts() -> None:
    canary = {"task": "ifeval", "items": [_item(1, 0, "one", strict=[True, True])]}
    prompts, responses = _inputs([1], {(1, 0): "one"})
    verdict = check_canary(canary, Grader({"one": {"strict": [True]}}), IFEVAL, prompts, responses, "14.0.0")
    assert verdict["passed"] is False
    assert [(d["problem"], d["mode"], d["expected"], d["got"]) for d in verdict["disagreements"]] == [
        ("verdict count differs", "strict", 2, 1)
    ]


def test_an_inline_canarys_prompts_and_responses_are_numbered_from_one_as_canary_lines() -> None:
    items = [{"key": key, "sample": key % 2, "prompt": _prompt_record(key), "response": f"r{key}"} for key in (7, 8)]
    prompts, responses = inline_inputs({"items": items})
    assert [(p.key, p.path, p.line) for p in prompts] == [(7, "<canary>", 1), (8, "<canary>", 2)]
    assert responses == [Response(key=7, sample=1, text="r7", line=1), Response(key=8, sample=0, text="r8", line=2)]


class Grading:
    """A task's grading as the canary asks it: one grade function and the environment it records."""

    def __init__(self, grade: Grader, environment: dict[str, Any]) -> None:
        self.grade, self.environment = grade, environment
        self.asked: list[Path | None] = []

    def canary_grader(self, responses: Path | None) -> tuple[Grader, dict[str, Any]]:
        self.asked.append(responses)
        return self.grade, self.environment


def _unicode_sentinel() -> dict[str, Any]:
    """A sentinel whose verdict under this Python's Unicode version differs from the pinned one."""
    return _sentinel(
        "unicode",
        "unicode text",
        {"strict": [True, True]},
        expected_by_unicode={unicode_version(): {"strict": [False, False]}},
    )


def test_the_canary_grades_in_this_pythons_unicode_and_records_the_environment_and_sensitive_versions() -> None:
    canary = {"task": "ifeval", "items": [_item(1, 0, "one", strict=[True, True])], "sentinels": [_unicode_sentinel()]}
    prompts, responses = _inputs([1], {(1, 0): "one"})
    grading = Grading(
        Grader({"one": {"strict": [True, True]}, "unicode text": {"strict": [False, False]}}), {"python": "3.x"}
    )
    verdict = run_canary(canary, grading, IFEVAL, prompts, responses, Path("canary_responses.jsonl"))
    assert grading.asked == [Path("canary_responses.jsonl")]
    assert verdict["passed"] and verdict["environment"] == {"python": "3.x"}
    assert verdict["versions"] == sensitive_versions()


# --- what a verdict says ------------------------------------------------------------------------------


def test_a_passing_verdict_is_one_line_of_responses_and_sentinels() -> None:
    verdict = {"passed": True, "items": 20, "sentinels": 8, "disagreements": []}
    assert explain(verdict, "ifeval", Path("out.json")) == [
        "canary ifeval: 20 responses regraded, all agree; 8 environment sentinels hold"
    ]


def test_a_failed_verdict_names_the_count_the_file_each_flipped_sentinel_and_the_versions_found() -> None:
    verdict = {
        "passed": False,
        "items": 20,
        "sentinels": 8,
        "disagreements": [
            {"key": 1, "sample": 0, "problem": "response or prompt missing"},
            {"sentinel": "quote", "guards": "nltk's splitting", "expected": [True], "got": [False]},
        ],
        "versions": {"nltk": "3.9.1", "python": "3.11.7"},
    }
    assert explain(verdict, "ifeval", Path("out.json")) == [
        "ifaudit: CANARY FAILED for ifeval: 2 disagreements (see out.json); runs graded in this environment will not count",
        "ifaudit: sentinel quote flipped (expected [True], got [False]); it guards nltk's splitting",
        "ifaudit: found nltk 3.9.1, python 3.11.7",
    ]
    items_only = {**verdict, "disagreements": verdict["disagreements"][:1]}
    assert explain(items_only, "ifeval", Path("out.json")) == [
        "ifaudit: CANARY FAILED for ifeval: 1 disagreements (see out.json); runs graded in this environment will not count"
    ]


def test_failure_reason_names_the_disagreements_then_each_environment_difference() -> None:
    differences = [{"problem": "grading environments differ: nltk 3.9.1 vs 3.10.4"}, {"problem": "p2"}]
    assert failure_reason({"disagreements": [{}, {}, {}]}) == "3 disagreements"
    assert failure_reason({"disagreements": [], "environment_differences": differences}) == (
        "grading environments differ: nltk 3.9.1 vs 3.10.4; p2"
    )
    assert failure_reason({"disagreements": [{}], "environment_differences": differences[1:]}) == "1 disagreements; p2"
    assert failure_reason({"disagreements": []}) == "no reason recorded"


def test_the_combined_line_says_passed_or_why_it_failed_and_names_the_file() -> None:
    assert (
        combined_line({"passed": True}, 3, Path("canary.json"))
        == "canary of 3 grading processes: passed -> canary.json"
    )
    assert combined_line({"passed": False, "disagreements": [{}, {}]}, 2, Path("canary.json")) == (
        "canary of 2 grading processes: FAILED (2 disagreements): "
        "runs graded by these processes will not count -> canary.json"
    )


# --- environments -------------------------------------------------------------------------------------

SHA_A, SHA_B = "a" * 64, "0123456789abcdef" * 4


def test_a_fingerprint_leaf_is_named_by_package_by_grader_file_else_by_its_keys() -> None:
    assert leaf_name(("packages", "nltk")) == "nltk"
    assert leaf_name(("packages", "nltk", "data")) == "packages nltk data"
    assert leaf_name(("grader", "file_sha256", "x/instructions.py")) == "x/instructions.py sha256"
    assert leaf_name(("grader", "file_sha256")) == "grader file_sha256"
    assert leaf_name(("grader", "version", "x")) == "grader version x"
    assert leaf_name(("python",)) == "python"
    assert leaf_name(("nltk_data", "punkt_tab")) == "nltk_data punkt_tab"


def test_fingerprint_leaves_are_keyed_by_their_path_of_keys_even_with_dots() -> None:
    environment = {"python": "3.11.7", "packages": {"nltk": "3.9.1", "a.b": {"c": 1}}, "empty": {}}
    assert environment_leaves(environment) == {
        ("python",): "3.11.7",
        ("packages", "nltk"): "3.9.1",
        ("packages", "a.b", "c"): 1,
    }


def test_environment_differences_list_each_differing_leaf_in_path_order_with_absent_for_a_missing_one() -> None:
    first = {"python": "3.11.7", "packages": {"nltk": "3.9.1", "regex": "2024.1"}, "threads": 1, "cuda": None}
    other = {"python": "3.11.7", "packages": {"nltk": "3.10.4", "langdetect": "1.0.9"}, "threads": 1, "gpu": None}
    assert environment_differences(first, other) == [
        {"what": "cuda", "first": None, "other": "absent"},
        {"what": "gpu", "first": "absent", "other": None},
        {"what": "langdetect", "first": "absent", "other": "1.0.9"},
        {"what": "nltk", "first": "3.9.1", "other": "3.10.4"},
        {"what": "regex", "first": "2024.1", "other": "absent"},
    ]
    assert environment_differences(first, dict(first)) == []


def _verdict(environment: dict[str, Any], disagreements: list[dict[str, Any]], flipped: list[str]) -> dict[str, Any]:
    return {
        "task": "ifeval",
        "items": 20,
        "passed": not disagreements,
        "disagreements": disagreements,
        "sentinels": 8,
        "sentinels_flipped": flipped,
        "environment": environment,
    }


ENV = {"grader": {"file_sha256": {"x/instructions.py": SHA_A}}, "packages": {"nltk": "3.9.1"}, "threads": 1}


def test_processes_that_wrote_the_same_verdict_combine_into_those_very_bytes() -> None:
    data = json.dumps(_verdict(ENV, [], []), indent=1).encode()
    assert combine_verdicts({"a.json": data, "b.json": data}) == data
    with pytest.raises(InputError, match="no canary verdicts to combine"):
        combine_verdicts({})


def test_combined_disagreements_are_listed_once_each_with_the_files_that_report_them() -> None:
    d1, d2 = {"key": 1, "problem": "grade differs"}, {"key": 2, "problem": "grade differs"}
    a = _verdict(ENV, [d1], ["zeta"])
    b = _verdict(ENV, [{"problem": "grade differs", "key": 1}, d2], ["alpha"])  # d1, its keys in another order
    combined = json.loads(combine_verdicts({"a.json": json.dumps(a).encode(), "b.json": json.dumps(b).encode()}))
    assert combined == {
        **a,
        "passed": False,
        "disagreements": [{**d1, "in": ["a.json", "b.json"]}, {**d2, "in": ["b.json"]}],
        "sentinels_flipped": ["alpha", "zeta"],
    }


def test_verdicts_that_differ_only_in_their_bytes_combine_into_a_pass() -> None:
    verdict = _verdict(ENV, [], [])
    combined = json.loads(
        combine_verdicts({"a.json": json.dumps(verdict).encode(), "b.json": json.dumps(verdict, indent=2).encode()})
    )
    assert combined == verdict


def test_a_process_graded_in_another_environment_fails_the_task_naming_each_differing_leaf_and_both_values() -> None:
    other = {"grader": {"file_sha256": {"x/instructions.py": SHA_B}}, "packages": {"nltk": "3.10.4"}, "threads": 2}
    verdicts = {
        "a.json": json.dumps(_verdict(ENV, [], [])).encode(),
        "b.json": json.dumps(_verdict(other, [], [])).encode(),
        "c.json": json.dumps(_verdict(other, [], []), indent=1).encode(),
    }
    combined = json.loads(combine_verdicts(verdicts))
    assert combined["passed"] is False and combined["disagreements"] == []
    assert combined["environment_differences"] == [
        {
            "problem": "grading environments differ: x/instructions.py sha256 aaaaaaaaaaaa… vs 0123456789ab…, "
            "nltk 3.9.1 vs 3.10.4, threads 1 vs 2",
            "differs": [
                {"what": "x/instructions.py sha256", "first": SHA_A, "other": SHA_B},
                {"what": "nltk", "first": "3.9.1", "other": "3.10.4"},
                {"what": "threads", "first": 1, "other": 2},
            ],
            "compared_with": "a.json",
            "in": ["b.json", "c.json"],
        }
    ]


def test_a_leaf_value_is_shown_whole_unless_it_is_a_sha256() -> None:
    near = {"packages": {"a": "A" * 64, "b": "a" * 63, "c": "X" * 64, "d": None, "e": True}}
    base = {"packages": {"a": "x", "b": "x", "c": "x", "d": "x", "e": "x"}}
    problem = json.loads(
        combine_verdicts(
            {
                "a.json": json.dumps(_verdict(base, [], [])).encode(),
                "b.json": json.dumps(_verdict(near, [], [])).encode(),
            }
        )
    )["environment_differences"][0]["problem"]
    assert (
        problem
        == f"grading environments differ: a x vs {'A' * 64}, b x vs {'a' * 63}, c x vs {'X' * 64}, d x vs null, e x vs true"
    )


def test_a_combined_verdict_combined_again_keeps_the_differences_it_records_under_its_own_name() -> None:
    recorded = {
        "problem": "grading environments differ: nltk 3.9.1 vs 3.10.4",
        "differs": [],
        "compared_with": "p1.json",
        "in": ["p2.json"],
    }
    earlier = {**_verdict(ENV, [], []), "passed": False, "environment_differences": [recorded]}
    verdicts = {"task1.json": json.dumps(earlier).encode(), "task2.json": json.dumps(_verdict(ENV, [], [])).encode()}
    combined = json.loads(combine_verdicts(verdicts))
    assert combined["passed"] is False
    assert combined["environment_differences"] == [{**recorded, "in": ["task1.json"]}]
    # The same difference recorded by two combined verdicts (of other files, its keys in another
    # order) is one difference, named by both.
    again = {**recorded, "in": ["p3.json"]}
    other = {**earlier, "environment_differences": [dict(reversed(again.items()))]}
    verdicts["task2.json"] = json.dumps(other).encode()
    combined = json.loads(combine_verdicts(verdicts))
    assert combined["environment_differences"] == [{**recorded, "in": ["task1.json", "task2.json"]}]


# --- certify and selfcheck: the verdict written, the lines said, the answer returned -----------------


def _inline_canary(path: Path, agrees: bool) -> tuple[Grading, Path]:
    item = {**_item(1, 0, "one", strict=[True, True]), "prompt": _prompt_record(1), "response": "one"}
    path.write_text(json.dumps({"task": "ifeval", "items": [item], "sentinels": []}))
    return Grading(Grader({"one": {"strict": [True, agrees]}}), {"python": "3.x"}), path


def test_certify_writes_the_verdict_says_it_on_stderr_and_returns_whether_it_passed(tmp_path: Path, capsys) -> None:
    grading, canary = _inline_canary(tmp_path / "canary.json", agrees=True)
    out = tmp_path / "verdict.json"
    assert certify(IFEVAL, grading, canary, None, None, out, "--", already_read=([], [])) is True
    verdict = json.loads(out.read_text())
    assert verdict["passed"] and verdict["items"] == 1 and verdict["environment"] == {"python": "3.x"}
    assert capsys.readouterr().err == "canary ifeval: 1 responses regraded, all agree; 0 environment sentinels hold\n"
    grading, canary = _inline_canary(tmp_path / "canary.json", agrees=False)
    assert certify(IFEVAL, grading, canary, None, None, out, "--") is False
    assert json.loads(out.read_text())["disagreements"][0]["problem"] == "grade differs"
    assert capsys.readouterr().err.startswith(f"ifaudit: CANARY FAILED for ifeval: 1 disagreements (see {out})")


def test_certify_grades_a_dataset_canary_on_the_records_already_read_and_asks_for_its_files_otherwise(
    tmp_path: Path,
) -> None:
    canary = {
        "task": "ifeval",
        "prompts": {"dataset": "the_prompts"},
        "responses": {"dataset": "the_responses"},
        "items": [_item(1, 0, "one", strict=[True, True])],
    }
    (tmp_path / "canary.json").write_text(json.dumps(canary))
    grading = Grading(Grader({"one": {"strict": [True, True]}}), {})
    read = _inputs([1], {(1, 0): "one"})
    out = tmp_path / "verdict.json"
    given = tmp_path / "responses.jsonl"
    assert certify(IFEVAL, grading, tmp_path / "canary.json", None, given, out, "--", already_read=read) is True
    assert grading.asked == [given]
    with pytest.raises(IfauditError) as caught:
        certify(IFEVAL, grading, tmp_path / "canary.json", None, given, out, "--canary-")
    assert str(caught.value) == (
        "the ifeval canary needs --canary-prompts and --canary-responses (its datasets: the_prompts, the_responses)"
    )


class SelfcheckTask:
    """IFEval as selfcheck sees it, loading the hand-set grading instead of the grader."""

    def __init__(self, grading: Grading) -> None:
        self.name, self.modes, self.grading = IFEVAL.name, IFEVAL.modes, grading
        self.read: list[Path] = []
        self.options: list[GradingOptions] = []

    def read_prompts(self, path: Path) -> list[Prompt]:
        self.read.append(path)
        return IFEVAL.read_prompts(path)

    def load(self, options: GradingOptions) -> Grading:
        self.options.append(options)
        return self.grading


def _canary_datasets(folder: Path, canary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The canary's 20 prompts and responses out of the shared files, as a config's datasets
    (pinned by sha256, found under the mirror folder `folder`): what selfcheck fetches."""
    keys = {item["key"] for item in canary["items"]}
    prompts = [line for line in IFEVAL_PROMPTS.read_text().splitlines() if json.loads(line)["key"] in keys]
    texts = {json.loads(line)["prompt"] for line in prompts}
    responses = [line for line in GPT4_RESPONSES.read_text().splitlines() if json.loads(line)["prompt"] in texts]
    datasets = {}
    for role, lines in (("prompts", prompts), ("responses", responses)):
        data = ("\n".join(lines) + "\n").encode()
        (folder / f"{role}.jsonl").write_bytes(data)
        datasets[canary[role]["dataset"]] = {"mirror": f"{role}.jsonl", "sha256": hashlib.sha256(data).hexdigest()}
    return datasets


def test_selfcheck_fetches_the_canarys_datasets_verified_from_the_configs_sources_and_certifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "scratch"

    def mkdtemp(prefix: str) -> str:
        scratch.mkdir()
        return str(scratch)

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    canary = load_canary("ifeval")
    by_key = {item["key"]: item for item in canary["items"]}
    by_text = {s["response"]: expected_verdicts(s, unicode_version()) for s in canary["sentinels"]}
    fetch_records: list[dict[str, Any]] = []

    def grade(prompt: Prompt, response: Response) -> dict[str, Any]:  # the reference's verdicts
        if not fetch_records:  # while selfcheck runs, its scratch folder holds what it fetched
            fetch_records.append(json.loads((scratch / "gpt4_responses.json").read_text()))
        if response.text in by_text:
            return {mode: {"follow_instruction_list": v} for mode, v in by_text[response.text].items()}
        return {mode: {"follow_instruction_list": by_key[response.key][mode]} for mode in ("strict", "loose")}

    datasets = _canary_datasets(tmp_path, canary)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"datasets": datasets}))
    task = SelfcheckTask(Grading(grade, {}))
    options = GradingOptions(resources=tmp_path / "resources", offline=True)
    out = tmp_path / "verdict.json"
    assert selfcheck(task, config, tmp_path, options, out) is True
    assert task.options == [options]
    assert task.read == [tmp_path / "scratch/ifeval_prompts_github.jsonl"]
    assert task.grading.asked == [tmp_path / "scratch/gpt4_responses.jsonl"]
    assert json.loads(out.read_text())["items"] == 20
    assert [(record["name"], record["pinned"]) for record in fetch_records] == [("gpt4_responses", True)]
    assert not scratch.exists()  # the scratch folder removed once the verdict is written
    # A dataset whose bytes are not the pinned ones is refused, never graded.
    datasets["gpt4_responses"]["sha256"] = "0" * 64
    config.write_text(yaml.safe_dump({"datasets": datasets}))
    with pytest.raises(VerificationError):
        selfcheck(task, config, tmp_path, options, out)
    assert not scratch.exists()  # and removed when the check fails


@pytest.mark.parametrize(
    ("content", "cause"),
    [
        (b"\xff\xfe", "UnicodeDecodeError"),
        (b"runs: {}\n", "KeyError"),
        (b"[1]\n", "TypeError"),
        (b"a: [\n", "ParserError"),
    ],
)
def test_selfcheck_refuses_a_config_without_datasets_in_one_line_naming_it(
    tmp_path: Path, content: bytes, cause: str
) -> None:
    config = tmp_path / "config.yaml"
    config.write_bytes(content)
    options = GradingOptions(resources=tmp_path / "resources", offline=True)
    with pytest.raises(InputError) as caught:
        selfcheck(SelfcheckTask(Grading(Grader({}), {})), config, DATA, options, tmp_path / "out.json")
    assert str(caught.value) == f"{config}: not a config with datasets ({cause})"
