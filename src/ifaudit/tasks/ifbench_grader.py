"""AllenAI's pinned IFBench grader, loaded without editing a byte, with its network calls neutralized.

The pinned files (vendor/allenai_ifbench/pin.toml) reach for the network and write into their own
folder; none of that can decide a verdict, and an audited run must do none of it. Nothing is
patched in the files: what they call is stood in, in this process only.

- c6767a1's `instructions.py` runs `spacy.cli.download('en_core_web_sm')` at import. The pinned
  source is read first (ast): spaCy's names must occur only in that import and in calls that are
  statements at the module's top level (their result unused), and `spacy` nowhere else — no
  `spacy.load`, no model a checker could consult. Only then is a stand-in `spacy.cli` put in
  sys.modules for the import (the download is recorded, never made), and removed after it; a pin
  whose code used spaCy otherwise is refused.
- `nltk.download` (called while grading at c6767a1, at import at db69a6f when a resource is not
  found) is refused for the process: it downloads nothing and returns False, what it returns
  upstream on a machine without network. The resources the checkers read are pinned and
  materialized beforehand (ifaudit.io.remote.nltk_resources).
- db69a6f creates `ifbench/.nltk_data` inside its own folder at import, sets NLTK_DATA to it when
  unset, and puts it first on nltk's path. The folder is never created (a directory creation
  inside the pinned folder is refused while the files import), NLTK_DATA is left as it was, and
  the folder is taken off nltk's path again.
"""

from __future__ import annotations

import ast
import importlib
import os
import pathlib
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ifaudit.core.errors import VerificationError
from ifaudit.tasks.graders import CheckerRegistry, upstream_registry

if TYPE_CHECKING:
    from ifaudit.io.remote.pins import Pin
    from ifaudit.io.remote.sources import Source

# The modules that decide verdicts, per layout: the flat one of c6767a1 (package "") and the
# package `ifbench` of db69a6f.
FLAT_MODULES = ("instructions_registry", "instructions", "instructions_util")
PACKAGE_MODULES = ("instructions_registry", "instructions", "instructions_util", "classic_instructions")

# What the stand-ins saw, for the record (tests read them): spaCy models asked for, NLTK downloads refused.
SPACY_DOWNLOADS: list[str] = []
REFUSED_DOWNLOADS: list[str] = []


def module_names(pin: Pin) -> tuple[str, ...]:
    """The pinned grader's verdict modules as Python imports them (the registry first)."""
    if not pin.package:
        return FLAT_MODULES
    return tuple(f"{pin.package}.{name}" for name in PACKAGE_MODULES)


def spacy_unused_for_verdicts(source: str, filename: str) -> bool:
    """Does `source` import spaCy at all? Raises unless every use of it is a top-level call whose
    result is dropped (the import-time model download): then no verdict can depend on spaCy."""
    tree = ast.parse(source, filename)
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            # `import spacy.cli` binds `spacy`; `import spacy.cli as cli` binds `cli`
            bound |= {alias.asname or "spacy" for alias in node.names if alias.name.split(".")[0] == "spacy"}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "spacy":
            bound |= {alias.asname or alias.name for alias in node.names}
    if not bound:
        return False
    dropped_calls = {
        id(statement.value.func)
        for statement in tree.body
        if isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Name)
        and statement.value.func.id in bound
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in bound and id(node) not in dropped_calls:
            raise VerificationError(
                f"{filename}: line {node.lineno} uses spaCy's {node.id!r} beyond a dropped top-level call: "
                "a verdict could depend on a spaCy model, which is not pinned; refusing to stand it in"
            )
    return True


def refuse_download(info_or_id: Any = None, *args: Any, **kwargs: Any) -> bool:
    """`nltk.download` in a grading process: nothing is fetched; False, as upstream gets offline."""
    REFUSED_DOWNLOADS.append(str(info_or_id))
    return False


def refuse_nltk_downloads() -> None:
    import nltk
    import nltk.downloader

    nltk.download = refuse_download
    nltk.downloader.download = refuse_download


def _spacy_stand_in() -> dict[str, types.ModuleType]:
    spacy = types.ModuleType("spacy", "ifaudit's stand-in for spaCy's import-time model download")
    cli = types.ModuleType("spacy.cli")

    def download(model: str, *args: Any, **kwargs: Any) -> None:
        SPACY_DOWNLOADS.append(model)

    cli.download = download  # type: ignore[attr-defined]
    spacy.cli = cli  # type: ignore[attr-defined]
    return {"spacy": spacy, "spacy.cli": cli}


@contextmanager
def _importing(folder: Path, stand_in_spacy: bool) -> Iterator[None]:
    """While the pinned files import: spaCy stood in (if its use was shown harmless), no folder
    created inside the pin, NLTK_DATA and nltk's path as they were."""
    import nltk

    saved_modules = {name: sys.modules.get(name) for name in ("spacy", "spacy.cli")}
    saved_variable = {name: value for name, value in os.environ.items() if name == "NLTK_DATA"}  # kept, not read
    saved_path = list(nltk.data.path)
    original_mkdir = pathlib.Path.mkdir
    inside = folder.resolve()

    def mkdir(self: pathlib.Path, *args: Any, **kwargs: Any) -> None:
        if Path(os.path.abspath(self)).is_relative_to(inside):
            return None  # the pinned folder stays as verified: nothing is created in it
        return original_mkdir(self, *args, **kwargs)

    if stand_in_spacy:
        sys.modules.update(_spacy_stand_in())
    pathlib.Path.mkdir = mkdir  # type: ignore[method-assign]
    try:
        yield
    finally:
        pathlib.Path.mkdir = original_mkdir  # type: ignore[method-assign]
        for name, module in saved_modules.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
        os.environ.pop("NLTK_DATA", None)
        os.environ.update(saved_variable)
        nltk.data.path[:] = saved_path


def load_ifbench(pin: Pin, cache_root: Path, sources: list[Source]) -> CheckerRegistry:
    """The pinned grader's registry, from its verified files (materialized if needed)."""
    from ifaudit.io.remote.pins import materialize
    from ifaudit.io.remote.verified_import import importable_from_pin

    folder = materialize(pin, cache_root, sources).resolve()
    names = module_names(pin)
    files = {name: folder / (name.replace(".", "/") + ".py") for name in names}
    stand_in = any(spacy_unused_for_verdicts(path.read_text(encoding="utf-8"), str(path)) for path in files.values())
    refuse_nltk_downloads()
    importable_from_pin(pin, folder)
    with _importing(folder, stand_in):
        module = importlib.import_module(names[0])
    loaded_files = []
    for name in names:
        loaded = Path(sys.modules[name].__file__ or "").resolve()
        if loaded != files[name]:
            raise VerificationError(f"{name} was imported from {loaded}, not from the verified pin at {folder}")
        loaded_files.append(loaded)
    own = [name.split(".")[0] for name in names] + (["spacy"] if stand_in else [])
    return upstream_registry(pin, module.INSTRUCTION_DICT, loaded_files, own)
