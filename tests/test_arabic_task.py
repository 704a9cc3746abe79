"""Inception's Arabic IFEval end to end in the DAG, on responses the test composes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import DATA, copy_of_default_run, read_jsonl, write_jsonl
from test_workflow import snakemake, summary, write_config

pytestmark = pytest.mark.e2e

ARABIC_PROMPTS = DATA / "arabic_ifeval" / "ar_input_data.jsonl"  # the offline copy of the pinned dataset
ARABIC_ANSWER = "ذهب أحمد إلى السوق صباحا. اشترى خبزا وجبنا وبعض الفاكهة. ثم عاد إلى البيت مسرورا."
FIVE_METRICS = [
    "prompt_level_strict_acc",
    "inst_level_strict_acc",
    "prompt_level_strict_langcheck_acc",
    "inst_level_strict_langcheck_acc",
    "language_check_acc",
]


KINDS = {  # what each composed answer is, and the gate verdict expected under lang ["ar"] / ["ar", "en"]
    "arabic": (ARABIC_ANSWER, (True, None), (True, None)),
    "english": (
        "The market was busy this morning and we bought bread and cheese.",
        (False, "language:english_ratio"),
        (True, None),
    ),
    "repeating": (" ".join(["جميل"] * 8), (False, "repeated_words"), (False, "repeated_words")),
    "other script": ("кошка " + ARABIC_ANSWER, (False, "language:other_script"), (False, "language:other_script")),
    "thinking first": ("<think>Let me think in English first.</think>" + ARABIC_ANSWER, (True, None), (True, None)),
}


def composed_responses(path: Path) -> tuple[Path, dict[tuple[int, int], str]]:
    """Two samples per prompt, cycling through KINDS; returns the file and each response's kind."""
    records, kinds, names = [], {}, list(KINDS)
    for index, prompt in enumerate(read_jsonl(ARABIC_PROMPTS)):
        for sample in range(2):
            kind = names[(index + sample) % len(names)]
            records.append({"key": prompt["key"], "sample": sample, "response": KINDS[kind][0]})
            kinds[prompt["key"], sample] = kind
    return write_jsonl(path, records), kinds


@pytest.fixture(scope="module")
def arabic_runs(scenario_run, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[tuple[int, int], str]]:
    """Inception's task and both Hugging Face variants graded in one DAG on the same composed
    responses, added to a copy of the session's default run. The Hub copy cannot be fetched here,
    so the variants' prompt set is the shared Inception JSONL standing in for it (its `lang` field
    is not read). Returns the working folder and each response's kind."""
    workdir = copy_of_default_run(scenario_run, tmp_path_factory.mktemp("arabic"))
    responses, kinds = composed_responses(workdir / "arabic_responses.jsonl")
    hf_runs = {
        name: {
            "task": name,
            "prompts": "arabic_ifeval_inception_jsonl_standing_in_for_hf",
            "responses": "arabic_answers",
        }
        for name in ("ifeval_arabic_inception_hf", "ifeval_arabic_inception_hf_langcheck")
    }
    write_config(
        workdir,
        {
            "datasets": {
                "arabic_answers": {"path": str(responses)},
                "arabic_ifeval_inception_jsonl_standing_in_for_hf": {"path": str(ARABIC_PROMPTS)},
            },
            "runs": {
                "arabic": {
                    "task": "ifeval_arabic_inception",
                    "prompts": "arabic_ifeval_inception",
                    "responses": "arabic_answers",
                    "label": "composed Arabic answers",
                },
                **hf_runs,
            },
        },
    )
    snakemake(workdir)
    return workdir, kinds


