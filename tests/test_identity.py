"""Identity of everything that decides a verdict: a registry of ours is identified by the sha256 of
its whole import closure within ifaudit (not its own file alone), and the grading driver's file is
part of every grader's identity. So an edit to the Arabic text helpers, which both Arabic
registries import, changes their identity, and the canary refuses to combine a verdict made
before the edit with one made after it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO, cli_env
from ifaudit.io.closure import import_closure
from ifaudit.tasks.graders import load_own

TEXT = "ifaudit/checkers/arabic/text.py"


def test_an_arabic_registrys_identity_covers_every_module_it_imports() -> None:
    inception = import_closure("ifaudit.checkers.arabic.inception_registry")
    hf = import_closure("ifaudit.checkers.arabic.hf_registry")
    assert TEXT in inception and TEXT in hf
    assert "ifaudit/checkers/arabic/inception_registry.py" in hf  # the HF registry reuses Inception's classes
    for registry in ("arabic_inception", "arabic_hf"):
        identity = load_own(registry).file_sha256
        assert TEXT in identity and "ifaudit/tasks/grading.py" in identity, registry


def _canary_verdict(source: Path, out: Path, resources: Path) -> dict:
    """`ifaudit canary` of the Arabic task run from the package at `source` (a copy of src/)."""
    env = cli_env(resources, PYTHONPATH=str(source))
    done = subprocess.run(
        [sys.executable, "-m", "ifaudit.cli", "canary", "--task", "ifeval_arabic_inception", "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def test_an_edit_to_the_arabic_text_helpers_changes_the_identity_and_the_canary_refuses_the_old_record(
    resources: Path, tmp_path: Path
) -> None:
    before, after = tmp_path / "before", tmp_path / "after"
    for copy in (before, after):
        shutil.copytree(REPO / "src", copy, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    with (after / TEXT).open("a", encoding="utf-8") as text:
        text.write("\n# an edit that changes no verdict, but the code that decides them\n")
    old = _canary_verdict(before, tmp_path / "canary-0-of-1.json", resources)
    new = _canary_verdict(after, tmp_path / "canary-1-of-1.json", resources)
    assert old["passed"] and new["passed"]  # each alone is a passing canary
    old_files, new_files = (verdict["environment"]["grader"]["file_sha256"] for verdict in (old, new))
    assert [name for name in sorted(old_files) if old_files[name] != new_files.get(name)] == [TEXT]
    combined = tmp_path / "combined.json"
    done = subprocess.run(
        [sys.executable, "-m", "ifaudit.cli", "combine-canaries", *(str(p) for p in sorted(tmp_path.glob("canary-*")))]
        + ["--out", str(combined)],
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    verdict = json.loads(combined.read_text())
    assert not verdict["passed"]
    assert verdict["disagreements"] == []
    problem = f"grading environments differ: {TEXT} sha256 {old_files[TEXT][:12]}… vs {new_files[TEXT][:12]}…"
    assert [d["problem"] for d in verdict["environment_differences"]] == [problem]
    assert f"FAILED (grading environments differ: {TEXT} sha256 " in done.stderr
    assert "runs graded by these processes will not count" in done.stderr
