"""Pinned external files: where they may come from, and proof that the bytes are the pinned ones.

A pin lists files by path, size and sha256. Sources are tried in order for each file (a local
folder, a git checkout, an archive, the pin's own mirrors, then the canonical URL); the first source whose bytes match
the pin wins, and a source that has the file with other bytes is reported, never used. The files
are assembled in a temporary folder and renamed into place as a whole, so a reader never sees a
partial set, and a materialized folder is verified again before every use.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ifaudit.io.canonical import sha256_bytes, sha256_file
from ifaudit.core.errors import InputError, VerificationError

HTTP_TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class PinnedFile:
    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Pin:
    name: str
    repository: str
    commit: str
    licence: str
    url_template: str
    package: str
    files: tuple[PinnedFile, ...]
    version: str = ""  # the version's name where a pin file holds several (InFoBench's two commits)
    mirrors: tuple[str, ...] = ()  # folders or URLs known to hold the pinned bytes, tried before the canonical URL

    def file_hashes(self) -> dict[str, str]:
        return {pinned.path: pinned.sha256 for pinned in self.files}


def load_pin(path: str | Path, version: str | None = None) -> Pin:
    """A pin file. One that holds several versions (`default` and a `[versions.NAME]` table each
    with its own `commit` and `files`) gives the named one, else its default. `mirrors` are
    relative to the pin file's folder; `{version}` and `{commit}` in them are filled in."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("pin file not found", path=path) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"malformed TOML: {exc}", path=path) from None
    try:
        chosen = raw
        if "versions" in raw:
            version = version or str(raw["default"])
            if version not in raw["versions"]:
                raise InputError(
                    f"no version {version!r}; known: {', '.join(sorted(raw['versions']))}", path=path, field="versions"
                )
            chosen = raw["versions"][version]
        elif version:
            raise InputError(f"the pin has one version; {version!r} cannot be chosen", path=path, field="versions")
        files = tuple(PinnedFile(str(f["path"]), int(f["size"]), str(f["sha256"]).lower()) for f in chosen["files"])
        commit = str(chosen["commit"])
        mirrors = tuple(_mirror(path.parent, str(m), version or "", commit) for m in raw.get("mirrors", ()))
        return Pin(
            name=str(raw["name"]),
            repository=str(raw["repository"]),
            commit=commit,
            licence=str(raw["licence"]),
            url_template=str(raw["url_template"]),
            package=str(raw["package"]),
            files=files,
            version=version or "",
            mirrors=mirrors,
        )
    except KeyError as exc:
        raise InputError("missing", path=path, field=str(exc.args[0])) from None


def _mirror(folder: Path, spec: str, version: str, commit: str) -> str:
    spec = spec.replace("{version}", version).replace("{commit}", commit)
    return spec if "://" in spec else str((folder / spec).resolve())


class SourceMiss(Exception):
    """A source does not have the file (as opposed to having other bytes)."""


class Source(Protocol):
    def describe(self) -> str: ...

    def read(self, pin: Pin, pinned: PinnedFile) -> bytes: ...


@dataclass(frozen=True)
class LocalFolder:
    """A folder holding the files at their pinned paths, or the package folder itself."""

    root: Path

    def describe(self) -> str:
        return f"folder {self.root}"

    def read(self, pin: Pin, pinned: PinnedFile) -> bytes:
        for candidate in (self.root / pinned.path, self.root / Path(pinned.path).name):
            if candidate.is_file():
                return candidate.read_bytes()
        raise SourceMiss(f"no {pinned.path} under {self.root}")


@dataclass(frozen=True)
class GitCheckout:
    """A clone of the upstream repository: the pinned commit's blob, else the working tree."""

    root: Path

    def describe(self) -> str:
        return f"git checkout {self.root}"

    def read(self, pin: Pin, pinned: PinnedFile) -> bytes:
        shown = subprocess.run(
            ["git", "-C", str(self.root), "show", f"{pin.commit}:{pinned.path}"],
            capture_output=True,
            check=False,
        )
        if shown.returncode == 0:
            return shown.stdout
        return LocalFolder(self.root).read(pin, pinned)


@dataclass(frozen=True)
class Archive:
    """A .tar(.gz) or .zip, such as GitHub's archive of the pinned commit."""

    path: Path

    def describe(self) -> str:
        return f"archive {self.path}"

    def read(self, pin: Pin, pinned: PinnedFile) -> bytes:
        names, reader = self._open()
        wanted = [n for n in names if n == pinned.path or n.endswith("/" + pinned.path)]
        if not wanted:
            base = Path(pinned.path).name
            wanted = [n for n in names if n.lstrip("./") == base]
        if not wanted:
            raise SourceMiss(f"no {pinned.path} in {self.path}")
        return reader(sorted(wanted, key=len)[0])

    def _open(self):
        import tarfile
        import zipfile

        if zipfile.is_zipfile(self.path):
            archive = zipfile.ZipFile(self.path)
            return archive.namelist(), archive.read
        tar = tarfile.open(self.path)
        members = {m.name: m for m in tar.getmembers() if m.isfile()}

        def read(name: str) -> bytes:
            extracted = tar.extractfile(members[name])
            assert extracted is not None
            return extracted.read()

        return list(members), read


