"""The suite's guards hold when pytest-xdist runs it in worker processes, as `make test` and
`make test-fast` do: the controller sees every worker's reports, so it alone records which tests
are slow (from what the workers collected) and fails a run with a skip under CI."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import REPO
from test_suite_guards import _pytest

PROBE = (
    "import time\n\nimport pytest\n\n\ndef test_quick():\n    assert True\n\n\n"
    "def test_sleepy():\n    time.sleep(0.6)\n\n\ndef test_skipping():\n    pytest.skip('a probe')\n\n\n"
    "@pytest.fixture\ndef broken():\n    raise RuntimeError('setup fails')\n\n\n"
    "def test_setup_fails(broken):\n    pass\n"
)


def _in_two_workers(folder: Path, **env: str):
    (folder / "test_probe.py").write_text(PROBE)
    plugin = ("-p", "conftest", "-n", "2", "--dist", "loadfile", "test_probe.py")
    return _pytest(folder, *plugin, PYTHONPATH=str(REPO / "tests"), **env)


def test_slow_tests_measured_in_two_workers_are_recorded_by_the_controller_from_what_they_collected(
    tmp_path: Path,
) -> None:
    """Measured tests go to their measured side; a collected test that was not measured (its
    setup failed) keeps its recorded side; a recorded test no longer collected is dropped."""
    durations, measured_file = tmp_path / "durations.json", tmp_path / "durations.measured.json"
    recorded_before = {"fast": ["test_probe.py::test_gone"], "slow": ["test_probe.py::test_setup_fails"]}
    durations.write_text(json.dumps(recorded_before))
    done = _in_two_workers(
        tmp_path,
        IFAUDIT_RECORD_DURATIONS="1",
        IFAUDIT_DURATIONS_FILE=str(durations),
        IFAUDIT_MEASURED_DURATIONS_FILE=str(measured_file),
    )
    assert done.returncode == 1, done.stdout + done.stderr  # the setup that fails
    recorded = json.loads(measured_file.read_text())
    assert recorded["fast"] == ["test_probe.py::test_quick", "test_probe.py::test_skipping"]
    assert recorded["slow"] == ["test_probe.py::test_setup_fails", "test_probe.py::test_sleepy"]


def test_a_skip_in_a_worker_fails_the_run_under_ci(tmp_path: Path) -> None:
    done = _in_two_workers(tmp_path, CI="true")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "UNEXPECTED SKIP under CI: test_probe.py::test_skipping: Skipped: a probe" in done.stdout.splitlines()
