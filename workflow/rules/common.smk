import atexit
import gc
import json
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path

# The package decides the plan: the config's check, every job's command line, the results layout
# (a light import: the host already runs `ifaudit` for the local rules, fetch among them).
from ifaudit.core import bounds
from ifaudit.core.errors import IfauditError
from ifaudit.core.terminal import printable
from ifaudit.io import variables
from ifaudit.io.canonical import atomic_write_bytes, sha256_file, staged_bytes, staged_json
from ifaudit.io.paths import check_output, check_writable_folder
from ifaudit.io import snakemake_internals as internals
from ifaudit.steps.planning import content, plan
from ifaudit.steps.planning.config_check import validated_plan


wildcard_constraints:
    run=r"[A-Za-z0-9_.-]+",
    dataset=r"[A-Za-z0-9_.-]+",
    task=r"[a-z0-9_]+",
    pass_=r"a|b",
    shard=r"\d+",
    shards=r"\d+",


PROJECT = Path(workflow.basedir)
PIN = PROJECT / plan.GRADER_PIN
INFOBENCH_PIN = PROJECT / plan.INFOBENCH_PIN  # InFoBench's evaluation.py, by version


# Steps that reach the network run where Snakemake runs (a cluster's submit host), so compute
# nodes need none: materializing the grader (`environment`, i.e. `ifaudit vendor`), fetching
# datasets, asking the LLM judge.
localrules:
    environment,
    fetch,
    judge,


