"""Error bars: agreement with the analytic clustered SE, degenerate cases, exactness, Wilson."""

from __future__ import annotations

import json
import random
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest

from conftest import IFEVAL_PROMPTS, REFERENCE_GRADES, read_jsonl, run_cli, write_jsonl
from ifaudit.steps.grading.analysis import Settings, compare_runs, run_statistics
from ifaudit.io.prompts import read_prompts
from ifaudit.core.stats import wilson
from ifaudit.tasks.registry import TASKS

IFEVAL = TASKS["ifeval"]


@pytest.fixture(scope="module")
def prompts():
    return read_prompts(IFEVAL_PROMPTS)


@pytest.fixture(scope="module")
def gpt4_grades() -> list[dict]:
    """Google's GPT-4 run as graded by the unmodified upstream grader (FACTS §3)."""
    return read_jsonl(REFERENCE_GRADES)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_bootstrap_se_agrees_with_the_analytic_clustered_se(prompts, gpt4_grades, method: str) -> None:
    result = run_statistics(IFEVAL, prompts, gpt4_grades, Settings(seed=3, method=method))
    for name, estimate in result["estimates"].items():
        assert estimate["bootstrap_se"] == pytest.approx(estimate["clustered_se"], rel=0.10), name
        assert estimate["ci_low"] < estimate["value"] < estimate["ci_high"], name
    # FACTS §7: p = 0.77 over n = 541 gives an SE of about 1.8 points.
    assert 0.017 < result["estimates"]["prompt_level_strict_acc"]["clustered_se"] < 0.019


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_a_run_with_every_prompt_correct_has_a_zero_width_interval(prompts, gpt4_grades, method: str) -> None:
    perfect = [
        {
            **g,
            "strict": {
                "follow_all_instructions": True,
                "follow_instruction_list": [True] * len(g["instruction_id_list"]),
            },
            "loose": {
                "follow_all_instructions": True,
                "follow_instruction_list": [True] * len(g["instruction_id_list"]),
            },
        }
        for g in gpt4_grades
    ]
    result = run_statistics(IFEVAL, prompts, perfect, Settings(resamples=500, seed=1, method=method))
    for estimate in result["estimates"].values():
        assert estimate["value"] == estimate["ci_low"] == estimate["ci_high"] == 1.0
        assert estimate["bootstrap_se"] == estimate["clustered_se"] == 0.0


def test_a_paired_comparison_of_a_run_with_itself_is_exactly_zero(prompts, gpt4_grades) -> None:
    result = compare_runs(IFEVAL, prompts, gpt4_grades, prompts, gpt4_grades, Settings(resamples=2000, seed=5))
    for difference in result["a_minus_b"].values():
        assert difference == {
            "value": 0.0,
            "ci_low": 0.0,
            "ci_high": 0.0,
            "share_a_greater": 0.0,
            "bootstrap_se": 0.0,
            "clustered_se": 0.0,
        }


def test_a_real_difference_is_detected_and_signed(prompts, gpt4_grades) -> None:
    worse = [dict(g) for g in gpt4_grades]
    for index in range(0, len(worse), 4):  # fail a quarter of the prompts outright
        n = len(worse[index]["instruction_id_list"])
        worse[index] = {
            **worse[index],
            "strict": {"follow_all_instructions": False, "follow_instruction_list": [False] * n},
        }
    result = compare_runs(IFEVAL, prompts, gpt4_grades, prompts, worse, Settings(resamples=2000, seed=5))
    strict = result["a_minus_b"]["prompt_level_strict_acc"]
    assert strict["ci_low"] > 0 and strict["share_a_greater"] > 0.99
    assert result["a_minus_b"]["prompt_level_loose_acc"]["value"] == 0.0


def test_samples_are_averaged_within_a_prompt_exactly(prompts, gpt4_grades) -> None:
    """Three identical samples per prompt give the same estimates and intervals as one."""
    tripled = [{**g, "sample": s} for g in gpt4_grades for s in range(3)]
    random.Random(2).shuffle(tripled)
    settings = Settings(resamples=1000, seed=9)
    assert (
        run_statistics(IFEVAL, prompts, tripled, settings)["estimates"]
        == run_statistics(IFEVAL, prompts, gpt4_grades, settings)["estimates"]
    )


def test_comparing_runs_on_different_prompt_sets_is_refused(prompts, gpt4_grades) -> None:
    from ifaudit.core.errors import InputError

    with pytest.raises(InputError, match="same prompt set"):
        compare_runs(IFEVAL, prompts, gpt4_grades, prompts[:-1], gpt4_grades[:-1], Settings(resamples=10))


def test_the_same_seed_gives_identical_bytes_in_separate_processes(resources: Path, tmp_path: Path) -> None:
    grades = write_jsonl(tmp_path / "grades.jsonl", read_jsonl(REFERENCE_GRADES))
    outputs = []
    for name, seed, hash_seed in (("one", "7", "1"), ("two", "7", "99"), ("other", "8", "1")):
        out = tmp_path / f"{name}.json"
        run_cli(
            [
                "stats",
                "--grades",
                str(grades),
                "--prompts",
                str(IFEVAL_PROMPTS),
                "--seed",
                seed,
                "--resamples",
                "2000",
                "--out",
                str(out),
            ],
            resources,
            PYTHONHASHSEED=hash_seed,
        )
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    assert outputs[0] != outputs[2]
    assert json.loads(outputs[0])["settings"] == {"level": 0.95, "method": "percentile", "resamples": 2000, "seed": 7}


