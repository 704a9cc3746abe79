"""Behaviours `make mutation` found unpinned: each test here failed against a surviving mutant of
the module it names (tests/mutation_survivors.md lists the survivors left, and why). Expected
values come from arithmetic done by hand or from a second route through the code (the Fraction
formula for the vectorised SE), never from the code under test restated."""

from __future__ import annotations

import hashlib
import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from ifaudit.core.agreement import majority_label, wpld
from ifaudit.core.difference import first_difference
from ifaudit.core.errors import InputError, VerificationError
from ifaudit.core.metrics import MetricSpec, ScoreTable, accuracies, ifeval_metrics
from ifaudit.core.stats import _exact_dot, bca_interval, paired_differences, percentile_interval
from ifaudit.steps.grading.passes import PassOutputs, parse_shard, verify_passes

# --- passes: shard specs and the first difference of two passes ---------------------------------


def test_shard_spec_index_counts_from_zero() -> None:
    assert parse_shard("0/1") == (0, 1)
    assert parse_shard("2/8") == (2, 8)
    with pytest.raises(InputError):
        parse_shard("8/8")


def _outs(tmp_path: Path) -> PassOutputs:
    return PassOutputs(tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "grades.jsonl", tmp_path / "check.json")


def _shards(tmp_path: Path, name: str, *contents: bytes) -> list[Path]:
    paths = []
    for index, content in enumerate(contents):
        path = tmp_path / f"{name}.{index}.jsonl"
        path.write_bytes(content)
        paths.append(path)
    return paths


def test_a_pass_cut_short_is_named_at_its_first_missing_line(tmp_path: Path) -> None:
    # Records with spaces in them (JSON as written): the lines are split at newlines only.
    whole = b'{"key": 1, "ok": true}\n{"key": 2, "ok": false}\n{"key": 3, "ok": true}'
    cut = whole.rsplit(b"\n", 1)[0]
    with pytest.raises(VerificationError, match=r"first differ at line 3;"):
        verify_passes(_shards(tmp_path, "first", whole), _shards(tmp_path, "second", cut), _outs(tmp_path))


def test_differing_passes_are_named_by_their_shards(tmp_path: Path) -> None:
    first = _shards(tmp_path, "first", b'{"key": 1}\n')
    second = _shards(tmp_path, "second", b'{"key": 2}\n', b"", b"")
    with pytest.raises(VerificationError) as caught:
        verify_passes(first, second, _outs(tmp_path))
    message = str(caught.value)
    assert f"grading passes differ: {first[0]} (sha256" in message
    assert f"and {second[0]} and 2 more shards (sha256" in message
    assert "first differ at line 1;" in message


def test_agreeing_passes_record_the_sha256_of_their_bytes(tmp_path: Path) -> None:
    content = b'{"key": 1}\n{"key": 2}\n'
    outs = _outs(tmp_path)
    digest = verify_passes(_shards(tmp_path, "first", content), _shards(tmp_path, "second", content), outs)
    expected = hashlib.sha256(content).hexdigest()
    record = json.loads(outs.record.read_text())
    assert digest == expected == record["sha256"]
    assert record["passes"] == {"a.jsonl": expected, "b.jsonl": expected}
    assert record["records"] == 2


# --- metrics --------------------------------------------------------------------------------------


def test_gated_ifeval_metrics_are_all_gated() -> None:
    specs = ifeval_metrics(gated=True, suffix="_gated")
    assert [spec.name for spec in specs] == [
        "prompt_level_strict_gated_acc",
        "inst_level_strict_gated_acc",
        "prompt_level_loose_gated_acc",
        "inst_level_loose_gated_acc",
    ]
    assert all(spec.gated for spec in specs)


