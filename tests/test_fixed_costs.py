"""What every process of a run pays before its work: cut without changing an answer (issue 39).

Each shortcut here is checked against the slow way it replaces, on the real environment."""

from __future__ import annotations

import importlib.metadata

import pytest

from ifaudit.io import distributions
from ifaudit.io.distributions import distributions_providing


def test_distributions_providing_answers_as_packages_distributions_does() -> None:
    """For every top-level name the installed distributions provide, asked all at once and one at a
    time (where most distributions are skipped unread): the same Names in the same order."""
    everything = importlib.metadata.packages_distributions()
    assert len(everything) > 20  # the real environment, not an empty one
    assert distributions_providing(everything) == everything
    alone = {name: distributions_providing([name]).get(name) for name in everything}
    assert alone == everything
    assert distributions_providing(["no_distribution_provides_this"]) == {}


def test_distributions_providing_without_the_standard_librarys_inference(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Python whose importlib.metadata no longer has the inference it reuses reads every
    distribution the standard library's whole way: the same answer."""
    everything = importlib.metadata.packages_distributions()
    monkeypatch.setattr(distributions, "_INFERRED", None)
    asked = sorted(everything)[::7]
    assert distributions_providing([*asked, "no_distribution_provides_this"]) == {name: everything[name] for name in asked}
