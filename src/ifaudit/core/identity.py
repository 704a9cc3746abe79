"""Who graded: one value type, built here and nowhere else, written as the same four JSON fields
every output has always carried (`kind`, `name`, `upstream`, `version`)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class GraderKind(enum.Enum):
    UPSTREAM = "upstream"  # the pinned upstream files, verified byte for byte
    STAND_IN = "stand-in"  # the labelled registry stand-in (never satisfies a request for upstream)
    OWN = "ifaudit"  # our own checkers, for tasks with no upstream grader to pin
    JUDGE = "judge"  # an LLM judge's answers, replayed from the recorded store
    IMPORTED = "imported"  # verdicts imported with the responses

    @property
    def judged(self) -> bool:
        """Verdicts come from a judge, not from checkers a canary can regrade."""
        return self in (GraderKind.JUDGE, GraderKind.IMPORTED)


# The --grader choices for Google's registry (GraderKind values, as the command line spells them).
GRADER_CHOICES = (GraderKind.UPSTREAM.value, GraderKind.STAND_IN.value)


@dataclass(frozen=True)
class GraderIdentity:
    kind: GraderKind
    name: str
    version: str  # the pinned commit for upstream, a package or ifaudit version, a judge's settings
    # A judge's protocol: its name and, for InFoBench's reference, the pinned script it reads.
    protocol: Mapping[str, Any] | None = None

    @property
    def upstream(self) -> bool:
        return self.kind is GraderKind.UPSTREAM

    @property
    def commit(self) -> str | None:
        """The pinned upstream commit, where there is one."""
        return self.version if self.upstream else None

    def as_record(self) -> dict[str, Any]:
        record = {"kind": self.kind.value, "name": self.name, "upstream": self.upstream, "version": self.version}
        return record if self.protocol is None else {**record, "protocol": dict(self.protocol)}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> GraderIdentity:
        return cls(GraderKind(record["kind"]), record["name"], record["version"], record.get("protocol"))

    @classmethod
    def judge(cls, model: str, version: str, protocol: Mapping[str, Any]) -> GraderIdentity:
        return cls(GraderKind.JUDGE, model, version, protocol)

    @classmethod
    def imported(cls, file_name: str, sha256: str) -> GraderIdentity:
        return cls(GraderKind.IMPORTED, file_name, sha256[:16])


# A judged task's canary environment: no checkers; the judge is part of each grade's identity.
RECORDED_JUDGE = GraderIdentity(GraderKind.JUDGE, "recorded judge", "-")