def test_accuracy_totals_are_whole_numbers_and_an_empty_metric_is_zero() -> None:
    # Two prompts with two samples each (scale 2), and a subset no prompt belongs to.
    tables = {
        "some": ScoreTable(keys=(1, 2), samples=(2, 2), scale=2, num=(2, 1), den=(2, 2)),
        "none": ScoreTable(keys=(1, 2), samples=(2, 2), scale=2, num=(0, 0), den=(0, 0)),
    }
    written = json.dumps(accuracies(tables), sort_keys=True)
    assert written == json.dumps(
        {
            "none": {"correct": 0, "total": 0, "value": 0.0},
            "some": {"correct": "3/2", "total": 2, "value": 0.75},
        },
        sort_keys=True,
    )
    assert MetricSpec("x", "strict", "prompt").title == "prompt-level strict"


# --- stats ----------------------------------------------------------------------------------------


def test_bca_with_an_estimate_above_every_replicate_stays_finite() -> None:
    # Every replicate below the estimate: the bias term's share is 1, clamped below 1 (an
    # inverse normal of 1 is infinite), so the interval is the replicates' top.
    replicates = np.array([0.1, 0.2, 0.3, 0.4])
    bound = bca_interval(replicates, 0.9, np.array([0.5, 0.6, 0.7]), 0.9)
    assert math.isfinite(bound.low) and math.isfinite(bound.high)
    assert bound.high == pytest.approx(0.4)


def test_bca_with_no_acceleration_and_an_unbiased_estimate_is_the_percentile_interval() -> None:
    # Jackknife values all equal: no acceleration (0/0 taken as 0). The estimate is the median of
    # the replicates, so the bias term is 0 too, and BCa reduces to the percentile interval.
    replicates = np.arange(1, 100) / 100
    bca = bca_interval(replicates, 0.5, np.full(5, 0.5), 0.9)
    percentile = percentile_interval(replicates, 0.9)
    assert bca.low == pytest.approx(percentile.low) and bca.high == pytest.approx(percentile.high)
    assert (percentile.low, percentile.high) == pytest.approx((0.059, 0.941))


def test_paired_clustered_se_is_exact_for_sums_past_int64() -> None:
    # Per-prompt numerators near 2**40 over 2**23 prompts' worth of denominator: the influence
    # terms pass 2**62, so they are taken as Python integers; the SE is the Fraction formula's.
    big = 2**40
    a = (np.array([big, 0, big, big], dtype=np.int64), np.array([2**23] * 4, dtype=np.int64))
    b = (np.array([0, big, big, 0], dtype=np.int64), np.array([2**23] * 4, dtype=np.int64))
    replicates = np.array([[0.1, 0.2, 0.3], [0.2, 0.1, 0.0]])
    (difference,) = paired_differences([a, b], replicates, [(0, 1)], 0.9, "percentile")

    def influences(num: np.ndarray, den: np.ndarray) -> list[int]:
        total, correct = sum(int(d) for d in den), sum(int(n) for n in num)
        return [int(n) * total - correct * int(d) for n, d in zip(num, den)]

    total_a, total_b = int(a[1].sum()), int(b[1].sum())
    squares = sum((u * total_b**2 - v * total_a**2) ** 2 for u, v in zip(influences(*a), influences(*b), strict=True))
    assert difference.clustered_se == math.sqrt(Fraction(squares, (total_a * total_b) ** 4))
    assert difference.clustered_se > 0


def test_integer_dot_products_past_int64_are_exact() -> None:
    # 2 x (3e9)² = 1.8e19 and 2**32 x 2**31 = 2**63 both pass int64's largest value (2**63 - 1).
    wide = np.array([3 * 10**9, 3 * 10**9], dtype=np.int64)
    assert _exact_dot(wide, wide) == 2 * (3 * 10**9) ** 2
    assert _exact_dot(np.array([2**32], dtype=np.int64), np.array([2**31], dtype=np.int64)) == 2**63


# --- agreement ------------------------------------------------------------------------------------


