"""Verify a bundle alone: its root digest, every checksum, every hash the manifests name, then
both grading passes of every run and every derived file made again by the same `ifaudit` steps
the workflow ran, from the bundled inputs, with the bundled source, offline.

Each job is the one the DAG ran (ifaudit.steps.planning.jobs, from the config the DAG recorded, with the
bundle's own places), run through the same `ifaudit` entry point with the bundle's own source
first on PYTHONPATH, in a scratch folder laid out as the run's folder was (results/, resources/). Every file a step makes is compared byte for byte with the
bundled one; any that differs is named.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from ifaudit.io import variables
from ifaudit.io.archive import extract_tar_gz, parse_checksums, tree_files
from ifaudit.io.confine import inside, name_problem, plain_files
from ifaudit.io.paths import open_input
from ifaudit.inputs.importers.fields import LogRecord, kind_of
from ifaudit.steps.artifact.bundle import (
    CHECKSUMS,
    MAX_DOCUMENT_BYTES,
    DESCRIPTION,
    JUDGE_SCRIPT,
    NLTK,
    REPORT_DIGEST,
    ROOT_DIGEST,
    SHOWN,
    SIDE_FILES,
    bundle_path,
    bundled_store,
    grader_folder,
    pinned_graders,
    read_document,
    read_manifests,
    root_digest,
    shown,
)
from ifaudit.io.canonical import sha256_file, staged_json
from ifaudit.core.difference import first_difference
from ifaudit.core.errors import InputError, VerificationError
from ifaudit.core.terminal import printable
from ifaudit.steps.planning.jobs import RunPlan
from ifaudit.steps.planning import plan

if TYPE_CHECKING:
    from ifaudit.io.remote.pins import Pin


def read_checksums(bundle: Path) -> bytes:
    """The bundle's checksum list, within a cap (a line per file, MAX_ENTRIES of them at most); a
    folder without one is no bundle."""
    if not (bundle / CHECKSUMS).is_file():
        raise InputError(
            f"not a bundle: no {CHECKSUMS}; give the folder `ifaudit bundle` made, or its .tar.gz", path=bundle
        )
    with open_input(bundle / CHECKSUMS) as handle:
        data = handle.read(MAX_DOCUMENT_BYTES + 1)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise VerificationError(f"{CHECKSUMS}: more than {MAX_DOCUMENT_BYTES} bytes; not a list `ifaudit bundle` wrote")
    return data


def _side_file(path: Path) -> bytes:
    """A side file's bytes (a line or two; any bytes, not necessarily UTF-8), within the cap."""
    with open_input(path) as handle:
        return handle.read(MAX_DOCUMENT_BYTES)


def check_root_digest(bundle: Path, expect: str | None) -> str:
    """The root digest of the checksum list; it must equal `expect` and what the side files say."""
    digest = root_digest(read_checksums(bundle))
    if expect is not None and expect.removeprefix("sha256:") != digest.removeprefix("sha256:"):
        raise VerificationError(
            f"root digest {digest}, expected {expect}: {CHECKSUMS} is not the list the cited digest was made from"
        )
    for side in (ROOT_DIGEST, REPORT_DIGEST):
        path = bundle / side
        if path.is_file() and digest.encode() not in _side_file(path):
            raise VerificationError(f"{side}: does not state the root digest {digest} of {CHECKSUMS}")
    return digest


def check_checksums(bundle: Path, present: Sequence[str]) -> int:
    """Every file listed has its sha256, and every file `present` (the bundle's, but the side
    files) is listed."""
    listed = parse_checksums(read_checksums(bundle))
    problems = []
    for name, digest in sorted(listed.items()):
        path = inside(bundle, name, CHECKSUMS, VerificationError)
        if not path.is_file():
            problems.append(f"{name}: missing")
        elif (actual := sha256_file(path)) != digest:
            problems.append(f"{name}: its bytes now have sha256 {actual}; {CHECKSUMS} records {digest}")
    unlisted = sorted(set(present) - SIDE_FILES - set(listed))
    if unlisted:  # a folder made inside the bundle (a venv) would otherwise name thousands
        problems.append(
            f"{len(unlisted)} file(s) not in {CHECKSUMS}: {shown(unlisted)} "
            "(keep what you add, such as a Python environment, outside the bundle's folder)"
        )
    if problems:
        more = f"; and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
        raise VerificationError(f"bundle {bundle} does not verify: " + "; ".join(problems[:SHOWN]) + more)
    return len(listed)


