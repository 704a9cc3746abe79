"""The error bars against independent references, on the same resamples.

Everything the product computes here is recomputed by this file alone, from the prompt and grade
JSONL: the per-prompt scores by a plain reader (json and Fractions, no ifaudit.core.metrics), the
resamples from the seed with numpy's documented generator, the percentile interval by the
textbook linear interpolation between order statistics and by scipy.stats.bootstrap handed the
same bootstrap distribution, the BCa interval by scipy, and the clustered standard error by the
cluster-robust (CR0) sandwich formula for a mean, computed from per-observation residuals; the
per-type breakdown by counting, its intervals by Wilson's formula. The helpers are reused by
tests/test_independent_report_tables.py on the DAG's own outputs.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import scipy.stats

from conftest import IFEVAL_PROMPTS, REFERENCE_GRADES, read_jsonl
from ifaudit.io.prompts import read_prompts
from ifaudit.steps.grading.analysis import Settings, compare_runs, run_statistics
from ifaudit.tasks.registry import TASKS

# --- the independent reader: what each metric means, written from README and docs ---------------


@dataclass(frozen=True)
class Meaning:
    """A metric as the documentation defines it: the grading mode whose verdicts it counts
    (or "gate": the share of responses passing the language gate), prompt or instruction level,
    and whether a response failing the gate follows nothing."""

    mode: str
    level: str
    gated: bool = False


def _ifeval_four(gated: bool, suffix: str = "") -> dict[str, Meaning]:
    return {
        f"{level}_level_{mode}{suffix}_acc": Meaning(mode, level, gated)
        for mode in ("strict", "loose")
        for level in ("prompt", "inst")
    }


MEANINGS: dict[str, dict[str, Meaning]] = {
    "ifeval": _ifeval_four(gated=False),
    # The seed's langcheck task: IFEval's four names hold the gated values, `_ungated` beside them.
    "ifeval_langcheck": {
        **_ifeval_four(gated=True),
        **_ifeval_four(gated=False, suffix="_ungated"),
        "language_check_acc": Meaning("gate", "prompt"),
    },
}


def prompt_lists(path: Path) -> dict[Any, list[str]]:
    """Each prompt's instruction ids, by key, in file order."""
    return {record["key"]: record["instruction_id_list"] for record in read_jsonl(path)}


def responses_by_prompt(grades: Iterable[dict[str, Any]]) -> dict[Any, list[dict[str, Any]]]:
    by_key: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for record in grades:
        by_key[record["key"]].append(record)
    return by_key


def _verdicts(record: dict[str, Any], meaning: Meaning) -> list[bool]:
    if meaning.mode == "gate":
        return [record["gate"]["passed"]]
    verdicts = list(record[meaning.mode]["follow_instruction_list"])
    if meaning.gated and not record["gate"]["passed"]:
        return [False] * len(verdicts)
    return verdicts


def per_prompt_scores(
    prompts: dict[Any, list[str]], grades: Sequence[dict[str, Any]], meaning: Meaning
) -> list[tuple[Fraction, int]]:
    """(followed, out of) per prompt, in prompt order: a prompt's responses averaged; a prompt
    with no response follows nothing. Prompt level: out of 1; instruction level: out of its
    instruction count."""
    by_key = responses_by_prompt(grades)
    scores = []
    for key, instructions in prompts.items():
        records = by_key.get(key, [])
        if meaning.level == "prompt":
            passed = [all(_verdicts(record, meaning)) for record in records]
            scores.append((Fraction(sum(passed), len(records)) if records else Fraction(0), 1))
        else:
            followed = [sum(_verdicts(record, meaning)) for record in records]
            scores.append((Fraction(sum(followed), len(records)) if records else Fraction(0), len(instructions)))
    return scores


def counts(scores: Sequence[tuple[Fraction, int]]) -> tuple[Fraction, int]:
    """(correct, total) of a metric: the sums of its per-prompt scores."""
    return sum((followed for followed, _ in scores), Fraction(0)), sum(total for _, total in scores)


def integer_columns(scores: Sequence[tuple[Fraction, int]]) -> tuple[np.ndarray, np.ndarray]:
    """The per-prompt (followed, out of) scaled by the least common multiple of the followed
    denominators, so that every resample's sums below are exact integers."""
    scale = math.lcm(*(followed.denominator for followed, _ in scores))
    followed = np.array([int(f * scale) for f, _ in scores], dtype=np.int64)
    return followed, np.array([total * scale for _, total in scores], dtype=np.int64)