def test_agreement_label_errors_name_the_side_at_fault() -> None:
    with pytest.raises(ValueError, match=r"^item 1: predicted: label 5 "):
        wpld([0, 5], [0, 0])
    with pytest.raises(ValueError, match=r"^labels: label 7 "):
        majority_label([0, 7])


# --- difference: the first difference of a bundled file and its recomputation ----------------------


def test_first_difference_shows_json_values_with_sorted_keys_and_unescaped() -> None:
    recomputed = json.dumps({"x": {"b": 1, "a": "é"}}).encode()
    bundled = json.dumps({"x": 3}).encode()
    assert first_difference(recomputed, bundled, "t.json") == 'field x: recomputed {"a": "é", "b": 1}, bundled 3'


def test_first_difference_shows_a_60_character_value_whole_and_a_longer_one_cut() -> None:
    sixty, longer = "v" * 60, "w" * 61
    assert first_difference(json.dumps([sixty]).encode(), json.dumps([longer]).encode(), "t.json") == (
        f"field [0]: recomputed {sixty}, bundled {'w' * 59}…"
    )


def test_first_difference_names_the_kind_change_and_the_side_a_field_is_only_in() -> None:
    assert first_difference(b'{"a": {"k": 1}}', b'{"a": [1]}', "t.json") == 'field a: recomputed {"k": 1}, bundled [1]'
    assert first_difference(b'{"a": [1]}', b'{"a": "x"}', "t.json") == "field a: recomputed [1], bundled x"
    assert first_difference(b'{"a": 1, "b": 2}', b'{"a": 1}', "t.json") == "field b: only in the recomputed file"
    assert first_difference(b'{"a": 1}', b'{"a": 1, "b": 2}', "t.json") == "field b: only in the bundled file"
    assert first_difference(b"1", b"2", "t.json") == "field (the document): recomputed 1, bundled 2"


def test_first_difference_looks_past_an_equal_list() -> None:
    assert first_difference(b'{"a": [1, 2], "b": 1}', b'{"a": [1, 2], "b": 2}', "t.json") == (
        "field b: recomputed 1, bundled 2"
    )


def test_first_difference_of_text_lines_that_are_not_utf8_is_shown_replaced() -> None:
    assert first_difference(b"same\n\xff\xfe\n", b"same\nok\n", "t.txt") == "line 2: recomputed '��', bundled 'ok'"


# --- errors: the one line a user reads -------------------------------------------------------------


def test_input_error_line_names_file_line_field_and_hint_in_order() -> None:
    full = InputError("not a number", path=Path("data/p.jsonl"), line=3, field="key", hint="use digits")
    assert str(full) == "data/p.jsonl:3: field 'key': not a number (hint: use digits)"
    assert full.args == (str(full),)
    assert (full.path, full.line, full.field, full.hint) == ("data/p.jsonl", 3, "key", "use digits")
    assert str(InputError("empty", path="p.jsonl")) == "p.jsonl: empty"
    assert str(InputError("bare")) == "bare"


# --- claims: the audit of a harness's verdicts and reported figures, in process -------------------------


def _ifeval_responses() -> dict[int, str]:
    """The committed GPT-4 responses by prompt key (the response file names prompts by text)."""
    from conftest import IFEVAL_PROMPTS, read_jsonl

    keys = {row["prompt"]: row["key"] for row in read_jsonl(IFEVAL_PROMPTS)}
    responses = IFEVAL_PROMPTS.with_name("input_response_data_gpt4_20231107_145030.jsonl")
    return {keys[row["prompt"]]: row["response"] for row in read_jsonl(responses)}


def _first_prompts_and_grades(count: int) -> tuple[list, list[dict]]:
    from conftest import IFEVAL_PROMPTS, REFERENCE_GRADES, read_jsonl
    from ifaudit.io.prompts import read_prompts

    prompts = read_prompts(IFEVAL_PROMPTS)[:count]
    keys = {p.key for p in prompts}
    return prompts, [{**g, "sample": 0} for g in read_jsonl(REFERENCE_GRADES) if g["key"] in keys]