def check_manifest_hashes(
    bundle: Path, manifests: Sequence[dict[str, Any]], fetched: Path, unfetched: Collection[str] = ()
) -> int:
    """Every file and dataset a manifest names, by its recorded sha256, but the withheld datasets
    left `unfetched` (`--checksums-only`: their bytes are in neither the bundle nor `fetched`)."""
    problems, checked = [], 0
    for manifest in manifests:
        named = named_files(manifest, unfetched)
        for label, recorded, digest in named:
            where = f"{plan.run_file(manifest['run'], 'MANIFEST.json')} ({label})"
            relative = bundle_path(recorded, where)
            bundled = inside(bundle, relative, where, VerificationError)
            path = bundled if bundled.is_file() else inside(fetched, relative, where, VerificationError)
            checked += 1
            if not path.is_file():
                problems.append(f"{relative}: named by {where}, not in the bundle")
            elif (actual := sha256_file(path)) != digest:
                problems.append(f"{relative}: its bytes now have sha256 {actual}; {where} records {digest}")
    if problems:
        raise VerificationError("manifest hashes do not match: " + "; ".join(problems))
    return checked


def check_recorded_run(manifest: Mapping[str, Any], recomputed: bool = False) -> None:
    """The fields of a run's manifest the verifier reads, each of its type (one line naming the
    manifest and the field otherwise): the config it ran with (its task and grader say which
    pins to check) and, to be `recomputed`, its canary verdict."""
    record = LogRecord.at(manifest, plan.run_file(str(manifest["run"]), "MANIFEST.json"))
    config = record.record("config")
    config.record("run").text("task")
    config.record("settings").text("grader")
    if recomputed:
        record.record("files").record("canary")


def named_files(manifest: Mapping[str, Any], unfetched: Collection[str] = ()) -> list[tuple[str, str, str]]:
    """(label, path, sha256) of every file and dataset a run's manifest names, each entry checked
    for its shape (an object with a `path` and a `sha256`, strings), but the datasets `unfetched`."""
    record = LogRecord.at(manifest, plan.run_file(str(manifest["run"]), "MANIFEST.json"))
    files, datasets = record.record("files"), record.record("datasets")
    named = [(label, files.record(label)) for label in files.value]
    named += [(f"dataset {name}", datasets.record(name)) for name in datasets.value if name not in unfetched]
    return [(label, entry.text("path"), entry.text("sha256")) for label, entry in named]


def withheld_datasets(bundle: Path) -> dict[str, dict[str, Any]]:
    """The datasets BUNDLE.json says were left out for their licence, by name (none without it),
    each read with its fields' types (a list, a string, a missing field: one line naming it)."""
    if not (bundle / DESCRIPTION).is_file():
        return {}
    datasets = read_document(bundle / DESCRIPTION, DESCRIPTION).record("datasets")
    withheld = {}
    for name in datasets.value:
        entry = datasets.record(name)
        if not isinstance(bundled := entry.raw("bundled"), bool):
            raise entry.error("bundled", f"expected true or false, got {kind_of(bundled)}")
        if not bundled:
            entry.text("path"), entry.text("sha256")
            sources = entry.record("sources")
            # The config's rules: a `mirror` stays inside the mirror folder; a relative `path` has no `..`.
            mirror, path = sources.maybe_text("mirror"), sources.maybe_text("path")
            if mirror is not None and (why := name_problem(PurePosixPath(mirror).as_posix())) is not None:
                raise sources.error("mirror", f"path {mirror!r} {why}; it must stay inside the mirror folder")
            if path is not None and ".." in PurePosixPath(path).parts:
                raise sources.error("path", f"path {path!r} has a `..` part")
            sources.maybe_text("url")
            if (hub := sources.maybe_record("hf")) is not None:
                hub.text("repo"), hub.text("revision"), hub.text("file")
            withheld[name] = dict(entry.value)
    return withheld