# --- the independent statistics ------------------------------------------------------------------


def drawn_prompts(seed: int, resamples: int, prompts: int) -> np.ndarray:
    """The cluster bootstrap's draws: `prompts` prompt indices with replacement per resample,
    from numpy's default generator (PCG64) seeded with the run's seed."""
    return np.random.default_rng(seed).integers(0, prompts, size=(resamples, prompts))


def replicates_of(scores: Sequence[tuple[Fraction, int]], drawn: np.ndarray) -> np.ndarray:
    """Each resample's ratio: the drawn prompts' followed over their out-of, gathered directly."""
    followed, total = integer_columns(scores)
    followed_sums, total_sums = followed[drawn].sum(axis=1), total[drawn].sum(axis=1)
    return np.array([f / t if t else 0.0 for f, t in zip(followed_sums.tolist(), total_sums.tolist())])


def textbook_quantile(values: np.ndarray, probability: float) -> float:
    """Hyndman and Fan's definition 7 (linear interpolation between order statistics), written out."""
    ordered = sorted(values.tolist())
    position = (len(ordered) - 1) * probability
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (position - below) * (ordered[above] - ordered[below])


def percentile_bounds(replicates: np.ndarray, level: float) -> tuple[float, float]:
    tail = (1 - level) / 2
    return textbook_quantile(replicates, tail), textbook_quantile(replicates, 1 - tail)