# One test per audit: mutmut credits a function to the first test that reaches it, so assertions
# on one shared audit spread over several tests would not be run against its mutants.


def test_claims_audit_of_one_flipped_verdict_sets_each_figure_beside_the_harness_and_explains_it(upstream) -> None:
    """The first 60 IFEval prompts (43 followed all strictly), graded as the reference, against a
    harness whose verdicts are the same but for one: prompt 1005's only instruction (12
    placeholders, deterministic), strict, said not followed; and a sample 1 of 1005 nobody graded.
    Reported: the strict prompt-level figure its verdicts give (42/60 = 0.7), a loose one they do
    not (0.99), and the loose instruction-level one they give (76/93)."""
    from ifaudit.steps.auditing.claims import HarnessVerdicts, audit_claims
    from ifaudit.steps.grading.analysis import Settings

    prompts, grades = _first_prompts_and_grades(60)
    responses = {(key, 0): text for key, text in _ifeval_responses().items()}
    harness = _judged_as(grades)
    flipped = next(i for i, h in enumerate(harness) if h.key == 1005)
    assert grades[flipped]["strict"]["follow_instruction_list"] == [True]
    harness[flipped] = HarnessVerdicts(1005, 0, {"strict": [False], "loose": [True]}, None, None)
    harness.append(HarnessVerdicts(1005, 1, {"strict": [True], "loose": [True]}, None, None))
    reported = {"prompt_level_strict_acc": 0.7, "prompt_level_loose_acc": 0.99, "inst_level_loose_acc": 76 / 93}
    metrics = (*ifeval_metrics(), *ifeval_metrics(gated=True, suffix="_gated"))
    settings = Settings(resamples=200, seed=3)
    denominators = {60: "sixty", 97: "ninety-seven", 120: "hundred and twenty"}
    audit = audit_claims(upstream, metrics, prompts, grades, responses, harness, reported, settings, (), denominators)

    assert sorted(audit["metrics"]) == sorted(spec.name for spec in ifeval_metrics())  # ungated only
    assert audit["responses_with_harness_verdicts"] == 60
    assert audit["disagreements"] == [
        {
            "key": 1005,
            "sample": 0,
            "mode": "strict",
            "index": 0,
            "instruction_id": "detectable_content:number_placeholders",
            "harness": False,
            "pinned": True,
            "cause": "unexplained",
            "detail": "no regrading reproduces the harness's verdict",
        }
    ]
    assert audit["causes"] == {"unexplained": 1}
    assert audit["unexplained"] == 1
    strict = audit["metrics"]["prompt_level_strict_acc"]
    assert strict["title"] == "prompt-level strict"
    assert strict["reported"] == 0.7
    assert strict["audited"] == {"correct": 43, "total": 60, "value": 43 / 60}
    assert strict["recomputed_from_harness"] == {"correct": 42, "total": 60, "value": 42 / 60}
    assert strict["audited_minus_reported"] == pytest.approx(1 / 60, abs=1e-15)
    assert strict["audited_minus_claimed"]["value"] == pytest.approx(1 / 60, abs=1e-15)
    low, high = strict["audited_minus_claimed"]["ci_low"], strict["audited_minus_claimed"]["ci_high"]
    assert 0 <= low <= 1 / 60 <= high < 5 / 60  # one prompt differs: k/60 where k is how often it is drawn
    unreported = audit["metrics"]["inst_level_strict_acc"]
    assert unreported["reported"] is None and unreported["audited_minus_reported"] is None
    assert unreported["audited_minus_claimed"]["value"] == pytest.approx(1 / 93, abs=1e-15)
    assert audit["headline_mismatches"] == {
        "prompt_level_loose_acc": {"reported": 0.99, "recomputed_from_harness": 45 / 60}
    }
    assert audit["claimed_over"] == {
        "prompt_level_loose_acc": {"over": None, "data": "not k/n for exactly one data version: none fits"},
        "prompt_level_strict_acc": {"over": None, "data": "not k/n for exactly one data version: 60, 120"},
    }


