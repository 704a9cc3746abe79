"""The one way files compared byte for byte are written: canonical JSON, atomically.

Canonical means: sorted keys, no insignificant white space, UTF-8 (not ASCII-escaped), LF line
ends, no NaN or infinity. A file is written to a temporary sibling and renamed into place, so a
reader never sees half a file and an interrupted write leaves the previous file intact.

Concurrent writers of one target (two jobs sharing a store or resources/) both succeed: each
holds an exclusive flock on its temporary for as long as it writes it, and a writer removes a
sibling temporary only when it can take that lock without waiting, i.e. when the process that
made it is gone (the kernel releases a killed process's locks). No age is guessed.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path
from typing import Any, BinaryIO

from ifaudit.core.errors import IfauditError, InputError


# The files written so far inside `all_or_nothing` (None outside it).
_WRITTEN: ContextVar[list[Path] | None] = ContextVar("written", default=None)


def dumps(obj: Any) -> str:
    """One canonical JSON text (no trailing newline)."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def jsonl_bytes(records: Iterable[Any]) -> bytes:
    return "".join(dumps(record) + "\n" for record in records).encode("utf-8")


def pretty_json_bytes(obj: Any) -> bytes:
    """Canonical but indented JSON for files people read (summaries, manifests)."""
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, indent=2, allow_nan=False)
    return (text + "\n").encode("utf-8")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path) -> str:
    with open(path, "rb") as handle:
        return sha256_and_size(handle)[0]


def sha256_and_size(handle: BinaryIO) -> tuple[str, int]:
    """The sha256 and length of what `handle` reads from where it is to its end, 1 MiB at a time
    (the caller opens it: `io.paths.open_input` where a FIFO or a device must be refused)."""
    digest, size = hashlib.sha256(), 0
    for block in iter(lambda: handle.read(1 << 20), b""):
        digest.update(block)
        size += len(block)
    return digest.hexdigest(), size


# flock is not offered everywhere (Lustre mounted without `flock`, some FUSE file systems): there
# no lock can be taken, so no temporary is ever proven stale and none is removed.
_NO_FLOCK = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL})


