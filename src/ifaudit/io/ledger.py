"""A content ledger: the sha256 of every file a DAG made or read, as it left them.

Snakemake decides what to redo by modification times, which a restore from backup, `cp -p`,
`rsync -t` or `tar x` sets to any value: an edited file with an older time looks unchanged. The
ledger lets content decide instead. It is written when a DAG succeeds; at the next start (and
whenever `ifaudit counted` asks) every file in it is compared with the bytes now on disk.

Hashing every file at every start would cost a no-op time linear in the bytes of all results, so
each entry keeps the file's stat key beside its digest: size, inode, and the modification and
change times in nanoseconds. A file whose stat key is unchanged has not been written since it was
hashed; any other is hashed again. The change time (ctime) is the kernel's, set to the current
time by every write, rename and `utime` call, and no user-level tool can set it back, so a
back-dated edit always changes the key and is hashed: the times only decide what need not be hashed
again, never that changed bytes are the same.

A result the DAG made is recorded as one that must stay (`kept`): Snakemake does not make a missing
file again when the files made from it are there (a run's grades.jsonl deleted by hand, its
summary kept), so its absence is a change like any other. A file that may come and go (a user's
own file, a store's entry, a fetched copy, a writer's temporary) is only compared while it is there.

The ledger file is named by the sha256 of its own bytes and refused when they differ.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ifaudit.io.canonical import atomic_write_bytes, dumps, sha256_bytes, sha256_file

LEDGER_STEM = "content-ledger"


@dataclass(frozen=True)
class Entry:
    sha256: str
    stat_key: tuple[int, int, int, int]  # size, inode, mtime_ns, ctime_ns
    kept: bool = False  # its absence is a change (see the module's docstring)


def stat_key(status: os.stat_result) -> tuple[int, int, int, int]:
    return (status.st_size, status.st_ino, status.st_mtime_ns, status.st_ctime_ns)


def _regular_status(path: str) -> os.stat_result | None:
    """The stat of a regular file (not following a link), else None: a link, a folder, a FIFO or
    a device is never opened, so nothing in the ledger can hang a start."""
    try:
        status = os.lstat(path)
    except OSError:
        return None
    return status if stat.S_ISREG(status.st_mode) else None


def entry(path: str, known: Entry | None = None, kept: bool = False) -> Entry | None:
    """The ledger entry of `path` now (None if it is not a regular file); `known`, the entry last
    recorded, is reused without reading the file when the stat key is the same."""
    status = _regular_status(path)
    if status is None:
        return None
    key = stat_key(status)
    if known is not None and known.stat_key == key:
        return Entry(known.sha256, key, kept)
    try:
        digest = sha256_file(path)
    except OSError:
        return None
    return Entry(digest, key, kept)


@dataclass(frozen=True)
class Change:
    """A file whose bytes now differ from those recorded (`now` None: no longer a regular file;
    `gone`: not there at all)."""

    path: str
    recorded: str
    now: str | None
    gone: bool = False


def changes(ledger: Mapping[str, Entry], root: Path = Path()) -> list[Change]:
    """Every file of the ledger (paths relative to `root`) whose bytes now differ from the
    recorded ones, in path order; a file that is gone is a change if it was to be kept."""
    found = []
    for path in sorted(ledger):
        known = ledger[path]
        if not os.path.lexists(root / path):
            if known.kept:
                found.append(Change(path, known.sha256, None, gone=True))
            continue
        current = entry(str(root / path), known)
        if current is None or current.sha256 != known.sha256:
            found.append(Change(path, known.sha256, None if current is None else current.sha256))
    return found


def _ledger_files(folder: Path) -> list[Path]:
    try:
        return sorted(folder.glob(f"{LEDGER_STEM}-*.json"))
    except OSError:
        return []


def read(folder: Path) -> dict[str, Entry] | None:
    """The ledger in `folder`: {} when there is none yet; None when it cannot be trusted (its bytes
    differ from the sha256 in its name, it is not the only one, or it does not parse), which the
    caller treats as every file changed."""
    found = _ledger_files(folder)
    if not found:
        return {}
    if len(found) > 1:
        return None
    path = found[0]
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if path.name != f"{LEDGER_STEM}-{sha256_bytes(data)}.json":
        return None
    try:
        document = json.loads(data)
        kept = set(document.get("kept", []))  # absent in ledgers written before `kept` was
        return {
            name: Entry(value[0], (value[1], value[2], value[3], value[4]), name in kept)
            for name, value in document["files"].items()
        }
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None


def write(folder: Path, paths: Iterable[str], known: Mapping[str, Entry], kept: Iterable[str] = ()) -> dict[str, Entry]:
    """Record `paths` (the regular files among them) in a new ledger in `folder`, replacing the
    old one; entries whose stat key is unchanged are taken from `known` without hashing. Those of
    `kept` are recorded as files whose absence is a change."""
    to_keep = set(kept)
    entries = {}
    for path in paths:
        found = entry(path, known.get(path), path in to_keep)
        if found is not None:
            entries[path] = found
    files = {path: [e.sha256, *e.stat_key] for path, e in sorted(entries.items())}
    document = {"files": files, "kept": sorted(path for path, e in entries.items() if e.kept)}
    data = (dumps(document) + "\n").encode()
    target = folder / f"{LEDGER_STEM}-{sha256_bytes(data)}.json"
    atomic_write_bytes(target, data)
    for old in _ledger_files(folder):
        if old != target:
            old.unlink(missing_ok=True)
    return entries


def walk_files(folders: Iterable[str], skip: frozenset[str] = frozenset()) -> list[str]:
    """The regular files under `folders` (relative paths as given), iteratively, not following
    links; a folder named in `skip` is not entered."""
    found: list[str] = []
    pending = [folder for folder in folders if folder not in skip]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as listing:
                items = list(listing)
        except OSError:
            continue
        for item in items:
            path = os.path.join(folder, item.name)
            if item.is_dir(follow_symlinks=False):
                if path not in skip:
                    pending.append(path)
            elif item.is_file(follow_symlinks=False):
                found.append(path)
    return sorted(found)
