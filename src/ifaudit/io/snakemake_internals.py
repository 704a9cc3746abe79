"""Every use the workflow makes of Snakemake beyond its documented interface, in one place.

The Snakefile and workflow/rules/*.smk use Snakemake through its front door (rules, `config`,
`checkpoints`, `workflow.basedir`, the onstart/onsuccess/onerror handlers, profiles) and reach
past it only through these functions; no other file of the workflow or the package names what
they touch (tests/test_snakemake_internals.py checks both that and, for each of them, that the
pinned Snakemake still has it). Why each has no supported replacement: docs/snakemake.md.

Each function takes the `workflow` object a Snakefile sees; none imports Snakemake at module
level, so the package imports this module without it.
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# What the functions below touch, as the test that no other file names them searches for it.
NAMES = (
    "is_main_process",
    "config_settings",
    "workflow.configfiles",
    "job_rate_limiter",
    "get_free_jobs",
    "_schedule_reevalutation",
    "_open_jobs",
    "queue_input_jobs",
    "threading.Timer",
    "workflow.scheduler",
    "workflow.dag",
    "needrun_jobs",
    ".snakemake/locks",
    "async_run",
    "auto_report",
    "ReportPluginRegistry",
    "GlobalReportSettings",
)


def runs_the_dag(workflow: Any) -> bool:
    """Is this the process that runs the DAG (not a job's own parse of the Snakefile, as a cluster
    job or a `run:` block makes)? Read while the Snakefile is parsed, before the DAG exists."""
    return bool(workflow.is_main_process)


def config_overrides(workflow: Any) -> dict[str, Any]:
    """The `--config KEY=VALUE` values, apart from the config files' (the merged `config` has both)."""
    return dict(workflow.config_settings.config or {})


def config_files(workflow: Any) -> tuple[list[str], list[str]]:
    """(the files given with --configfile, every file loaded so far in load order): the Snakefile's
    own `configfile:` are those loaded after the given ones."""
    given = [str(path) for path in workflow.config_settings.configfiles]
    return given, [str(path) for path in workflow.configfiles]


def relook_only_at_the_rate_limit(workflow: Any) -> None:
    """The scheduler looks again on a timer only when the job rate limit has held jobs back, and
    with one timer at a time (call it from `onstart`: the scheduler exists and has not started).

    With a rate limiter (Snakemake's default, 100 jobs a second, or a limit a profile or the user
    sets), Snakemake's scheduler arms a `threading.Timer` of the limit's timespan at the end of
    every pass that saw a ready job, whether or not the limit held one back, and each timer's
    pass arms the next while any job is ready: every finished job starts a chain that wakes the
    scheduler once a timespan for as long as jobs wait (for cores locally, for the profile's
    `jobs` slots on a cluster), and each wake stats every ready job's inputs (15,677 passes for
    709 jobs at 100 local runs; bench/README.md). A job that waits for anything but the limit is
    woken by the next finished job anyway. Here a pass arms a timer only when the limit has no
    free slot left and no timer is pending: the limit holds as set, and is re-looked at once a
    timespan while it binds. A DAG with queue input (the `queue_input` flag, whose wait uses the
    same timers) keeps Snakemake's own."""
    scheduler = workflow.scheduler
    limiter = scheduler.job_rate_limiter
    if limiter is None or workflow.dag.queue_input_jobs:
        return
    wake = scheduler._open_jobs.release
    pending = threading.Event()

    def fire() -> None:
        pending.clear()  # before the wake: the pass it starts may have to arm the next timer
        wake()

    def relook(delay: float) -> None:
        if pending.is_set() or limiter.get_free_jobs() > 0:
            return
        pending.set()
        threading.Timer(delay, fire).start()

    scheduler._schedule_reevalutation = relook


def cancel_rescheduling_timers() -> None:
    """Let Snakemake exit when its work is done. The scheduler's re-look when the job rate limit
    held jobs back is a `threading.Timer` of the limit's timespan (not a daemon thread), and the
    interpreter waited for the last one: up to a timespan after the last job, longer than most
    jobs take. Cancelling them ends only those waits."""
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.cancel()


def render_html_report(workflow: Any, path: Path) -> None:
    """Snakemake's HTML report of the DAG this process ran, written to `path`: what `--report`
    renders, without a second Snakemake start to build the same DAG again (≈ 1.1 s of CPU at one
    run, 7 s at a hundred)."""
    from snakemake.report import auto_report
    from snakemake.settings.types import GlobalReportSettings
    from snakemake_interface_report_plugins.registry import ReportPluginRegistry

    plugin = ReportPluginRegistry().get_plugin("html")
    settings = plugin.settings_cls(path=path)
    workflow.async_run(auto_report(workflow.dag, plugin, settings, GlobalReportSettings()))


@dataclass(frozen=True)
class FailedJob:
    """What the failure handling reads of a job: its rule, wildcards and log files."""

    rule: str
    wildcards: dict[str, str]
    logs: tuple[str, ...]


def _failed(workflow: Any) -> set[Any]:
    """The jobs that failed: on a cluster, a failed group's members that did not finish."""
    return {
        member
        for job in workflow.scheduler.failed
        for member in (job.jobs if job.is_group() else [job])
        if not workflow.dag.finished(member)
    }


def failed_jobs(workflow: Any) -> list[FailedJob]:
    """The jobs of this run that failed (call it from `onerror`)."""
    return [
        FailedJob(job.rule.name, {str(k): str(v) for k, v in job.wildcards.items()}, tuple(map(str, job.log)))
        for job in _failed(workflow)
    ]


def outputs_downstream_of_failures(workflow: Any, kept_rules: Iterable[str]) -> list[Path]:
    """The existing outputs of every job that depends on a failed one (not the failed jobs' own,
    nor those of `kept_rules`), in the DAG's breadth-first order."""
    dag, failed, kept = workflow.dag, _failed(workflow), set(kept_rules)
    return [
        Path(path)
        for job in dag.bfs(dag.depending, *failed)
        if job not in failed and job.rule.name not in kept
        for path in job.output
        if Path(path).exists()
    ]


def lock_left(workflow: Any) -> bool:
    """Whether Snakemake's lock of the working folder is there (its lock files under
    .snakemake/locks): read while the Snakefile is parsed, by a process that holds the workflow's
    own content lock, it was left by a Snakemake killed outright."""
    locks = Path(".snakemake") / "locks"  # the file persistence's, in the working folder
    return locks.is_dir() and any(locks.glob("*.*put.lock"))


def unfinished_outputs(workflow: Any) -> list[str]:
    """The existing outputs of the jobs the DAG planned to run and did not finish (call it from
    `onerror`): made from inputs that changed, or to be made again for another reason."""
    return sorted(str(path) for job in workflow.dag.needrun_jobs() for path in job.output if Path(path).exists())


def planned_outputs(workflow: Any) -> set[str]:
    """Every output of the DAG this process ran (call it from `onsuccess`)."""
    return {str(path) for job in workflow.dag.jobs for path in job.output}


class Unrecorded:
    """Options of a job's command line that Snakemake does not record. It compares a job's params
    with those it recorded for the last run and reruns the job (and all after it) when they
    differ; a param whose value is not a plain Python value it cannot record, and leaves out of
    that comparison. No option excludes one param from the rerun trigger (`--rerun-triggers`
    drops params for every rule), so this is for options that change no byte of the job's
    outputs only (generate's `--replay-only`); written into the shell command as words."""

    def __init__(self, args: Iterable[str]) -> None:
        self.args = tuple(args)

    def __str__(self) -> str:
        return shlex.join(self.args)