def fetch_withheld(bundle: Path, work: Path, mirror: Path | None, offline: bool) -> list[str]:
    """Datasets left out for their licence, fetched from their sources and checked by sha256."""
    from ifaudit.io.remote.fetch import config_sources, fetch

    withheld = []
    for name, entry in withheld_datasets(bundle).items():
        where = f"{DESCRIPTION} (dataset {name!r})"
        out = inside(work, bundle_path(entry["path"], where), where, VerificationError)
        fetch(
            name,
            out,
            inside(work / ".fetched", f"{name}.json", where, VerificationError),
            config_sources(entry["sources"], mirror, offline),
            entry["sha256"],
            work / ".fetched" / "checksums",
        )
        withheld.append(name)
    return withheld


@dataclass
class Replay:
    """A scratch copy of the run's folder, and the `ifaudit` command run in it as the DAG ran it,
    with the bundle's own source first on the import path."""

    bundle: Path
    work: Path
    source: Path
    command: Path  # the `ifaudit` entry point: the DAG's, importing the bundle's source

    def run(self, job: Sequence[str], hash_seed: str = "0") -> None:
        self.run_side_by_side([(job, hash_seed)])

    def run_side_by_side(self, jobs: Sequence[tuple[Sequence[str], str]]) -> None:
        """Jobs (each with its hash seed) that read nothing another one writes, started together as
        the DAG runs them: a run's two grading passes take a reviewer's two cores, not one after
        the other. The first failed job, in the order given, is the one named."""
        failed = []
        with contextlib.ExitStack() as stack:  # on leaving, every job started has ended
            started = []
            for job, hash_seed in jobs:
                said = stack.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8"))  # a file: never a full pipe
                command = [str(self.command), *job]
                environment = self._environment(hash_seed)
                process = stack.enter_context(
                    subprocess.Popen(
                        command, cwd=self.work, env=environment, stdout=subprocess.DEVNULL, stderr=said, text=True
                    )
                )
                started.append((job, process, said))
            for job, process, said in started:
                if process.wait() != 0:
                    said.seek(0)
                    last = (said.read().strip().splitlines() or ["(no message)"])[-1]
                    failed.append(f"`ifaudit {job[0]}` failed while recomputing the bundle: {last}")
        if failed:
            raise VerificationError(failed[0])

    def _environment(self, hash_seed: str) -> dict[str, str]:
        env = variables.without_ifaudit_variables()
        env.update(
            PYTHONPATH=str(self.source / "src"),
            PYTHONHASHSEED=hash_seed,
            **{variables.RESOURCES.name: str(self.work / plan.RESOURCES)},
            # The bundle's source is imported in place: its bytecode goes to the scratch folder,
            # never into the bundle (whose every file is listed).
            PYTHONPYCACHEPREFIX=str(self.work / ".pycache"),
        )
        return env


def ifaudit_command() -> Path:
    """The `ifaudit` command beside this interpreter (the one running the verifier), else on PATH."""
    beside = Path(sys.executable).with_name("ifaudit")
    found = beside if beside.is_file() else shutil.which("ifaudit")
    if found is None:
        raise VerificationError("the `ifaudit` command is not installed beside this Python nor on PATH")
    return Path(found)


