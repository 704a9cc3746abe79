"""Content, not clocks: what the audit reports is of the bytes on disk now.

The workflow records, when a DAG ends, the sha256 of every file under results/ and resources/ (but
the folders of runs the plan does not have, left by an earlier config), of the user's own dataset
files (`path:`) and of the recorded stores (ifaudit.io.ledger), as the DAG's jobs read them. At the
next start, before Snakemake compares modification times, every file whose bytes changed since is
made to be redone (each named in one line saying what is made again):

- a file the DAG made (results/, resources/) is removed, so the job that made it runs again;
- every run whose results were made from the file (a run's own file, a dataset it reads, whether
  fetched or the user's own, its task's environment record, an entry of the store its responses
  or verdicts are replayed from) has its folder under results/ removed, so it is graded again;
- the report is made again (it reads almost every file);
- the user's own files and the stores are never removed or rewritten (a store holds what a paid
  endpoint answered).

A result the DAG made that is gone (a run's grades.jsonl deleted by hand, its summary kept) is such
a change too: Snakemake makes a missing file again only when a job that reads it must run, and none
must while the files made from it are there. A user's own file, a store's entry or a file fetched
into resources/ that is gone is left to the job that reads it (a store's entry is asked again, a
fetched file fetched again and checked against its pin, only when a job needs it).

A file whose bytes are those recorded but whose modification time is newer (a `touch`) gets its
recorded time back, so that Snakemake plans nothing for it; what a failed or stopped DAG had planned
to make again and did not is removed; a ledger edited by hand removes every file the DAG made, and
the folders left empty go too (a resource is renamed into place as a folder, which an empty one of
the same name blocks).

`ifaudit counted` compares the same ledger and names every changed file, so a result whose inputs
changed never counts, whichever times they carry.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

from typing import TYPE_CHECKING

from ifaudit.core.names import RESULTS_LAYOUT_NAMES
from ifaudit.core.terminal import printable
from ifaudit.io import ledger
from ifaudit.io.canonical import atomic_write_bytes
from ifaudit.steps.planning import plan

if TYPE_CHECKING:  # `ifaudit counted` reads the ledger without the plan's imports
    from ifaudit.steps.planning.jobs import RunPlan

# What the DAG makes; the HTML rendering of the report is made from report.md by Snakemake's
# report, outside any job, and read by nothing.
PRODUCTS = (plan.RESULTS, plan.RESOURCES)
UNTRACKED = frozenset({plan.report_file("report.html")})
# NLTK's resources are copied into resources/ a folder at a time (tokenizers/punkt_tab) and used
# only whole: a file of one changed or gone takes its folder with it.
NLTK_CACHE = f"{plan.RESOURCES}/nltk_data"


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


def _other_runs(jobs: RunPlan) -> frozenset[str]:
    """The folders under results/ of runs this plan does not have (left by an earlier config):
    not this DAG's, so neither recorded nor compared (`ifaudit bundle` names them)."""
    try:
        with os.scandir(plan.RESULTS) as listing:
            names = [item.name for item in listing if item.is_dir(follow_symlinks=False)]
    except OSError:
        return frozenset()
    return frozenset(
        plan.run_folder(name) for name in names if name not in jobs.runs and name.lower() not in RESULTS_LAYOUT_NAMES
    )


def _made(jobs: RunPlan) -> list[str]:
    """The files the DAG made, the stores' entries aside."""
    return [
        path
        for path in ledger.walk_files(PRODUCTS, _other_runs(jobs))
        if path not in UNTRACKED and not _in_store(jobs, path)
    ]


def tracked_files(jobs: RunPlan) -> list[str]:
    """Every file the ledger records for this plan."""
    made = [path for path in ledger.walk_files(PRODUCTS, _other_runs(jobs)) if path not in UNTRACKED]
    return sorted({*made, *_sources(jobs), *ledger.walk_files(_stores(jobs))})


def _of_another_run(jobs: RunPlan, path: str) -> bool:
    """Whether `path` is in the folder under results/ of a run this plan does not have."""
    parts = path.split("/")
    return (
        len(parts) > 2
        and parts[0] == plan.RESULTS
        and parts[1] not in jobs.runs
        and parts[1].lower() not in RESULTS_LAYOUT_NAMES
    )