def stop_like_ctrl_c(*signals):
    """A hang-up (terminal or ssh session closed, `kill -HUP`) ends Python at once by default, and
    so does a SIGTERM before Snakemake's scheduler installs its own handler (while it builds the
    DAG and holds the lock): the lock stays, and the next run stops with LockException until
    `--unlock`. As KeyboardInterrupt, Snakemake stops as on Ctrl-C: its jobs cancelled, the lock
    removed. A signal ignored when Snakemake started (`nohup`) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        return
    for number in signals:
        if signal.getsignal(number) == signal.SIG_DFL:
            signal.signal(number, signal.default_int_handler)


stop_like_ctrl_c(signal.SIGHUP, signal.SIGTERM)


# `make run` renders Snakemake's HTML report in the process that ran the DAG (one Snakemake start, not
# two): it names the file in IFAUDIT_HTML_REPORT, and a DAG that succeeded and counted every run
# renders it when report.md is newer (what it shows changed) or it is missing. A no-op runs no
# hook, so it renders nothing; a failed DAG renders nothing (the Makefile removes a stale one).


def render_html_report():
    target = variables.text(variables.HTML_REPORT)
    markdown = Path(plan.report_file("report.md"))
    if not target or not markdown.is_file():
        return
    html = Path(target)
    if html.is_file() and html.stat().st_mtime_ns > markdown.stat().st_mtime_ns:
        return
    # The DAG this process ran is the one `--report` would build again: rendered from it as is.
    internals.render_html_report(workflow, html)


# What `make run` says last is what `ifaudit counted` says: each run's headline figures, and that
# every result counts. A DAG that ran finds it here, with what it reads already loaded, and leaves
# it in plan.COUNTED_SAID, which `make run` prints after Snakemake's own last lines instead of
# starting that command again (a no-op runs no hook, and then the command says it). A result that
# does not count is left to the command to name.
def say_counted():
    if not variables.text(variables.HTML_REPORT):
        return
    from ifaudit.steps.reporting.headlines import said_by_counted

    headlines, not_counting = said_by_counted(Path(plan.RESULTS))
    if not not_counting:
        atomic_write_bytes(Path(plan.COUNTED_SAID), "".join(f"{printable(line)}\n" for line in headlines).encode())


# The interpreter's last garbage collection walks every object Snakemake and its imports made,
# ≈ 0.4 s at exit (the no-op's too); frozen at exit, they are left to the process's end, as its
# memory is. Snakemake closes its files itself (metadata records with `with`, the log by logging).
atexit.register(gc.freeze)

# Planning makes millions of objects that live as long as the DAG, and almost no garbage: each
# collection of the oldest generation walks them all for nothing (at 1,001 runs ≈ 3 s of 17). The
# collector is off until the DAG is built; `onstart` (the Snakefile), as jobs are about to run,
# turns it on again. A dry run, --lint or --report starts no job: it ends, and its memory with it.
gc.disable()


# The config checked and planned by the package: a mistake is one line naming the file, line and
# key (and the nearest valid one), before any job starts, no traceback. The config files Snakemake
# read are read again, as YAML that may hold no key twice and no alias bomb, before any walk of
# the config. So is a place the workflow writes itself that cannot be written: its staging
# folder, and `make run`'s HTML report (rendered after every job succeeded: refused now, not then).
try:
    check_writable_folder(plan.STAGED)
    if variables.text(variables.HTML_REPORT):
        check_output(variables.text(variables.HTML_REPORT))
    _given, _loaded = internals.config_files(workflow)
    PLAN = validated_plan(
        config,
        internals.config_overrides(workflow),
        PROJECT / "workflow" / "schemas" / "config.schema.yaml",
        (PIN, INFOBENCH_PIN),
        Path.cwd(),
        Path(plan.STAGED),
        [Path(path) for path in (*_loaded[len(_given) :], *_given)],  # in the order they were merged
    )
except IfauditError as error:
    print(f"ifaudit: error: {printable(str(error))}", file=sys.stderr)
    sys.exit(2)
REPORT_PLAN = PLAN.report_plan()  # runs in config order: the report lists them so
# Too long for a command line at a hundred runs: the report job reads it from a file named by its
# sha256, staged beside Snakemake's own records (a dry run stages it too; the name says the bytes).
REPORT_PLAN_FILE = staged_json(plan.STAGED, "report-plan", REPORT_PLAN)
RUNS = PLAN.runs


# Content, not clocks (ifaudit.steps.planning.content): before Snakemake compares modification times,
# what was made from bytes that changed since the last DAG recorded them is removed, to be made again,
# and a file touched with its bytes unchanged gets its recorded time back (nothing runs again for it).
# In the main process only, and not beside another DAG running in this folder: `make run` refuses to
# start beside one, naming it (a second one failed on Snakemake's lock only after planning, in a block
# of lines, and its make removed the HTML report), and after a Snakemake killed outright, naming the
# unlock; a plain Snakemake start beside a DAG (a dry run) goes on and removes nothing. Every job
# notes the sha256 of the inputs it read (IFAUDIT_READS): the ledger records the bytes it read.
BUSY = 75  # the exit status of a `make run` refused (the Makefile then leaves everything as it is)
STARTED = f"Snakemake, pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S %Z')}"
variables.export(variables.READS, str(Path(plan.STAGED).resolve()))


def refuse_to_start(reason):
    print(f"ifaudit: error: {reason}; nothing was started or changed", file=sys.stderr)
    sys.exit(BUSY)


if internals.runs_the_dag(workflow):
    made_by_make = variables.text(variables.HTML_REPORT) is not None
    if not content.hold_start_lock(Path(plan.STAGED), STARTED):
        if made_by_make:
            holder = content.holding_the_lock(Path(plan.STAGED))
            refuse_to_start(f"another run is running in this folder ({holder}): run again when it has ended")
    else:
        if made_by_make and internals.lock_left(workflow):
            refuse_to_start(
                "a Snakemake killed outright left its lock in this folder (no run is running here): "
                'unlock with make run ARGS="--unlock" (with the ARGS of the killed run), then run again'
            )
        for line in content.redo_changed(PLAN, Path(plan.STAGED)):
            print(f"ifaudit: {line}", file=sys.stderr)
        if made_by_make:
            Path(plan.COUNTED_SAID).unlink(missing_ok=True)  # what a stopped `make run` left


def record_content():
    """The bytes every file of the DAG has as its jobs read them, for the next start (onsuccess, onerror)."""
    content.record(PLAN, Path(plan.STAGED))


def left_unfinished():
    """Onerror: what the DAG had planned to make again and did not is removed at the next start."""
    content.left_unfinished(Path(plan.STAGED), internals.unfinished_outputs(workflow))


COMPARISON_JOBS = PLAN.comparison_jobs()  # one per task and prompt set (report.smk)

# Batches (batch.smk): with `batch_runs` above 1, the runs of checker-graded tasks are graded,
# verified and summarized a batch at a time; the one-run rules take the others (judged runs) only.
# The steps that read every run wait until every batch is done and none of its runs failed.
BATCHES_CHECKED = [plan.BATCHES_CHECKED] if PLAN.batches else []
UNBATCHED_RUN = (
    "|".join(re.escape(run) for run in RUNS if run not in PLAN.batched_runs) or "(?!)"
    if PLAN.batches
    else r"[A-Za-z0-9_.-]+"
)


def batch_inputs(batch):
    """What a batch's runs read: prompts, responses, the task's environment record, the canary's
    datasets, the published verdicts their summaries count, generation records their manifests hash."""
    files = []
    for run in batch["runs"]:
        files += [PLAN.prompts(run), PLAN.responses(run), plan.environment_record(PLAN.task(run))]
        files += [*PLAN.canary_datasets(run), *PLAN.published_verdicts(run)]
        files += [plan.run_file(run, "generation.json")] if "model" in RUNS[run] else []
    return list(dict.fromkeys(files))


def process_records_of(runs, pass_):
    """The canary verdict and prompt audit each run's grading process of `pass_` writes in a batch."""
    return [plan.process_record(run, pass_, kind, 0, 1) for run in runs for kind in ("canary", "prompts")]


