"""Deterministic archives and checksum lists: same files, same bytes.

A .tar.gz made here depends only on the files' relative paths and contents: entries are sorted,
every mtime is 0, owners are root/root with no names, modes are 0644 (0755 for executables), and
the gzip header carries no file name and mtime 0.
"""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

from ifaudit.io.canonical import atomic_write_bytes, sha256_bytes, sha256_file


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


def parse_checksums(data: bytes) -> dict[str, str]:
    listed: dict[str, str] = {}
    for line in data.decode("utf-8").splitlines():
        digest, _, name = line.partition("  ")
        listed[name] = digest
    return listed


def write_public(path: Path, data: bytes) -> None:
    """Write atomically and readable by all (the atomic writer's temporary file is private)."""
    atomic_write_bytes(path, data)
    path.chmod(0o644)


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