def _concerned(jobs: RunPlan, recorded: dict[str, ledger.Entry]) -> dict[str, ledger.Entry]:
    """The ledger's entries of the files this plan makes or reads (a change of any other, a
    dataset or a run of an earlier config, redoes nothing); recorded as made, kept by their paths
    when the ledger was written before files were recorded as kept."""
    sources, stores = _sources(jobs), _stores(jobs)
    return {
        path: replace(entry, kept=entry.kept or _is_kept(jobs, path))
        for path, entry in recorded.items()
        if not _of_another_run(jobs, path)
        and (
            any(_inside(path, folder) for folder in PRODUCTS)
            or path in sources
            or any(_inside(path, store) for store in stores)
        )
    }


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
    if made and _inside(changed, NLTK_CACHE):  # a resource is materialized whole (punkt_tab's folder)
        changed = "/".join(changed.split("/")[:4])
    fetched = [
        path
        for name in _sources(jobs).get(changed, [])
        for path in (plan.dataset_file(name), plan.dataset_record(name))
    ]
    runs = [plan.run_folder(run) for run in _runs_fed_by(jobs, changed)]
    return [*([changed] if made else []), *fetched, *runs, plan.report_file("report.md")]


def _described(change: ledger.Change) -> str:
    now = "no longer a regular file" if change.now is None else f"sha256 {change.now}"
    if change.recorded == ledger.READ_DIFFERENTLY:
        return (
            f"{printable(change.path)}: it changed while the DAG's jobs read it (they read different bytes; {now} now)"
        )
    return f"{printable(change.path)}: its bytes changed since the DAG last recorded them ({now}, recorded {change.recorded})"


def _lines(changes: list[ledger.Change], jobs: RunPlan | None = None) -> list[str]:
    """One line per changed file, and one for all the files that are gone (`rm -r results/RUN`
    takes dozens at once): the first of them named, and how many. With the plan (at a DAG's
    start), each says what the DAG does of it: a file it made is made again; of a user's own file
    or a store's entry, what was made from it."""
    gone = [change.path for change in changes if change.gone]
    lines = [_described(change) + _consequence(jobs, change.path) for change in changes if not change.gone]
    if gone:
        named = printable(gone[0])
        lines.append(
            f"{named} and {len(gone) - 1} more files the DAG made: gone since the DAG last recorded them"
            if len(gone) > 1
            else f"{named}: gone since the DAG last recorded it"
        )
        lines[-1] += _consequence(jobs, gone[0])
    return lines


def _consequence(jobs: RunPlan | None, path: str) -> str:
    """What the DAG does of a changed file, in the words of its line (none for `ifaudit counted`)."""
    if jobs is None:
        return ""
    if _in_store(jobs, path) or not any(_inside(path, folder) for folder in PRODUCTS):
        return ": what was made from it is made again"
    if _inside(path, plan.RESOURCES) and path not in _made_by_jobs(jobs):
        return ": removed; copied again when a job needs it"
    return ": made again"


def _made_by_jobs(jobs: RunPlan) -> set[str]:
    """The files under resources/ that a job of the DAG makes: fetched datasets, environment records
    (the rest is materialized, verified, by the grading processes that use it)."""
    tasks = {spec["task"] for spec in jobs.runs.values()}
    made = {path for name in jobs.datasets for path in (plan.dataset_file(name), plan.dataset_record(name))}
    return made | {plan.environment_record(task) for task in tasks}


def redo_changed(jobs: RunPlan, staged: Path) -> list[str]:
    """At a DAG's start: remove what must be made again because bytes it came from changed (see
    the module's docstring); one line per changed file. A ledger that cannot be trusted (edited,
    doubled) counts every file the DAG made as changed; without a ledger (results made before
    this version, or none yet), the files as they are now are recorded. Folders left empty go
    too: a resource is copied into place as a folder, which an empty one of the same name blocks."""
    ledger.forget_reads(staged)
    _prune_empty((NLTK_CACHE,))  # left by an earlier version, or by hand: each start clears them
    recorded = ledger.read(staged)
    if recorded is None:
        made = _made(jobs)
        for path in made:
            _remove(path)
        _prune_empty(PRODUCTS)
        return [f"{staged}: the content ledger was changed by hand: every result is made again"] if made else []
    if not recorded:  # results from before the ledger (or none): their bytes as they are now
        record(jobs, staged)
        return []
    concerned = _concerned(jobs, recorded)
    changes, same = ledger.compare(concerned)
    lines = [*_lines(changes, jobs), *_left_unfinished(staged)]
    for change in changes:
        for path in _to_redo(jobs, change.path):
            _remove(path)
    # Touched, bytes the same: their recorded time back, so that Snakemake plans nothing for them.
    restored = ledger.restore_times(concerned, same)
    if changes or lines:
        _prune_empty(PRODUCTS)
    elif restored or any(same[path].stat_key != concerned[path].stat_key for path in same):
        # Recorded under their stat keys now, not hashed again at every start (a file whose time
        # was given back is hashed once more, and recorded as a change if it is not as recorded).
        known = {**recorded, **{path: e for path, e in same.items() if path not in restored}}
        expected = {os.path.abspath(path): {concerned[path].sha256} for path in restored}
        ledger.write(staged, list(recorded), known, [p for p, e in recorded.items() if e.kept], expected)
    return lines


