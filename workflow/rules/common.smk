import atexit
import difflib
import gc
import json
import os
import shlex
import sys
import threading
import tomllib
from pathlib import Path

import jsonschema
import yaml

# The order a dataset's sources are tried in is the package's, not a copy (a light import: the
# host already runs `ifaudit` for the local rules, fetch among them).
from ifaudit.core.names import run_name_problem
from ifaudit.io.canonical import sha256_file
from ifaudit.steps import plan
from ifaudit.io.sources import dataset_places, dataset_specs
from ifaudit.judging.options import judge_options


wildcard_constraints:
    run=r"[A-Za-z0-9_.-]+",
    dataset=r"[A-Za-z0-9_.-]+",
    task=r"[a-z_]+",
    pass_=r"a|b",
    a=r"[A-Za-z0-9_.-]+",
    b=r"[A-Za-z0-9_.-]+",
    shard=r"\d+",
    shards=r"\d+",


PROJECT = Path(workflow.basedir)
PIN = PROJECT / "vendor" / "google_ifeval" / "pin.toml"
INFOBENCH_PIN = PROJECT / "vendor" / "infobench" / "pin.toml"  # InFoBench's evaluation.py, by version
CANARIES = PROJECT / "src" / "ifaudit" / "tasks" / "canaries"
RUNS = config["runs"]
DATASETS = config["datasets"]
JUDGED_TASKS = plan.judged_tasks()  # graded from an LLM judge's recorded verdicts, not by checkers
JUDGEMENT_STORE = config.get("judgement_store", plan.DEFAULT_JUDGEMENT_STORE)
GENERATION_STORE = config.get("generation_store", plan.DEFAULT_GENERATION_STORE)


# Steps that reach the network run where Snakemake runs (a cluster's submit host), so compute
# nodes need none: materializing the grader (`environment`, i.e. `ifaudit vendor`), fetching
# datasets, asking the LLM judge.
localrules:
    environment,
    fetch,
    judge,


def cancel_rescheduling_timers():
    """Let Snakemake exit when its work is done. Its scheduler, rate-limited to 100 jobs per second
    by default, arms a one-second `threading.Timer` (not a daemon thread) on each pass through its
    loop to look again, and the interpreter waited for the last one: up to a second after the last
    job, longer than most jobs take. Cancelling them ends only those waits."""
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.cancel()


# `make run` renders Snakemake's HTML report in the process that ran the DAG (one Snakemake start, not
# two): it names the file in IFAUDIT_HTML_REPORT, and a DAG that succeeded and counted every run
# renders it when report.md is newer (what it shows changed) or it is missing. A no-op runs no
# hook, so it renders nothing; a failed DAG renders nothing (the Makefile removes a stale one).
HTML_REPORT = "IFAUDIT_HTML_REPORT"


def render_html_report():
    target = os.environ.get(HTML_REPORT)
    markdown = Path(plan.report_file("report.md"))
    if not target or not markdown.is_file():
        return
    html = Path(target)
    if html.is_file() and html.stat().st_mtime_ns > markdown.stat().st_mtime_ns:
        return
    from snakemake.report import auto_report
    from snakemake.settings.types import GlobalReportSettings
    from snakemake_interface_report_plugins.registry import ReportPluginRegistry

    # The DAG this process ran is the one `--report` would build again: rendered from it as is.
    plugin = ReportPluginRegistry().get_plugin("html")
    settings = plugin.settings_cls(path=html)
    workflow.async_run(auto_report(workflow.dag, plugin, settings, GlobalReportSettings()))


# The interpreter's last garbage collection walks every object Snakemake and its imports made,
# ≈ 0.4 s at exit (the no-op's too); frozen at exit, they are left to the process's end, as its
# memory is. Snakemake closes its files itself (metadata records with `with`, the log by logging).
atexit.register(gc.freeze)


def _config_error(where, message):
    """A config mistake is one line naming the key, before any job starts (no traceback)."""
    print(f"ifaudit: error: config: {where}: {message}", file=sys.stderr)
    sys.exit(2)


