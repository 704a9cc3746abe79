"""Artifact bundles: everything a paper's artifact needs to show its grades, and a verify that
checks every byte and grades every run again.

A bundle holds the configuration, the lock file, the grader pin, the committed canaries, the
results (verified grades, summaries, manifests, report, canary verdicts, judgement store) and the
datasets the runs read, plus CHECKSUMS.sha256 over all of it. Verifying it in a fresh folder
checks each checksum (naming any file that differs, is missing or was added), then regrades each
run from the bundled prompts and responses with the grader its grades name, and compares bytes.
"""

from __future__ import annotations

import json
import shutil
from importlib import resources as package_files
from pathlib import Path
from typing import Any

from ifaudit.canonical import atomic_write_bytes, jsonl_bytes, sha256_file
from ifaudit.errors import VerificationError

CHECKSUMS = "CHECKSUMS.sha256"


def _copy(source: Path, bundle: Path, relative: str) -> None:
    target = bundle / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def make_bundle(project: Path, results: Path, resources: Path, bundle: Path) -> int:
    """Copy the artifact into `bundle` (a new folder) and write its checksums; returns the file count."""
    if bundle.exists() and any(bundle.iterdir()):
        raise VerificationError(f"{bundle}: not empty; a bundle is written to a new folder")
    parts = [(project / "config", "config"), (results, "results"), (resources / "data", "resources/data")]
    for source, prefix in parts:
        for path in sorted(p for p in source.rglob("*") if p.is_file() and not p.name.startswith(".")):
            _copy(path, bundle, f"{prefix}/{path.relative_to(source)}")
    _copy(project / "requirements.lock", bundle, "requirements.lock")
    _copy(project / "vendor/google_ifeval/pin.toml", bundle, "vendor/google_ifeval/pin.toml")
    _copy(project / "vendor/infobench/pin.toml", bundle, "vendor/infobench/pin.toml")
    for canary in sorted(package_files.files("ifaudit.canaries").iterdir(), key=lambda p: p.name):
        if canary.name.endswith(".json"):
            target = bundle / "canaries" / canary.name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(canary.read_bytes())
    files = sorted(str(p.relative_to(bundle)) for p in bundle.rglob("*") if p.is_file())
    atomic_write_bytes(bundle / CHECKSUMS, "".join(f"{sha256_file(bundle / f)}  {f}\n" for f in files).encode())
    return len(files)


def check_checksums(bundle: Path) -> int:
    listed: dict[str, str] = {}
    for line in (bundle / CHECKSUMS).read_text(encoding="utf-8").splitlines():
        digest, _, name = line.partition("  ")
        listed[name] = digest
    problems = []
    for name, digest in sorted(listed.items()):
        path = bundle / name
        if not path.is_file():
            problems.append(f"{name}: missing")
        elif sha256_file(path) != digest:
            problems.append(f"{name}: sha256 {sha256_file(path)}, bundled {digest}")
    present = {str(p.relative_to(bundle)) for p in bundle.rglob("*") if p.is_file()} - {CHECKSUMS}
    problems += [f"{name}: not in {CHECKSUMS}" for name in sorted(present - set(listed))]
    if problems:
        raise VerificationError(f"bundle {bundle} does not verify: " + "; ".join(problems))
    return len(listed)


def regrade_run(bundle: Path, manifest: dict[str, Any]) -> bytes:
    """The grades of one run, made again from the bundled inputs with the run's own grader."""
    from ifaudit.graders import load_registry
    from ifaudit.grading import canonical_order, grade_all
    from ifaudit.infobench import grade_infobench, recorded_verdicts
    from ifaudit.judge import JudgeSettings
    from ifaudit.judge_protocol import choose_protocol
    from ifaudit.nltk_data import resolve_punkt
    from ifaudit.pins import default_sources, load_pin
    from ifaudit.responses import read_responses
    from ifaudit.tasks import GOOGLE, JUDGE, get_task, read_task_prompts

    run, settings = manifest["config"]["run"], manifest["config"]["settings"]
    task = get_task(run["task"])
    data = bundle / "resources" / "data"
    prompts = read_task_prompts(task, data / f"{run['prompts']}.jsonl")
    responses = canonical_order(prompts, read_responses(data / f"{run['responses']}.jsonl", prompts))
    if task.registry == JUDGE:
        if "judgements" in run:
            verdicts, identity = recorded_verdicts(prompts, responses, judgements=data / f"{run['judgements']}.jsonl")
        else:
            judge = run["judge"]
            # A manifest written before protocols were named was judged by ifaudit's own.
            chosen = manifest["config"].get("judge_protocol", {"protocol": "ifaudit"})
            pin = load_pin(bundle / "vendor/infobench/pin.toml", chosen.get("infobench_version"))
            protocol = choose_protocol(chosen["protocol"], pin, bundle / ".verify" / "infobench",
                                       default_sources(pin, [], env_var="IFAUDIT_INFOBENCH_SOURCE"))
            verdicts, identity = recorded_verdicts(
                prompts, responses, store=bundle / settings["judgement_store"], protocol=protocol,
                settings=JudgeSettings(model=judge["model"], base_url=judge["base_url"],
                                       **{k: judge[k] for k in ("temperature", "max_tokens") if k in judge}))
        return jsonl_bytes(grade_infobench(task.name, identity, prompts, responses, verdicts))
    resolve_punkt(bundle / ".verify" / "nltk_data")
    pin = load_pin(bundle / "vendor/google_ifeval/pin.toml")
    upstream = task.registry == GOOGLE and settings["grader"] == "upstream"
    registry = load_registry(task.registry, settings["grader"], pin, bundle / ".verify" / "vendor",
                             default_sources(pin, []) if upstream else [])
    return jsonl_bytes(grade_all(registry, task, prompts, responses))


def verify_bundle(bundle: Path, regrade: bool = True) -> dict[str, Any]:
    files = check_checksums(bundle)
    regraded = []
    if regrade:
        for manifest_path in sorted((bundle / "results").glob("*/MANIFEST.json")):
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
            bundled = (manifest_path.parent / "grades.jsonl").read_bytes()
            again = regrade_run(bundle, manifest)
            if again != bundled:
                lines = zip(bundled.split(b"\n"), again.split(b"\n"))
                first = next((i for i, (a, b) in enumerate(lines, 1) if a != b), None)
                raise VerificationError(f"run {manifest['run']}: regrading gives other grades than "
                                        f"results/{manifest['run']}/grades.jsonl (first difference at line {first})")
            regraded.append(manifest["run"])
    shutil.rmtree(bundle / ".verify", ignore_errors=True)
    return {"files": files, "regraded": regraded}
