# What a failed run leaves: the reason of each failed job in Snakemake's own output, and no
# result downstream of a failure that would look valid; a finished DAG with a run that does not
# count fails too. This runs in the main Snakemake process (not in the jobs), so it works the
# same on a cluster executor, where a job's stderr never reaches the terminal: it reads the
# failed jobs' log files, on the shared file system.
import re
import shutil
import sys
from urllib.parse import urlsplit

# The first/last line every ifaudit command prints when it refuses: "ifaudit: error: ...".
ERROR_PREFIX = "ifaudit: error: "
# A dataset's internal copy, named in the errors of the jobs that read it.
DATASET_COPY = re.compile(re.escape(plan.dataset_file("@")).replace("@", "([A-Za-z0-9_.-]+)"))
# How fetch and vendor report a remote source that did not answer: "<source>: missing (<why>)".
UNREACHED = re.compile(r"(?P<url>(?:https?|hf)://\S+): missing \((?P<why>[^)]*)\)")


def failure_reason(job):
    """The job's one reason line: the last `ifaudit: error:` line of its log (else the log's last
    line, for a crash), with dataset copies under resources/data named by their sources. A
    progress bar left open by the error ends without a newline, so the error line follows it on
    the same line (`generating: 0%| ... | 0/541 [...]ifaudit: error: ...`) and the bar is drawn
    again after it, at exit: the error is what follows the prefix, wherever it starts."""
    lines = [
        line.strip()
        for log in job.logs
        if Path(log).is_file()
        for line in log_tail(Path(log)).splitlines()
        if line.strip()
    ]
    errors = [line.partition(ERROR_PREFIX)[2] for line in lines if ERROR_PREFIX in line]
    reason = (errors or lines or ["no log; see Snakemake's message above"])[-1]
    return DATASET_COPY.sub(lambda match: dataset_source(match[1]), reason)


def log_tail(path, size=1 << 16):
    """The end of a log, where a command's last word is (a progress bar may make it long)."""
    with path.open("rb") as handle:
        handle.seek(max(0, path.stat().st_size - size))
        return handle.read().decode("utf-8", errors="replace").replace("\r", "\n")


def dataset_source(name):
    """The path or URL dataset `name` was fetched from (its fetch record says which)."""
    record = Path(plan.dataset_record(name))
    if not record.is_file():
        return plan.dataset_file(name)
    source = json.loads(record.read_text())["source"]
    return source.removeprefix("file ").removeprefix("URL ")


def job_name(job):
    wildcards = ", ".join(f"{key}={value}" for key, value in job.wildcards.items())
    return f"{job.rule} ({wildcards})" if wildcards else job.rule


def job_and_log(job):
    return f"{job_name(job)}, log {', '.join(job.logs)}"


def offline_advice(unreached):
    """One line for every job that failed because a canonical source did not answer."""
    hosts = sorted({f"{urlsplit(m['url']).netloc}: {m['why']}" for _, m in unreached})
    jobs = ", ".join(sorted(job_name(job) for job, _ in unreached))
    return (
        f"cannot reach {'; '.join(hosts)} (needed by {jobs}). Without network access, run from "
        'local copies: make run ARGS="--configfile config/offline.yaml" '
        "(its mirror: and nltk_mirror: name the folders of the copies; grader_sources: for the "
        "upstream grader); see README, Offline, or with a mirror"
    )


def report_failures(failed):
    """Print one line per distinct reason (both grading passes of a bad file fail alike), naming
    the jobs and their logs; jobs that failed because the network is out share one line."""
    unreached, reasons = [], {}
    for job in sorted(failed, key=job_name):
        reason = failure_reason(job)
        match = UNREACHED.search(reason)
        if match and not config["offline"]:
            unreached.append((job, match))
        else:
            reasons.setdefault(reason, []).append(job)
    lines = [f"{reason} [{'; '.join(map(job_and_log, jobs))}]" for reason, jobs in reasons.items()]
    if unreached:
        lines.append(offline_advice(unreached))
    for line in lines:
        print(f"{ERROR_PREFIX}{line}", file=sys.stderr)


# Combined records of what the grading processes that ran found: a task's canary verdict and a
# prompt set's audit. Another run's failure leaves them as they are (they are no run's result:
# each run's summary reads its own canary verdict); the next run combines them again.
KEPT_ON_FAILURE = {"canary", "audit_prompts"}


def remove_stale_results():
    """Results that depend on a failed job are from an earlier run and no longer match its
    inputs: remove them, so no summary, statistics or report survives that looks like this run's.
    A run's results depend only on its own jobs (and what they share: datasets, the grader), so a
    failure in one run removes that run's results and what combines it (the report, and the
    comparisons of its task and prompt set: one job compares all their pairs), never another
    run's own results."""
    stale = internals.outputs_downstream_of_failures(workflow, KEPT_ON_FAILURE)
    for path in stale:
        shutil.rmtree(path) if path.is_dir() else path.unlink()  # a folder: the report's per-run plots
    if stale:
        print(
            f"ifaudit: note: removed {len(stale)} earlier results that depend on the failed jobs: "
            f"{', '.join(map(str, stale))}",
            file=sys.stderr,
        )


def on_failure():
    remove_stale_results()
    report_failures(internals.failed_jobs(workflow))


def on_success():
    """A DAG that finished with a run that does not count has not succeeded: say which and why, as
    the last lines, and exit non-zero. Nothing is removed (the results say `"counted": false`);
    Snakemake releases its lock on the way out (its `finally`), as on any other exit."""
    from ifaudit.steps.grading.counted import not_counted

    in_dag = internals.planned_outputs(workflow)
    planned = [run for run in RUNS if plan.run_file(run, "summary.json") in in_dag]
    lines = not_counted(Path(plan.RESULTS), planned)
    if lines:  # each run's figures first, as `make run` shows them when every run counts
        from ifaudit.steps.reporting.headlines import headline_lines

        for line in headline_lines(Path(plan.RESULTS)):
            print(f"ifaudit: {printable(line)}", file=sys.stderr)
    for line in lines:
        print(f"{ERROR_PREFIX}{line}", file=sys.stderr)
    if lines:
        sys.exit(1)