def test_arabic_task_end_to_end(arabic_runs: tuple[Path, dict[tuple[int, int], str]]) -> None:
    workdir, kinds = arabic_runs
    canary = json.loads((workdir / "results/canary/ifeval_arabic_inception.json").read_text())
    assert canary["passed"] and canary["items"] == 78
    grades = read_jsonl(workdir / "results/arabic/grades.jsonl")
    assert len(grades) == 808 and all("loose" not in g for g in grades)
    lang = {p["key"]: p["lang"] for p in read_jsonl(ARABIC_PROMPTS)}
    for record in grades:
        kind = kinds[record["key"], record["sample"]]
        expected = KINDS[kind][1] if lang[record["key"]] == ["ar"] else KINDS[kind][2]
        assert (record["gate"]["passed"], record["gate"]["rule"]) == expected, (record["key"], kind)
        assert record["thinking_stripped"] is (kind == "thinking first")

    result = summary(workdir, "arabic")
    assert result["counted"] and set(result["metrics"]) == set(FIVE_METRICS)
    passed = sum(g["gate"]["passed"] for g in grades)
    assert result["metrics"]["language_check_acc"]["value"] == pytest.approx(passed / 808)
    assert (
        result["metrics"]["prompt_level_strict_langcheck_acc"]["value"]
        <= result["metrics"]["prompt_level_strict_acc"]["value"]
    )
    stats = json.loads((workdir / "results/arabic/stats.json").read_text())
    for name in FIVE_METRICS:
        estimate = stats["estimates"][name]
        assert estimate["ci_low"] <= estimate["value"] <= estimate["ci_high"]
    gated_minus_ungated = stats["within_run"][0]
    assert (gated_minus_ungated["a"], gated_minus_ungated["b"]) == (
        "prompt_level_strict_langcheck_acc",
        "prompt_level_strict_acc",
    )
    assert gated_minus_ungated["ci_high"] <= 0
    report = (workdir / "results/report.md").read_text()
    assert "Task `ifeval_arabic_inception`" in report and "language check" in report
    assert "ifaudit's own checkers" in report


def test_arabic_hf_tasks_end_to_end(arabic_runs: tuple[Path, dict[tuple[int, int], str]]) -> None:
    """Both Hugging Face variants, on the Inception JSONL standing in for the Hub copy."""
    workdir, kinds = arabic_runs
    for task in ("ifeval_arabic_inception_hf", "ifeval_arabic_inception_hf_langcheck"):
        assert json.loads((workdir / f"results/canary/{task}.json").read_text())["passed"]
    plain = read_jsonl(workdir / "results/ifeval_arabic_inception_hf/grades.jsonl")
    gated = read_jsonl(workdir / "results/ifeval_arabic_inception_hf_langcheck/grades.jsonl")
    assert len(plain) == len(gated) == 808
    assert all("gate" not in g and "loose" in g for g in plain)
    expected_rule = {
        "arabic": None,
        "english": "english_ratio",
        "repeating": "repeated_words",
        "other script": "other_script",
        "thinking first": None,
    }
    for record in gated:
        kind = kinds[record["key"], record["sample"]]
        rule = expected_rule[kind]
        if kind == "english" and record["key"] in {
            p["key"]
            for p in read_jsonl(ARABIC_PROMPTS)
            if "detectable_format:json_format" in p["instruction_id_list"]
            or any(w in p["prompt"].lower() for w in ("json", "html"))
        }:
            rule = None  # format-exempt prompts accept English
        assert record["gate"]["rule"] == rule, (record["key"], kind, record["gate"])
    metrics = summary(workdir, "ifeval_arabic_inception_hf_langcheck")["metrics"]
    plain_metrics = summary(workdir, "ifeval_arabic_inception_hf")["metrics"]
    for name in ("prompt_level_strict", "inst_level_strict", "prompt_level_loose", "inst_level_loose"):
        assert metrics[f"{name}_ungated_acc"] == plain_metrics[f"{name}_acc"]
        assert metrics[f"{name}_acc"]["value"] <= metrics[f"{name}_ungated_acc"]["value"]
    assert 0 < metrics["language_check_acc"]["value"] < 1
    report = (workdir / "results/report.md").read_text()
    assert "Task `ifeval_arabic_inception_hf_langcheck`" in report and "Task `ifeval_arabic_inception_hf`" in report
