"""YAML from outside read with its aliases' expansion capped and no key given twice.

An alias is a reference to an anchored node: ten aliases of a list of ten aliases of … nine
levels deep ("billion laughs") is a few hundred bytes that name 10^9 values. PyYAML builds it
quickly, sharing the nodes, but anything that then walks or prints the values (a `str()`, a
listing, a JSON dump, the config's checks) runs for hours. The document's node graph is counted
with every alias expanded, without recursion, and refused past a cap before any value is built.

A mapping holding one key twice (a run declared twice in a config) is read by PyYAML as the last
one, the first silently gone: refused, naming the lines of both. A merge key (`<<: *defaults`)
is no duplicate: the mapping's own keys override what it merges, as YAML means.

Every YAML the product reads goes through here: the configs (those Snakemake loads itself are
read again by the config check, ifaudit.steps.planning.config_check, before it walks them), the
config files `ifaudit bundle` and `selfcheck` read, a leaderboard details README's header.

Snakemake merges the --configfile files itself, before the Snakefile runs, walking every mapping
of each with every alias expanded: a bomb of mappings hangs there, before any check of ours. So
`make run` first runs this module on its Snakemake arguments (`python -m ifaudit.io.bounded_yaml
ARGS`), which checks each file they name with --configfile as the config check would.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from ifaudit.core.errors import InputError
from ifaudit.core.terminal import printable

MAX_NODES = 1_000_000  # a leaderboard details README's header has a few thousand
_MERGE = "tag:yaml.org,2002:merge"
# libyaml's parser composes the node graph in C (a config of a thousand runs in milliseconds).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class TooManyValues(yaml.YAMLError):
    """A document whose aliases expand past the cap."""


class DuplicateKey(yaml.YAMLError):
    """A mapping holding one key twice: the key's path and the 1-based lines of both."""

    def __init__(self, path: tuple[str, ...], first: int, second: int) -> None:
        self.path, self.first, self.second = path, first, second
        super().__init__(f"key {'.'.join(path)!r} is given twice, at lines {first} and {second}")


def _key_text(node: yaml.Node) -> str | None:
    """A mapping key as it is written, for a scalar key; None for a merge key or a compound one."""
    if not isinstance(node, yaml.ScalarNode) or node.tag == _MERGE:
        return None
    return str(node.value)


def _check_mapping(node: yaml.MappingNode, path: tuple[str, ...]) -> None:
    seen: dict[tuple[str, str], int] = {}
    for key, _ in node.value:
        text = _key_text(key)
        if text is None:
            continue
        line = key.start_mark.line + 1
        if (key.tag, text) in seen:
            raise DuplicateKey((*path, text), seen[key.tag, text], line)
        seen[key.tag, text] = line


def _expanded_nodes_over(root: yaml.Node, cap: int) -> bool:
    """Whether `root`, with every alias expanded (a shared node counted each time it is
    reached), has more than `cap` nodes; a node reaching itself through an alias is over."""
    pending, count = [root], 0
    while pending:
        node = pending.pop()
        count += 1
        if count > cap:
            return True
        if isinstance(node, yaml.SequenceNode):
            pending.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            pending.extend(part for pair in node.value for part in pair)
    return False


def _first_duplicate(root: yaml.Node) -> None:
    """Raise DuplicateKey for the first mapping, in the document's order, holding a key twice:
    each node once (an alias's node is the anchor's), with its key path."""
    pending: list[tuple[yaml.Node, tuple[str, ...]]] = [(root, ())]
    seen: set[int] = set()
    while pending:
        node, path = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            pending.extend((item, (*path, str(index))) for index, item in reversed(list(enumerate(node.value))))
        elif isinstance(node, yaml.MappingNode):
            _check_mapping(node, path)
            pending.extend((value, (*path, _key_text(key) or "<<")) for key, value in reversed(node.value))


def check_nodes(root: yaml.Node, cap: int = MAX_NODES) -> None:
    """Raise TooManyValues when `root`, with every alias expanded, has more than `cap` nodes,
    before anything else walks it; then DuplicateKey for a mapping holding a key twice."""
    if _expanded_nodes_over(root, cap):
        raise TooManyValues(f"its aliases expand to more than {cap:,} values")
    _first_duplicate(root)


