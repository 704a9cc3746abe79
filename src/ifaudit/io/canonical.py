"""The one way files compared byte for byte are written: canonical JSON, atomically.

Canonical means: sorted keys, no insignificant white space, UTF-8 (not ASCII-escaped), LF line
ends, no NaN or infinity. A file is written to a temporary sibling and renamed into place, so a
reader never sees half a file and an interrupted write leaves the previous file intact.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from ifaudit.core.errors import IfauditError


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
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def atomic_write_bytes(path: str | Path, data: bytes, durable: bool = True) -> None:
    """Write `data` to `path` via a temporary file in the same folder and an atomic rename.

    The file gets the mode the user's umask gives a new file (not mkstemp's 0600). Any failure
    to write (disk full, read-only folder, the output is a folder) is one IfauditError naming the
    output, and leaves neither a temporary nor a partial file. `durable=False` skips the fsync: a
    killed process still leaves the old file or the new one, but an operating-system crash may
    leave an empty one (for many small files where that is detected on reading: store entries).
    """
    target = Path(path)
    tmp = target.parent / f".{target.name}.{secrets.token_hex(8)}.tmp"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        for stale in target.parent.glob(f".{target.name}.*.tmp"):  # left by a writer that was killed
            stale.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # 0o666 minus the umask
        with os.fdopen(fd, "wb") as handle:
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


def _remove(path: Path) -> None:
    with suppress(OSError):  # the folder is gone or read-only: then nothing was left in it either
        path.unlink(missing_ok=True)


def write_jsonl(path: str | Path, records: Iterable[Any]) -> str:
    """Write canonical JSONL atomically; returns the sha256 of the bytes written."""
    data = jsonl_bytes(records)
    atomic_write_bytes(path, data)
    return sha256_bytes(data)


def write_json(path: str | Path, obj: Any) -> str:
    data = pretty_json_bytes(obj)
    atomic_write_bytes(path, data)
    return sha256_bytes(data)
