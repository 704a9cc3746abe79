"""Pinned external files: where they may come from, and proof that the bytes are the pinned ones.

A pin lists files by path, size and sha256. Sources (ifaudit.io.remote.sources) are tried in order for each
file (the user's folders, git checkouts, archives or URLs, the pin's own mirrors, then the
canonical URL); the first source whose bytes match the pin wins, and a source that has the file
with other bytes is reported, never used. The files are assembled in a temporary folder and
renamed into place as a whole, so a reader never sees a partial set, and a materialized folder is
verified again before every use.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ifaudit.io import variables
from ifaudit.io.canonical import sha256_bytes, sha256_file
from ifaudit.core.errors import IfauditError, InputError, VerificationError
from ifaudit.io.confine import inside, name_problem
from ifaudit.io.paths import open_input
from ifaudit.io.remote.sources import Holds, NoMatch, Places, Source, Wanted, first_match, parse_source


MAX_PIN_FILE_BYTES = 1024 * 1024  # a pin file; the largest today, IFBench's two versions, is 3 KB
MAX_PINNED_BYTES = 64 * 1024 * 1024  # a pinned source file; the largest pinned today is 79 KB


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


def move_aside(destination: Path) -> None:
    """Take a materialized copy that failed verification out of the way atomically (renamed, then
    removed), so a reader never sees it half-deleted and the verified copy can be renamed in."""
    stale = destination.with_name(f".stale-{destination.name}-{os.getpid()}")
    os.rename(destination, stale)
    shutil.rmtree(stale, ignore_errors=True)


def load_pin(path: str | Path, version: str | None = None) -> Pin:
    """A pin file. One that holds several versions (`default` and a `[versions.NAME]` table each
    with its own `commit` and `files`) gives the named one, else its default. `mirrors` are
    relative to the pin file's folder; `{version}` and `{commit}` in them are filled in. A version
    may name its own `package` (IFBench's layout changed between its pinned commits)."""
    path = Path(path)
    try:
        with open_input(path) as handle:  # a folder, a FIFO or a device (IFAUDIT_PIN names any) is refused
            data = handle.read(MAX_PIN_FILE_BYTES + 1)
        if len(data) > MAX_PIN_FILE_BYTES:  # a pin is a few KB: a link to a huge file is not read whole
            raise InputError(f"not a pin file: more than {MAX_PIN_FILE_BYTES} bytes", path=path)
        raw = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(f"not a pin file: not UTF-8 text (at byte {exc.start + 1})", path=path) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"malformed TOML: {exc}", path=path) from None
    except RecursionError:  # tomllib recurses into nested arrays and tables: 10,000 deep
        raise InputError("not a pin file: nested too deep for TOML to read", path=path) from None
    try:
        chosen = raw
        if "versions" in raw:
            version = version or _text(raw, "default", path)
            if not isinstance(raw["versions"], dict):
                raise InputError("expected a table of versions", path=path, field="versions")
            if version not in raw["versions"]:
                raise InputError(
                    f"no version {version!r}; known: {', '.join(sorted(raw['versions']))}", path=path, field="versions"
                )
            chosen = raw["versions"][version]
        elif version:
            raise InputError(f"the pin has one version; {version!r} cannot be chosen", path=path, field="versions")
        files = _files(chosen["files"], path)
        commit = _plain(chosen["commit"], "commit", path)
        listed = raw.get("mirrors", [])
        if not isinstance(listed, list) or not all(isinstance(m, str) for m in listed):
            raise InputError("expected a list of folders or URLs", path=path, field="mirrors")
        mirrors = tuple(_mirror(path.parent, m, version or "", commit) for m in listed)
        return Pin(
            name=_text(raw, "name", path),
            repository=_text(raw, "repository", path),
            commit=commit,
            licence=_text(raw, "licence", path),
            url_template=_text(raw, "url_template", path),
            package=_package(chosen.get("package", raw["package"]), path),
            files=files,
            version=_plain(version, "versions", path) if version else "",
            mirrors=mirrors,
        )
    except KeyError as exc:
        raise InputError("missing", path=path, field=str(exc.args[0])) from None
    except (TypeError, ValueError, AttributeError) as exc:  # a table where a list is wanted, a size "big"
        raise InputError(f"not a pin file: {exc}", path=path) from None


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _text(table: dict[str, object], field: str, pin: Path) -> str:
    """A field the pin gives as a string (a number or a table there is refused, not read as its repr)."""
    value = table[field]
    if not isinstance(value, str):
        raise InputError(f"expected a string, got {type(value).__name__} {value!r}"[:200], path=pin, field=field)
    return value


