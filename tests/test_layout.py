"""The README's layout section names every module of the package and every subcommand."""

from __future__ import annotations

import argparse
import re

from conftest import REPO
from ifaudit.cli import build_parser


def _layout_section() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n## Layout\n") :]
    following = section.find("\n## ", 1)
    return section if following == -1 else section[:following]


def _named(section: str) -> set[str]:
    return set(re.findall(r"`([a-z_][a-z0-9_-]*)/?`", section))


def test_every_module_is_in_the_readme_layout() -> None:
    package = REPO / "src" / "ifaudit"
    modules = {path.stem for path in package.glob("*.py") if path.stem != "__init__"}
    modules |= {path.parent.name for path in package.glob("*/__init__.py")}
    named = _named(_layout_section())
    assert not modules - named, f"modules missing from the README's layout: {sorted(modules - named)}"


def test_every_subcommand_is_in_the_readme_layout() -> None:
    (commands,) = [action for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction)]
    named = _named(_layout_section())
    assert not set(commands.choices) - named, f"subcommands missing: {sorted(set(commands.choices) - named)}"
