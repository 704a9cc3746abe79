"""Paths checked before any work: an input is a readable regular file, an output can be written.

A FIFO would block a reader forever, a device such as /dev/zero never ends, a folder or a
dangling or looping link cannot be read; each is one line naming the path, said at once rather
than after minutes of grading. Outputs are checked the same way before grading starts: an
output that is a folder, a parent that is a file, or a folder that cannot be written to would
otherwise only fail when the finished results are written.

The CLI marks its path arguments with the types below (`type=InputFile`, `type=OutputFile`,
`type=InputFolder`, `type=OutputFolder`, `type=InputFileOrFolder`) and checks every marked
argument before the command runs. Every check opens the path with O_NONBLOCK and reads the
mode of what it opened (`_open_checked`), so none can block, whatever the path names.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import PosixPath
from typing import BinaryIO

from ifaudit.core.errors import InputError
from ifaudit.io import ledger


class CommandLinePath(PosixPath):
    """A path given on the command line, which remembers whether it was given as `""`: pathlib
    reads that as `.`, so `verify-bundle ""` would verify the working folder (check_paths refuses it)."""

    given_empty: bool

    def __new__(cls, *given: str) -> CommandLinePath:
        self = super().__new__(cls, *given)
        self.given_empty = given == ("",)
        return self


class InputFile(CommandLinePath):
    """A command-line path the command reads: a readable regular file."""


class OutputFile(CommandLinePath):
    """A command-line path the command writes: its folder exists or can be made, and is writable."""


class InputFolder(CommandLinePath):
    """A command-line path the command reads as a folder: an existing, readable folder."""


class OutputFolder(CommandLinePath):
    """A command-line folder the command writes into (and may read back): a folder, or nothing
    yet where a folder can be made."""


class InputFileOrFolder(CommandLinePath):
    """A command-line path the command reads as a file or as a folder (a harness's log)."""


_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISREG, "a file"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_FILE = (stat.S_ISREG,)
_FOLDER = (stat.S_ISDIR,)


def _kind(mode: int) -> str:
    return next((kind for test, kind in _KINDS if test(mode)), "neither a file nor a folder")


def not_regular(mode: int) -> str | None:
    """Why a file of this mode cannot be read as data, or None for a regular file."""
    return None if stat.S_ISREG(mode) else f"is {_kind(mode)}, not a file"


def _stat_error(path: os.PathLike[str] | str, error: OSError, what: str = "file") -> InputError:
    if error.errno == errno.ELOOP:
        return InputError("is a symbolic link loop", path=path)
    if error.errno == errno.ENOENT and os.path.islink(path):
        return InputError(f"is a dangling symbolic link (to {os.readlink(path)})", path=path)
    if error.errno == errno.ENOENT:
        return InputError(f"{what} not found", path=path)
    if error.errno == errno.ENOTDIR:
        return InputError(f"{what} not found (a folder on its path is a file)", path=path)
    if error.errno == errno.EACCES:
        return InputError("cannot be read: permission denied", path=path)
    return InputError(f"cannot be read: {error.strerror}", path=path)


def _open_checked(path: os.PathLike[str] | str, accepted: tuple[Callable[[int], bool], ...], what: str) -> int:
    """A descriptor of `path` opened for reading, if what it names passes one of `accepted`
    (mode tests); else one line saying what it is instead of `what`.

    O_NONBLOCK makes opening a FIFO return at once (a plain open waits for a writer); it has no
    effect on a regular file or a folder, and the mode is checked on the opened file, so nothing
    can swap the path between the check and the read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise _stat_error(path, error, what) from None
    mode = os.fstat(fd).st_mode
    if not any(test(mode) for test in accepted):
        os.close(fd)
        raise InputError(f"is {_kind(mode)}, not a {what}", path=path)
    return fd


def open_input(path: os.PathLike[str] | str) -> BinaryIO:
    """Open a regular file for reading, refusing anything else without blocking on it."""
    fd = _open_checked(path, _FILE, "file")
    try:
        os.set_blocking(fd, True)
        return ledger.watched(fd, os.fspath(path))  # in a DAG's job, what it read is noted for the ledger
    except BaseException:
        os.close(fd)
        raise


def check_input(path: os.PathLike[str] | str) -> None:
    """Refuse an input that is not a readable regular file, reading none of it."""
    os.close(_open_checked(path, _FILE, "file"))


def check_input_folder(path: os.PathLike[str] | str) -> None:
    """Refuse an input folder that is not a readable folder."""
    os.close(_open_checked(path, _FOLDER, "folder"))


def check_input_file_or_folder(path: os.PathLike[str] | str) -> None:
    """Refuse an input that is neither a readable regular file nor a readable folder."""
    os.close(_open_checked(path, _FILE + _FOLDER, "file or folder"))


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
        raise _cannot_write(path, f"it {not_regular(mode)}")
    _probe(path, _nearest_folder(path))


def check_output_folder(path: os.PathLike[str] | str) -> None:
    """Refuse a folder to write into that is something else (a file, a FIFO, a link loop or a
    dangling link), or that is missing where no folder can be made (a file on its path). (Not
    whether it can be written to: a read-only store or vendor folder that already holds what a
    command reads is fine.)"""
    path = os.fspath(path)
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        if error.errno not in (errno.ENOENT, errno.ENOTDIR) or os.path.islink(path):
            raise _stat_error(path, error, "folder") from None
        mode = None
    if mode is not None and not stat.S_ISDIR(mode):
        raise _cannot_write(path, f"it is {_kind(mode)}, not a folder")
    if mode is None:
        _nearest_folder(path)


def check_writable_folder(path: os.PathLike[str] | str) -> None:
    """check_output_folder, and this process can create a file in the folder (or in the nearest
    existing one above it, where it is still to be made): for a folder every run writes into."""
    check_output_folder(path)
    path = os.fspath(path)
    _probe(path, path if os.path.isdir(path) else _nearest_folder(path))


def _probe(path: str, folder: str) -> None:
    """Refuse `path` unless a file can be created in `folder`; the probe file is removed at once."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".ifaudit-probe-", dir=folder)
    except OSError as error:
        raise _cannot_write(path, f"{error.strerror} (in {folder})") from None
    os.close(fd)
    os.unlink(probe)


def _nearest_folder(path: str) -> str:
    """The nearest existing folder above `path` (writers create the missing ones); refused when
    what exists there is not a folder."""
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(folder):
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        raise _cannot_write(path, f"{os.strerror(errno.ENOTDIR)} ({folder} is not a folder)")
    return folder


def _cannot_write(path: str, reason: str | None) -> InputError:
    return InputError(f"cannot write: {reason}", path=path)


_CHECKS: tuple[tuple[type[PosixPath], Callable[[PosixPath], None]], ...] = (
    (InputFile, check_input),
    (InputFolder, check_input_folder),
    (InputFileOrFolder, check_input_file_or_folder),
    (OutputFile, check_output),
    (OutputFolder, check_output_folder),
)


def check_paths(values: Iterable[object]) -> None:
    """Check every marked path among `values` (lists looked into): the inputs, then the outputs."""
    flat = [item for value in values for item in (value if isinstance(value, list) else [value])]
    for item in flat:
        if isinstance(item, CommandLinePath) and item.given_empty:
            raise InputError('a path given as "" names no file or folder (it is not the working folder `.`)')
    for kind, check in _CHECKS:
        for item in flat:
            if isinstance(item, kind):
                check(item)
