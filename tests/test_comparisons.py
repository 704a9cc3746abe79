"""Comparisons the user asks for (issue 29): which pairs the run plan compares, the compare step
of many pairs in one process, bit for bit what each pair gives compared alone, and a DAG whose
jobs grow with the runs, not with their pairs."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import numpy as np
import pytest

from conftest import IFEVAL_PROMPTS, REFERENCE_GRADES, read_jsonl, run_cli, write_jsonl
from ifaudit.core.metrics import score_tables
from ifaudit.core.stats import Resamples, paired_difference, paired_differences
from ifaudit.io.prompts import read_prompts
from ifaudit.steps.planning import plan
from ifaudit.steps.grading.analysis import Settings, compare_many, compare_runs
from ifaudit.tasks.registry import TASKS
from test_workflow import snakemake, write_config

IFEVAL = TASKS["ifeval"]


def _run(task: str = "ifeval", prompts: str = "p", **extra: object) -> dict:
    return {"task": task, "prompts": prompts, "responses": "r", **extra}


# --- which pairs ---------------------------------------------------------------------------------


def test_by_default_each_run_is_compared_with_the_first_run_of_its_task_and_prompt_set() -> None:
    runs = {
        "base": _run(),
        "other_set": _run(prompts="q"),
        "m1": _run(),
        "gated": _run(task="ifeval_langcheck"),
        "m2": _run(),
        "other_m": _run(prompts="q"),
    }
    assert plan.comparison_pairs(runs, None) == [("base", "m1"), ("base", "m2"), ("other_set", "other_m")]


def test_all_is_every_pair_of_a_task_and_prompt_set_in_config_order() -> None:
    runs = {"a": _run(), "x": _run(prompts="q"), "b": _run(), "c": _run()}
    assert plan.comparison_pairs(runs, plan.ALL_PAIRS) == [("a", "b"), ("a", "c"), ("b", "c")]


def test_a_runs_compare_replaces_its_baseline_and_adds_to_a_list() -> None:
    runs = {"a": _run(), "b": _run(compare=["c"]), "c": _run(), "d": _run(compare=[])}
    # b names c instead of a (A is whichever comes first in the config); d asks for none.
    assert plan.comparison_pairs(runs, None) == [("a", "c"), ("b", "c")]
    assert plan.comparison_pairs(runs, [["d", "a"]]) == [("d", "a"), ("b", "c")]
    assert plan.comparison_pairs(runs, plan.ALL_PAIRS)[-1] == ("c", "d")  # nothing twice


def test_one_compare_job_per_task_and_prompt_set_of_the_pairs() -> None:
    runs = {f"m{i}": _run() for i in range(5)} | {
        "g0": _run(task="ifeval_langcheck"),
        "g1": _run(task="ifeval_langcheck"),
    }
    every = plan.comparison_jobs(runs, plan.comparison_pairs(runs, plan.ALL_PAIRS))
    assert [(job["rule"], len(job["pairs"]), job["all_pairs"]) for job in every] == [
        ("compare_ifeval_p", 10, True),
        ("compare_ifeval_langcheck_p", 1, True),
    ]
    linear = plan.comparison_jobs(runs, plan.comparison_pairs(runs, None))
    assert [(job["runs"], job["all_pairs"]) for job in linear][0] == ([f"m{i}" for i in range(5)], False)


def test_a_leaderboards_pairs_are_split_into_compare_jobs_of_a_bounded_size(monkeypatch) -> None:
    """Issue 53: one compare job of every pair made planning quadratic (Snakemake walks a job's
    inputs and outputs for each file it reads); the pairs of a task and prompt set are split at
    PAIRS_PER_COMPARE_JOB (here 2), each job reading only its pairs' runs, every pair once."""
    monkeypatch.setattr(plan, "PAIRS_PER_COMPARE_JOB", 2)
    runs = {f"m{i}": _run() for i in range(6)}
    jobs = plan.comparison_jobs(runs, plan.comparison_pairs(runs, None))
    assert [job["pairs"] for job in jobs] == [
        [("m0", "m1"), ("m0", "m2")],
        [("m0", "m3"), ("m0", "m4")],
        [("m0", "m5")],
    ]
    assert [job["runs"] for job in jobs] == [["m0", "m1", "m2"], ["m0", "m3", "m4"], ["m0", "m5"]]
    assert [job["rule"] for job in jobs] == [f"compare_ifeval_p_part{part}" for part in (1, 2, 3)]
    assert len({job["log"] for job in jobs}) == 3 and [job["all_pairs"] for job in jobs] == [False, False, True]