def _nearest(key, valid):
    """ "; did you mean 'x'?" for the valid key closest to a misspelled one, else nothing."""
    close = difflib.get_close_matches(str(key), sorted(valid), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def config_schema():
    """The config's schema, its task names taken from the package's registry (named once)."""
    # libyaml's loader: every Snakemake run, the no-op included, reads the schema (8 KB: 20 ms in
    # Python, 2 ms in C; the same document).
    schema = yaml.load((PROJECT / "workflow" / "schemas" / "config.schema.yaml").read_text(), Loader=yaml.CSafeLoader)
    schema["properties"]["runs"]["additionalProperties"]["properties"]["task"]["enum"] = plan.task_names()
    return schema


def _inner_schema(schema, key):
    """The schema of `key` in an object's schema: its own property, else any property's."""
    named = schema.get("properties", {})
    if key in named:
        return named[key]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def _takes_boolean(schema):
    kinds = schema.get("type")
    return "boolean" in (kinds if isinstance(kinds, list) else [kinds])


def coerce_booleans(schema, given, settings):
    """`--config replay_only=true` as YAML reads it. Snakemake takes only `True` and `False` as
    booleans on the command line and leaves `true` a string, which the schema refuses: for every
    key given there (`given`, nested ones too) that the schema says is a boolean, `true` and
    `false` in any case become booleans in `settings` (the merged config)."""
    for key, value in given.items():
        inner = _inner_schema(schema, key)
        if inner is None or not isinstance(settings, dict) or key not in settings:
            continue
        if isinstance(value, dict):
            coerce_booleans(inner, value, settings[key])
        elif isinstance(value, str) and value.lower() in ("true", "false") and _takes_boolean(inner):
            settings[key] = value.lower() == "true"


def check_schema(schema):
    """The schema's most relevant complaint, as one line with the key path and, for an unknown
    key, the nearest valid one (Snakemake's `validate` prints the whole schema instead)."""
    for run in config.get("runs") or {} if isinstance(config.get("runs"), dict) else ():
        if problem := run_name_problem(run):  # in words, before the schema's bare pattern
            _config_error("runs", problem)
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(config))
    if error is None:
        return
    where = ".".join(map(str, error.absolute_path))
    if error.validator == "additionalProperties" and error.validator_value is False:
        valid = error.schema.get("properties", {})
        key = min(set(error.instance) - set(valid), key=str)
        _config_error(f"{where}.{key}" if where else key, f"unknown key{_nearest(key, valid)}")
    if error.validator == "required":
        missing = next(key for key in error.validator_value if key not in error.instance)
        _config_error(f"{where}.{missing}" if where else missing, "required key is missing")
    nearest = _nearest(error.instance, error.validator_value) if error.validator == "enum" else ""
    _config_error(where or "top level", f"{error.message}{nearest}")


def canary_datasets(task):
    """The prompt and response datasets the committed canary of `task` reads (none when the
    canary carries its responses inline)."""
    canary = json.loads((CANARIES / f"{task}.json").read_text())
    if "responses" not in canary:
        return ()
    return canary["prompts"]["dataset"], canary["responses"]["dataset"]


def _escapes(path, root="."):
    """A relative path that leads outside `root` (an absolute path is the user's explicit choice)."""
    path = Path(path)
    return not path.is_absolute() and not (Path(root).resolve() / path).resolve().is_relative_to(Path(root).resolve())


def judge_protocol(run):
    """How a run's judge is asked: the protocol, and for the reference one, which pinned commit of
    InFoBench's evaluation.py (the pin's default unless the run names one)."""
    judge = RUNS[run]["judge"]
    protocol = judge.get("protocol", "reference")
    if protocol != "reference":
        return {"protocol": protocol}
    pin = tomllib.loads(INFOBENCH_PIN.read_text(encoding="utf-8"))
    version = judge.get("infobench_version", pin["default"])
    if version not in pin["versions"]:
        _config_error(
            f"runs.{run}.judge.infobench_version",
            f"{version!r} is not pinned in {INFOBENCH_PIN}; known: {', '.join(sorted(pin['versions']))}",
        )
    return {"protocol": protocol, "infobench_version": version, "infobench_commit": pin["versions"][version]["commit"]}


