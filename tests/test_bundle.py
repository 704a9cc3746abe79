"""Artifact bundles as a reviewer meets them: made in one clone after a real run, checked in
another clone with no network and no shared folder, and refused when a derived file was edited
and every checksum rewritten to match."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from conftest import DATA, NLTK_MIRROR, REPO
from grader_fixtures import upstream_copy

pytestmark = pytest.mark.e2e

BIN = Path(sys.executable).parent
GRADER_SOURCE = upstream_copy()
RUN = "gpt4_google"


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IFAUDIT_", "NLTK_", "PYTHONPATH"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


def ifaudit(
    args: list[str], cwd: Path, source: Path, prefix: tuple[str, ...] = (), **env: str
) -> subprocess.CompletedProcess:
    """The CLI of the clone at `source`, run as a reviewer would: python -m ifaudit.cli."""
    return subprocess.run(
        [*prefix, sys.executable, "-m", "ifaudit.cli", *args],
        cwd=cwd,
        env=clean_env(PYTHONPATH=str(source / "src"), **env),
        capture_output=True,
        text=True,
    )


def clone(target: Path) -> Path:
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(target)], check=True)
    return target


def without_network() -> tuple[str, ...]:
    """`unshare -rn`: a new network namespace with no interface up. A test that promises no
    network fails where the machine cannot drop it, rather than running with the network."""
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True) if shutil.which("unshare") else None
    if probe is None or probe.returncode != 0:
        pytest.fail("this machine cannot drop the network (unshare -rn): the offline check cannot run", pytrace=False)
    return ("unshare", "-rn")


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One real offline run (pinned upstream grader) from a clone, bundled twice."""
    if not (GRADER_SOURCE / "instruction_following_eval").is_dir():
        pytest.fail(f"no copy of the pinned upstream grader at {GRADER_SOURCE}", pytrace=False)
    root = tmp_path_factory.mktemp("bundle")
    first = clone(root / "clone1")
    work = root / "work"
    work.mkdir()
    (work / "test.yaml").write_text(
        yaml.safe_dump(
            {
                "grader": "upstream",
                "grader_sources": [str(GRADER_SOURCE)],
                "statistics": {"resamples": 200, "level": 0.95, "interval": "percentile", "seed": 541},
            }
        )
    )
    configs = [first / "config/config.yaml", first / "config/offline.yaml", work / "test.yaml"]
    done = subprocess.run(
        [
            str(BIN / "snakemake"),
            "-s",
            str(first / "Snakefile"),
            "--cores",
            "2",
            "--configfile",
            *map(str, configs),
            "--config",
            f"mirror={DATA}",
            f"nltk_mirror={NLTK_MIRROR}",
        ],
        cwd=work,
        env=clean_env(),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    digests, notes = [], []
    # The second bundle is made under another umask, beside the staging folder of a killed bundle.
    (root / ".b2.staging-killed").mkdir()
    (root / ".b2.staging-killed/half.json").write_text("{")
    for name, umask in (("b1", ()), ("b2", ("sh", "-c", 'umask 027; exec "$@"', "sh"))):
        bundled = ifaudit(
            [
                "bundle",
                "--out",
                str(root / name),
                "--project",
                str(first),
                *[part for config in configs for part in ("--config", str(config))],
            ],
            work,
            first,
            umask,
            IFAUDIT_RESOURCES=str(work / "resources"),
        )
        assert bundled.returncode == 0, bundled.stderr
        digests.append(bundled.stdout.strip())
        notes.append(bundled.stderr)
    assert digests[0] == digests[1]
    return {"root": root, "clone": first, "work": work, "bundle": root / "b1", "digest": digests[0], "notes": notes}


def test_the_bundle_says_how_to_cite_and_verify_it(made: dict) -> None:
    """CITATION.cff: Citation File Format 1.2.0 naming the runs, the commit that ran them and the
    verify command; checksummed like every other file."""
    bundle = made["bundle"]
    cited = yaml.safe_load((bundle / "CITATION.cff").read_text())
    head = subprocess.run(["git", "-C", str(made["clone"]), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert cited["cff-version"] == "1.2.0" and cited["version"] == head.stdout.strip()
    assert RUN in cited["title"] and "ifaudit verify-bundle NAME.tar.gz --expect ROOT_DIGEST" in cited["message"]
    assert cited["authors"] and cited["authors"][0]["name"]
    assert "  CITATION.cff\n" in (bundle / "CHECKSUMS.sha256").read_text()


def test_two_bundles_of_one_run_are_the_same_bytes_and_hold_everything(made: dict) -> None:
    root, bundle = made["root"], made["bundle"]
    first, second = (root / "b1.tar.gz").read_bytes(), (root / "b2.tar.gz").read_bytes()
    assert first == second
    assert first[4:8] == b"\0\0\0\0"  # gzip header mtime
    with tarfile.open(root / "b1.tar.gz") as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == sorted(m.name for m in members)
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in members} == {(0, 0, 0, "", "")}
    assert {m.mode for m in members} <= {0o644, 0o755}

    checksums = bundle / "CHECKSUMS.sha256"
    assert checksums.stat().st_mode & 0o777 == 0o644
    assert made["digest"] == "sha256:" + hashlib.sha256(checksums.read_bytes()).hexdigest()
    assert (bundle / "ROOT_DIGEST").read_text().strip() == made["digest"]
    assert made["digest"] in (bundle / "results/report.digest.md").read_text()
    listed = {line.split("  ", 1)[1] for line in checksums.read_text().splitlines()}
    assert not listed & {"CHECKSUMS.sha256", "ROOT_DIGEST", "results/report.digest.md"}
    for needed in (
        "project/Snakefile",
        "project/workflow/rules/grade.smk",
        "project/requirements-runtime.lock",
        "project/src/ifaudit/cli.py",
        "project/vendor/google_ifeval/pin.toml",
        "config/02-test.yaml",
        "grader/google_ifeval/instruction_following_eval/instructions.py",
        "grader/google_ifeval/LICENSE",
        "grader/google_ifeval/NOTICE",
        "nltk_data/tokenizers/punkt_tab/english/sent_starters.txt",
        "resources/environment/ifeval.json",
        "resources/data/gpt4_responses.jsonl",
        f"results/{RUN}/passes/a.jsonl",
        "results/plots/accuracy.png",
        "ro-crate-metadata.json",
    ):
        assert needed in listed, needed
    manifest = json.loads((bundle / f"results/{RUN}/MANIFEST.json").read_text())
    for entry in [*manifest["files"].values(), *manifest["datasets"].values()]:
        assert entry["path"] in listed, entry["path"]
    description = json.loads((bundle / "BUNDLE.json").read_text())
    head = subprocess.run(["git", "-C", str(made["clone"]), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert description["project"] == {**description["project"], "commit": head.stdout.strip(), "dirty": False}
    assert description["datasets"]["gpt4_responses"]["licence"] == "Apache-2.0"
    assert description["environment"] == "project/requirements-runtime.lock"  # graded upstream: no stand-in
    assert (
        description["datasets"]["gpt4_responses"]["sha256"]
        == hashlib.sha256((bundle / "resources/data/gpt4_responses.jsonl").read_bytes()).hexdigest()
    )


def test_a_fresh_clone_with_no_network_and_no_shared_folder_verifies_the_bundle(made: dict, tmp_path: Path) -> None:
    second = clone(tmp_path / "clone2")
    with tarfile.open(made["root"] / "b1.tar.gz") as tar:
        tar.extractall(tmp_path / "review", filter="data")
    assert not (tmp_path / "shared").exists()
    prefix = without_network()
    done = ifaudit(
        ["verify-bundle", str(tmp_path / "review/ifaudit-bundle"), "--expect", made["digest"]],
        second,
        second,
        prefix,
        HOME=str(tmp_path / "home"),
        IFAUDIT_SHARED=str(tmp_path / "no-shared"),
    )
    assert done.returncode == 0, done.stderr
    assert f"regraded byte-identically (both passes): {RUN}" in done.stderr
    assert "20 derived files recomputed identically" in done.stderr  # with the forest plot (leaderboard.png, .svg)
    assert "authenticity NOT checked" not in done.stderr  # --expect given


def test_the_uploaded_tar_gz_verifies_as_its_folder_does(made: dict, tmp_path: Path) -> None:
    """`verify-bundle NAME.tar.gz` (the file an author uploads): unpacked into a new folder and
    verified; without --expect, the first and the last line say authenticity was not checked."""
    done = ifaudit(["verify-bundle", str(made["root"] / "b1.tar.gz")], tmp_path, REPO, without_network())
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert "authenticity NOT checked" in lines[0] and "authenticity NOT checked" in lines[-1], lines
    assert f"regraded byte-identically (both passes): {RUN}" in done.stderr
    assert list(tmp_path.iterdir()) == []  # unpacked elsewhere, and removed


def test_security_a_bundle_pinning_other_grader_files_is_refused(made: dict, tmp_path: Path) -> None:
    """A forger edits a grader file and its pin together and rewrites every checksum: the bundle
    agrees with itself, but its pin is not the verifier's own."""
    bundle = tmp_path / "bundle"
    shutil.copytree(made["bundle"], bundle)
    pin = bundle / "project/vendor/google_ifeval/pin.toml"
    pin.write_text(pin.read_text() + "# edited with the grader\n")
    _rewrite_checksums(bundle)
    done = ifaudit(["verify-bundle", str(bundle)], tmp_path, REPO)
    assert done.returncode == 3, done.stderr
    assert "project/vendor/google_ifeval/pin.toml: not this ifaudit's pin of the upstream grader" in done.stderr
    assert done.stderr.count("ifaudit: error:") == 1


def test_modes_follow_the_umask_and_a_killed_bundles_staging_is_removed(made: dict) -> None:
    """The same bytes under umask 022 and 027, with the modes each umask gives (the folder is not
    left private); the staging folder a killed `bundle` left beside the output is removed, named."""
    root = made["root"]
    for name, folder, file in (("b1", 0o755, 0o644), ("b2", 0o750, 0o640)):
        assert (root / name).stat().st_mode & 0o777 == folder, name
        assert (root / name / "CHECKSUMS.sha256").stat().st_mode & 0o777 == file, name
        assert (root / name / "results/report.md").stat().st_mode & 0o777 == file, name
    assert not list(root.glob(".b*.staging-*"))
    assert f"ifaudit: note: removed {root / '.b2.staging-killed'}, left by a bundle that was killed" in made["notes"][1]


def _rewrite_checksums(bundle: Path) -> str:
    """What a careful forger does: every checksum and both digest side files made to match."""
    files = sorted(
        p.relative_to(bundle).as_posix()
        for p in bundle.rglob("*")
        if p.is_file()
        and p.relative_to(bundle).as_posix() not in {"CHECKSUMS.sha256", "ROOT_DIGEST", "results/report.digest.md"}
    )
    data = "".join(f"{hashlib.sha256((bundle / f).read_bytes()).hexdigest()}  {f}\n" for f in files).encode()
    (bundle / "CHECKSUMS.sha256").write_bytes(data)
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    (bundle / "ROOT_DIGEST").write_text(digest + "\n")
    (bundle / "results/report.digest.md").write_text(f"Artifact root digest: `{digest}`\n")
    return digest


def _set_manifest_hash(bundle: Path, label: str) -> None:
    from ifaudit.io.canonical import pretty_json_bytes

    path = bundle / f"results/{RUN}/MANIFEST.json"
    manifest = json.loads(path.read_text())
    manifest["files"][label]["sha256"] = hashlib.sha256(
        (bundle / manifest["files"][label]["path"]).read_bytes()
    ).hexdigest()
    path.write_bytes(pretty_json_bytes(manifest))


def test_derived_files_edited_with_every_hash_rewritten_are_named(made: dict, tmp_path: Path) -> None:
    from ifaudit.io.canonical import pretty_json_bytes

    bundle = tmp_path / "forged"
    shutil.copytree(made["bundle"], bundle)
    summary_path = bundle / f"results/{RUN}/summary.json"
    summary = json.loads(summary_path.read_text())
    summary["metrics"]["prompt_level_strict_acc"]["correct"] += 1
    summary_path.write_bytes(pretty_json_bytes(summary))
    _set_manifest_hash(bundle, "summary")
    metrics = bundle / "results/metrics.csv"
    lines = metrics.read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace(",0.", ",0.9", 1)
    metrics.write_text("".join(lines))
    plot = bundle / "results/plots/accuracy.png"
    plot.write_bytes(plot.read_bytes()[:-20] + bytes(20))
    grades = bundle / f"results/{RUN}/grades.jsonl"
    text = grades.read_text()
    flipped = text.replace('"follow_all_instructions":true', '"follow_all_instructions":false', 1)
    assert flipped != text
    grades.write_text(flipped)
    _set_manifest_hash(bundle, "grades")
    forged = _rewrite_checksums(bundle)

    cited = ifaudit(["verify-bundle", str(bundle), "--expect", made["digest"]], tmp_path, REPO)
    assert cited.returncode == 3
    assert f"root digest {forged}, expected {made['digest']}" in cited.stderr

    alone = ifaudit(["verify-bundle", str(bundle)], tmp_path, REPO)
    assert alone.returncode == 3, alone.stderr
    message = alone.stderr.strip().splitlines()[-1]
    assert "recomputing from the bundled inputs gives other bytes" in message
    named = {part.split(":")[0] for part in message.split(": ", 3)[3].split("; ")}
    assert named == {
        f"results/{RUN}/summary.json",
        f"results/{RUN}/grades.jsonl",
        "results/metrics.csv",
        "results/plots/accuracy.png",
    }, message
    # Each names where it differs: the first JSON field, else the first line.
    correct = summary["metrics"]["prompt_level_strict_acc"]["correct"]
    assert (
        f"results/{RUN}/summary.json: field metrics.prompt_level_strict_acc.correct: "
        f"recomputed {correct - 1}, bundled {correct} (" in message
    )
    assert "results/metrics.csv: line 2: recomputed " in message
    assert "Traceback" not in alone.stderr


def test_a_summary_edited_without_its_manifest_hash_is_named_before_regrading(made: dict, tmp_path: Path) -> None:
    bundle = tmp_path / "edited"
    shutil.copytree(made["bundle"], bundle)
    summary = bundle / f"results/{RUN}/summary.json"
    summary.write_text(summary.read_text().replace('"counted": true', '"counted": false', 1))
    _rewrite_checksums(bundle)
    done = ifaudit(["verify-bundle", str(bundle)], tmp_path, REPO)
    assert done.returncode == 3
    assert f"results/{RUN}/summary.json: its bytes now have sha256 " in done.stderr
    assert f"; results/{RUN}/MANIFEST.json (summary) records " in done.stderr


def test_the_ro_crate_has_what_the_workflow_run_crate_profile_requires(made: dict) -> None:
    """Workflow Run Crate 0.5 (with Process Run Crate 0.5 and Workflow RO-Crate 1.0): the
    requirements roc-validator checks, asserted here because it cannot run offline (it fetches
    the RO-Crate JSON-LD context from w3id.org)."""
    bundle = made["bundle"]
    crate = json.loads((bundle / "ro-crate-metadata.json").read_text())
    assert crate["@context"] == "https://w3id.org/ro/crate/1.1/context"
    graph = {entity["@id"]: entity for entity in crate["@graph"]}

    def types(entity: dict) -> set[str]:
        kind = entity["@type"]
        return {kind} if isinstance(kind, str) else set(kind)

    descriptor = graph["ro-crate-metadata.json"]
    assert descriptor["about"] == {"@id": "./"}
    assert {c["@id"] for c in descriptor["conformsTo"]} >= {
        "https://w3id.org/ro/crate/1.1",
        "https://w3id.org/workflowhub/workflow-ro-crate/1.0",
    }
    root = graph["./"]
    assert "Dataset" in types(root)
    assert {c["@id"] for c in root["conformsTo"]} >= {
        "https://w3id.org/ro/wfrun/process/0.5",
        "https://w3id.org/ro/wfrun/workflow/0.5",
        "https://w3id.org/workflowhub/workflow-ro-crate/1.0",
    }
    for key in ("name", "description", "license", "datePublished"):
        assert root[key], key
    workflow = graph[root["mainEntity"]["@id"]]
    assert root["mainEntity"]["@id"] == "project/Snakefile" and (bundle / "project/Snakefile").is_file()
    assert types(workflow) >= {"File", "SoftwareSourceCode", "ComputationalWorkflow"}
    language = graph[workflow["programmingLanguage"]["@id"]]
    assert "ComputerLanguage" in types(language) and language["name"] == "Snakemake"
    actions = [e for e in graph.values() if "CreateAction" in types(e)]
    assert len(actions) == 1
    action = actions[0]
    assert action["instrument"] == {"@id": "project/Snakefile"}
    assert action["name"] and action["endTime"]
    for role in ("object", "result"):
        ids = [ref["@id"] for ref in action[role]]
        assert ids and all(i in graph and (bundle / i).is_file() for i in ids), role
    assert f"results/{RUN}/summary.json" in [ref["@id"] for ref in action["result"]]
    parts = [ref["@id"] for ref in root["hasPart"]]
    assert all((bundle / part).exists() for part in parts)
    for profile in root["conformsTo"]:
        assert profile["@id"] in graph  # each profile is a contextual entity


def test_a_dirty_checkout_is_refused_unless_allowed_and_then_its_diff_is_bundled(made: dict, tmp_path: Path) -> None:
    first, work = made["clone"], made["work"]
    readme = first / "README.md"
    original = readme.read_bytes()
    untracked = first / "docs" / "an_untracked_note.md"
    try:
        readme.write_bytes(original + b"\nan uncommitted line\n")
        untracked.write_bytes(b"a file git does not track yet\n")
        image = tmp_path / "ifaudit.sif"
        image.write_bytes(b"an apptainer image's bytes")
        args = ["bundle", "--out", str(tmp_path / "dirty"), "--project", str(first), "--image", str(image)]
        refused = ifaudit(args, work, first, IFAUDIT_RESOURCES=str(work / "resources"))
        assert refused.returncode == 2
        assert "2 uncommitted change(s)" in refused.stderr and "--allow-dirty" in refused.stderr
        assert not (tmp_path / "dirty").exists() and not list(tmp_path.glob(".dirty*"))
        allowed = ifaudit([*args, "--allow-dirty"], work, first, IFAUDIT_RESOURCES=str(work / "resources"))
        assert allowed.returncode == 0, allowed.stderr
    finally:
        readme.write_bytes(original)
        untracked.unlink()
    bundle = tmp_path / "dirty"
    diff = (bundle / "project.diff").read_bytes()
    assert b"+an uncommitted line" in diff
    # A new file is part of the source that ran: `git diff HEAD` alone would leave it out.
    assert b"new file mode" in diff and b"+a file git does not track yet" in diff
    assert not (first / ".git" / "index.lock").exists()
    description = json.loads((bundle / "BUNDLE.json").read_text())
    assert description["project"]["dirty"] is True
    assert description["container"] == {
        "image": "ifaudit.sif",
        "sha256": hashlib.sha256(b"an apptainer image's bytes").hexdigest(),
    }
    checked = ifaudit(["verify-bundle", str(bundle), "--checksums-only"], tmp_path, REPO)
    assert checked.returncode == 0, checked.stderr


def test_bad_bundle_requests_are_one_line_and_exit_2(made: dict, tmp_path: Path) -> None:
    work, first = made["work"], made["clone"]
    (tmp_path / "full").mkdir()
    (tmp_path / "full/x").write_text("x")
    occupied = ifaudit(
        ["bundle", "--out", str(tmp_path / "full"), "--project", str(first)],
        work,
        first,
        IFAUDIT_RESOURCES=str(work / "resources"),
    )
    assert occupied.returncode == 2 and "not empty" in occupied.stderr and "Traceback" not in occupied.stderr
    tagged = ifaudit(
        ["bundle", "--out", str(tmp_path / "tagged"), "--project", str(first), "--image", "docker://ifaudit:latest"],
        work,
        first,
        IFAUDIT_RESOURCES=str(work / "resources"),
    )
    assert tagged.returncode == 2 and "--image" in tagged.stderr and "Traceback" not in tagged.stderr
    assert not (tmp_path / "tagged").exists()


def test_a_file_size_limit_while_bundling_is_one_line_and_leaves_no_staging_folder(made: dict, tmp_path: Path) -> None:
    """`ulimit -f` (here 100 KiB: the project's source archive is larger) while the bundle is
    written: one line naming the bundle, no bundle and no staging folder left (was a traceback)."""
    work, first = made["work"], made["clone"]
    limited = ("sh", "-c", 'ulimit -f 200; exec "$@"', "sh")  # 512-byte blocks in POSIX sh
    done = ifaudit(
        ["bundle", "--out", str(tmp_path / "b"), "--project", str(first)],
        work,
        first,
        limited,
        IFAUDIT_RESOURCES=str(work / "resources"),
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and lines[-1].startswith(f"ifaudit: error: {tmp_path / 'b'}: not written: "), lines
    assert "File too large" in lines[-1] and "Traceback" not in done.stderr, lines
    assert sorted(os.listdir(tmp_path)) == []


def test_the_whole_workflow_rerun_from_the_bundle_offline_reproduces_every_result(made: dict, tmp_path: Path) -> None:
    """The Results Reproduced recipe of docs/reviewers.md: the bundled Snakefile, config, grader,
    NLTK data and datasets, no network; every result but the manifests comes out byte-identical."""
    with tarfile.open(made["root"] / "b1.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    bundle, rerun = tmp_path / "ifaudit-bundle", tmp_path / "rerun"
    shutil.copytree(bundle / "resources", rerun / "resources")
    done = subprocess.run(
        [
            *without_network(),
            str(BIN / "snakemake"),
            "-s",
            str(bundle / "project/Snakefile"),
            "--cores",
            "2",
            "--configfile",
            *map(str, sorted((bundle / "config").iterdir())),
            "--config",
            f"grader_sources=[{bundle / 'grader/google_ifeval'}]",
            f"nltk_mirror={bundle / 'nltk_data'}",
        ],
        cwd=rerun,
        env=clean_env(HOME=str(tmp_path)),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "fetch" not in done.stderr.split("Job stats:")[1].split("Select jobs")[0]
    compared = [
        p.relative_to(bundle).as_posix()
        for p in (bundle / "results").rglob("*")
        if p.is_file() and p.name not in {"MANIFEST.json", "report.digest.md"}
    ]
    assert {
        f"results/{RUN}/grades.jsonl",
        f"results/{RUN}/summary.json",
        f"results/{RUN}/stats.json",
        "results/metrics.csv",
        "results/report.md",
        "results/plots/accuracy.png",
    } <= set(compared)
    assert [name for name in compared if (bundle / name).read_bytes() != (rerun / name).read_bytes()] == []


def test_a_dataset_that_may_not_be_redistributed_is_left_out_and_fetched_at_verify_time(tmp_path: Path) -> None:
    from ifaudit.steps.artifact.bundle import BundleRequest, _datasets
    from ifaudit.steps.artifact.bundle_verify import check_manifest_hashes, fetch_withheld
    from ifaudit.io.canonical import pretty_json_bytes, sha256_file

    resources = tmp_path / "resources"
    (resources / "data").mkdir(parents=True)
    responses = DATA / "ifeval/input_response_data_gpt4_20231107_145030.jsonl"
    shutil.copyfile(responses, resources / "data/gpt4_responses.jsonl")
    record = {
        "name": "gpt4_responses",
        "path": "resources/data/gpt4_responses.jsonl",
        "pinned": True,
        "sha256": sha256_file(responses),
        "size": responses.stat().st_size,
        "source": "mirror",
    }
    (resources / "data/gpt4_responses.json").write_bytes(pretty_json_bytes(record))
    spec = {
        "mirror": "ifeval/input_response_data_gpt4_20231107_145030.jsonl",
        "licence": "no redistribution",
        "redistribute": False,
        "sha256": record["sha256"],
    }
    manifest = {
        "run": RUN,
        "files": {},
        "datasets": {"gpt4_responses": record},
        "config": {"datasets": {"gpt4_responses": spec}},
    }
    bundle = tmp_path / "bundle"
    catalogue = _datasets([manifest], BundleRequest(REPO, tmp_path, resources, bundle), bundle)
    assert catalogue["gpt4_responses"]["bundled"] is False
    assert catalogue["gpt4_responses"]["licence"] == "no redistribution"
    assert (bundle / "resources/data/gpt4_responses.json").is_file()
    assert not (bundle / "resources/data/gpt4_responses.jsonl").exists()
    (bundle / "BUNDLE.json").write_bytes(pretty_json_bytes({"datasets": catalogue}))
    work = tmp_path / "work"
    assert fetch_withheld(bundle, work, DATA, offline=True) == ["gpt4_responses"]
    assert sha256_file(work / "resources/data/gpt4_responses.jsonl") == record["sha256"]
    assert check_manifest_hashes(bundle, [manifest], work) == 1


def test_make_runs_environment_makes_the_same_bundle(made: dict) -> None:
    """`make run`'s environment (requirements-runtime.lock, what the image holds) has the RO-Crate
    library: `ifaudit bundle` run from it makes the bundle the development environment made, to
    the root digest."""
    runtime = REPO / ".venv-runtime" / "bin" / "python"
    if not runtime.is_file():
        pytest.fail(f"no runtime venv at {runtime}: build it with `make .venv-runtime/.installed`")
    work, first = made["work"], made["clone"]
    configs = [first / "config/config.yaml", first / "config/offline.yaml", work / "test.yaml"]
    done = subprocess.run(
        [str(runtime), "-m", "ifaudit.cli", "bundle", "--out", str(made["root"] / "b3"), "--project", str(first)]
        + [part for config in configs for part in ("--config", str(config))],
        cwd=work,
        env=clean_env(PYTHONPATH=str(first / "src"), IFAUDIT_RESOURCES=str(work / "resources")),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == made["digest"]
