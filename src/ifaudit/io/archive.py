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
import shutil
import tarfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from ifaudit.core.errors import InputError, VerificationError
from ifaudit.io.canonical import atomic_write_bytes, sha256_bytes, sha256_file
from ifaudit.io.confine import MAX_ENTRIES, name_problem, walk

_SHA256 = re.compile(r"[0-9a-f]{64}")


def tree_files(root: Path, exclude: frozenset[str] = frozenset()) -> list[str]:
    """Every file below `root` (a link to a file counts; a linked folder is not entered), as
    sorted POSIX paths relative to it, minus `exclude`; listed within confine.walk's caps."""
    return sorted(name for name, entry in walk(root) if entry.is_file() and name not in exclude)


def checksum_lines(root: Path, files: list[str]) -> bytes:
    """`sha256  path` lines (sha256sum's format, so `sha256sum -c` checks a bundle too)."""
    return "".join(f"{sha256_file(root / name)}  {name}\n" for name in files).encode()


def parse_checksums(data: bytes, source: str = "CHECKSUMS.sha256") -> dict[str, str]:
    """The `sha256  path` lines of a checksum list; a line whose path could lead out of the
    folder (absolute, `..`) or whose digest is not a sha256 is refused, naming the line, and so is
    a path listed twice (`sha256sum -c` fails a list whose entries for one file conflict, and a
    repeat is no list this writer made)."""
    listed: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        digest, _, name = line.partition("  ")
        if not _SHA256.fullmatch(digest) or name_problem(name) is not None:
            raise VerificationError(f"{source}:{number}: {line[:200]!r} is not a sha256 and a path inside the bundle")
        if name in listed:
            how = "with another sha256" if listed[name] != digest else "with the same sha256"
            raise VerificationError(f"{source}:{number}: {name!r} is listed again (line {lines[name]}), {how}")
        listed[name], lines[name] = digest, number
    return listed


def extract_tar_gz(archive: Path, into: Path) -> Path:
    """Unpack a bundle's .tar.gz into the empty folder `into`, refusing any member that is not a
    regular file or folder or whose name leads out of it (confine.name_problem), and an archive of
    more than confine.MAX_ENTRIES members (read one by one: a hostile one could hold millions);
    returns the one top folder."""
    try:
        with tarfile.open(archive, "r:gz") as tar:
            members: list[tarfile.TarInfo] = []
            for member in tar:
                if not (member.isfile() or member.isdir()) or name_problem(member.name.removesuffix("/")):
                    raise VerificationError(
                        f"{archive}: member {member.name!r} is not a plain file or folder inside the archive"
                    )
                if len(members) == MAX_ENTRIES:
                    raise VerificationError(f"{archive}: holds more than {MAX_ENTRIES} members; not unpacked")
                members.append(member)
            tops = {PurePosixPath(member.name).parts[0] for member in members}
            if len(tops) != 1:
                raise VerificationError(f"{archive}: holds {len(tops)} top folders, a bundle archive one")
            declared, free = sum(member.size for member in members), shutil.disk_usage(into).free
            if declared > free:  # refused before a byte is unpacked: a few MB of gzip can declare terabytes
                raise VerificationError(f"{archive}: unpacks to {declared} bytes, more than the {free} free in {into}")
            try:
                tar.extractall(into, members=members, filter="data")
            except OSError as error:  # a full disk, a file-size limit (`ulimit -f`)
                raise VerificationError(
                    f"{archive}: cannot be unpacked into {into}: {error.strerror or error}"
                ) from None
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


# zipfile inflates these in bounded steps; it decompresses a bzip2 or LZMA member's whole read
# at once (a few KB of bzip2 can hold gigabytes), so those are refused.
BOUNDED_METHODS = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED})


def check_zip_layout(archive: zipfile.ZipFile, size: int, source: str | os.PathLike[str]) -> None:
    """Refuse a zip whose central directory places a member outside the file (`size` bytes): a
    central directory offset that lies (0xFFFFFFF0) gives every member a negative offset, which
    zipfile would seek to (an OSError, not a message), and a member said to run past the end of
    the file is truncated or forged. Checked before any member is read."""
    for info in archive.infolist():
        end = info.header_offset + 30 + info.compress_size  # a local header is 30 bytes and a name
        if info.header_offset < 0 or end > size:
            raise InputError(
                f"member {info.orig_filename!r} is placed at bytes {info.header_offset} to {end}, outside the "
                f"archive's {size} bytes: its central directory is damaged or forged",
                path=source,
            )


def zip_member(archive: zipfile.ZipFile, name: str, source: str | os.PathLike[str]) -> zipfile.ZipInfo:
    """A member's entry, refused when it is encrypted (zipfile would raise for want of a password)."""
    info = archive.getinfo(name)
    if info.flag_bits & 0x1:
        raise InputError(f"member {name} is encrypted; it cannot be read", path=source)
    return info


def read_zip_member(
    archive: zipfile.ZipFile, name: str, cap: int, source: str | os.PathLike[str], hint: str
) -> bytearray:
    """A zip member's bytes, never more than `cap` of them in memory: a member whose declared size
    is over the cap is refused before any of it is inflated; any other is inflated in chunks and
    refused as soon as more than `cap` bytes come out. (zipfile itself stops at the declared size
    and then fails the CRC, so a header that understates a bomb is refused too, as a bad archive.)
    A member compressed otherwise than stored or deflated (BOUNDED_METHODS) is refused unread with
    NotImplementedError, as zipfile refuses a method it cannot read at all. The error names the archive (`source`) and the member; `hint` says how to raise the cap."""
    info = zip_member(archive, name, source)
    if info.file_size > cap:  # first: whatever its method, a member declared too large is never read
        raise InputError(
            f"member {name} declares {info.file_size} bytes, over the cap of {cap}", path=source, hint=hint
        )
    if info.compress_type not in BOUNDED_METHODS:
        raise NotImplementedError(f"member {name}: zip method {info.compress_type}, not inflated in bounded memory")
    data = bytearray()
    try:
        with archive.open(info) as member:
            while chunk := member.read(min(ZIP_CHUNK, cap + 1 - len(data))):
                data += chunk
                if len(data) > cap:
                    raise InputError(f"member {name} inflates to more than {cap} bytes", path=source, hint=hint)
    except zlib.error as error:  # deflated bytes that are not deflate (a damaged or forged member)
        raise InputError(f"member {name} does not inflate ({error}); the archive is damaged", path=source) from None
    return data
