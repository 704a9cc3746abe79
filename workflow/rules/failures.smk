# What a failed run leaves: the reason of each failed job in Snakemake's own output, and no
# result downstream of a failure that would look valid. This runs in the main Snakemake
# process (not in the jobs), so it works the same on a cluster executor, where a job's stderr
# never reaches the terminal: it reads the failed jobs' log files, on the shared file system.
import re
import sys
from urllib.parse import urlsplit

# The first/last line every ifaudit command prints when it refuses: "ifaudit: error: ...".
ERROR_PREFIX = "ifaudit: error: "
# A dataset's internal copy, named in the errors of the jobs that read it.
DATASET_COPY = re.compile(r"resources/data/([A-Za-z0-9_.-]+)\.jsonl")
# How fetch and vendor report a remote source that did not answer: "<source>: missing (<why>)".
UNREACHED = re.compile(r"(?P<url>(?:https?|hf)://\S+): missing \((?P<why>[^)]*)\)")


def failure_reason(job):
    """The job's one reason line: the last `ifaudit: error:` line of its log (else the log's last
    line, for a crash), with dataset copies under resources/data named by their sources."""
    lines = [
        line.strip()
        for log in job.log
        if Path(log).is_file()
        for line in log_tail(Path(log)).splitlines()
        if line.strip()
    ]
    errors = [line.removeprefix(ERROR_PREFIX) for line in lines if line.startswith(ERROR_PREFIX)]
    reason = (errors or lines or ["no log; see Snakemake's message above"])[-1]
    return DATASET_COPY.sub(lambda match: dataset_source(match[1]), reason)


def log_tail(path, size=1 << 16):
    """The end of a log, where a command's last word is (a progress bar may make it long)."""
    with path.open("rb") as handle:
        handle.seek(max(0, path.stat().st_size - size))
        return handle.read().decode("utf-8", errors="replace").replace("\r", "\n")


def dataset_source(name):
    """The path or URL dataset `name` was fetched from (its fetch record says which)."""
    record = Path(dataset_record(name))
    if not record.is_file():
        return dataset_file(name)
    source = json.loads(record.read_text())["source"]
    return source.removeprefix("file ").removeprefix("URL ")


def job_name(job):
    wildcards = ", ".join(f"{key}={value}" for key, value in job.wildcards.items())
    return f"{job.rule.name} ({wildcards})" if wildcards else job.rule.name


def job_and_log(job):
    return f"{job_name(job)}, log {', '.join(job.log)}"


def offline_advice(unreached):
    """One line for every job that failed because a canonical source did not answer."""
    hosts = sorted({f"{urlsplit(m['url']).netloc}: {m['why']}" for _, m in unreached})
    jobs = ", ".join(sorted(job_name(job) for job, _ in unreached))
    return (
        f"cannot reach {'; '.join(hosts)} (needed by {jobs}). Without network access, run from "
        'local copies: make run ARGS="--configfile config/config.yaml config/offline.yaml" '
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


def remove_stale_results(failed):
    """Results that depend on a failed job are from an earlier run and no longer match its
    inputs: remove them, so no summary, statistics or report survives that looks like this run's."""
    dag = workflow.dag
    stale = [
        Path(path)
        for job in dag.bfs(dag.depending, *failed)
        if job not in failed
        for path in job.output
        if Path(path).is_file()
    ]
    for path in stale:
        path.unlink()
    if stale:
        print(
            f"ifaudit: note: removed {len(stale)} earlier results that depend on the failed jobs: "
            f"{', '.join(map(str, stale))}",
            file=sys.stderr,
        )


def failed_jobs():
    """The jobs that failed: on a cluster, a failed group's members that did not finish."""
    return {
        member
        for job in workflow.scheduler.failed
        for member in (job.jobs if job.is_group() else [job])
        if not workflow.dag.finished(member)
    }


def on_failure():
    failed = failed_jobs()
    remove_stale_results(failed)
    report_failures(failed)