def test_claims_audit_explains_verdicts_given_on_another_prompt_copy_or_on_the_reasoning_too(upstream) -> None:
    """Two real prompts whose harness verdicts each have a cause: 1005 judged on the harness's copy
    of the prompt asking for 40 placeholders (GPT-4's resume has 12 to 39), and 1000 answered with
    commas only in a reasoning block, its harness recording only the count it followed of the
    whole text (1 of 3, where the answer follows 2); and 1001 (no commas) answered with commas, its
    harness's count (1 of 1) reproduced by no regrading. Reported: 0.5 strict, which is 1/2 and no k/3."""
    from conftest import IFEVAL_PROMPTS, read_jsonl
    from ifaudit.io.prompts import read_prompts
    from ifaudit.steps.auditing.claims import HarnessVerdicts, audit_claims
    from ifaudit.steps.grading.analysis import Settings

    prompts = [p for p in read_prompts(IFEVAL_PROMPTS) if p.key in (1000, 1001, 1005)]
    doc = {**next(r for r in read_jsonl(IFEVAL_PROMPTS) if r["key"] == 1005), "kwargs": [{"num_placeholders": 40}]}
    thinking = "<think>First, plan it; then, write it, carefully.</think>An answer without a single comma."

    def record(key: int, followed: list[bool], **extra: object) -> dict:
        verdicts = {"follow_all_instructions": all(followed), "follow_instruction_list": followed}
        return {"key": key, "sample": 0, "strict": verdicts, "loose": verdicts, **extra}

    grades = [record(1000, [True, True, False], thinking_stripped=True), record(1001, [False]), record(1005, [True])]
    responses = {(1000, 0): thinking, (1001, 0): "Commas, here.", (1005, 0): _ifeval_responses()[1005]}
    harness = [
        HarnessVerdicts(
            1000, 0, {m: [False, True, False] for m in ("strict", "loose")}, None, None, per_instruction=False
        ),
        HarnessVerdicts(1005, 0, {"strict": [False], "loose": [False]}, None, doc),
        HarnessVerdicts(1001, 0, {m: [True] for m in ("strict", "loose")}, None, None, per_instruction=False),
    ]
    reported = {"prompt_level_strict_acc": 0.5}
    audit = audit_claims(
        upstream,
        ifeval_metrics(),
        prompts,
        grades,
        responses,
        harness,
        reported,
        Settings(resamples=50),
        (),
        {2: "two", 3: "three"},
    )

    thinking_detail = "the harness graded the reasoning text too; ifaudit grades the answer after it"
    assert audit["disagreements"] == [
        {
            "key": 1000,
            "sample": 0,
            "mode": mode,
            "index": 0,
            "instruction_id": "punctuation:no_comma",
            "harness": False,
            "pinned": True,
            "cause": "thinking_graded",
            "detail": thinking_detail + " (the harness recorded only counts)",
        }
        for mode in ("loose", "strict")
    ] + [
        {
            "key": 1005,
            "sample": 0,
            "mode": mode,
            "index": 0,
            "instruction_id": "detectable_content:number_placeholders",
            "harness": False,
            "pinned": True,
            "cause": "prompt_differs",
            "detail": "the harness's prompt differs in kwargs",
        }
        for mode in ("loose", "strict")
    ] + [
        {
            "key": 1001,
            "sample": 0,
            "mode": mode,
            "index": "",
            "instruction_id": "",
            "harness": "1 of 1 followed",
            "pinned": "0 of 1 followed",
            "cause": "unexplained",
            "detail": "1 of the count difference has no established cause",
        }
        for mode in ("loose", "strict")
    ]
    assert audit["causes"] == {"prompt_differs": 2, "thinking_graded": 2, "unexplained": 2}
    assert audit["unexplained"] == 2
    assert audit["claimed_over"] == {"prompt_level_strict_acc": {"over": 2, "correct": 1, "data": "two"}}


