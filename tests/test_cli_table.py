"""The command's vocabulary is one table (ifaudit.cli_parser.COMMANDS) and the parser is built
from it alone: every subcommand, option, help text and example is a row or a cell of the table."""

from __future__ import annotations

import argparse

from ifaudit.cli_parser import COMMANDS, EXAMPLES, Command, OneOf, Option, build_parser


def _flags(command: Command) -> list[tuple[str, ...]]:
    entries: list[Option] = []
    for entry in command.options:
        entries.extend(entry.options if isinstance(entry, OneOf) else [entry])
    return [entry.flags for entry in entries]


def test_the_parser_holds_the_tables_subcommands_and_options_in_its_order() -> None:
    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert list(commands.choices) == [command.name for command in COMMANDS]
    for command in COMMANDS:
        sub = commands.choices[command.name]
        built = [tuple(a.option_strings) or (a.dest,) for a in sub._actions if not isinstance(a, argparse._HelpAction)]
        assert built == _flags(command), command.name
        assert sub.description == command.help
        assert sub.epilog == f"example:\n  {command.example}"
        groups = [[a.option_strings[0] for a in g._group_actions] for g in sub._mutually_exclusive_groups]
        assert groups == [[o.flags[0] for o in e.options] for e in command.options if isinstance(e, OneOf)]


def test_the_examples_are_the_tables() -> None:
    assert {command.name: command.example for command in COMMANDS} == EXAMPLES
