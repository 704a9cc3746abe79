"""`ifaudit <sub> --help` teaches: every option described, choices listed, one example each."""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys

import pytest

from conftest import IFAUDIT
from ifaudit.cli import EXAMPLES, build_parser, main
from ifaudit.tasks.registry import TASKS


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


SUBCOMMANDS = _subcommands()


def test_every_subcommand_has_an_example_and_nothing_else_does() -> None:
    assert set(EXAMPLES) == set(SUBCOMMANDS)


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_every_option_has_help_and_the_example_parses(name: str) -> None:
    sub = SUBCOMMANDS[name]
    for action in sub._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        assert action.help and action.help.strip(), (
            f"ifaudit {name}: {action.option_strings or action.dest} has no help"
        )
        if action.choices and "--task" in action.option_strings:
            shown = sub.format_help()  # the choices are read from the registry when help is shown
            assert all(task in shown for task in TASKS), f"ifaudit {name} --task does not list its choices"
    words = shlex.split(EXAMPLES[name], comments=True)
    assert words[:2] == ["ifaudit", name]
    args = build_parser().parse_args(words[1:])  # the example is a valid command line
    assert args.command == name


def help_text(name: str, capsys: pytest.CaptureFixture[str]) -> str:
    """What `ifaudit NAME --help` prints, from the CLI's entry function in this process."""
    with pytest.raises(SystemExit) as exited:
        main([name, "--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_help_on_the_command_line_shows_the_example(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    shown = help_text(name, capsys)
    assert "example:" in shown
    assert EXAMPLES[name].split()[1] in shown.split("example:")[1]
    if any("--task" in a.option_strings for a in SUBCOMMANDS[name]._actions):
        assert "ifeval_arabic_inception" in shown  # the task choices are listed


def test_the_installed_command_prints_that_help(capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    """The `ifaudit` executable itself, in a process of its own, prints what the entry function does
    (one subcommand here; the one above checks every subcommand's text in this process)."""
    monkeypatch.setenv("COLUMNS", "80")
    done = subprocess.run([str(IFAUDIT), "grade", "--help"], capture_output=True, text=True, check=True)
    assert done.stdout == help_text("grade", capsys)
    assert "example:" in done.stdout and "ifeval_arabic_inception" in done.stdout


def test_building_the_parser_imports_no_heavy_module() -> None:
    """Every job starts by building the parser: it must not import what only some subcommands
    use (the judge and HTTP, the harness importers, numpy, nltk), or every job pays for it."""
    heavy = (
        "ifaudit.judging.judge_protocol",
        "ifaudit.io.remote.http_client",
        "ifaudit.inputs.importers",
        "numpy",
        "nltk",
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, json; from ifaudit.cli import build_parser; build_parser(); "
            f"print(json.dumps([m for m in {heavy!r} if m in sys.modules]))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout) == []
