"""Which copy of the grader a harness graded with, identified from the package version its log
names: where the copy lives in the package, and the three ways the copies read here differ from
the pinned upstream grader's run (how `random` and langdetect are seeded, which kwargs are kept,
what is removed from a response before grading). Read from each package's own source at that
version (wheels from PyPI); a version not listed is said to be unread, not guessed at.

The seeding decides the `substituted_setting` rows: upstream's letter_frequency checker draws a
random letter when the prompt's letter is not one (prompts 1122 and 1129), so the harness's verdict
there is its draw, fixed by where its process seeded `random` (or by nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class GraderCopy:
    module: str  # the copy's place in the package
    random: str  # how Python's `random` is seeded before the checkers draw
    langdetect: str  # how langdetect is seeded
    kwargs: str  # which of a prompt's kwargs reach the checker
    reasoning: str  # what is removed from a response before it is graded
    # instruction id -> how the copy's checker differs from upstream's (both pinned IFBench
    # versions), read in the package's source; only checkers whose code differs
    modified_checkers: Mapping[str, str] = field(default_factory=dict)


_LM_EVAL = GraderCopy(
    module="lm_eval/tasks/ifeval/instructions*.py (a refactored copy)",
    random="seeded once per process (the CLI's --seed, default 0)",
    langdetect="not seeded",
    kwargs="None values dropped",
    reasoning="none by default",
)

COPIES: dict[tuple[str, str], GraderCopy] = {
    ("lm-evaluation-harness", "0.4.13"): _LM_EVAL,
    ("lighteval", "0.13.0"): GraderCopy(
        module="lighteval/tasks/tasks/ifeval/instructions*.py, ifbench/ (its own copies)",
        random="seeded once per process: random.seed(1234) in Pipeline._init_random_seeds",
        langdetect="not seeded",
        kwargs="falsy values dropped (`if v`: 0 and empty strings too)",
        reasoning="closed <think>…</think> blocks removed (remove_reasoning_tags, on by default); an unclosed one is kept",
    ),
    ("evalscope", "1.14.1"): GraderCopy(
        module="evalscope/benchmarks/ifeval/, ifbench/ (its own copies)",
        random="seeded once per process: random.seed(TaskConfig.seed, default 42) in run_task",
        langdetect="seeded 0 before each detection (its copy of instructions.py)",
        kwargs="falsy values dropped (`if v`: 0 and empty strings too)",
        reasoning="its filters and extract_answer (the text it graded is logged as the extracted prediction)",
        modified_checkers={
            "ratio:overlap": (
                "evalscope 1.14.1's IFBench copy counts word trigrams (nltk.word_tokenize) where upstream counts "
                "character trigrams"
            )
        },
    ),
    ("opencompass", "0.5.4"): GraderCopy(
        module="opencompass/datasets/IFEval/, IFBench/ (its own copies)",
        random="never seeded: each process draws from the OS's entropy",
        langdetect="not seeded",
        kwargs="None values dropped",
        reasoning="none in the IFEval evaluator",
        modified_checkers={
            "format:emoji": (
                "opencompass 0.5.4's IFBench copy imports `emoji` only if installed, and opencompass does not "
                "depend on it: without it the checker raises, which its evaluation_lib counts as not followed"
            )
        },
    ),
}


def grader_copy(tool: dict[str, Any]) -> dict[str, Any]:
    """The copy a log's harness graded with, for claims.json: the package at the version its log
    names, and how that copy is known to behave, or that this version has not been read."""
    name, version = tool.get("name"), tool.get("version")
    found = COPIES.get((str(name), str(version)))
    package = f"{name}=={version}" if version else str(name)
    if found is None:
        return {"package": package, "read": False}
    return {"package": package, "read": True, **asdict(found), "modified_checkers": dict(found.modified_checkers)}


def modified_checkers(tool: dict[str, Any]) -> dict[str, str]:
    """The checkers whose code the harness's copy changed, by instruction id (none where unread)."""
    found = COPIES.get((str(tool.get("name")), str(tool.get("version"))))
    return dict(found.modified_checkers) if found else {}
