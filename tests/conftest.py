"""Shared fixtures: the offline data in ../shared/data, the CLI as a separate process, and a
loopback HTTP server. Nothing here reaches the network."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from output_digests import Measured

pytest_plugins = ["grader_fixtures"]

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("IFAUDIT_SHARED", REPO.parent / "shared")).resolve()
DATA = SHARED / "data"
IFEVAL_PROMPTS = DATA / "ifeval" / "input_data.jsonl"
GPT4_RESPONSES = DATA / "ifeval" / "input_response_data_gpt4_20231107_145030.jsonl"
REFERENCE_GRADES = DATA / "ifeval" / "reference_grades_gpt4.jsonl"
NLTK_MIRROR = DATA / "nltk"
IFAUDIT = Path(sys.executable).parent / "ifaudit"

# The real upstream grader files (never in git): the shared mirror of upstream files beside the
# checkout, unless IFAUDIT_GRADER_SOURCE names another copy. Tests never skip for want of them.
UPSTREAM = SHARED / "upstream"
UPSTREAM_SOURCE = os.environ.get("IFAUDIT_GRADER_SOURCE") or str(UPSTREAM / "google_ifeval")


def _missing_shared() -> str | None:
    """Why the suite cannot run here, or None: the offline data and the upstream mirror."""
    if not IFEVAL_PROMPTS.is_file():
        return (
            f"offline data not found at {DATA}: put the shared/ folder beside the checkout or set IFAUDIT_SHARED to it"
        )
    if not (UPSTREAM / "infobench").is_dir() or not os.path.isdir(UPSTREAM_SOURCE.split(os.pathsep)[0]):
        return (
            f"the upstream mirror is not at {UPSTREAM}: set IFAUDIT_SHARED to the shared/ folder "
            "(or IFAUDIT_GRADER_SOURCE to a copy of the pinned grader files)"
        )
    return None


def pytest_configure(config: pytest.Config) -> None:
    """Without the shared data no test can run, and a suite that ran nothing is not a pass: stop
    at once with one line and a non-zero exit (pytest's usage error, 4)."""
    missing = _missing_shared()
    if missing:
        raise pytest.UsageError(f"ifaudit tests cannot run: {missing}")


# Every skip is listed at the end with its reason (`-ra` in pyproject.toml). Under CI (CI=true)
# no skip is expected: each one fails the run, so a missing prerequisite can never read as a pass.
_SKIPPED: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _SKIPPED.append(f"{report.nodeid}: {reason}")


def _skips_fail_the_run() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes") and bool(_SKIPPED)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _skips_fail_the_run():
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter) -> None:  # noqa: ANN001 - pytest's reporter type is private
    if _skips_fail_the_run():
        for line in _SKIPPED:
            terminalreporter.write_line(f"UNEXPECTED SKIP under CI: {line}", red=True)


