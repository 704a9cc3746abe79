"""What every process of a run pays before its work: cut without changing an answer (issue 39).

Each shortcut here is checked against the slow way it replaces, on the real environment."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ifaudit.core.stats import Resamples, resample_indices
from ifaudit.io import distributions
from ifaudit.io.distributions import distributions_providing


def test_distributions_providing_answers_as_packages_distributions_does() -> None:
    """For every top-level name the installed distributions provide, asked all at once and one at a
    time (where most distributions are skipped unread): the same Names in the same order."""
    everything = importlib.metadata.packages_distributions()
    assert len(everything) > 20  # the real environment, not an empty one
    assert distributions_providing(everything) == everything
    alone = {name: distributions_providing([name]).get(name) for name in everything}
    assert alone == everything
    assert distributions_providing(["no_distribution_provides_this"]) == {}


def test_distributions_providing_without_the_standard_librarys_inference(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Python whose importlib.metadata no longer has the inference it reuses reads every
    distribution the standard library's whole way: the same answer."""
    everything = importlib.metadata.packages_distributions()
    monkeypatch.setattr(distributions, "_INFERRED", None)
    asked = sorted(everything)[::7]
    assert distributions_providing([*asked, "no_distribution_provides_this"]) == {
        name: everything[name] for name in asked
    }


@pytest.mark.parametrize(
    ("resamples", "clusters"),
    [(1, 1), (2, 541), (511, 3), (512, 541), (1300, 541), (3, 70_000)],
)
def test_resamples_drawn_block_by_block_are_the_draws_of_one_call(resamples: int, clusters: int) -> None:
    """The counts are those of resample_indices' one call (the draws the seed names), whatever
    the blocks: fewer rows than a block, a block and a bit, counts wider than a byte or two."""
    counts = Resamples.draw(7, resamples, clusters).counts
    expected = np.zeros((resamples, clusters), dtype=np.int64)
    np.add.at(expected, (np.arange(resamples)[:, None], resample_indices(7, resamples, clusters)), 1)
    assert counts.shape == expected.shape and (counts == expected).all()


@pytest.mark.parametrize("largest", [50, 2**50])
def test_resample_sums_block_by_block_are_the_exact_integer_sums(largest: int) -> None:
    """In float64 (small values) and in int64 (past 2**53 / prompts), as Python's integers add them."""
    resamples = Resamples.draw(3, 1300, 541)
    columns = np.random.default_rng(5).integers(0, largest, size=(541, 4), dtype=np.int64)
    exact = resamples.counts.astype(object) @ columns.astype(object)
    found = resamples.sums(columns)
    assert found.dtype == np.int64 and (found.astype(object) == exact).all()


# What a small job must not import (each is what one command needs, ≈ 5-100 ms at every start):
# numpy (the statistics), YAML (the leaderboard importer), Pillow (the PNG plots), tomllib (the
# version, read from pyproject.toml), importlib.metadata (installed versions), the pins and
# their sources (materializing graders), the task registry (the tasks' declarations).
HEAVY = (
    "numpy",
    "yaml",
    "PIL",
    "tomllib",
    "importlib.metadata",
    "ifaudit.io.remote.pins",
    "ifaudit.tasks.registry",
    "ifaudit.inputs.importers.leaderboard",
)
PASSES = "results/gpt4_google/passes"
SMALL_JOBS = {
    "verify": (
        [f"--first={PASSES}/a.jsonl", f"--second={PASSES}/b.jsonl"]
        + ["--first-out=OUT/a.jsonl", "--second-out=OUT/b.jsonl", "--out=OUT/grades.jsonl", "--record=OUT/v.json"]
        + [f"--canaries={PASSES}/a/canary-0-of-1.json", "--canary-out=OUT/canary.json"],
        (),
    ),
    "combine-canaries": (
        [f"{PASSES}/a/canary-0-of-1.json", f"{PASSES}/b/canary-0-of-1.json", "--out=OUT/canary.json"],
        (),
    ),
    "combine-audits": ([f"{PASSES}/a/prompts-0-of-1.json", f"{PASSES}/b/prompts-0-of-1.json", "--out=OUT/a.json"], ()),
    "counted": (["--results=results"], ()),
    "summarize": (
        ["--run=gpt4_google", "--task=ifeval", "--label=GPT-4", "--grades=results/gpt4_google/grades.jsonl"]
        + ["--prompts=resources/data/ifeval_prompts_github.jsonl", "--responses=resources/data/gpt4_responses.jsonl"]
        + ["--canary=results/gpt4_google/canary.json", "--out=OUT/summary.json"],
        ("ifaudit.tasks.registry",),
    ),
    "manifest": (
        ["--run=gpt4_google", "--config-json={}", "--file=grades=results/gpt4_google/grades.jsonl"]
        + ["--dataset=gpt4_responses=resources/data/gpt4_responses.json", "--out=OUT/MANIFEST.json"],
        ("tomllib", "importlib.metadata"),  # the versions it records
    ),
    "stats": (
        ["--task=ifeval", "--grades=results/gpt4_google/grades.jsonl", "--resamples=100"]
        + ["--prompts=resources/data/ifeval_prompts_github.jsonl", "--out=OUT/stats.json"],
        ("numpy", "ifaudit.tasks.registry"),
    ),
    "report": (
        ["--plan=PLAN", "--plan-sha256=SHA", "--out-dir=OUT/report"],
        ("PIL", "tomllib", "ifaudit.tasks.registry"),
    ),
}


@pytest.mark.e2e
@pytest.mark.parametrize("command", sorted(SMALL_JOBS))
def test_small_jobs_start_without_what_other_commands_need(command: str, default_run_copy: Path) -> None:
    """Each of the DAG's small jobs (and `make run`'s last word, counted), run on a finished
    run's files in a process of its own, imports none of HEAVY but what it uses."""
    run = default_run_copy
    (run / "out").mkdir()
    arguments, needed = SMALL_JOBS[command]
    (plan,) = (run / ".snakemake" / "ifaudit").glob("report-plan-*.json")
    sha256 = plan.stem.removeprefix("report-plan-")
    argv = [word.replace("OUT", "out").replace("PLAN", str(plan)).replace("SHA", sha256) for word in arguments]
    probe = (
        "import json, sys\n"
        "from ifaudit.cli import main\n"
        f"status = main([{command!r}, *{argv!r}])\n"
        f"print(json.dumps([status, [m for m in {HEAVY!r} if m in sys.modules]]))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=run, capture_output=True, text=True, check=True)
    status, imported = json.loads(done.stdout.splitlines()[-1])
    assert status == 0, done.stderr
    assert sorted(set(imported) - set(needed)) == [], f"ifaudit {command} imported {imported}"


def test_the_stand_in_grader_loads_without_its_packages_dataset_api() -> None:
    """if_verifiable's package __init__ imports its dataset API (datasets, pandas), which no checker
    uses: a process grading with the stand-in loads its registry without them, and the registry is
    the same files (the identity hashes if_verifiable/ifeval/*.py, as before)."""
    probe = (
        "import sys, json; from ifaudit.tasks.graders import load_stand_in; registry = load_stand_in(); "
        "print(json.dumps([sorted(registry.file_sha256), len(registry.instructions), "
        "sorted(m for m in ('datasets', 'pandas', 'if_verifiable.api') if m in sys.modules)]))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    files, checkers, heavy = json.loads(done.stdout)
    assert heavy == []
    assert checkers > 20
    assert [name for name in files if name.startswith("if_verifiable/")] == [
        f"if_verifiable/ifeval/{name}.py"
        for name in ("__init__", "instructions", "instructions_registry", "instructions_util")
    ]
