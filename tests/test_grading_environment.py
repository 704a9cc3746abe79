"""The grading environment's fingerprint holds only what can change a verdict of its grader, and
two grading processes whose fingerprints differ fail the canary naming exactly what differs.

The dev venv (.venv, with if-verifiable, pytest, ...) and the runtime venv (.venv-runtime, what
`make run` grades in) hold different distributions but the same grader's: their canary verdicts
are the same bytes and combine to a pass."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import GPT4_RESPONSES, IFEVAL_PROMPTS, REPO, cli_env
from grader_fixtures import missing_upstream_copy, upstream_copy
from ifaudit.io.canonical import pretty_json_bytes
from ifaudit.steps.grading.canary import combine_verdicts, combined_line, environment_differences, failure_reason
from ifaudit.tasks.environment import judged_fingerprint
from ifaudit.tasks.graders import load_own, verdict_distributions

RUNTIME_PYTHON = REPO / ".venv-runtime" / "bin" / "python"
DEV_PYTHON = Path(sys.executable)
UPSTREAM = upstream_copy()
# What Google's grader imports (absl-py, immutabledict, langdetect, nltk), regex through nltk.
UPSTREAM_DISTRIBUTIONS = ["absl-py", "immutabledict", "langdetect", "nltk", "regex"]
FINGERPRINT_KEYS = ["grader", "nltk_data", "packages", "python", "time_limits", "unicodedata", "unicodedata_exposure"]


def canary_in(python: Path, out: Path, resources: Path) -> subprocess.CompletedProcess:
    """`ifaudit canary` of ifeval with the pinned upstream copy, run by `python` on this checkout."""
    assert UPSTREAM.exists(), missing_upstream_copy(UPSTREAM)
    data = ["--prompts", str(IFEVAL_PROMPTS), "--responses", str(GPT4_RESPONSES)]
    grader = ["--grader", "upstream", "--from", str(UPSTREAM), "--offline"]
    return subprocess.run(
        [str(python), "-m", "ifaudit.cli", "canary", "--task", "ifeval", *data, *grader, "--require-pass"]
        + ["--out", str(out)],
        env=cli_env(resources, PYTHONPATH=str(REPO / "src")),
        capture_output=True,
        text=True,
        timeout=300,
    )


def has_distribution(python: Path, name: str) -> bool:
    probe = (
        f"import importlib.metadata as m\ntry:\n m.version({name!r}); print(1)\nexcept m.PackageNotFoundError: print(0)"
    )
    return subprocess.run([str(python), "-c", probe], capture_output=True, text=True, check=True).stdout.strip() == "1"


@pytest.fixture(scope="module")
def venv_verdicts(resources: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The ifeval canary verdict written by a grading process in each venv, by venv name."""
    folder = tmp_path_factory.mktemp("venv_verdicts")
    verdicts = {}
    for name, python in ((".venv", DEV_PYTHON), (".venv-runtime", runtime_python())):
        out = folder / name.strip(".") / "canary-0-of-1.json"
        out.parent.mkdir()
        done = canary_in(python, out, resources)
        assert done.returncode == 0, f"canary in {name} failed:\n{done.stderr}"
        verdicts[name] = out
    return verdicts


def runtime_python() -> Path:
    """The runtime venv's Python; its absence fails the test in one line."""
    assert RUNTIME_PYTHON.is_file(), (
        f"no runtime venv at {RUNTIME_PYTHON}: build it with `make .venv-runtime/.installed`"
    )
    return RUNTIME_PYTHON


def test_the_stand_in_is_installed_in_the_dev_venv_only() -> None:
    """The premise: a fingerprint of every installed package would tell the two venvs apart."""
    assert has_distribution(DEV_PYTHON, "if-verifiable")
    assert not has_distribution(runtime_python(), "if-verifiable")


def test_canary_verdicts_of_the_dev_and_runtime_venvs_are_byte_identical_and_combine_to_passed(
    venv_verdicts: dict[str, Path],
) -> None:
    dev, runtime = (venv_verdicts[name].read_bytes() for name in (".venv", ".venv-runtime"))
    assert dev == runtime
    combined = combine_verdicts({str(path): path.read_bytes() for path in venv_verdicts.values()})
    assert combined == dev
    assert json.loads(combined)["passed"] is True


def test_the_upstream_fingerprint_lists_exactly_the_graders_packages(venv_verdicts: dict[str, Path]) -> None:
    environment = json.loads(venv_verdicts[".venv"].read_text())["environment"]
    assert sorted(environment) == FINGERPRINT_KEYS
    exposure = REPO / "src" / "ifaudit" / "tasks" / "unicode_exposure.json"
    assert environment["unicodedata_exposure"] == hashlib.sha256(exposure.read_bytes()).hexdigest()
    assert sorted(environment["packages"]) == UPSTREAM_DISTRIBUTIONS
    assert "not installed" not in environment["packages"].values()
    assert environment["grader"]["kind"] == "upstream"
    upstream_files = ("evaluation_lib", "evaluation_main", "instructions", "instructions_registry", "instructions_util")
    assert sorted(environment["grader"]["file_sha256"]) == [
        "ifaudit/tasks/grading.py",
        *(f"instruction_following_eval/{name}.py" for name in upstream_files),
    ]


def another_nltk(verdict: Path, version: str) -> bytes:
    """The verdict's bytes as a grading process with `version` of nltk would write them (same
    writer: the file combine-canaries reads from that other process)."""
    record = json.loads(verdict.read_text())
    record["environment"]["packages"]["nltk"] = version
    return pretty_json_bytes(record)


