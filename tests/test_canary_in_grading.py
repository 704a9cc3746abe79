"""The canary in the grading processes: each `ifaudit grade` of the DAG regrades the canary with
the grader it then grades with, and the task's verdict (`ifaudit combine-canaries`) is that of
all of them: one process that fails fails it. Each also audits its prompt set with that grader
(`grade --audit-out`), and the prompt set's audit (`ifaudit combine-audits`) needs them all alike."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import GPT4_RESPONSES, IFEVAL_PROMPTS, run_cli
from ifaudit.core.errors import VerificationError
from ifaudit.steps.grading.canary import combine_verdicts
from ifaudit.steps.grading.disclosures import combine_audits
from ifaudit.io.canonical import pretty_json_bytes


def verdict(passed: bool = True, environment: str = "env", disagreements: list | None = None) -> dict:
    return {
        "task": "ifeval",
        "items": 20,
        "passed": passed,
        "disagreements": disagreements or [],
        "sentinels": 8,
        "sentinels_flipped": sorted({d["sentinel"] for d in disagreements or [] if "sentinel" in d}),
        "environment": {"python": environment},
        "versions": {"python": environment},
    }


FLIP = {"sentinel": "nltk_words", "guards": "nltk's word tokenizer", "expected": [True], "got": [False]}


def test_processes_that_agree_give_their_own_bytes() -> None:
    same = pretty_json_bytes(verdict())
    assert combine_verdicts({"a/canary-0-of-2.json": same, "a/canary-1-of-2.json": same, "b/x.json": same}) == same
    failed = pretty_json_bytes(verdict(False, disagreements=[FLIP]))
    assert combine_verdicts({"a": failed, "b": failed}) == failed  # every process failed alike: one verdict


def test_one_failing_process_fails_the_task_and_is_named() -> None:
    passed, failed = pretty_json_bytes(verdict()), pretty_json_bytes(verdict(False, disagreements=[FLIP]))
    combined = json.loads(combine_verdicts({"a/canary-0-of-1.json": passed, "b/canary-0-of-1.json": failed}))
    assert combined["passed"] is False
    assert combined["disagreements"] == [{**FLIP, "in": ["b/canary-0-of-1.json"]}]
    assert combined["sentinels_flipped"] == ["nltk_words"]
    assert {key: combined[key] for key in ("task", "items", "sentinels", "environment")} == {
        key: verdict()[key] for key in ("task", "items", "sentinels", "environment")
    }


def test_processes_in_different_environments_fail_the_task_naming_what_differs() -> None:
    """Each passed, but the verdict could name only one environment for grades made in two: the
    difference is named, and no response is said to disagree."""
    first, other = pretty_json_bytes(verdict()), pretty_json_bytes(verdict(environment="other"))
    combined = json.loads(combine_verdicts({"a": first, "b": other}))
    assert combined["passed"] is False
    assert combined["disagreements"] == []
    assert combined["environment_differences"] == [
        {
            "problem": "grading environments differ: python env vs other",
            "differs": [{"what": "python", "first": "env", "other": "other"}],
            "compared_with": "a",
            "in": ["b"],
        }
    ]


def test_a_grading_process_writes_the_canary_verdict_and_the_same_grades(resources: Path, tmp_path: Path) -> None:
    """`grade --canary-out` writes what `canary` writes, and grades as `grade` alone does."""
    grader = ["--grader", "stand-in"]
    data = ["--prompts", str(IFEVAL_PROMPTS), "--responses", str(GPT4_RESPONSES)]
    canary_data = ["--canary-prompts", str(IFEVAL_PROMPTS), "--canary-responses", str(GPT4_RESPONSES)]
    alone = tmp_path / "alone.jsonl"
    run_cli(["grade", "--quiet", *data, *grader, "--shard", "1/3", "--out", str(alone)], resources)
    certified, own, audit = tmp_path / "certified.jsonl", tmp_path / "own.json", tmp_path / "audit.json"
    done = run_cli(
        ["grade", "--quiet", *data, *grader, "--shard", "1/3", *canary_data, "--canary-out", str(own)]
        + ["--audit-out", str(audit), "--out", str(certified)],
        resources,
    )
    assert "canary ifeval: 20 responses regraded, all agree" in done.stderr
    assert certified.read_bytes() == alone.read_bytes()
    separate = tmp_path / "separate.json"
    run_cli(["canary", *data, *grader, "--out", str(separate)], resources)
    assert own.read_bytes() == separate.read_bytes()
    audited_alone = tmp_path / "audited_alone.json"
    run_cli(["audit-prompts", "--prompts", str(IFEVAL_PROMPTS), *grader, "--out", str(audited_alone)], resources)
    assert audit.read_bytes() == audited_alone.read_bytes()  # the whole prompt set's, whatever the shard
    assert json.loads(audit.read_text())["prompts"] == 541


def test_prompt_audits_of_the_processes_must_agree() -> None:
    same = pretty_json_bytes({"prompts": 541, "substituted_settings": [], "text_contradicts_settings": []})
    assert combine_audits({"a/prompts-0-of-1.json": same, "b/prompts-0-of-1.json": same}) == same
    other = pretty_json_bytes({"prompts": 541, "substituted_settings": [{"key": 1}], "text_contradicts_settings": []})
    try:
        combine_audits({"a/prompts-0-of-1.json": same, "b/prompts-0-of-1.json": other})
    except VerificationError as error:
        assert "a/prompts-0-of-1.json and b/prompts-0-of-1.json" in str(error)
    else:
        raise AssertionError("disagreeing audits were combined")


def test_the_canary_options_of_grade_need_their_datasets_and_an_output(resources: Path, tmp_path: Path) -> None:
    data = ["--prompts", str(IFEVAL_PROMPTS), "--responses", str(GPT4_RESPONSES), "--grader", "stand-in"]
    out = tmp_path / "grades.jsonl"
    done = run_cli(
        ["grade", *data, "--canary-out", str(tmp_path / "c.json"), "--out", str(out)], resources, check=False
    )
    assert done.returncode == 2 and "needs --canary-prompts and --canary-responses" in done.stderr
    assert "Traceback" not in done.stderr and not out.exists()
    done = run_cli(["grade", *data, "--canary-prompts", str(IFEVAL_PROMPTS), "--out", str(out)], resources, check=False)
    assert done.returncode == 2 and "go with --canary-out" in done.stderr and not out.exists()


def test_a_tampered_canary_fails_in_the_grading_process(resources: Path, tmp_path: Path) -> None:
    """A process whose canary fails still grades (the summary marks the run), and says so."""
    from ifaudit.tasks.canary_files import load_canary

    canary = load_canary("ifeval_arabic_inception")
    canary["sentinels"][0]["expected"] = {
        mode: [not v for v in value] if isinstance(value, list) else not value
        for mode, value in canary["sentinels"][0]["expected"].items()
    }
    (tmp_path / "tampered.json").write_text(json.dumps(canary))
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps(canary["items"][0]["prompt"]) + "\n")
    responses = tmp_path / "r.jsonl"
    responses.write_text(json.dumps({"key": canary["items"][0]["key"], "response": "نص"}) + "\n")
    own = tmp_path / "own.json"
    done = run_cli(
        ["grade", "--task", "ifeval_arabic_inception", "--prompts", str(prompts), "--responses", str(responses)]
        + ["--canary", str(tmp_path / "tampered.json"), "--canary-out", str(own), "--out", str(tmp_path / "g.jsonl")],
        resources,
    )
    result = json.loads(own.read_text())
    assert not result["passed"] and result["sentinels_flipped"] == [canary["sentinels"][0]["name"]]
    flip = result["disagreements"][0]
    assert {"sentinel", "guards", "expected", "got"} <= set(flip)
    assert f"sentinel {flip['sentinel']} flipped" in done.stderr
    assert (tmp_path / "g.jsonl").is_file()


def test_verify_writes_the_runs_canary_verdict_as_combine_canaries_does(resources: Path, tmp_path: Path) -> None:
    """The DAG's verify job combines the run's processes' canary verdicts too (one job per run,
    not two): the same bytes as combine-canaries, a failing process failing it, and the two
    options only together."""
    shard = tmp_path / "shard.jsonl"
    run_cli(
        ["grade", "--quiet", "--grader", "stand-in", "--prompts", str(IFEVAL_PROMPTS), "--responses"]
        + [str(GPT4_RESPONSES), "--shard", "1/100", "--out", str(shard)],
        resources,
    )
    verdicts = [tmp_path / "a.json", tmp_path / "b.json"]
    verdicts[0].write_bytes(pretty_json_bytes(verdict()))
    verdicts[1].write_bytes(pretty_json_bytes(verdict(passed=False, disagreements=[{"key": 1, "problem": "x"}])))
    outputs = {"--first-out": "a.jsonl", "--second-out": "b.jsonl", "--out": "g.jsonl", "--record": "v.json"}
    verify = ["verify", "--first", str(shard), "--second", str(shard)]
    verify += [part for option, name in outputs.items() for part in (option, str(tmp_path / name))]
    done = run_cli([*verify, "--canaries", *map(str, verdicts), "--canary-out", str(tmp_path / "run.json")], resources)
    assert "canary of 2 grading processes: FAILED" in done.stderr and "passes agree byte for byte" in done.stderr
    alone = run_cli(["combine-canaries", *map(str, verdicts), "--out", str(tmp_path / "alone.json")], resources)
    assert alone.returncode == 0 and (tmp_path / "run.json").read_bytes() == (tmp_path / "alone.json").read_bytes()
    assert json.loads((tmp_path / "run.json").read_text())["passed"] is False
    one_sided = run_cli([*verify, "--canaries", str(verdicts[0])], resources, check=False)
    assert one_sided.returncode == 2 and "--canaries and --canary-out go together" in one_sided.stderr