def check_config():
    """What the schema cannot say: names that must exist, files that must be there, and paths
    that must not lead out of the project or the mirror."""
    for name, spec in DATASETS.items():
        if "mirror" in spec and (Path(spec["mirror"]).is_absolute() or ".." in Path(spec["mirror"]).parts):
            _config_error(f"datasets.{name}.mirror", f"{spec['mirror']!r} leads out of the mirror folder")
        if "path" in spec and _escapes(spec["path"]):
            _config_error(f"datasets.{name}.path", f"{spec['path']!r} leads out of the project")
        places = dataset_places(spec, config["mirror"])
        remote = not config["offline"] and bool(places.canonical)
        mirrored = any(Path(mirror).is_file() for mirror in places.mirrors)
        if "path" in spec and not Path(spec["path"]).is_file() and not (remote or mirrored):
            _config_error(f"datasets.{name}.path", f"file not found: {spec['path']}")
    if _escapes(JUDGEMENT_STORE):
        _config_error("judgement_store", "leads out of the project")
    if _escapes(GENERATION_STORE):
        _config_error("generation_store", "leads out of the project")
    for run, spec in RUNS.items():
        if ("responses" in spec) == ("model" in spec):
            _config_error(f"runs.{run}", "a run needs exactly one of `responses` (a dataset) or `model` (an endpoint)")
        for role in ("prompts", "responses"):
            if role in spec and spec[role] not in DATASETS:
                _config_error(f"runs.{run}.{role}", f"no dataset named {spec[role]!r} under datasets")
        for name in canary_datasets(spec["task"]):
            if name not in DATASETS:
                _config_error("datasets", f"the {spec['task']} canary needs a dataset named {name!r}")
        judged = spec["task"] in JUDGED_TASKS
        if judged and ("judge" in spec) == ("judgements" in spec):
            _config_error(f"runs.{run}", "a judged task needs exactly one of `judge` or `judgements`")
        if not judged and ("judge" in spec or "judgements" in spec):
            _config_error(f"runs.{run}", f"task {spec['task']} is not judged; remove `judge`/`judgements`")
        if "import" in spec and "model" in spec:
            _config_error(
                f"runs.{run}.import", "an imported run reads a harness's log as its `responses`; remove `model`"
            )
        if "results" in spec.get("import", {}) and spec["import"]["results"] not in DATASETS:
            _config_error(
                f"runs.{run}.import.results", f"no dataset named {spec['import']['results']!r} under datasets"
            )
        if "judgements" in spec and spec["judgements"] not in DATASETS:
            _config_error(f"runs.{run}.judgements", f"no dataset named {spec['judgements']!r} under datasets")
        if "judge" in spec:
            judge_protocol(run)
    for a, b in config["comparisons"] or []:
        for name in (a, b):
            if name not in RUNS:
                _config_error("comparisons", f"no run named {name!r}")
    for task, path in config.get("canary", {}).items():
        if not Path(path).is_file():
            _config_error(f"canary.{task}", f"file not found: {path}")


CONFIG_SCHEMA = config_schema()
coerce_booleans(CONFIG_SCHEMA, workflow.config_settings.config, config)
check_schema(CONFIG_SCHEMA)
check_config()


def quoted(*args):
    return " ".join(shlex.quote(str(a)) for a in args)


def grader_args():
    """The options that choose and locate the grader, the same for every grading job."""
    args = ["--grader", config["grader"], "--pin", PIN]
    for source in config["grader_sources"]:
        args += ["--from", source]
    if config["offline"]:
        args.append("--offline")
    if config["nltk_mirror"]:
        args += ["--nltk-mirror", config["nltk_mirror"]]
    return quoted(*args)


