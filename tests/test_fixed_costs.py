"""What every process of a run pays before its work: cut without changing an answer (issue 39).

Each shortcut here is checked against the slow way it replaces, on the real environment."""

from __future__ import annotations

import importlib.metadata

import numpy as np
import pytest

from ifaudit.core.stats import Resamples, resample_indices
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
    assert distributions_providing([*asked, "no_distribution_provides_this"]) == {
        name: everything[name] for name in asked
    }


@pytest.mark.parametrize(
    ("resamples", "clusters"),
    [(1, 1), (2, 541), (511, 3), (512, 541), (1300, 541), (3, 70_000)],
)
def test_resamples_drawn_block_by_block_are_the_draws_of_one_call(resamples: int, clusters: int) -> None:
    """The counts are those of resample_indices' one call (the draws the seed names), whatever
    the blocks: fewer rows than a block, a block and a bit, counts wider than a byte or two."""
    counts = Resamples.draw(7, resamples, clusters).counts
    expected = np.zeros((resamples, clusters), dtype=np.int64)
    np.add.at(expected, (np.arange(resamples)[:, None], resample_indices(7, resamples, clusters)), 1)
    assert counts.shape == expected.shape and (counts == expected).all()


@pytest.mark.parametrize("largest", [50, 2**50])
def test_resample_sums_block_by_block_are_the_exact_integer_sums(largest: int) -> None:
    """In float64 (small values) and in int64 (past 2**53 / prompts), as Python's integers add them."""
    resamples = Resamples.draw(3, 1300, 541)
    columns = np.random.default_rng(5).integers(0, largest, size=(541, 4), dtype=np.int64)
    exact = resamples.counts.astype(object) @ columns.astype(object)
    found = resamples.sums(columns)
    assert found.dtype == np.int64 and (found.astype(object) == exact).all()
