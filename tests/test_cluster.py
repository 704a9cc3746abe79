"""Cluster use without root: apptainer binds from the configuration, network steps kept on the
submit host, the lean image's locks and stages. The image build itself, the layer check and the
real Slurm run are CI's container and cluster steps (containers/ci.sh, tools/slurm_ci.sh)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import DATA, REPO

BIN = Path(sys.executable).parent
BINDS = REPO / "tools/apptainer_binds.py"


def binds(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BINDS), *args], cwd=cwd, capture_output=True, text=True)


def test_binds_name_what_the_config_reaches_outside_the_working_folder(tmp_path: Path) -> None:
    grader, store, inside = tmp_path / "grader", tmp_path / "store", tmp_path / "work" / "data"
    for folder in (grader, store, inside):
        folder.mkdir(parents=True)
    (tmp_path / "extra.yaml").write_text(
        yaml.safe_dump(
            {
                "mirror": str(DATA),
                "nltk_mirror": str(DATA / "nltk"),  # inside the mirror: no bind of its own
                "grader_sources": ["../grader", "https://example.org/grader.tar.gz", "data"],
                "judgement_store": str(store),
                "datasets": {"x": {"path": str(tmp_path / "nowhere.jsonl")}},
            }
        )
    )
    done = binds(str(REPO / "config/config.yaml"), str(tmp_path / "extra.yaml"), cwd=tmp_path / "work")
    assert done.returncode == 0, done.stderr
    expected = sorted([f"{DATA.resolve()}:{DATA.resolve()}:ro", f"{grader}:{grader}:ro", f"{store}:{store}:rw"])
    assert done.stdout.strip() == "--bind " + ",".join(expected)


def test_binds_name_a_broken_config_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("mirror: [unclosed\n")
    done = binds(str(tmp_path / "bad.yaml"), cwd=tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert re.match(rf"apptainer_binds: {re.escape(str(tmp_path / 'bad.yaml'))}:\d+: not valid YAML", done.stderr)
    missing = binds(str(tmp_path / "absent.yaml"), cwd=tmp_path)
    assert (
        missing.returncode == 2
        and missing.stderr.strip() == f"apptainer_binds: {tmp_path / 'absent.yaml'}: file not found"
    )


@pytest.fixture
def apptainer_recorder(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """Apptainer is not packaged for Debian 12 (FACTS §6). This stand-in answers `--version`,
    records the arguments Snakemake gives `apptainer exec`, and runs the job's command on the
    host, so a real job shows which folders a container would have seen."""
    calls = tmp_path / "apptainer-calls.txt"
    shim = tmp_path / "bin" / "apptainer"
    shim.parent.mkdir()
    shim.write_text(f"""#!{sys.executable}
import os, sys
if sys.argv[1:] == ["--version"]:
    print("apptainer version 1.3.6"); sys.exit(0)
with open({str(calls)!r}, "a") as log:
    log.write(repr(sys.argv[1:]) + "\\n")
image = next(i for i, arg in enumerate(sys.argv) if arg.endswith(".sif"))
os.execvp(sys.argv[image + 1], sys.argv[image + 1:])
""")
    shim.chmod(0o755)
    return {**os.environ, "PATH": f"{shim.parent}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}"}, calls


def test_apptainer_profile_binds_the_mirror_for_a_real_job(apptainer_recorder, tmp_path: Path) -> None:
    env, calls = apptainer_recorder
    work = tmp_path / "work"
    work.mkdir()
    configs = [str(REPO / "config/config.yaml"), str(REPO / "config/offline.yaml")]
    (work / "mirror.yaml").write_text(yaml.safe_dump({"mirror": str(DATA), "nltk_mirror": str(DATA / "nltk")}))
    configs.append(str(work / "mirror.yaml"))
    bind = binds(*configs, cwd=work).stdout.strip()
    assert bind == f"--bind {DATA.resolve()}:{DATA.resolve()}:ro"
    base = [
        str(BIN / "snakemake"),
        "-s",
        str(REPO / "Snakefile"),
        "--profile",
        str(REPO / "profiles/apptainer"),
        "--configfile",
        *configs,
        "--apptainer-args",
        bind,
    ]
    dry = subprocess.run([*base, "-n"], cwd=work, env=env, capture_output=True, text=True)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert bind in dry.stdout + dry.stderr  # the plan names the binds it will use
    done = subprocess.run(
        [*base, "--cores", "1", "resources/data/gpt4_responses.jsonl"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    recorded = calls.read_text()
    assert "'exec'" in recorded and f"'--bind', '{DATA.resolve()}:{DATA.resolve()}:ro'" in recorded, recorded
    assert (work / "resources/data/gpt4_responses.jsonl").stat().st_size > 0


def test_network_steps_stay_on_the_submit_host() -> None:
    probe = subprocess.run(
        [
            str(BIN / "python"),
            "-c",
            f"""
