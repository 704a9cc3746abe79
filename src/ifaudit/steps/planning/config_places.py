"""Where a config's key was written: the file and line a config mistake is named at.

The config check works on the config Snakemake merged (its own `configfile:`, the --configfile
files in order, then --config's values), which has no lines. A mistake found there is named by
its key path (`runs.mine.label`); this finds the path in the files, last file first as the merge
gives it precedence, and names the line of the deepest key of the path it holds. Only a mistake
is placed, so a config that passes costs nothing here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from ifaudit.io import bounded_yaml


def _step(node: yaml.Node, rest: str) -> tuple[yaml.Node, str, int] | None:
    """The child of `node` the key path `rest` starts with (a key of a mapping, longest first, as
    run and dataset names may hold dots; an index of a sequence), what is left of the path, and
    the child's line; None when `node` holds none."""
    if isinstance(node, yaml.MappingNode):
        matches = [
            (key, value)
            for key, value in node.value
            if isinstance(key, yaml.ScalarNode) and (rest == key.value or rest.startswith(f"{key.value}."))
        ]
        if not matches:
            return None
        key, value = max(matches, key=lambda pair: len(pair[0].value))
        return value, rest[len(key.value) + 1 :], key.start_mark.line + 1
    if isinstance(node, yaml.SequenceNode):
        index, _, left = rest.partition(".")
        if index.isdigit() and int(index) < len(node.value):
            item = node.value[int(index)]
            return item, left, item.start_mark.line + 1
    return None


def _deepest(root: yaml.Node, where: str) -> tuple[int, int]:
    """(how many keys of `where` the document holds in a row from its top, the last one's line)."""
    node, rest, depth, line = root, where, 0, 0
    while rest and (found := _step(node, rest)) is not None:
        node, rest, line = found
        depth += 1
    return depth, line


def place_of(where: str, files: Sequence[Path], given: Mapping[str, Any]) -> str | None:
    """ "FILE:LINE" of key path `where` in the file that holds most of it (the last such file, as
    the merge gives later files precedence); "--config" when its top key was given there; None
    when no file names any part of it (a default of the Snakefile's own config, or no path)."""
    if where.split(".")[0] in given:
        return "--config"
    best: tuple[int, int, Path] | None = None
    for path in files:
        try:
            root = bounded_yaml.compose(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        if root is None:
            continue
        depth, line = _deepest(root, where)
        if depth and (best is None or depth >= best[0]):
            best = (depth, line, path)
    return None if best is None else f"{best[2]}:{best[1]}"
