"""Container mode, the Slurm profile, and artifact bundles.

Building and running the image itself is CI's container step (containers/ci.sh), timed apart
from these tests."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import DATA, NLTK_MIRROR, REPO, UPSTREAM_SOURCE, run_cli
from test_workflow import snakemake

BIN = Path(sys.executable).parent


@pytest.fixture
def apptainer_on_path(tmp_path: Path) -> dict[str, str]:
    """Apptainer is not packaged for Debian 12 (FACTS §6). A dry run starts no container;
    Snakemake only asks `apptainer --version`, so a version-only shim stands in for it."""
    shim = tmp_path / "bin" / "apptainer"
    shim.parent.mkdir()
    shim.write_text('#!/bin/sh\necho "apptainer version 1.3.6"\n')
    shim.chmod(0o755)
    return {**os.environ, "PATH": f"{shim.parent}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}"}


def offline_configs(folder: Path) -> list[str]:
    (folder / "mirror.yaml").write_text(yaml.safe_dump({"mirror": str(DATA), "nltk_mirror": str(NLTK_MIRROR),
                                                         "grader_sources": [UPSTREAM_SOURCE]}))
    return [str(REPO / "config/config.yaml"), str(REPO / "config/offline.yaml"), str(folder / "mirror.yaml")]


def test_every_rule_resolves_the_container(apptainer_on_path, tmp_path: Path) -> None:
    configs = offline_configs(tmp_path)
    done = subprocess.run([str(BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "-n", "--sdm", "apptainer",
                           "--cores", "2", "--configfile", *configs], cwd=tmp_path, env=apptainer_on_path,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "grade_shard" in done.stdout
    probe = subprocess.run([str(BIN / "python"), "-c", f"""
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, DeploymentMethod, DeploymentSettings, OutputSettings, ResourceSettings
with SnakemakeApi(OutputSettings()) as api:
    workflow = api.workflow(resource_settings=ResourceSettings(cores=1),
                            config_settings=ConfigSettings(configfiles=[Path(c) for c in {configs!r}]),
                            deployment_settings=DeploymentSettings(deployment_method={{DeploymentMethod.APPTAINER}}),
                            snakefile=Path({str(REPO / "Snakefile")!r}))
    print(json.dumps({{rule.name: rule.container_img for rule in workflow._workflow.rules}}))
"""], cwd=tmp_path, env=apptainer_on_path, capture_output=True, text=True)
    assert probe.returncode == 0, probe.stderr
    images = __import__("json").loads(probe.stdout.strip().splitlines()[-1])
    assert len(images) >= 10 and set(images.values()) == {"ifaudit.sif"}, images


def test_slurm_profile_lints_and_dry_runs(apptainer_on_path, tmp_path: Path) -> None:
    configs = offline_configs(tmp_path)
    base = [str(BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "--profile", str(REPO / "profiles/slurm"),
            "--configfile", *configs]
    lint = subprocess.run([*base, "--lint"], cwd=tmp_path, env=apptainer_on_path, capture_output=True, text=True)
    assert lint.returncode == 0 and "Congratulations" in lint.stdout + lint.stderr, lint.stdout + lint.stderr
    dry = subprocess.run([*base, "-n"], cwd=tmp_path, env=apptainer_on_path, capture_output=True, text=True)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    # 2 passes x 16 shards: grading spreads over the cluster.
    assert re.search(r"^grade_shard\s+32$", dry.stdout, flags=re.MULTILINE), dry.stdout


@pytest.mark.e2e
def test_bundle_verifies_in_a_fresh_folder_and_names_a_flipped_byte(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    snakemake(work)
    (work / "config").mkdir()
    for name in ("config.yaml", "offline.yaml"):
        shutil.copy(REPO / "config" / name, work / "config" / name)
    shutil.copy(REPO / "requirements.lock", work / "requirements.lock")
    for pin in ("google_ifeval", "infobench"):
        (work / "vendor" / pin).mkdir(parents=True)
        shutil.copy(REPO / "vendor" / pin / "pin.toml", work / "vendor" / pin / "pin.toml")
    env = {"IFAUDIT_RESOURCES": str(work / "resources")}
    run_cli(["bundle", "--out", str(tmp_path / "bundle"), "--project", str(work), "--results", str(work / "results")],
            work / "resources", **env)

    fresh = tmp_path / "elsewhere" / "bundle"
    shutil.copytree(tmp_path / "bundle", fresh)
    done = run_cli(["verify-bundle", str(fresh)], tmp_path / "fresh-resources")
    assert "regraded byte-identically: gpt4_google" in done.stderr
    assert not (fresh / ".verify").exists()

    summary = fresh / "results/gpt4_google/summary.json"
    data = bytearray(summary.read_bytes())
    data[10] ^= 0x01
    summary.write_bytes(bytes(data))
    failed = run_cli(["verify-bundle", str(fresh), "--checksums-only"], tmp_path / "fresh-resources", check=False)
    assert failed.returncode == 3
    assert "results/gpt4_google/summary.json: sha256" in failed.stderr


@pytest.mark.e2e
def test_bundle_regrade_catches_grades_changed_with_their_checksum(tmp_path: Path) -> None:
    from ifaudit.bundle import CHECKSUMS
    from ifaudit.canonical import sha256_file

    work = tmp_path / "work"
    work.mkdir()
    snakemake(work)
    shutil.copytree(REPO / "config", work / "config")
    shutil.copy(REPO / "requirements.lock", work / "requirements.lock")
    shutil.copytree(REPO / "vendor", work / "vendor")
    run_cli(["bundle", "--out", str(tmp_path / "bundle"), "--project", str(work), "--results", str(work / "results")],
            work / "resources", IFAUDIT_RESOURCES=str(work / "resources"))
    bundle = tmp_path / "bundle"
    grades = bundle / "results/gpt4_google/grades.jsonl"
    lines = grades.read_text().splitlines(keepends=True)
    lines[3] = lines[3].replace('"follow_all_instructions":false', '"follow_all_instructions":true', 1) \
        if '"follow_all_instructions":false' in lines[3] else lines[3].replace('"follow_all_instructions":true',
                                                                               '"follow_all_instructions":false', 1)
    grades.write_text("".join(lines))
    checksums = bundle / CHECKSUMS
    checksums.write_text("".join(
        f"{sha256_file(grades)}  {name}\n" if name == "results/gpt4_google/grades.jsonl" else f"{digest}  {name}\n"
        for digest, name in (line.split("  ", 1) for line in checksums.read_text().splitlines())))
    failed = run_cli(["verify-bundle", str(bundle)], tmp_path / "r", check=False)
    assert failed.returncode == 3
    assert "run gpt4_google: regrading gives other grades" in failed.stderr and "line 4" in failed.stderr
