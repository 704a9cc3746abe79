"""Content, not clocks: what the audit reports is of the bytes on disk now.

The workflow records, when a DAG succeeds, the sha256 of every file under results/ and resources/,
of the user's own dataset files (`path:`) and of the recorded stores (ifaudit.io.ledger). At the
next start, before Snakemake compares modification times, every file whose bytes changed since is
made to be redone:

- a file the DAG made (results/, resources/) is removed, so the job that made it runs again;
- every run whose results were made from the file (a run's own file, a dataset it reads, whether
  fetched or the user's own, its task's environment record, an entry of the store its responses
  or verdicts are replayed from) has its folder under results/ removed, so it is graded again;
- the report is made again (it reads almost every file);
- the user's own files and the stores are never removed or touched (a store holds what a paid
  endpoint answered).

A result the DAG made that is gone (a run's grades.jsonl deleted by hand, its summary kept) is such
a change too: Snakemake makes a missing file again only when a job that reads it must run, and none
must while the files made from it are there. A user's own file, a store's entry or a file fetched
into resources/ that is gone is left to the job that reads it (a store's entry is asked again, a
fetched file fetched again and checked against its pin, only when a job needs it).

`ifaudit counted` compares the same ledger and names every changed file, so a result whose inputs
changed never counts, whichever times they carry.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
from dataclasses import replace
from pathlib import Path

from typing import TYPE_CHECKING

from ifaudit.core.terminal import printable
from ifaudit.io import ledger
from ifaudit.steps.planning import plan

if TYPE_CHECKING:  # `ifaudit counted` reads the ledger without the plan's imports
    from ifaudit.steps.planning.jobs import RunPlan

# What the DAG makes; the HTML rendering of the report is made from report.md by Snakemake's
# report, outside any job, and read by nothing.
PRODUCTS = (plan.RESULTS, plan.RESOURCES)
UNTRACKED = frozenset({plan.report_file("report.html")})


def _stores(jobs: RunPlan) -> list[str]:
    return sorted({os.path.normpath(jobs.generation_store), os.path.normpath(jobs.judgement_store)})


def _sources(jobs: RunPlan) -> dict[str, list[str]]:
    """The user's own dataset files, each with the datasets fetched from it."""
    sources: dict[str, list[str]] = {}
    for name, spec in jobs.datasets.items():
        if isinstance(spec.get("path"), str):
            sources.setdefault(os.path.normpath(spec["path"]), []).append(name)
    return sources


def _is_kept(jobs: RunPlan, path: str) -> bool:
    """A result the DAG made, whose absence is a change: under results/, the stores' entries and
    the writers' hidden temporaries aside. What it fetched into resources/ is a copy verified
    against its pin: one that is gone is fetched again, identical, when a job needs it, and the
    results made from it stand."""
    return (
        _inside(path, plan.RESULTS)
        and path not in UNTRACKED
        and not _in_store(jobs, path)
        and not os.path.basename(path).startswith(".")
    )


def _made(jobs: RunPlan) -> list[str]:
    """The files the DAG made, the stores' entries aside."""
    return [path for path in ledger.walk_files(PRODUCTS) if path not in UNTRACKED and not _in_store(jobs, path)]


def tracked_files(jobs: RunPlan) -> list[str]:
    """Every file the ledger records for this plan."""
    made = [path for path in ledger.walk_files(PRODUCTS) if path not in UNTRACKED]
    return sorted({*made, *_sources(jobs), *ledger.walk_files(_stores(jobs))})


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _runs_fed_by(jobs: RunPlan, changed: str) -> list[str]:
    """The runs whose results were made from `changed` (a path as the ledger records it)."""
    for store in _stores(jobs):
        if _inside(changed, store):
            is_generation = os.path.normpath(jobs.generation_store) == store
            return [run for run, spec in jobs.runs.items() if ("model" if is_generation else "judge") in spec]
    datasets = set(_sources(jobs).get(changed, []))
    datasets |= {name for name in jobs.datasets if changed in (plan.dataset_file(name), plan.dataset_record(name))}
    tasks = {task for task in {spec["task"] for spec in jobs.runs.values()} if changed == plan.environment_record(task)}
    return [
        run
        for run, spec in jobs.runs.items()
        if _inside(changed, plan.run_folder(run)) or datasets & set(jobs.run_datasets(run)) or spec["task"] in tasks
    ]


