"""Batches without a DAG (issue 53): the plan's batch sizes and batches, the config's refusal of a
batch with shards, and the batch runner's promises: a run that refuses is named and skipped, the
others go on, what the failed run left is listed and then removed, a staged batch of the wrong
shape is refused in one line. The DAG runs are in test_batches.py."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from ifaudit.core.errors import ConfigError, InputError, IfauditError
from ifaudit.steps.grading.batch import check_batches, run_batch
from ifaudit.steps.planning import plan


@pytest.mark.parametrize(
    ("runs", "size"), [(1, 1), (8, 1), (9, 2), (16, 2), (17, 3), (100, 13), (800, 100), (1000, 100), (4580, 100)]
)
def test_auto_batches_are_one_run_up_to_8_then_8_batches_of_at_most_100(runs: int, size: int) -> None:
    assert plan.auto_batch_size(runs) == size


def test_batches_are_per_task_in_config_order_and_leave_judged_runs_out() -> None:
    runs = {
        "a": {"task": "ifeval"},
        "j": {"task": "infobench"},
        "b": {"task": "ifbench_c6767a1"},
        "c": {"task": "ifeval"},
        "d": {"task": "ifeval"},
    }
    assert plan.batches(runs, 2) == [
        {"name": "ifeval_0001", "task": "ifeval", "runs": ["a", "c"]},
        {"name": "ifeval_0002", "task": "ifeval", "runs": ["d"]},
        {"name": "ifbench_c6767a1_0001", "task": "ifbench_c6767a1", "runs": ["b"]},
    ]


def test_a_batch_with_shards_is_refused_naming_the_setting() -> None:
    from ifaudit.steps.planning.config_check import check_config
    from ifaudit.steps.planning.jobs import RunPlan

    config = {"datasets": {}, "runs": {}, "comparisons": None, "shards": 2, "batch_runs": 3}
    with pytest.raises(ConfigError, match=r"batch_runs.*3 with shards: 2: a batch grades each run whole"):
        check_config(RunPlan(config, Path("pin"), Path("pin")), Path.cwd())


def staged(runs: dict[str, list[str]]) -> dict:
    """A batch of one step a run, each writing the files named after its command."""
    return {
        "batch": "ifeval_0001",
        "step": "grade-a",
        "runs": [
            {"run": run, "steps": [[command]], "outputs": [f"results/{run}/{name}" for name in outputs]}
            for run, (command, *outputs) in runs.items()
        ],
    }


def step_writing(refused: set[str]):
    """A stand-in for `ifaudit WORDS` in this process: writes each of its run's outputs, or
    refuses as a bad input does, for the commands in `refused`."""
    ran: list[str] = []

    def run_step(words: Sequence[str]) -> int:
        ran.append(words[0])
        if words[0] in refused:
            raise InputError("malformed JSON", path=Path(f"{words[0]}.jsonl"), line=3)
        return 0

    return run_step, ran


def test_a_run_that_refuses_is_named_its_outputs_left_empty_and_the_next_runs_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    batch = staged({"one": ["ok", "x.json"], "two": ["bad", "x.json", "y.json"], "three": ["ok", "x.json"]})
    for run in ("one", "three"):  # what the steps of the runs that succeed write
        (tmp_path / "results" / run).mkdir(parents=True)
        (tmp_path / "results" / run / "x.json").write_text("{}")
    run_step, ran = step_writing({"bad"})
    record = tmp_path / "record.json"
    said = run_batch(batch, tmp_path / "staged.json", run_step, [], record)
    assert ran == ["ok", "bad", "ok"]
    assert said == "ifeval_0001 grade-a: 2 of 3 runs done, 1 failed"
    assert "ifaudit: error: run two: bad.jsonl:3: malformed JSON" in capsys.readouterr().err
    assert [(tmp_path / "results/two" / name).read_bytes() for name in ("x.json", "y.json")] == [b"", b""]
    written = json.loads(record.read_text())
    assert written["failed"] == {
        "two": {"reason": "bad.jsonl:3: malformed JSON", "outputs": ["results/two/x.json", "results/two/y.json"]}
    }
    assert written["runs"] == ["one", "two", "three"]

    # The batch's next job skips the failed run (its reason kept), and lists what the first left.
    finish = staged({"one": ["ok", "z.json"], "two": ["ok", "z.json"], "three": ["ok", "z.json"]})
    finish["runs"][1]["made_before"] = ["results/two/x.json", "results/two/y.json"]
    (tmp_path / "results/one/z.json").write_text("{}")
    (tmp_path / "results/three/z.json").write_text("{}")
    run_step, ran = step_writing(set())
    run_batch(finish, tmp_path / "staged.json", run_step, [record], tmp_path / "finish.json")
    assert ran == ["ok", "ok"]
    left = json.loads((tmp_path / "finish.json").read_text())["failed"]["two"]
    assert left == {
        "reason": "bad.jsonl:3: malformed JSON",
        "outputs": ["results/two/x.json", "results/two/y.json", "results/two/z.json"],
    }

    # The check of every batch removes what the failed run left and names it; the others stand.
    lines = check_batches([tmp_path / "finish.json"], tmp_path / "checked.json")
    assert lines == ["run two failed in its batch and does not count: bad.jsonl:3: malformed JSON"]
    assert sorted(path.name for path in (tmp_path / "results/two").iterdir()) == []
    assert (tmp_path / "results/one/x.json").is_file() and (tmp_path / "results/three/z.json").is_file()
    assert not (tmp_path / "checked.json").exists()


def test_every_batch_done_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results/one").mkdir(parents=True)
    (tmp_path / "results/one/x.json").write_text("{}")
    run_batch(staged({"one": ["ok", "x.json"]}), tmp_path / "s.json", step_writing(set())[0], [], tmp_path / "r.json")
    assert check_batches([tmp_path / "r.json"], tmp_path / "checked.json") == []
    assert json.loads((tmp_path / "checked.json").read_text()) == {"batches": 1, "failed": {}}


def test_a_step_that_ends_with_a_status_fails_its_run() -> None:
    from ifaudit.steps.grading.batch import _run_steps

    assert _run_steps([["grade"], ["verify"]], lambda words: 0) is None
    assert _run_steps([["grade"], ["verify"]], lambda words: 1 if words[0] == "verify" else 0) == (
        "`ifaudit verify` ended with exit status 1"
    )


@pytest.mark.parametrize(
    ("steps", "said"),
    [
        ([], "not a batch: an object with `batch`, `step` and `runs`"),
        ({"batch": 1, "step": "grade-a", "runs": []}, "`batch` and `step` must be text"),
        ({"batch": "b", "step": "s", "runs": [{"steps": [["grade"]]}]}, "runs.0 is not an object naming its `run`"),
        ({"batch": "b", "step": "s", "runs": [{"run": "r", "steps": []}]}, "runs.0.steps is not a list"),
        (
            {"batch": "b", "step": "s", "runs": [{"run": "r", "steps": [["grade"]], "outputs": ["../x"]}]},
            "runs.0: ../x is not a file under results/",
        ),
        (
            {"batch": "b", "step": "s", "runs": [{"run": "r", "steps": [["grade"]], "outputs": ["/etc/passwd"]}]},
            "runs.0: /etc/passwd is not a file under results/",
        ),
    ],
)
def test_a_staged_batch_of_the_wrong_shape_is_refused_in_one_line(tmp_path: Path, steps: object, said: str) -> None:
    with pytest.raises(IfauditError, match=said.replace("(", r"\(").replace("`", "`")):
        run_batch(steps, tmp_path / "s.json", step_writing(set())[0], [], tmp_path / "r.json")
    assert not (tmp_path / "r.json").exists()


def test_a_process_grading_two_runs_loads_its_grader_once_and_gives_each_the_same_bytes(
    resources: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a batch's grading process does: the second run is graded with the grader, the canary
    verdict and the prompt audit of the first, and its files are the first's bytes."""
    from conftest import GPT4_RESPONSES, IFEVAL_PROMPTS, NLTK_MIRROR, REPO

    from ifaudit.steps.grading import grade
    from ifaudit.steps.grading.grade import CanaryFiles, GradeRequest, grade_shard
    from ifaudit.tasks.base import GradingOptions
    from ifaudit.tasks.registry import get_task

    for cache in ("_LOADED", "_CERTIFIED", "_AUDITED"):
        monkeypatch.setattr(grade, cache, {})
    task = get_task("ifeval")
    loaded, certified = [], []
    load = type(task).load
    monkeypatch.setattr(type(task), "load", lambda self, options: loaded.append(1) or load(self, options))
    import ifaudit.steps.grading.canary as canary

    real_certify = canary.certify
    monkeypatch.setattr(canary, "certify", lambda *args: certified.append(1) or real_certify(*args))
    pin = REPO / "vendor/google_ifeval/pin.toml"
    options = GradingOptions(resources=resources, grader="stand-in", pin=pin, offline=True, nltk_mirror=NLTK_MIRROR)
    responses = tmp_path / "twenty.jsonl"
    responses.write_text("".join(GPT4_RESPONSES.read_text(encoding="utf-8").splitlines(keepends=True)[:20]))
    for run in ("one", "two"):
        folder = tmp_path / run
        canary_files = CanaryFiles(folder / "canary.json", None, IFEVAL_PROMPTS, GPT4_RESPONSES)
        request = GradeRequest(
            task, IFEVAL_PROMPTS, responses, folder / "grades.jsonl", "0/1", canary_files, folder / "audit.json"
        )
        grade_shard(request, options)
    assert (len(loaded), len(certified)) == (1, 1)
    for name in ("grades.jsonl", "canary.json", "audit.json"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