def _plain(value: object, field: str, pin: Path) -> str:
    """A name the pin gives that becomes one folder's name (the commit, a version): a plain name,
    never a path leading elsewhere (`../x` would place the materialized files outside vendor/)."""
    text = _text({field: value}, field, pin)
    if "/" in text or name_problem(text) is not None:
        raise InputError(f"{text!r} is not a plain name (no `/`, `..` or control character)", path=pin, field=field)
    return text


def _package(value: object, pin: Path) -> str:
    """The package's folder below the materialized pin: "" (the whole folder) or a path inside it."""
    text = _text({"package": value}, "package", pin)
    if text and (why := name_problem(text)) is not None:
        raise InputError(f"path {text!r} {why}; it must stay inside the pin's folder", path=pin, field="package")
    return text


def _files(entries: object, pin: Path) -> tuple[PinnedFile, ...]:
    """The pinned files, each a path that stays inside the materialized folder (confine.name_problem:
    `../../x` would be written outside it), given once, with a size in bytes and a sha256."""
    if not isinstance(entries, list) or not entries:
        raise InputError("expected a non-empty list of [[files]] tables", path=pin, field="files")
    files: dict[str, PinnedFile] = {}
    for index, entry in enumerate(entries):
        where = f"files[{index}]"
        if not isinstance(entry, dict):
            raise InputError("expected a table with path, size and sha256", path=pin, field=where)
        name, size, digest = entry.get("path"), entry.get("size"), str(entry.get("sha256", "")).lower()
        if not isinstance(name, str) or (why := name_problem(name)) is not None:
            why = "is not a string" if not isinstance(name, str) else why
            raise InputError(
                f"path {name!r} {why}; it must stay inside the pin's folder", path=pin, field=f"{where}.path"
            )
        if name in files:
            raise InputError(f"path {name!r} is pinned twice", path=pin, field=f"{where}.path")
        if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= MAX_PINNED_BYTES:
            raise InputError(
                f"expected a number of bytes from 0 to {MAX_PINNED_BYTES}, got {size!r}",
                path=pin,
                field=f"{where}.size",
            )
        if not _SHA256.fullmatch(digest):
            raise InputError(
                f"expected 64 hexadecimal digits, got {entry.get('sha256')!r}", path=pin, field=f"{where}.sha256"
            )
        files[name] = PinnedFile(name, size, digest)
    return tuple(files.values())


def _mirror(folder: Path, spec: str, version: str, commit: str) -> str:
    spec = spec.replace("{version}", version).replace("{commit}", commit)
    return spec if "://" in spec else str((folder / spec).resolve())


def default_sources(
    pin: Pin, user_specs: list[str], *, offline: bool = False, variable: variables.Variable = variables.GRADER_SOURCE
) -> list[Source]:
    """In the one order of ifaudit.io.remote.sources: the user's sources (given, then the environment
    variable's), then the pin's own mirrors (those present on this machine), then (unless
    offline) the canonical URL."""
    own = [*user_specs, *variables.places(variable)]
    places = Places(
        own=tuple(own),
        mirrors=tuple(m for m in pin.mirrors if "://" in m or Path(m).exists()),
        canonical=(pin.url_template,),
    )
    return [parse_source(spec, Holds.TREE) for spec in places.in_order(offline)]