def _source(bundle: Path, work: Path) -> Path:
    """The bundled source, with the recorded uncommitted diff applied when there is one."""
    if not (bundle / "project.diff").is_file():
        return bundle / "project"
    source = work / ".project"
    shutil.copytree(bundle / "project", source)
    done = subprocess.run(
        ["git", "apply", "--binary", str(bundle / "project.diff")],
        cwd=source,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise VerificationError(f"project.diff does not apply to project/: {done.stderr.strip()}")
    return source


def recorded_config(bundle: Path, manifests: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The config the DAG ran with, as its record (results/MANIFEST.json) keeps it, limited to the
    bundled runs; without that record, as the runs' manifests and statistics record it."""
    record = bundle / plan.report_file("MANIFEST.json")
    runs = {m["run"]: m["config"] for m in manifests}
    if record.is_file():
        given = read_document(record, plan.report_file("MANIFEST.json")).record("config")
        ran = given.record("runs")
        return {**given.value, "runs": {name: dict(ran.record(name).value) for name in runs}}
    for manifest in manifests:  # what is read of each below: its config's settings, run and datasets
        LogRecord.at(manifest, plan.run_file(str(manifest["run"]), "MANIFEST.json")).record("config").record("datasets")
    first = next(iter(runs.values()))
    config = {
        **first["settings"],
        "runs": {name: described["run"] for name, described in runs.items()},
        "datasets": {name: spec for described in runs.values() for name, spec in described["datasets"].items()},
        "comparisons": None,
    }
    # The statistics' settings as the files made with them record them (none: nothing to recompute).
    recorded = [bundle / plan.run_file(name, "stats.json") for name in runs]
    recorded += sorted((bundle / plan.COMPARISONS).glob("*/*.json"))
    for path in (path for path in recorded if path.is_file()):
        settings = read_document(path, path.relative_to(bundle).as_posix()).record("settings")
        chosen = {key: settings.raw(key) for key in ("resamples", "level", "seed")}
        config["statistics"] = {**chosen, "interval": settings.text("method")}
        break
    return config


def replay_plan(bundle: Path, source: Path, manifests: Sequence[dict[str, Any]]) -> RunPlan:
    """The DAG's plan, with the bundle's own places: its grader files, NLTK data, stores and
    InFoBench scripts; offline, and generation replayed from the store only."""
    config = recorded_config(bundle, manifests)
    scripts = bundle / JUDGE_SCRIPT
    config.update(
        grader_sources=list(dict.fromkeys(str(bundle / folder) for _, _, folder in bundled_graders(bundle, manifests))),
        offline=True,
        nltk_mirror=str(bundle / NLTK),
        judgement_store=str(_store(bundle, config, "judgement_store", plan.DEFAULT_JUDGEMENT_STORE)),
        generation_store=str(_store(bundle, config, "generation_store", plan.DEFAULT_GENERATION_STORE)),
        replay_only=True,
        infobench_sources=[str(path) for path in sorted(scripts.iterdir())] if scripts.is_dir() else [],
    )
    return RunPlan(config, source / plan.GRADER_PIN, source / plan.INFOBENCH_PIN)


def _store(bundle: Path, config: dict[str, Any], key: str, default: str) -> Path:
    """A request store of the recorded config, where the bundle keeps it (inside the bundle)."""
    where = f"the recorded config ({key})"
    return inside(bundle, bundled_store(str(config.get(key, default))), where, VerificationError)


def _responses(replay: Replay, jobs: RunPlan, name: str) -> list[str]:
    """The files remade to get the run's responses: a generated run's responses are replayed
    from the bundled store (never asked live), an imported run's log imported again."""
    run = jobs.runs[name]
    if "model" in run:
        replay.run(jobs.generate_job(name, quiet=True))
        return [jobs.responses(name)]
    if "import" in run:
        replay.run(jobs.import_job(name))
        return [jobs.responses(name), plan.run_file(name, "imported/harness.json")]
    return []


def recompute(replay: Replay, manifests: Sequence[dict[str, Any]]) -> list[str]:
    """Run every derived step again in the scratch folder; returns the files made, relative to it."""
    bundle, work = replay.bundle, replay.work
    for manifest in manifests:
        check_recorded_run(manifest, recomputed=True)
    jobs = replay_plan(bundle, replay.source, manifests)
    if (bundle / plan.CANARIES).is_dir():  # the task-wide verdicts: the report's, when there is one
        shutil.copytree(bundle / plan.CANARIES, work / plan.CANARIES)
    made: list[str] = []
    for manifest in manifests:
        name = manifest["run"]
        # The canary verdict the run's summary was made from, as its manifest records it (checked
        # by that hash): the run's own combined verdict.
        where = f"{plan.run_file(name, 'MANIFEST.json')} (canary)"
        canary = bundle_path(manifest["files"]["canary"]["path"], where)
        (work / canary).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(
            inside(bundle, canary, where, VerificationError), inside(work, canary, where, VerificationError)
        )
        made += _responses(replay, jobs, name)
        replay.run_side_by_side(
            [(jobs.grade_job(name, pass_, 0, 1, certify=False), seed) for pass_, seed in plan.PASS_HASH_SEEDS.items()]
        )
        replay.run(jobs.verify_job(name, 1, certified=False))
        replay.run(jobs.summarize_job(name))
        made += [
            plan.pass_grades(name, "a"),
            plan.pass_grades(name, "b"),
            plan.run_file(name, "grades.jsonl"),
            plan.run_file(name, "verify.json"),
            plan.run_file(name, "summary.json"),
        ]
        if (bundle / plan.run_file(name, "stats.json")).is_file():
            replay.run(jobs.stats_job(name))
            made.append(plan.run_file(name, "stats.json"))
        if "import" in jobs.runs[name] and (bundle / plan.run_file(name, "claims.json")).is_file():
            replay.run(jobs.audit_claims_job(name))
            made += [plan.run_file(name, "claims.json"), plan.run_file(name, "disagreements.csv")]
    # The bundle's pairs, as the DAG compares them: one compare-many job per task and prompt set.
    pairs = [(path.parent.name, path.stem) for path in sorted((bundle / plan.COMPARISONS).glob("*/*.json"))]
    for a, b in pairs:
        if a not in jobs.runs or b not in jobs.runs:
            raise VerificationError(f"{plan.comparison(a, b)}: compares a run the bundle has no manifest of")
    for job in plan.comparison_jobs(jobs.runs, pairs):
        replay.run(jobs.compare_many_job(job))
        made += [plan.comparison(a, b) for a, b in job["pairs"]]
    for path in sorted((bundle / plan.PROMPT_AUDITS).glob("*.json")):
        replay.run(jobs.audit_prompts_job(path.stem))
        made.append(plan.prompt_audit(path.stem))
    if (bundle / plan.report_file("tables.json")).is_file():
        recorded = report_plan(bundle, {m["run"]: m for m in manifests})
        replay.run(jobs.report_job(*staged_json(work / plan.STAGED, "report-plan", recorded)))
        made += [plan.report_file(name) for name in plan.REPORT_TABLES]
        made += [plan.report_file(f"plots/{name}") for name in tree_files(work / plan.report_file("plots"))]
    return made


def report_plan(bundle: Path, runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The plan the report was made from (kept in tables.json), after checking it against the
    manifests: a plan can choose the order and the pairs, never a run's label or published figures."""
    tables = plan.report_file("tables.json")
    document = read_document(bundle / tables, tables)
    if document.value.get("plan") is None:
        raise VerificationError(
            f"{tables}: no `plan`; the report was made by an ifaudit too old to record it, so it cannot be recomputed"
        )
    recorded, planned = dict(document.record("plan").value), document.record("plan").record("runs")
    for name in planned.value:
        entry = planned.record(name)
        if name not in runs:
            raise VerificationError(f"{tables}: plan names run {name!r}, which has no manifest")
        spec = runs[name]["config"]["run"]  # its shape checked with the manifest (check_manifest)
        for key in ("task", "prompts"):
            if entry.raw(key) != spec.get(key):
                raise VerificationError(
                    f"{tables}: plan gives run {name} {key} {entry.raw(key)!r}, its manifest {spec.get(key)!r}"
                )
        if entry.raw("label") != spec.get("label", name) or entry.value.get("published") != spec.get("published"):
            raise VerificationError(
                f"{tables}: plan's label or published figures of run {name} differ from its manifest"
            )
    return recorded


def compare_made(bundle: Path, work: Path, made: Sequence[str]) -> None:
    differing = []
    for relative in made:
        bundled = bundle / relative
        if not bundled.is_file():
            differing.append(f"{relative}: recomputed, but not in the bundle")
        elif (again := sha256_file(work / relative)) != (kept := sha256_file(bundled)):
            where = first_difference((work / relative).read_bytes(), bundled.read_bytes(), relative)
            differing.append(f"{relative}: {where} (recomputed sha256 {again}, bundled {kept})")
    if differing:
        raise VerificationError("recomputing from the bundled inputs gives other bytes: " + "; ".join(differing))


def check_pins(bundle: Path, pin_files: Sequence[str], own_pins: Mapping[str, Path]) -> None:
    """Each grader pin the bundle grades with (Google's, and the pin of every task its runs name)
    must be the verifier's own (`own_pins`, by pin file; one it has no copy of is not compared):
    a bundle that pins other grader files (edited together with its checksums) would otherwise
    verify against itself."""
    for pin_file in dict.fromkeys(pin_files):
        own_pin = own_pins.get(pin_file)
        if own_pin is None:
            continue
        bundled = bundle / "project" / pin_file
        if not bundled.is_file() or sha256_file(bundled) != sha256_file(own_pin):
            raise VerificationError(
                f"project/{pin_file}: not this ifaudit's pin of the upstream grader ({own_pin}): "
                "the bundle would grade with grader files the verifier does not trust"
            )


def bundled_graders(bundle: Path, manifests: Sequence[dict[str, Any]]) -> list[tuple[str, Pin, str]]:
    """Each pinned grader the runs' tasks grade with (each task says which), as the bundle carries
    it: its pin file, the bundle's pin of it (at the task's version) and its folder in the bundle."""
    from ifaudit.io.remote.pins import load_pin

    found = []
    for grader in pinned_graders(manifests):
        pin = load_pin(bundle / "project" / grader.pin_file, grader.version)
        found.append((grader.pin_file, pin, grader_folder(grader.vendor, pin.version)))
    return found


def check_grader_files(bundle: Path, manifests: Sequence[dict[str, Any]]) -> int:
    """Every file of every pinned grader the runs' tasks grade with is in the bundle with the
    sha256 its pin gives (the bundle's pin, checked against the verifier's own first): a grader
    file edited with every checksum rewritten is named here, before anything is graded."""
    checked, problems = 0, []
    for pin_file, pin, folder in bundled_graders(bundle, manifests):
        for pinned in pin.files:
            path, checked = bundle / folder / pinned.path, checked + 1
            if not path.is_file():
                problems.append(f"{folder}/{pinned.path}: missing (the runs' task grades with it)")
            elif (actual := sha256_file(path)) != pinned.sha256:
                problems.append(
                    f"{folder}/{pinned.path}: its bytes have sha256 {actual}; project/{pin_file} pins {pinned.sha256}"
                )
    if problems:
        raise VerificationError("grader files are not the pinned ones: " + "; ".join(problems))
    return checked


def bundled_run_order(bundle: Path) -> list[str]:
    """The runs in the config's order, as BUNDLE.json lists them (checked against its checksum
    already); none from a bundle without that list."""
    if not (bundle / DESCRIPTION).is_file():
        return []
    runs = read_document(bundle / DESCRIPTION, DESCRIPTION).value.get("runs")
    return [run for run in runs if isinstance(run, str)] if isinstance(runs, list) else []


def verify_bundle(
    bundle: Path,
    expect: str | None = None,
    mirror: Path | None = None,
    recompute_all: bool = True,
    own_pins: Mapping[str, Path] | None = None,
) -> dict[str, Any]:
    """Verify the bundle folder, or the .tar.gz an author uploads (unpacked into a new folder).
    `own_pins`: the verifier's own grader pins, by pin file (relative to the project)."""
    if bundle.is_file() and bundle.name.endswith((".tar.gz", ".tgz")):
        with tempfile.TemporaryDirectory(prefix="ifaudit-bundle-") as unpacked:
            return verify_bundle(extract_tar_gz(bundle, Path(unpacked)), expect, mirror, recompute_all, own_pins)
    if not bundle.is_dir():
        what = "not found" if not bundle.exists() else "not a folder"
        raise InputError(f"{what}; give the folder `ifaudit bundle` made, or its .tar.gz", path=bundle)
    bundle = bundle.resolve()
    present = plain_files(bundle, "the bundle", VerificationError)  # first: no link, FIFO or device
    digest = check_root_digest(bundle, expect)
    files = check_checksums(bundle, present)
    check_pins(bundle, [plan.GRADER_PIN], own_pins or {})
    manifests = read_manifests(bundle / plan.RESULTS, bundled_run_order(bundle))
    work = Path(tempfile.mkdtemp(prefix="ifaudit-verify-"))
    try:
        withheld = fetch_withheld(bundle, work, mirror, offline=mirror is not None) if recompute_all else []
        unfetched = [] if recompute_all else list(withheld_datasets(bundle))
        hashes = check_manifest_hashes(bundle, manifests, work, unfetched)
        # InFoBench's judge scripts, when the bundle carries them, are replayed from its own pin
        # of them: that pin must be the verifier's too, as the graders' are.
        for manifest in manifests:
            check_recorded_run(manifest)
        judge_pins = [plan.INFOBENCH_PIN] if (bundle / JUDGE_SCRIPT).is_dir() else []
        check_pins(bundle, [grader.pin_file for grader in pinned_graders(manifests)] + judge_pins, own_pins or {})
        check_grader_files(bundle, manifests)
        made: list[str] = []
        if recompute_all:
            datasets = Path(plan.dataset_file("x")).parent
            (work / datasets).mkdir(parents=True, exist_ok=True)
            for path in (bundle / datasets).glob("*.jsonl"):
                shutil.copyfile(path, work / datasets / path.name)
            made = recompute(Replay(bundle, work, _source(bundle, work), ifaudit_command()), manifests)
            compare_made(bundle, work, made)
    except OSError as error:  # the scratch copy: a full disk, a file-size limit (`ulimit -f`)
        where = f" ({error.filename})" if error.filename else ""
        raise VerificationError(
            f"cannot recompute in the scratch folder {work}: {error.strerror or error}{where}"
        ) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "root_digest": digest,
        "files": files,
        "manifest_hashes": hashes,
        "withheld": withheld,
        "unfetched": unfetched,
        "regraded": [m["run"] for m in manifests] if recompute_all else [],
        "recomputed": len(made),
    }


UNCHECKED = (
    "ifaudit: note: no --expect: authenticity NOT checked, only that the bundle agrees with itself "
    "(and the bundle's own code runs: docs/reviewers.md says how to run it contained)"
)


def verify_bundle_step(
    bundle: Path, expect: str | None, mirror: Path | None, checksums_only: bool, own_pins: Mapping[str, Path]
) -> list[str]:
    """`verify-bundle`: the notes on what is not checked (at once, on stderr), then the bundle
    verified; returns the lines that say what was verified. `own_pins`: this ifaudit's grader
    pins, by pin file."""
    if not expect:
        print(UNCHECKED, file=sys.stderr)
    for own_pin in dict.fromkeys(own_pins.values()):
        if not own_pin.is_file():
            note = f"ifaudit: note: no pin of this ifaudit at {own_pin}: the bundled pin is NOT compared"
            print(printable(note), file=sys.stderr)
    result = verify_bundle(
        bundle,
        expect=expect,
        mirror=mirror,
        recompute_all=not checksums_only,
        own_pins={pin_file: path for pin_file, path in own_pins.items() if path.is_file()},
    )
    return [verified_line(result, expect is not None, checksums_only)] + ([] if expect else [UNCHECKED])


def verified_line(result: dict[str, Any], expected: bool, checksums_only: bool) -> str:
    """What a bundle that verifies was checked for, in one line: with `--checksums-only`, that
    nothing was regraded or recomputed because none was asked for, not that none reproduced."""
    checked = (
        f"root digest {result['root_digest']}; {result['files']} files match their checksums; "
        f"{result['manifest_hashes']} manifest hashes match"
    )
    if checksums_only:
        unfetched = result.get("unfetched")
        return (
            f"bundle's bytes verify (--checksums-only){'' if expected else ' (authenticity NOT checked: no --expect)'}: "
            f"{checked}; not regraded or recomputed (run verify-bundle without --checksums-only to reproduce the results)"
            + (f"; not fetched (not redistributable): {', '.join(unfetched)}" if unfetched else "")
        )
    withheld = f"; fetched (not redistributable): {', '.join(result['withheld'])}" if result["withheld"] else ""
    runs = len(result["regraded"])
    return (
        f"bundle verifies{'' if expected else ' (authenticity NOT checked: no --expect)'}: {checked}; "
        f"{runs} run{'' if runs == 1 else 's'} regraded byte-identically (both passes): {', '.join(result['regraded'])}; "
        f"{result['recomputed']} derived files recomputed identically{withheld}"
    )
