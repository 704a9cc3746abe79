"""The `ifaudit` command: the only face of the package; every DAG rule calls one subcommand."""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, overload

from ifaudit import __version__
from ifaudit.io.canonical import write_json, write_jsonl
from ifaudit.core.errors import IfauditError
from ifaudit.tasks.graders import GRADER_CHOICES, UPSTREAM
from ifaudit.io.paths import (
    InputFile,
    InputFileOrFolder,
    InputFolder,
    OutputFile,
    OutputFolder,
    check_paths,
)
from ifaudit.tasks.registry import DEFAULT_JUDGED_TASK, DEFAULT_TASK, TASKS, get_task, read_task_prompts
from ifaudit.tasks.base import CheckerTask, Grading, GradingOptions, Task

if TYPE_CHECKING:
    from ifaudit.core.records import Prompt, Response
    from ifaudit.tasks.graders import CheckerRegistry

T = TypeVar("T")

DEFAULT_PIN = Path("vendor/google_ifeval/pin.toml")
INFOBENCH_PIN = Path("vendor/infobench/pin.toml")


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


def _project_file(relative: Path) -> Path:
    """A file in the working folder (a project checkout), else beside an editable install."""
    if relative.is_file():
        return relative
    beside_source = Path(__file__).resolve().parents[2] / relative
    return beside_source if beside_source.is_file() else relative


def _default_pin() -> Path:
    if env := os.environ.get("IFAUDIT_PIN"):
        return Path(env)
    return _project_file(DEFAULT_PIN)


def _resources() -> Path:
    return Path(os.environ.get("IFAUDIT_RESOURCES", "resources"))


def _progress(quiet: bool, label: str):
    def wrap(items: Iterable[T], total: int) -> Iterable[T]:
        if quiet:
            return items
        from tqdm import tqdm

        return tqdm(items, total=total, desc=label, unit="response", file=sys.stderr, mininterval=1.0)

    return wrap


def _add_grader_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--grader",
        choices=GRADER_CHOICES,
        default=os.environ.get("IFAUDIT_GRADER", UPSTREAM),
        help="the pinned upstream grader (default) or the labelled registry stand-in",
    )
    parser.add_argument("--pin", type=InputFile, default=None, help="pin file (default: vendor/google_ifeval/pin.toml)")
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


def _grading_options(args: argparse.Namespace, progress_label: str | None = None) -> GradingOptions:
    """The grading settings of a subcommand's options, as one typed value for the task."""
    return GradingOptions(
        resources=_resources(),
        grader=args.grader,
        pin=args.pin or _default_pin(),
        vendor_dir=args.vendor_dir,
        sources=tuple(args.sources),
        offline=args.offline,
        nltk_mirror=args.nltk_mirror,
        jobs=getattr(args, "jobs", 1),
        progress=_progress(getattr(args, "quiet", True) or progress_label is None, progress_label or ""),
        judgements=getattr(args, "judgements", None),
        store=getattr(args, "store", None),
        replay_judge=(lambda: (_judge_settings(args), _judge_protocol(args)))
        if hasattr(args, "judge_protocol")
        else None,
    )


def _checker_registry(args: argparse.Namespace, task: Task) -> CheckerRegistry:
    """The registry of a task graded by checkers (what the audits read the settings with)."""
    if not isinstance(task, CheckerTask):
        raise IfauditError(f"task {task.name} is not graded by checkers: it has no instruction settings to audit")
    registry, _ = task.environment(_grading_options(args))
    return registry


def _judge_protocol(args: argparse.Namespace):
    """The judging protocol by name; the reference's reads its SYS_MSG from the pinned
    evaluation.py, materialized and verified here."""
    from ifaudit.judging.judge_protocol import REFERENCE, choose_protocol
    from ifaudit.io.pins import default_sources, load_pin

    pin = load_pin(args.infobench_pin or _project_file(INFOBENCH_PIN), args.infobench_version)
    sources = default_sources(pin, args.infobench_sources, offline=args.offline, env_var="IFAUDIT_INFOBENCH_SOURCE")
    name = args.judge_protocol or REFERENCE
    return choose_protocol(name, pin, _resources() / "vendor" / "infobench", sources)


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


