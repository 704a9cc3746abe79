"""The `ifaudit` command: the only face of the package; every DAG rule calls one subcommand.

It parses (the vocabulary is ifaudit.cli_parser), turns the options into the typed settings a
step takes, checks every path before any work, calls the step and reports in one line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ifaudit.cli_parser import EXAMPLES, build_parser
from ifaudit.core.errors import IfauditError, InputError
from ifaudit.core.terminal import printable
from ifaudit.io import variables
from ifaudit.io.canonical import atomic_write_bytes, read_staged_json, write_json
from ifaudit.io.paths import InputFile, InputFileOrFolder, check_output_folder, check_paths
from ifaudit.steps.planning import plan

if TYPE_CHECKING:
    from ifaudit.tasks.base import GradingOptions, Task

__all__ = ["EXAMPLES", "build_parser", "main"]

DEFAULT_PIN = Path(plan.GRADER_PIN)
INFOBENCH_PIN = Path(plan.INFOBENCH_PIN)


def get_task(name: str) -> Task:
    """The registry's task (imported here: a command that grades nothing starts without it)."""
    from ifaudit.tasks.registry import get_task as registered

    return registered(name)


def _say(*lines: str) -> int:
    """Print a command's lines, each one line whatever names it holds (core.terminal)."""
    for line in lines:
        print(printable(line), file=sys.stderr)
    return 0


def _project_file(relative: Path) -> Path:
    """A file in the working folder (a project checkout), else beside an editable install."""
    if relative.is_file():
        return relative
    beside_source = Path(__file__).resolve().parents[2] / relative
    return beside_source if beside_source.is_file() else relative


def _default_pin(task: str | None = None) -> Path:
    """Google's pin (IFAUDIT_PIN, else the project's), or the pin of a task that has its own."""
    pin_file = get_task(task).pin_file if task else str(DEFAULT_PIN)
    if Path(pin_file) != DEFAULT_PIN:
        return _project_file(Path(pin_file))
    return variables.input_file(variables.PIN) or _project_file(DEFAULT_PIN)


def _resources() -> Path:
    """IFAUDIT_RESOURCES's folder, else ./resources: refused at once when it is a file (or
    anything but a folder), not when the first thing is written into it."""
    named = variables.output_folder(variables.RESOURCES)
    if named is None:
        check_output_folder(plan.RESOURCES)
    return named or Path(plan.RESOURCES)


# --- the options of a subcommand as the typed settings its step takes ---------------------------


def _grading_options(args: argparse.Namespace) -> GradingOptions:
    """The grader's and NLTK's options (every subcommand that grades has them)."""
    from ifaudit.tasks.base import GradingOptions

    return GradingOptions(
        resources=_resources(),
        grader=args.grader,
        pin=args.pin or _default_pin(getattr(args, "task", None)),
        grader_version=args.grader_version,
        vendor_dir=args.vendor_dir,
        sources=tuple(args.sources),
        offline=args.offline,
        nltk_mirror=args.nltk_mirror,
    )


def _grade_options(args: argparse.Namespace) -> GradingOptions:
    """`grade`'s: the grader's, its workers and progress, and a judged task's recorded verdicts."""
    from ifaudit.steps.grading.live import progress_bar

    return dataclasses.replace(
        _grading_options(args),
        jobs=args.jobs,
        progress=progress_bar(not args.quiet, f"grading {args.out.name}"),
        judgements=args.judgements,
        store=args.store,
        replay_judge=lambda: (_judge_settings(args), _judge_protocol(args)),
    )


def _checker_registry(args: argparse.Namespace, task: Task):
    """The registry of a task graded by checkers (what the audits read the settings with)."""
    from ifaudit.tasks.base import CheckerTask

    if not isinstance(task, CheckerTask):
        raise IfauditError(f"task {task.name} is not graded by checkers: it has no instruction settings to audit")
    registry, _ = task.environment(_grading_options(args))
    return registry


