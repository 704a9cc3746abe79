"""No output changes: the four recorded DAG runs give every compared output byte for byte as
recorded before the task refactor (tests/fixtures/output_digests.json, see output_digests.py).
Each scenario's run is the session's (conftest.scenario_run), digested as soon as it finished."""

from __future__ import annotations

import json

import pytest

import output_digests

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("scenario", sorted(output_digests.SCENARIOS))
def test_every_compared_output_is_as_recorded(scenario_run, scenario: str) -> None:
    recorded = json.loads(output_digests.FIXTURE.read_text())["scenarios"][scenario]
    assert len(recorded["files"]) >= 15  # grades, summary, stats, canary, audits, tables, plots, report at least
    changed = output_digests.differences(scenario, recorded, scenario_run(scenario).digests)
    assert not changed, "\n".join(changed)