# --- analysis: statistics settings, what a run's statistics and a comparison name ------------------------


def test_statistics_settings_take_two_resamples_and_a_level_strictly_between_0_and_1() -> None:
    from ifaudit.steps.grading.analysis import Settings

    assert Settings(resamples=2).resamples == 2
    assert Settings(level=0.5).level == 0.5
    for bad in ({"resamples": 1}, {"level": 0.0}, {"level": 1.0}, {"level": 1.5}):
        with pytest.raises(InputError, match="need at least 2 resamples"):
            Settings(**bad)


@pytest.fixture(scope="module")
def ifeval_prompts_and_grades() -> tuple[list, list[dict]]:
    from conftest import IFEVAL_PROMPTS, REFERENCE_GRADES, read_jsonl
    from ifaudit.io.prompts import read_prompts

    return read_prompts(IFEVAL_PROMPTS), read_jsonl(REFERENCE_GRADES)


def test_run_statistics_name_the_task_settings_prompt_count_and_each_metric_title(ifeval_prompts_and_grades) -> None:
    from ifaudit.steps.grading.analysis import Settings, run_statistics
    from ifaudit.tasks.registry import TASKS

    prompts, grades = ifeval_prompts_and_grades
    result = run_statistics(TASKS["ifeval"], prompts, grades, Settings(resamples=20, seed=5))
    assert result["task"] == "ifeval"
    assert result["settings"] == {"resamples": 20, "level": 0.95, "method": "percentile", "seed": 5}
    assert result["prompts"] == 541
    assert {name: row["title"] for name, row in result["estimates"].items()} == {
        spec.name: spec.title for spec in TASKS["ifeval"].metrics
    }


def test_a_comparison_names_its_task_settings_and_prompt_count(ifeval_prompts_and_grades) -> None:
    from ifaudit.steps.grading.analysis import Settings, compare_runs
    from ifaudit.tasks.registry import TASKS

    prompts, grades = ifeval_prompts_and_grades
    result = compare_runs(TASKS["ifeval"], prompts, grades, prompts, grades, Settings(resamples=20, seed=5))
    assert {key: result[key] for key in ("task", "settings", "prompts")} == {
        "task": "ifeval",
        "settings": {"resamples": 20, "level": 0.95, "method": "percentile", "seed": 5},
        "prompts": 541,
    }
    assert sorted(result["a_minus_b"]) == sorted(spec.name for spec in TASKS["ifeval"].metrics)


def test_comparing_more_runs_than_one_batch_gives_each_pair_what_it_gives_alone(ifeval_prompts_and_grades) -> None:
    """34 runs, past the 32 whose bootstrap values are computed in one matrix product: run i says
    the first i of 60 prompts followed nothing, so every run differs from every other."""
    from ifaudit.steps.grading.analysis import Settings, compare_many, compare_runs
    from ifaudit.tasks.registry import TASKS

    prompts, grades = ifeval_prompts_and_grades
    prompts = prompts[:60]
    grades = [g for g in grades if g["key"] in {p.key for p in prompts}]
    nothing = {"follow_all_instructions": False}
    runs = {
        f"r{i}": [
            {
                **g,
                **{
                    m: {**nothing, "follow_instruction_list": [False] * len(g[m]["follow_instruction_list"])}
                    for m in ("strict", "loose")
                },
            }
            if position < i
            else g
            for position, g in enumerate(grades)
        ]
        for i in range(34)
    }
    pairs = [(f"r{i}", f"r{i + 1}") for i in range(33)]
    settings = Settings(resamples=20, seed=2)
    together = compare_many(TASKS["ifeval"], {name: (prompts, runs[name]) for name in runs}, pairs, settings)
    for i in (0, 31, 32):  # the first pair, and those with a run past the first batch
        a, b = pairs[i]
        assert together[i] == compare_runs(TASKS["ifeval"], prompts, runs[a], prompts, runs[b], settings)