def cmd_judge(args: argparse.Namespace) -> int:
    from ifaudit.judging.infobench import judge_all, questions_of
    from ifaudit.judging.judge import JudgementStore, RecordedJudge
    from ifaudit.judging.judge_protocol import judge_identity
    from ifaudit.io.responses import read_responses

    task = get_task(args.task)
    prompts = read_task_prompts(task, args.prompts)
    responses = read_responses(args.responses, prompts)
    settings, protocol = _judge_settings(args), _judge_protocol(args)
    judge = RecordedJudge(JudgementStore(args.store), settings, live=True, protocol=protocol.identity())
    verdicts = judge_all(judge, settings, protocol, prompts, responses, progress=_progress(False, "judging"))
    by_key = {prompt.key: prompt for prompt in prompts}
    questions = sum(len(questions_of(by_key[key])) for key, _ in verdicts)
    asked = sum(len(v["verdicts"]) for v in verdicts.values())
    unparsed = sum(v is None for found in verdicts.values() for v in found["verdicts"])
    write_json(
        args.record,
        {
            "judge": judge_identity(settings, protocol).as_record(),
            "live_requests": judge.live_calls,
            "questions": questions,
            "asked": asked,
            "unasked": questions - asked,
            "responses": len(verdicts),
            "unparsed": unparsed,
        },
    )
    print(
        f"judged {len(verdicts)} responses ({asked} of {questions} questions asked, {judge.live_calls} new "
        f"requests to {settings.base_url}, {unparsed} answers unparsed; protocol {protocol.name}) into "
        f"{args.store}",
        file=sys.stderr,
    )
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    import time

    from ifaudit.inputs.generation import ModelSettings, generate, recorded_asker, side_record
    from ifaudit.io.store import RequestStore

    try:
        spec = json.loads(args.model_json)
    except json.JSONDecodeError as error:
        raise IfauditError(f"--model-json: not JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(spec, dict):
        raise IfauditError("--model-json: expected a JSON object")
    settings = ModelSettings.from_dict(spec)
    prompts = read_task_prompts(get_task(args.task), args.prompts)
    asker = recorded_asker(settings, RequestStore(args.store), live=not args.replay_only)
    started = time.monotonic()
    bar = None
    if not args.quiet:
        from tqdm import tqdm

        bar = tqdm(
            total=len(prompts) * settings.samples, desc="generating", unit="response", file=sys.stderr, mininterval=1.0
        )

    def progress(done: int, tally) -> None:
        if bar is not None:
            bar.set_postfix(tokens=tally.usage.get("completion_tokens", 0), refresh=False)
            bar.update(done)

    records, tally = generate(settings, prompts, asker, on_prompt=progress)
    if bar is not None:
        bar.close()
    write_jsonl(args.out, records)
    record = side_record(settings, records, tally, asker.live_calls, time.monotonic() - started)
    write_json(args.record, record)
    usage = ", ".join(f"{name} {count}" for name, count in record["usage"].items()) or "not reported"
    print(
        f"generated {len(records)} responses ({record['finish_reasons'].get('length', 0)} cut at the length limit) "
        f"from {tally.requests} requests ({asker.live_calls} new to {settings.base_url}, "
        f"{tally.requests - asker.live_calls} replayed from {args.store}); tokens: {usage}",
        file=sys.stderr,
    )
    return 0


def cmd_vendor(args: argparse.Namespace) -> int:
    recorded = get_task(args.task).prepare(_grading_options(args), record=bool(args.record))
    if args.record:
        write_json(args.record, recorded)
    return 0


def cmd_fetch(args: argparse.Namespace) -> int:
    from ifaudit.io.fetch import fetch
    from ifaudit.io.sources import Holds, parse_source

    fetch(
        args.name,
        args.out,
        args.record,
        [parse_source(s, Holds.FILE) for s in args.sources],
        args.sha256,
        _resources() / "checksums",
    )
    return 0


def cmd_grade(args: argparse.Namespace) -> int:
    from ifaudit.tasks.grading import canonical_order
    from ifaudit.steps.passes import parse_shard, shard_slice
    from ifaudit.io.responses import read_responses

    if args.jobs < 1:
        raise IfauditError(f"--jobs {args.jobs}: expected at least 1 worker process")
    task = get_task(args.task)
    prompts = read_task_prompts(task, args.prompts)
    responses = canonical_order(prompts, read_responses(args.responses, prompts))
    index, count = parse_shard(args.shard)
    shard = shard_slice(responses, index, count)
    if args.canary_out is None and (args.canary or args.canary_prompts or args.canary_responses):
        raise IfauditError("--canary, --canary-prompts and --canary-responses go with --canary-out")
    grading = task.load(_grading_options(args, f"grading {args.out.name}"))
    if args.canary_out is not None:  # certify this very process, before it grades
        # The canary's datasets are most often the run's own files, read once for both.
        already_read = (
            (prompts, responses)
            if (args.canary_prompts, args.canary_responses) == (args.prompts, args.responses)
            else None
        )
        _canary(
            task,
            grading,
            args.canary,
            args.canary_prompts,
            args.canary_responses,
            args.canary_out,
            "--canary-",
            already_read,
        )
    if args.audit_out is not None:  # the prompt set's audit, with the registry this process grades with
        from ifaudit.steps.disclosures import grading_audit

        write_json(args.audit_out, grading_audit(task.name, grading, prompts))
    records = grading.grade(prompts, shard)
    digest = write_jsonl(args.out, records)
    print(
        f"graded {len(records)} of {len(responses)} responses (shard {index + 1} of {count}) -> {args.out} "
        f"(sha256 {digest})",
        file=sys.stderr,
    )
    return 0


def _canary(
    task: Task,
    grading: Grading,
    canary_file: Path | None,
    prompts: Path | None,
    responses: Path | None,
    out: Path,
    prefix: str,
    already_read: tuple[list[Prompt], list[Response]] | None = None,
) -> bool:
    """Run the task's canary with `grading`, write its verdict to `out` and say how it went.
    `already_read`: the records of `prompts` and `responses`, if the caller has read them."""
    from ifaudit.steps.canary import canary_inputs, canary_of, explain, needs_datasets, run_canary

    canary = canary_of(task, canary_file)
    if already_read is not None and needs_datasets(canary):
        items = already_read
    else:
        items = canary_inputs(task, canary, prompts, responses, f"{prefix}prompts and {prefix}responses")
    verdict = run_canary(canary, grading, task, *items, responses)
    write_json(out, verdict)
    for line in explain(verdict, task.name, out):
        print(line, file=sys.stderr)
    return verdict["passed"]


def cmd_canary(args: argparse.Namespace) -> int:
    task = get_task(args.task)
    passed = _canary(task, task.load(_grading_options(args)), args.canary, args.prompts, args.responses, args.out, "--")
    return 0 if passed or not args.require_pass else 1


def cmd_combine_canaries(args: argparse.Namespace) -> int:
    from ifaudit.steps.canary import combine_verdicts, combined_line
    from ifaudit.io.canonical import atomic_write_bytes

    combined = combine_verdicts({str(path): path.read_bytes() for path in args.verdicts})
    atomic_write_bytes(args.out, combined)
    print(combined_line(json.loads(combined), len(args.verdicts), args.out), file=sys.stderr)
    return 0


def cmd_combine_audits(args: argparse.Namespace) -> int:
    from ifaudit.steps.disclosures import combine_audits
    from ifaudit.io.canonical import atomic_write_bytes

    atomic_write_bytes(args.out, combine_audits({str(path): path.read_bytes() for path in args.audits}))
    print(f"prompt audit of {len(args.audits)} grading processes, all identical -> {args.out}", file=sys.stderr)
    return 0


def cmd_selfcheck(args: argparse.Namespace) -> int:
    """The canary of a task, its datasets fetched from the config's sources: does this
    environment (a fresh machine, a container being built) grade as the reference did?"""
    import tempfile

    import yaml

    from ifaudit.steps.canary import load_canary, needs_datasets
    from ifaudit.io.fetch import config_sources, fetch

    config = yaml.safe_load(args.config.read_text(encoding="utf-8"))
    canary = load_canary(args.task)
    work = Path(tempfile.mkdtemp(prefix="ifaudit-selfcheck-"))
    fetched: dict[str, Path | None] = {"prompts": None, "responses": None}
    if needs_datasets(canary):
        for role in fetched:
            name = canary[role]["dataset"]
            spec = config["datasets"][name]
            fetched[role] = target = work / f"{name}.jsonl"
            fetch(
                name,
                target,
                work / f"{name}.json",
                config_sources(spec, args.mirror, args.offline),
                spec.get("sha256"),
                work / "checksums",
            )
    # The canary with the committed canary file, the fetched datasets, and failure as failure.
    return cmd_canary(argparse.Namespace(**{**vars(args), **fetched, "canary": None, "require_pass": True}))


def cmd_verify(args: argparse.Namespace) -> int:
    from ifaudit.steps.passes import PassOutputs, verify_passes

    outs = PassOutputs(args.first_out, args.second_out, args.out, args.record)
    digest = verify_passes(args.first, args.second, outs)
    print(f"passes agree byte for byte (sha256 {digest}) -> {args.out}", file=sys.stderr)
    return 0


def cmd_summarize(args: argparse.Namespace) -> int:
    from ifaudit.steps.summary import summarize

    task = get_task(args.task)
    summary = summarize(
        task, args.run, args.label, args.grades, read_task_prompts(task, args.prompts), args.canary, args.responses
    )
    write_json(args.out, summary)
    state = "counted" if summary["counted"] else "NOT COUNTED: " + "; ".join(summary["not_counted_because"])
    print(f"{args.run}: {state}", file=sys.stderr)
    return 0


def cmd_manifest(args: argparse.Namespace) -> int:
    from ifaudit.steps.manifest import build_manifest

    files = dict(_split_pair(spec) for spec in args.file)
    datasets = dict(_split_pair(spec) for spec in args.dataset)
    write_json(args.out, build_manifest(args.run, json.loads(args.config_json), files, datasets))
    return 0


def _statistics_settings(args: argparse.Namespace):
    from ifaudit.steps.analysis import Settings

    return Settings(resamples=args.resamples, level=args.level, method=args.interval, seed=args.seed)


def cmd_stats(args: argparse.Namespace) -> int:
    from ifaudit.steps.analysis import run_statistics
    from ifaudit.steps.summary import read_grades

    task = get_task(args.task)
    write_json(
        args.out,
        run_statistics(
            task, read_task_prompts(task, args.prompts), read_grades(args.grades), _statistics_settings(args)
        ),
    )
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from ifaudit.steps.analysis import compare_runs
    from ifaudit.steps.summary import read_grades

    task = get_task(args.task)
    result = compare_runs(
        task,
        read_task_prompts(task, args.a_prompts),
        read_grades(args.a_grades),
        read_task_prompts(task, args.b_prompts),
        read_grades(args.b_grades),
        _statistics_settings(args),
    )
    write_json(args.out, result)
    return 0


def cmd_audit_prompts(args: argparse.Namespace) -> int:
    from ifaudit.steps.disclosures import audit_prompts

    task = get_task(args.task)
    registry = _checker_registry(args, task)
    write_json(args.out, audit_prompts(registry, read_task_prompts(task, args.prompts)))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from ifaudit.steps.report import write_report

    write_report(json.loads(args.plan_json), args.out_dir)
    print(f"report written to {args.out_dir / 'report.md'}", file=sys.stderr)
    return 0


def cmd_agreement(args: argparse.Namespace) -> int:
    from ifaudit.core.agreement import agreement_summary
    from ifaudit.io.jsonl import iter_objects

    rows = [row for _, row in iter_objects(args.annotations)]
    try:
        result = agreement_summary(rows)
    except ValueError as error:
        raise IfauditError(f"{args.annotations}: {error}") from None
    write_json(args.out, result)
    print(
        f"{result['items']} items, {result['annotators']} annotators: Fleiss' kappa {result['fleiss_kappa']}",
        file=sys.stderr,
    )
    return 0


def cmd_bundle(args: argparse.Namespace) -> int:
    from ifaudit.steps.bundle import BundleRequest, make_bundle

    made = make_bundle(
        BundleRequest(
            project=args.project,
            results=args.results,
            resources=_resources(),
            out=args.out,
            configs=tuple(args.config),
            allow_dirty=args.allow_dirty,
            wheels=args.wheels,
            image=args.image,
        )
    )
    print(
        f"bundled {made['files']} files into {args.out} and {made['archive']} (sha256 {made['archive_sha256']})",
        file=sys.stderr,
    )
    print(f"root digest (cite it): {made['root_digest']}", file=sys.stderr)
    print(f"check it with: ifaudit verify-bundle {args.out} --expect {made['root_digest']}", file=sys.stderr)
    print(made["root_digest"])
    return 0


def cmd_verify_bundle(args: argparse.Namespace) -> int:
    from ifaudit.steps.bundle_verify import verify_bundle

    unchecked = (
        "ifaudit: note: no --expect: authenticity NOT checked, only that the bundle agrees with itself "
        "(and the bundle's own code runs: docs/reviewers.md says how to run it contained)"
    )
    if not args.expect:
        print(unchecked, file=sys.stderr)
    own_pin = _default_pin()
    if not own_pin.is_file():
        print(f"ifaudit: note: no pin of this ifaudit at {own_pin}: the bundled pin is NOT compared", file=sys.stderr)
    result = verify_bundle(
        args.bundle,
        expect=args.expect,
        mirror=args.mirror,
        recompute_all=not args.checksums_only,
        own_pin=own_pin if own_pin.is_file() else None,
    )
    print(
        f"bundle verifies{'' if args.expect else ' (authenticity NOT checked: no --expect)'}: "
        f"root digest {result['root_digest']}; {result['files']} files match their checksums; "
        f"{result['manifest_hashes']} manifest hashes match; regraded byte-identically (both passes): "
        f"{', '.join(result['regraded']) or 'none'}; {result['recomputed']} derived files recomputed identically"
        + (f"; fetched (not redistributable): {', '.join(result['withheld'])}" if result["withheld"] else ""),
        file=sys.stderr,
    )
    if not args.expect:
        print(unchecked, file=sys.stderr)
    return 0


def cmd_import_log(args: argparse.Namespace) -> int:
    from ifaudit.core.errors import InputError
    from ifaudit.steps.importing import import_log

    task = get_task(args.task)
    try:
        options = json.loads(args.options_json) if args.options_json else {}
    except json.JSONDecodeError as exc:
        raise InputError(f"--options-json is not JSON: {exc.msg} at column {exc.colno}", field="import") from None
    if not isinstance(options, dict):
        raise InputError("--options-json must be a JSON object (the run's import settings)", field="import")
    record = import_log(args.format, args.log, options, read_task_prompts(task, args.prompts), args.out, args.harness)
    print(
        f"imported {record['samples']} responses ({len(record['verdicts'])} with the harness's verdicts) from "
        f"{record['tool']['name']} log {args.log} -> {args.out}",
        file=sys.stderr,
    )
    return 0


def cmd_audit_claims(args: argparse.Namespace) -> int:
    from ifaudit.steps.analysis import Settings
    from ifaudit.steps.importing import audit_claims_step

    task = get_task(args.task)
    prompts = read_task_prompts(task, args.prompts)
    registry = _checker_registry(args, task)
    result = audit_claims_step(
        registry,
        task.metrics,
        prompts,
        args.grades,
        args.responses,
        args.harness,
        Settings(resamples=args.resamples, level=args.level, method=args.interval, seed=args.seed),
        args.out,
        args.table,
    )
    print(
        f"claims of {result['harness']['tool']['name']}: {len(result['disagreements'])} verdicts differ from the "
        f"pinned grader's ({result['unexplained']} unexplained) -> {args.out}",
        file=sys.stderr,
    )
    if result["unexplained"]:
        print(
            f"ifaudit: warning: {result['unexplained']} disagreements with the harness have no established cause; "
            f"see {args.table}",
            file=sys.stderr,
        )
    return 0


def _split_pair(spec: str) -> tuple[str, Path]:
    label, _, path = spec.partition("=")
    if not path:
        raise IfauditError(f"expected LABEL=PATH, got {spec!r}")
    return label, Path(path)


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
        choices=sorted(TASKS),
        default=default,
        metavar="TASK",
        help=f"{purpose}; one of: {', '.join(sorted(TASKS))} (default {default})",
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
    "manifest": "ifaudit manifest --run my_model --config-json '{}' --file grades=grades.jsonl --out manifest.json",
    "agreement": "ifaudit agreement --annotations annotations.jsonl --out agreement.json",
    "bundle": "ifaudit bundle --out artifact/",
    "verify-bundle": "ifaudit verify-bundle artifact/",
    "stats": "ifaudit stats --grades grades.jsonl --prompts data/input_data.jsonl --interval bca --out stats.json",
    "compare": "ifaudit compare --a-grades a/grades.jsonl --a-prompts data/input_data.jsonl "
    "--b-grades b/grades.jsonl --b-prompts data/input_data.jsonl --out a_vs_b.json",
    "audit-prompts": "ifaudit audit-prompts --task ifeval --prompts data/input_data.jsonl --grader stand-in "
    "--out audit.json",
    "import-log": "ifaudit import-log --format lm-eval --log samples_ifeval.jsonl --options-json "
    '\'{"results": "results.json"}\' --prompts data/input_data.jsonl --out responses.jsonl '
    "--harness harness.json",
    "audit-claims": "ifaudit audit-claims --prompts data/input_data.jsonl --responses responses.jsonl "
    "--grades grades.jsonl --harness harness.json --out claims.json --table disagreements.csv",
    "report": 'ifaudit report --plan-json "$(cat plan.json)" --out-dir results   # the DAG writes the plan',
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ifaudit", description=__doc__)
    parser.add_argument("--version", action="version", version=f"ifaudit {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, run, help: str) -> argparse.ArgumentParser:  # noqa: A002 - argparse's word
        sub = commands.add_parser(
            name,
            help=help,
            description=help,
            epilog=f"example:\n  {EXAMPLES[name]}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        sub.set_defaults(handler=run)
        return sub

    vendor = command(
        "vendor",
        cmd_vendor,
        "materialize and verify the pinned grader; with --record, also "
        "load it and the NLTK data and record their fingerprint",
    )
    _add_grader_options(vendor)
    _add_nltk_option(vendor)
    vendor.add_argument("--record", type=OutputFile, help="write the grading environment's fingerprint here (JSON)")
    _add_task_option(vendor, DEFAULT_TASK, "whose registry to load for --record")

    fetch = command("fetch", cmd_fetch, "fetch a dataset from sources in order, verified by sha256")
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

    grade = command("grade", cmd_grade, "grade a response file, strict and loose, one response at a time")
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
        cmd_generate,
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
        cmd_judge,
        "ask the LLM judge the questions of a judged task, recording each "
        "request and answer (a recorded request is replayed, not re-asked)",
    )
    _add_task_option(judge, DEFAULT_JUDGED_TASK, "a judged task")
    judge.add_argument("--prompts", type=InputFile, required=True, help="the task's prompt set (JSONL)")
    judge.add_argument("--responses", type=InputFile, required=True, help="responses JSONL to judge")
    judge.add_argument("--record", type=OutputFile, required=True, help="JSON summary of the judging")
    judge.add_argument("--offline", action="store_true", help="never fetch the pinned evaluation.py from its URL")
    _add_judge_options(judge)

    canary = command("canary", cmd_canary, "regrade the task's fixed canary responses and write a verdict")
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
        cmd_combine_canaries,
        "one canary verdict of a task from those its grading processes wrote (`grade --canary-out`); "
        "it fails if any of them failed",
    )
    combine.add_argument("verdicts", type=InputFile, nargs="+", help="the grading processes' canary verdicts (JSON)")
    combine.add_argument("--out", type=OutputFile, required=True, help="the task's canary verdict to write (JSON)")

    combine_audits = command(
        "combine-audits",
        cmd_combine_audits,
        "one prompt set's audit from those its grading processes wrote (`grade --audit-out`), which must agree",
    )
    combine_audits.add_argument("audits", type=InputFile, nargs="+", help="the grading processes' audits (JSON)")
    combine_audits.add_argument("--out", type=OutputFile, required=True, help="the prompt set's audit (JSON)")

    selfcheck = command(
        "selfcheck",
        cmd_selfcheck,
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
        "verify", cmd_verify, "merge each grading pass's shards; keep the grades only if the passes are byte-identical"
    )
    verify.add_argument(
        "--first", type=InputFile, nargs="+", required=True, help="the first pass's shards (grades JSONL), in order"
    )
    verify.add_argument("--second", type=InputFile, nargs="+", required=True, help="the second pass's shards, in order")
    verify.add_argument("--first-out", type=OutputFile, required=True, help="the first pass, merged")
    verify.add_argument("--second-out", type=OutputFile, required=True, help="the second pass, merged")
    verify.add_argument("--out", type=OutputFile, required=True, help="the verified grades")
    verify.add_argument("--record", type=OutputFile, required=True, help="JSON record of the check")

    summarize = command("summarize", cmd_summarize, "metrics of a run from its verified grades")
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

    manifest = command("manifest", cmd_manifest, "the run's manifest: hashes of everything, versions, times")
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
        cmd_agreement,
        "Fleiss' kappa and WPLD of pairwise annotations (JSONL: id, labels [-1|0|1 per annotator], optional gold)",
    )
    agreement.add_argument("--annotations", type=InputFile, required=True, help="the annotations (JSONL)")
    agreement.add_argument("--out", type=OutputFile, required=True, help="the agreement summary to write (JSON)")

    bundle = command(
        "bundle",
        cmd_bundle,
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
        "--results", type=InputFolder, default=Path("results"), help="the DAG's results folder (default results)"
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
        cmd_verify_bundle,
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

    stats = command("stats", cmd_stats, "a run's accuracies with cluster-bootstrap intervals and breakdown")
    _add_task_option(stats, DEFAULT_TASK, "the run's task: which metrics it has")
    stats.add_argument("--grades", type=InputFile, required=True, help="the run's verified grades JSONL")
    stats.add_argument("--prompts", type=InputFile, required=True, help="the run's prompt set (JSONL)")
    stats.add_argument("--out", type=OutputFile, required=True, help="the statistics to write (JSON)")
    statistics_options(stats)

    compare = command("compare", cmd_compare, "paired comparison of two runs on the same prompts (A minus B)")
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

    audit = command(
        "audit-prompts",
        cmd_audit_prompts,
        "find settings the grader replaces and prompt texts that contradict their settings",
    )
    _add_task_option(audit, DEFAULT_TASK, "whose checkers read the settings")
    audit.add_argument("--prompts", type=InputFile, required=True, help="the prompt set to audit (JSONL)")
    audit.add_argument("--out", type=OutputFile, required=True, help="the audit to write (JSON)")
    _add_grader_options(audit)
    _add_nltk_option(audit)

    import_log = command(
        "import-log",
        cmd_import_log,
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
        cmd_audit_claims,
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

    report = command("report", cmd_report, "tables (CSV, JSON), Markdown report and plots from a report plan")
    report.add_argument("--plan-json", required=True, help="JSON naming the runs' outputs (the DAG passes it)")
    report.add_argument(
        "--out-dir",
        type=OutputFolder,
        required=True,
        help="folder for report.md, the CSV and JSON tables, the HTML tables and plots/",
    )
    return parser


def _json_object(text: str | None) -> dict:
    """`text` as a JSON object, or {} when it is none: the command says what is wrong with it."""
    try:
        value = json.loads(text) if text else {}
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _plan_files(plan: dict) -> list[str]:
    """The files a report plan names (as the workflow's report step reads them)."""
    from ifaudit.steps.plan import report_inputs

    return [path for paths in report_inputs(plan).values() for path in paths]


def _nested_inputs(args: argparse.Namespace) -> list[Path]:
    """The input paths named inside option values, checked with the path arguments before any
    work: manifest's `--file LABEL=PATH` and `--dataset NAME=RECORD`, import-log's `results`
    setting, the files of report's plan, and the local grader sources (`--from`,
    `--infobench-from`: a folder or an archive). A value that does not parse is left to the
    command. fetch's `--from` is not here: a source that is not a file is a miss, and the next
    source is tried."""
    files: list[str] = []
    if args.command == "manifest":
        files = [spec.partition("=")[2] for spec in (*args.file, *args.dataset) if spec.partition("=")[2]]
    elif args.command == "import-log" and isinstance(results := _json_object(args.options_json).get("results"), str):
        files = [results]
    elif args.command == "report":
        files = _plan_files(_json_object(args.plan_json))
    sources = (
        [] if args.command == "fetch" else [*getattr(args, "sources", ()), *getattr(args, "infobench_sources", ())]
    )
    local = [InputFileOrFolder(spec).expanduser() for spec in sources if "://" not in spec]
    return [*(InputFile(path) for path in files), *local]


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        # Before any work: a bad path is found in a moment, not after grading.
        check_paths([*vars(args).values(), _nested_inputs(args)])
        return args.handler(args)
    except IfauditError as error:
        print(f"ifaudit: error: {error}", file=sys.stderr)
        return error.exit_code


if __name__ == "__main__":
    sys.exit(main())