# Tests that took 0.5 s or more each on the 2-core CI machine (pytest --durations, not counting
# DAG runs already marked e2e): marked `slow`, so `make test-fast` (the inner loop, under a
# CPU-minute) leaves them to `make test`. Parametrized tests are named without their parameters.
SLOW = (
    "tests/test_canary_sentinels.py::test_a_different_unicode_database_fails_the_canary",
    "tests/test_canary_sentinels.py::test_the_pinned_environment_passes_every_sentinel",
    "tests/test_canary_sentinels.py::test_the_stand_in_passes_the_sentinels_too",
    "tests/test_clock.py::test_grades_are_identical_under_a_forced_limit",
    "tests/test_clock.py::test_the_fingerprint_records_the_limit_in_force",
    "tests/test_clock.py::test_the_forced_limit_would_stop_grading",
    "tests/test_cluster.py::test_apptainer_profile_binds_the_mirror_for_a_real_job",
    "tests/test_cluster.py::test_network_steps_stay_on_the_submit_host",
    "tests/test_cluster.py::test_a_real_job_without_the_mirror_bind_cannot_read_the_mirror",
    "tests/test_cluster.py::test_the_apptainer_stand_in_shows_the_shared_folder_only_through_binds",
    "tests/test_container_and_bundle.py::test_every_rule_resolves_the_container",
    "tests/test_container_and_bundle.py::test_slurm_profile_lints_and_dry_runs",
    "tests/test_determinism.py::test_each_response_grades_the_same_whatever_else_is_in_the_file",
    "tests/test_determinism.py::test_two_processes_with_different_hash_seeds_write_identical_bytes",
    "tests/test_fetch.py::test_unpinned_published_data_is_locked_on_first_fetch",
    "tests/test_fetch.py::test_wrong_bytes_are_refused_and_nothing_is_written",
    "tests/test_generation.py::test_a_run_names_a_response_file_or_a_model_not_both",
    "tests/test_generation.py::test_bad_model_settings_are_one_line",
    "tests/test_generation.py::test_generate_command_records_and_replays",
    "tests/test_generation.py::test_generated_run_in_the_dag",
    "tests/test_hostile_inputs.py::test_bad_prompt_sets_are_refused_before_grading",
    "tests/test_hostile_inputs.py::test_bom_and_crlf_are_tolerated",
    "tests/test_hostile_inputs.py::test_escaped_nul_and_a_ten_megabyte_response_are_graded",
    "tests/test_hostile_inputs.py::test_prompts_without_a_response_are_listed_and_count_as_failed",
    "tests/test_hostile_paths_and_content.py::test_a_line_over_the_cap_is_refused_and_the_cap_is_configurable",
    "tests/test_hostile_paths_and_content.py::test_a_one_gigabyte_line_is_refused_in_bounded_memory",
    "tests/test_hostile_paths_and_content.py::test_every_file_argument_of_every_command_is_checked",
    "tests/test_hostile_paths_and_content.py::test_what_is_not_contradictory_is_graded",
    "tests/test_http_client.py::test_a_redirect_to_another_origin_never_gets_the_key",
    "tests/test_http_client.py::test_an_http_date_retry_after_is_honoured",
    "tests/test_http_client.py::test_retries_are_bounded_and_end_in_one_line",
    "tests/test_http_client.py::test_retry_after_in_seconds_is_capped_and_garbage_falls_back_to_the_backoff",
    "tests/test_importers.py::test_a_generic_jsonl_log_with_named_fields_audits_to_the_pinned_grader",
    "tests/test_importers.py::test_a_leaderboard_details_folder_loads_through_datasets_and_audits",
    "tests/test_importers.py::test_an_openai_batch_output_file_audits_to_the_pinned_grader",
    "tests/test_importers.py::test_bad_generic_jsonl_logs_stop_with_one_line",
    "tests/test_importers.py::test_bad_inspect_logs_stop_with_one_line",
    "tests/test_importers.py::test_bad_leaderboard_details_stop_with_one_line",
    "tests/test_importers.py::test_bad_lm_eval_logs_stop_with_one_line",
    "tests/test_importers.py::test_bad_openai_batch_outputs_stop_with_one_line",
    "tests/test_importers.py::test_import_settings_that_are_not_a_json_object_are_one_line",
    "tests/test_importers.py::test_inspect_json_log_reads_like_the_eval_archive",
    "tests/test_importers.py::test_inspect_log_audits_to_the_pinned_grader_and_explains_each_count",
    "tests/test_importers.py::test_lm_eval_disagreements_are_exactly_the_differing_verdicts_each_explained",
    "tests/test_importers.py::test_lm_eval_log_audits_to_the_pinned_grader",
    "tests/test_importers.py::test_one_split_as_a_fetched_parquet_file_imports_the_same_responses",
    "tests/test_infobench.py::test_live_judge_then_replay_without_the_server",
    "tests/test_infobench_reference.py::test_ifaudit_judges_as_the_pinned_reference_does",
    "tests/test_properties.py::test_linear_repetition_detector_equals_the_definition",
    "tests/test_properties.py::test_locale_and_hash_seed_do_not_matter",
    "tests/test_properties.py::test_order_and_shard_count_do_not_matter",
    "tests/test_reference_grades.py::test_driver_equals_upstream_evaluation_lib",
    "tests/test_reference_grades.py::test_pinned_upstream_reproduces_reference_grades",
    "tests/test_reference_grades.py::test_stand_in_is_labelled_in_every_record",
    "tests/test_reference_grades.py::test_stand_in_reproduces_reference_grades",
    "tests/test_stats.py::test_the_same_seed_gives_identical_bytes_in_separate_processes",
    "tests/test_vendor.py::test_upstream_grader_is_never_replaced_by_the_stand_in",
    "tests/test_vendor.py::test_vendor_the_real_pin_over_http",
    "tests/test_worker_lifetime.py::test_workers_exit_within_two_seconds_of_their_parent_being_killed",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.split("[")[0] in SLOW:
            item.add_marker(pytest.mark.slow)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def assert_every_arabic_prompt_builds(registry: dict) -> None:
    """All 404 prompts of the Arabic IFEval dataset build with `registry`, each checker holding
    exactly the settings the dataset gives it."""
    prompts = read_jsonl(DATA / "arabic_ifeval" / "ar_input_data.jsonl")
    assert len(prompts) == 404
    for prompt in prompts:
        for instruction_id, kwargs in zip(prompt["instruction_id_list"], prompt["kwargs"], strict=True):
            checker = registry[instruction_id](instruction_id)
            checker.build_description(**{key: value for key, value in kwargs.items() if value is not None})
            assert set(checker.get_instruction_args_keys()) == set(kwargs)


@pytest.fixture(scope="session")
def resources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One resources/ cache for the session (NLTK data copied from the mirror once)."""
    return tmp_path_factory.mktemp("resources")


def cli_env(resources: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IFAUDIT_")}
    env.update(
        IFAUDIT_RESOURCES=str(resources),
        IFAUDIT_NLTK_MIRROR=str(NLTK_MIRROR),
        IFAUDIT_PIN=str(REPO / "vendor/google_ifeval/pin.toml"),
        IFAUDIT_GRADER_SOURCE=UPSTREAM_SOURCE,
    )
    env.update(extra)
    return env


def run_cli(args: list[str], resources: Path, check: bool = True, **env: str) -> subprocess.CompletedProcess:
    done = subprocess.run([str(IFAUDIT), *args], env=cli_env(resources, **env), capture_output=True, text=True)
    if check and done.returncode != 0:
        raise AssertionError(f"ifaudit {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
    return done


@dataclass(frozen=True)
class ScenarioRun:
    """A finished real DAG run of one recorded scenario (tests/output_digests.py): its working
    folder, and the digests of its compared outputs (files and fields) taken right after the run."""

    workdir: Path
    digests: Measured


def tree_digests(folder: Path) -> dict[str, str]:
    """sha256 of every file under `folder` (links as their targets' names), by relative path."""
    return {
        path.relative_to(folder).as_posix(): (
            "link:" + os.readlink(path) if path.is_symlink() else hashlib.sha256(path.read_bytes()).hexdigest()
        )
        for path in sorted(folder.rglob("*"))
        if path.is_symlink() or path.is_file()
    }


@pytest.fixture(scope="session")
def scenario_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], ScenarioRun]]:
    """Each scenario of output_digests.SCENARIOS run by Snakemake once per session, when a test
    first asks for it: the digest check and the end-to-end tests that assert other things on the
    same configuration share it. The folders are READ-ONLY to tests: a test that runs Snakemake,
    writes a config or adds a file works in a copy (copy_of_scenario). At the end of the session
    every file of every folder is compared with what the DAG left, and any change is an error
    naming the files (root ignores permission bits, so the guard is this check)."""
    import output_digests

    finished: dict[str, ScenarioRun] = {}
    as_left: dict[str, dict[str, str]] = {}

    def scenario(name: str) -> ScenarioRun:
        if name not in finished:
            workdir = tmp_path_factory.mktemp(f"scenario_{name}")
            finished[name] = ScenarioRun(workdir, output_digests.run(name, workdir))
            as_left[name] = tree_digests(workdir)
        return finished[name]

    yield scenario
    changed = [
        f"{name}: {path}"
        for name, run in finished.items()
        for now in [tree_digests(run.workdir)]
        for path in sorted(set(now) | set(as_left[name]))
        if now.get(path) != as_left[name].get(path)
    ]
    assert not changed, "a test changed a shared session run (copy it first):\n" + "\n".join(changed)


