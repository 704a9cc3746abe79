"""The `ifaudit` command: the only face of the package; every DAG rule calls one subcommand."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from ifaudit import __version__
from ifaudit.canonical import write_jsonl
from ifaudit.errors import IfauditError
from ifaudit.graders import GRADER_CHOICES, UPSTREAM, CheckerRegistry, load_grader
from ifaudit.nltk_data import resolve_punkt
from ifaudit.pins import default_sources, load_pin, materialize

T = TypeVar("T")

DEFAULT_PIN = Path("vendor/google_ifeval/pin.toml")


def _default_pin() -> Path:
    """The pin in the working folder (a project checkout), else beside an editable install."""
    if env := os.environ.get("IFAUDIT_PIN"):
        return Path(env)
    if DEFAULT_PIN.is_file():
        return DEFAULT_PIN
    beside_source = Path(__file__).resolve().parents[2] / DEFAULT_PIN
    return beside_source if beside_source.is_file() else DEFAULT_PIN


def _resources() -> Path:
    return Path(os.environ.get("IFAUDIT_RESOURCES", "resources"))


def _progress(quiet: bool):
    def wrap(items: Iterable[T], total: int) -> Iterable[T]:
        if quiet:
            return items
        from tqdm import tqdm

        return tqdm(items, total=total, desc="grading", unit="response", file=sys.stderr, mininterval=1.0)

    return wrap


def _add_grader_source_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pin", type=Path, default=None, help="pin file (default: vendor/google_ifeval/pin.toml)")
    parser.add_argument("--vendor-dir", type=Path, default=None,
                        help="where pinned files are materialized (default: resources/vendor/google_ifeval)")
    parser.add_argument("--from", dest="sources", action="append", default=[], metavar="SOURCE",
                        help="a local folder, git checkout, archive or URL holding the pinned files; "
                             "repeatable, tried in order before IFAUDIT_GRADER_SOURCE and the canonical URL")
    parser.add_argument("--offline", action="store_true", help="never try the canonical URL")


def _vendor_dir(args: argparse.Namespace) -> Path:
    return args.vendor_dir or _resources() / "vendor" / "google_ifeval"


def cmd_vendor(args: argparse.Namespace) -> int:
    pin = load_pin(args.pin or _default_pin())
    folder = materialize(pin, _vendor_dir(args), default_sources(pin, args.sources, offline=args.offline))
    print(f"verified {len(pin.files)} files of {pin.name}@{pin.commit} in {folder}", file=sys.stderr)
    return 0


def _load_registry(args: argparse.Namespace) -> CheckerRegistry:
    pin = load_pin(args.pin or _default_pin())
    sources = default_sources(pin, args.sources, offline=args.offline) if args.grader == UPSTREAM else []
    registry = load_grader(args.grader, pin, _vendor_dir(args), sources)
    if not registry.upstream:
        print(f"ifaudit: note: grading with the registry stand-in {registry.name}=={registry.version}, "
              "not the pinned upstream grader; outputs say so", file=sys.stderr)
    return registry


def cmd_grade(args: argparse.Namespace) -> int:
    from ifaudit.grading import grade_all, validate_prompts
    from ifaudit.prompts import read_prompts
    from ifaudit.responses import read_responses
    from ifaudit.tasks import get_task

    task = get_task(args.task)
    resolve_punkt(_resources() / "nltk_data", args.nltk_mirror)
    registry = _load_registry(args)
    prompts = read_prompts(args.prompts)
    responses = read_responses(args.responses, prompts)
    validate_prompts(registry, prompts)
    records = grade_all(registry, prompts, responses, task.name, progress=_progress(args.quiet))
    digest = write_jsonl(args.out, records)
    print(f"graded {len(records)} responses to {len({r['key'] for r in records})} of {len(prompts)} prompts "
          f"-> {args.out} (sha256 {digest})", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ifaudit", description=__doc__)
    parser.add_argument("--version", action="version", version=f"ifaudit {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    vendor = commands.add_parser("vendor", help="materialize and verify the pinned upstream grader files")
    _add_grader_source_options(vendor)
    vendor.set_defaults(run=cmd_vendor)

    grade = commands.add_parser("grade", help="grade a response file, strict and loose, one response at a time")
    grade.add_argument("--task", default="ifeval")
    grade.add_argument("--prompts", type=Path, required=True, help="prompt set (upstream or Hugging Face JSONL)")
    grade.add_argument("--responses", type=Path, required=True, help="responses JSONL (key or prompt, response, sample)")
    grade.add_argument("--out", type=Path, required=True, help="grades JSONL to write (canonical, atomic)")
    grade.add_argument("--grader", choices=GRADER_CHOICES, default=os.environ.get("IFAUDIT_GRADER", UPSTREAM),
                       help="the pinned upstream grader (default) or the labelled registry stand-in")
    grade.add_argument("--nltk-mirror", type=Path, default=None,
                       help="folder laid out as NLTK_DATA holding tokenizers/punkt_tab (else IFAUDIT_NLTK_MIRROR)")
    grade.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_grader_source_options(grade)
    grade.set_defaults(run=cmd_grade)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except IfauditError as error:
        print(f"ifaudit: error: {error}", file=sys.stderr)
        return error.exit_code


if __name__ == "__main__":
    sys.exit(main())