def batch_job(batch, step, steps, after):
    """A batch job's command line: its runs' command lines staged in a file named by their sha256."""
    staged = staged_json(plan.STAGED, f"batch-{batch['name']}-{step}", steps)
    return PLAN.batch_job(staged, after, plan.batch_record(batch["name"], step))


def local_dataset_inputs(wildcards):
    """A user's own file is an input, so editing it re-fetches and regrades."""
    spec = PLAN.datasets[wildcards.dataset]
    return [spec["path"]] if "path" in spec and Path(spec["path"]).is_file() else []


def run_prompts(wildcards):
    return PLAN.prompts(wildcards.run)


def run_responses(wildcards):
    return PLAN.responses(wildcards.run)


def generation_record(wildcards):
    """The generate step's side record (usage, server self-reports, wall time): manifest only."""
    return [plan.run_file(wildcards.run, "generation.json")] if "model" in RUNS[wildcards.run] else []


def import_inputs(wildcards):
    """The harness's log (the run's `responses` dataset) and, for lm-eval, its results file."""
    spec = RUNS[wildcards.run]
    inputs = {"log": plan.dataset_file(spec["responses"])}
    if "results" in spec["import"]:
        inputs["results"] = plan.dataset_file(spec["import"]["results"])
    return inputs


def run_canary(wildcards):
    """The run's own canary verdict: a run's results hang on its own grading processes only."""
    return plan.run_file(wildcards.run, "canary.json")


def process_records(name, runs):
    """What every grading process of `runs` wrote beside its shard (`name`: canary or prompts):
    one file per pass and shard."""
    return plan.process_records(name, {run: shard_count(run) for run in runs})


def canary_verdicts(wildcards):
    """The canary verdicts of every grading process of the task's runs (the report's)."""
    return process_records("canary", [run for run, spec in RUNS.items() if spec["task"] == wildcards.task])


def run_canary_verdicts(wildcards):
    """The canary verdicts of the run's own grading processes."""
    return process_records("canary", [wildcards.run])


def run_task(wildcards):
    return RUNS[wildcards.run]["task"]


def run_environment(wildcards):
    return plan.environment_record(run_task(wildcards))