def copy_of_scenario(scenario_run: Callable[[str], ScenarioRun], name: str, workdir: Path) -> Path:
    """`workdir` holding a copy of the session's run of scenario `name` (results, resources, logs,
    file times and Snakemake's records kept), for a test that runs Snakemake or writes there."""
    shutil.copytree(scenario_run(name).workdir, workdir, symlinks=True, dirs_exist_ok=True)
    return workdir


def copy_of_default_run(scenario_run: Callable[[str], ScenarioRun], workdir: Path) -> Path:
    """`workdir` holding a copy of the session's offline default run. A run the test adds by its
    own `test.yaml` is then the only one the DAG grades: the finished ones are up to date, as
    test_workflow.test_adding_a_run_grades_only_that_run shows for an added run."""
    return copy_of_scenario(scenario_run, "offline_default", workdir)


@pytest.fixture
def default_run_copy(scenario_run, tmp_path: Path) -> Path:
    """`tmp_path` holding a copy of the session's offline default run (see copy_of_default_run)."""
    return copy_of_default_run(scenario_run, tmp_path)


def disagreeing_second_pass(run: Path) -> None:
    """Lay a finished run's two grading passes out again as their (single) shards, the second one
    disagreeing on one grade: the next DAG run's `verify` merges and compares them again."""
    grades = (run / "passes/a.jsonl").read_text()
    first_line, rest = grades.split("\n", 1)
    disagreeing = first_line.replace("true", "false", 1) + "\n" + rest
    assert disagreeing != grades
    (run / "passes/a/shard-0-of-1.jsonl").write_text(grades)
    (run / "passes/b/shard-0-of-1.jsonl").write_text(disagreeing)


