"""The README's layout section names every module of the package, under its layer's folder, and
every subcommand."""

from __future__ import annotations

import argparse
import re

from conftest import REPO
from ifaudit.cli import build_parser

PACKAGE = REPO / "src" / "ifaudit"


def _layout_section() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n## Layout\n") :]
    following = section.find("\n## ", 1)
    return section if following == -1 else section[:following]


def _named(text: str) -> set[str]:
    return set(re.findall(r"`([a-z_][a-z0-9_-]*)/?`", text))


def _bullets() -> dict[str, str]:
    """Each bullet of the section by the folder (or module) it opens with."""
    bullets = re.findall(r"^- `([a-z_]+)/?`(.*?)(?=^- |^\S|\Z)", _layout_section(), re.M | re.S)
    return {name: text for name, text in bullets}


def test_every_module_is_in_its_layers_bullet() -> None:
    bullets = _bullets()
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__" and len(parts) <= 2:  # the package, or a layer: its bullet
            missing += [] if len(parts) == 1 or parts[0] in bullets else [parts[0]]
            continue
        layer = parts[0] if len(parts) > 1 else None
        # a module of a sub-package (inputs/importers/lm_eval) is listed as its sub-package
        name = parts[1] if len(parts) > 2 else parts[-1]
        # modules at the root are named in their own bullet (`cli`) or in the checkers' bullet
        where = bullets.get(layer) if layer else bullets.get(name, "") + bullets.get("checkers", "")
        if where is None or name not in _named(where) | ({name} if name in bullets else set()):
            missing.append("/".join(parts))
    assert not missing, f"modules missing from their bullet of the README's layout: {missing}"


def test_every_subcommand_is_in_the_readme_layout() -> None:
    (commands,) = [action for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction)]
    named = _named(_layout_section())
    assert not set(commands.choices) - named, f"subcommands missing: {sorted(set(commands.choices) - named)}"
