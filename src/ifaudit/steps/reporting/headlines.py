"""One line per run: its headline figures and whether it counts, what `make run` ends with (`ifaudit
counted`, and the workflow when a run does not count), so the result is on the screen without
opening a file. Read from the report's own table (results/tables.json): the runs in the config's
order, first the task's headline metric (the one the benchmark is quoted by: IFBench's prompt-level
loose; the table marks it, so this command imports no task) with its interval, then the others in
the task's declared order; and, from the run's summary, how many prompts its responses left
unanswered (counted as failed) and which of its responses may not be answers
(ifaudit.core.suspect_responses)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ifaudit.core.names import run_name_problem
from ifaudit.steps.grading.counted import summary_file
from ifaudit.steps.grading.suspect_text import said
from ifaudit.steps.planning import plan

TABLES = Path(plan.report_file("tables.json")).name


def _points(value: float) -> str:
    return f"{100 * value:.2f}"


def headline(
    run: str,
    rows: Sequence[Mapping[str, Any]],
    unanswered: tuple[int, int] | None = None,
    suspect: Mapping[str, Any] | None = None,
) -> str:
    """`run: counted; prompt-level strict 77.08 [73.57, 80.59], instruction-level strict 83.69, ...
    (percent, 95 % interval)` from the run's rows of the metrics table: its task's headline metric
    first, with its interval, then the others in their order; `unanswered`, (prompts without a
    response, prompts), is said before the figures it lowers; `suspect`, the summary's responses
    that may not be answers, after them: "NOTE: 7 responses may not be answers: ...; of them 2
    pass ..." (graded as they are, and the run counts)."""
    rows = sorted(rows, key=lambda row: not row.get("headline"))  # stable: the others keep their order
    primary = rows[0]
    figures = [
        f"{primary['title']} {_points(primary['value'])} [{_points(primary['ci_low'])}, {_points(primary['ci_high'])}]"
    ]
    figures += [f"{row['title']} {_points(row['value'])}" for row in rows[1:]]
    state = "counted" if primary["counted"] else "does not count (below)"
    if unanswered is not None and unanswered[0]:
        state += f"; {unanswered[0]} of {unanswered[1]} prompts have no response and count as failed"
    level = round(100 * float(primary["level"]))
    notes = "".join(f"; NOTE: {sentence}" for sentence in said(suspect, str))
    return f"{run}: {state}; {', '.join(figures)} (percent, {level} % interval){notes}"


def _summary(results: Path, run: str) -> dict[str, Any] | None:
    """The run's summary, if it has one that reads."""
    if run_name_problem(run) is not None:
        return None
    try:
        summary = json.loads(summary_file(results, run).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return summary if isinstance(summary, dict) else None


def _unanswered(summary: Mapping[str, Any] | None) -> tuple[int, int] | None:
    """(prompts without a response, prompts) from the run's summary, if it has one: a partial
    response file counts its missing prompts as failed, which the figures alone do not show."""
    try:
        return (len(summary["missing_prompts"]), int(summary["prompts"])) if summary is not None else None
    except (KeyError, TypeError, ValueError):
        return None


def _suspect(summary: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The summary's responses that may not be answers; None where it has none it can say."""
    found = summary.get("suspect_responses") if summary is not None else None
    try:
        said(found, str)
    except (KeyError, TypeError, AttributeError):
        return None
    return found


def headline_lines(results: Path) -> list[str]:
    """One headline per run of the report in `results`; none before there is a report."""
    path = results / TABLES
    if not path.is_file() or _unreadable(path):  # said by `said_by_counted`
        return []
    by_run: dict[str, list[dict[str, Any]]] = {}
    for row in json.loads(path.read_text(encoding="utf-8"))["metrics"]:
        by_run.setdefault(row["run"], []).append(row)
    summaries = {run: _summary(results, run) for run in by_run}
    return [headline(run, rows, _unanswered(summaries[run]), _suspect(summaries[run])) for run, rows in by_run.items()]


def _unreadable(path: Path) -> str | None:
    """Why the report's table cannot give the headlines (cut short, edited by hand), or None."""
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))["metrics"]
        for row in rows:
            headline(str(row["run"]), [row])
    except OSError as error:
        return error.strerror or "cannot be read"
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as error:
        return f"not the report's table ({type(error).__name__}: {error})"
    return None


def said_by_counted(results: Path) -> tuple[list[str], list[str]]:
    """What `ifaudit counted` says of the project whose results are in `results`: each run's
    headline figures, and one line per reason a result does not count now (a file whose bytes
    changed since the DAG recorded them, a recorded run that does not count)."""
    from ifaudit.steps.grading.counted import recorded_runs_not_counted
    from ifaudit.steps.planning.content import changed_since_recorded

    changed = [
        f"{line}: what was made from it does not count until the DAG runs again"
        for line in changed_since_recorded(results.parent)
    ]
    tables = results / TABLES
    why = _unreadable(tables) if tables.is_file() else None
    if why and not any(line.startswith(f"{plan.report_file(TABLES)}:") for line in changed):
        changed.append(f"{plan.report_file(TABLES)}: {why}: no run counts until the DAG makes it again")
    return headline_lines(results), changed + recorded_runs_not_counted(results)
