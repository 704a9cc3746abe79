"""Paths that come from outside (a bundle's manifests and checksum list, an archive's members, a
details folder's files) are read only inside the folder they belong to.

A name is a plain relative POSIX path (`name_problem`): not absolute, no `..`, `.` or empty part,
no backslash, no control character. A path joined from it (`inside`) is refused when any part of it
below its root is a symbolic link, and checked once more after resolving, so neither `results/../../X`
nor a link planted in the folder leads a reader or a writer out. A handed-in folder is listed
without recursion and within caps (`walk`): a folder nested 1,100 deep or holding millions of
entries is one line, not a RecursionError or an endless listing.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from ifaudit.core.errors import IfauditError, InputError
from ifaudit.io.paths import not_regular

MAX_DEPTH = 100  # folders below a handed-in folder; a bundle's deepest is about 10
MAX_ENTRIES = 200_000  # files and folders below it; a bundle holds a few thousand


def name_problem(name: str) -> str | None:
    """Why `name` is not a plain relative POSIX path staying below its folder, or None."""
    if not name or name.startswith("/"):
        return "not a relative path"
    if "\\" in name or any(ord(char) < 32 or ord(char) == 127 for char in name):
        return "holds a backslash or a control character"
    if {"", ".", ".."} & set(name.split("/")):
        return "has an empty, `.` or `..` part"
    if name.count("/") >= MAX_DEPTH:
        return f"is nested deeper than {MAX_DEPTH} folders"
    return None


def inside(root: Path, name: str, where: str, error: type[IfauditError] = InputError) -> Path:
    """`root / name`, refused (as `error`, the message naming `where` the name came from) unless
    `name` is a plain relative path and no part of it below `root` is a symbolic link. What does
    not exist yet is allowed (a path to write): only what exists can lead elsewhere."""
    why = name_problem(name)
    if why is not None:
        raise error(f"{where}: path {name!r} {why}; it must stay inside {root}")
    base = root.resolve()
    path = base
    for part in name.split("/"):
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            break
        except OSError as exc:
            raise error(f"{where}: path {name!r} cannot be looked up ({exc.strerror})") from None
        if stat.S_ISLNK(mode):
            raise error(f"{where}: path {name!r} goes through a symbolic link ({path}); it must stay inside {root}")
    joined = base / name
    if leads_out(base, name):  # belt and braces: what the checks above exclude
        raise error(f"{where}: path {name!r} leads out of {root}")
    return joined


def leads_out(root: Path, path: str | Path) -> bool:
    """Whether `root / path`, every link and `..` resolved, lies outside `root`: the one test of
    where a path ends, for names handed in (`inside`) and for a config's relative paths, which may
    go through links the user made (ifaudit.steps.planning.config_check)."""
    base = root.resolve()
    return not (base / path).resolve().is_relative_to(base)


def walk(root: Path, error: type[IfauditError] = InputError) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Every entry below `root` with its path relative to it, each folder's entries sorted by name
    and listed before what is inside them; links are listed, never followed. Iterative, and
    refused past MAX_DEPTH folders deep or MAX_ENTRIES entries in all."""
    pending: list[tuple[Path, str, int]] = [(root, "", 0)]
    count = 0
    while pending:
        folder, prefix, depth = pending.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as exc:
            raise error(f"{folder}: cannot be listed ({exc.strerror})") from None
        below = []
        for entry in entries:
            count += 1
            if count > MAX_ENTRIES:
                raise error(f"{root}: holds more than {MAX_ENTRIES} files and folders; not read")
            relative = prefix + entry.name
            yield relative, entry
            if entry.is_dir(follow_symlinks=False):
                if depth + 1 >= MAX_DEPTH:
                    raise error(f"{root}: folders nested deeper than {MAX_DEPTH} levels; not read")
                below.append((Path(entry.path), relative + "/", depth + 1))
        pending.extend(reversed(below))


def plain_files(root: Path, what: str, error: type[IfauditError] = InputError) -> list[str]:
    """The files below `root` (sorted relative POSIX paths), after checking every entry is a real
    folder or a regular file: a symbolic link (which could lead a reader or a writer out), a FIFO
    (a reader would block), a socket or a device is refused, the first one named. `what` names the
    folder in the message ("the bundle")."""
    files = []
    for relative, entry in walk(root, error):
        mode = entry.stat(follow_symlinks=False).st_mode
        if stat.S_ISLNK(mode):
            raise error(f"{entry.path}: a symbolic link in {what}; {what} may hold only files and folders")
        if stat.S_ISREG(mode):
            files.append(relative)
        elif not stat.S_ISDIR(mode):
            raise error(f"{entry.path}: {not_regular(mode)}; {what} may hold only files and folders")
    return sorted(files)
