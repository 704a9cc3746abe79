"""Which runs do not count, read from their summaries: what the DAG says last when it ran (the
workflow's onsuccess hook, for the runs it planned) and `ifaudit counted` says when it had
nothing to do (for the runs of the workflow's record). A light module: Snakemake imports it."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from ifaudit.steps.planning import plan


def summary_file(results: Path, run: str) -> Path:
    """The run's summary in the results folder `results` (wherever it is)."""
    return results / Path(plan.run_file(run, "summary.json")).relative_to(plan.RESULTS)


def not_counted(results: Path, runs: Iterable[str]) -> list[str]:
    """'run X NOT COUNTED: reasons' for each of `runs`, in order, whose summary in `results` does
    not count; a run without a summary is named too."""
    lines = []
    for run in runs:
        path = summary_file(results, run)
        if not path.is_file():
            lines.append(f"run {run} NOT COUNTED: no summary (its jobs have not finished)")
            continue
        try:
            summary = json.loads(path.read_text(encoding="utf-8"))
            if summary["counted"] is not True:
                lines.append(f"run {run} NOT COUNTED: {'; '.join(map(str, summary['not_counted_because']))}")
        except (OSError, ValueError, KeyError, TypeError) as error:  # cut short or edited by hand
            lines.append(f"run {run} NOT COUNTED: {plan.run_file(run, 'summary.json')} cannot be read ({error})")
    return lines


def recorded_runs_not_counted(results: Path) -> list[str]:
    """`not_counted` for the runs the workflow's record (results/MANIFEST.json) names, in config
    order; none without a record."""
    record = results / Path(plan.report_file("MANIFEST.json")).name
    if not record.is_file():
        return []
    try:
        runs = [str(run) for run in json.loads(record.read_text(encoding="utf-8"))["runs"]]
    except (OSError, ValueError, KeyError, TypeError) as error:  # cut short or edited by hand
        return [f"{plan.report_file('MANIFEST.json')} cannot be read ({error}): run the DAG again"]
    return not_counted(results, runs)
