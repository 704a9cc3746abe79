"""The `ifaudit` command's vocabulary: its subcommands, their options and help, and an example
each. ifaudit.cli parses with it and dispatches; nothing here runs a step. Every number an option
takes is read within its bounds (ifaudit.core.bounds: finite, an integer in the digits 0-9 where a
count is meant, within a documented range), and a mistake in the command line is one line."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from ifaudit.core import bounds
from ifaudit.core.terminal import printable, unshowable
from ifaudit.io import variables
from ifaudit.io.paths import InputFile, InputFileOrFolder, InputFolder, OutputFile, OutputFolder
from ifaudit.steps.planning import plan
from ifaudit.core.identity import GRADER_CHOICES
from ifaudit.tasks.names import DEFAULT_JUDGED_TASK, DEFAULT_TASK, LazyNames, TaskNames


def _judge_protocols() -> Sequence[str]:
    from ifaudit.judging.judge_protocol import PROTOCOLS

    return PROTOCOLS


def _log_formats() -> Sequence[str]:
    from ifaudit.inputs.importers import FORMATS

    return sorted(FORMATS)


# The vocabulary as data. An `Option` is what `add_argument` takes; a `Command` is a subcommand's
# help, its options in the order --help lists them, and its example (shown under its --help, the
# DAG's own call, shortened). `build_parser` only reads the table.


@dataclass(frozen=True)
class Option:
    """One argument: its flags (or positional name) and argparse's settings for it."""

    flags: tuple[str, ...]
    settings: Mapping[str, Any]


@dataclass(frozen=True)
class OneOf:
    """Options of which at most one may be given (argparse's mutually exclusive group)."""

    options: tuple[Option, ...]


@dataclass(frozen=True)
class FromEnvironment:
    """A default read from an environment variable when the parser is built, else `fallback`."""

    variable: variables.Variable
    fallback: str


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    options: tuple[Option | OneOf, ...]
    example: str


def option(*flags: str, **settings: Any) -> Option:
    return Option(flags, settings)


class Number:
    """An option's number, read within its bounds; argparse names the option in its refusal."""

    def __init__(self, within: bounds.Bounds) -> None:
        self.within = within

    def __call__(self, text: str) -> int | float:
        try:
            return self.within.parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None


def free_text(text: str) -> str:
    """Free text an output shows (`--label`), as the config's `format: text` takes it."""
    if problem := unshowable(text):
        raise argparse.ArgumentTypeError(problem)
    return text


def number(*flags: str, within: bounds.Bounds, help: str, **settings: Any) -> Option:
    """An option taking one number within `within`, its help saying the range."""
    return option(*flags, type=Number(within), help=f"{help}; {within.describe()}", **settings)


def task_option(default: str, purpose: str) -> Option:
    return option(
        "--task",
        choices=TaskNames(),  # the registry's, read when a --task is given or help is shown
        default=default,
        metavar="TASK",
        help=f"{purpose}; one of: %(choices)s (default {default})",
    )


GRADER_OPTIONS = (
    option(
        "--grader",
        choices=GRADER_CHOICES,
        default=FromEnvironment(variables.GRADER, GRADER_CHOICES[0]),
        help="the pinned upstream grader (default) or the labelled registry stand-in",
    ),
    option("--pin", type=InputFile, default=None, help="pin file (default: the task's, vendor/google_ifeval/pin.toml)"),
    option(
        "--grader-version",
        default=None,
        metavar="NAME",
        help="the version of a pin that holds several (ifbench: c6767a1, the default, or db69a6f)",
    ),
    option(
        "--vendor-dir",
        type=OutputFolder,
        default=None,
        help="where pinned files are materialized (default: resources/vendor/google_ifeval)",
    ),
    option(
        "--from",
        dest="sources",
        action="append",
        default=[],
        metavar="SOURCE",
        help="a local folder, git checkout, archive or URL holding the pinned files; "
        "repeatable, tried in order before IFAUDIT_GRADER_SOURCE and the canonical URL",
    ),
    option("--offline", action="store_true", help="never try the canonical URL"),
    option(
        "--nltk-mirror",
        type=InputFolder,
        default=None,
        help="folder laid out as NLTK_DATA holding tokenizers/punkt_tab (else IFAUDIT_NLTK_MIRROR)",
    ),
)