# What a DAG that failed or was stopped had planned to make again and did not: their earlier
# versions no longer match what they are made from (Snakemake reruns a job for its inputs'
# modification times no more: profiles/default), so the next start removes them.
UNFINISHED = "unfinished.json"


def left_unfinished(staged: Path, paths: list[str]) -> None:
    """Onerror: note the outputs the DAG planned to make again and did not (removed at the next start)."""
    kept = sorted(path for path in paths if any(_inside(path, folder) for folder in PRODUCTS))
    if kept:
        atomic_write_bytes(staged / UNFINISHED, (json.dumps(kept) + "\n").encode())


def _unfinished(staged: Path) -> list[str]:
    try:
        paths = json.loads((staged / UNFINISHED).read_bytes())
        return [path for path in paths if isinstance(path, str) and os.path.lexists(path)]
    except (OSError, ValueError, TypeError):
        return []


def _left_unfinished(staged: Path) -> list[str]:
    """Remove what the last DAG left unfinished; one line for them."""
    paths = [path for path in _unfinished(staged) if any(_inside(path, folder) for folder in PRODUCTS)]
    for path in paths:
        _remove(path)
    (staged / UNFINISHED).unlink(missing_ok=True)
    if not paths:
        return []
    more = f" and {len(paths) - 1} more" if len(paths) > 1 else ""
    return [
        f"{printable(paths[0])}{more}: the last DAG stopped before making them again from changed inputs: made again"
    ]


def _prune_empty(folders: tuple[str, ...]) -> None:
    """Remove the empty folders under `folders`, deepest first (the folders themselves stay, and
    so do hidden ones: a writer's staging folder)."""
    for folder in folders:
        for root, _, _ in os.walk(folder, topdown=False):
            if root != folder and not os.path.relpath(root, folder).startswith("."):
                with contextlib.suppress(OSError):
                    os.rmdir(root)


def _in_store(jobs: RunPlan, path: str) -> bool:
    return any(_inside(path, store) for store in _stores(jobs))


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def record(jobs: RunPlan, staged: Path) -> None:
    """When a DAG ends: the bytes of every tracked file as its jobs read them (else as they are
    now), as the next start compares them."""
    tracked = tracked_files(jobs)
    kept = [path for path in tracked if _is_kept(jobs, path)]
    ledger.write(staged, tracked, ledger.read(staged) or {}, kept, ledger.taken_reads(staged))


def changed_since_recorded(project: Path) -> list[str]:
    """For `ifaudit counted`: one line per file of the project's ledger whose bytes changed since
    the DAG recorded them, or one line if the ledger itself cannot be trusted."""
    staged = project / plan.STAGED
    recorded = ledger.read(staged)
    if recorded is None:
        return [f"{staged}: the content ledger was changed by hand; run the DAG again"]
    unfinished = (
        []
        if not (staged / UNFINISHED).is_file()
        else [f"{staged / UNFINISHED}: the last DAG stopped before making some results again; run the DAG again"]
    )
    return _lines(ledger.changes(recorded, project)) + unfinished


# The lock a DAG's main process holds from its start to its exit: a second Snakemake start in the
# same folder (a dry run beside a running DAG) must not remove files the running one is writing.
_HELD: list[int] = []


def hold_start_lock(staged: Path, holder: str = "") -> bool:
    """Take (and keep until this process exits) the folder's content lock, writing `holder` (who
    holds it: `holding_the_lock` reads it) into it; False when another DAG holds it. Where the file
    system offers no lock, True: nothing else can be known."""
    staged.mkdir(parents=True, exist_ok=True)
    fd = os.open(staged / LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            os.close(fd)
            return False
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder.encode(), 0)
    _HELD.append(fd)
    return True


LOCK = "content.lock"


def holding_the_lock(staged: Path) -> str:
    """Who holds the folder's content lock, as the DAG that took it wrote it (or "another DAG")."""
    try:
        said = (staged / LOCK).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        said = ""
    return printable(said[:500]) or "another DAG"