def _to_redo(jobs: RunPlan, changed: str) -> list[str]:
    """What to remove so that everything made from `changed` is made again: the file itself if the
    DAG made it (its copies if it is the user's own), the folder of every run it fed, and the report. Snakemake makes a missing file
    again only when a job that reads it runs, so removing a changed file in the middle of the DAG
    alone would leave the results after it as they are: the runs' folders go with it."""
    made = any(_inside(changed, folder) for folder in PRODUCTS) and not _in_store(jobs, changed)
    fetched = [
        path
        for name in _sources(jobs).get(changed, [])
        for path in (plan.dataset_file(name), plan.dataset_record(name))
    ]
    runs = [plan.run_folder(run) for run in _runs_fed_by(jobs, changed)]
    return [*([changed] if made else []), *fetched, *runs, plan.report_file("report.md")]


def _described(change: ledger.Change) -> str:
    now = "no longer a regular file" if change.now is None else f"sha256 {change.now}"
    return f"{printable(change.path)}: its bytes changed since the DAG last recorded them ({now}, recorded {change.recorded})"


def _lines(changes: list[ledger.Change]) -> list[str]:
    """One line per changed file, and one for all the files that are gone (`rm -r results/RUN`
    takes dozens at once): the first of them named, and how many."""
    gone = [change.path for change in changes if change.gone]
    lines = [_described(change) for change in changes if not change.gone]
    if gone:
        named = printable(gone[0])
        lines.append(
            f"{named} and {len(gone) - 1} more files the DAG made: gone since the DAG last recorded them"
            if len(gone) > 1
            else f"{named}: gone since the DAG last recorded it"
        )
    return lines


def redo_changed(jobs: RunPlan, staged: Path) -> list[str]:
    """At a DAG's start: remove what must be made again because bytes it came from changed (see
    the module's docstring); one line per changed file. A ledger that cannot be trusted (edited,
    doubled) counts every file the DAG made as changed; without a ledger (results made before
    this version, or none yet), the files as they are now are recorded."""
    recorded = ledger.read(staged)
    if recorded is None:
        made = _made(jobs)
        for path in made:
            _remove(path)
        return [f"{staged}: the content ledger was changed by hand: every result is made again"] if made else []
    if not recorded:  # results from before the ledger (or none): their bytes as they are now
        record(jobs, staged)
        return []
    # A ledger written before files were recorded as kept knows them as made by their paths.
    changes = ledger.changes({path: replace(e, kept=e.kept or _is_kept(jobs, path)) for path, e in recorded.items()})
    for change in changes:
        for path in _to_redo(jobs, change.path):
            _remove(path)
    return [f"{line}: made again" for line in _lines(changes)]


def _in_store(jobs: RunPlan, path: str) -> bool:
    return any(_inside(path, store) for store in _stores(jobs))


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def record(jobs: RunPlan, staged: Path) -> None:
    """After a DAG succeeded: the bytes of every tracked file, as the next start compares them."""
    tracked = tracked_files(jobs)
    ledger.write(staged, tracked, ledger.read(staged) or {}, [path for path in tracked if _is_kept(jobs, path)])


def changed_since_recorded(project: Path) -> list[str]:
    """For `ifaudit counted`: one line per file of the project's ledger whose bytes changed since
    the DAG recorded them, or one line if the ledger itself cannot be trusted."""
    staged = project / plan.STAGED
    recorded = ledger.read(staged)
    if recorded is None:
        return [f"{staged}: the content ledger was changed by hand; run the DAG again"]
    return _lines(ledger.changes(recorded, project))


# The lock a DAG's main process holds from its start to its exit: a second Snakemake start in the
# same folder (a dry run beside a running DAG) must not remove files the running one is writing.
_HELD: list[int] = []


def hold_start_lock(staged: Path) -> bool:
    """Take (and keep until this process exits) the folder's content lock; False when another DAG
    holds it. Where the file system offers no lock, True: nothing else can be known."""
    staged.mkdir(parents=True, exist_ok=True)
    fd = os.open(staged / "content.lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            os.close(fd)
            return False
    _HELD.append(fd)
    return True
