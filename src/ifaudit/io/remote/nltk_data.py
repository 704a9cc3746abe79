"""NLTK's punkt_tab sentence model, which the IFEval checkers use to split sentences and words.

Resolution order: what NLTK_DATA (or nltk's default path) already has; our cache folder; a
configured mirror folder (copied into the cache); `nltk.download` on a machine with network.
The sha256 of each English punkt_tab file used is recorded, since a different model would
count sentences differently (the canary would catch it; the manifest says why).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ifaudit.io import variables
from ifaudit.io.canonical import sha256_file
from ifaudit.core.errors import IfauditError, InputError
from ifaudit.io.confine import walk
from ifaudit.io.paths import open_input

RESOURCE = "tokenizers/punkt_tab"
ENGLISH = RESOURCE + "/english"
MIRROR_ENV = variables.NLTK_MIRROR.name


@dataclass(frozen=True)
class PunktData:
    root: Path  # the folder that goes on nltk.data.path
    origin: str  # nltk-path, cache, mirror or download
    sha256: dict[str, str]  # path below root -> sha256, English files only

    def describe(self) -> dict[str, object]:
        """What grades can depend on: the files' hashes, not where they were found this time."""
        return {"resource": RESOURCE, "sha256": dict(sorted(self.sha256.items()))}


# nltk's optional numerical dependencies: `import nltk` imports them when it can, for modules no
# checker uses (scipy.stats for one collocation measure; numpy for clustering, classifiers,
# taggers, ALINE), and defines those modules without them otherwise.
_OPTIONAL = ("scipy", "numpy")


def import_nltk() -> ModuleType:
    """nltk, imported without scipy and numpy: what a grading process imports first (resolve_punkt).

    The checkers use nltk's tokenizers (Punkt, the Treebank word tokenizer, RegexpTokenizer),
    which import neither. Importing them anyway cost every grading process about 1 s of CPU for
    scipy.stats where the development venv has scipy (the runtime image has none) and 0.2 s for
    numpy and nltk.cluster. Here they are hidden while nltk is imported (those not imported
    already: a module in use is left as it is), so nltk defines its numerical modules without
    them and is otherwise the same module; the canary, whose sentinels include nltk's sentence
    and word tokenizers, and the recorded output digests hold either way."""
    if "nltk" not in sys.modules:
        hidden = [name for name in _OPTIONAL if name not in sys.modules]
        for name in hidden:
            sys.modules[name] = None  # type: ignore[assignment]  # `import numpy...` raises ImportError
        try:
            import nltk
        finally:
            for name in hidden:
                del sys.modules[name]
    import nltk

    return nltk


def _has_punkt(root: Path) -> bool:
    return (root / ENGLISH / "sent_starters.txt").is_file()


def _hashes(root: Path) -> dict[str, str]:
    english = root / ENGLISH
    return {str(f.relative_to(root)): sha256_file(f) for f in sorted(english.iterdir()) if f.is_file()}


def _use(root: Path, origin: str) -> PunktData:
    nltk = import_nltk()

    if str(root) not in nltk.data.path:
        nltk.data.path.insert(0, str(root))
    return PunktData(root=root, origin=origin, sha256=_hashes(root))


MAX_FILE_BYTES = 16 * 1024 * 1024  # a punkt_tab file; the largest of NLTK's 2024 release is under 1 MB


def _copy_file(source: Path, target: Path) -> None:
    """One file of the mirror's punkt_tab into the staging folder: a link is followed (NLTK data
    folders are often shared), but what it leads to must be a regular file under MAX_FILE_BYTES,
    checked before it is read (a link to a 3 GiB sparse file is one line, not a 3 GiB copy); a
    failure to write it (a full disk, `ulimit -f`) is one line naming it."""
    with open_input(source) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > MAX_FILE_BYTES:
            raise InputError(
                f"{size} bytes, over the {MAX_FILE_BYTES} a punkt_tab file may hold; not copied", path=source
            )
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise InputError(f"grew past {MAX_FILE_BYTES} bytes while read; not copied", path=source)
    try:
        target.write_bytes(data)
    except OSError as error:
        raise IfauditError(f"{target}: cannot write: {error.strerror or error}") from None


def _copy_tree(source: Path, staging: Path) -> None:
    """The mirror's punkt_tab folder, file by file (confine.walk: within caps, links listed, not entered)."""
    staging.mkdir()
    for relative, entry in walk(source):
        target = staging / relative
        if entry.is_dir(follow_symlinks=False):
            target.mkdir()
        elif entry.is_dir():
            raise InputError("a symbolic link to a folder in the NLTK mirror; not followed", path=entry.path)
        else:
            _copy_file(Path(entry.path), target)


def _copy_atomically(source: Path, cache: Path) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=cache))
    try:
        _copy_tree(source / RESOURCE, staging / "punkt_tab")
        (cache / "tokenizers").mkdir(exist_ok=True)
        try:
            os.rename(staging / "punkt_tab", cache / RESOURCE)
        except OSError:
            if not _has_punkt(cache):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def resolve_punkt(cache: Path, mirror: Path | None = None, *, allow_download: bool = True) -> PunktData:
    """Make punkt_tab (English) loadable by nltk and say where it came from."""
    nltk = import_nltk()

    for entry in nltk.data.path:
        if _has_punkt(Path(entry)):
            return _use(Path(entry), "nltk-path")
    cache = cache.resolve()
    if _has_punkt(cache):
        return _use(cache, "cache")
    mirror = mirror or variables.input_folder(variables.NLTK_MIRROR)
    if mirror is not None:
        if not _has_punkt(mirror):
            raise InputError(
                f"mirror has no {ENGLISH}/", path=mirror, hint="point it at a folder laid out as NLTK_DATA"
            )
        _copy_atomically(mirror, cache)
        return _use(cache, "mirror")
    if allow_download and nltk.download("punkt_tab", download_dir=str(cache), quiet=True) and _has_punkt(cache):
        return _use(cache, "download")
    raise InputError(
        f"NLTK resource {RESOURCE} not found and could not be downloaded",
        path=cache,
        hint=f"set NLTK_DATA or {MIRROR_ENV} to a folder with {ENGLISH}/, e.g. ../shared/data/nltk",
    )
