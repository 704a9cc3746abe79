"""YAML from outside read with its aliases' expansion capped.

An alias is a reference to an anchored node: ten aliases of a list of ten aliases of … nine
levels deep ("billion laughs") is a few hundred bytes that name 10^9 values. PyYAML builds it
quickly, sharing the nodes, but anything that then walks or prints the values (a `str()`, a
listing, a JSON dump) runs for hours. The document's node graph is counted with every alias
expanded, without recursion, and refused past a cap before any value is built.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_NODES = 1_000_000  # a leaderboard details README's header has a few thousand


class TooManyValues(yaml.YAMLError):
    """A document whose aliases expand past the cap."""


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


def load(text: str, cap: int = MAX_NODES) -> Any:
    """The one document in `text` as yaml.safe_load reads it; raises yaml.YAMLError for a
    document that does not parse, TooManyValues (one) for one whose aliases expand past `cap` nodes."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_nodes_over(node, cap):
            raise TooManyValues(f"its aliases expand to more than {cap} values")
        return loader.construct_document(node)
    finally:
        loader.dispose()