def _load_with(loader_class: type, text: str, cap: int) -> Any:
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        check_nodes(node, cap)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def load(text: str, cap: int = MAX_NODES) -> Any:
    """The one document in `text` as yaml.safe_load reads it; raises yaml.YAMLError for a
    document that does not parse, TooManyValues for one whose aliases expand past `cap` nodes,
    DuplicateKey for one holding a key twice in a mapping. libyaml refuses some documents
    PyYAML's own parser reads (an escaped lone surrogate, `"\\udc80"`, which the config check
    then names): those are read as yaml.safe_load reads them."""
    try:
        return _load_with(_LOADER, text, cap)
    except (TooManyValues, DuplicateKey):
        raise
    except yaml.YAMLError:
        if _LOADER is yaml.SafeLoader:
            raise
    return _load_with(yaml.SafeLoader, text, cap)


def compose(text: str) -> yaml.Node | None:
    """The document's node graph, nothing built from it (marks give each node's line); read as
    `load` reads it."""
    for loader_class in dict.fromkeys((_LOADER, yaml.SafeLoader)):
        loader = loader_class(text)
        try:
            return loader.get_single_node()
        except yaml.YAMLError:
            if loader_class is yaml.SafeLoader:
                raise
        finally:
            loader.dispose()
    return None  # not reached: the last loader's error is raised


def refusal(path: Path, error: Exception) -> InputError:
    """A YAML file's error (from load or check_nodes, or its bytes' decoding) as one line naming
    the file and, where known, its line and key."""
    if isinstance(error, DuplicateKey):
        return InputError(
            f"given twice, at lines {error.first} and {error.second}: YAML would keep only the second; "
            "remove or rename one",
            path=path,
            line=error.second,
            field=".".join(error.path),
        )
    if isinstance(error, TooManyValues):
        return InputError(f"refused: {error}", path=path, hint="write the values out instead of aliasing them")
    if isinstance(error, UnicodeDecodeError):
        return InputError(f"not UTF-8 text (byte {error.start})", path=path)
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or type(error).__name__
    return InputError(f"not YAML: {problem}", path=path, line=mark.line + 1 if mark is not None else None)


def read(path: Path, cap: int = MAX_NODES) -> Any:
    """The YAML file at `path`, or InputError in one line (see `refusal`)."""
    try:
        return load(path.read_text(encoding="utf-8"), cap)
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise refusal(path, error) from None


def _json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if twice := next((key for index, key in enumerate(keys) if key in keys[:index]), None):
        raise InputError(
            "given twice in one object: JSON would keep only the second; remove or rename one", field=twice
        )
    return dict(pairs)


def check_file(path: Path, cap: int = MAX_NODES) -> None:
    """What `read` refuses in the YAML file at `path`, checked without building its values (a
    config Snakemake has read already): InputError in one line. Snakemake reads a config file as
    JSON first: one that is JSON and not YAML is checked as JSON (a key twice in an object)."""
    try:
        text = path.read_text(encoding="utf-8")
        node = compose(text)
        if node is not None:
            check_nodes(node, cap)
    except UnicodeDecodeError as error:
        raise refusal(path, error) from None
    except yaml.YAMLError as error:
        if isinstance(error, TooManyValues | DuplicateKey):
            raise refusal(path, error) from None
        try:
            json.loads(text, object_pairs_hook=_json_pairs)
        except ValueError:
            raise refusal(path, error) from None
        except InputError as refused:
            raise InputError(refused.message, path=path, field=refused.field) from None


def configfiles(argv: Sequence[str]) -> list[Path]:
    """The files a Snakemake command line names with --configfile (or --configfiles): each option
    takes the words after it up to the next option, or the one value after its `=`."""
    files: list[Path] = []
    taking = False
    for word in argv:
        if word.startswith("-"):
            name, equals, value = word.partition("=")
            taking = name in ("--configfile", "--configfiles") and not equals
            if name in ("--configfile", "--configfiles") and equals:
                files.append(Path(value))
        elif taking:
            files.append(Path(word))
    return files


def main(argv: Sequence[str]) -> int:
    """Check the YAML of every existing file `argv` (Snakemake's arguments) names with
    --configfile; a file that is not there is left to Snakemake to name."""
    try:
        for path in configfiles(argv):
            if path.is_file():
                check_file(path)
    except InputError as error:
        print(f"ifaudit: error: {printable(str(error))}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
