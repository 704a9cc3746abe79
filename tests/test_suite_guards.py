"""The suite cannot pass by running nothing: without the shared data pytest stops at once with
one line and a non-zero exit, and under CI every skip fails the run (conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def _pytest(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in ("CI", "IFAUDIT_SHARED")} | env
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_without_the_shared_data_pytest_exits_non_zero_with_one_line(tmp_path: Path) -> None:
    done = _pytest(REPO, "tests/test_layout.py", IFAUDIT_SHARED=str(tmp_path / "no-shared"))
    assert done.returncode == 4, done.stdout + done.stderr
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert lines == [
        f"ERROR: ifaudit tests cannot run: offline data not found at {tmp_path / 'no-shared' / 'data'}: "
        "put the shared/ folder beside the checkout or set IFAUDIT_SHARED to it"
    ]


def _skipping_test(folder: Path) -> Path:
    (folder / "test_probe.py").write_text('import pytest\n\n\ndef test_probe():\n    pytest.skip("a probe")\n')
    return folder


def test_a_skip_is_listed_with_its_reason_and_fails_the_run_under_ci(tmp_path: Path) -> None:
    """The suite's conftest loaded as a plugin into a probe test that skips: listed at the end
    with its reason; exit 0 on a developer's machine, 1 under CI with the skip named."""
    folder = _skipping_test(tmp_path)
    plugin = ("-p", "conftest", "-ra", "test_probe.py")
    here = _pytest(folder, *plugin, PYTHONPATH=str(REPO / "tests"))
    assert here.returncode == 0, here.stdout + here.stderr
    assert "SKIPPED [1] test_probe.py:5: a probe" in here.stdout
    under_ci = _pytest(folder, *plugin, PYTHONPATH=str(REPO / "tests"), CI="true")
    assert under_ci.returncode == 1, under_ci.stdout + under_ci.stderr
    assert "UNEXPECTED SKIP under CI: test_probe.py::test_probe: Skipped: a probe" in under_ci.stdout.splitlines()


def test_slow_tests_are_measured_and_an_unmeasured_test_counts_as_slow(tmp_path: Path) -> None:
    """The probe's measured durations are written by a measuring run (beside the tracked sides,
    which only an explicit copy changes); a test that slept past the threshold is then left out of
    the fast loop, a quick one kept, and a new one (not measured
    yet) left out until measured."""
    (tmp_path / "test_probe.py").write_text(
        "import time\n\n\ndef test_quick():\n    assert True\n\n\ndef test_sleepy():\n    time.sleep(0.6)\n"
    )
    durations, measured_file = tmp_path / "durations.json", tmp_path / "durations.measured.json"
    plugin = ("-p", "conftest", "test_probe.py")
    env = {
        "PYTHONPATH": str(REPO / "tests"),
        "IFAUDIT_DURATIONS_FILE": str(durations),
        "IFAUDIT_MEASURED_DURATIONS_FILE": str(measured_file),
    }
    measured = _pytest(tmp_path, *plugin, IFAUDIT_RECORD_DURATIONS="1", **env)
    assert measured.returncode == 0, measured.stdout + measured.stderr
    assert not durations.exists()  # measuring never rewrites the tracked sides
    durations.write_bytes(measured_file.read_bytes())  # `make durations`, on purpose
    recorded = json.loads(durations.read_text())
    assert (recorded["fast"], recorded["slow"]) == (["test_probe.py::test_quick"], ["test_probe.py::test_sleepy"])
    with (tmp_path / "test_probe.py").open("a") as probe:
        probe.write("\n\ndef test_new():\n    assert True\n")
    fast_loop = _pytest(tmp_path, *plugin, "-m", "not slow", "--collect-only", **env)
    assert [line for line in fast_loop.stdout.splitlines() if "::" in line] == ["test_probe.py::test_quick"]
