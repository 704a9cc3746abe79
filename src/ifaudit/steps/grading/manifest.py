"""A run's manifest: the sha256 of every file it used and made, versions, configuration, times.

This is the one output with time stamps and host details, kept apart from everything that is
compared byte for byte.
"""

from __future__ import annotations

import datetime
import json
import platform
from pathlib import Path
from typing import Any

from ifaudit import __version__, source_commit
from ifaudit.io import variables
from ifaudit.io.canonical import sha256_and_size
from ifaudit.io.paths import open_input
from ifaudit.tasks.environment import OUTPUT_PACKAGES, PACKAGES, package_versions
from ifaudit.core.errors import VerificationError


def _sha256_and_size(path: str | Path) -> tuple[str, int]:
    """The sha256 and size of a regular file, opened so that a FIFO or a device is refused at once."""
    with open_input(path) as handle:
        return sha256_and_size(handle)


def _describe(path: Path) -> dict[str, Any]:
    sha256, size = _sha256_and_size(path)
    return {"path": str(path), "sha256": sha256, "size": size}


def checked_dataset(name: str, record_path: Path) -> dict[str, Any]:
    """A fetch record, after checking its file still has the bytes that were fetched and verified."""
    with open_input(record_path) as handle:
        record = json.loads(handle.read().decode("utf-8"))
    actual, _ = _sha256_and_size(record["path"])
    if actual != record["sha256"]:
        raise VerificationError(
            f"dataset {name}: {record['path']} changed after it was fetched: sha256 {actual}, "
            f"fetched {record['sha256']}; delete it and re-run to fetch it again"
        )
    return record


def build_manifest(
    run: str, config: dict[str, Any], files: dict[str, Path], datasets: dict[str, Path]
) -> dict[str, Any]:
    return {
        "run": run,
        "config": config,
        "datasets": {name: checked_dataset(name, record) for name, record in sorted(datasets.items())},
        "files": {label: _describe(path) for label, path in sorted(files.items())},
        "ifaudit": __version__,
        "ifaudit_commit": source_commit(),
        # Settings taken from the environment rather than the config (ifaudit.io.variables).
        "environment_variables": variables.taken_from_environment(),
        "packages": package_versions(PACKAGES + OUTPUT_PACKAGES),
        "host": {"machine": platform.machine(), "platform": platform.platform(), "python": platform.python_version()},
        "created_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
