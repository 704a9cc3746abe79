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

from conftest import DATA, GPT4_RESPONSES, REPO

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


# What a container would not see: the shared folder holding the offline data (conftest.DATA's
# parent), unless a bind brings part of it back.
HIDDEN = DATA.resolve().parent

# An apptainer stand-in that enforces binds. It answers `--version`; `exec` records its arguments,
# then re-runs itself under `unshare --mount --propagation private`, where it mounts an empty tmpfs
# over HIDDEN, mounts back each `--bind SRC:DST[:ro]` whose DST lies in it (read-only for :ro;
# a bind of HIDDEN or a folder above it leaves HIDDEN as it is) and runs the job's command there.
APPTAINER_SHIM = """#!{python}
import os, subprocess, sys, tempfile

HIDDEN, CALLS, INSIDE = {hidden!r}, {calls!r}, "IFAUDIT_APPTAINER_SHIM_NAMESPACE"


def binds(options):
    specs = [value for flag, value in zip(options, options[1:]) if flag in ("--bind", "-B")]
    specs += [option.split("=", 1)[1] for option in options if option.startswith("--bind=")]
    for spec in (part for value in specs for part in value.split(",") if part):
        src, dst, mode = (spec.split(":") + ["", ""])[:3]
        yield src, dst or src, mode == "ro"


def mount(*args):
    done = subprocess.run(["mount", *args], capture_output=True, text=True)
    if done.returncode:
        sys.exit("apptainer stand-in: mount " + " ".join(args) + ": " + done.stderr.strip())


def contain(options):
    chosen = list(binds(options))
    if any(HIDDEN == dst or HIDDEN.startswith(dst.rstrip("/") + "/") for _, dst, _ in chosen):
        return
    inside = [(src, dst, ro) for src, dst, ro in chosen if dst.startswith(HIDDEN + "/")]
    staging = tempfile.mkdtemp(prefix="apptainer-binds-")
    for number, (src, _, _) in enumerate(inside):
        os.mkdir(os.path.join(staging, str(number)))
        mount("--bind", src, os.path.join(staging, str(number)))
    mount("-t", "tmpfs", "apptainer-hidden", HIDDEN)
    for number, (_, dst, ro) in enumerate(inside):
        os.makedirs(dst, exist_ok=True)
        mount("--bind", os.path.join(staging, str(number)), dst)
        if ro:
            mount("-o", "remount,bind,ro", dst)
    for number in range(len(inside)):  # the staging folder held the sources only until bound at dst
        done = subprocess.run(["umount", os.path.join(staging, str(number))], capture_output=True, text=True)
        if done.returncode:
            sys.exit("apptainer stand-in: umount: " + done.stderr.strip())
        os.rmdir(os.path.join(staging, str(number)))
    os.rmdir(staging)


args = sys.argv[1:]
if args == ["--version"]:
    print("apptainer version 1.3.6")
    sys.exit(0)
image = next(i for i, arg in enumerate(args) if arg.endswith(".sif"))
if os.environ.get(INSIDE) != "1":
    with open(CALLS, "a") as log:
        log.write(repr(args) + "\\n")
    os.environ[INSIDE] = "1"
    os.execvp("unshare", ["unshare", "--mount", "--propagation", "private", sys.executable, __file__, *args])
contain(args[1:image])
del os.environ[INSIDE]
os.execvp(args[image + 1], args[image + 1:])
"""


def private_mount_namespace_problem() -> str | None:
    """Why this machine cannot hide HIDDEN in a private mount namespace (root or user namespaces
    are needed), or None when a tmpfs mounted there does hide conftest.DATA."""
    probe = f"mount -t tmpfs apptainer-probe '{HIDDEN}' && test ! -e '{DATA}'"
    try:
        done = subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", probe], capture_output=True, text=True
        )
    except FileNotFoundError:
        return "no unshare command (util-linux)"
    return None if done.returncode == 0 else (done.stderr.strip() or f"exit {done.returncode}")