def fetch_args(wildcards):
    """The dataset's sources in the order `ifaudit fetch` tries them, and its pinned sha256."""
    spec = DATASETS[wildcards.dataset]
    args = [part for source in dataset_specs(spec, config["mirror"], config["offline"]) for part in ("--from", source)]
    if "sha256" in spec:
        args += ["--sha256", spec["sha256"]]
    return quoted(*args)


def local_dataset_inputs(wildcards):
    """A user's own file is an input, so editing it re-fetches and regrades."""
    spec = DATASETS[wildcards.dataset]
    return [spec["path"]] if "path" in spec and Path(spec["path"]).is_file() else []


def run_prompts(wildcards):
    return plan.dataset_file(RUNS[wildcards.run]["prompts"])


def run_responses(wildcards):
    """A run's response file: its dataset, what the generate step made from the run's model, or
    what the import step made of a harness's log."""
    spec = RUNS[wildcards.run]
    if "model" in spec:
        return plan.run_file(wildcards.run, "responses.jsonl")
    if "import" in spec:
        return plan.run_file(wildcards.run, "imported/responses.jsonl")
    return plan.dataset_file(spec["responses"])


def generation_record(wildcards):
    """The generate step's side record (usage, server self-reports, wall time): manifest only."""
    return [plan.run_file(wildcards.run, "generation.json")] if "model" in RUNS[wildcards.run] else []


def generation_args(wildcards):
    args = ["--store", GENERATION_STORE, "--model-json", json.dumps(RUNS[wildcards.run]["model"], sort_keys=True)]
    if config.get("replay_only"):
        args.append("--replay-only")
    return quoted(*args)


def import_inputs(wildcards):
    """The harness's log (the run's `responses` dataset) and, for lm-eval, its results file."""
    spec = RUNS[wildcards.run]
    inputs = {"log": plan.dataset_file(spec["responses"])}
    if "results" in spec["import"]:
        inputs["results"] = plan.dataset_file(spec["import"]["results"])
    return inputs


def import_options(wildcards):
    """The run's import settings as the importer reads them; dataset names become their files."""
    options = dict(RUNS[wildcards.run]["import"])
    options.pop("format")
    if "results" in options:
        options["results"] = plan.dataset_file(options["results"])
    return shlex.quote(json.dumps(options, sort_keys=True))


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


def canary_data(wildcards):
    """The files of the datasets the canary of the run's task reads (none for an inline canary)."""
    return [plan.dataset_file(name) for name in canary_datasets(run_task(wildcards))]


def canary_args(wildcards):
    """The canary options of a grading job: the canary's datasets and the configured replacement
    of the committed canary."""
    task = run_task(wildcards)
    args = []
    datasets = canary_datasets(task)
    if datasets:
        args += [
            "--canary-prompts",
            plan.dataset_file(datasets[0]),
            "--canary-responses",
            plan.dataset_file(datasets[1]),
        ]
    if task in config.get("canary", {}):
        args += ["--canary", config["canary"][task]]
    return quoted(*args)


def run_task(wildcards):
    return RUNS[wildcards.run]["task"]


def run_environment(wildcards):
    return plan.environment_record(run_task(wildcards))


def prompt_audits(wildcards):
    """The audits written by the grading processes of the runs of the task of the first run that
    grades the prompt set by checkers (a prompt set is audited with that task's registry)."""
    task = next(
        spec["task"]
        for spec in RUNS.values()
        if spec["prompts"] == wildcards.dataset and spec["task"] not in JUDGED_TASKS
    )
    return process_records(
        "prompts", [run for run, spec in RUNS.items() if spec["prompts"] == wildcards.dataset and spec["task"] == task]
    )


