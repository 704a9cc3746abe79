"""A content ledger: the sha256 of every file a DAG made or read, as its jobs read them.

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

What a DAG's jobs read is recorded, not what is on disk when it ends: each job hashes the inputs it
reads and leaves their sha256s for the ledger (below); a file that changed after a job read it is
recorded with the bytes read, so the next start finds it changed.

The ledger file is named by the sha256 of its own bytes and refused when they differ.
"""

from __future__ import annotations

import atexit
import hashlib
import io
import json
import os
import stat
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, cast

from ifaudit.core.errors import IfauditError
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
    return compare(ledger, root)[0]


def compare(ledger: Mapping[str, Entry], root: Path = Path()) -> tuple[list[Change], dict[str, Entry]]:
    """`changes`, and the entries now of the files whose bytes are the recorded ones (a file
    touched, or copied back with `cp`, keeps its digest under its new stat key: recorded again, it
    is not hashed at the next start)."""
    found, same = [], {}
    for path in sorted(ledger):
        known = ledger[path]
        if not os.path.lexists(root / path):
            if known.kept:
                found.append(Change(path, known.sha256, None, gone=True))
            continue
        current = entry(str(root / path), known)
        if current is None or current.sha256 != known.sha256:
            found.append(Change(path, known.sha256, None if current is None else current.sha256))
        else:
            same[path] = current
    return found, same


# The stat key of an entry whose digest is not that of the bytes on disk when it was recorded
# (what the DAG's jobs read differs from what is there now): no file has it, so the file is
# hashed again at the next start and compared with what was read.
UNSEEN = (-1, -1, -1, -1)
# The digest recorded for a file the DAG's jobs read with different bytes (it changed while they
# ran): no sha256 is this, so the file is a change at the next start whatever its bytes.
READ_DIFFERENTLY = "read-differently"


def restore_times(recorded: Mapping[str, Entry], same: Mapping[str, Entry]) -> list[str]:
    """Give each file whose bytes are the recorded ones (`same`: their entries now) but whose
    modification time is newer than when it was recorded (a `touch`, a copy without `-p`) that
    time back: Snakemake reruns every job after an input newer than its outputs whatever its bytes
    (the pinned 9.27.1 reads `--rerun-triggers` but never drops the modification time; only inputs
    under its checksum size, 1 MB, are compared by content). The files whose time was given back;
    one that cannot be (a read-only file) keeps its time, and what reads it runs again."""
    restored = []
    for path, now in same.items():
        then = recorded[path].stat_key
        if then == UNSEEN or now.stat_key[2] <= then[2]:
            continue
        try:
            os.utime(path, ns=(os.lstat(path).st_atime_ns, then[2]), follow_symlinks=False)
        except (OSError, NotImplementedError):
            continue
        restored.append(path)
    return restored


def as_read(now: Entry, read: set[str]) -> Entry:
    """The entry of a file as the DAG's jobs read it (`read`: the sha256 of the bytes each read):
    `now` if they read the bytes it holds; else the bytes they read (or READ_DIFFERENTLY), under a
    stat key no file has."""
    if read <= {now.sha256}:
        return now
    return Entry(next(iter(read)) if len(read) == 1 else READ_DIFFERENTLY, UNSEEN, now.kept)


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


def write(
    folder: Path,
    paths: Iterable[str],
    known: Mapping[str, Entry],
    kept: Iterable[str] = (),
    read: Mapping[str, set[str]] | None = None,
) -> dict[str, Entry]:
    """Record `paths` (the regular files among them) in a new ledger in `folder`, replacing the
    old one; entries whose stat key is unchanged are taken from `known` without hashing. Those of
    `kept` are recorded as files whose absence is a change. `read` (by absolute path, the sha256
    of the bytes the DAG's jobs read of it) records a file as they read it (`as_read`)."""
    read = read or {}
    to_keep = set(kept)
    entries = {}
    for path in paths:
        found = entry(path, known.get(path), path in to_keep)
        if found is not None:
            entries[path] = as_read(found, read.get(os.path.abspath(path), set()))
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


