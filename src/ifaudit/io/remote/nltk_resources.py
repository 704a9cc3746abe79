"""NLTK resources pinned by sha256 and materialized into one folder that goes first on nltk's path.

IFEval's checkers read one resource (punkt_tab, ifaudit.io.remote.nltk_data, recorded by hash);
IFBench's read three — punkt_tab, the English stop-word list and the English POS tagger — and
each has changed between NLTK data releases (the stop-word list grew from 179 to 198 words), so
every file is pinned here by sha256 and any other bytes are refused, wherever they were found.

Sources, tried in order for each file: the configured NLTK mirror folder (laid out as NLTK_DATA
or as NLTK's data server, `packages/...`), then every folder on nltk's path. Nothing is ever
downloaded. The files are assembled in a staging folder and renamed into place as a whole.

The tagger: nltk >= 3.9 reads the English averaged-perceptron model only as three JSON files
(`taggers/averaged_perceptron_tagger_eng/`), whose NLTK-server archive is unreachable from the
machines this was built on and whose sha256 is not known. The pinned source is the 2015 model as
NLTK's data repository ships it, a pickle in `packages/taggers/averaged_perceptron_tagger.zip`:
it is read with an unpickler that admits nothing but builtin sets (no code can run) and written as
nltk's JSON (weights, tagdict, classes — classes sorted, nltk puts them in a set's order), and the
JSON's bytes are pinned too. nltk's `PerceptronTagger.load_from_json` reads them as it would the
server's files; which class list order it reads changes no tag (ties are broken by label).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ifaudit.core.errors import VerificationError
from ifaudit.io.canonical import sha256_bytes, sha256_file
from ifaudit.io.confine import inside, name_problem
from ifaudit.io.remote.nltk_data import PunktData, import_nltk


@dataclass(frozen=True)
class NltkFile:
    """One file of a resource: where it goes below the data folder (a plain relative path, kept
    inside it: confine.inside), its pinned sha256 and its size in bytes, checked before a byte
    of a candidate is read."""

    path: str
    sha256: str
    size: int


@dataclass(frozen=True)
class NltkResource:
    """An NLTK resource as nltk finds it (`name`, e.g. corpora/stopwords) and its pinned files.

    `source`, if given, is a pinned archive (path below a mirror, sha256) the files are made from
    by `convert`, instead of being copied as they are."""

    name: str
    files: tuple[NltkFile, ...]
    source: NltkFile | None = None
    convert: Callable[[bytes], dict[str, bytes]] | None = None


@dataclass(frozen=True)
class NltkData(PunktData):
    """The folder holding the pinned resources (first on nltk.data.path) and what is in it: a
    PunktData whose `sha256` covers every pinned file, so it stands wherever punkt's does."""

    resources: tuple[NltkResource, ...] = ()

    def describe(self) -> dict[str, object]:
        """What grades can depend on: each resource's files by hash, not where they were found."""
        return describe_resources(self.resources)


def describe_resources(resources: Sequence[NltkResource]) -> dict[str, object]:
    """Each resource's pinned files by hash (as nltk reads them), by resource name."""
    return {
        "resources": {
            resource.name: {f.path: f.sha256 for f in sorted(resource.files, key=lambda f: f.path)}
            for resource in sorted(resources, key=lambda r: r.name)
        }
    }


def _restricted_load(data: bytes) -> object:
    """A pickle of builtin containers: any class other than `set` is refused, so nothing runs."""
    import pickle  # here, as zipfile in perceptron_json: the task registry imports this module's declarations

    class Containers(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> type:
            if (module, name) in {("__builtin__", "set"), ("builtins", "set")}:
                return set
            raise pickle.UnpicklingError(f"refusing {module}.{name} in a pickled model")

    return Containers(io.BytesIO(data)).load()


TAGGER_PICKLE = "averaged_perceptron_tagger/averaged_perceptron_tagger.pickle"


def perceptron_json(archive: bytes) -> dict[str, bytes]:
    """nltk's three JSON files of the averaged-perceptron tagger, from the archive of its pickle."""
    import pickle
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(archive)) as opened:
            model = _restricted_load(opened.read(TAGGER_PICKLE))
    except (zipfile.BadZipFile, KeyError, pickle.UnpicklingError, EOFError) as exc:
        raise VerificationError(f"the tagger archive holds no readable {TAGGER_PICKLE}: {exc}") from None
    if not (isinstance(model, tuple) and len(model) == 3):
        raise VerificationError(f"{TAGGER_PICKLE}: expected (weights, tagdict, classes)")
    weights, tagdict, classes = model
    prefix = "averaged_perceptron_tagger_eng"
    parts = {"weights": weights, "tagdict": tagdict, "classes": sorted(classes)}
    return {f"{prefix}.{name}.json": json.dumps(value).encode("utf-8") for name, value in parts.items()}


def _candidates(relative: str, sources: Sequence[Path]) -> Iterable[Path]:
    """`packages/...` is the data server's layout (a mirror of it); an NLTK_DATA folder holds the
    same archive without that prefix."""
    for folder in sources:
        yield folder / relative
        if relative.startswith("packages/"):
            yield folder / relative.removeprefix("packages/")


