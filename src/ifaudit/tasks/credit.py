"""Who graded a run, as every output credits it: the task's own upstream grader (whose it is, its
repository, its pin file), declared once beside the task, joined with the identity its grades
record (kind, name, commit or version). The report, the paper's artifact text and CITATION.cff
write their sentences from a GraderCredit, never from a fixed sentence, so a run is credited to
the grader that graded it and to no other (an IFBench run is not Google's grader's)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ifaudit.core.errors import InputError
from ifaudit.core.identity import GraderIdentity, GraderKind


@dataclass(frozen=True)
class UpstreamGrader:
    """A pinned upstream grader (or, for a judged task, the pinned script its judge is asked by) as
    outputs credit it. `name` and `repository` are the pin file's own (a test holds them to it)."""

    title: str  # whose it is, in words: "Google's IFEval grader"
    name: str  # the pin's `name`: what the grades it makes record
    repository: str  # the pin's `repository`
    pin_file: str  # the pin, relative to the project


GOOGLE_IFEVAL = UpstreamGrader(
    "Google's IFEval grader",
    "google-research/instruction_following_eval",
    "https://github.com/google-research/google-research",
    "vendor/google_ifeval/pin.toml",
)


@dataclass(frozen=True)
class GraderCredit:
    """What graded a run of `benchmark`, everything an output may say of it: `identity` as its
    grades record it, `title` in words, and where it is pinned (none for the stand-in, our own
    checkers, or a judge asked by our own protocol)."""

    identity: GraderIdentity
    benchmark: str
    title: str
    repository: str | None = None
    commit: str | None = None
    pin_file: str | None = None
    stands_in_for: str | None = None  # the stand-in's: the title of the pinned grader it replaces

    @property
    def pinned(self) -> bool:
        return self.pin_file is not None


def grader_credit(
    task: str,
    benchmark: str,
    kinds: Sequence[GraderKind],
    upstream: UpstreamGrader | None,
    grader: GraderIdentity,
) -> GraderCredit:
    """The credit of `grader` for a run of `task` (of `benchmark`, graded by one of `kinds`, its
    pinned upstream piece `upstream`); a grader the task cannot have is refused, naming both."""
    refused = InputError(
        f"task {task}'s runs are not graded by {grader.kind.value} {grader.name!r}"
        + (f"; its pinned grader is {upstream.name!r} ({upstream.pin_file})" if upstream else ""),
        field="grader",
    )
    if grader.kind not in kinds:
        raise refused
    if grader.kind is GraderKind.UPSTREAM:
        if upstream is None or grader.name != upstream.name:
            raise refused
        return GraderCredit(grader, benchmark, upstream.title, upstream.repository, grader.version, upstream.pin_file)
    if grader.kind is GraderKind.STAND_IN:
        return GraderCredit(
            grader, benchmark, "the registry stand-in", stands_in_for=upstream.title if upstream else None
        )
    if grader.kind is GraderKind.OWN:
        return GraderCredit(grader, benchmark, "ifaudit's own checkers")
    if grader.kind is GraderKind.IMPORTED:
        return GraderCredit(grader, benchmark, "judge verdicts imported")
    reference = (grader.protocol or {}).get("reference")
    if reference and upstream is not None:
        return GraderCredit(
            grader, benchmark, "the LLM judge", reference.get("repository"), reference.get("commit"), upstream.pin_file
        )
    return GraderCredit(grader, benchmark, "the LLM judge")
