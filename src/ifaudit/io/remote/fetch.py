"""Datasets and response files: resolved from sources in order, verified, stored in resources/.

A source (ifaudit.io.remote.sources) is a local path (a mirror or the user's own file), an HTTP(S) URL, or
a Hugging Face hub file at a pinned revision (`hf://datasets/<owner>/<name>@<revision>/<file>`).
With a pinned sha256 the first source whose bytes match wins and a source with other bytes is
reported, never used. Without one, the first source that answers wins and its sha256 is written to
a lock file that outlives the cached copy, so any later fetch of other bytes under that name is
refused.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from ifaudit.io.canonical import all_or_nothing, atomic_write_bytes, sha256_bytes, write_json
from ifaudit.core.errors import InputError, VerificationError
from ifaudit.io.confine import inside
from ifaudit.io.paths import open_input
from ifaudit.io.remote.sources import (
    HubFile,
    Holds,
    NoMatch,
    Source,
    Wanted,
    WebFile,
    dataset_specs,
    first_match,
    parse_source,
)


def config_sources(spec: dict[str, Any], mirror: Path | None, offline: bool) -> list[Source]:
    """A config dataset's sources, in the one order (ifaudit.io.remote.sources.dataset_specs) the workflow
    also passes to `ifaudit fetch`."""
    return [parse_source(item, Holds.FILE) for item in dataset_specs(spec, mirror, offline)]


def _lock_path(lock_dir: Path, name: str) -> Path:
    """The dataset's first-fetch lock, inside `lock_dir` whatever the name (`../x` is refused)."""
    return inside(lock_dir, f"{name}.sha256", f"dataset {name!r}")


def _locked(lock: Path) -> str:
    """The sha256 a first-fetch lock recorded; a damaged lock (emptied, cut, not a sha256) is one
    line saying to remove it, never a traceback."""
    with open_input(lock) as handle:
        recorded = handle.read(200).decode("utf-8", errors="replace").split()[:1]
    if not recorded or not re.fullmatch(r"[0-9a-f]{64}", recorded[0]):
        raise InputError("not a first-fetch lock (`SHA256  NAME`); remove it to record the dataset again", path=lock)
    return recorded[0]


def resolve(name: str, sources: list[Source], sha256: str | None, lock_dir: Path) -> tuple[bytes, str]:
    """The verified bytes of dataset `name` and a description of the source that gave them.

    The first-fetch lock applies to published datasets (with a URL or hub source) only: a user's
    own local file may change between runs, and the manifest records its hash each time.
    """
    expected = sha256.lower() if sha256 else None
    published = any(isinstance(source, (WebFile, HubFile)) for source in sources)
    lock = _lock_path(lock_dir, name)
    locked = _locked(lock) if expected is None and published and lock.is_file() else None
    wanted = expected or locked
    origin = "pinned" if expected else f"recorded on first fetch in {lock}"

    def complaint(data: bytes) -> str | None:
        if wanted is None or (actual := sha256_bytes(data)) == wanted:
            return None
        return f"sha256 mismatch, expected {wanted} ({origin}), got {actual}"

    try:
        data, source = first_match(name, sources, Wanted(name, sha256=wanted), complaint)
    except NoMatch as none:
        attempts = none.attempts if sources else ["no source configured"]
        error = VerificationError if any("mismatch" in a for a in attempts) else InputError
        raise error(f"dataset {name}: no source has the expected bytes: " + "; ".join(attempts)) from None
    if wanted is None and published:
        actual = sha256_bytes(data)
        atomic_write_bytes(lock, f"{actual}  {name}\n".encode())
        print(
            f"ifaudit: note: {name}: no sha256 pinned; recorded {actual} in {lock} "
            "(add it to the config as `sha256:` to pin it)",
            file=sys.stderr,
        )
    return data, source.describe()


def fetch(name: str, out: Path, record: Path, sources: list[Source], sha256: str | None, lock_dir: Path) -> None:
    """Store the verified bytes at `out` and what was fetched from where at `record`."""
    data, origin = resolve(name, sources, sha256, lock_dir)
    with all_or_nothing():
        atomic_write_bytes(out, data)
        write_json(
            record,
            {
                "name": name,
                "path": str(out),
                "pinned": sha256 is not None,
                "sha256": sha256_bytes(data),
                "size": len(data),
                "source": origin,
            },
        )
