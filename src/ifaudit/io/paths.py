"""Paths checked before any work: an input is a readable regular file, an output can be written.

A FIFO would block a reader forever, a device such as /dev/zero never ends, a folder or a
dangling or looping link cannot be read; each is one line naming the path, said at once rather
than after minutes of grading. Outputs are checked the same way before grading starts: an
output that is a folder, a parent that is a file, or a folder that cannot be written to would
otherwise only fail when the finished results are written.

The CLI marks its file arguments with the types below (`type=InputFile` / `type=OutputFile`)
and checks every marked argument before the command runs.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import PosixPath
from typing import BinaryIO

from ifaudit.core.errors import InputError


class InputFile(PosixPath):
    """A command-line path the command reads: a readable regular file."""


class OutputFile(PosixPath):
    """A command-line path the command writes: its folder exists or can be made, and is writable."""


_KINDS = (
    (stat.S_ISDIR, "is a folder, not a file"),
    (stat.S_ISFIFO, "is a FIFO (named pipe), not a file"),
    (stat.S_ISCHR, "is a character device, not a file"),
    (stat.S_ISBLK, "is a block device, not a file"),
    (stat.S_ISSOCK, "is a socket, not a file"),
)


def _not_regular(mode: int) -> str | None:
    """Why a file of this mode cannot be read as data, or None for a regular file."""
    for test, why in _KINDS:
        if test(mode):
            return why
    return None if stat.S_ISREG(mode) else "is not a regular file"


def _stat_error(path: os.PathLike[str] | str, error: OSError) -> InputError:
    if error.errno == errno.ELOOP:
        return InputError("is a symbolic link loop", path=path)
    if error.errno == errno.ENOENT and os.path.islink(path):
        return InputError(f"is a dangling symbolic link (to {os.readlink(path)})", path=path)
    if error.errno == errno.ENOENT:
        return InputError("file not found", path=path)
    if error.errno == errno.ENOTDIR:
        return InputError("file not found (a folder on its path is a file)", path=path)
    if error.errno == errno.EACCES:
        return InputError("cannot be read: permission denied", path=path)
    return InputError(f"cannot be read: {error.strerror}", path=path)


def open_input(path: os.PathLike[str] | str) -> BinaryIO:
    """Open a regular file for reading, refusing anything else without blocking on it.

    O_NONBLOCK makes opening a FIFO return at once (a plain open waits for a writer); it has no
    effect on a regular file, and the mode is checked on the opened file, so nothing can swap the
    path between the check and the read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise _stat_error(path, error) from None
    try:
        why = _not_regular(os.fstat(fd).st_mode)
        if why:
            raise InputError(why, path=path)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def check_input(path: os.PathLike[str] | str) -> None:
    """Refuse an input that is not a readable regular file, reading none of it."""
    open_input(path).close()


def check_output(path: os.PathLike[str] | str) -> None:
    """Refuse an output that cannot be written: an existing folder or special file, a parent that
    is not a folder, or a folder (the nearest existing one, since writers create missing folders)
    where this process cannot create a file. The probe file is removed at once. The words are
    those of the writer (ifaudit.io.canonical), which reports what still goes wrong while writing."""
    path = os.fspath(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as error:
        if error.errno != errno.ENOTDIR:  # a file on the path is named below
            raise _cannot_write(path, error.strerror) from None
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise _cannot_write(path, os.strerror(errno.EISDIR))
    if mode is not None and not stat.S_ISREG(mode):
        raise _cannot_write(path, f"it {_not_regular(mode)}")
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(folder):
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        raise _cannot_write(path, f"{os.strerror(errno.ENOTDIR)} ({folder} is not a folder)")
    try:
        fd, probe = tempfile.mkstemp(prefix=".ifaudit-probe-", dir=folder)
    except OSError as error:
        raise _cannot_write(path, f"{error.strerror} (in {folder})") from None
    os.close(fd)
    os.unlink(probe)


def _cannot_write(path: str, reason: str | None) -> InputError:
    return InputError(f"cannot write: {reason}", path=path)


def check_paths(values: Iterable[object]) -> None:
    """Check every InputFile, then every OutputFile, among `values` (lists looked into)."""
    flat = [item for value in values for item in (value if isinstance(value, list) else [value])]
    for item in flat:
        if isinstance(item, InputFile):
            check_input(item)
    for item in flat:
        if isinstance(item, OutputFile):
            check_output(item)
