"""What code decides a verdict: a module's import closure within the ifaudit package, by sha256.

A registry of ours is more than its own file (Inception's registry imports the Arabic text
helpers; the HF registry imports Inception's). So its identity is the sha256 of every module of
the package that it imports, directly or through another, with the packages' `__init__` files on
the way, keyed by package-relative path (`ifaudit/checkers/arabic/text.py`). An edit to any of
them changes the identity that canary verdicts and environment records carry.

The imports are read from the source (ast), not from what happens to be loaded: imports inside
functions and under TYPE_CHECKING count, as they do for the layer check.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from ifaudit.io.canonical import sha256_file

PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # src/ifaudit
PACKAGE = PACKAGE_ROOT.name


def _file_of(module: str) -> Path | None:
    """The source file of `ifaudit.a.b` (a.b.py or a/b/__init__.py), None when it is not one."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = PACKAGE_ROOT.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _module_of(path: Path) -> str:
    relative = path.relative_to(PACKAGE_ROOT).with_suffix("").parts
    return ".".join((PACKAGE, *(relative[:-1] if relative[-1] == "__init__" else relative)))


def imported_modules(path: Path, package: str = "") -> set[str]:
    """The modules `path`'s source imports, wherever the import stands (in functions, try blocks,
    under TYPE_CHECKING): absolute names, and relative ones resolved against `package` (the
    importing module's package; without one they are left out). `from x import y` counts as x
    and as x.y, since y may be a module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (package or not node.level):
            levels = package.split(".")
            anchor = ".".join(levels[: len(levels) - node.level + 1]) if node.level else ""
            base = ".".join(part for part in (anchor, node.module or "") if part)
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


def _imported(path: Path) -> set[str]:
    """The package's modules that `path` (a module of it) imports."""
    own = _module_of(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    return {name for name in imported_modules(path, package) if _file_of(name) is not None}


def _with_parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts) + 1)]


@functools.cache
def import_closure(module: str) -> dict[str, str]:
    """sha256 of every file of the package that importing `module` runs, by relative path."""
    seen: set[str] = set()
    pending = [module]
    while pending:
        name = pending.pop()
        for step in _with_parents(name):
            if step in seen or (path := _file_of(step)) is None:
                continue
            seen.add(step)
            pending.extend(_imported(path))
    files = sorted({path for name in seen if (path := _file_of(name)) is not None})
    return {f"{PACKAGE}/{path.relative_to(PACKAGE_ROOT).as_posix()}": sha256_file(path) for path in files}