def test_rule_names_stay_distinct_when_names_differ_only_in_punctuation() -> None:
    runs = {"a": _run(prompts="x.y"), "b": _run(prompts="x.y"), "c": _run(prompts="x_y"), "d": _run(prompts="x_y")}
    names = [job["rule"] for job in plan.comparison_jobs(runs, plan.comparison_pairs(runs, None))]
    assert names == ["compare_ifeval_x_y", "compare_ifeval_x_y_1"]


# --- many pairs at once, bit for bit -------------------------------------------------------------


def _variants(grades: list[dict], count: int) -> dict[str, list[dict]]:
    """The reference grades and `count` copies with verdicts flipped at random (the last one with
    a second sample per prompt, so its sums are fractions over a common denominator)."""
    runs = {"reference": grades}
    for seed in range(1, count + 1):
        rng = random.Random(seed)
        variant = []
        for record in grades:
            record = json.loads(json.dumps(record))
            for mode in ("strict", "loose"):
                verdicts = [
                    (not ok) if rng.random() < 0.05 * seed else ok for ok in record[mode]["follow_instruction_list"]
                ]
                record[mode] = {"follow_instruction_list": verdicts, "follow_all_instructions": all(verdicts)}
            variant.append(record)
        if seed == count:
            variant += [{**record, "sample": 1} for record in grades]
        runs[f"v{seed}"] = variant
    return runs


@pytest.fixture(scope="module")
def prompts():
    return read_prompts(IFEVAL_PROMPTS)


@pytest.fixture(scope="module")
def runs() -> dict[str, list[dict]]:
    return _variants(read_jsonl(REFERENCE_GRADES), 4)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_paired_differences_of_many_pairs_are_paired_difference_of_each(prompts, runs, method: str) -> None:
    names = list(runs)
    resamples = Resamples.draw(7, 1000, len(prompts))
    columns = [score_tables(prompts, runs[name], IFEVAL.metrics)["inst_level_loose_acc"].pair() for name in names]
    replicates = np.stack(resamples.ratios(columns))
    pairs = [(a, b) for a in range(len(names)) for b in range(len(names)) if a != b]
    many = paired_differences(columns, replicates, pairs, 0.9, method)
    one_by_one = [
        paired_difference(columns[a], columns[b], (replicates[a], replicates[b]), 0.9, method) for a, b in pairs
    ]
    assert many == one_by_one  # dataclasses of floats: equal means the same bits (no NaN here)
    assert len({difference.value for difference in many}) > len(pairs) // 2  # the runs do differ


def test_comparing_many_pairs_gives_each_pair_what_comparing_it_alone_gives(prompts, runs) -> None:
    names = list(runs)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    settings = Settings(resamples=1000, seed=3, method="bca")
    together = compare_many(IFEVAL, {name: (prompts, runs[name]) for name in names}, pairs, settings)
    alone = [compare_runs(IFEVAL, prompts, runs[a], prompts, runs[b], settings) for a, b in pairs]
    assert together == alone


