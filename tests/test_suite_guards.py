"""The suite cannot pass by running nothing: without the shared data pytest stops at once with
one line and a non-zero exit, and under CI every skip fails the run (conftest.py). And the inner
loop is not blind: `make test-fast` grades every task family and reaches every surface of the
code added since the first mutation round (issue #50)."""

from __future__ import annotations

import ast
import functools
import json
import os
import re
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


def _fast_subset_leaves_out() -> set[str]:
    """The markers `make test-fast` deselects, read from the Makefile's own `-m` expression."""
    makefile = (REPO / "Makefile").read_text().splitlines()
    line = next(line for line in makefile if "pytest" in line and "FAST_WORKERS" in line)
    return set(re.findall(r"not (\w+)", line.split("-m", 1)[1]))


def _markers(node: ast.AST) -> set[str]:
    """The pytest marks a decorator list or a `pytestmark = ...` value names (`pytest.mark.NAME`)."""
    return {
        child.attr
        for child in ast.walk(node)
        if isinstance(child, ast.Attribute) and isinstance(child.value, ast.Attribute) and child.value.attr == "mark"
    }


@functools.cache
def _parsed(file: str) -> ast.Module:
    return ast.parse((REPO / file).read_text(encoding="utf-8"))


def _in_fast_subset(test: str) -> bool:
    """Whether `make test-fast` runs the test (a node id, with its parameters if it has any): on tests/durations.json's
    fast side, defined in its file, and marked with none of the marks the fast subset leaves out
    (on the function or by the module's `pytestmark`)."""
    if test not in json.loads((REPO / "tests/durations.json").read_text())["fast"]:
        return False
    file, name = test.split("[")[0].split("::")
    tree = _parsed(file)
    marks = set().union(
        *(
            _markers(node.value)
            for node in tree.body
            if isinstance(node, ast.Assign)
            and any(getattr(target, "id", "") == "pytestmark" for target in node.targets)
        )
    )
    function = next((node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name), None)
    return (
        function is not None
        and not (marks | set().union(*map(_markers, function.decorator_list))) & _fast_subset_leaves_out()
    )


def _imported_by(file: str) -> set[str]:
    """Every module the file imports, anywhere in it (`from a.b import c` counts a.b and a.b.c)."""
    names: set[str] = set()
    for node in ast.walk(_parsed(file)):
        if isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
    return names


def test_the_fast_subset_grades_every_task_family() -> None:
    """IFEval, the language gates, both Arabic variants, InFoBench and IFBench at both pins: every
    task of the registry is graded in process by a test `make test-fast` runs."""
    from ifaudit.tasks.registry import TASKS

    (families,) = (
        node.value
        for node in _parsed("tests/test_task_families.py").body
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "FAMILIES"
    )
    assert isinstance(families, ast.Dict)

    assert _in_fast_subset(
        "tests/test_task_families.py::test_every_task_grades_real_prompts_in_process_as_an_independent_source_does"
    )
    from test_task_families import GRADED_ELSEWHERE

    for test in set(GRADED_ELSEWHERE.values()):
        assert _in_fast_subset(test), test
    assert sorted([*(ast.literal_eval(key) for key in families.keys if key), *GRADED_ELSEWHERE]) == sorted(TASKS)
    assert _fast_subset_leaves_out() == {"e2e", "scratch_env", "slow", "latex", "browser"}
    assert not _in_fast_subset("tests/test_ifbench_dag.py::test_ifbench_sample_outputs_under_both_pins_through_the_dag")


# The modules added since the first mutation round (issue #50's surfaces), each with a test of
# it that `make test-fast` runs.
SURFACES = {
    "ifaudit.io.ledger": "test_a_result_replaced_by_a_dangling_link_is_reported",
    "ifaudit.steps.planning.content": "test_the_files_gone_are_named_first_and_counted_in_one_line",
    "ifaudit.io.formats.escape": "test_xml_text_is_well_formed_as_an_attribute_value_and_as_element_text",
    "ifaudit.io.remote.redact": "test_redaction_leaves_no_character_of_the_key_whatever_surrounds_it",
    "ifaudit.io.confine": "test_a_joined_path_through_a_link_is_refused_and_one_not_yet_made_is_allowed",
    "ifaudit.io.remote.pins": "test_each_ifbench_version_a_bundles_runs_grade_with_is_checked_in_its_own_folder",
    "ifaudit.steps.reporting.headlines": "test_a_headline_says_prompts_without_a_response_only_when_there_are_some",
    "ifaudit.tasks.ifbench": "test_a_task_fixed_to_a_pinned_version_grades_with_it_and_refuses_another_grader_version",
    "ifaudit.tasks.ifbench_grader": "test_spacy_is_stood_in_only_for_calls_dropped_at_the_top_level",
    "ifaudit.io.remote.nltk_resources": (
        "test_nltk_resources_are_taken_only_with_their_pinned_bytes_from_the_first_source_that_has_them"
    ),
}


def test_the_fast_subset_reaches_every_surface_of_the_new_code() -> None:
    """Each surface has a test `make test-fast` runs, in a file that imports it."""
    file = "tests/test_mutation_killers_round_two.py"
    assert [module for module, test in SURFACES.items() if not _in_fast_subset(f"{file}::{test}")] == []
    assert [module for module in SURFACES if module not in _imported_by(file)] == []