def scipy_interval(
    scores: Sequence[tuple[Fraction, int]], replicates: np.ndarray, level: float, method: str
) -> tuple[float, float]:
    """scipy.stats.bootstrap's interval from the given bootstrap distribution (n_resamples=0:
    it draws none of its own); for BCa it takes the jackknife from the per-prompt data itself."""
    followed, total = integer_columns(scores)
    result = scipy.stats.bootstrap(
        (followed.astype(float), total.astype(float)),
        lambda f, t, axis=-1: f.sum(axis=axis) / t.sum(axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=0,
        method=method,
        confidence_level=level,
        bootstrap_result=SimpleNamespace(bootstrap_distribution=replicates),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def cluster_residual_sums(scores: Sequence[tuple[Fraction, int]]) -> np.ndarray:
    """For the mean of per-observation scores (a prompt-level observation is a prompt, an
    instruction-level one an instruction, its score averaged over the prompt's responses), each
    prompt's sum of residuals from the overall mean: X'u of the sandwich, cluster by cluster."""
    observations, clusters = [], []
    for cluster, (followed, total) in enumerate(scores):
        # Only the cluster's sum of scores enters the formula, so its observations may share it.
        observations += [float(followed) / total] * total
        clusters += [cluster] * total
    values = np.array(observations)
    residuals = values - values.mean()
    sums = np.zeros(len(scores))
    np.add.at(sums, np.array(clusters, dtype=np.int64), residuals)
    return sums / len(values)


def cluster_robust_se(scores: Sequence[tuple[Fraction, int]]) -> float:
    """CR0 cluster-robust SE of a mean: sqrt((X'X)^-1 (sum_g X_g'u_g u_g'X_g) (X'X)^-1) with X a
    column of ones, i.e. sqrt(sum over prompts of (sum of its residuals)^2) / n."""
    return float(math.sqrt(float((cluster_residual_sums(scores) ** 2).sum())))


def paired_cluster_robust_se(a: Sequence[tuple[Fraction, int]], b: Sequence[tuple[Fraction, int]]) -> float:
    """The same for mean(a) - mean(b) on the same prompts: each prompt's influence on a minus its
    influence on b, squared and summed over prompts."""
    return float(math.sqrt(float(((cluster_residual_sums(a) - cluster_residual_sums(b)) ** 2).sum())))


def value_of(scores: Sequence[tuple[Fraction, int]]) -> float:
    correct, total = counts(scores)
    return float(correct / total) if total else 0.0


def expected_estimate(scores: Sequence[tuple[Fraction, int]], drawn: np.ndarray, level: float) -> dict[str, float]:
    """A metric's estimate as the references compute it: value, percentile interval, bootstrap SE
    (the replicates' sample standard deviation) and clustered SE."""
    replicates = replicates_of(scores, drawn)
    low, high = percentile_bounds(replicates, level)
    return {
        "value": value_of(scores),
        "ci_low": low,
        "ci_high": high,
        "bootstrap_se": float(np.std(replicates, ddof=1)),
        "clustered_se": cluster_robust_se(scores),
    }


def expected_difference(
    a: Sequence[tuple[Fraction, int]], b: Sequence[tuple[Fraction, int]], drawn: np.ndarray, level: float
) -> dict[str, float]:
    """A paired difference a - b as the references compute it, both sides on the same draws."""
    differences = replicates_of(a, drawn) - replicates_of(b, drawn)
    low, high = percentile_bounds(differences, level)
    return {
        "value": value_of(a) - value_of(b),
        "ci_low": low,
        "ci_high": high,
        "share_a_greater": float(np.mean(differences > 0)),
        "bootstrap_se": float(np.std(differences, ddof=1)),
        "clustered_se": paired_cluster_robust_se(a, b),
    }


def assert_matches(actual: dict[str, Any], expected: dict[str, float], where: str) -> None:
    """Every expected field equal to the product's: to rounding (the references sum floats in
    another order), where the intervals of a changed level differ by far more."""
    for field, value in expected.items():
        assert actual[field] == pytest.approx(value, rel=1e-9, abs=1e-12), f"{where}: {field}"


def expected_breakdown(prompts: dict[Any, list[str]], grades: list[dict[str, Any]]) -> dict[tuple, tuple]:
    """(mode, kind, group) -> (followed, total): per instruction type and per category (the part
    before the colon), ungated; a prompt's responses averaged, so `followed` may be fractional."""
    by_key = responses_by_prompt(grades)
    cells: dict[tuple, list] = defaultdict(lambda: [Fraction(0), 0])
    for key, instructions in prompts.items():
        records = by_key.get(key, [])
        for mode in ("strict", "loose"):
            for position, instruction in enumerate(instructions):
                followed = (
                    Fraction(sum(r[mode]["follow_instruction_list"][position] for r in records), len(records))
                    if records
                    else Fraction(0)
                )
                for group, kind in ((instruction, "type"), (instruction.split(":")[0], "category")):
                    cells[mode, kind, group][0] += followed
                    cells[mode, kind, group][1] += 1
    return {cell: (followed, total) for cell, (followed, total) in cells.items()}


def textbook_wilson(followed: float, total: int, level: float) -> tuple[float, float]:
    """Wilson's score interval (Wilson 1927): (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)."""
    z = float(scipy.stats.norm.ppf(0.5 + level / 2))
    p = followed / total
    centre, spread = p + z * z / (2 * total), z * (p * (1 - p) / total + z * z / (4 * total * total)) ** 0.5
    return (centre - spread) / (1 + z * z / total), (centre + spread) / (1 + z * z / total)


# --- the product's error bars on Google's reference grades ----------------------------------------

IFEVAL = TASKS["ifeval"]


@pytest.fixture(scope="module")
def prompts():
    return read_prompts(IFEVAL_PROMPTS)


@pytest.fixture(scope="module")
def gpt4_grades() -> list[dict]:
    """Google's GPT-4 run as graded by the unmodified upstream grader."""
    return read_jsonl(REFERENCE_GRADES)


@pytest.fixture(scope="module")
def two_samples_each(gpt4_grades: list[dict]) -> list[dict]:
    """Two responses per prompt that disagree where strict and loose do: the reference grade,
    then a second sample graded as the first one's loose verdicts in both modes."""
    second = [{**g, "sample": 1, "strict": g["loose"], "loose": g["loose"]} for g in gpt4_grades]
    return [{**g, "sample": 0} for g in gpt4_grades] + second


def test_the_reference_reader_gives_the_ifeval_papers_independent_counts() -> None:
    """Google's own grades of its GPT-4 run (reference_grades_gpt4.jsonl), read by this file's
    reader alone: 417/541, 698/834, 431/541, 714/834 (README)."""
    lists, grades = prompt_lists(IFEVAL_PROMPTS), read_jsonl(REFERENCE_GRADES)
    found = {name: counts(per_prompt_scores(lists, grades, meaning)) for name, meaning in MEANINGS["ifeval"].items()}
    assert found == {
        "prompt_level_strict_acc": (417, 541),
        "inst_level_strict_acc": (698, 834),
        "prompt_level_loose_acc": (431, 541),
        "inst_level_loose_acc": (714, 834),
    }


@pytest.mark.parametrize("level", [0.95, 0.9, 0.8])
@pytest.mark.parametrize("grades_name", ["gpt4_grades", "two_samples_each"])
def test_percentile_intervals_and_both_ses_equal_the_references_on_the_same_draws(
    prompts, grades_name: str, level: float, request: pytest.FixtureRequest
) -> None:
    grades = request.getfixturevalue(grades_name)
    result = run_statistics(IFEVAL, prompts, grades, Settings(resamples=3000, seed=17, level=level))
    drawn, lists = drawn_prompts(17, 3000, len(prompts)), prompt_lists(IFEVAL_PROMPTS)
    assert set(result["estimates"]) == set(MEANINGS["ifeval"])
    for name, meaning in MEANINGS["ifeval"].items():
        assert_matches(
            result["estimates"][name], expected_estimate(per_prompt_scores(lists, grades, meaning), drawn, level), name
        )


def test_the_95_percent_interval_is_the_2_5_and_97_5_percentiles_in_scipy_too(prompts, gpt4_grades) -> None:
    """scipy.stats.bootstrap (method='percentile') on the independently drawn bootstrap
    distribution gives the product's interval."""
    result = run_statistics(IFEVAL, prompts, gpt4_grades, Settings(resamples=4000, seed=7))
    drawn, lists = drawn_prompts(7, 4000, len(prompts)), prompt_lists(IFEVAL_PROMPTS)
    for name, meaning in MEANINGS["ifeval"].items():
        scores = per_prompt_scores(lists, gpt4_grades, meaning)
        low, high = scipy_interval(scores, replicates_of(scores, drawn), 0.95, "percentile")
        estimate = result["estimates"][name]
        assert (estimate["ci_low"], estimate["ci_high"]) == pytest.approx((low, high), rel=1e-12), name


def test_bca_intervals_equal_scipys_bca_on_the_independently_drawn_resamples(prompts, two_samples_each) -> None:
    result = run_statistics(IFEVAL, prompts, two_samples_each, Settings(resamples=4000, seed=7, method="bca"))
    drawn, lists = drawn_prompts(7, 4000, len(prompts)), prompt_lists(IFEVAL_PROMPTS)
    for name, meaning in MEANINGS["ifeval"].items():
        scores = per_prompt_scores(lists, two_samples_each, meaning)
        low, high = scipy_interval(scores, replicates_of(scores, drawn), 0.95, "BCa")
        estimate = result["estimates"][name]
        assert (estimate["ci_low"], estimate["ci_high"]) == pytest.approx((low, high), rel=1e-9), name


def test_the_clustered_se_of_prompt_level_is_the_binomial_se_with_one_response_each(prompts, gpt4_grades) -> None:
    """With one response per prompt a prompt is one 0/1 observation in its own cluster, so the
    clustered SE is the binomial sqrt(p(1 - p)/n)."""
    estimates = run_statistics(IFEVAL, prompts, gpt4_grades, Settings(resamples=10))["estimates"]
    for name, correct in (("prompt_level_strict_acc", 417), ("prompt_level_loose_acc", 431)):
        p = correct / 541
        assert estimates[name]["clustered_se"] == pytest.approx(math.sqrt(p * (1 - p) / 541), rel=1e-12), name


def test_within_run_and_paired_differences_equal_the_references_on_the_same_draws(
    prompts, gpt4_grades, two_samples_each
) -> None:
    settings = Settings(resamples=3000, seed=23, level=0.9)
    drawn, lists = drawn_prompts(23, 3000, len(prompts)), prompt_lists(IFEVAL_PROMPTS)
    meanings = MEANINGS["ifeval"]
    within = run_statistics(IFEVAL, prompts, two_samples_each, settings)["within_run"]
    assert [(d["a"], d["b"]) for d in within] == [
        ("prompt_level_loose_acc", "prompt_level_strict_acc"),
        ("inst_level_loose_acc", "inst_level_strict_acc"),
    ]
    for difference in within:
        a, b = (per_prompt_scores(lists, two_samples_each, meanings[difference[side]]) for side in ("a", "b"))
        assert_matches(difference, expected_difference(a, b, drawn, 0.9), f"{difference['a']} - {difference['b']}")
    compared = compare_runs(IFEVAL, prompts, two_samples_each, prompts, gpt4_grades, settings)["a_minus_b"]
    for name, meaning in meanings.items():
        a, b = per_prompt_scores(lists, two_samples_each, meaning), per_prompt_scores(lists, gpt4_grades, meaning)
        assert_matches(compared[name], expected_difference(a, b, drawn, 0.9), name)


def test_the_textbook_quantile_interpolates_linearly_between_order_statistics() -> None:
    """The reference quantile above (Hyndman and Fan's definition 7, the default of numpy and of
    scipy's percentile method) on hand-computable values."""
    values = np.array([4.0, 1.0, 3.0, 2.0, 10.0])  # sorted 1 2 3 4 10
    assert textbook_quantile(values, 0.5) == 3.0
    assert textbook_quantile(values, 0.875) == 4.0 + 0.5 * 6.0  # position 3.5
    assert textbook_quantile(values, 0.0) == 1.0 and textbook_quantile(values, 1.0) == 10.0
    assert percentile_bounds(np.arange(1001.0), 0.95) == pytest.approx((25.0, 975.0), rel=1e-12)


def test_the_cluster_robust_se_reference_is_the_sandwich_formula_by_hand() -> None:
    """Two prompts: one with instructions scored 1, 1 and one with 0, 1, 0. Mean 3/5; residuals
    (2/5, 2/5) and (-3/5, 2/5, -3/5); cluster sums 4/5 and -4/5; SE = sqrt(2 (4/5)^2) / 5."""
    scores = [(Fraction(2), 2), (Fraction(1), 3)]
    assert cluster_robust_se(scores) == pytest.approx(math.sqrt(2 * 0.8**2) / 5, rel=1e-12)
    assert value_of(scores) == 0.6


def test_the_reader_averages_a_prompts_responses_and_fails_a_missing_prompt() -> None:
    lists = {1: ["a", "b"], 2: ["c"], 3: ["d"]}
    grade = {"strict": {"follow_instruction_list": [True, False]}, "gate": {"passed": False}}
    grades = [
        {"key": 1, **grade},
        {"key": 1, "strict": {"follow_instruction_list": [True, True]}, "gate": {"passed": True}},
        {"key": 2, "strict": {"follow_instruction_list": [True]}, "gate": {"passed": True}},
    ]
    assert per_prompt_scores(lists, grades, Meaning("strict", "prompt")) == [(Fraction(1, 2), 1), (1, 1), (0, 1)]
    assert per_prompt_scores(lists, grades, Meaning("strict", "inst")) == [(Fraction(3, 2), 2), (1, 1), (0, 1)]
    assert per_prompt_scores(lists, grades, Meaning("strict", "inst", gated=True)) == [(1, 2), (1, 1), (0, 1)]
    assert per_prompt_scores(lists, grades, Meaning("gate", "prompt")) == [(Fraction(1, 2), 1), (1, 1), (0, 1)]


def json_lines(path: Path) -> list[dict[str, Any]]:
    """A JSONL file, read with nothing but json (the DAG's outputs are read-only here)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("grades_name", ["gpt4_grades", "two_samples_each"])
def test_the_breakdown_equals_the_independent_per_type_counts_and_wilson_intervals(
    prompts, grades_name: str, request: pytest.FixtureRequest
) -> None:
    grades = request.getfixturevalue(grades_name)
    rows = run_statistics(IFEVAL, prompts, grades, Settings(resamples=10, level=0.9))["breakdown"]
    cells = expected_breakdown(prompt_lists(IFEVAL_PROMPTS), grades)
    assert {(row["mode"], row["kind"], row["group"]) for row in rows} == set(cells) and len(rows) == len(cells)
    for row in rows:
        followed, total = cells[row["mode"], row["kind"], row["group"]]
        low, high = textbook_wilson(float(followed), total, 0.9)
        assert row["total"] == total and row["followed"] == pytest.approx(float(followed), rel=1e-12), row
        assert row["value"] == pytest.approx(float(followed / total), rel=1e-12), row
        assert (row["wilson_low"], row["wilson_high"]) == pytest.approx((max(0.0, low), min(1.0, high)), rel=1e-9), row