JUDGE_OPTIONS = (
    option("--store", type=OutputFolder, help="judgement store folder (content-addressed requests and answers)"),
    option("--judge-model", help="model name sent to the endpoint"),
    option(
        "--judge-base-url",
        default="https://api.openai.com/v1",
        help="OpenAI-compatible API base (…/v1); /chat/completions is appended",
    ),
    number("--judge-temperature", within=bounds.TEMPERATURE, default=0.0, help="sampling temperature (default 0)"),
    number("--judge-max-tokens", within=bounds.MAX_TOKENS, default=64, help="longest answer asked for (default 64)"),
    option(
        "--judge-api-key-env",
        default="OPENAI_API_KEY",
        help="name of the environment variable holding the API key (the key is never written)",
    ),
    number("--judge-concurrency", within=bounds.CONCURRENCY, default=4, help="conversations in flight at once"),
    option(
        "--judge-protocol",
        choices=LazyNames(_judge_protocols),
        default=None,
        metavar="PROTOCOL",  # without one, argparse lists the choices (imports the judge) to build it
        help="InFoBench's reference protocol from its pinned evaluation.py (default), or ifaudit's own: %(choices)s",
    ),
    option(
        "--infobench-pin",
        type=InputFile,
        default=None,
        help="pin of InFoBench's evaluation.py (default: vendor/infobench/pin.toml)",
    ),
    option(
        "--infobench-version",
        default=None,
        help="which pinned commit of evaluation.py (default: the pin's default, the latest)",
    ),
    option(
        "--infobench-from",
        dest="infobench_sources",
        action="append",
        default=[],
        metavar="SOURCE",
        help="a folder, archive or URL holding the pinned evaluation.py; repeatable, tried first",
    ),
)

INTERVAL_CHOICES = ("percentile", "bca")

STATISTICS_OPTIONS = (
    number("--resamples", within=bounds.RESAMPLES, default=10_000, help="bootstrap resamples (default 10000)"),
    number("--level", within=bounds.LEVEL, default=0.95, help="interval level (default 0.95)"),
    option(
        "--interval",
        choices=INTERVAL_CHOICES,
        default="percentile",
        help="percentile (default) or bca: bias-corrected and accelerated, its bias term the "
        "mid-rank of the estimate among the resamples (ties count half, as in scipy)",
    ),
    number("--seed", within=bounds.SEED, default=0, help="seed of the resampled prompt indices (default 0)"),
)

RESULTS_OPTION = option(
    "--results", type=InputFolder, default=Path(plan.RESULTS), help="the DAG's results folder (default results)"
)


def _run_side(side: str) -> tuple[Option, ...]:
    """`compare`'s options for one of its two runs."""
    return (
        option(f"--{side}-grades", type=InputFile, required=True, help=f"run {side.upper()}'s verified grades JSONL"),
        option(
            f"--{side}-prompts",
            type=InputFile,
            required=True,
            help=f"run {side.upper()}'s prompt set (the same prompts, in the same order)",
        ),
    )


