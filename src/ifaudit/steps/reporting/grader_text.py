"""Who graded a run, in words: the one sentence per kind of grader that the report's disclosures
and the paper's artifact appendix (each in its own wording) are written from."""

from __future__ import annotations

from ifaudit.core.identity import GraderIdentity, GraderKind
from ifaudit.io.formats.escape import markdown, markdown_code


def grader_sentence(grader: GraderIdentity | None, *, paper: bool = False) -> str:
    """Who graded: as the report's disclosures say it, or (`paper`) as the paper's artifact
    appendix states it, the pin and its files named and every name set as code. One branch per
    kind of grader for both, so a kind is never described in one and missing from the other."""
    kind = grader.kind if grader else None
    name, version = (grader.name, grader.version) if grader else (None, None)
    protocol = (grader.protocol if grader else None) or {}
    if kind is GraderKind.UPSTREAM:
        if paper:
            return (
                f"Google's IFEval grader {markdown_code(name)}, pinned at commit `{version}` with the sha256 of "
                "each of its files (`vendor/google_ifeval/pin.toml`); its bytes are verified before every run"
            )
        return "the pinned upstream grader"
    if kind is GraderKind.STAND_IN:
        if paper:
            return f"the registry stand-in {markdown_code(f'{name}=={version}')} (NOT the pinned upstream grader)"
        return f"the registry stand-in {name}=={version}, not the pinned upstream grader"
    if kind is GraderKind.JUDGE:
        if paper:
            return (
                f"the LLM judge {markdown_code(name)} ({markdown(version)}, protocol "
                f"{markdown_code(protocol.get('name', ''))}), replayed from its recorded store"
            )
        reference = protocol.get("reference")
        asked = (
            f"InFoBench's reference protocol, its instruction text read from the pinned `{reference['path']}` "
            f"at commit {reference['commit'][:7]}"
            if reference
            else f"the `{protocol.get('name')}` protocol"
        )
        return (
            f"the LLM judge {markdown_code(name)} ({markdown(version)}), asked by {asked}, every request "
            "and answer recorded in the judgement store and replayed for grading"
        )
    if kind is GraderKind.IMPORTED:
        ellipsis, judged = ("...", "not re-judged") if paper else ("…", "not re-judged here")
        return f"judge verdicts imported from {markdown_code(name)} (sha256 {version}{ellipsis}), {judged}"
    shown = markdown_code(name) if paper else name
    return f"ifaudit's own checkers ({shown} {version}; no upstream grader exists to pin)"