import json
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings
configs = [Path({str(REPO / "config/config.yaml")!r}), Path({str(REPO / "config/offline.yaml")!r})]
with SnakemakeApi(OutputSettings()) as api:
    workflow = api.workflow(resource_settings=ResourceSettings(cores=1), config_settings=ConfigSettings(
        configfiles=configs, config={{"mirror": {str(DATA)!r}}}), snakefile=Path({str(REPO / "Snakefile")!r}))
    print(json.dumps(sorted(rule.name for rule in workflow._workflow.rules if rule.name in workflow._workflow._localrules)))
""",
        ],
        cwd=REPO.parent,
        capture_output=True,
        text=True,
    )
    assert probe.returncode == 0, probe.stderr
    local = set(yaml.safe_load(probe.stdout.strip().splitlines()[-1]))
    assert {"environment", "fetch", "judge"} <= local
    assert "grade_shard" not in local


def lock_pins(path: Path) -> dict[str, str]:
    return dict(re.findall(r"^([a-z0-9._-]+)==(\S+) \\", path.read_text(), flags=re.MULTILINE))


def test_runtime_locks_hold_no_test_tools_and_agree_with_the_dev_lock() -> None:
    dev = lock_pins(REPO / "requirements.lock")
    runtime = lock_pins(REPO / "requirements-runtime.lock")
    stand_in = lock_pins(REPO / "requirements-stand-in.lock")
    for lock in (runtime, stand_in):
        assert not {"pytest", "hypothesis", "snakemake-executor-plugin-slurm"} & set(lock)
        assert all(dev[name] == version for name, version in lock.items())  # same pins: same grades
    # The upstream image carries neither the stand-in nor what only it needs (datasets, pyarrow).
    assert not {"if-verifiable", "datasets", "pyarrow"} & set(runtime)
    assert {"if-verifiable", "datasets"} <= set(stand_in)


def dockerfile_stages() -> dict[str, str]:
    text = re.sub(r"\\\n", " ", (REPO / "Dockerfile").read_text())
    parts = re.split(r"^FROM \S+ AS (\S+)$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def test_only_the_upstream_stage_names_a_commit_and_a_grader_source() -> None:
    stages = dockerfile_stages()
    assert set(stages) == {"build", "runtime", "upstream", "stand-in"}
    assert "ifaudit.grader.commit" in stages["upstream"] and "IFAUDIT_GRADER_SOURCE=" in stages["upstream"]
    for name in ("runtime", "stand-in"):
        assert "grader.commit" not in stages[name] and "IFAUDIT_GRADER_SOURCE" not in stages[name]
    # Build inputs and extra CA certificates reach only the thrown-away stage.
    assert "build-inputs" in stages["build"] and "extra-ca" in stages["build"]
    for name in ("runtime", "upstream", "stand-in"):
        assert not re.search(r"^(COPY|ADD) [^\n]*build-inputs", stages[name], flags=re.MULTILINE)
        assert "extra-ca" not in stages[name]
    for label in ("version", "revision", "source", "created", "licenses", "base.digest"):
        assert f"org.opencontainers.image.{label}=" in stages["runtime"]


def test_build_script_labels_the_grader_kind_it_builds(tmp_path: Path) -> None:
    """containers/build.sh with an engine that prints its arguments: the stand-in gets its own lock
    and stage and no commit; the upstream build gets the pinned commit."""
    engine = tmp_path / "engine"
    engine.write_text('#!/bin/sh\n[ "$1" = image ] && { echo sha256:0123; exit 0; }\nprintf "%s\\n" "$@"\n')
    engine.chmod(0o755)
    env = {**os.environ, "ENGINE": str(engine), "BASE": "localhost/base", "SOURCE_DATE_EPOCH": "1700000000"}
    pin = (REPO / "vendor/google_ifeval/pin.toml").read_text()
    commit = re.search(r'^commit = "(.*)"', pin, flags=re.MULTILINE).group(1)
    stand_in = subprocess.run(
        ["bash", str(REPO / "containers/build.sh")],
        env={**env, "GRADER": "stand-in"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    upstream = subprocess.run(
        ["bash", str(REPO / "containers/build.sh")],
        env={**env, "GRADER": "upstream"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert "stand-in" in stand_in and "LOCK=requirements-stand-in.lock" in stand_in
    assert not any(arg.startswith("GRADER_COMMIT=") for arg in stand_in)
    assert f"GRADER_COMMIT={commit}" in upstream and "LOCK=requirements-runtime.lock" in upstream
    assert "CREATED=2023-11-14T22:13:20Z" in upstream and "BASE_DIGEST=sha256:0123" in upstream
    wrong = subprocess.run(
        ["bash", str(REPO / "containers/build.sh")], env={**env, "GRADER": "mine"}, capture_output=True, text=True
    )
    assert wrong.returncode == 2 and "GRADER must be upstream or stand-in" in wrong.stderr


def layer_archive(path: Path, layers: list[dict[str, bytes]]) -> Path:
    """A docker-archive as `podman save` writes it: manifest.json and one tar per layer."""
    import io
    import json
    import tarfile

    def add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))

    with tarfile.open(path, "w") as image:
        names = []
        for number, files in enumerate(layers):
            buffer = io.BytesIO()
            with tarfile.open(fileobj=buffer, mode="w") as layer:
                for name, data in files.items():
                    add(layer, name, data)
            names.append(f"layer{number}.tar")
            add(image, names[-1], buffer.getvalue())
        add(image, "manifest.json", json.dumps([{"Layers": names}]).encode())
    return path


def test_layer_check_finds_a_host_certificate_and_a_build_input_in_any_layer(tmp_path: Path) -> None:
    body = [
        "MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ",
        "RTESMBAGA1UEChMJQmFsdGltb3JlMRMwEQYDVQQLEwpDeWJlclRydXN0MSIwIAYD",
        "VQQDExlCYWx0aW1vcmUgQ3liZXJUcnVzdCBSb290MB4XDTAwMDUxMjE4NDYwMFoX",
    ]
    cert = tmp_path / "site.crt"
    cert.write_text("-----BEGIN CERTIFICATE-----\n" + "\n".join(body) + "\n-----END CERTIFICATE-----\n")
    check = [sys.executable, str(REPO / "containers/check_layers.py")]
    clean = layer_archive(tmp_path / "clean.tar", [{"usr/bin/python3": b"\x7fELF"}, {"opt/ifaudit/pin.toml": b"x"}])
    done = subprocess.run([*check, str(clean), str(cert)], capture_output=True, text=True)
    assert done.returncode == 0 and "2 layers read; 1 host CA certificates" in done.stdout, done.stdout
    bundle = ("junk\n" + cert.read_text()).encode()
    dirty = layer_archive(
        tmp_path / "dirty.tar",
        [
            {"etc/ssl/certs/ca-certificates.crt": bundle},
            {"tmp/build-inputs/data/x.jsonl": b"{}"},
        ],
    )
    found = subprocess.run([*check, str(dirty), str(cert)], capture_output=True, text=True)
    assert found.returncode == 1
    assert "layer0.tar: etc/ssl/certs/ca-certificates.crt holds site.crt" in found.stdout
    assert "layer1.tar: build input tmp/build-inputs/data/x.jsonl" in found.stdout