def _judge_protocol(args: argparse.Namespace):
    """The judging protocol by name; the reference's reads its SYS_MSG from the pinned
    evaluation.py, materialized and verified here."""
    from ifaudit.io.remote.pins import default_sources, load_pin
    from ifaudit.judging.judge_protocol import REFERENCE, choose_protocol

    pin = load_pin(args.infobench_pin or _project_file(INFOBENCH_PIN), args.infobench_version)
    sources = default_sources(pin, args.infobench_sources, offline=args.offline, variable=variables.INFOBENCH_SOURCE)
    return choose_protocol(args.judge_protocol or REFERENCE, pin, _resources() / "vendor" / "infobench", sources)


def _judge_settings(args: argparse.Namespace):
    from ifaudit.judging.judge import JudgeSettings

    if not args.judge_model:
        raise IfauditError("a judged task needs --judge-model (or --judgements with recorded verdicts)")
    return JudgeSettings(
        model=args.judge_model,
        base_url=args.judge_base_url,
        temperature=args.judge_temperature,
        max_tokens=args.judge_max_tokens,
        api_key_env=args.judge_api_key_env,
        concurrency=args.judge_concurrency,
    )


def _statistics_settings(args: argparse.Namespace):
    from ifaudit.steps.grading.analysis import Settings

    return Settings(resamples=args.resamples, level=args.level, method=args.interval, seed=args.seed)


def _not_a_json_number(constant: str) -> None:
    raise ValueError(f"{constant}, not a JSON number")