def grade_args(prompts: Path, responses: Path, out: Path, *extra: str, grader: str = "stand-in") -> list[str]:
    """`ifaudit grade` of `responses` against `prompts` into `out`, quietly, with `grader`."""
    options = {"--grader": grader, "--prompts": str(prompts), "--responses": str(responses), "--out": str(out)}
    return ["grade", "--quiet", *(part for option in options.items() for part in option), *extra]


def grade_gpt4_with_the_stand_in(out: Path, resources: Path, hash_seed: str) -> Path:
    """The 541 GPT-4 responses graded by the CLI with the stand-in grader, under a hash seed."""
    run_cli(grade_args(IFEVAL_PROMPTS, GPT4_RESPONSES, out), resources, PYTHONHASHSEED=hash_seed)
    return out


@pytest.fixture(scope="session")
def standin_gpt4_grades(resources: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The GPT-4 responses graded once with the stand-in, under hash seed 1 (test_determinism
    grades them again under another)."""
    return grade_gpt4_with_the_stand_in(tmp_path_factory.mktemp("grades") / "gpt4.jsonl", resources, "1")


@pytest.fixture(scope="session")
def punkt(resources: Path):
    """NLTK's punkt_tab resolved from the offline mirror for checks run in this process."""
    from ifaudit.io.nltk_data import resolve_punkt

    return resolve_punkt(resources / "nltk_data", NLTK_MIRROR)


@pytest.fixture(scope="session")
def stand_in(resources: Path):
    """The stand-in checker registry, loaded in this process, with the NLTK data resolved."""
    from ifaudit.tasks.graders import load_stand_in
    from ifaudit.io.nltk_data import resolve_punkt

    resolve_punkt(resources / "nltk_data", NLTK_MIRROR)
    return load_stand_in()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass


@pytest.fixture
def http_folder(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A real HTTP server on 127.0.0.1 serving a fresh folder; yields (folder, base URL)."""
    root = tmp_path / "served"
    root.mkdir()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