COMMANDS = (
    Command(
        "vendor",
        "materialize and verify the pinned grader; with --record, also "
        "load it and the NLTK data and record their fingerprint",
        (
            *GRADER_OPTIONS,
            option("--record", type=OutputFile, help="write the grading environment's fingerprint here (JSON)"),
            task_option(DEFAULT_TASK, "whose registry to load for --record"),
        ),
        "ifaudit vendor --task ifeval --from ~/google-research --record results/environment/ifeval.json",
    ),
    Command(
        "fetch",
        "fetch a dataset from sources in order, verified by sha256",
        (
            option("--name", required=True, help="dataset name (config key)"),
            option(
                "--from",
                dest="sources",
                action="append",
                default=[],
                metavar="SOURCE",
                help="path, http(s) URL or hf://datasets/OWNER/NAME@REVISION/FILE; repeatable, in order",
            ),
            option("--sha256", default=None, help="pinned sha256; without it the first fetch is recorded"),
            option("--out", type=OutputFile, required=True, help="where the verified dataset is written"),
            option("--record", type=OutputFile, required=True, help="JSON record of what came from where"),
        ),
        "ifaudit fetch --name ifeval_input --from data/input_data.jsonl --out resources/datasets/ifeval_input.jsonl "
        "--record resources/datasets/ifeval_input.json",
    ),
    Command(
        "grade",
        "grade a response file, strict and loose, one response at a time",
        (
            task_option(DEFAULT_TASK, "the task whose checkers grade the responses"),
            option("--prompts", type=InputFile, required=True, help="prompt set (upstream or Hugging Face JSONL)"),
            option(
                "--responses", type=InputFile, required=True, help="responses JSONL (key or prompt, response, sample)"
            ),
            option("--out", type=OutputFile, required=True, help="grades JSONL to write (canonical, atomic)"),
            option(
                "--shard",
                default="0/1",
                help="INDEX/COUNT: grade only this contiguous block (default 0/1); COUNT from 1 to 1,000",
            ),
            option("--quiet", action="store_true", help="no progress bar"),
            number("--jobs", within=bounds.JOBS, default=1, help="worker processes (the grades do not depend on it)"),
            option("--judgements", type=InputFile, help="judged tasks: a response file with verdicts attached"),
            option(
                "--canary-out",
                type=OutputFile,
                default=None,
                help="first regrade the task's canary with this process's grader and write its verdict here (JSON)",
            ),
            option("--canary", type=InputFile, default=None, help="a canary file instead of the committed one"),
            option("--canary-prompts", type=InputFile, help="the canary's prompt dataset, if it names one"),
            option("--canary-responses", type=InputFile, help="the canary's response dataset, if it names one"),
            option(
                "--audit-out",
                type=OutputFile,
                default=None,
                help="also write the prompt set's audit (substituted settings; as `audit-prompts`) here (JSON)",
            ),
            *GRADER_OPTIONS,
            *JUDGE_OPTIONS,
        ),
        "ifaudit grade --task ifeval --prompts data/input_data.jsonl --responses data/my_model.jsonl "
        "--grader stand-in --out my_model_grades.jsonl --jobs 2",
    ),
    Command(
        "generate",
        "ask a model endpoint for responses to a prompt set, every "
        "request recorded in the store (asked once, replayed ever after)",
        (
            task_option(DEFAULT_TASK, "the task whose prompt set is read"),
            option("--prompts", type=InputFile, required=True, help="the prompt set to answer (JSONL)"),
            option(
                "--model-json", required=True, help="the run's model settings as a JSON object (see docs/generation.md)"
            ),
            option("--store", type=OutputFolder, required=True, help="generation store folder (content-addressed)"),
            option("--replay-only", action="store_true", help="refuse any live call: answer from the store"),
            option("--quiet", action="store_true", help="no progress bar"),
            option("--out", type=OutputFile, required=True, help="responses JSONL to write"),
            option(
                "--record",
                type=OutputFile,
                required=True,
                help="side record for the manifest: usage, server self-reports, wall time",
            ),
        ),
        "ifaudit generate --task ifeval --prompts data/input_data.jsonl --model-json "
        '\'{"base_url": "http://127.0.0.1:8000/v1", "model": "my-model", "samples": 3}\' '
        "--store results/generations --out responses.jsonl --record generation.json",
    ),
    Command(
        "judge",
        "ask the LLM judge the questions of a judged task, recording each "
        "request and answer (a recorded request is replayed, not re-asked)",
        (
            task_option(DEFAULT_JUDGED_TASK, "a judged task"),
            option("--prompts", type=InputFile, required=True, help="the task's prompt set (JSONL)"),
            option("--responses", type=InputFile, required=True, help="responses JSONL to judge"),
            option("--record", type=OutputFile, required=True, help="JSON summary of the judging"),
            option("--offline", action="store_true", help="never fetch the pinned evaluation.py from its URL"),
            *JUDGE_OPTIONS,
        ),
        "ifaudit judge --task infobench --prompts data/infobench.jsonl --responses data/my_model.jsonl "
        "--store results/judgements --judge-model gpt-4o --record judged.json",
    ),
    Command(
        "canary",
        "regrade the task's fixed canary responses and write a verdict",
        (
            task_option(DEFAULT_TASK, "whose committed canary to regrade"),
            option("--canary", type=InputFile, default=None, help="a canary file instead of the committed one"),
            option("--prompts", type=InputFile, help="the canary's prompt dataset, if it names one"),
            option("--responses", type=InputFile, help="the canary's response dataset, if it names one"),
            option("--out", type=OutputFile, required=True, help="the canary verdict to write (JSON)"),
            option("--require-pass", action="store_true", help="exit 1 when the canary fails"),
            *GRADER_OPTIONS,
        ),
        "ifaudit canary --task ifeval --grader stand-in --out canary.json --require-pass",
    ),
    Command(
        "batch",
        "the one-run jobs of many runs, run after run in this process (the DAG's batches): a run "
        "that fails is named and skipped, the others go on",
        (
            option("--steps", type=InputFile, required=True, help="the staged batch: each run's command lines (JSON)"),
            option(
                "--steps-sha256",
                required=True,
                help="the sha256 the batch's bytes must have (a batch changed since it was planned is refused)",
            ),
            option(
                "--after",
                type=InputFile,
                action="append",
                default=[],
                help="the record of a job of the batch before this one: its failed runs are skipped (repeatable)",
            ),
            option("--record", type=OutputFile, required=True, help="the batch's record: its failed runs (JSON)"),
        ),
        "ifaudit batch --steps batch.json --steps-sha256 \"$(sha256sum < batch.json | cut -d' ' -f1)\" "
        "--record grade-a.json   # the DAG stages the batch",
    ),
    Command(
        "check-batches",
        "remove what the runs that failed in their batch left, and fail naming each; "
        "else record that every batch is done",
        (
            option("records", type=InputFile, nargs="+", help="each batch's last record (`batch --record`)"),
            option("--out", type=OutputFile, required=True, help="the record that every batch is done (JSON)"),
        ),
        "ifaudit check-batches .snakemake/ifaudit/batches/*/finish.json --out .snakemake/ifaudit/batches/checked.json",
    ),
    Command(
        "combine-canaries",
        "one canary verdict of a task from those its grading processes wrote (`grade --canary-out`); "
        "it fails if any of them failed",
        (
            option("verdicts", type=InputFile, nargs="+", help="the grading processes' canary verdicts (JSON)"),
            option("--out", type=OutputFile, required=True, help="the task's canary verdict to write (JSON)"),
        ),
        "ifaudit combine-canaries results/run/passes/a/canary-0-of-1.json "
        "results/run/passes/b/canary-0-of-1.json --out results/canary/ifeval.json",
    ),
    Command(
        "combine-audits",
        "one prompt set's audit from those its grading processes wrote (`grade --audit-out`), which must agree",
        (
            option("audits", type=InputFile, nargs="+", help="the grading processes' audits (JSON)"),
            option("--out", type=OutputFile, required=True, help="the prompt set's audit (JSON)"),
        ),
        "ifaudit combine-audits results/run/passes/a/prompts-0-of-1.json "
        "results/run/passes/b/prompts-0-of-1.json --out results/prompts/input_data.json",
    ),
    Command(
        "selfcheck",
        "run a task's canary with its datasets fetched from the "
        "config's sources; exit 1 unless every canary response grades as expected",
        (
            task_option(DEFAULT_TASK, "whose canary to run"),
            option(
                "--config",
                type=InputFile,
                default="config/config.yaml",
                help="config naming the datasets' sources (default config/config.yaml)",
            ),
            option("--mirror", type=InputFolder, help="a folder mirroring the datasets, tried first"),
            option("--out", type=OutputFile, required=True, help="the canary verdict (JSON)"),
            *GRADER_OPTIONS,
        ),
        "ifaudit selfcheck --task ifeval --config config/config.yaml --mirror ../shared/data --offline "
        "--grader stand-in --out selfcheck.json",
    ),
    Command(
        "verify",
        "merge each grading pass's shards; keep the grades only if the passes are byte-identical",
        (
            option(
                "--first",
                type=InputFile,
                nargs="+",
                required=True,
                help="the first pass's shards (grades JSONL), in order",
            ),
            option("--second", type=InputFile, nargs="+", required=True, help="the second pass's shards, in order"),
            option("--first-out", type=OutputFile, required=True, help="the first pass, merged"),
            option("--second-out", type=OutputFile, required=True, help="the second pass, merged"),
            option("--out", type=OutputFile, required=True, help="the verified grades"),
            option("--record", type=OutputFile, required=True, help="JSON record of the check"),
            option(
                "--canaries",
                type=InputFile,
                nargs="+",
                default=None,
                help="the grading processes' canary verdicts, combined as combine-canaries does (with --canary-out)",
            ),
            option("--canary-out", type=OutputFile, default=None, help="the run's canary verdict to write (JSON)"),
        ),
        "ifaudit verify --first a0.jsonl a1.jsonl --second b0.jsonl b1.jsonl --first-out a.jsonl "
        "--second-out b.jsonl --out grades.jsonl --record verify.json",
    ),
    Command(
        "summarize",
        "metrics of a run from its verified grades",
        (
            option("--run", required=True, help="the run's name (its key under runs: in the config)"),
            task_option(DEFAULT_TASK, "the run's task: which metrics it has"),
            option(
                "--label",
                type=free_text,
                default=None,
                help="a readable name for tables and plots (default: --run); no control, bidi or line-separator character",
            ),
            option("--grades", type=InputFile, required=True, help="the run's verified grades JSONL"),
            option("--prompts", type=InputFile, required=True, help="the run's prompt set (JSONL)"),
            option("--canary", type=InputFile, required=True, help="the canary verdict of this environment"),
            option(
                "--responses",
                type=InputFile,
                default=None,
                help="the graded response file, to count responses cut at the length limit",
            ),
            option(
                "--published-verdicts",
                type=InputFile,
                default=None,
                help="upstream's committed strict verdicts of these responses (eval_results_strict format), "
                "counted by the task's strict metrics for the report's published table",
            ),
            option("--out", type=OutputFile, required=True, help="the summary to write (JSON)"),
        ),
        "ifaudit summarize --run my_model --grades grades.jsonl --prompts data/input_data.jsonl "
        "--canary results/canary/ifeval.json --out summary.json",
    ),
    Command(
        "counted",
        "print each run's headline figures and whether it counts; exit 1 naming every run of the "
        "workflow's record (results/MANIFEST.json) that does not count",
        (RESULTS_OPTION,),
        "ifaudit counted --results results",
    ),
    Command(
        "manifest",
        "the run's manifest: hashes of everything, versions, times",
        (
            option("--run", required=True, help="the run's name"),
            option("--config-json", required=True, help="the run's configuration as JSON"),
            option("--file", action="append", default=[], metavar="LABEL=PATH", help="a file to hash"),
            option(
                "--dataset",
                action="append",
                default=[],
                metavar="NAME=RECORD",
                help="a fetch record whose file must still have the recorded sha256",
            ),
            option("--out", type=OutputFile, required=True, help="the manifest to write (JSON)"),
        ),
        "ifaudit manifest --run my_model --config-json '{}' --file grades=grades.jsonl --out manifest.json",
    ),
    Command(
        "agreement",
        "Fleiss' kappa and WPLD of pairwise annotations (JSONL: id, labels [-1|0|1 per annotator], optional gold)",
        (
            option("--annotations", type=InputFile, required=True, help="the annotations (JSONL)"),
            option("--out", type=OutputFile, required=True, help="the agreement summary to write (JSON)"),
        ),
        "ifaudit agreement --annotations annotations.jsonl --out agreement.json",
    ),
    Command(
        "bundle",
        "pack a paper's artifact for offline review: source at its commit, "
        "workflow, config, lock, pinned grader, NLTK data, datasets, results, manifests, RO-Crate, "
        "checksums, a root digest to cite, and a deterministic .tar.gz",
        (
            option(
                "--out", type=OutputFolder, required=True, help="a new folder; the archive is written as OUT.tar.gz"
            ),
            option("--project", type=InputFolder, default=Path("."), help="the project's git checkout (default: .)"),
            RESULTS_OPTION,
            option(
                "--config",
                action="append",
                type=InputFile,
                default=[],
                metavar="FILE",
                help="a config file the run used, in the order given to snakemake (repeatable)",
            ),
            option(
                "--allow-dirty",
                action="store_true",
                help="bundle a checkout with uncommitted changes (HEAD plus the recorded diff)",
            ),
            option("--wheels", action="store_true", help="add a wheelhouse of the hash lock (pip download)"),
            option("--image", help="the container image the run used: a .sif file or NAME@sha256:DIGEST"),
        ),
        "ifaudit bundle --out artifact/",
    ),
    Command(
        "verify-bundle",
        "check a bundle alone: root digest, checksums, manifest hashes; regrade both passes "
        "of every run and recompute every derived file, comparing bytes",
        (
            option("bundle", type=InputFileOrFolder, help="the bundle folder `ifaudit bundle` made, or its .tar.gz"),
            option("--expect", metavar="DIGEST", help="the root digest cited (sha256:...)"),
            option(
                "--mirror", type=InputFolder, help="a dataset mirror for datasets the bundle could not redistribute"
            ),
            option("--checksums-only", action="store_true", help="skip regrading and recomputing"),
        ),
        "ifaudit verify-bundle artifact/",
    ),
    Command(
        "stats",
        "a run's accuracies with cluster-bootstrap intervals and breakdown",
        (
            task_option(DEFAULT_TASK, "the run's task: which metrics it has"),
            option("--grades", type=InputFile, required=True, help="the run's verified grades JSONL"),
            option("--prompts", type=InputFile, required=True, help="the run's prompt set (JSONL)"),
            option("--out", type=OutputFile, required=True, help="the statistics to write (JSON)"),
            *STATISTICS_OPTIONS,
        ),
        "ifaudit stats --grades grades.jsonl --prompts data/input_data.jsonl --interval bca --out stats.json",
    ),
    Command(
        "compare",
        "paired comparison of two runs on the same prompts (A minus B)",
        (
            *_run_side("a"),
            *_run_side("b"),
            task_option(DEFAULT_TASK, "the task both runs belong to"),
            option("--out", type=OutputFile, required=True, help="the comparison to write (JSON)"),
            *STATISTICS_OPTIONS,
        ),
        "ifaudit compare --a-grades a/grades.jsonl --a-prompts data/input_data.jsonl "
        "--b-grades b/grades.jsonl --b-prompts data/input_data.jsonl --out a_vs_b.json",
    ),
    Command(
        "compare-many",
        "paired comparisons of many runs on one prompt set in one process; each pair's file is what "
        "`ifaudit compare` writes for it",
        (
            option("--runs", nargs="+", required=True, help="the runs' names, in order"),
            option("--grades", type=InputFile, nargs="+", required=True, help="each run's verified grades JSONL"),
            option("--prompts", type=InputFile, nargs="+", required=True, help="each run's prompt set (JSONL)"),
            OneOf(
                (
                    option(
                        "--pair",
                        nargs=2,
                        action="append",
                        metavar=("A", "B"),
                        help="compare A minus B; repeatable, in order",
                    ),
                    option("--all-pairs", action="store_true", help="every pair of --runs, A before B in their order"),
                )
            ),
            task_option(DEFAULT_TASK, "the task of the runs (of each pair's A)"),
            option(
                "--out-dir",
                type=OutputFolder,
                required=True,
                help="the comparisons folder: writes A/B.json for each pair",
            ),
            *STATISTICS_OPTIONS,
        ),
        "ifaudit compare-many --task ifeval --runs a b c --grades a/grades.jsonl b/grades.jsonl "
        "c/grades.jsonl --prompts data/input_data.jsonl data/input_data.jsonl data/input_data.jsonl "
        "--pair a b --pair a c --out-dir results/comparisons",
    ),
    Command(
        "audit-prompts",
        "find settings the grader replaces and prompt texts that contradict their settings",
        (
            task_option(DEFAULT_TASK, "whose checkers read the settings"),
            option("--prompts", type=InputFile, required=True, help="the prompt set to audit (JSONL)"),
            option("--out", type=OutputFile, required=True, help="the audit to write (JSON)"),
            *GRADER_OPTIONS,
        ),
        "ifaudit audit-prompts --task ifeval --prompts data/input_data.jsonl --grader stand-in --out audit.json",
    ),
    Command(
        "import-log",
        "turn a harness's log (lm-eval, leaderboard details, inspect, OpenAI batch, JSONL) into a "
        "response file and a record of the harness's own verdicts and reported scores",
        (
            option(
                "--format",
                required=True,
                choices=LazyNames(_log_formats),
                metavar="FORMAT",
                help="the log's format; one of: %(choices)s",
            ),
            option(
                "--log",
                type=InputFileOrFolder,
                required=True,
                help="the log: a file, or a folder laid out as a leaderboard details dataset",
            ),
            option(
                "--options-json",
                default=None,
                help="the run's import settings as a JSON object (results file, custom_id pattern, "
                "fields, config, split, repo, revision; see docs/importing.md)",
            ),
            task_option(DEFAULT_TASK, "whose prompt set the log is graded against"),
            option("--prompts", type=InputFile, required=True, help="the pinned prompt set (JSONL)"),
            option("--out", type=OutputFile, required=True, help="the response file to write (JSONL)"),
            option(
                "--harness",
                type=OutputFile,
                required=True,
                help="the harness record to write (JSON): verdicts, reported scores, provenance",
            ),
        ),
        "ifaudit import-log --format lm-eval --log samples_ifeval.jsonl --options-json "
        '\'{"results": "results.json"}\' --prompts data/input_data.jsonl --out responses.jsonl '
        "--harness harness.json",
    ),
    Command(
        "audit-claims",
        "set a harness's reported and per-response verdicts beside the pinned grader's, and find the "
        "cause of every disagreement",
        (
            task_option(DEFAULT_TASK, "whose registry regrades the disagreeing instructions"),
            option("--prompts", type=InputFile, required=True, help="the pinned prompt set (JSONL)"),
            option("--responses", type=InputFile, required=True, help="the imported response file"),
            option("--grades", type=InputFile, required=True, help="the verified grades"),
            option("--harness", type=InputFile, required=True, help="the harness record written by import-log"),
            option("--out", type=OutputFile, required=True, help="claims JSON to write"),
            option("--table", type=OutputFile, required=True, help="disagreements CSV to write"),
            *GRADER_OPTIONS,
            *STATISTICS_OPTIONS,
        ),
        "ifaudit audit-claims --prompts data/input_data.jsonl --responses responses.jsonl "
        "--grades grades.jsonl --harness harness.json --out claims.json --table disagreements.csv",
    ),
    Command(
        "report",
        "tables (CSV, JSON), Markdown report and plots from a report plan",
        (
            option(
                "--plan", type=InputFile, required=True, help="JSON file naming the runs' outputs (the DAG stages it)"
            ),
            option(
                "--plan-sha256",
                required=True,
                help="the sha256 the plan's bytes must have (a plan changed since is refused)",
            ),
            option(
                "--out-dir",
                type=OutputFolder,
                required=True,
                help="folder for report.md, the CSV and JSON tables, the HTML tables and plots/",
            ),
        ),
        "ifaudit report --plan plan.json --plan-sha256 \"$(sha256sum < plan.json | cut -d' ' -f1)\" "
        "--out-dir results   # the DAG stages the plan",
    ),
)