def _finite(text: str) -> float:
    """A JSON number as a float: one too large for a float (`1e999`) is not read as infinity."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text}, a number too large for a float")
    return value


def _json_argument(option: str, text: str, field: str) -> dict:
    """A JSON object given on the command line, or one line saying what is wrong with it (Python
    reads NaN and Infinity, which JSON has not)."""
    try:
        value = json.loads(text, parse_constant=_not_a_json_number, parse_float=_finite)
    except json.JSONDecodeError as error:
        raise InputError(f"{option} is not JSON: {error.msg} at column {error.colno}", field=field) from None
    except ValueError as error:
        raise InputError(f"{option} holds {error}", field=field) from None
    if not isinstance(value, dict):
        raise InputError(f"{option}: expected a JSON object", field=field)
    return value


def _split_pair(spec: str) -> tuple[str, Path]:
    label, _, path = spec.partition("=")
    if not path:
        raise IfauditError(f"expected LABEL=PATH, got {spec!r}")
    return label, Path(path)


# --- one function per subcommand: settings in, the step called, its line out --------------------


def cmd_vendor(args: argparse.Namespace) -> int:
    recorded = get_task(args.task).prepare(_grading_options(args), record=bool(args.record))
    if args.record:
        write_json(args.record, recorded)
    return 0


def cmd_fetch(args: argparse.Namespace) -> int:
    from ifaudit.io.remote.fetch import fetch
    from ifaudit.io.remote.sources import Holds, parse_source

    sources = [parse_source(spec, Holds.FILE) for spec in args.sources]
    fetch(args.name, args.out, args.record, sources, args.sha256, _resources() / "checksums")
    return 0


def cmd_grade(args: argparse.Namespace) -> int:
    from ifaudit.steps.grading.grade import CanaryFiles, GradeRequest, grade_shard

    if args.canary_out is None and (args.canary or args.canary_prompts or args.canary_responses):
        raise IfauditError("--canary, --canary-prompts and --canary-responses go with --canary-out")
    canary = (
        CanaryFiles(args.canary_out, args.canary, args.canary_prompts, args.canary_responses)
        if args.canary_out is not None
        else None
    )
    request = GradeRequest(
        get_task(args.task), args.prompts, args.responses, args.out, args.shard, canary, args.audit_out
    )
    return _say(grade_shard(request, _grade_options(args)))


def cmd_generate(args: argparse.Namespace) -> int:
    from ifaudit.steps.grading.live import GenerateRequest, generate_responses

    model = _json_argument("--model-json", args.model_json, "model")
    request = GenerateRequest(
        get_task(args.task), args.prompts, model, args.store, args.replay_only, args.out, args.record, not args.quiet
    )
    return _say(generate_responses(request))


def cmd_judge(args: argparse.Namespace) -> int:
    from ifaudit.steps.grading.live import JudgeRequest, judge_responses

    request = JudgeRequest(get_task(args.task), args.prompts, args.responses, args.store, args.record)
    return _say(judge_responses(request, _judge_settings(args), _judge_protocol(args)))


def cmd_canary(args: argparse.Namespace) -> int:
    from ifaudit.io.lifetime import built_to_last
    from ifaudit.steps.grading.canary import certify

    task = get_task(args.task)
    with built_to_last():  # a grading process's tables, as `grade` builds them
        passed = certify(
            task, task.load(_grading_options(args)), args.canary, args.prompts, args.responses, args.out, "--"
        )
    return 0 if passed or not args.require_pass else 1


def cmd_selfcheck(args: argparse.Namespace) -> int:
    from ifaudit.steps.grading.canary import selfcheck

    return 0 if selfcheck(get_task(args.task), args.config, args.mirror, _grading_options(args), args.out) else 1


def _combine_canaries(verdicts: list[Path], out: Path) -> str:
    from ifaudit.steps.grading.canary import combine_verdicts, combined_line

    combined = combine_verdicts({str(path): path.read_bytes() for path in verdicts})
    atomic_write_bytes(out, combined)
    return combined_line(json.loads(combined), len(verdicts), out)


def cmd_batch(args: argparse.Namespace) -> int:
    from ifaudit.steps.grading.batch import run_batch

    steps = read_staged_json(args.steps, args.steps_sha256)
    return _say(run_batch(steps, args.steps, run_command, args.after, args.record))


def cmd_check_batches(args: argparse.Namespace) -> int:
    from ifaudit.steps.grading.batch import check_batches

    failed = check_batches(args.records, args.out)
    for line in failed[:-1]:
        print(f"ifaudit: error: {printable(line)}", file=sys.stderr)
    if failed:  # the last line names them all: the one line Snakemake's failure hook repeats
        more = f" ({len(failed) - 1} more runs failed: see above)" if len(failed) > 1 else ""
        raise IfauditError(f"{failed[-1]}{more}")
    return _say(f"every run of {len(args.records)} batches done -> {args.out}")


def cmd_combine_canaries(args: argparse.Namespace) -> int:
    return _say(_combine_canaries(args.verdicts, args.out))


def cmd_combine_audits(args: argparse.Namespace) -> int:
    from ifaudit.steps.grading.disclosures import combine_audits

    atomic_write_bytes(args.out, combine_audits({str(path): path.read_bytes() for path in args.audits}))
    return _say(f"prompt audit of {len(args.audits)} grading processes, all identical -> {args.out}")


def cmd_verify(args: argparse.Namespace) -> int:
    from ifaudit.steps.grading.passes import PassOutputs, verify_passes

    if (args.canaries is None) != (args.canary_out is None):
        raise InputError("--canaries and --canary-out go together", field="--canary-out")
    said = []
    if args.canaries is not None:  # the run's own canary verdict, from the processes that graded it
        said.append(_combine_canaries(args.canaries, args.canary_out))
    digest = verify_passes(args.first, args.second, PassOutputs(args.first_out, args.second_out, args.out, args.record))
    return _say(*said, f"passes agree byte for byte (sha256 {digest}) -> {args.out}")


def cmd_summarize(args: argparse.Namespace) -> int:
    from ifaudit.steps.grading.summary import summarize

    task = get_task(args.task)
    prompts = task.read_prompts(args.prompts)
    summary = summarize(
        task, args.run, args.label, args.grades, prompts, args.canary, args.responses, args.published_verdicts
    )
    write_json(args.out, summary)
    state = "counted" if summary["counted"] else "NOT COUNTED: " + "; ".join(summary["not_counted_because"])
    return _say(f"{args.run}: {state}")


def cmd_counted(args: argparse.Namespace) -> int:
    from ifaudit.steps.reporting.headlines import said_by_counted

    headlines, lines = said_by_counted(args.results)
    for line in headlines:  # what `make run` ends with: each run's figures
        print(printable(line))
    for line in lines:
        print(f"ifaudit: error: {printable(line)}", file=sys.stderr)
    return 1 if lines else 0


def cmd_manifest(args: argparse.Namespace) -> int:
    from ifaudit.steps.grading.manifest import build_manifest

    files = dict(_split_pair(spec) for spec in args.file)
    datasets = dict(_split_pair(spec) for spec in args.dataset)
    config = _json_argument("--config-json", args.config_json, "config")
    write_json(args.out, build_manifest(args.run, config, files, datasets))
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    from ifaudit.steps.grading.analysis import run_statistics
    from ifaudit.steps.grading.summary import read_grades

    task = get_task(args.task)
    prompts = task.read_prompts(args.prompts)
    write_json(args.out, run_statistics(task, prompts, read_grades(args.grades), _statistics_settings(args)))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from ifaudit.steps.grading.analysis import compare_runs
    from ifaudit.steps.grading.summary import read_grades

    task = get_task(args.task)
    sides = [
        (task.read_prompts(prompts), read_grades(grades))
        for prompts, grades in ((args.a_prompts, args.a_grades), (args.b_prompts, args.b_grades))
    ]
    write_json(args.out, compare_runs(task, *sides[0], *sides[1], _statistics_settings(args)))
    return 0


def cmd_compare_many(args: argparse.Namespace) -> int:
    from ifaudit.steps.grading.comparisons import every_pair, write_comparisons

    if not args.all_pairs and not args.pair:
        raise InputError("no pairs to compare: give --pair A B (repeatable) or --all-pairs", field="pairs")
    pairs = every_pair(args.runs) if args.all_pairs else [tuple(pair) for pair in args.pair]
    task = get_task(args.task)
    write_comparisons(task, args.runs, args.grades, args.prompts, pairs, _statistics_settings(args), args.out_dir)
    return 0


def cmd_audit_prompts(args: argparse.Namespace) -> int:
    from ifaudit.steps.grading.disclosures import audit_prompts

    task = get_task(args.task)
    write_json(args.out, audit_prompts(_checker_registry(args, task), task.read_prompts(args.prompts)))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from ifaudit.steps.reporting.report import write_report

    write_report(read_staged_json(args.plan, args.plan_sha256), args.out_dir)
    return _say(f"report written to {args.out_dir / 'report.md'}")


def cmd_agreement(args: argparse.Namespace) -> int:
    from ifaudit.steps.grading.analysis import agreement_step

    return _say(agreement_step(args.annotations, args.out))


def cmd_bundle(args: argparse.Namespace) -> int:
    from ifaudit.steps.artifact.bundle import BundleRequest, made_lines, make_bundle

    request = BundleRequest(
        project=args.project,
        results=args.results,
        resources=_resources(),
        out=args.out,
        configs=tuple(args.config),
        allow_dirty=args.allow_dirty,
        wheels=args.wheels,
        image=args.image,
    )
    made = make_bundle(request)
    _say(*made_lines(made, args.out))
    print(made["root_digest"])
    return 0


def cmd_verify_bundle(args: argparse.Namespace) -> int:
    from ifaudit.steps.artifact.bundle_verify import verify_bundle_step

    from ifaudit.tasks.registry import TASKS

    own_pins = {task.pin_file: _default_pin(name) for name, task in TASKS.items()}
    own_pins[str(INFOBENCH_PIN)] = _project_file(INFOBENCH_PIN)
    return _say(*verify_bundle_step(args.bundle, args.expect, args.mirror, args.checksums_only, own_pins))


def cmd_import_log(args: argparse.Namespace) -> int:
    from ifaudit.steps.auditing.importing import import_log

    task = get_task(args.task)
    options = _json_argument("--options-json", args.options_json, "import") if args.options_json else {}
    record = import_log(args.format, args.log, options, task.read_prompts(args.prompts), args.out, args.harness)
    return _say(
        f"imported {record['samples']} responses ({len(record['verdicts'])} with the harness's verdicts) from "
        f"{record['tool']['name']} log {args.log} -> {args.out}"
    )


def cmd_audit_claims(args: argparse.Namespace) -> int:
    from ifaudit.steps.auditing.importing import ClaimsFiles, audit_claims_step, claims_lines
    from ifaudit.tasks.base import CheckerTask

    task = get_task(args.task)
    files = ClaimsFiles(args.grades, args.responses, args.harness, args.out, args.table)
    registry = _checker_registry(args, task)
    others = task.other_graders(_grading_options(args)) if isinstance(task, CheckerTask) else ()
    prompts, settings = task.read_prompts(args.prompts), _statistics_settings(args)
    result = audit_claims_step(registry, task.metrics, prompts, files, settings, others, dict(task.data_versions))
    return _say(*claims_lines(result, files))


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    name.removeprefix("cmd_").replace("_", "-"): handler
    for name, handler in list(globals().items())
    if name.startswith("cmd_")
}


# --- paths named inside option values, checked with the path arguments before any work ---------


def _json_object(text: str | None) -> dict:
    """`text` as a JSON object, or {} when it is none: the command says what is wrong with it."""
    try:
        value = json.loads(text) if text else {}
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _plan_file(path: Path) -> dict:
    """The report plan file's object, for the paths it names; {} when it is not a regular file
    (the path check names that) or not a JSON object (the command does)."""
    try:
        return _json_object(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, UnicodeDecodeError):
        return {}


def _nested_inputs(args: argparse.Namespace) -> list[Path]:
    """The input paths named inside option values: manifest's `--file LABEL=PATH` and `--dataset
    NAME=RECORD`, import-log's file settings (`results`, `task_config`), the files of report's plan, and the local grader
    sources (`--from`, `--infobench-from`: a folder or an archive). A value that does not parse is
    left to the command. fetch's `--from` is not here: a source that is not a file is a miss, and
    the next source is tried."""
    files: list[str] = []
    if args.command == "manifest":
        files = [spec.partition("=")[2] for spec in (*args.file, *args.dataset) if spec.partition("=")[2]]
    elif args.command == "import-log":
        from ifaudit.inputs.importers import FILE_SETTINGS

        settings = _json_object(args.options_json)
        files = [settings[name] for name in FILE_SETTINGS if isinstance(settings.get(name), str)]
    elif args.command == "report":
        files = [path for paths in plan.report_inputs(_plan_file(args.plan)).values() for path in paths]
    sources = (
        [] if args.command == "fetch" else [*getattr(args, "sources", ()), *getattr(args, "infobench_sources", ())]
    )
    local = [InputFileOrFolder(spec).expanduser() for spec in sources if "://" not in spec]
    return [*(InputFile(path) for path in files), *local]


def _check_text(args: argparse.Namespace) -> None:
    """Every word of the command line is text an output can hold: a word of bytes that are not
    UTF-8 (Python reads them as lone surrogates, `$'\\xff'`) is refused before any work, where
    it would end in a traceback when the first file naming it is written."""
    for name, value in vars(args).items():
        words = [value]
        while words:
            word = words.pop()
            if isinstance(word, list | tuple):  # a repeated option's values, `--pair A B`'s pairs
                words.extend(word)
            elif isinstance(word, str | Path) and not str(word).isprintable():
                try:
                    str(word).encode("utf-8")
                except UnicodeEncodeError as error:
                    raise InputError(
                        f"{printable(str(word))} is not UTF-8 text (character {error.start + 1})",
                        field=f"--{name.replace('_', '-')}",
                    ) from None


def _parsed(words: Sequence[str]) -> argparse.Namespace:
    # The subcommand is the first word that is not an option (before it, only --help and --version).
    named = next((word for word in words if not word.startswith("-")), None)
    return build_parser(only=named if named in EXAMPLES else None).parse_args(words)


def _run(args: argparse.Namespace) -> int:
    _check_text(args)
    # Before any work: a bad path is found in a moment, not after grading.
    check_paths([*vars(args).values(), _nested_inputs(args)])
    return COMMANDS[args.command](args)


def run_command(words: Sequence[str]) -> int:
    """One command line run in this process, as `ifaudit WORDS` runs it, its refusal raised (a
    batch's step: ifaudit.steps.grading.batch)."""
    return _run(_parsed(words))


def main(argv: Sequence[str] | None = None) -> int:
    args = _parsed(sys.argv[1:] if argv is None else list(argv))
    try:
        return _run(args)
    except IfauditError as error:  # one line: a name in it cannot print a line of its own
        print(f"ifaudit: error: {printable(str(error))}", file=sys.stderr)
        return error.exit_code


if __name__ == "__main__":
    sys.exit(main())
