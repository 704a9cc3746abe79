"""Deterministic archives and checksum lists: same files, same bytes.

A .tar.gz made here depends only on the files' relative paths and contents: entries are sorted,
every mtime is 0, owners are root/root with no names, modes are 0644 (0755 for executables), and
the gzip header carries no file name and mtime 0.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from ifaudit.core.errors import InputError, VerificationError
from ifaudit.io.canonical import atomic_write_bytes, sha256_bytes, sha256_file

_SHA256 = re.compile(r"[0-9a-f]{64}")


def tree_files(root: Path, exclude: frozenset[str] = frozenset()) -> list[str]:
    """Every file below `root`, as sorted POSIX paths relative to it, minus `exclude`."""
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).as_posix() not in exclude
    )


def checksum_lines(root: Path, files: list[str]) -> bytes:
    """`sha256  path` lines (sha256sum's format, so `sha256sum -c` checks a bundle too)."""
    return "".join(f"{sha256_file(root / name)}  {name}\n" for name in files).encode()


def confined_name(name: str) -> bool:
    """A plain relative POSIX path that stays below the folder it is relative to."""
    parts = name.split("/")
    return not name.startswith("/") and "\\" not in name and not {"", ".", ".."} & set(parts)


def parse_checksums(data: bytes, source: str = "CHECKSUMS.sha256") -> dict[str, str]:
    """The `sha256  path` lines of a checksum list; a line whose path could lead out of the
    folder (absolute, `..`) or whose digest is not a sha256 is refused, naming the line."""
    listed: dict[str, str] = {}
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        digest, _, name = line.partition("  ")
        if not _SHA256.fullmatch(digest) or not confined_name(name):
            raise VerificationError(f"{source}:{number}: {line[:200]!r} is not a sha256 and a path inside the bundle")
        listed[name] = digest
    return listed


def check_confined_tree(root: Path) -> None:
    """Every entry below `root` is a real folder or a regular file: no symbolic link (which could
    lead a reader or a writer out of the folder), FIFO, socket or device; the first one is named."""
    for folder, folders, files in os.walk(root, followlinks=False):
        for name in sorted(folders) + sorted(files):
            path = Path(folder) / name
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                raise VerificationError(f"{path}: a symbolic link in the bundle; a bundle holds only files and folders")
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise VerificationError(f"{path}: not a regular file; a bundle holds only files and folders")


def extract_tar_gz(archive: Path, into: Path) -> Path:
    """Unpack a bundle's .tar.gz into the empty folder `into`, refusing any member that is not a
    regular file or folder or whose name leads out of it; returns the one top folder."""
    try:
        with tarfile.open(archive, "r:gz") as tar:
            members = tar.getmembers()
            for member in members:
                if not (member.isfile() or member.isdir()) or not confined_name(member.name):
                    raise VerificationError(
                        f"{archive}: member {member.name!r} is not a plain file or folder inside the archive"
                    )
            tops = {PurePosixPath(member.name).parts[0] for member in members}
            if len(tops) != 1:
                raise VerificationError(f"{archive}: holds {len(tops)} top folders, a bundle archive one")
            tar.extractall(into, members=members, filter="data")
    except (tarfile.TarError, EOFError, OSError) as error:
        raise VerificationError(f"{archive}: not a readable .tar.gz ({error})") from None
    return into / tops.pop()


def write_public(path: Path, data: bytes) -> None:
    """Write atomically, with the mode the user's umask gives a new file."""
    atomic_write_bytes(path, data)


def deterministic_tar_gz(root: Path, out: Path, top: str) -> str:
    """Pack the files below `root` under the folder name `top`; returns the sha256."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in tree_files(root):
            path = root / name
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = path.stat().st_size
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mode = 0o755 if path.stat().st_mode & 0o100 else 0o644
            with path.open("rb") as handle:
                tar.addfile(info, handle)
    packed = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=packed, mtime=0, compresslevel=9) as zipped:
        zipped.write(raw.getvalue())
    data = packed.getvalue()
    write_public(out, data)
    return sha256_bytes(data)


ZIP_CHUNK = 1024 * 1024


def read_zip_member(
    archive: zipfile.ZipFile, name: str, cap: int, source: str | os.PathLike[str], hint: str
) -> bytearray:
    """A zip member's bytes, never more than `cap` of them in memory: a member whose declared size
    is over the cap is refused before any of it is inflated; any other is inflated in chunks and
    refused as soon as more than `cap` bytes come out. (zipfile itself stops at the declared size
    and then fails the CRC, so a header that understates a bomb is refused too, as a bad archive.)
    The error names the archive (`source`) and the member; `hint` says how to raise the cap."""
    info = archive.getinfo(name)
    if info.file_size > cap:
        raise InputError(
            f"member {name} declares {info.file_size} bytes, over the cap of {cap}", path=source, hint=hint
        )
    data = bytearray()
    with archive.open(info) as member:
        while chunk := member.read(min(ZIP_CHUNK, cap + 1 - len(data))):
            data += chunk
            if len(data) > cap:
                raise InputError(f"member {name} inflates to more than {cap} bytes", path=source, hint=hint)
    return data
