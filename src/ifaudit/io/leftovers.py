"""A command that fails leaves no folder it made: a refused request leaves nothing behind.

The writers make the folders they write into as they go (ifaudit.io.canonical, the stores'
entry locks), so a command that fails half-way could leave an empty output folder, or the empty
`<sha[:2]>/` folders of store entries it never got an answer for. On a failure in the block,
`no_empty_folders_left` removes, deepest first, every folder it finds empty that did not exist
when the block began: inside each named folder, the named folder itself and the folders above it
up to the nearest one that existed. Only empty folders are removed (os.rmdir refuses any other),
so a file written meanwhile, by this command or another, and every folder that existed before,
stay.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress


def _nearest_existing(folder: str) -> str:
    while not os.path.lexists(folder):
        folder = os.path.dirname(folder)
    return folder


def _subfolders(folder: str) -> set[str] | None:
    """The names of the folders in `folder`, or None when it is not a folder (yet)."""
    try:
        with os.scandir(folder) as entries:
            return {entry.name for entry in entries if entry.is_dir(follow_symlinks=False)}
    except OSError:
        return None


def _prune(folder: str) -> bool:
    """Remove `folder` and the folders in it, deepest first, where empty; whether `folder` went."""
    for root, _, _ in os.walk(folder, topdown=False):  # links to folders are not walked into
        with suppress(OSError):
            os.rmdir(root)
    return not os.path.lexists(folder)


def _clean(folder: str, existing: str, inside: set[str] | None) -> None:
    if inside is not None:  # it existed: only what was made inside it goes
        for name in (_subfolders(folder) or set()) - inside:
            _prune(os.path.join(folder, name))
        return
    while folder != existing and _prune(folder):
        folder = os.path.dirname(folder)


@contextmanager
def no_empty_folders_left(*folders: str | os.PathLike[str]) -> Iterator[None]:
    """Run the block; if it fails, remove the empty folders it made at or in `folders` (see the
    module doc) before the failure goes on."""
    marks = []
    for folder in folders:
        path = os.path.abspath(folder)
        marks.append((path, _nearest_existing(path), _subfolders(path)))
    try:
        yield
    except BaseException:
        for path, existing, inside in marks:
            _clean(path, existing, inside)
        raise
