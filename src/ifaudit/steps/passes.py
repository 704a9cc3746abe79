"""Grading passes: shards of one pass, their merge, and the check that two passes agree.

Shards are contiguous blocks of the canonical response order, so merging them in shard order
gives exactly the bytes one unsharded pass writes, whatever the shard count.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from ifaudit.io.canonical import all_or_nothing, atomic_write_bytes, sha256_bytes, write_json
from ifaudit.core.errors import InputError, VerificationError

T = TypeVar("T")


def parse_shard(spec: str) -> tuple[int, int]:
    """'2/8' -> (2, 8): the third of eight shards (0-based index)."""
    try:
        index, count = (int(part) for part in spec.split("/"))
    except ValueError:
        raise InputError(f"shard {spec!r} is not INDEX/COUNT", field="shard") from None
    if not 0 <= index < count:
        raise InputError(f"shard index {index} is outside 0..{count - 1}", field="shard")
    return index, count


def shard_slice(items: Sequence[T], index: int, count: int) -> Sequence[T]:
    start, stop = len(items) * index // count, len(items) * (index + 1) // count
    return items[start:stop]


def merge(shards: Sequence[Path], out: Path) -> str:
    data = b"".join(path.read_bytes() for path in shards)
    atomic_write_bytes(out, data)
    return sha256_bytes(data)


def verify_passes(first: Path, second: Path, out: Path, record: Path) -> str:
    """Copy `first` to `out` only if `second` is byte-identical; otherwise name the first difference."""
    a, b = first.read_bytes(), second.read_bytes()
    if a != b:
        lines_a, lines_b = a.split(b"\n"), b.split(b"\n")
        line = next(
            (i for i, (x, y) in enumerate(zip(lines_a, lines_b), start=1) if x != y),
            min(len(lines_a), len(lines_b)) + 1,
        )
        raise VerificationError(
            f"grading passes differ: {first} (sha256 {sha256_bytes(a)}) and {second} (sha256 {sha256_bytes(b)}) "
            f"first differ at line {line}; these grades do not count"
        )
    digest = sha256_bytes(a)
    with all_or_nothing():
        atomic_write_bytes(out, a)
        write_json(
            record,
            {
                "identical": True,
                "passes": {first.name: digest, second.name: digest},
                "records": a.count(b"\n"),
                "sha256": digest,
            },
        )
    return digest