@pytest.mark.parametrize(
    "successes, trials, low, high",
    [
        (5, 10, 0.2365931, 0.7634069),  # hand-computed: (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)
        (0, 10, 0.0, 0.2775328),
        (10, 10, 0.7224672, 1.0),
        (1, 1, 0.2065493, 1.0),
    ],
)
def test_wilson_matches_hand_computed_values(successes: int, trials: int, low: float, high: float) -> None:
    bounds = wilson(successes, trials, 0.95)
    assert (bounds.low, bounds.high) == pytest.approx((low, high), abs=1e-6)


def test_breakdown_counts_every_instruction(prompts, gpt4_grades) -> None:
    rows = run_statistics(IFEVAL, prompts, gpt4_grades, Settings(resamples=10))["breakdown"]
    strict_types = [r for r in rows if r["mode"] == "strict" and r["kind"] == "type"]
    assert sum(r["total"] for r in strict_types) == 834
    assert sum(r["followed"] for r in strict_types) == 698
    letter = next(r for r in strict_types if r["group"] == "keywords:letter_frequency")
    assert letter["total"] == 33 and np.isclose(letter["value"], letter["followed"] / 33)


def _textbook_percentile(values: np.ndarray, probability: float) -> float:
    """Linear interpolation between order statistics (Hyndman and Fan's definition 7), by hand."""
    ordered = sorted(values.tolist())
    position = (len(ordered) - 1) * probability
    below = int(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (position - below) * (ordered[above] - ordered[below])


def test_bca_counts_resamples_tied_with_the_estimate_as_half_below() -> None:
    """Mid-rank bias term: a symmetric bootstrap distribution with many ties at the estimate has no
    bias, so with zero acceleration BCa is exactly the percentile interval, the textbook 5th and
    95th percentiles. Counting the ties as above (Efron's z0 = Φ⁻¹(share strictly below)) would
    give a negative bias and move both bounds down: computed here by hand, ours must be above it."""
    from ifaudit.core.stats import bca_interval, percentile_interval

    spread = np.linspace(0.30, 0.49, 450)
    replicates = np.concatenate([spread, [0.50] * 100, 1.0 - spread[::-1]])
    symmetric_jackknife = np.array([0.49, 0.51] * 50)
    ours, percentile = bca_interval(replicates, 0.50, symmetric_jackknife, 0.9), percentile_interval(replicates, 0.9)
    textbook = (_textbook_percentile(replicates, 0.05), _textbook_percentile(replicates, 0.95))
    assert (ours.low, ours.high) == pytest.approx(textbook, rel=1e-12)
    assert (percentile.low, percentile.high) == pytest.approx(textbook, rel=1e-12)
    normal, z = NormalDist(), NormalDist().inv_cdf(0.95)
    bias_if_ties_above = normal.inv_cdf(float(np.mean(replicates < 0.50)))
    old_rule = [_textbook_percentile(replicates, normal.cdf(2 * bias_if_ties_above + t)) for t in (-z, z)]
    assert ours.low > old_rule[0] and ours.high > old_rule[1]


def test_bca_matches_scipy_on_the_same_bootstrap_distribution(prompts, gpt4_grades) -> None:
    """scipy.stats.bootstrap, handed our resamples (n_resamples=0), computes its BCa interval from
    them with its own jackknife and mid-rank bias: ours must agree."""
    from types import SimpleNamespace

    import scipy.stats as stats

    from ifaudit.core.metrics import score_tables
    from ifaudit.core.stats import Resamples, bca_interval, jackknife_ratios, ratio

    tables = score_tables(prompts, gpt4_grades, IFEVAL.metrics)
    resamples = Resamples.draw(7, 4000, len(prompts))
    for name, table in tables.items():
        num, den = table.pair()
        (replicates,) = resamples.ratios([(num, den)])
        ours = bca_interval(replicates, ratio(num, den), jackknife_ratios(num, den), 0.95)
        theirs = stats.bootstrap(
            (num.astype(float), den.astype(float)),
            lambda n, d, axis=-1: n.sum(axis=axis) / d.sum(axis=axis),
            paired=True,
            vectorized=True,
            n_resamples=0,
            method="BCa",
            confidence_level=0.95,
            bootstrap_result=SimpleNamespace(bootstrap_distribution=replicates),
        ).confidence_interval
        assert (ours.low, ours.high) == pytest.approx((theirs.low, theirs.high), rel=1e-12, abs=1e-12), name


@pytest.mark.parametrize("largest", [3, 2**60 // 600])  # the float64 product, and the int64 one past 2**53
def test_resample_sums_are_the_exact_integer_sums_of_the_drawn_prompts(largest: int) -> None:
    """The count-matrix product gives every resample's ratio bit for bit as gathering the drawn
    prompts' integers and summing them does."""
    from ifaudit.core.stats import Resamples, resample_indices

    values = np.random.default_rng(11).integers(0, largest, size=(541, 2), dtype=np.int64, endpoint=True)
    num, den = values[:, 0] // 2, values[:, 1]
    indices = resample_indices(5, 3000, len(num))
    num_sums, den_sums = num[indices].sum(axis=1), den[indices].sum(axis=1)
    gathered = np.divide(num_sums, den_sums, out=np.zeros(len(indices)), where=den_sums != 0)
    (counted,) = Resamples.draw(5, 3000, len(num)).ratios([(num, den)])
    assert counted.tobytes() == gathered.tobytes()
