"""The bundle as a Workflow Run RO-Crate (https://w3id.org/ro/wfrun/workflow/0.5), so registries
and tools that read research artifacts understand it.

The crate describes files already in the bundle folder; it is made with the `rocrate` library and
written by the canonical JSON writer (sorted keys), with no time stamp of its own: its dates are the
commit's and the manifests', so the same run gives the same crate.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ifaudit.io.archive import write_public
from ifaudit.io.canonical import pretty_json_bytes

METADATA = "ro-crate-metadata.json"
PROFILES = {
    "process": "https://w3id.org/ro/wfrun/process/0.5",
    "workflow_run": "https://w3id.org/ro/wfrun/workflow/0.5",
    "workflow_crate": "https://w3id.org/workflowhub/workflow-ro-crate/1.0",
}
LICENCE = "https://spdx.org/licenses/Apache-2.0"


def build_crate(bundle: Path, description: dict[str, Any], manifests: list[dict[str, Any]]) -> dict[str, Any]:
    from rocrate.model.contextentity import ContextEntity
    from rocrate.rocrate import ROCrate

    crate = ROCrate(gen_preview=False, version="1.1")
    crate.name = "ifaudit artifact bundle: " + ", ".join(description["runs"])
    crate.description = (
        "Everything needed to re-run and check an ifaudit audit of instruction-following scores "
        "offline: source at its commit, workflow, config, lock, pinned grader, NLTK data, "
        "datasets, grades, derived results and manifests. Check: ifaudit verify-bundle."
    )
    crate.license = LICENCE
    crate.datePublished = description["project"]["date"]
    workflow = crate.add_workflow(
        bundle / "project/Snakefile",
        "project/Snakefile",
        main=True,
        lang="snakemake",
        properties={"name": "ifaudit Snakefile", "version": description["project"]["commit"]},
    )
    inputs = [
        crate.add_file(
            bundle / relative,
            relative,
            properties={"name": relative, "sha256": entry["sha256"], "license": entry["licence"]},
        )
        for entry in description["datasets"].values()
        if entry["bundled"]
        for relative in (entry["path"],)
    ]
    inputs += [crate.add_file(bundle / path, path) for path in description["configs"]]
    results = sorted(p.relative_to(bundle).as_posix() for p in (bundle / "results").rglob("*") if p.is_file())
    outputs = [
        crate.add_file(bundle / relative, relative)
        for relative in results
        if Path(relative).name
        in {
            "grades.jsonl",
            "summary.json",
            "stats.json",
            "MANIFEST.json",
            "report.md",
            "metrics.csv",
            "comparisons.csv",
            "breakdown.csv",
            "tables.json",
        }
    ]
    ends = sorted(m["created_utc"] for m in manifests)
    crate.add_action(
        workflow,
        identifier="#run",
        object=inputs,
        result=outputs,
        properties={
            "name": "ifaudit run of " + ", ".join(description["runs"]),
            "endTime": ends[-1],
            "actionStatus": {"@id": "http://schema.org/CompletedActionStatus"},
        },
    )
    root = crate.root_dataset
    root["conformsTo"] = [{"@id": url} for url in PROFILES.values()]
    for profile, url in PROFILES.items():
        crate.add(
            ContextEntity(
                crate,
                url,
                properties={
                    "@type": "CreativeWork",
                    "name": profile.replace("_", " "),
                    "version": url.rsplit("/", 1)[1],
                },
            )
        )
    crate.metadata["conformsTo"] = [{"@id": "https://w3id.org/ro/crate/1.1"}, {"@id": PROFILES["workflow_crate"]}]
    return crate.metadata.generate()


def write_crate(bundle: Path, description: dict[str, Any], manifests: list[dict[str, Any]]) -> None:
    metadata = build_crate(bundle, description, manifests)
    metadata["@graph"] = sorted(metadata["@graph"], key=lambda entity: entity["@id"])
    write_public(bundle / METADATA, pretty_json_bytes(json.loads(json.dumps(metadata))))