@pytest.fixture
def apptainer_shim(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """Apptainer is not packaged for Debian 12 (FACTS §6). This stand-in (APPTAINER_SHIM) records
    the arguments Snakemake gives `apptainer exec` and runs the job where the shared data folder is
    hidden but for its binds, so a job sees only the folders a container would have seen. Yields
    the environment that puts it first on PATH, and the file of recorded calls."""
    problem = private_mount_namespace_problem()
    if problem:
        message = f"the apptainer stand-in needs a private mount namespace, and cannot make one: {problem}"
        pytest.fail(message, pytrace=False)
    calls = tmp_path / "apptainer-calls.txt"
    shim = tmp_path / "bin" / "apptainer"
    shim.parent.mkdir()
    shim.write_text(APPTAINER_SHIM.format(python=sys.executable, hidden=str(HIDDEN), calls=str(calls)))
    shim.chmod(0o755)
    return {**os.environ, "PATH": f"{shim.parent}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}"}, calls


def in_container(env: dict[str, str], bind: list[str], code: str, path: Path) -> str:
    """What Python `code` prints about `path` (its sys.argv[1]) in an `apptainer exec` of the
    stand-in with the options `bind`."""
    done = subprocess.run(
        ["apptainer", "exec", *bind, "ifaudit.sif", sys.executable, "-c", code, str(path)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_apptainer_stand_in_shows_the_shared_folder_only_through_binds(apptainer_shim) -> None:
    env, _ = apptainer_shim
    listing = "import os, sys; print(sorted(os.listdir(sys.argv[1])))"
    read_only = "import os, sys; print(bool(os.statvfs(sys.argv[1]).f_flag & os.ST_RDONLY))"
    assert in_container(env, [], listing, HIDDEN) == "[]"  # unbound: an empty folder
    assert in_container(env, ["--bind", f"{DATA}:{DATA}:ro"], listing, HIDDEN) == str([DATA.name])
    assert in_container(env, ["--bind", f"{DATA}:{DATA}:ro"], listing, DATA) == str(sorted(os.listdir(DATA)))
    assert in_container(env, ["--bind", f"{DATA}:{DATA}:ro"], read_only, DATA) == "True"
    assert in_container(env, ["--bind", f"{DATA}:{DATA}:rw"], read_only, DATA) == "False"
    assert in_container(env, ["-B", f"{HIDDEN.parent}"], listing, HIDDEN) == str(sorted(os.listdir(HIDDEN)))
    # The mounts stay in the jobs' own namespaces: the host still sees the shared folder.
    assert sorted(os.listdir(HIDDEN)) != [] and DATA.is_dir()


def apptainer_job(env: dict[str, str], work: Path, *apptainer_args: str) -> subprocess.CompletedProcess:
    """The offline default configuration's fetch of the GPT-4 responses from the mirror, run by
    Snakemake with the apptainer profile in `work`, with `apptainer_args`."""
    configs = [str(REPO / "config/config.yaml"), str(REPO / "config/offline.yaml"), str(work / "mirror.yaml")]
    command = [
        str(BIN / "snakemake"),
        "-s",
        str(REPO / "Snakefile"),
        "--profile",
        str(REPO / "profiles/apptainer"),
        "--configfile",
        *configs,
        *apptainer_args,
    ]
    return subprocess.run(command, cwd=work, env=env, capture_output=True, text=True)


def mirror_work(folder: Path) -> tuple[Path, str]:
    """A working folder whose configuration points the mirrors at conftest.DATA, and the bind
    option tools/apptainer_binds.py gives for it."""
    folder.mkdir()
    (folder / "mirror.yaml").write_text(yaml.safe_dump({"mirror": str(DATA), "nltk_mirror": str(DATA / "nltk")}))
    configs = [str(REPO / "config/config.yaml"), str(REPO / "config/offline.yaml"), str(folder / "mirror.yaml")]
    return folder, binds(*configs, cwd=folder).stdout.strip()


def test_apptainer_profile_binds_the_mirror_for_a_real_job(apptainer_shim, tmp_path: Path) -> None:
    env, calls = apptainer_shim
    work, bind = mirror_work(tmp_path / "work")
    assert bind == f"--bind {DATA.resolve()}:{DATA.resolve()}:ro"
    dry = apptainer_job(env, work, "--apptainer-args", bind, "-n")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert bind in dry.stdout + dry.stderr  # the plan names the binds it will use
    done = apptainer_job(env, work, "--apptainer-args", bind, "--cores", "1", "resources/data/gpt4_responses.jsonl")
    assert done.returncode == 0, done.stdout + done.stderr
    recorded = calls.read_text()
    assert "'exec'" in recorded and f"'--bind', '{DATA.resolve()}:{DATA.resolve()}:ro'" in recorded, recorded
    assert (work / "resources/data/gpt4_responses.jsonl").stat().st_size > 0


def test_a_real_job_without_the_mirror_bind_cannot_read_the_mirror(apptainer_shim, tmp_path: Path) -> None:
    """The same job as above with no --apptainer-args fails: the container does not see the mirror."""
    env, calls = apptainer_shim
    work, _ = mirror_work(tmp_path / "work")
    done = apptainer_job(env, work, "--cores", "1", "resources/data/gpt4_responses.jsonl")
    assert done.returncode != 0, done.stdout + done.stderr
    recorded = calls.read_text()
    assert "'exec'" in recorded and f"'{DATA.resolve()}:" not in recorded, recorded  # run unbound
    log = (work / "logs/fetch/gpt4_responses.log").read_text()
    assert f"{GPT4_RESPONSES}: file not found" in log, log
    assert GPT4_RESPONSES.is_file() and not (work / "resources/data/gpt4_responses.jsonl").exists()


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
    # The upstream image carries neither the stand-in nor what only it needs (datasets), nor pandas
    # (Snakemake imports it at every start when it can); it carries what every importer and the
    # bundle need (pyarrow: parquet and zstd; rocrate), so one environment runs everything a run does.
    assert not {"if-verifiable", "datasets", "pandas"} & set(runtime)
    assert {"pyarrow", "rocrate"} <= set(runtime)
    assert {"if-verifiable", "datasets", "pyarrow", "rocrate"} <= set(stand_in)


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