def shard_count(run):
    """`shards: N`, or for `auto` one shard per `shard_responses` responses (at least one): the
    response file is counted once fetched, so `fetch` is a checkpoint."""
    if config["shards"] != "auto":
        return config["shards"]
    responses = checkpoints.fetch.get(dataset=RUNS[run]["responses"]).output.data
    with open(responses, "rb") as lines:
        count = sum(1 for line in lines if line.strip())
    return max(1, -(-count // config["shard_responses"]))


def pass_shards(pass_):
    """The shards of one grading pass of the run, in shard order."""

    def shards(wildcards):
        count = shard_count(wildcards.run)
        return [plan.shard_grades(wildcards.run, pass_, i, count) for i in range(count)]

    return shards


def run_datasets(run):
    spec = RUNS[run]
    recorded = [spec[role] for role in ("responses", "judgements") if role in spec]
    imported = [spec["import"]["results"]] if "results" in spec.get("import", {}) else []
    return sorted({spec["prompts"], *recorded, *imported, *canary_datasets(spec["task"])})


def manifest_config(wildcards):
    run = wildcards.run
    keys = ("grader", "grader_sources", "offline", "mirror", "nltk_mirror", "shards")
    settings = {
        **{key: config[key] for key in keys},
        "judgement_store": JUDGEMENT_STORE,
        "generation_store": GENERATION_STORE,
    }
    described = {"run": RUNS[run], "settings": settings, "datasets": {n: DATASETS[n] for n in run_datasets(run)}}
    if "judge" in RUNS[run]:
        described["judge_protocol"] = judge_protocol(run)
    return shlex.quote(json.dumps(described, sort_keys=True))


def manifest_datasets(wildcards):
    return quoted(*(f"--dataset={name}={plan.dataset_record(name)}" for name in run_datasets(wildcards.run)))


def comparisons():
    """Pairs (A, B) to compare: as configured, else every pair of runs on the same prompt set."""
    if config["comparisons"] is not None:
        return [tuple(pair) for pair in config["comparisons"]]
    names = list(RUNS)
    return [
        (a, b)
        for i, a in enumerate(names)
        for b in names[i + 1 :]
        if (RUNS[a]["task"], RUNS[a]["prompts"]) == (RUNS[b]["task"], RUNS[b]["prompts"])
    ]


def statistics_args():
    settings = config["statistics"]
    return quoted(
        "--resamples",
        settings["resamples"],
        "--level",
        settings["level"],
        "--interval",
        settings["interval"],
        "--seed",
        settings["seed"],
    )


def prompt_sets():
    """Prompt sets to audit for substituted settings: those graded by checkers."""
    return sorted({spec["prompts"] for spec in RUNS.values() if spec["task"] not in JUDGED_TASKS})


def judge_args(run):
    chosen = judge_protocol(run)
    args = ["--store", JUDGEMENT_STORE, *judge_options(RUNS[run]["judge"], chosen)]
    if "infobench_version" in chosen:
        args += ["--infobench-pin", INFOBENCH_PIN]
    if config["offline"]:
        args.append("--offline")
    return quoted(*args)


def judging_inputs(wildcards):
    """What a judged run's grading replays: the imported verdicts, or the judge step's record."""
    spec = RUNS[wildcards.run]
    if "judgements" in spec:
        return [plan.dataset_file(spec["judgements"])]
    if "judge" in spec:
        return [plan.run_file(wildcards.run, "judge.json")]
    return []


def judging_args(wildcards):
    spec = RUNS[wildcards.run]
    if "judgements" in spec:
        return quoted("--judgements", plan.dataset_file(spec["judgements"]))
    return judge_args(wildcards.run) if "judge" in spec else ""


def _report_plan():
    """What the report reads, by name (ifaudit.steps.plan.report_plan)."""
    return plan.report_plan(RUNS, comparisons(), prompt_sets())


def report_inputs():
    """Every file the plan names."""
    return plan.report_inputs(_report_plan())


def report_plan():
    return shlex.quote(json.dumps(_report_plan()))  # runs in config order: the report lists them so


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
    given = [str(path) for path in workflow.config_settings.configfiles]
    loaded = [str(path) for path in workflow.configfiles]
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
        "config_overrides": workflow.config_settings.config or {},
        "config": config,
        "runs": list(RUNS),
    }
    return json.dumps(record, sort_keys=True, indent=1, ensure_ascii=False, default=str)
