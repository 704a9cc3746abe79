"""Datasets and response files: resolved from sources in order, verified, stored in resources/.

A source is a local path (a mirror or the user's own file), an HTTP(S) URL, or a Hugging Face
hub file at a pinned revision (`hf://datasets/<owner>/<name>@<revision>/<file>`). With a pinned
sha256 the first source whose bytes match wins and a source with other bytes is reported, never
used. Without one, the first source that answers wins and its sha256 is written to a lock file
that outlives the cached copy, so any later fetch of other bytes under that name is refused.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ifaudit.io.canonical import all_or_nothing, atomic_write_bytes, sha256_bytes, write_json
from ifaudit.core.errors import InputError, VerificationError
from ifaudit.io.paths import open_input
from ifaudit.io.pins import SourceMiss, http_get

_HUB = re.compile(r"^hf://datasets/(?P<repo>[^@]+)@(?P<revision>[^/]+)/(?P<file>.+)$")


class DataSource(Protocol):
    def describe(self) -> str: ...

    def read(self) -> bytes: ...


@dataclass(frozen=True)
class LocalFile:
    path: Path

    def describe(self) -> str:
        return f"file {self.path}"

    def read(self) -> bytes:
        """The file's bytes; a path that is missing, unreadable or not a regular file (a FIFO
        would block, a device never end) is a miss, said in the words of ifaudit.io.paths."""
        try:
            with open_input(self.path) as handle:
                return handle.read()
        except InputError as error:
            raise SourceMiss(str(error)) from None


@dataclass(frozen=True)
class WebFile:
    url: str

    def describe(self) -> str:
        return f"URL {self.url}"

    def read(self) -> bytes:
        return http_get(self.url)


@dataclass(frozen=True)
class HubFile:
    repo: str
    revision: str
    file: str

    def describe(self) -> str:
        return f"hf://datasets/{self.repo}@{self.revision}/{self.file}"

    def read(self) -> bytes:
        from huggingface_hub import hf_hub_download

        try:
            local = hf_hub_download(self.repo, self.file, repo_type="dataset", revision=self.revision)
        except Exception as exc:  # the hub client raises many types; all mean "not from here"
            raise SourceMiss(f"{type(exc).__name__}: {exc}") from None
        return Path(local).read_bytes()


def parse_source(spec: str) -> DataSource:
    if spec.startswith(("http://", "https://")):
        return WebFile(spec)
    if spec.startswith("hf://"):
        match = _HUB.match(spec)
        if not match:
            raise InputError(f"hub source {spec!r} is not of the form hf://datasets/OWNER/NAME@REVISION/FILE")
        return HubFile(match["repo"], match["revision"], match["file"])
    return LocalFile(Path(spec.removeprefix("file:")))


def config_sources(spec: dict[str, Any], mirror: Path | None, offline: bool) -> list[DataSource]:
    """A config dataset's sources in the order the DAG tries them (workflow/rules/common.smk):
    the user's `path`, then `mirror` under the mirror folder, then (unless offline) `url` and `hf`."""
    specs = [spec["path"]] if "path" in spec else []
    if mirror is not None and "mirror" in spec:
        specs.append(str(mirror / spec["mirror"]))
    if not offline:
        specs += [spec["url"]] if "url" in spec else []
        if "hf" in spec:
            specs.append(f"hf://datasets/{spec['hf']['repo']}@{spec['hf']['revision']}/{spec['hf']['file']}")
    return [parse_source(item) for item in specs]


def _lock_path(lock_dir: Path, name: str) -> Path:
    return lock_dir / f"{name}.sha256"


def resolve(name: str, sources: list[DataSource], sha256: str | None, lock_dir: Path) -> tuple[bytes, str]:
    """The verified bytes of dataset `name` and a description of the source that gave them.

    The first-fetch lock applies to published datasets (with a URL or hub source) only: a user's
    own local file may change between runs, and the manifest records its hash each time.
    """
    expected = sha256.lower() if sha256 else None
    published = any(isinstance(source, (WebFile, HubFile)) for source in sources)
    lock = _lock_path(lock_dir, name)
    locked = lock.read_text().split()[0] if expected is None and published and lock.is_file() else None
    attempts: list[str] = []
    for source in sources:
        try:
            data = source.read()
        except SourceMiss as miss:
            attempts.append(f"{source.describe()}: missing ({miss})")
            continue
        actual = sha256_bytes(data)
        wanted = expected or locked
        if wanted is None or actual == wanted:
            for attempt in attempts:
                print(f"ifaudit: note: {name}: skipped {attempt}", file=sys.stderr)
            if wanted is None and published:
                atomic_write_bytes(lock, f"{actual}  {name}\n".encode())
                print(
                    f"ifaudit: note: {name}: no sha256 pinned; recorded {actual} in {lock} "
                    "(add it to the config as `sha256:` to pin it)",
                    file=sys.stderr,
                )
            return data, source.describe()
        origin = "pinned" if expected else f"recorded on first fetch in {lock}"
        attempts.append(f"{source.describe()}: sha256 mismatch, expected {wanted} ({origin}), got {actual}")
    if not sources:
        attempts.append("no source configured")
    error = VerificationError if any("mismatch" in a for a in attempts) else InputError
    raise error(f"dataset {name}: no source has the expected bytes: " + "; ".join(attempts))


def fetch(name: str, out: Path, record: Path, sources: list[DataSource], sha256: str | None, lock_dir: Path) -> None:
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