def _pinned_bytes(pinned: NltkFile, sources: Sequence[Path]) -> bytes:
    """The first source's bytes of `pinned` that match its size and sha256, every miss named
    otherwise. A link in a source is followed (NLTK data folders are often shared), but what it
    leads to must be a regular file of the pinned size, checked before it is read
    (sources.read_local): a link to a 3 GiB sparse file is passed over unread."""
    from ifaudit.io.remote.sources import OtherBytes, SourceMiss, read_local

    misses = []
    for candidate in _candidates(pinned.path, sources):
        if not os.path.lexists(candidate):
            continue
        try:
            data = read_local(candidate, pinned.size)
        except OtherBytes as other:
            misses.append(str(other))
            continue
        except SourceMiss:  # not a regular file, or unreadable: as if it were not there
            continue
        actual = sha256_bytes(data)
        if actual == pinned.sha256:
            return data
        misses.append(f"{candidate}: sha256 {actual}")
    tried = "; ".join(misses) or "not found in " + ", ".join(str(s) for s in sources)
    raise VerificationError(f"NLTK data {pinned.path}: no source has the pinned bytes ({pinned.sha256}): {tried}")


def check_paths(resource: NltkResource) -> None:
    """Every path the resource pins is a plain relative path (confine.name_problem: no `..`, not
    absolute) and each of its files lies in its folder, which is moved into place as a whole: a
    pin cannot have a file read or written outside the data folder, or left out of the move."""
    named = [(resource.name, "its name"), *((f.path, "a file") for f in resource.files)]
    named += [(resource.source.path, "its source")] if resource.source is not None else []
    for path, what in named:
        if (why := name_problem(path)) is not None:
            raise VerificationError(f"NLTK data {resource.name!r}: {what}'s path {path!r} {why}")
    for pinned in resource.files:
        if not pinned.path.startswith(resource.name + "/"):
            raise VerificationError(f"NLTK data {resource.name!r}: file {pinned.path!r} is not in its folder")


def _read(resource: NltkResource) -> tuple[NltkFile, ...]:
    """The pinned files materializing `resource` reads: its source archive, or its files."""
    return (resource.source,) if resource.source is not None and resource.convert is not None else resource.files


def pinned_inputs(resources: Sequence[NltkResource], sources: Sequence[Path]) -> dict[str, bytes]:
    """The bytes materializing `resources` reads (each resource's source archive where its files
    are made from one, else its files), by path below an NLTK data folder, each checked against
    its pin: a folder holding them is a source materialize_nltk makes every resource from."""
    for resource in resources:
        check_paths(resource)
    return {pinned.path: _pinned_bytes(pinned, sources) for resource in resources for pinned in _read(resource)}


def _resource_files(resource: NltkResource, sources: Sequence[Path]) -> dict[str, bytes]:
    """The resource's files by path below the data folder, each checked against its pin."""
    if resource.source is not None and resource.convert is not None:
        made = resource.convert(_pinned_bytes(resource.source, sources))
        files = {f"{resource.name}/{name}": data for name, data in made.items()}
    else:
        files = {f.path: _pinned_bytes(f, sources) for f in resource.files}
    for pinned in resource.files:
        actual = sha256_bytes(files.get(pinned.path, b""))
        if actual != pinned.sha256:
            raise VerificationError(f"NLTK data {pinned.path}: made {actual}, pinned {pinned.sha256}")
    return files


def _verified(root: Path, resource: NltkResource) -> bool:
    """Whether every pinned file is in place below `root`, of its size (checked first) and sha256."""
    return all(
        (root / f.path).is_file()
        and f.size in (None, (root / f.path).stat().st_size)
        and sha256_file(root / f.path) == f.sha256
        for f in resource.files
    )


def materialize_nltk(root: Path, resources: Sequence[NltkResource], sources: Sequence[Path]) -> NltkData:
    """Each resource's pinned files under `root` (kept where they verify, else made again from the
    first source that has the pinned bytes), and `root` first on nltk's path."""
    from ifaudit.io.remote.pins import write_staged  # here: the pins' sources and TOML are not the registry's

    root = root.resolve()
    for resource in resources:
        check_paths(resource)
        if _verified(root, resource):
            continue
        files = _resource_files(resource, [s for s in sources if s.resolve() != root])
        root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=root))
        staging.chmod(0o755)
        try:
            for path, data in files.items():
                write_staged(inside(staging, path, f"NLTK data {resource.name}", VerificationError), data)
            if not _verified(root, resource):  # another process may have put it there meanwhile
                _move_into_place(staging / resource.name, root / resource.name)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        if not _verified(root, resource):
            raise VerificationError(f"NLTK data {root / resource.name}: does not verify after materializing")
    nltk = import_nltk()
    if str(root) in nltk.data.path:
        nltk.data.path.remove(str(root))
    nltk.data.path.insert(0, str(root))
    hashes = {f.path: f.sha256 for resource in resources for f in resource.files}
    return NltkData(root=root, origin="pinned", sha256=hashes, resources=tuple(resources))


def _move_into_place(staged: Path, destination: Path) -> None:
    """Rename the staged resource into place; a copy there that fails verification is moved aside
    first. Another process that puts a copy there meanwhile wins (the rename then fails)."""
    from ifaudit.io.remote.pins import move_aside

    destination.parent.mkdir(parents=True, exist_ok=True)
    if destination.exists():
        move_aside(destination)
    try:
        os.rename(staged, destination)
    except OSError:
        if not destination.exists():
            raise
