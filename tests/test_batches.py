"""Batches (issue 53): past a few dozen runs a task's runs are graded, verified and summarized a
batch at a time, each run's files the bytes the one-run jobs write, and a run that fails in a
batch fails alone. Real DAG runs beside the session's one-run scenarios, at 1, 3 and 30 runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from conftest import GPT4_RESPONSES
from test_workflow import snakemake, write_config

pytestmark = pytest.mark.e2e

# Per run, what its jobs write (the shard grades are temporary, and removed once merged).
RUN_FILES = (
    "grades.jsonl",
    "passes/a.jsonl",
    "passes/b.jsonl",
    "verify.json",
    "canary.json",
    "stats.json",
    "summary.json",
    "MANIFEST.json",
)


def results_bytes(workdir: Path) -> dict[str, bytes]:
    """Every file under results/ by relative path; a manifest without its time of writing (the one
    field of an output that is the clock's), the workflow's record (which holds the config) left out."""
    results = workdir / "results"
    files = {}
    for path in sorted(results.rglob("*")):
        name = path.relative_to(results).as_posix()
        if not path.is_file() or name == "MANIFEST.json":
            continue
        data = path.read_bytes()
        if path.name == "MANIFEST.json":
            record = json.loads(data)
            record.pop("created_utc")
            data = json.dumps(record, sort_keys=True).encode()
        files[name] = data
    return files


def jobs_run(done) -> dict[str, int]:
    printed = done.stdout + done.stderr
    table = printed[printed.index("Job stats:") :].split("\n\n")[0]
    return {rule: int(count) for rule, count in re.findall(r"^(\w+)\s+(\d+)$", table, flags=re.MULTILINE)}


def test_a_batch_of_one_run_writes_every_byte_the_one_run_jobs_write(scenario_run, tmp_path: Path) -> None:
    write_config(tmp_path, {"batch_runs": 2})
    done = snakemake(tmp_path)
    assert {rule for rule in jobs_run(done) if "0001" in rule} == {
        "grade_ifeval_0001_a",
        "grade_ifeval_0001_b",
        "finish_ifeval_0001",
    }
    assert not {"grade_shard", "verify", "stats", "summarize", "manifest"} & set(jobs_run(done))
    assert results_bytes(tmp_path) == results_bytes(scenario_run("offline_default").workdir)


def test_three_runs_of_two_tasks_in_batches_write_the_one_run_jobs_bytes(scenario_run, tmp_path: Path) -> None:
    """Three runs of the comparison scenario (Google's GPT-4 run, its halves, and a run of the
    language-checking task; its fourth, of three samples a prompt, left out) graded in batches of
    3: the IFEval runs in one process a pass, the other task's run in its own. Each run's files and
    each pair's comparison are the scenario's bytes; the scenario grades in 2 shards, which a batch
    does not: its shard files and the manifests' record of the setting are the only other bytes."""
    runs = ("gpt4_google", "gpt4_halves", "gpt4_langcheck")
    one_run = scenario_run("comparison").workdir
    config = yaml.safe_load((one_run / "test.yaml").read_text())
    config["runs"]["gpt4_x3"] = None
    write_config(tmp_path, {**config, "shards": 1, "batch_runs": 3})
    done = snakemake(tmp_path, "--until", "compare_ifeval_ifeval_prompts_github")  # every run's files, no report
    assert {rule: count for rule, count in jobs_run(done).items() if rule.startswith(("grade_", "finish_"))} == {
        "grade_ifeval_0001_a": 1,
        "grade_ifeval_0001_b": 1,
        "finish_ifeval_0001": 1,
        "grade_ifeval_langcheck_0001_a": 1,
        "grade_ifeval_langcheck_0001_b": 1,
        "finish_ifeval_langcheck_0001": 1,
    }
    batched, unbatched = results_bytes(tmp_path), results_bytes(one_run)
    for run in runs:
        for pass_ in "ab":  # each grading process's canary verdict and prompt audit: one process, the same bytes
            for kind in ("canary", "prompts"):
                ours = batched.pop(f"{run}/passes/{pass_}/{kind}-0-of-1.json")
                assert ours == unbatched.pop(f"{run}/passes/{pass_}/{kind}-0-of-2.json")
                assert ours == unbatched.pop(f"{run}/passes/{pass_}/{kind}-1-of-2.json")
        manifest = json.loads(unbatched[f"{run}/MANIFEST.json"])
        assert manifest["config"]["settings"]["shards"] == 2
        manifest["config"]["settings"]["shards"] = 1
        unbatched[f"{run}/MANIFEST.json"] = json.dumps(manifest, sort_keys=True).encode()
    compared = [name for name in batched if name.split("/")[0] in (*runs, "comparisons")]
    assert len(compared) == 3 * len(RUN_FILES) + 1  # and the one pair of a task: the GPT-4 run and its halves
    assert [name for name in compared if batched[name] != unbatched[name]] == []


def test_thirty_runs_in_three_batches_and_a_bad_one_fails_alone(tmp_path: Path) -> None:
    """30 runs of 40 of Google's GPT-4 responses in batches of 10, the 15th's file broken at line
    3: it is named in one line with its file and line, nothing of it is left, and the DAG fails
    before the steps that read every run; each of the 29 others counts, with the bytes the one-run
    jobs write for the same responses (its name in its summary and manifest aside)."""
    lines = GPT4_RESPONSES.read_text(encoding="utf-8").splitlines(keepends=True)[:40]
    (tmp_path / "forty.jsonl").write_text("".join(lines), encoding="utf-8")
    lines[2] = '{"prompt": "Write", "response": \n'
    (tmp_path / "broken.jsonl").write_text("".join(lines), encoding="utf-8")
    datasets = {name: {"path": str(tmp_path / f"{name}.jsonl")} for name in ("forty", "broken")}
    statistics = {"resamples": 1000, "level": 0.95, "interval": "percentile", "seed": 541}  # both sides
    spec = {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "forty"}

    one_run = tmp_path / "one_run"
    one_run.mkdir()
    runs = {"gpt4_google": None, "forty": spec}
    write_config(one_run, {"batch_runs": 1, "datasets": datasets, "statistics": statistics, "runs": runs})
    snakemake(one_run)

    runs = {"gpt4_google": None, **{f"copy_{index:02d}": spec for index in range(1, 31)}}
    runs["copy_15"] = {**spec, "responses": "broken"}
    batched = tmp_path / "batched"
    batched.mkdir()
    write_config(batched, {"batch_runs": 10, "datasets": datasets, "statistics": statistics, "runs": runs})
    done = snakemake(batched, "--keep-going", check=False)
    assert done.returncode != 0
    assert jobs_run(done)["finish_ifeval_0003"] == 1 and "finish_ifeval_0004" not in jobs_run(done)
    said = [line for line in done.stderr.splitlines() if line.startswith("ifaudit: error: run copy_15")]
    assert said and all(
        "failed in its batch and does not count: " in line and "broken.jsonl:3: malformed JSON" in line for line in said
    ), done.stderr[-3000:]
    assert not (batched / "results" / "copy_15").exists()
    assert not (batched / "results" / "report.md").exists()
    for run in (name for name, spec in runs.items() if spec and name != "copy_15"):
        for name in RUN_FILES:
            ours = (batched / "results" / run / name).read_bytes().replace(run.encode(), b"forty")
            theirs = (one_run / "results" / "forty" / name).read_bytes()
            if name == "MANIFEST.json":
                ours_record, theirs_record = json.loads(ours), json.loads(theirs)
                for record in (ours_record, theirs_record):
                    record.pop("created_utc")
                    record["files"]["summary"] = None  # its sha256 and size: the summary names the run
                ours, theirs = (json.dumps(record, sort_keys=True).encode() for record in (ours_record, theirs_record))
            assert ours == theirs, (run, name)
        assert json.loads((batched / "results" / run / "summary.json").read_text())["counted"] is True