def test_agreement_step_writes_the_summary_and_says_items_annotators_and_kappa(tmp_path: Path) -> None:
    """The four items of three raters whose kappa is 1/22 by hand (test_agreement), no gold."""
    from ifaudit.steps.grading.analysis import agreement_step

    table = [[1, 1, 1], [1, 1, 0], [0, 0, -1], [-1, 0, 1]]
    annotations = tmp_path / "annotations.jsonl"
    annotations.write_text("".join(json.dumps({"id": f"i{n}", "labels": row}) + "\n" for n, row in enumerate(table)))
    out = tmp_path / "agreement.json"
    line = agreement_step(annotations, out)
    assert line == f"4 items, 3 annotators: Fleiss' kappa {1 / 22}"
    assert json.loads(out.read_text()) == {"items": 4, "annotators": 3, "fleiss_kappa": 1 / 22, "wpld": None}


def _judged_as(grades: list[dict], follows: bool | None = None) -> list:
    """The harness's verdicts: the reference's, or every instruction `follows`."""
    from ifaudit.steps.auditing.claims import HarnessVerdicts

    def verdicts(g: dict, mode: str) -> list[bool]:
        given = g[mode]["follow_instruction_list"]
        return list(given) if follows is None else [follows] * len(given)

    return [HarnessVerdicts(g["key"], 0, {m: verdicts(g, m) for m in ("strict", "loose")}, None, None) for g in grades]


def test_reported_headline_rounded_to_any_number_of_decimals_is_not_flagged(ifeval_prompts_and_grades) -> None:
    """417/541 = 0.7707948...: written to 5 places (0.77079) it is 4.8e-6 off, inside half a unit of
    its last place (5e-6)."""
    from ifaudit.steps.auditing.claims import headline_mismatches

    prompts, grades = ifeval_prompts_and_grades
    spec = next(s for s in ifeval_metrics() if s.name == "prompt_level_strict_acc")
    for decimals in range(1, 8):
        assert headline_mismatches(prompts, _judged_as(grades), [spec], {spec.name: round(417 / 541, decimals)}) == {}


def test_reported_headline_written_in_exponent_form_is_held_to_1e9(ifeval_prompts_and_grades) -> None:
    """A harness whose verdicts give 0 reporting 1.2e-06 (Python writes it in exponent form, so its
    written decimals say nothing of its rounding) is flagged; 1e-10 is within 1e-9."""
    from ifaudit.steps.auditing.claims import headline_mismatches

    prompts, grades = ifeval_prompts_and_grades
    spec = next(s for s in ifeval_metrics() if s.name == "prompt_level_strict_acc")
    nothing = _judged_as(grades, follows=False)
    assert headline_mismatches(prompts, nothing, [spec], {spec.name: 1.2e-06}) == {
        spec.name: {"reported": 1.2e-06, "recomputed_from_harness": 0.0}
    }
    assert headline_mismatches(prompts, nothing, [spec], {spec.name: 1e-10}) == {}


def test_claims_audit_of_a_log_without_verdicts_pairs_nothing_and_flags_no_headline(upstream) -> None:
    """A batch file logs responses, no verdicts: the reported 0.5 is set beside the audit alone."""
    from ifaudit.steps.auditing.claims import audit_claims
    from ifaudit.steps.grading.analysis import Settings

    prompts, grades = _first_prompts_and_grades(3)
    reported = {"prompt_level_strict_acc": 0.5}
    audit = audit_claims(upstream, ifeval_metrics(), prompts, grades, {}, [], reported, Settings(resamples=20))
    assert audit["responses_with_harness_verdicts"] == 0
    assert audit["headline_mismatches"] == {} and audit["disagreements"] == [] and audit["causes"] == {}
    for row in audit["metrics"].values():
        assert row["recomputed_from_harness"] is None and row["audited_minus_claimed"] is None
