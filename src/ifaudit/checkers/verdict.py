"""A gate's verdict: passed, or the first rule that failed."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GateVerdict:
    passed: bool
    rule: str | None = None  # the first rule that failed

    def as_record(self) -> dict[str, object]:
        return {"passed": self.passed, "rule": self.rule}


PASS = GateVerdict(True)
