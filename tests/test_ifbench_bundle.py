"""End-to-end: the bundle of an audit with IFBench runs (the offline config plus config/ifbench.yaml)
carries what each task's runs read — the pinned grader files of each pin and version used, and
the NLTK resources each task reads — and verifies offline from them alone: both IFBench runs
regraded byte-identically and their derived files recomputed. A tampered IFBench grader file is
refused, named, even with every checksum rewritten to match."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import IFAUDIT, IFBENCH_300_RUN, REPO, cli_env
from test_bundle import _rewrite_checksums, clean_env, without_network

pytestmark = pytest.mark.e2e

RUNS = ("gpt4_google", "ifbench_sample", "ifbench_sample_db69a6f", IFBENCH_300_RUN)
C6767A1 = "grader/allenai_ifbench/c6767a1"
DB69A6F = "grader/allenai_ifbench/db69a6f"


@pytest.fixture(scope="module")
def ifbench_bundle(ifbench_dag_run: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The session's IFBench audit bundled (the project's source is this checkout, dirty while
    developing, hence --allow-dirty: the bundle ships the code under test)."""
    root = tmp_path_factory.mktemp("ifbench_bundle")
    configs = [REPO / "config/config.yaml", REPO / "config/offline.yaml", ifbench_dag_run / "test.yaml"]
    made = subprocess.run(
        [str(IFAUDIT), "bundle", "--allow-dirty", "--out", str(root / "bundle"), "--project", str(REPO)]
        + ["--results", str(ifbench_dag_run / "results")]
        + [part for config in configs for part in ("--config", str(config))],
        cwd=ifbench_dag_run,
        env=cli_env(ifbench_dag_run / "resources"),
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    return {"bundle": root / "bundle", "archive": root / "bundle.tar.gz", "digest": made.stdout.strip()}


def _verify(bundle: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """verify-bundle as a reviewer runs it: no network, no IFAUDIT_/NLTK_ variables, another HOME,
    and a temporary folder of its own (no copy of upstream's files or NLTK's data beside it)."""
    scratch = cwd / "tmp"
    scratch.mkdir(exist_ok=True)
    return subprocess.run(
        [*without_network(), str(IFAUDIT), "verify-bundle", str(bundle), *args],
        cwd=cwd,
        env=clean_env(HOME=str(cwd / "home"), TMPDIR=str(scratch)),
        capture_output=True,
        text=True,
    )


def test_the_bundle_carries_each_tasks_pinned_grader_and_nltk_resources(ifbench_bundle: dict) -> None:
    bundle = ifbench_bundle["bundle"]
    listed = {line.split("  ", 1)[1] for line in (bundle / "CHECKSUMS.sha256").read_text().splitlines()}
    for needed in (
        "grader/google_ifeval/instruction_following_eval/instructions.py",
        f"{C6767A1}/instructions.py",
        f"{C6767A1}/LICENSE",
        f"{C6767A1}/NOTICE",
        f"{DB69A6F}/ifbench/instructions.py",
        f"{DB69A6F}/evaluation_lib.py",
        "nltk_data/tokenizers/punkt_tab/README",
        "nltk_data/tokenizers/punkt_tab/english/sent_starters.txt",
        "nltk_data/corpora/stopwords/english",
        "nltk_data/packages/taggers/averaged_perceptron_tagger.zip",
    ):
        assert needed in listed, needed
    description = json.loads((bundle / "BUNDLE.json").read_text())
    assert description["grader"]["folder"] == "grader/google_ifeval"
    assert [(g["folder"], g["pin"], g["version"]) for g in description["task_graders"]] == [
        (C6767A1, "project/vendor/allenai_ifbench/pin.toml", "c6767a1"),
        (DB69A6F, "project/vendor/allenai_ifbench/pin.toml", "db69a6f"),
    ]
    assert {"tokenizers/punkt_tab", "corpora/stopwords", "taggers/averaged_perceptron_tagger_eng"} == set(
        description["nltk_data"]["resources"]
    )
    cited = yaml.safe_load((bundle / "CITATION.cff").read_text())
    assert (
        "AllenAI's IFBench grader allenai/IFBench (https://github.com/allenai/IFBench) at commit c6767a1"
        in cited["abstract"]
    )
    assert "Google's IFEval grader google-research/instruction_following_eval" in cited["abstract"]  # gpt4_google's
    assert cited["keywords"] == ["instruction following", "IFEval", "IFBench", "replication"]


def test_a_bundle_of_an_audit_with_ifbench_runs_verifies_offline_from_itself(
    ifbench_bundle: dict, tmp_path: Path
) -> None:
    done = _verify(ifbench_bundle["archive"], tmp_path, "--expect", ifbench_bundle["digest"])
    assert done.returncode == 0, done.stderr
    assert f"regraded byte-identically (both passes): {', '.join(RUNS)}" in done.stderr
    assert "derived files recomputed identically" in done.stderr
    assert "authenticity NOT checked" not in done.stderr


@pytest.mark.parametrize("with_its_pin", [False, True], ids=["file", "file_and_pin"])
def test_security_a_tampered_ifbench_grader_file_is_refused_naming_it(
    ifbench_bundle: dict, tmp_path: Path, with_its_pin: bool
) -> None:
    """A forger edits one of IFBench's pinned grader files (and, in the second case, its pin to
    match) and rewrites every checksum: the bundle agrees with itself, yet is refused in one
    line naming the file (or the pin), before anything is graded."""
    from ifaudit.io.canonical import sha256_file

    bundle = tmp_path / "forged"
    shutil.copytree(ifbench_bundle["bundle"], bundle)
    grader = bundle / DB69A6F / "ifbench/instructions.py"
    before = sha256_file(grader)
    grader.write_text(grader.read_text() + "\n# every verdict is mine now\n")
    if with_its_pin:
        pin = bundle / "project/vendor/allenai_ifbench/pin.toml"
        pin.write_text(pin.read_text().replace(before, sha256_file(grader)))
    _rewrite_checksums(bundle)
    done = _verify(bundle, tmp_path)
    assert done.returncode == 3, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("ifaudit: error: ")]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    if with_its_pin:
        assert "project/vendor/allenai_ifbench/pin.toml: not this ifaudit's pin of the upstream grader" in errors[0]
    else:
        assert f"{DB69A6F}/ifbench/instructions.py: its bytes have sha256 {sha256_file(grader)}" in errors[0]
        assert f"project/vendor/allenai_ifbench/pin.toml pins {before}" in errors[0]
