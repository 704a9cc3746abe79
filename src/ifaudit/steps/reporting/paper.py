"""`results/paper/`: what goes from the audit into a paper, written by the report step beside the
report from the same tables.

    paper/runs_<task>.tex     one table per task and prompt set: each run's metrics, value, [CI]
                              and counts (runs_<task>--<prompt set>.tex where a task's runs
                              are of several prompt sets)
    paper/comparisons.tex     the paired comparisons
    paper/claims_<run>.tex    per imported run: claimed vs audited
    paper/artifact.md         the artifact appendix's text (what was audited, grader, how to verify)

Each table is a booktabs `tabularx` as wide as `\\linewidth`, in long form (paper_latex.long_table),
so it fits a column of a two-column paper.

The names depend only on the plan (its tasks, their prompt sets and its imported runs), so the workflow can declare them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ifaudit.io.canonical import atomic_write_bytes
from ifaudit.io.formats.table import Table
from ifaudit.steps.reporting.paper_artifact import render_artifact
from ifaudit.steps.reporting.paper_latex import claims_latex, comparisons_latex, runs_latex
from ifaudit.steps.planning.plan import paper_files, runs_tables
from ifaudit.steps.reporting.leaderboard import metric_titles


def _load(path: str | Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def render_paper(plan: dict[str, Any], metrics: Table, comparisons: Table) -> dict[str, str]:
    """Each file of `paper/` by its name (paper_files' order) and its text."""
    level = int(round(100 * metrics.rows[0]["level"]))
    titles = metric_titles(metrics)
    claims = {run: _load(path) for run, path in plan.get("claims", {}).items()}
    summaries = {run: _load(spec["summary"]) for run, spec in plan["runs"].items()}
    texts = {name: runs_latex(metrics, task, prompts) for (task, prompts), name in runs_tables(plan).items()}
    texts["paper/comparisons.tex"] = comparisons_latex(comparisons, titles, level)
    texts |= {f"paper/claims_{run}.tex": claims_latex(run, found, level) for run, found in claims.items()}
    texts["paper/artifact.md"] = render_artifact(summaries, metrics, claims)
    return {name: texts[name] for name in paper_files(plan)}


def write_paper(plan: dict[str, Any], metrics: Table, comparisons: Table, out_dir: Path) -> None:
    for name, text in render_paper(plan, metrics, comparisons).items():
        atomic_write_bytes(out_dir / name, text.encode("utf-8"))
