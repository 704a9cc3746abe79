"""Artifact bundles: everything a reviewer needs to re-run an audit offline, and one digest to cite.

Layout of a bundle (all paths relative to its folder):

    project/                 the project's source at its commit (`git archive`): Snakefile,
                             workflow/, config/, the hash locks, src/, the grader pin
    project.diff             only with --allow-dirty: uncommitted changes (`git diff --binary HEAD`)
    config/                  the config files the DAG was given with --configfile, in order (with
                             none, the one its Snakefile loaded), as results/MANIFEST.json records
                             them, or as given with --config
    grader/google_ifeval/    the pinned upstream grader files, LICENSE and NOTICE (when used)
    grader/<vendor>/<version>/  the same for each other pinned grader a task grades with, per
                             version of its pin (IFBench's: allenai_ifbench/c6767a1, .../db69a6f)
    nltk_data/               the NLTK data the tasks read, laid out as NLTK_DATA: the punkt_tab
                             model IFEval's checkers used; IFBench's pinned resources (the
                             tagger as its pinned archive, packages/taggers/...)
    resources/data/          the datasets and their fetch records (a dataset marked
                             `redistribute: false` is left out and fetched at verify time)
    resources/environment/   the environment records the manifests name
    results/                 grades, passes, summaries, stats, comparisons, report, plots,
                             canaries, manifests, the judgement store: the configured runs only
                             (a folder of a run the configs do not name is refused)
    wheels/                  only with --wheels: every locked package, so PyPI is not needed
    BUNDLE.json              what is in the bundle: commit, datasets with source/sha256/licence, grader
                             (and task_graders), NLTK data, container image, the lock a reviewer
                             installs (`environment`), wheelhouse
    ro-crate-metadata.json   the same, as a Workflow Run RO-Crate
    CHECKSUMS.sha256         sha256 of every file above, sorted (`sha256sum -c` reads it)
    ROOT_DIGEST              sha256 of CHECKSUMS.sha256: the one value to cite

The root digest cannot be inside anything it covers (that file's hash would change with it), so it
lives in side files outside the checksum list: ROOT_DIGEST, and results/report.digest.md beside the
report. They are checked against the recomputed digest, never trusted; what makes the digest worth
citing is that `verify-bundle --expect DIGEST` compares it with the value printed in the paper.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from ifaudit.io import bounded_yaml, variables
from ifaudit.io.archive import checksum_lines, deterministic_tar_gz, tree_files, write_public
from ifaudit.io.canonical import pretty_json_bytes, sha256_bytes, sha256_file, try_flock
from ifaudit.io.confine import name_problem
from ifaudit.io.formats.escape import yaml_string
from ifaudit.io.jsonl import loads_document
from ifaudit.io.paths import open_input
from ifaudit.inputs.importers.fields import LogRecord
from ifaudit.core.errors import IfauditError, InputError, VerificationError
from ifaudit.core.identity import GraderKind
from ifaudit.core.names import RESULTS_LAYOUT_NAMES
from ifaudit.steps.planning import plan
from ifaudit.steps.planning.config_check import drop_null_runs
from ifaudit.steps.planning.content import changed_since_recorded

if TYPE_CHECKING:
    from ifaudit.tasks.credit import GraderCredit

CHECKSUMS = "CHECKSUMS.sha256"
ROOT_DIGEST = "ROOT_DIGEST"
REPORT_DIGEST = plan.report_file("report.digest.md")
SIDE_FILES = frozenset({CHECKSUMS, ROOT_DIGEST, REPORT_DIGEST})
DESCRIPTION = "BUNDLE.json"
CITATION = "CITATION.cff"
JUDGE_SCRIPT = "grader/infobench"  # InFoBench's pinned evaluation.py, per version, for the reference protocol
NLTK = "nltk_data"
# The workflow's own record of the configs it ran with (workflow/rules/record.smk), in results/.
WORKFLOW_MANIFEST = "MANIFEST.json"
RUN_FILES = ("MANIFEST.json", "summary.json", "grades.jsonl", "passes")  # what makes a folder a run's
SHOWN = 5  # files a one-line message names before it says how many more


@dataclass(frozen=True)
class BundleRequest:
    project: Path  # a git checkout of ifaudit: its HEAD is what the bundle ships
    results: Path  # the run's results/ folder
    resources: Path  # the run's resources/ folder (datasets, environment records, vendor, nltk_data)
    out: Path  # a new folder; the archive goes beside it as <out>.tar.gz
    configs: tuple[Path, ...] = ()  # none: the ones results/MANIFEST.json records
    allow_dirty: bool = False
    wheels: bool = False
    image: str | None = None  # a .sif file or an image@sha256:... reference, when the run used one


def root_digest(checksums: bytes) -> str:
    return f"sha256:{sha256_bytes(checksums)}"


def bundle_path(recorded: str, where: str = "a manifest") -> str:
    """Where a path a manifest records (relative to the run's folder) sits in the bundle: below
    results/ or resources/, and nowhere else (confine.name_problem: no `..`, not absolute)."""
    path = PurePosixPath(recorded)  # `./x` and `a//b` read as `x` and `a/b`; a `..` stays, and is refused
    why = name_problem(path.as_posix())
    if why is None and path.parts[0] not in (plan.RESULTS, plan.RESOURCES):
        why = "is outside results/ and resources/"
    if why is not None:
        raise VerificationError(
            f"{where}: path {recorded!r} {why}; a bundle's paths stay inside results/ and resources/"
        )
    return path.as_posix()


def read_manifests(results: Path, order: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The runs' manifests (results/<run>/MANIFEST.json), each naming the run of its folder: the
    name is joined to paths, so a manifest naming another (`../..`) is refused. In the runs'
    `order` (the config's), a run it does not name after them by name."""
    rank = {name: index for index, name in enumerate(order)}
    paths = sorted(results.glob("*/MANIFEST.json"), key=lambda path: (rank.get(path.parent.name, len(rank)), path))
    if not paths:
        raise InputError("no run manifests (results/*/MANIFEST.json): run the workflow first", path=results)
    manifests = [dict(read_document(path, str(path)).value) for path in paths]
    for path, manifest in zip(paths, manifests, strict=True):
        if manifest.get("run") != path.parent.name:
            raise VerificationError(f"{path}: names run {manifest.get('run')!r}, not {path.parent.name!r}, its folder")
    return manifests


MAX_DOCUMENT_BYTES = 256 * 1024 * 1024  # a JSON document of a bundle; a manifest weighs a few KB


def read_document(path: Path, where: str) -> LogRecord:
    """A JSON object a bundle holds (BUNDLE.json, a manifest, tables.json), read within a cap and
    held to a JSONL line's rules (io.jsonl.loads_document: nested 10,000 deep, a key given twice,
    a non-finite number are one line naming it), its fields read with their types (`LogRecord`):
    a list, a string, a missing or mistyped field is one line naming `where` and the field."""
    with open_input(path) as handle:  # a FIFO or a device is refused
        data = handle.read(MAX_DOCUMENT_BYTES + 1)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise InputError(f"more than {MAX_DOCUMENT_BYTES} bytes; not a document ifaudit wrote", path=where)
    try:
        document = loads_document(data.decode("utf-8"), where)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(f"not JSON ({error})", path=where) from None
    return LogRecord.at(document, where)


def shown(names: Sequence[str]) -> str:
    """At most SHOWN names, then how many more: a one-line message stays one readable line."""
    listed = ", ".join(names[:SHOWN])
    return listed + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


def merge_config(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """Snakemake's merge of config files: nested mappings merged key by key, other values replaced."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge_config(base[key], value)
        else:
            base[key] = value
    return base


@dataclass(frozen=True)
class Configured:
    """The config files a bundle ships, in merge order, and the runs they name, in config order."""

    files: tuple[Path, ...]
    runs: dict[str, dict[str, Any]]
    recorded: bool  # results/MANIFEST.json is the workflow's record of exactly these files
    citation: dict[str, Any]  # the config's `citation:` (title, authors), or {}


def _recorded_file(request: BundleRequest, entry: dict[str, Any]) -> Path:
    """A config file the record names, with the bytes the workflow ran with."""
    bases = {"project": request.project, "workdir": request.results.resolve().parent}
    path = bases[entry["relative_to"]] / entry["path"] if entry["relative_to"] else Path(entry["path"])
    if not path.is_file():
        raise InputError(
            "a config file the workflow ran with (results/MANIFEST.json) is not there; "
            "name the config files with --config",
            path=path,
        )
    if (actual := sha256_file(path)) != entry["sha256"]:
        raise InputError(
            f"changed since the workflow ran with it (its bytes now have sha256 {actual}; "
            f"{plan.report_file(WORKFLOW_MANIFEST)} records {entry['sha256']}): "
            "run the workflow again, or name the config files with --config",
            path=path,
        )
    return path


def _workflow_record(results: Path) -> dict[str, Any] | None:
    path = results / WORKFLOW_MANIFEST
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def configured(request: BundleRequest) -> Configured:
    """The configs the DAG recorded in results/MANIFEST.json, or those given with --config (read
    as the config check reads them: no key twice, aliases' expansion capped)."""
    record = _workflow_record(request.results)
    if request.configs:
        merged: dict[str, Any] = {}
        for path in request.configs:
            merge_config(merged, bounded_yaml.read(path) or {})
        drop_null_runs(merged)  # as the workflow reads the same files
        recorded = [] if record is None else record["configfiles"]
        given = [e for e in recorded if e.get("loaded_by") == "--configfile"] or recorded
        same = [e["sha256"] for e in given] == [sha256_file(path) for path in request.configs]
        return Configured(request.configs, dict(merged.get("runs") or {}), same, dict(merged.get("citation") or {}))
    if record is None:
        raise InputError(
            "no record of the configs the workflow ran with (written when its default target "
            "finishes): run the workflow, or name its config files with --config",
            path=request.results / WORKFLOW_MANIFEST,
        )
    # What was given with --configfile, in order: a rerun in a copy of the project gives these, and
    # its Snakefile loads its own config/config.yaml as the authors' did (Snakemake starts from the
    # --configfile files, so adding the Snakefile's file to them would change the runs' order).
    # With none given, the files the Snakefile loaded.
    given = [entry for entry in record["configfiles"] if entry.get("loaded_by") == "--configfile"]
    files = tuple(_recorded_file(request, entry) for entry in given or record["configfiles"])
    runs = {name: record["config"]["runs"][name] for name in record["runs"]}
    unfinished = [name for name in runs if not (request.results / name / "MANIFEST.json").is_file()]
    if unfinished:
        raise InputError(
            f"run(s) the configs name have no results/<run>/MANIFEST.json: {shown(unfinished)}; run the workflow",
            path=request.results,
        )
    return Configured(files, runs, True, dict(record["config"].get("citation") or {}))


def refuse_unnamed_runs(results: Path, runs: dict[str, dict[str, Any]]) -> None:
    """A run's folder (a manifest, summary, grades or passes in it) of a run the configs do not
    name was left by an earlier config: its manifest and the shared files it made would not
    verify against these."""
    unnamed = sorted(
        f"{plan.run_folder(path.name)}/"
        for path in results.iterdir()
        if path.is_dir()
        and path.name.lower() not in RESULTS_LAYOUT_NAMES
        and path.name not in runs
        and any((path / name).exists() for name in RUN_FILES)
    )
    if unnamed:
        raise InputError(
            f"{len(unnamed)} result folder(s) of runs the configs do not name: {shown(unnamed)}; "
            "left by an earlier config? remove them, or name the configs that ran them with --config",
            path=results,
        )


def made_by(relative: PurePosixPath, runs: dict[str, dict[str, Any]]) -> bool:
    """Whether a file of results/ is one the configured runs make: their folders, the report and
    its plots, the task canaries, comparisons and prompt audits of these runs, the stores. The
    shared files are named as the run plan names them (ifaudit.steps.planning.plan), not spelt here."""
    if len(relative.parts) == 1 or relative.parts[0] in runs:
        return True
    path, stem = f"{plan.RESULTS}/{relative}", PurePosixPath(relative.name).stem
    if path.startswith(f"{plan.CANARIES}/"):
        return stem in {spec["task"] for spec in runs.values()} and path == plan.task_canary(stem)
    if path.startswith(f"{plan.PROMPT_AUDITS}/"):
        return stem in {spec["prompts"] for spec in runs.values()} and path == plan.prompt_audit(stem)
    if path.startswith(f"{plan.COMPARISONS}/"):
        first = relative.parent.name
        return first in runs and stem in runs and path == plan.comparison(first, stem)
    if path.startswith(f"{plan.BREAKDOWN_PLOTS}/"):
        return stem in runs and f"{plan.RESULTS}/{relative.parent}" == plan.BREAKDOWN_PLOTS
    return relative.parts[0].lower() in RESULTS_LAYOUT_NAMES


def _copy_results(results: Path, chosen: Configured, target: Path) -> list[str]:
    """The configured runs' files of results/ copied; returns those left out."""
    left_out = []
    for name in tree_files(results):
        relative = PurePosixPath(name)
        if any(part.startswith(".") for part in relative.parts):
            continue
        if not made_by(relative, chosen.runs) or (name == WORKFLOW_MANIFEST and not chosen.recorded):
            left_out.append(f"{plan.RESULTS}/{name}")
            continue
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(results / name, target / name)
    return left_out


def _git(project: Path, *args: str, env: dict[str, str] | None = None) -> bytes:
    done = subprocess.run(["git", "-C", str(project), *args], capture_output=True, check=False, env=env)
    if done.returncode != 0:
        raise InputError(
            f"`git {' '.join(args)}` failed: {done.stderr.decode().strip()}; "
            "a bundle ships the project's source from its git checkout",
            path=project,
        )
    return done.stdout


def _bundle_excluded(request: BundleRequest, status: bytes) -> bytes:
    """`git status` without the bundle's own output: a bundle written inside the project (its
    folder, archive and staging folder are new, untracked files) does not make the checkout dirty."""
    try:
        out = request.out.resolve().relative_to(request.project.resolve()).as_posix()
    except ValueError:
        return status
    parent, name = out.rpartition("/")[0], request.out.name
    own = (f"{out}/", f"{out}.tar.gz", f"{parent}/.{name}.staging-" if parent else f".{name}.staging-")
    kept = [
        line for line in status.splitlines(keepends=True) if not line.decode().startswith(tuple(f"?? {o}" for o in own))
    ]
    return b"".join(kept)


def _working_tree_diff(request: BundleRequest, staging: Path) -> bytes:
    """HEAD to the working tree, new files that are not ignored included (`git diff HEAD` leaves
    them out): staged in a scratch index, so the user's own index is never touched. The bundle's
    own output, when written inside the project, is not part of it."""
    index = staging / ".project.index"
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    _git(request.project, "read-tree", "HEAD", env=env)
    excluded = []
    try:
        out = request.out.resolve().relative_to(request.project.resolve()).as_posix()
        excluded = [
            f":(exclude){out}",
            f":(exclude){out}.tar.gz",
            f":(exclude,glob){out.rpartition('/')[0] or '.'}/.{request.out.name}.staging-*",
        ]
    except ValueError:
        pass
    _git(request.project, "add", "-A", "--", ".", *excluded, env=env)
    diff = _git(request.project, "diff", "--cached", "--binary", "HEAD", env=env)
    index.unlink()
    return diff


def _project_source(request: BundleRequest, staging: Path) -> dict[str, Any]:
    """The committed source (and, if allowed, the uncommitted diff): `git archive` of HEAD."""
    commit = _git(request.project, "rev-parse", "HEAD").decode().strip()
    status = _bundle_excluded(request, _git(request.project, "status", "--porcelain"))
    if status and not request.allow_dirty:
        changed = len(status.decode().splitlines())
        raise InputError(
            f"{changed} uncommitted change(s); commit them, or pass --allow-dirty to bundle HEAD and record the diff",
            path=request.project,
        )
    archive = staging / ".project.tar"
    archive.write_bytes(_git(request.project, "archive", "--format=tar", commit))
    with tarfile.open(archive) as tar:
        tar.extractall(staging / "project", filter="data")
    archive.unlink()
    date = _git(request.project, "log", "-1", "--format=%cI", commit).decode().strip()
    source = {"commit": commit, "date": date, "dirty": bool(status)}
    if status:
        (staging / "project.diff").write_bytes(_working_tree_diff(request, staging))
        (staging / "project.status").write_bytes(status)
        source["diff"] = "project.diff"
    return source


def _copy_tree(source: Path, target: Path) -> None:
    for name in tree_files(source):
        if not any(part.startswith(".") for part in Path(name).parts):
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / name, target / name)


def _in_resources(request: BundleRequest, relative: str) -> Path:
    """A manifest's `resources/...` path, under the resources folder the run used."""
    return request.resources / Path(relative).relative_to("resources")


def _datasets(manifests: list[dict[str, Any]], request: BundleRequest, staging: Path) -> dict[str, Any]:
    """Each dataset's record, sources, sha256 and licence; its bytes unless redistribution is refused."""
    catalogue: dict[str, Any] = {}
    for manifest in manifests:
        for name, record in manifest["datasets"].items():
            spec = manifest["config"]["datasets"][name]
            path = bundle_path(record["path"])
            shipped = spec.get("redistribute", True)
            catalogue[name] = {
                "sha256": record["sha256"],
                "size": record["size"],
                "path": path,
                "bundled": shipped,
                "licence": spec.get("licence", "not stated in the config"),
                "description": spec.get("description", ""),
                "sources": {key: spec[key] for key in ("path", "mirror", "url", "hf") if key in spec},
            }
            record_path = str(Path(path).with_suffix(".json"))
            for relative in (record_path, path) if shipped else (record_path,):
                target = staging / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(_in_resources(request, relative), target)
    return dict(sorted(catalogue.items()))


def _grader_licence(pin: Any, sources: list[str]) -> bytes | None:
    """The licence text of the pinned repository, from a grader source that has it: a git
    checkout's at the pinned commit, or the LICENSE of a folder holding the pinned files (a
    folder of another grader's files may hold another LICENSE)."""
    for spec in sources:
        root = Path(spec).expanduser()
        if (root / ".git").exists():
            shown = subprocess.run(
                ["git", "-C", str(root), "show", f"{pin.commit}:LICENSE"], capture_output=True, check=False
            )
            if shown.returncode == 0:
                return shown.stdout
        holds_pin = all((root / f.path).is_file() and sha256_file(root / f.path) == f.sha256 for f in pin.files)
        if (root / "LICENSE").is_file() and holds_pin:
            return (root / "LICENSE").read_bytes()
    return None


def pinned_graders(manifests: Sequence[dict[str, Any]]) -> list[Any]:
    """The pinned upstream graders the runs' tasks grade with (each task says which: its pin and
    version), each once, in the runs' order."""
    from ifaudit.tasks.registry import get_task

    found = []
    for manifest in manifests:
        try:
            task, setting = manifest["config"]["run"]["task"], manifest["config"]["settings"]["grader"]
        except (KeyError, TypeError):
            where = plan.run_file(manifest["run"], "MANIFEST.json")
            raise VerificationError(
                f"{where}: names no task or grader (config.run.task, config.settings.grader)"
            ) from None
        grader = get_task(task).pinned_grader(setting)
        if grader is not None and grader not in found:
            found.append(grader)
    return found


def grader_folder(vendor: str, version: str) -> str:
    """Where a bundle keeps a pinned grader's files: grader/<vendor>/, and below it one folder per
    version where the pin holds several (IFBench's commits lay out files of the same names)."""
    return f"grader/{vendor}" + (f"/{version}" if version else "")


def _grader(pinned: Any, manifests: list[dict[str, Any]], request: BundleRequest, staging: Path) -> dict[str, Any]:
    """A pinned upstream grader's files as the runs used them, verified against the pin, with the
    licence text and a NOTICE."""
    from ifaudit.io.remote.pins import load_pin, verify_tree

    pin = load_pin(staging / "project" / pinned.pin_file, pinned.version)
    materialized = request.resources / "vendor" / pinned.vendor / pin.commit
    verify_tree(pin, materialized)
    folder = grader_folder(pinned.vendor, pin.version)
    for file in pin.files:
        (staging / folder / file.path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(materialized / file.path, staging / folder / file.path)
    sources = [s for m in manifests for s in m["config"]["settings"]["grader_sources"]]
    sources += variables.places(variables.GRADER_SOURCE)
    # The pin's own mirrors, as the project's pin names them (relative to where it sits).
    mirrors = load_pin(request.project / pinned.pin_file, pinned.version).mirrors
    licence = _grader_licence(pin, [*sources, *(mirror for mirror in mirrors if "://" not in mirror)])
    if licence is not None:
        (staging / folder / "LICENSE").write_bytes(licence)
    version = f" (version {pin.version})" if pin.version else ""
    (staging / folder / "NOTICE").write_text(
        f"{pin.name}, {pin.repository} at commit {pin.commit}.\n"
        f"Licence: {pin.licence} (each file carries its own notice"
        + (
            "; the licence text is in LICENSE beside this file"
            if licence is not None
            else f"; licence text: {pin.repository}/blob/{pin.commit}/LICENSE"
        )
        + ").\n"
        f"Shipped unmodified; sizes and sha256 as pinned in project/{pinned.pin_file}{version}.\n",
        encoding="utf-8",
    )
    return {
        "name": pin.name,
        "commit": pin.commit,
        "licence": pin.licence,
        "folder": folder,
        "licence_text": licence is not None,
        "pin": f"project/{pinned.pin_file}",
        "version": pin.version,
    }


def _graders(
    manifests: list[dict[str, Any]], request: BundleRequest, staging: Path
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The pinned graders' files: Google's (the project's own pin, BUNDLE.json's `grader`), and
    those of tasks with a pin of their own, each with its pin file and version (`task_graders`)."""
    google: dict[str, Any] | None = None
    others: list[dict[str, Any]] = []
    for pinned in pinned_graders(manifests):
        entry = _grader(pinned, manifests, request, staging)
        if pinned.pin_file == plan.GRADER_PIN:  # described as it always was: the pin is the project's
            google = {key: value for key, value in entry.items() if key not in ("pin", "version")}
        elif entry["folder"] not in [other["folder"] for other in others]:
            others.append(entry)
    return google, others


def bundled_store(configured: str) -> str:
    """Where a request store sits in the bundle: as configured inside results/, else under stores/."""
    path = Path(configured)
    return configured if not path.is_absolute() and path.parts[0] == plan.RESULTS else f"stores/{path.name}"


def _stores(settings: dict[str, Any], request: BundleRequest, staging: Path) -> dict[str, str]:
    """The judgement and generation stores the runs replay from; one kept outside results/ (a
    relative path is the run's, beside its results/) is copied in under stores/."""
    placed = {}
    for key, default in (
        ("judgement_store", plan.DEFAULT_JUDGEMENT_STORE),
        ("generation_store", plan.DEFAULT_GENERATION_STORE),
    ):
        configured = settings.get(key, default)
        placed[key] = bundled_store(configured)
        source = Path(configured) if Path(configured).is_absolute() else request.results.parent / configured
        if placed[key] != configured and source.is_dir():
            _copy_tree(source, staging / placed[key])
    return placed


def _judge_scripts(manifests: list[dict[str, Any]], request: BundleRequest, staging: Path) -> dict[str, Any] | None:
    """InFoBench's pinned evaluation.py, each version a run was judged under the reference
    protocol with: its SYS_MSG builds the requests the store is replayed by (MIT licence)."""
    from ifaudit.io.remote.pins import load_pin, verify_tree

    versions = sorted(
        {
            m["config"]["judge_protocol"]["infobench_version"]
            for m in manifests
            if m["config"].get("judge_protocol", {}).get("protocol") == "reference"
        }
    )
    shipped = {}
    for version in versions:
        pin = load_pin(staging / "project" / plan.INFOBENCH_PIN, version)
        materialized = request.resources / "vendor" / "infobench" / pin.commit
        verify_tree(pin, materialized)
        for pinned in pin.files:
            target = staging / JUDGE_SCRIPT / version / pinned.path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(materialized / pinned.path, target)
        shipped[version] = {"commit": pin.commit, "folder": f"{JUDGE_SCRIPT}/{version}", "licence": pin.licence}
    return shipped or None


def _nltk(manifests: list[dict[str, Any]], request: BundleRequest, staging: Path) -> dict[str, Any] | None:
    """The NLTK data the runs' tasks read (each task says which: IFEval's punkt_tab as grading
    resolved it, IFBench's pinned resources), in one folder laid out as NLTK_DATA: the NLTK mirror
    the verifier grades with."""
    from ifaudit.tasks.base import GradingOptions
    from ifaudit.tasks.registry import get_task

    recorded = manifests[0]["config"]["settings"].get("nltk_mirror")
    mirror = request.results.resolve().parent / recorded if recorded else None
    options = GradingOptions(resources=request.resources, nltk_mirror=mirror)
    files: dict[str, bytes] = {}
    described: dict[str, Any] = {}
    for name in dict.fromkeys(m["config"]["run"]["task"] for m in manifests):
        read = get_task(name).nltk_files(options)
        if read is None:
            continue
        for path, data in read.files.items():
            if files.setdefault(path, data) != data:
                raise InputError(
                    f"tasks read different bytes of NLTK's {path}: task {name}'s are not those another task read; "
                    "a bundle's NLTK data holds one copy of each file",
                    path=request.resources,
                )
        described.update(read.described)
    if not files:
        return None
    for name, data in sorted(files.items()):
        (staging / NLTK / name).parent.mkdir(parents=True, exist_ok=True)
        (staging / NLTK / name).write_bytes(data)
    return {"folder": NLTK, **described, "licence": "Apache-2.0 (NLTK data)"}


def _container(image: str | None) -> dict[str, Any] | None:
    if image is None:
        return None
    if Path(image).is_file():
        return {"image": Path(image).name, "sha256": sha256_file(image)}
    if "@sha256:" in image:
        return {"reference": image, "digest": image.split("@", 1)[1]}
    raise InputError(
        "a container image is named by its file (.sif) or by a digest reference "
        "(docker://NAME@sha256:...), never by a tag alone",
        field="--image",
    )


def _pip_download(lock: Path, wheels: Path, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(wheels), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise InputError(f"pip download failed: {done.stderr.strip().splitlines()[-1:]}", path=lock)


def environment_lock(manifests: Sequence[dict[str, Any]]) -> str:
    """The hash lock a reviewer installs, in the bundle: the runtime's (the graders' packages,
    Snakemake and the bundle's own needs, what the image holds), or the stand-in's when a run was
    graded by the registry stand-in. Never the development lock: its test and lint tools double
    the install and nothing a reviewer runs imports them."""
    stand_in = any(manifest["config"]["settings"]["grader"] == GraderKind.STAND_IN.value for manifest in manifests)
    return f"project/requirements-{'stand-in' if stand_in else 'runtime'}.lock"


def _wheelhouse(lock: str, staging: Path) -> dict[str, Any]:
    """Every package of the hash lock, downloaded and checked against its hashes, and the build
    tools: ifaudit itself (project/) and any package published only as source are built at install
    time (outside the lock: pip installs build requirements without hash checking)."""
    wheels = staging / "wheels"
    _pip_download(staging / lock, wheels, "--require-hashes", "-r", str(staging / lock))
    sources = sorted(p.name for p in wheels.iterdir() if not p.name.endswith(".whl"))
    _pip_download(staging / lock, wheels, "--only-binary=:all:", "setuptools", "wheel")
    return {
        "folder": "wheels",
        "files": len(list(wheels.iterdir())),
        "built_from_source": sources,
        "install": f"pip install --no-index --find-links wheels --require-hashes -r {lock}",
    }


# An author's fields as CITATION.cff writes them (Citation File Format 1.2.0), in this order.
AUTHOR_FIELDS = ("family-names", "given-names", "name", "affiliation", "orcid", "email")
UNNAMED_AUTHORS = "the authors"


def _cff_author(author: dict[str, Any]) -> str:
    fields = [field for field in AUTHOR_FIELDS if field in author]
    return "\n".join(
        f"{'  - ' if index == 0 else '    '}{field}: {yaml_string(author[field])}" for index, field in enumerate(fields)
    )


def _grader_phrase(graded: Mapping[str, GraderCredit | None]) -> str:
    """Who graded which runs, each grader credited as its runs' task and grades say (`graded`:
    each run's credit, in the runs' order)."""
    from ifaudit.steps.reporting.grader_text import grader_words

    by_grader: dict[str, list[str]] = {}
    for run, credit in graded.items():
        by_grader.setdefault(grader_words(credit), []).append(run)
    if len(by_grader) == 1:
        return f"graded by {next(iter(by_grader))}"
    return "graded by " + "; ".join(f"{words} ({', '.join(runs)})" for words, runs in by_grader.items())


def _keywords(graded: Mapping[str, GraderCredit | None]) -> list[str]:
    """Instruction following, each benchmark the runs are of (in the runs' order), replication."""
    benchmarks = [credit.benchmark for credit in graded.values() if credit is not None and credit.benchmark]
    return list(dict.fromkeys(["instruction following", *benchmarks, "replication"]))


def run_credits(results: Path, runs: Sequence[str]) -> dict[str, GraderCredit | None]:
    """Each run's grader credit, from its summary in `results` (its task and its grades' grader)."""
    from ifaudit.steps.reporting.grader_text import run_credit

    credits = {}
    for run in runs:
        summary = json.loads((results / run / "summary.json").read_text(encoding="utf-8"))
        credits[run] = run_credit(summary["task"], summary["grader"])
    return credits


def citation(description: dict[str, Any], cited: dict[str, Any], graded: Mapping[str, GraderCredit | None]) -> bytes:
    """CITATION.cff (Citation File Format 1.2.0) of the artifact: its title and authors as the
    config's `citation:` gives them, the runs in the config's order and what graded each
    (`graded`: each run's credit), the benchmarks as keywords, the commit that ran them, and how to
    verify it. The root digest covers this file, so it cannot name the digest: the message says
    where the digest is (the paper, ROOT_DIGEST)."""
    project = description["project"]
    runs = ", ".join(description["runs"])
    title = cited.get("title") or f"ifaudit audit artifact: {runs}"
    authors = cited.get("authors") or [{"name": UNNAMED_AUTHORS}]
    abstract = (
        f"Instruction-following runs ({runs}) {_grader_phrase(graded)}, each graded twice "
        f"and verified byte for byte by ifaudit at commit {project['commit']}."
    )
    lines = [
        "cff-version: 1.2.0",
        'message: "Cite this artifact as below. Verify it with: ifaudit verify-bundle NAME.tar.gz --expect'
        ' ROOT_DIGEST (the digest cited in the paper; also in ROOT_DIGEST beside this file)."',
        "type: dataset",
        f"title: {yaml_string(title)}",
        "authors:",
        *(_cff_author(author) for author in authors),
        f"version: {json.dumps(project['commit'])}",
        f"date-released: {json.dumps(project['date'][:10])}",
        f"abstract: {json.dumps(abstract, ensure_ascii=False)}",
        "keywords:",
        *(f"  - {json.dumps(keyword, ensure_ascii=False)}" for keyword in _keywords(graded)),
    ]
    return ("\n".join(lines) + "\n").encode("utf-8")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _remove_abandoned_staging(out: Path) -> list[Path]:
    """Staging folders of `out` left by a `bundle` that was killed: each live one is locked by
    its writer (flock, released by the kernel when the process dies), so only those no process
    holds are removed."""
    removed = []
    for folder in sorted(out.parent.glob(f".{out.name}.staging-*")):
        handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            abandoned = try_flock(handle, blocking=False)  # False: a live bundle's, or no flock here
        finally:
            os.close(handle)
        if abandoned:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def make_bundle(request: BundleRequest) -> dict[str, Any]:
    """Write the bundle folder and its archive; returns the file count, root digest and archive sha256."""
    from ifaudit.steps.artifact.crate import write_crate

    out = request.out
    if out.exists() and any(out.iterdir()):
        raise InputError("not empty; a bundle is written to a new folder", path=out)
    if changed := changed_since_recorded(request.results.parent):  # never the grades of bytes gone
        raise VerificationError(f"{changed[0]}; run the DAG again (make run) before bundling its results")
    chosen = configured(request)
    refuse_unnamed_runs(request.results, chosen.runs)
    manifests = read_manifests(request.results, list(chosen.runs))
    out.parent.mkdir(parents=True, exist_ok=True)
    for abandoned in _remove_abandoned_staging(out):
        print(f"ifaudit: note: removed {abandoned}, left by a bundle that was killed", file=sys.stderr)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.staging-", dir=out.parent))
    lock = os.open(staging, os.O_RDONLY | os.O_DIRECTORY)
    try_flock(lock, blocking=True)  # held while this process lives: its staging is not abandoned
    try:
        source = _project_source(request, staging)
        for index, config in enumerate(chosen.files):
            (staging / "config").mkdir(exist_ok=True)
            shutil.copyfile(config, staging / "config" / f"{index:02d}-{config.name}")
        left_out = _copy_results(request.results, chosen, staging / plan.RESULTS)
        if left_out:
            print(
                f"ifaudit: note: left out {len(left_out)} file(s) of results/ the configured runs do not make: "
                f"{shown(left_out)}",
                file=sys.stderr,
            )
        stores = _stores(manifests[0]["config"]["settings"], request, staging)
        for manifest in manifests:
            environment = manifest["files"]["environment"]["path"]
            target = staging / bundle_path(environment)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(_in_resources(request, environment), target)
        google, task_graders = _graders(manifests, request, staging)
        reviewer_lock = environment_lock(manifests)
        description = {
            "project": source,
            "configs": [f"config/{index:02d}-{c.name}" for index, c in enumerate(chosen.files)],
            "runs": [m["run"] for m in manifests],
            "datasets": _datasets(manifests, request, staging),
            "grader": google,
            "nltk_data": _nltk(manifests, request, staging),
            "judge_scripts": _judge_scripts(manifests, request, staging),
            "container": _container(request.image),
            "environment": reviewer_lock,
            "wheels": _wheelhouse(reviewer_lock, staging) if request.wheels else None,
            "stores": stores,
        }
        if task_graders:  # only then: a bundle of tasks graded by Google's pin alone keeps its bytes
            description["task_graders"] = task_graders
        write_public(staging / DESCRIPTION, pretty_json_bytes(description))
        if not chosen.citation.get("authors"):
            print(
                f"ifaudit: note: the config names no `citation: authors:`, so {CITATION} names "
                f"{UNNAMED_AUTHORS!r} (README, Adding your own runs)",
                file=sys.stderr,
            )
        graded = run_credits(staging / plan.RESULTS, [m["run"] for m in manifests])
        write_public(staging / CITATION, citation(description, chosen.citation, graded))
        write_crate(staging, description, manifests)
        # Modes from the user's umask (mkdtemp's folder is private, 0700), executables kept so.
        umask = _umask()
        for path in [staging, *staging.rglob("*")]:
            path.chmod((0o777 if path.is_dir() or path.stat().st_mode & 0o100 else 0o666) & ~umask)
        files = tree_files(staging)
        checksums = checksum_lines(staging, files)
        write_public(staging / CHECKSUMS, checksums)
        digest = root_digest(checksums)
        write_public(staging / ROOT_DIGEST, f"{digest}\n".encode())
        write_public(
            staging / REPORT_DIGEST,
            (
                f"Artifact root digest: `{digest}` (sha256 of CHECKSUMS.sha256).\n"
                f"Check with: `ifaudit verify-bundle BUNDLE --expect {digest}`\n"
            ).encode(),
        )
        if out.exists():
            out.rmdir()
        os.rename(staging, out)
    except OSError as error:  # a full disk, a file-size limit (`ulimit -f`): the staging folder goes
        where = f" ({error.filename})" if error.filename else ""
        raise IfauditError(f"{out}: not written: {error.strerror or error}{where}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        os.close(lock)
    archive = out.with_name(out.name + ".tar.gz")
    # A fixed top folder: two bundles of the same run are the same bytes whatever their folder's name.
    archive_sha256 = deterministic_tar_gz(out, archive, top="ifaudit-bundle")
    return {"files": len(files), "root_digest": digest, "archive": archive, "archive_sha256": archive_sha256}


def made_lines(made: dict[str, Any], out: Path) -> list[str]:
    """What `ifaudit bundle` says when it is done: what it wrote, the digest to cite, how to check it."""
    return [
        f"bundled {made['files']} files into {out} and {made['archive']} (sha256 {made['archive_sha256']})",
        f"root digest (cite it): {made['root_digest']}",
        f"check it with: ifaudit verify-bundle {out} --expect {made['root_digest']}",
    ]