def prompt_audits(wildcards):
    """The audits written by the grading processes of the runs that audit the prompt set."""
    return process_records("prompts", PLAN.auditing_runs(wildcards.dataset))


def shard_count(run):
    """`shards: N`, or for `auto` one shard per `shard_responses` responses (at least one, at most
    the 1,000 `shards:` may name; the grades do not depend on it): the response file is counted
    once fetched, so `fetch` is a checkpoint."""
    if config["shards"] != "auto":
        return config["shards"]
    responses = checkpoints.fetch.get(dataset=RUNS[run]["responses"]).output.data
    with open(responses, "rb") as lines:
        count = sum(1 for line in lines if line.strip())
    return min(bounds.SHARDS.high, max(1, -(-count // config["shard_responses"])))


# One input function per rule: Snakemake reads the signature of each input function and calls it
# for every job apart (at 1,001 runs, 44,000 calls were a fifth of planning), so a rule's inputs
# that depend on the run come from one function, unpacked with their names.


def grade_inputs(wildcards):
    """A grading process's: a judged run's verdicts, the run's prompts and responses, the task's
    environment record, the files its canary reads."""
    return {
        "judging": PLAN.judging_inputs(wildcards.run),
        "prompts": run_prompts(wildcards),
        "responses": run_responses(wildcards),
        "environment": run_environment(wildcards),
        "canary_data": PLAN.canary_datasets(wildcards.run),
    }


def pass_shards(pass_):
    """The shards of one grading pass of the run, in shard order. One function per pass, not one
    unpacked for both: under `shards: auto`, before `fetch` ran, each pass's shards stand for the
    checkpoint's output on their own, and verify's params read `input.first`."""

    def shards(wildcards):
        count = shard_count(wildcards.run)
        return [plan.shard_grades(wildcards.run, pass_, i, count) for i in range(count)]

    return shards


def summary_inputs(wildcards):
    return {
        "prompts": run_prompts(wildcards),
        "responses": run_responses(wildcards),
        "canary": run_canary(wildcards),
        "published_verdicts": PLAN.published_verdicts(wildcards.run),
    }


def manifest_inputs(wildcards):
    return {
        "canary": run_canary(wildcards),
        "environment": run_environment(wildcards),
        "prompts": run_prompts(wildcards),
        "responses": run_responses(wildcards),
        "generated": generation_record(wildcards),
    }


def final_outputs():
    per_run = [plan.run_file(run, name) for run in RUNS for name in ("summary.json", "MANIFEST.json")]
    claims = [plan.run_file(run, "claims.json") for run, spec in RUNS.items() if "import" in spec]
    return per_run + claims + [plan.report_file("report.md")]


# The workflow's own record (record.smk): the config files it ran with, for `ifaudit bundle`.
def _recorded_path(path):
    """A config file's path: relative to the project, else to the working folder, else absolute."""
    absolute = Path(path).resolve()
    for base, name in ((PROJECT.resolve(), "project"), (Path.cwd().resolve(), "workdir")):
        if absolute.is_relative_to(base):
            return {"path": absolute.relative_to(base).as_posix(), "relative_to": name}
    return {"path": str(absolute), "relative_to": None}


def merged_config_files():
    """(file, what loaded it) in the order their values were merged, each once (where it was last)."""
    given, loaded = internals.config_files(workflow)
    ordered = [(Path(path).resolve(), "Snakefile") for path in loaded[len(given) :]]
    ordered += [(Path(path).resolve(), "--configfile") for path in given]
    paths = [path for path, _ in ordered]
    return [(path, by) for index, (path, by) in enumerate(ordered) if path not in paths[index + 1 :]]


def workflow_record():
    files = [
        {**_recorded_path(path), "loaded_by": by, "sha256": sha256_file(path)} for path, by in merged_config_files()
    ]
    record = {
        "configfiles": files,
        "config_overrides": internals.config_overrides(workflow),
        "config": config,
        "runs": list(RUNS),
    }
    return json.dumps(record, sort_keys=True, indent=1, ensure_ascii=False, default=str) + "\n"