def fetch_verified(pin: Pin, pinned: PinnedFile, sources: list[Source]) -> bytes:
    """The first source's bytes that match the pin; an error listing every attempt otherwise."""

    def complaint(data: bytes) -> str | None:
        actual = sha256_bytes(data)
        if actual == pinned.sha256 and len(data) == pinned.size:
            return None
        return f"sha256 mismatch, expected {pinned.sha256}, got {actual} ({len(data)} bytes, pinned {pinned.size})"

    try:
        return first_match(pinned.path, sources, Wanted(pinned.path, pin.commit, pinned.size), complaint)[0]
    except NoMatch as none:
        attempts = none.attempts or ["no source to try (offline, and no --from or IFAUDIT_GRADER_SOURCE given)"]
        raise VerificationError(f"{pinned.path}: no source has the pinned bytes: " + "; ".join(attempts)) from None


def write_staged(target: Path, data: bytes) -> None:
    """One file of a staging folder; a failure to write it (a full disk, a file-size limit,
    `ulimit -f`) is one line naming it, and the caller removes the staging folder as a whole."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    except OSError as error:
        raise IfauditError(f"{target}: cannot write: {error.strerror or error}") from None


def verify_tree(pin: Pin, folder: Path) -> None:
    """Check every pinned file under `folder` (its size before any byte is read, then its sha256),
    and that no other Python file sits beside them."""
    for pinned in pin.files:
        target = folder / pinned.path
        if not target.is_file():
            raise VerificationError(f"{target}: missing from the materialized pin (run `ifaudit vendor`)")
        if (size := target.stat().st_size) != pinned.size:
            raise VerificationError(f"{target}: {size} bytes, pinned {pinned.size}")
        actual = sha256_file(target)
        if actual != pinned.sha256:
            raise VerificationError(f"{target}: sha256 mismatch, expected {pinned.sha256}, got {actual}")
    expected = {folder / pinned.path for pinned in pin.files}
    for extra in sorted((folder / pin.package).rglob("*.py")):  # package "" : the whole folder
        if extra not in expected:
            raise VerificationError(f"{extra}: not part of the pin; remove it or re-run `ifaudit vendor`")


# What this process has materialized and verified, by pin and folder, with the folder's listing
# (names, sizes, modification times) when verified: a pin's files are hashed once per process,
# whichever step asks first (the grader's record, its loading), and again only if the folder changed.
_MATERIALIZED: dict[tuple[Pin, Path], tuple[Path, tuple[tuple[str, int, int], ...]]] = {}


def _listing(folder: Path) -> tuple[tuple[str, int, int], ...]:
    found = []
    for path in sorted(folder.rglob("*")):
        stat = path.lstat()
        found.append((path.relative_to(folder).as_posix(), stat.st_size, stat.st_mtime_ns))
    return tuple(found)


def materialize(pin: Pin, cache_root: Path, sources: list[Source]) -> Path:
    """Verified files of `pin` under cache_root/<commit>/; reuses a folder that verifies."""
    key = (pin, cache_root.resolve())
    known = _MATERIALIZED.get(key)
    if known is not None and known[0].is_dir() and _listing(known[0]) == known[1]:
        return known[0]
    folder = _materialize(pin, cache_root, sources)
    _MATERIALIZED[key] = (folder, _listing(folder))
    return folder


def _materialize(pin: Pin, cache_root: Path, sources: list[Source]) -> Path:
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
            data = fetch_verified(pin, pinned, sources)
            write_staged(inside(staging, pinned.path, f"{pin.name}'s pin", VerificationError), data)
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
            move_aside(destination)
    try:
        os.rename(staging, destination)
    except OSError:
        # Another process materialized the same pin meanwhile; use it if it verifies.
        verify_tree(pin, destination)
