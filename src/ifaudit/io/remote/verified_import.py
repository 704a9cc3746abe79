"""Importing a pinned upstream package from the bytes its pin names, never from bytecode.

Python runs a module from `__pycache__/<name>.cpython-3X.pyc` beside its source whenever the
.pyc's header matches the source's modification time and size, without reading the source: a
.pyc left in, or planted in, a materialized grader's folder would run in place of the files whose
sha256 the pin verified (a grading process writes them there itself on any machine that lets
Python write bytecode). The pinned folder's modules are instead compiled from their own bytes,
each checked against the pin as it is read; no bytecode is read or written for them.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import sys
from pathlib import Path
from types import CodeType
from typing import TYPE_CHECKING, ClassVar

from ifaudit.core.errors import VerificationError

if TYPE_CHECKING:
    from ifaudit.io.remote.pins import Pin


class _PinnedSourceLoader(importlib.machinery.SourceFileLoader):
    """Compiles a module from the bytes it reads, after checking them against the pin."""

    pinned: ClassVar[dict[Path, str]] = {}  # resolved path -> sha256; a subclass per folder sets it

    def get_code(self, fullname: str) -> CodeType:
        data = self.get_data(self.path)
        expected = self.pinned.get(Path(self.path).resolve())
        if expected is None:
            raise VerificationError(f"{self.path}: not a file of the pin, so it is not imported ({fullname})")
        actual = hashlib.sha256(data).hexdigest()
        if actual != expected:
            raise VerificationError(f"{self.path}: sha256 mismatch when imported, expected {expected}, got {actual}")
        return self.source_to_code(data, self.path)


def importable_from_pin(pin: Pin, folder: Path) -> None:
    """Put `folder` (a materialized, verified pin) first on sys.path, its modules found and
    compiled only from their pinned bytes (the folder and each package folder of the pin)."""
    pinned = {(folder / file.path).resolve(): file.sha256 for file in pin.files if file.path.endswith(".py")}
    loader = type("PinnedSourceLoader", (_PinnedSourceLoader,), {"pinned": pinned})
    folders = {folder, *((folder / file.path).parent for file in pin.files)}
    for where in folders:
        sys.path_importer_cache[str(where)] = importlib.machinery.FileFinder(str(where), (loader, [".py"]))
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