@dataclass(frozen=True)
class Url:
    """An HTTP(S) mirror or the canonical host; `template` has {commit} and {path}."""

    template: str

    def describe(self) -> str:
        return f"URL template {self.template}"

    def read(self, pin: Pin, pinned: PinnedFile) -> bytes:
        return http_get(self.template.format(commit=pin.commit, path=pinned.path))


def http_get(url: str) -> bytes:
    """The body of a GET; any failure to get it is a SourceMiss saying why."""
    import urllib.error  # here, not at the top: most jobs never reach the network
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=HTTP_TIMEOUT_SECONDS) as answer:
            return answer.read()
    except urllib.error.HTTPError as exc:
        raise SourceMiss(f"HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise SourceMiss(str(getattr(exc, "reason", exc))) from None


def source_from_spec(spec: str) -> Source:
    """Turn a user's `--from` value (path or URL) into a source."""
    if "://" in spec:
        return Url(spec if "{path}" in spec else spec.rstrip("/") + "/{path}")
    path = Path(spec).expanduser()
    if path.is_dir():
        return GitCheckout(path) if (path / ".git").exists() else LocalFolder(path)
    if path.is_file():
        return Archive(path)
    raise InputError("grader source not found (expected a folder, git checkout, archive or URL)", path=spec)


def default_sources(
    pin: Pin, user_specs: list[str], *, offline: bool = False, env_var: str = "IFAUDIT_GRADER_SOURCE"
) -> list[Source]:
    """User-given sources first, then the environment variable's, then the pin's own mirrors
    (those present on this machine), then (unless offline) the canonical URL."""
    specs = list(user_specs)
    env = os.environ.get(env_var)
    if env:
        specs.extend(s for s in env.split(os.pathsep) if s)
    sources = [source_from_spec(spec) for spec in specs]
    sources += [source_from_spec(m) for m in pin.mirrors if "://" in m or Path(m).exists()]
    if not offline:
        sources.append(Url(pin.url_template))
    return sources


def fetch_verified(pin: Pin, pinned: PinnedFile, sources: list[Source]) -> bytes:
    """The first source's bytes that match the pin; an error listing every attempt otherwise."""
    attempts: list[str] = []
    for source in sources:
        try:
            data = source.read(pin, pinned)
        except SourceMiss as miss:
            attempts.append(f"{source.describe()}: missing ({miss})")
            continue
        actual = sha256_bytes(data)
        if actual == pinned.sha256 and len(data) == pinned.size:
            for attempt in attempts:
                print(f"ifaudit: note: {pinned.path}: skipped {attempt}", file=sys.stderr)
            return data
        attempts.append(
            f"{source.describe()}: sha256 mismatch, expected {pinned.sha256}, got {actual} ({len(data)} bytes, pinned {pinned.size})"
        )
    if not attempts:
        attempts.append("no source to try (offline, and no --from or IFAUDIT_GRADER_SOURCE given)")
    raise VerificationError(f"{pinned.path}: no source has the pinned bytes: " + "; ".join(attempts))


def verify_tree(pin: Pin, folder: Path) -> None:
    """Check every pinned file under `folder`, and that no other Python file sits beside them."""
    for pinned in pin.files:
        target = folder / pinned.path
        if not target.is_file():
            raise VerificationError(f"{target}: missing from the materialized pin (run `ifaudit vendor`)")
        actual = sha256_file(target)
        if actual != pinned.sha256:
            raise VerificationError(f"{target}: sha256 mismatch, expected {pinned.sha256}, got {actual}")
    expected = {folder / pinned.path for pinned in pin.files}
    for extra in sorted((folder / pin.package).rglob("*.py")):  # package "" : the whole folder
        if extra not in expected:
            raise VerificationError(f"{extra}: not part of the pin; remove it or re-run `ifaudit vendor`")


def materialize(pin: Pin, cache_root: Path, sources: list[Source]) -> Path:
    """Verified files of `pin` under cache_root/<commit>/; reuses a folder that verifies."""
    destination = cache_root / pin.commit
    if destination.exists():
        try:
            verify_tree(pin, destination)
            return destination
        except VerificationError as stale:
            print(f"ifaudit: note: re-materializing: {stale}", file=sys.stderr)
    cache_root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=cache_root))
    staging.chmod(0o755)  # mkdtemp makes it private; a container's non-root user must read it
    try:
        for pinned in pin.files:
            target = staging / pinned.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(fetch_verified(pin, pinned, sources))
        verify_tree(pin, staging)
        _replace_unless_valid(pin, staging, destination)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return destination


def _replace_unless_valid(pin: Pin, staging: Path, destination: Path) -> None:
    """Move the verified staging folder into place. Both grading passes may materialize the same
    pin at once: a folder another process put there and that verifies is kept (never deleted
    under a reader); only one that fails verification is moved aside, atomically, and replaced."""
    if destination.exists():
        try:
            verify_tree(pin, destination)
            return
        except VerificationError:
            stale = destination.with_name(f".stale-{destination.name}-{os.getpid()}")
            os.rename(destination, stale)
            shutil.rmtree(stale, ignore_errors=True)
    try:
        os.rename(staging, destination)
    except OSError:
        # Another process materialized the same pin meanwhile; use it if it verifies.
        verify_tree(pin, destination)
