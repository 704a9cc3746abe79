"""Who graded a run, in words: the one sentence per kind of grader that the report's disclosures
and the paper's artifact appendix (each in its own wording) are written from. Every name, commit,
repository and pin file in it comes from the run's credit (its task's declared upstream grader
joined with the identity its grades record, ifaudit.tasks.credit), never from a fixed sentence."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ifaudit.core.identity import GraderIdentity, GraderKind
from ifaudit.io.formats.escape import markdown, markdown_code
from ifaudit.tasks.credit import GraderCredit
from ifaudit.tasks.registry import get_task


def run_credit(task: str, grader: Mapping[str, Any] | None) -> GraderCredit | None:
    """The credit of a run of `task` whose summary records `grader` (None: nothing was graded)."""
    return get_task(task).credit(GraderIdentity.from_record(grader)) if grader else None


def _pinned(credit: GraderCredit, paper: bool) -> str:
    """Where the grader is pinned: its repository, commit and pin file."""
    commit = credit.commit or ""
    if paper:
        return (
            f"({credit.repository}), pinned at commit `{commit}` with the sha256 of each of its files "
            f"(`{credit.pin_file}`)"
        )
    return f"({credit.repository}) at commit {commit[:12]} (`{credit.pin_file}`)"


def grader_sentence(credit: GraderCredit | None, *, paper: bool = False) -> str:
    """Who graded: as the report's disclosures say it, or (`paper`) as the paper's artifact
    appendix states it, the pin and its files named and every name set as code. One branch per
    kind of grader for both, so a kind is never described in one and missing from the other."""
    if credit is None:
        return "no grader (no response was graded)"
    grader = credit.identity
    kind, name, version = grader.kind, grader.name, grader.version
    protocol = grader.protocol or {}
    if kind is GraderKind.UPSTREAM:
        if paper:
            return f"{credit.title} {markdown_code(name)} {_pinned(credit, paper)}; its bytes are verified before every run"
        return f"the pinned upstream grader, {credit.title} {markdown(name)} {_pinned(credit, paper)}"
    if kind is GraderKind.STAND_IN:
        if paper:
            replaced = f"; it stands in for {credit.stands_in_for}" if credit.stands_in_for else ""
            return f"{credit.title} {markdown_code(f'{name}=={version}')} (NOT the pinned upstream grader{replaced})"
        replaces = f" ({credit.stands_in_for})" if credit.stands_in_for else ""
        return f"{credit.title} {name}=={version}, not the pinned upstream grader{replaces}"
    if kind is GraderKind.JUDGE:
        reference = protocol.get("reference")
        if paper:
            asked = (
                f", its instruction read from `{reference['path']}` of {credit.repository} at commit "
                f"`{credit.commit}` (`{credit.pin_file}`)"
                if reference and credit.pinned
                else ""
            )
            return (
                f"{credit.title} {markdown_code(name)} ({markdown(version)}, protocol "
                f"{markdown_code(protocol.get('name', ''))}){asked}, replayed from its recorded store"
            )
        asked = (
            f"{credit.benchmark}'s reference protocol, its instruction text read from the pinned `{reference['path']}` "
            f"of {credit.repository} at commit {str(credit.commit)[:12]} (`{credit.pin_file}`)"
            if reference and credit.pinned
            else f"the `{protocol.get('name')}` protocol"
        )
        return (
            f"{credit.title} {markdown_code(name)} ({markdown(version)}), asked by {asked}, every request "
            "and answer recorded in the judgement store and replayed for grading"
        )
    if kind is GraderKind.IMPORTED:
        ellipsis, judged = ("...", "not re-judged") if paper else ("…", "not re-judged here")
        return f"{credit.title} from {markdown_code(name)} (sha256 {version}{ellipsis}), {judged}"
    shown = markdown_code(name) if paper else name
    return f"{credit.title} ({shown} {version}; no upstream grader exists to pin)"


def grader_words(credit: GraderCredit | None) -> str:
    """Who graded, in plain words on one line (no Markdown): as CITATION.cff's abstract says it."""
    if credit is None:
        return "no grader (no response was graded)"
    grader = credit.identity
    if grader.kind is GraderKind.UPSTREAM:
        return f"{credit.title} {grader.name} ({credit.repository}) at commit {credit.commit} ({credit.pin_file})"
    if grader.kind is GraderKind.STAND_IN:
        return f"{credit.title} {grader.name}=={grader.version} (not the pinned upstream grader)"
    if grader.kind is GraderKind.JUDGE:
        path = (grader.protocol or {}).get("reference", {}).get("path")
        pinned = (
            f", its instruction read from {path} of {credit.repository} at commit {credit.commit} ({credit.pin_file})"
            if credit.pinned
            else ""
        )
        return f"{credit.title} {grader.name} ({grader.version}){pinned}"
    if grader.kind is GraderKind.IMPORTED:
        return f"{credit.title} from {grader.name}"
    return f"{credit.title} ({grader.name} {grader.version})"
