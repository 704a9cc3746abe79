"""Where pinned bytes may come from: one spec syntax, one order, one loop that checks each source.

A source spec is a local path, an HTTP(S) URL or a Hugging Face hub file at a pinned revision
(`hf://datasets/OWNER/NAME@REVISION/FILE`). What a spec names depends on what it stands for
(`Holds`): for a dataset, one file; for a grader pin, a tree holding the pinned paths (a folder, a
git checkout, a .tar(.gz) or .zip archive, a URL or hub folder the paths are appended to).

Every pinned thing is looked for in one order (`Places`): the user's own copies first, then the
mirrors, then, unless offline, the canonical places its publisher put it. The first source whose
bytes pass the caller's check (the pinned sha256) wins; a source that has other bytes is reported,
never used.

This module is imported by the workflow when it parses the config (the order of a dataset's
sources), so it imports nothing heavy at the top: the network and archive modules load on use.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import IO, Any, BinaryIO, Protocol

from ifaudit.core.errors import InputError
from ifaudit.io.canonical import sha256_and_size
from ifaudit.io.paths import open_input

HTTP_TIMEOUT_SECONDS = 60
_HUB = re.compile(r"^hf://datasets/(?P<repo>[^@]+)@(?P<revision>[^/]+)(?:/(?P<file>.+))?$")


class SourceMiss(Exception):
    """A source does not have the file (as opposed to having other bytes)."""


class OtherBytes(SourceMiss):
    """A source has the file, but of another size or sha256 than the pinned one: refused before
    it is read into memory."""


@dataclass(frozen=True)
class Wanted:
    """The file asked of a source: its path in the pinned tree at `commit`, and its pinned size
    where the pin gives one. A source of one file (a dataset's) has only that file and gives it
    whatever the path."""

    path: str
    commit: str = ""
    size: int | None = None  # checked before a byte is read; no more than size + 1 bytes are read
    sha256: str | None = None  # a local file's, checked as it streams by before it is read into memory


class Source(Protocol):
    def describe(self) -> str: ...

    def read(self, wanted: Wanted) -> bytes: ...


class Holds(Enum):
    """What a spec stands for, which decides how a path or URL in it is read."""

    FILE = "one file"  # a dataset: the spec names the file itself
    TREE = "a tree of files"  # a grader pin: the spec names where the pinned paths are


@dataclass(frozen=True)
class Places:
    """Where one pinned thing may be, by kind of place; `in_order` is the one order they are tried in."""

    own: tuple[str, ...] = ()  # the user's copies (a dataset's `path`, `--from`, the environment variable)
    mirrors: tuple[str, ...] = ()  # copies known to hold the pinned bytes (the mirror folder, a pin's mirrors)
    canonical: tuple[str, ...] = ()  # where the publisher put it (URL, hub file): not tried offline

    def in_order(self, offline: bool) -> list[str]:
        return [*self.own, *self.mirrors, *(() if offline else self.canonical)]


def dataset_places(spec: Mapping[str, Any], mirror: str | Path | None) -> Places:
    """A config dataset's places: its `path`; its `mirror` under the mirror folder; its `url` and `hf`."""
    hub = spec.get("hf", {})
    return Places(
        own=(spec["path"],) if "path" in spec else (),
        mirrors=(str(Path(mirror) / spec["mirror"]),) if mirror and "mirror" in spec else (),
        canonical=(
            *((spec["url"],) if "url" in spec else ()),
            *((f"hf://datasets/{hub['repo']}@{hub['revision']}/{hub['file']}",) if "hf" in spec else ()),
        ),
    )


def dataset_specs(spec: Mapping[str, Any], mirror: str | Path | None, offline: bool) -> list[str]:
    """The source specs of a config dataset in the order they are tried (the workflow's `fetch`
    rule passes these to `ifaudit fetch --from`)."""
    return dataset_places(spec, mirror).in_order(offline)


def parse_source(spec: str, holds: Holds) -> Source:
    """The source a spec names: a user's `--from` value, a config key's or a pin's."""
    if spec.startswith("hf://"):
        return _hub(spec, holds)
    if holds is Holds.FILE:
        if spec.startswith(("http://", "https://")):
            return WebFile(spec)
        return LocalFile(Path(spec.removeprefix("file:")))
    if "://" in spec:
        return UrlTemplate(spec if "{path}" in spec else spec.rstrip("/") + "/{path}")
    path = Path(spec).expanduser()
    if path.is_dir():
        return GitCheckout(path) if (path / ".git").exists() else LocalFolder(path)
    if path.is_file():
        return Archive(path)
    raise InputError("grader source not found (expected a folder, git checkout, archive or URL)", path=spec)


def _hub(spec: str, holds: Holds) -> Source:
    """A hub file (`.../FILE`) for a dataset; a hub folder (`...[/FOLDER]`) holding a pin's paths."""
    match = _HUB.match(spec)
    if holds is Holds.FILE:
        if not match or not match["file"]:
            raise InputError(f"hub source {spec!r} is not of the form hf://datasets/OWNER/NAME@REVISION/FILE")
        return HubFile(match["repo"], match["revision"], match["file"])
    if not match:
        raise InputError(f"hub source {spec!r} is not of the form hf://datasets/OWNER/NAME@REVISION[/FOLDER]")
    return HubFolder(match["repo"], match["revision"], match["file"] or "")


class NoMatch(Exception):
    """No source gave acceptable bytes; `attempts` says what each one did (empty: none to try)."""

    def __init__(self, attempts: list[str]) -> None:
        super().__init__("; ".join(attempts))
        self.attempts = attempts


def first_match(
    label: str, sources: Sequence[Source], wanted: Wanted, complaint: Callable[[bytes], str | None]
) -> tuple[bytes, Source]:
    """The bytes of the first source that has `wanted` and about which `complaint` says nothing
    (None), and that source; the sources passed over are noted on stderr. `NoMatch` when none."""
    attempts: list[str] = []
    for source in sources:
        try:
            data = source.read(wanted)
        except OtherBytes as other:
            attempts.append(f"{source.describe()}: {other}")
            continue
        except SourceMiss as miss:
            attempts.append(f"{source.describe()}: missing ({miss})")
            continue
        problem = complaint(data)
        if problem is None:
            for attempt in attempts:
                print(f"ifaudit: note: {label}: skipped {attempt}", file=sys.stderr)
            return data, source
        attempts.append(f"{source.describe()}: {problem}")
    raise NoMatch(attempts)


def sized(what: str, actual: int, size: int | None) -> None:
    """Refuse, unread, a file whose size (as stat or a header gives it) is not the pinned one."""
    if size is not None and actual != size:
        raise OtherBytes(f"size mismatch: {what} has {actual} bytes, pinned {size}; not read")


def read_sized(handle: BinaryIO | IO[bytes], what: str, size: int | None) -> bytes:
    """A file's bytes, no more than `size` + 1 of them when a size is pinned (a file that grows
    while it is read, or whose stated size lies, is refused all the same)."""
    if size is None:
        return handle.read()
    data = handle.read(size + 1)
    sized(what, len(data), size)
    return data


def read_local(path: Path, size: int | None, sha256: str | None = None, cap: int | None = None) -> bytes:
    """A local file's bytes: a link is followed, and what it leads to must be a regular file (a
    FIFO would block, a device never end) of the pinned size, checked by fstat before a byte is
    read (a link to a 3 GiB sparse file is refused at once), and of the pinned sha256 where one
    is given without a size (a dataset's), hashed as it streams by before it is held in memory;
    any other is a miss. Without a pinned size, a file over `cap` bytes (if given) is refused unread."""
    try:
        with open_input(path) as handle:
            actual = os.fstat(handle.fileno()).st_size
            sized(str(path), actual, size)
            if size is None and cap is not None and actual > cap:
                raise OtherBytes(f"size mismatch: {path} has {actual} bytes, more than {cap}; not read")
            if sha256 is not None and size is None:
                digest = sha256_and_size(handle)[0]
                if digest != sha256:
                    raise OtherBytes(f"sha256 mismatch, expected {sha256}, got {digest}; not read into memory")
                handle.seek(0)
            if size is None and cap is not None:
                data = handle.read(cap + 1)
                if len(data) > cap:  # grown past the cap since its size was taken
                    raise OtherBytes(f"size mismatch: {path} has more than {cap} bytes; not read")
                return data
            return read_sized(handle, str(path), size)
    except InputError as error:
        raise SourceMiss(str(error)) from None
    except OSError as error:
        raise SourceMiss(f"{path}: cannot be read ({error.strerror or error})") from None


def http_get(url: str, size: int | None = None) -> bytes:
    """The body of a GET (refused as soon as it is longer than a pinned `size`, or its declared
    length is another); any failure to get it is a SourceMiss saying why."""
    import urllib.error  # here, not at the top: most jobs never reach the network
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=HTTP_TIMEOUT_SECONDS) as answer:
            declared = answer.headers.get("Content-Length")
            if declared is not None and declared.isdigit():
                sized(url, int(declared), size)
            return read_sized(answer, url, size)
    except urllib.error.HTTPError as exc:
        raise SourceMiss(f"HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise SourceMiss(str(getattr(exc, "reason", exc))) from None


def _hub_download(repo: str, revision: str, file: str, wanted: Wanted) -> bytes:
    from huggingface_hub import hf_hub_download

    try:
        local = hf_hub_download(repo, file, repo_type="dataset", revision=revision)
    except Exception as exc:  # the hub client raises many types; all mean "not from here"
        raise SourceMiss(f"{type(exc).__name__}: {exc}") from None
    return read_local(Path(local), wanted.size, wanted.sha256)


# Sources of one file (a dataset's).


@dataclass(frozen=True)
class LocalFile:
    path: Path

    def describe(self) -> str:
        return f"file {self.path}"

    def read(self, wanted: Wanted) -> bytes:
        """The file's bytes; a path that is missing, unreadable or not a regular file (a FIFO
        would block, a device never end) is a miss, said in the words of ifaudit.io.paths."""
        return read_local(self.path, wanted.size, wanted.sha256)


@dataclass(frozen=True)
class WebFile:
    url: str

    def describe(self) -> str:
        return f"URL {self.url}"

    def read(self, wanted: Wanted) -> bytes:
        return http_get(self.url, wanted.size)


@dataclass(frozen=True)
class HubFile:
    repo: str
    revision: str
    file: str

    def describe(self) -> str:
        return f"hf://datasets/{self.repo}@{self.revision}/{self.file}"

    def read(self, wanted: Wanted) -> bytes:
        return _hub_download(self.repo, self.revision, self.file, wanted)


# Sources of a tree of files (a grader pin's), read at the wanted path.


@dataclass(frozen=True)
class LocalFolder:
    """A folder holding the files at their pinned paths, or the package folder itself."""

    root: Path

    def describe(self) -> str:
        return f"folder {self.root}"

    def read(self, wanted: Wanted) -> bytes:
        """The file at the pinned path, else at the top by its name (read_local: a link is
        followed, to a regular file of the pinned size only)."""
        for candidate in (self.root / wanted.path, self.root / Path(wanted.path).name):
            if os.path.lexists(candidate):
                return read_local(candidate, wanted.size)
        raise SourceMiss(f"no {wanted.path} under {self.root}")


@dataclass(frozen=True)
class GitCheckout:
    """A clone of the upstream repository: the pinned commit's blob, else the working tree."""

    root: Path

    def describe(self) -> str:
        return f"git checkout {self.root}"

    def read(self, wanted: Wanted) -> bytes:
        """The blob's size first (`git cat-file -s`), then, only if it is the pinned one, its bytes."""
        blob = f"{wanted.commit}:{wanted.path}"
        git = ["git", "-C", str(self.root), "cat-file"]
        known = subprocess.run([*git, "-s", blob], capture_output=True, text=True, check=False)
        if known.returncode != 0:
            return LocalFolder(self.root).read(wanted)
        sized(f"{self.root} {blob}", int(known.stdout), wanted.size)
        shown = subprocess.run([*git, "blob", blob], capture_output=True, check=False)
        if shown.returncode != 0:
            raise SourceMiss(f"git cannot show {blob}")
        return shown.stdout


@dataclass(frozen=True)
class Archive:
    """A .tar(.gz) or .zip, such as GitHub's archive of the pinned commit."""

    path: Path

    def describe(self) -> str:
        return f"archive {self.path}"

    def read(self, wanted: Wanted) -> bytes:
        """The member's bytes; a file that is no archive (any binary file), or a damaged one, is
        a miss saying so in one line (tarfile's own message lists every method it tried)."""
        import tarfile
        import zipfile
        import zlib

        from ifaudit.io.archive import check_zip_layout, read_zip_member

        try:
            if zipfile.is_zipfile(self.path):
                with zipfile.ZipFile(self.path) as archive:
                    check_zip_layout(archive, self.path.stat().st_size, self.path)
                    name = self._member(wanted, archive.namelist())
                    declared = archive.getinfo(name).file_size
                    sized(f"{self.path}!{name}", declared, wanted.size)
                    return bytes(
                        read_zip_member(archive, name, declared, self.path, "a member read is its pinned size")
                    )
            with tarfile.open(self.path) as tar:
                members = {m.name: m for m in tar.getmembers() if m.isfile()}
                name = self._member(wanted, list(members))
                sized(f"{self.path}!{name}", members[name].size, wanted.size)
                extracted = tar.extractfile(members[name])
                assert extracted is not None  # a regular file's member always has a reader
                return read_sized(extracted, f"{self.path}!{name}", wanted.size)
        except InputError as error:  # a member over the cap, encrypted, or lying about its place
            raise SourceMiss(str(error)) from None
        except (tarfile.TarError, zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as error:
            raise SourceMiss(f"not a readable .tar(.gz) or .zip archive ({type(error).__name__})") from None

    def _member(self, wanted: Wanted, names: list[str]) -> str:
        """The member at the pinned path under any top folder (GitHub's `repo-commit/`), else at
        the top by its file name; the shortest such name."""
        found = [n for n in names if n == wanted.path or n.endswith("/" + wanted.path)]
        if not found:
            base = Path(wanted.path).name
            found = [n for n in names if n.lstrip("./") == base]
        if not found:
            raise SourceMiss(f"no {wanted.path} in {self.path}")
        return sorted(found, key=len)[0]


@dataclass(frozen=True)
class UrlTemplate:
    """An HTTP(S) mirror or the canonical host; `template` has {commit} and {path}."""

    template: str

    def describe(self) -> str:
        return f"URL template {self.template}"

    def read(self, wanted: Wanted) -> bytes:
        return http_get(self.template.format(commit=wanted.commit, path=wanted.path), wanted.size)


@dataclass(frozen=True)
class HubFolder:
    """A folder of a hub dataset repository at a pinned revision (`folder` empty: its top)."""

    repo: str
    revision: str
    folder: str

    def describe(self) -> str:
        return f"hf://datasets/{self.repo}@{self.revision}/{self.folder}".rstrip("/")

    def read(self, wanted: Wanted) -> bytes:
        file = f"{self.folder.rstrip('/')}/{wanted.path}".lstrip("/")
        return _hub_download(self.repo, self.revision, file, wanted)
