"""The `ifaudit` command's vocabulary: its subcommands, their options and help, and an example
each. ifaudit.cli parses with it and dispatches; nothing here runs a step."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import overload

from ifaudit import __version__
from ifaudit.io import variables
from ifaudit.io.paths import InputFile, InputFileOrFolder, InputFolder, OutputFile, OutputFolder
from ifaudit.steps.planning import plan
from ifaudit.core.identity import GRADER_CHOICES
from ifaudit.tasks.names import DEFAULT_JUDGED_TASK, DEFAULT_TASK, TaskNames


class _LazyChoices(Sequence[str]):
    """An option's choices as the module that owns them lists them, imported only when argparse
    checks a value or prints help: the judge's and the importers' modules (HTTP, harness
    formats) cost every other subcommand's start-up time otherwise."""

    def __init__(self, load: Callable[[], Sequence[str]]) -> None:
        self._load = load

    @functools.cached_property
    def _choices(self) -> list[str]:
        return list(self._load())

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._choices[index]

    def __len__(self) -> int:
        return len(self._choices)


def _judge_protocols() -> Sequence[str]:
    from ifaudit.judging.judge_protocol import PROTOCOLS

    return PROTOCOLS


def _log_formats() -> Sequence[str]:
    from ifaudit.inputs.importers import FORMATS

    return sorted(FORMATS)


def _add_grader_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--grader",
        choices=GRADER_CHOICES,
        default=variables.text(variables.GRADER) or GRADER_CHOICES[0],
        help="the pinned upstream grader (default) or the labelled registry stand-in",
    )
    parser.add_argument(
        "--pin", type=InputFile, default=None, help="pin file (default: the task's, vendor/google_ifeval/pin.toml)"
    )
    parser.add_argument(
        "--grader-version",
        default=None,
        metavar="NAME",
        help="the version of a pin that holds several (ifbench: c6767a1, the default, or db69a6f)",
    )
    parser.add_argument(
        "--vendor-dir",
        type=OutputFolder,
        default=None,
        help="where pinned files are materialized (default: resources/vendor/google_ifeval)",
    )
    parser.add_argument(
        "--from",
        dest="sources",
        action="append",
        default=[],
        metavar="SOURCE",
        help="a local folder, git checkout, archive or URL holding the pinned files; "
        "repeatable, tried in order before IFAUDIT_GRADER_SOURCE and the canonical URL",
    )
    parser.add_argument("--offline", action="store_true", help="never try the canonical URL")


def _add_nltk_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nltk-mirror",
        type=InputFolder,
        default=None,
        help="folder laid out as NLTK_DATA holding tokenizers/punkt_tab (else IFAUDIT_NLTK_MIRROR)",
    )


def _add_judge_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store", type=OutputFolder, help="judgement store folder (content-addressed requests and answers)"
    )
    parser.add_argument("--judge-model", help="model name sent to the endpoint")
    parser.add_argument(
        "--judge-base-url",
        default="https://api.openai.com/v1",
        help="OpenAI-compatible API base (…/v1); /chat/completions is appended",
    )
    parser.add_argument("--judge-temperature", type=float, default=0.0, help="sampling temperature (default 0)")
    parser.add_argument("--judge-max-tokens", type=int, default=64, help="longest answer asked for (default 64)")
    parser.add_argument(
        "--judge-api-key-env",
        default="OPENAI_API_KEY",
        help="name of the environment variable holding the API key (the key is never written)",
    )
    parser.add_argument("--judge-concurrency", type=int, default=4, help="conversations in flight at once")
    parser.add_argument(
        "--judge-protocol",
        choices=_LazyChoices(_judge_protocols),
        default=None,
        metavar="PROTOCOL",  # without one, argparse lists the choices (imports the judge) to build it
        help="InFoBench's reference protocol from its pinned evaluation.py (default), or ifaudit's own: %(choices)s",
    )
    parser.add_argument(
        "--infobench-pin",
        type=InputFile,
        default=None,
        help="pin of InFoBench's evaluation.py (default: vendor/infobench/pin.toml)",
    )
    parser.add_argument(
        "--infobench-version",
        default=None,
        help="which pinned commit of evaluation.py (default: the pin's default, the latest)",
    )
    parser.add_argument(
        "--infobench-from",
        dest="infobench_sources",
        action="append",
        default=[],
        metavar="SOURCE",
        help="a folder, archive or URL holding the pinned evaluation.py; repeatable, tried first",
    )


