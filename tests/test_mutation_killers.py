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
