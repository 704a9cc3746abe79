"""Which installed distributions provide some top-level modules: the answer of
`importlib.metadata.packages_distributions()` for those modules, without its price.

packages_distributions() parses every installed distribution's METADATA with the email parser
(for its Name) and builds a path object for every line of the RECORD of each one without a
top_level.txt: ≈ 0.14 s of CPU in every grading process, which asks it about five modules.
Here a distribution is looked at closely only when it can provide an asked module: its
top_level.txt names one, or (without one) the text of its RECORD holds one, since every name
inferred from a RECORD is part of one of its paths. For those few, the names and the Name come
from the standard library's own code, so each module's list is the same, in the same order
(tests/test_fixed_costs.py compares the two over every module of the environment).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Iterable

# The standard library's inference of a distribution's top-level names from its files (which
# changed between Python 3.11, 3.12 and 3.13); when a release drops it, every distribution is
# read the standard library's whole way.
_INFERRED: Callable[[importlib.metadata.Distribution], Iterable[str]] | None = getattr(
    importlib.metadata, "_top_level_inferred", None
)


def _declared_among(dist: importlib.metadata.Distribution, wanted: set[str]) -> list[str] | None:
    """The asked modules among `dist`'s top_level.txt names (duplicates kept, as
    packages_distributions keeps them); None when it declares none."""
    declared = (dist.read_text("top_level.txt") or "").split()
    return [name for name in declared if name in wanted] if declared else None


def distributions_providing(modules: Iterable[str]) -> dict[str, list[str]]:
    """For each of `modules` (top-level import names) some distribution provides, the Names of
    those distributions in importlib.metadata's order: packages_distributions()'s entries for them."""
    wanted = set(modules)
    if _INFERRED is None:
        everything = importlib.metadata.packages_distributions()
        return {name: list(everything[name]) for name in sorted(wanted) if name in everything}
    found: dict[str, list[str]] = {}
    for dist in importlib.metadata.distributions():
        provided = _declared_among(dist, wanted)
        if provided is None:
            # Without a RECORD (or with an empty one) the files come from egg-info lists, whose
            # paths are resolved: no shortcut there.
            record = dist.read_text("RECORD")
            if record and not any(name in record for name in wanted):
                continue
            provided = [name for name in _INFERRED(dist) if name in wanted]
        if provided:
            distribution = dist.metadata["Name"]
            for name in provided:
                found.setdefault(name, []).append(distribution)
    return found