def _add_task_option(parser: argparse.ArgumentParser, default: str, purpose: str) -> None:
    parser.add_argument(
        "--task",
        choices=TaskNames(),  # the registry's, read when a --task is given or help is shown
        default=default,
        metavar="TASK",
        help=f"{purpose}; one of: %(choices)s (default {default})",
    )


INTERVAL_CHOICES = ("percentile", "bca")

# One example per subcommand, shown under its --help (the DAG's own calls, shortened).
EXAMPLES = {
    "vendor": "ifaudit vendor --task ifeval --from ~/google-research --record results/environment/ifeval.json",
    "fetch": "ifaudit fetch --name ifeval_input --from data/input_data.jsonl --out resources/datasets/ifeval_input.jsonl "
    "--record resources/datasets/ifeval_input.json",
    "grade": "ifaudit grade --task ifeval --prompts data/input_data.jsonl --responses data/my_model.jsonl "
    "--grader stand-in --out my_model_grades.jsonl --jobs 2",
    "generate": "ifaudit generate --task ifeval --prompts data/input_data.jsonl --model-json "
    '\'{"base_url": "http://127.0.0.1:8000/v1", "model": "my-model", "samples": 3}\' '
    "--store results/generations --out responses.jsonl --record generation.json",
    "judge": "ifaudit judge --task infobench --prompts data/infobench.jsonl --responses data/my_model.jsonl "
    "--store results/judgements --judge-model gpt-4o --record judged.json",
    "canary": "ifaudit canary --task ifeval --grader stand-in --out canary.json --require-pass",
    "combine-canaries": "ifaudit combine-canaries results/run/passes/a/canary-0-of-1.json "
    "results/run/passes/b/canary-0-of-1.json --out results/canary/ifeval.json",
    "combine-audits": "ifaudit combine-audits results/run/passes/a/prompts-0-of-1.json "
    "results/run/passes/b/prompts-0-of-1.json --out results/prompts/input_data.json",
    "selfcheck": "ifaudit selfcheck --task ifeval --config config/config.yaml --mirror ../shared/data --offline "
    "--grader stand-in --out selfcheck.json",
    "verify": "ifaudit verify --first a0.jsonl a1.jsonl --second b0.jsonl b1.jsonl --first-out a.jsonl "
    "--second-out b.jsonl --out grades.jsonl --record verify.json",
    "summarize": "ifaudit summarize --run my_model --grades grades.jsonl --prompts data/input_data.jsonl "
    "--canary results/canary/ifeval.json --out summary.json",
    "counted": "ifaudit counted --results results",
    "manifest": "ifaudit manifest --run my_model --config-json '{}' --file grades=grades.jsonl --out manifest.json",
    "agreement": "ifaudit agreement --annotations annotations.jsonl --out agreement.json",
    "bundle": "ifaudit bundle --out artifact/",
    "verify-bundle": "ifaudit verify-bundle artifact/",
    "stats": "ifaudit stats --grades grades.jsonl --prompts data/input_data.jsonl --interval bca --out stats.json",
    "compare": "ifaudit compare --a-grades a/grades.jsonl --a-prompts data/input_data.jsonl "
    "--b-grades b/grades.jsonl --b-prompts data/input_data.jsonl --out a_vs_b.json",
    "compare-many": "ifaudit compare-many --task ifeval --runs a b c --grades a/grades.jsonl b/grades.jsonl "
    "c/grades.jsonl --prompts data/input_data.jsonl data/input_data.jsonl data/input_data.jsonl "
    "--pair a b --pair a c --out-dir results/comparisons",
    "audit-prompts": "ifaudit audit-prompts --task ifeval --prompts data/input_data.jsonl --grader stand-in "
    "--out audit.json",
    "import-log": "ifaudit import-log --format lm-eval --log samples_ifeval.jsonl --options-json "
    '\'{"results": "results.json"}\' --prompts data/input_data.jsonl --out responses.jsonl '
    "--harness harness.json",
    "audit-claims": "ifaudit audit-claims --prompts data/input_data.jsonl --responses responses.jsonl "
    "--grades grades.jsonl --harness harness.json --out claims.json --table disagreements.csv",
    "report": "ifaudit report --plan plan.json --plan-sha256 \"$(sha256sum < plan.json | cut -d' ' -f1)\" "
    "--out-dir results   # the DAG stages the plan",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ifaudit", description=__doc__)
    parser.add_argument("--version", action="version", version=f"ifaudit {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, help: str) -> argparse.ArgumentParser:  # noqa: A002 - argparse's word
        sub = commands.add_parser(
            name,
            help=help,
            description=help,
            epilog=f"example:\n  {EXAMPLES[name]}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        return sub

    vendor = command(
        "vendor",
        "materialize and verify the pinned grader; with --record, also "
        "load it and the NLTK data and record their fingerprint",
    )
    _add_grader_options(vendor)
    _add_nltk_option(vendor)
    vendor.add_argument("--record", type=OutputFile, help="write the grading environment's fingerprint here (JSON)")
    _add_task_option(vendor, DEFAULT_TASK, "whose registry to load for --record")

    fetch = command("fetch", "fetch a dataset from sources in order, verified by sha256")
    fetch.add_argument("--name", required=True, help="dataset name (config key)")
    fetch.add_argument(
        "--from",
        dest="sources",
        action="append",
        default=[],
        metavar="SOURCE",
        help="path, http(s) URL or hf://datasets/OWNER/NAME@REVISION/FILE; repeatable, in order",
    )
    fetch.add_argument("--sha256", default=None, help="pinned sha256; without it the first fetch is recorded")
    fetch.add_argument("--out", type=OutputFile, required=True, help="where the verified dataset is written")
    fetch.add_argument("--record", type=OutputFile, required=True, help="JSON record of what came from where")

    grade = command("grade", "grade a response file, strict and loose, one response at a time")
    _add_task_option(grade, DEFAULT_TASK, "the task whose checkers grade the responses")
    grade.add_argument("--prompts", type=InputFile, required=True, help="prompt set (upstream or Hugging Face JSONL)")
    grade.add_argument(
        "--responses", type=InputFile, required=True, help="responses JSONL (key or prompt, response, sample)"
    )
    grade.add_argument("--out", type=OutputFile, required=True, help="grades JSONL to write (canonical, atomic)")
    grade.add_argument("--shard", default="0/1", help="INDEX/COUNT: grade only this contiguous block (default 0/1)")
    grade.add_argument("--quiet", action="store_true", help="no progress bar")
    grade.add_argument(
        "--jobs", type=int, default=1, help="worker processes, at least 1 (the grades do not depend on it)"
    )
    grade.add_argument("--judgements", type=InputFile, help="judged tasks: a response file with verdicts attached")
    grade.add_argument(
        "--canary-out",
        type=OutputFile,
        default=None,
        help="first regrade the task's canary with this process's grader and write its verdict here (JSON)",
    )
    grade.add_argument("--canary", type=InputFile, default=None, help="a canary file instead of the committed one")
    grade.add_argument("--canary-prompts", type=InputFile, help="the canary's prompt dataset, if it names one")
    grade.add_argument("--canary-responses", type=InputFile, help="the canary's response dataset, if it names one")
    grade.add_argument(
        "--audit-out",
        type=OutputFile,
        default=None,
        help="also write the prompt set's audit (substituted settings; as `audit-prompts`) here (JSON)",
    )
    _add_grader_options(grade)
    _add_nltk_option(grade)
    _add_judge_options(grade)

    generate = command(
        "generate",
        "ask a model endpoint for responses to a prompt set, every "
        "request recorded in the store (asked once, replayed ever after)",
    )
    _add_task_option(generate, DEFAULT_TASK, "the task whose prompt set is read")
    generate.add_argument("--prompts", type=InputFile, required=True, help="the prompt set to answer (JSONL)")
    generate.add_argument(
        "--model-json", required=True, help="the run's model settings as a JSON object (see docs/generation.md)"
    )
    generate.add_argument(
        "--store", type=OutputFolder, required=True, help="generation store folder (content-addressed)"
    )
    generate.add_argument("--replay-only", action="store_true", help="refuse any live call: answer from the store")
    generate.add_argument("--quiet", action="store_true", help="no progress bar")
    generate.add_argument("--out", type=OutputFile, required=True, help="responses JSONL to write")
    generate.add_argument(
        "--record",
        type=OutputFile,
        required=True,
        help="side record for the manifest: usage, server self-reports, wall time",
    )

    judge = command(
        "judge",
        "ask the LLM judge the questions of a judged task, recording each "
        "request and answer (a recorded request is replayed, not re-asked)",
    )
    _add_task_option(judge, DEFAULT_JUDGED_TASK, "a judged task")
    judge.add_argument("--prompts", type=InputFile, required=True, help="the task's prompt set (JSONL)")
    judge.add_argument("--responses", type=InputFile, required=True, help="responses JSONL to judge")
    judge.add_argument("--record", type=OutputFile, required=True, help="JSON summary of the judging")
    judge.add_argument("--offline", action="store_true", help="never fetch the pinned evaluation.py from its URL")
    _add_judge_options(judge)

    canary = command("canary", "regrade the task's fixed canary responses and write a verdict")
    _add_task_option(canary, DEFAULT_TASK, "whose committed canary to regrade")
    canary.add_argument("--canary", type=InputFile, default=None, help="a canary file instead of the committed one")
    canary.add_argument("--prompts", type=InputFile, help="the canary's prompt dataset, if it names one")
    canary.add_argument("--responses", type=InputFile, help="the canary's response dataset, if it names one")
    canary.add_argument("--out", type=OutputFile, required=True, help="the canary verdict to write (JSON)")
    canary.add_argument("--require-pass", action="store_true", help="exit 1 when the canary fails")
    _add_grader_options(canary)
    _add_nltk_option(canary)

    combine = command(
        "combine-canaries",
        "one canary verdict of a task from those its grading processes wrote (`grade --canary-out`); "
        "it fails if any of them failed",
    )
    combine.add_argument("verdicts", type=InputFile, nargs="+", help="the grading processes' canary verdicts (JSON)")
    combine.add_argument("--out", type=OutputFile, required=True, help="the task's canary verdict to write (JSON)")

    combine_audits = command(
        "combine-audits",
        "one prompt set's audit from those its grading processes wrote (`grade --audit-out`), which must agree",
    )
    combine_audits.add_argument("audits", type=InputFile, nargs="+", help="the grading processes' audits (JSON)")
    combine_audits.add_argument("--out", type=OutputFile, required=True, help="the prompt set's audit (JSON)")

    selfcheck = command(
        "selfcheck",
        "run a task's canary with its datasets fetched from the "
        "config's sources; exit 1 unless every canary response grades as expected",
    )
    _add_task_option(selfcheck, DEFAULT_TASK, "whose canary to run")
    selfcheck.add_argument(
        "--config",
        type=InputFile,
        default="config/config.yaml",
        help="config naming the datasets' sources (default config/config.yaml)",
    )
    selfcheck.add_argument("--mirror", type=InputFolder, help="a folder mirroring the datasets, tried first")
    selfcheck.add_argument("--out", type=OutputFile, required=True, help="the canary verdict (JSON)")
    _add_grader_options(selfcheck)
    _add_nltk_option(selfcheck)

    verify = command(
        "verify", "merge each grading pass's shards; keep the grades only if the passes are byte-identical"
    )
    verify.add_argument(
        "--first", type=InputFile, nargs="+", required=True, help="the first pass's shards (grades JSONL), in order"
    )
    verify.add_argument("--second", type=InputFile, nargs="+", required=True, help="the second pass's shards, in order")
    verify.add_argument("--first-out", type=OutputFile, required=True, help="the first pass, merged")
    verify.add_argument("--second-out", type=OutputFile, required=True, help="the second pass, merged")
    verify.add_argument("--out", type=OutputFile, required=True, help="the verified grades")
    verify.add_argument("--record", type=OutputFile, required=True, help="JSON record of the check")

    summarize = command("summarize", "metrics of a run from its verified grades")
    summarize.add_argument("--run", required=True, help="the run's name (its key under runs: in the config)")
    _add_task_option(summarize, DEFAULT_TASK, "the run's task: which metrics it has")
    summarize.add_argument("--label", default=None, help="a readable name for tables and plots (default: --run)")
    summarize.add_argument("--grades", type=InputFile, required=True, help="the run's verified grades JSONL")
    summarize.add_argument("--prompts", type=InputFile, required=True, help="the run's prompt set (JSONL)")
    summarize.add_argument("--canary", type=InputFile, required=True, help="the canary verdict of this environment")
    summarize.add_argument(
        "--responses",
        type=InputFile,
        default=None,
        help="the graded response file, to count responses cut at the length limit",
    )
    summarize.add_argument("--out", type=OutputFile, required=True, help="the summary to write (JSON)")

    counted = command(
        "counted",
        "exit 1 naming every run of the workflow's record (results/MANIFEST.json) that does not count",
    )
    counted.add_argument(
        "--results", type=InputFolder, default=Path(plan.RESULTS), help="the DAG's results folder (default results)"
    )

    manifest = command("manifest", "the run's manifest: hashes of everything, versions, times")
    manifest.add_argument("--run", required=True, help="the run's name")
    manifest.add_argument("--config-json", required=True, help="the run's configuration as JSON")
    manifest.add_argument("--file", action="append", default=[], metavar="LABEL=PATH", help="a file to hash")
    manifest.add_argument(
        "--dataset",
        action="append",
        default=[],
        metavar="NAME=RECORD",
        help="a fetch record whose file must still have the recorded sha256",
    )
    manifest.add_argument("--out", type=OutputFile, required=True, help="the manifest to write (JSON)")
    agreement = command(
        "agreement",
        "Fleiss' kappa and WPLD of pairwise annotations (JSONL: id, labels [-1|0|1 per annotator], optional gold)",
    )
    agreement.add_argument("--annotations", type=InputFile, required=True, help="the annotations (JSONL)")
    agreement.add_argument("--out", type=OutputFile, required=True, help="the agreement summary to write (JSON)")

    bundle = command(
        "bundle",
        "pack a paper's artifact for offline review: source at its commit, "
        "workflow, config, lock, pinned grader, NLTK data, datasets, results, manifests, RO-Crate, "
        "checksums, a root digest to cite, and a deterministic .tar.gz",
    )
    bundle.add_argument(
        "--out", type=OutputFolder, required=True, help="a new folder; the archive is written as OUT.tar.gz"
    )
    bundle.add_argument(
        "--project", type=InputFolder, default=Path("."), help="the project's git checkout (default: .)"
    )
    bundle.add_argument(
        "--results", type=InputFolder, default=Path(plan.RESULTS), help="the DAG's results folder (default results)"
    )
    bundle.add_argument(
        "--config",
        action="append",
        type=InputFile,
        default=[],
        metavar="FILE",
        help="a config file the run used, in the order given to snakemake (repeatable)",
    )
    bundle.add_argument(
        "--allow-dirty",
        action="store_true",
        help="bundle a checkout with uncommitted changes (HEAD plus the recorded diff)",
    )
    bundle.add_argument("--wheels", action="store_true", help="add a wheelhouse of the hash lock (pip download)")
    bundle.add_argument("--image", help="the container image the run used: a .sif file or NAME@sha256:DIGEST")

    verify_bundle = command(
        "verify-bundle",
        "check a bundle alone: root digest, checksums, manifest hashes; regrade both passes "
        "of every run and recompute every derived file, comparing bytes",
    )
    verify_bundle.add_argument(
        "bundle", type=InputFileOrFolder, help="the bundle folder `ifaudit bundle` made, or its .tar.gz"
    )
    verify_bundle.add_argument("--expect", metavar="DIGEST", help="the root digest cited (sha256:...)")
    verify_bundle.add_argument(
        "--mirror", type=InputFolder, help="a dataset mirror for datasets the bundle could not redistribute"
    )
    verify_bundle.add_argument("--checksums-only", action="store_true", help="skip regrading and recomputing")

    def statistics_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples (default 10000)")
        sub.add_argument("--level", type=float, default=0.95, help="interval level (default 0.95)")
        sub.add_argument(
            "--interval",
            choices=INTERVAL_CHOICES,
            default="percentile",
            help="percentile (default) or bca: bias-corrected and accelerated, its bias term the "
            "mid-rank of the estimate among the resamples (ties count half, as in scipy)",
        )
        sub.add_argument("--seed", type=int, default=0, help="seed of the resampled prompt indices")

    stats = command("stats", "a run's accuracies with cluster-bootstrap intervals and breakdown")
    _add_task_option(stats, DEFAULT_TASK, "the run's task: which metrics it has")
    stats.add_argument("--grades", type=InputFile, required=True, help="the run's verified grades JSONL")
    stats.add_argument("--prompts", type=InputFile, required=True, help="the run's prompt set (JSONL)")
    stats.add_argument("--out", type=OutputFile, required=True, help="the statistics to write (JSON)")
    statistics_options(stats)

    compare = command("compare", "paired comparison of two runs on the same prompts (A minus B)")
    for side in ("a", "b"):
        compare.add_argument(
            f"--{side}-grades", type=InputFile, required=True, help=f"run {side.upper()}'s verified grades JSONL"
        )
        compare.add_argument(
            f"--{side}-prompts",
            type=InputFile,
            required=True,
            help=f"run {side.upper()}'s prompt set (the same prompts, in the same order)",
        )
    _add_task_option(compare, DEFAULT_TASK, "the task both runs belong to")
    compare.add_argument("--out", type=OutputFile, required=True, help="the comparison to write (JSON)")
    statistics_options(compare)

    many = command(
        "compare-many",
        "paired comparisons of many runs on one prompt set in one process; each pair's file is what "
        "`ifaudit compare` writes for it",
    )
    many.add_argument("--runs", nargs="+", required=True, help="the runs' names, in order")
    many.add_argument("--grades", type=InputFile, nargs="+", required=True, help="each run's verified grades JSONL")
    many.add_argument("--prompts", type=InputFile, nargs="+", required=True, help="each run's prompt set (JSONL)")
    chosen = many.add_mutually_exclusive_group()
    chosen.add_argument(
        "--pair", nargs=2, action="append", metavar=("A", "B"), help="compare A minus B; repeatable, in order"
    )
    chosen.add_argument("--all-pairs", action="store_true", help="every pair of --runs, A before B in their order")
    _add_task_option(many, DEFAULT_TASK, "the task of the runs (of each pair's A)")
    many.add_argument(
        "--out-dir", type=OutputFolder, required=True, help="the comparisons folder: writes A/B.json for each pair"
    )
    statistics_options(many)

    audit = command(
        "audit-prompts",
        "find settings the grader replaces and prompt texts that contradict their settings",
    )
    _add_task_option(audit, DEFAULT_TASK, "whose checkers read the settings")
    audit.add_argument("--prompts", type=InputFile, required=True, help="the prompt set to audit (JSONL)")
    audit.add_argument("--out", type=OutputFile, required=True, help="the audit to write (JSON)")
    _add_grader_options(audit)
    _add_nltk_option(audit)

    import_log = command(
        "import-log",
        "turn a harness's log (lm-eval, leaderboard details, inspect, OpenAI batch, JSONL) into a "
        "response file and a record of the harness's own verdicts and reported scores",
    )
    import_log.add_argument(
        "--format",
        required=True,
        choices=_LazyChoices(_log_formats),
        metavar="FORMAT",
        help="the log's format; one of: %(choices)s",
    )
    import_log.add_argument(
        "--log",
        type=InputFileOrFolder,
        required=True,
        help="the log: a file, or a folder laid out as a leaderboard details dataset",
    )
    import_log.add_argument(
        "--options-json",
        default=None,
        help="the run's import settings as a JSON object (results file, custom_id pattern, "
        "fields, config, split, repo, revision; see docs/importing.md)",
    )
    _add_task_option(import_log, DEFAULT_TASK, "whose prompt set the log is graded against")
    import_log.add_argument("--prompts", type=InputFile, required=True, help="the pinned prompt set (JSONL)")
    import_log.add_argument("--out", type=OutputFile, required=True, help="the response file to write (JSONL)")
    import_log.add_argument(
        "--harness",
        type=OutputFile,
        required=True,
        help="the harness record to write (JSON): verdicts, reported scores, provenance",
    )

    claims = command(
        "audit-claims",
        "set a harness's reported and per-response verdicts beside the pinned grader's, and find the "
        "cause of every disagreement",
    )
    _add_task_option(claims, DEFAULT_TASK, "whose registry regrades the disagreeing instructions")
    claims.add_argument("--prompts", type=InputFile, required=True, help="the pinned prompt set (JSONL)")
    claims.add_argument("--responses", type=InputFile, required=True, help="the imported response file")
    claims.add_argument("--grades", type=InputFile, required=True, help="the verified grades")
    claims.add_argument("--harness", type=InputFile, required=True, help="the harness record written by import-log")
    claims.add_argument("--out", type=OutputFile, required=True, help="claims JSON to write")
    claims.add_argument("--table", type=OutputFile, required=True, help="disagreements CSV to write")
    _add_grader_options(claims)
    _add_nltk_option(claims)
    statistics_options(claims)

    report = command("report", "tables (CSV, JSON), Markdown report and plots from a report plan")
    report.add_argument(
        "--plan", type=InputFile, required=True, help="JSON file naming the runs' outputs (the DAG stages it)"
    )
    report.add_argument(
        "--plan-sha256", required=True, help="the sha256 the plan's bytes must have (a plan changed since is refused)"
    )
    report.add_argument(
        "--out-dir",
        type=OutputFolder,
        required=True,
        help="folder for report.md, the CSV and JSON tables, the HTML tables and plots/",
    )
    return parser