EXAMPLES = {command.name: command.example for command in COMMANDS}


def _add(parser: argparse.ArgumentParser | argparse._MutuallyExclusiveGroup, entry: Option | OneOf) -> None:
    if isinstance(entry, OneOf):
        group = parser.add_mutually_exclusive_group()
        for member in entry.options:
            _add(group, member)
        return
    settings = dict(entry.settings)
    default = settings.get("default")
    if isinstance(default, FromEnvironment):
        settings["default"] = variables.text(default.variable) or default.fallback
    if isinstance(settings.get("default"), list):
        settings["default"] = list(settings["default"])  # each parser its own: the table's is shared
    parser.add_argument(*entry.flags, **settings)


class _Version(argparse.Action):
    """`--version`: the version read when it is asked for, not in every command's start (it reads
    pyproject.toml with a TOML parser)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from ifaudit import __version__

        print(f"ifaudit {__version__}")  # on stdout, as argparse's own version action prints
        parser.exit()


class _OneLineParser(argparse.ArgumentParser):
    """A mistake in the command line is one line, as every other mistake is (its usage is in
    --help, which the line names)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"ifaudit: error: {self.prog}: {printable(message)} (see {self.prog} --help)\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole vocabulary; with `only` (a subcommand's name), every subcommand but that one
    without its options: what one command's process parses with (its other ≈ 300 options cost
    every job ≈ 10 ms to build). Its --help and its errors are the whole parser's."""
    parser = _OneLineParser(prog="ifaudit", description=__doc__)
    parser.add_argument("--version", action=_Version, help="show program's version number and exit")
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        sub = commands.add_parser(
            command.name,
            help=command.help,
            description=command.help,
            epilog=f"example:\n  {command.example}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        if only in (None, command.name):
            for entry in command.options:
                _add(sub, entry)
    return parser