def test_compare_many_writes_the_bytes_compare_writes(resources: Path, tmp_path: Path, runs) -> None:
    names = list(runs)[:3]
    files = [write_jsonl(tmp_path / f"{name}.jsonl", runs[name]) for name in names]
    statistics = ["--resamples", "500", "--seed", "5"]
    out = tmp_path / "comparisons"
    run_cli(
        ["compare-many", "--runs", *names, "--grades", *map(str, files), "--prompts", *[str(IFEVAL_PROMPTS)] * 3,
         "--all-pairs", *statistics, "--out-dir", str(out)],
        resources,
    )  # fmt: skip
    written = sorted(path.relative_to(out).as_posix() for path in out.rglob("*.json"))
    assert written == [plan.comparison_name(a, b) for a, b in (("reference", "v1"), ("reference", "v2"), ("v1", "v2"))]
    for index, a in enumerate(names):
        for b in names[index + 1 :]:
            alone = tmp_path / f"{a}-{b}.json"
            run_cli(
                ["compare", "--a-grades", str(files[index]), "--a-prompts", str(IFEVAL_PROMPTS),
                 "--b-grades", str(files[names.index(b)]), "--b-prompts", str(IFEVAL_PROMPTS), *statistics,
                 "--out", str(alone)],
                resources,
            )  # fmt: skip
            assert (out / plan.comparison_name(a, b)).read_bytes() == alone.read_bytes()


def test_compare_many_on_different_prompt_sets_names_the_pair_and_writes_nothing(
    resources: Path, tmp_path: Path, runs
) -> None:
    grades = write_jsonl(tmp_path / "g.jsonl", runs["reference"])
    fewer = write_jsonl(tmp_path / "fewer.jsonl", read_jsonl(IFEVAL_PROMPTS)[:-1])
    short = write_jsonl(tmp_path / "short.jsonl", runs["reference"][:-1])
    out = tmp_path / "comparisons"
    done = run_cli(
        ["compare-many", "--runs", "a", "b", "c", "--grades", str(grades), str(grades), str(short),
         "--prompts", str(IFEVAL_PROMPTS), str(IFEVAL_PROMPTS), str(fewer), "--all-pairs", "--resamples", "20",
         "--out-dir", str(out)],
        resources,
        check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert re.search(r"runs a and c were not graded on the same prompts", done.stderr), done.stderr
    assert not out.exists() or not list(out.rglob("*.json"))


# --- the config check ----------------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("settings", "line"),
    [
        (
            {"runs": {"mine": {**_run(prompts="ifeval_prompts_github"), "compare": ["gpt4_gogle"]}}},
            "3: config: runs.mine.compare: no run named 'gpt4_gogle'; did you mean 'gpt4_google'?",
        ),
        (
            {"comparisons": [["gpt4_google", "gpt4_google"]]},
            "2: config: comparisons.0: compares run 'gpt4_google' with itself",
        ),
        (  # another data version: a paired comparison draws the same prompts for both (issue 49)
            {"runs": {"mine": {**_run(prompts="ifeval_prompts_hf"), "compare": ["gpt4_google"]}}},
            "3: config: runs.mine.compare: compares run 'mine' (prompt set ifeval_prompts_hf) with run 'gpt4_google' "
            "(prompt set ifeval_prompts_github): a paired comparison needs the same prompt set",
        ),
        ({"comparisons": "every"}, "1: config: comparisons: 'every' does not match '^all$'"),
    ],
)
def test_a_comparison_of_no_such_run_is_one_line_before_any_job(tmp_path: Path, settings: dict, line: str) -> None:
    if "runs" in settings:
        settings["runs"]["mine"]["responses"] = "gpt4_responses"
    write_config(tmp_path, settings)
    done = snakemake(tmp_path, "--dry-run", check=False)
    assert done.returncode != 0
    assert [row for row in done.stderr.splitlines() if row.startswith("ifaudit:")] == [
        f"ifaudit: error: {tmp_path / 'test.yaml'}:{line}"
    ]
    assert not (tmp_path / "results").exists()
