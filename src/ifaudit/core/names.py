"""What a run may be called. A run's name becomes a folder under `results/` and a Snakemake
wildcard, so it must be one plain path component that cannot be read as anything else: not `..`,
not an option (`-rf`, `--help`), not a name the results layout already uses, no line break."""

from __future__ import annotations

import re

# Folders and files directly under results/ that are not runs (the results layout's own names).
RESULTS_LAYOUT_NAMES = frozenset(
    {
        "canary",
        "comparisons",
        "prompts",
        "plots",
        "html",
        "paper",
        "generations",
        "judgements",
        "report.md",
        "report.html",
        "metrics.csv",
        "comparisons.csv",
        "breakdown.csv",
        "tables.json",
        "manifest.json",
        "report.digest.md",
    }
)
MAX_RUN_NAME = 64
_RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
RUN_NAME_RULE = (
    f"a run name is 1 to {MAX_RUN_NAME} letters, digits, '_', '-' or '.', starting with a letter or digit, "
    "and not a name results/ uses for itself"
)


def run_name_problem(name: object) -> str | None:
    """Why `name` cannot name a run, in words, or None when it can."""
    if not isinstance(name, str) or not _RUN_NAME.fullmatch(name):
        return f"{name!r} is not a valid run name: {RUN_NAME_RULE}"
    if len(name) > MAX_RUN_NAME:
        return f"{name[:20]!r}… is {len(name)} characters long: {RUN_NAME_RULE}"
    if name.lower() in RESULTS_LAYOUT_NAMES:
        return f"{name!r} is a name results/ uses for itself: {RUN_NAME_RULE}"
    return None