def try_flock(fd: int, blocking: bool) -> bool:
    """An exclusive flock on `fd`: True once held; False if another holder has it (non-blocking)
    or the file system offers no flock."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN) or error.errno in _NO_FLOCK:
            return False
        raise
    return True


def same_file(fd: int, path: Path) -> bool:
    """Whether `path` still names the file open as `fd` (not removed, not replaced)."""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def lock_named(fd: int, path: Path) -> bool | None:
    """Wait for an exclusive flock on `fd`, opened as `path`; then whether `path` still names it
    (False: another process removed or replaced it meanwhile, so try afresh), or None where the
    file system offers no flock."""
    if not try_flock(fd, blocking=True):
        return None
    return same_file(fd, path)


def _remove_stale_temporaries(target: Path) -> None:
    """Remove the temporaries of `target`'s writers that were killed: those whose lock is free."""
    for stale in target.parent.glob(f".{target.name}.*.tmp"):
        try:
            fd = os.open(stale, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:  # finished and renamed meanwhile, or not ours to read: leave it
            continue
        try:
            if try_flock(fd, blocking=False) and same_file(fd, stale):
                stale.unlink(missing_ok=True)
        finally:
            os.close(fd)


def _locked_temporary(target: Path) -> tuple[Path, int]:
    """A new temporary sibling of `target`, open for writing and flock'd by this process.

    Between creating the file and locking it another writer may find it unlocked and remove it
    as stale; then the path no longer names the locked file and a fresh name is tried. Once
    locked and still named, no cleaner can take it away."""
    while True:
        tmp = target.parent / f".{target.name}.{os.urandom(8).hex()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # 0o666 minus the umask
        try:
            if lock_named(fd, tmp) is not False:  # held, or no flock here: write unlocked
                return tmp, fd
        except BaseException:
            _remove(tmp)
            os.close(fd)
            raise
        os.close(fd)


def atomic_write_bytes(path: str | Path, data: bytes, durable: bool = True) -> None:
    """Write `data` to `path` via a temporary file in the same folder and an atomic rename.

    The file gets the mode the user's umask gives a new file (not mkstemp's 0600). Any failure
    to write (disk full, read-only folder, the output is a folder) is one IfauditError naming the
    output, and leaves neither a temporary nor a partial file. `durable=False` skips the fsync: a
    killed process still leaves the old file or the new one, but an operating-system crash may
    leave an empty one (for many small files where that is detected on reading: store entries).
    Writers racing on one target all succeed; the target ends as one of their contents, whole.
    """
    target = Path(path)
    tmp: Path | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_temporaries(target)
        tmp, fd = _locked_temporary(target)
        with os.fdopen(fd, "wb") as handle:  # closing it releases the lock, after the rename
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        if (written := _WRITTEN.get()) is not None:
            written.append(target)
    except OSError as error:
        _remove(tmp)
        raise IfauditError(f"{target}: cannot write: {error.strerror or error}") from None
    except BaseException:
        _remove(tmp)
        raise


@contextmanager
def all_or_nothing() -> Iterator[None]:
    """The files a command writes together: if any write (or anything else) in the block fails,
    those already written are removed, so no partial set of outputs is left that looks valid."""
    written: list[Path] = []
    token = _WRITTEN.set(written)
    try:
        yield
    except BaseException:
        for path in written:
            _remove(path)
        raise
    finally:
        _WRITTEN.reset(token)


def _remove(path: Path | None) -> None:
    if path is None:
        return
    with suppress(OSError):  # the folder is gone or read-only: then nothing was left in it either
        path.unlink(missing_ok=True)


def staged_json(folder: str | Path, stem: str, obj: Any) -> tuple[Path, str]:
    """`obj` as canonical JSON in `folder`, named by its sha256: (its path, the sha256)."""
    return staged_bytes(folder, stem, (dumps(obj) + "\n").encode("utf-8"))


def staged_bytes(folder: str | Path, stem: str, data: bytes) -> tuple[Path, str]:
    """JSON bytes in `folder`, named by their sha256: (the path, the sha256). What a job needs that
    is too long for its command line (Linux caps one argument at 128 KiB, and a shell command is
    one) goes to it this way; the command names the file (and the sha256), so a changed value is
    a changed command and a changed file is refused. A file already there is written again unless
    it holds these very bytes: what was staged is never trusted when read back."""
    digest = sha256_bytes(data)
    path = Path(folder) / f"{stem}-{digest}.json"
    if not holds(path, data):
        atomic_write_bytes(path, data)
    return path, digest


def holds(path: Path, data: bytes) -> bool:
    """Whether `path` is a regular file holding exactly `data` (a staged file read back)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)  # a FIFO there never hangs
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        status = os.fstat(fd)
        return stat.S_ISREG(status.st_mode) and status.st_size == len(data) and handle.read(len(data) + 1) == data


STAGED_CAP = 256 * 1024 * 1024  # a plan of 1,000 runs and all their pairs is ≈ 60 MB


def read_staged_json(path: str | Path, sha256: str) -> Any:
    """What `staged_json` wrote, refused unless its bytes have the sha256 the command names."""
    with open(path, "rb") as handle:
        data = handle.read(STAGED_CAP + 1)
    if len(data) > STAGED_CAP:
        raise InputError(f"larger than the cap of {STAGED_CAP} bytes", path=path)
    if (found := sha256_bytes(data)) != sha256:
        raise InputError(f"sha256 {found}, not the {sha256} the command names: changed since it was planned", path=path)
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"not JSON ({error})", path=path) from None


def write_jsonl(path: str | Path, records: Iterable[Any]) -> str:
    """Write canonical JSONL atomically; returns the sha256 of the bytes written."""
    data = jsonl_bytes(records)
    atomic_write_bytes(path, data)
    return sha256_bytes(data)


def write_json(path: str | Path, obj: Any) -> str:
    data = pretty_json_bytes(obj)
    atomic_write_bytes(path, data)
    return sha256_bytes(data)
