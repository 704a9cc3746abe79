"""Grading passes: shards of one pass, and the check that two passes agree (which merges them).

Shards are contiguous blocks of the canonical response order, so merging them in shard order
gives exactly the bytes one unsharded pass writes, whatever the shard count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ifaudit.io.canonical import all_or_nothing, atomic_write_bytes, sha256_bytes, write_json
from ifaudit.core import bounds
from ifaudit.core.errors import InputError, VerificationError

T = TypeVar("T")


@dataclass(frozen=True)
class PassOutputs:
    """What a verified pair of passes leaves: each pass merged, the grades, the check's record."""

    first: Path
    second: Path
    grades: Path
    record: Path


def parse_shard(spec: str) -> tuple[int, int]:
    """'2/8' -> (2, 8): the third of eight shards (0-based index); COUNT within bounds.SHARDS."""
    parts = spec.split("/")
    if len(parts) != 2 or not all(part.isascii() and part.isdigit() for part in parts):
        raise InputError(f"shard {spec!r} is not INDEX/COUNT, two integers in the digits 0-9", field="shard")
    try:
        count = int(bounds.SHARDS.parse(parts[1]))
    except ValueError as error:
        raise InputError(f"shard {spec!r}: its COUNT {error}", field="shard") from None
    index = int(parts[0])
    if not 0 <= index < count:
        raise InputError(f"shard index {index} is outside 0..{count - 1}", field="shard")
    return index, count


def shard_slice(items: Sequence[T], index: int, count: int) -> Sequence[T]:
    start, stop = len(items) * index // count, len(items) * (index + 1) // count
    return items[start:stop]


def _first_difference(a: bytes, b: bytes) -> int:
    """The 1-based line where two passes' bytes first differ."""
    lines_a, lines_b = a.split(b"\n"), b.split(b"\n")
    return next(
        (i for i, (x, y) in enumerate(zip(lines_a, lines_b), start=1) if x != y),
        min(len(lines_a), len(lines_b)) + 1,
    )


def _named(shards: Sequence[Path]) -> str:
    return str(shards[0]) if len(shards) == 1 else f"{shards[0]} and {len(shards) - 1} more shards"


def verify_passes(first: Sequence[Path], second: Sequence[Path], outs: PassOutputs) -> str:
    """Merge each pass's shards (in shard order) and keep the grades only if the two passes are
    byte-identical; otherwise name the first difference and write nothing."""
    a = b"".join(path.read_bytes() for path in first)
    b = b"".join(path.read_bytes() for path in second)
    if a != b:
        raise VerificationError(
            f"grading passes differ: {_named(first)} (sha256 {sha256_bytes(a)}) and {_named(second)} "
            f"(sha256 {sha256_bytes(b)}) first differ at line {_first_difference(a, b)}; these grades do not count"
        )
    digest = sha256_bytes(a)
    with all_or_nothing():
        for path in (outs.first, outs.second, outs.grades):
            atomic_write_bytes(path, a)
        write_json(
            outs.record,
            {
                "identical": True,
                "passes": {outs.first.name: digest, outs.second.name: digest},
                "records": a.count(b"\n"),
                "sha256": digest,
            },
        )
    return digest
