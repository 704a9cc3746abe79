"""Container mode and the Slurm profile.

Building and running the image itself is CI's container step (containers/ci.sh), timed apart
from these tests. The bundle tests are in test_bundle.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import DATA, NLTK_MIRROR, REPO, UPSTREAM_SOURCE

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
    (folder / "mirror.yaml").write_text(
        yaml.safe_dump({"mirror": str(DATA), "nltk_mirror": str(NLTK_MIRROR), "grader_sources": [UPSTREAM_SOURCE]})
    )
    return [str(REPO / "config/config.yaml"), str(REPO / "config/offline.yaml"), str(folder / "mirror.yaml")]


def test_every_rule_resolves_the_container(apptainer_on_path, tmp_path: Path) -> None:
    configs = offline_configs(tmp_path)
    done = subprocess.run(
        [
            str(BIN / "snakemake"),
            "-s",
            str(REPO / "Snakefile"),
            "-n",
            "--sdm",
            "apptainer",
            "--cores",
            "2",
            "--configfile",
            *configs,
        ],
        cwd=tmp_path,
        env=apptainer_on_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "grade_shard" in done.stdout
    probe = subprocess.run(
        [
            str(BIN / "python"),
            "-c",
            f"""
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
""",
        ],
        cwd=tmp_path,
        env=apptainer_on_path,
        capture_output=True,
        text=True,
    )
    assert probe.returncode == 0, probe.stderr
    images = __import__("json").loads(probe.stdout.strip().splitlines()[-1])
    assert len(images) >= 10 and set(images.values()) == {"ifaudit.sif"}, images


def test_slurm_profile_lints_and_dry_runs(apptainer_on_path, tmp_path: Path) -> None:
    configs = offline_configs(tmp_path)
    base = [
        str(BIN / "snakemake"),
        "-s",
        str(REPO / "Snakefile"),
        "--profile",
        str(REPO / "profiles/slurm"),
        "--configfile",
        *configs,
    ]
    lint = subprocess.run([*base, "--lint"], cwd=tmp_path, env=apptainer_on_path, capture_output=True, text=True)
    assert lint.returncode == 0 and "Congratulations" in lint.stdout + lint.stderr, lint.stdout + lint.stderr
    # `shards: auto` counts the responses once fetched (fetch is a checkpoint): fetch them for
    # real, then plan. 541 responses at 200 a shard: 3 shards a pass, 2 passes.
    fetched = subprocess.run(
        [*base, "--executor", "local", "--cores", "1", "resources/data/gpt4_responses.jsonl"],
        cwd=tmp_path,
        env=apptainer_on_path,
        capture_output=True,
        text=True,
    )
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    for per_shard, jobs in ((200, 6), (5000, 2)):
        dry = subprocess.run(
            [*base, "-n", "--config", "shards=auto", f"shard_responses={per_shard}"],
            cwd=tmp_path,
            env=apptainer_on_path,
            capture_output=True,
            text=True,
        )
        assert dry.returncode == 0, dry.stdout + dry.stderr
        assert re.search(rf"^grade_shard\s+{jobs}$", dry.stdout, flags=re.MULTILINE), dry.stdout