# --- what a DAG's jobs read ----------------------------------------------------------------------
#
# What is on disk when a DAG ends need not be what its jobs read: a responses file emptied while
# its run was graded (its modification time kept) would be recorded with the new bytes beside the
# grades of the old ones. So a job the workflow starts (it names a folder in IFAUDIT_READS) hashes
# every input it opens through ifaudit.io.paths.open_input as it reads it, and leaves at its exit
# one record of the sha256 of each; the ledger takes those (`as_read`). Outside a DAG nothing is
# hashed.

READS_STEM = "read-"
_read: dict[str, set[str]] = {}


def _reads_folder() -> Path | None:
    from ifaudit.io import variables  # it imports paths, which imports this module

    folder = variables.text(variables.READS)
    return Path(folder) if folder else None


def watched(fd: int, name: str) -> BinaryIO:
    """A reader of the open regular file `fd` (named `name`) that, in a DAG's job, notes the
    sha256 of what it read when closed."""
    if _reads_folder() is None:
        return os.fdopen(fd, "rb")
    reader = io.BufferedReader(_HashingReader(fd, name))
    return cast(BinaryIO, reader)


class _HashingReader(io.RawIOBase):
    """A file read through this is hashed as it is read, in order; what was skipped or left unread
    is read at close from where the hashing stopped (a reader that seeks, a zip's, or one that
    stopped early), so the digest is of the whole file as the reading left it."""

    def __init__(self, fd: int, name: str) -> None:
        super().__init__()
        self._fd, self.name = fd, name
        self._digest = hashlib.sha256()
        self._hashed = self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def readinto(self, buffer: Any) -> int:
        count = os.readv(self._fd, [buffer])
        if self._position == self._hashed:
            self._digest.update(memoryview(buffer)[:count])
            self._hashed += count
        self._position += count
        return count

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        self._position = os.lseek(self._fd, offset, whence)
        return self._position

    def tell(self) -> int:
        return self._position

    def close(self) -> None:
        if self.closed:
            return
        try:
            while chunk := os.pread(self._fd, 1 << 20, self._hashed):
                self._digest.update(chunk)
                self._hashed += len(chunk)
            _note(self.name, self._digest.hexdigest())
        finally:
            os.close(self._fd)
            super().close()


def _note(name: str, digest: str) -> None:
    if not _read:
        atexit.register(_leave_reads)
    _read.setdefault(os.path.abspath(name), set()).add(digest)


def _leave_reads() -> None:
    """This job's record of what it read, one file of its own in the DAG's folder. One that
    cannot be written (disk full, the folder unwritable) is said in one line at the job's exit,
    not a traceback: the DAG's end then records those files' bytes as they are on disk."""
    folder = _reads_folder()
    if folder is None or not _read:
        return
    document = {"read": {path: sorted(digests) for path, digests in sorted(_read.items())}}
    try:
        atomic_write_bytes(
            folder / f"{READS_STEM}{os.getpid()}-{os.urandom(8).hex()}.json", (dumps(document) + "\n").encode()
        )
    except IfauditError as error:  # atomic_write_bytes's one error for every OSError
        print(f"{error} (what this job read is not recorded)", file=sys.stderr)


def taken_reads(folder: Path) -> dict[str, set[str]]:
    """Every job's record in `folder` merged (by absolute path, the digests read), the records
    removed: what the DAG that is ending read. A record that does not parse was half-written by a
    job that was killed: its file's bytes are then not known to be what was read."""
    merged: dict[str, set[str]] = {}
    for record in sorted(folder.glob(f"{READS_STEM}*.json")) if folder.is_dir() else []:
        try:
            document = json.loads(record.read_bytes())
            for path, digests in document["read"].items():
                merged.setdefault(path, set()).update(str(d) for d in digests)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass
        record.unlink(missing_ok=True)
    return merged


def forget_reads(folder: Path) -> None:
    """At a DAG's start: records a killed DAG's jobs left are not of this DAG."""
    taken_reads(folder)