def test_a_verdict_made_with_another_nltk_fails_the_combination_naming_nltk_and_both_versions(
    venv_verdicts: dict[str, Path],
) -> None:
    first = venv_verdicts[".venv"]
    found = json.loads(first.read_text())["environment"]["packages"]["nltk"]
    other = another_nltk(first, "3.9.1")
    combined = json.loads(combine_verdicts({"a/canary-0-of-1.json": first.read_bytes(), "b/canary-0-of-1.json": other}))
    assert combined["passed"] is False
    assert combined["disagreements"] == []  # no response disagreed
    assert combined["environment_differences"] == [
        {
            "problem": f"grading environments differ: nltk {found} vs 3.9.1",
            "differs": [{"what": "nltk", "first": found, "other": "3.9.1"}],
            "compared_with": "a/canary-0-of-1.json",
            "in": ["b/canary-0-of-1.json"],
        }
    ]
    line = combined_line(combined, 2, Path("results/canary/ifeval.json"))
    assert f"FAILED (grading environments differ: nltk {found} vs 3.9.1)" in line
    assert "disagreement" not in line


def test_every_differing_leaf_is_named_python_unicode_and_grader_files_by_path() -> None:
    sha = {name: name[0] * 64 for name in ("a", "b", "c")}
    first = {
        "grader": {"file_sha256": {"pkg/x.py": sha["a"]}, "kind": "upstream"},
        "packages": {"nltk": "3.10.4", "regex": "1"},
        "python": "3.11.7",
        "time_limits": {"nltk.redos.DEFAULT_TIMEOUT": None},
        "unicodedata": "14.0.0",
    }
    other = {
        "grader": {"file_sha256": {"pkg/x.py": sha["b"], "pkg/y.py": sha["c"]}, "kind": "upstream"},
        "packages": {"nltk": "3.10.4"},
        "python": "3.13.1",
        "time_limits": {"nltk.redos.DEFAULT_TIMEOUT": 2},
        "unicodedata": "15.1.0",
    }
    differences = environment_differences(first, other)
    assert [(d["what"], d["first"], d["other"]) for d in differences] == [
        ("pkg/x.py sha256", sha["a"], sha["b"]),
        ("pkg/y.py sha256", "absent", sha["c"]),
        ("regex", "1", "absent"),
        ("python", "3.11.7", "3.13.1"),
        ("time_limits nltk.redos.DEFAULT_TIMEOUT", None, 2),
        ("unicodedata", "14.0.0", "15.1.0"),
    ]
    problem = json.loads(combine_verdicts({"a": verdict_with(first), "b": verdict_with(other)}))
    text = problem["environment_differences"][0]["problem"]
    assert text == (
        "grading environments differ: pkg/x.py sha256 aaaaaaaaaaaa… vs bbbbbbbbbbbb…, pkg/y.py sha256 absent vs "
        "cccccccccccc…, regex 1 vs absent, python 3.11.7 vs 3.13.1, time_limits nltk.redos.DEFAULT_TIMEOUT null "
        "vs 2, unicodedata 14.0.0 vs 15.1.0"
    )


def verdict_with(environment: dict) -> bytes:
    return pretty_json_bytes(
        {"task": "t", "items": 1, "passed": True, "disagreements": [], "sentinels": 0, "sentinels_flipped": []}
        | {"environment": environment, "versions": {}}
    )


def test_a_failure_reason_counts_disagreements_and_names_environment_differences() -> None:
    both = {"disagreements": [{"problem": "grade differs"}], "environment_differences": [{"problem": "E"}]}
    assert failure_reason(both) == "1 disagreements; E"
    assert failure_reason({"disagreements": [{}, {}]}) == "2 disagreements"
    assert combined_line({"passed": True, "disagreements": []}, 3, Path("o.json")) == (
        "canary of 3 grading processes: passed -> o.json"
    )


def test_each_registry_kind_fingerprints_the_distributions_its_code_imports(stand_in) -> None:
    assert stand_in.distributions == ("if-verifiable", "immutabledict", "langdetect", "nltk", "regex")
    for registry in ("arabic_inception", "arabic_hf"):
        assert load_own(registry).distributions == ("langdetect", "nltk", "regex")
    assert judged_fingerprint()["packages"] == {}  # a judge's verdicts run through ifaudit's code only


def test_distributions_are_read_from_every_import_and_unknown_names_are_kept(tmp_path: Path) -> None:
    source = tmp_path / "grader.py"
    source.write_text(
        "import os, json\nfrom . import sibling\nfrom ifaudit.core import records\nimport mygrader.util\n"
        "def late():\n    import numpy\n    from nltk.tokenize import word_tokenize\n"
        "try:\n    import no_such_module_anywhere\nexcept ImportError:\n    pass\n"
    )
    found = verdict_distributions([source], own_packages=["mygrader"])
    assert found == ("nltk", "no_such_module_anywhere", "numpy", "regex")


def test_the_recorded_packages_are_this_venvs_versions_of_the_graders_distributions(
    venv_verdicts: dict[str, Path],
) -> None:
    packages = json.loads(venv_verdicts[".venv"].read_text())["environment"]["packages"]
    assert packages == {name: importlib.metadata.version(name) for name in UPSTREAM_DISTRIBUTIONS}
