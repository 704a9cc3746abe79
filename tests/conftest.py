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
import tempfile
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
    _share_bytecode()


# The tests start about 1,500 Python processes (every DAG job, every CLI call, the scratch venvs').
# With PYTHONDONTWRITEBYTECODE set (CI's image sets it) or a scratch venv built without bytecode,
# each compiled everything it imported that had no .pyc: ifaudit's own modules in every process,
# Snakemake and numpy in the reviewer's and Python 3.13's venvs. Their bytecode goes to one cache
# outside the checkout instead (PYTHONPYCACHEPREFIX; Python checks each .pyc against its source's
# mtime and size, as beside the source). The upstream graders never read it: their verified bytes
# are compiled in every process (ifaudit.io.remote.verified_import).
PYCACHE = Path(tempfile.gettempdir()) / f"ifaudit-tests-pycache-{os.getuid()}"


def _share_bytecode() -> None:
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(PYCACHE)


# Every skip is listed at the end with its reason (`-ra` in pyproject.toml). Under CI (CI=true)
# no skip is expected: each one fails the run, so a missing prerequisite can never read as a pass.
_SKIPPED: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":
        _time_taken(report)
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _SKIPPED.append(f"{report.nodeid}: {reason}")


def _skips_fail_the_run() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes") and bool(_SKIPPED)


def _is_worker(config: pytest.Config) -> bool:
    """Whether this process is a worker of pytest-xdist (`make test` runs two): the controller
    sees every worker's reports, so it alone records durations and lists skips."""
    return hasattr(config, "workerinput")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get("IFAUDIT_RECORD_DURATIONS") == "1" and not _is_worker(session.config):
        _record_durations()
    if _skips_fail_the_run():
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter) -> None:  # noqa: ANN001 - pytest's reporter type is private
    if _skips_fail_the_run():
        for line in _SKIPPED:
            terminalreporter.write_line(f"UNEXPECTED SKIP under CI: {line}", red=True)


# Which tests are slow is measured, not listed by hand: tests/durations.json holds, by test (node id
# without parameters), whether the call of its slowest case took SLOW_SECONDS or more when last
# measured (fixtures shared by the session, such as the DAG runs, are not charged to it). `make test`
# measures (IFAUDIT_RECORD_DURATIONS=1) into tests/durations.measured.json, which git ignores, so
# the README's test command leaves the checkout as it found it; `make durations` makes the measured
# sides the tracked ones, on purpose. A test not measured yet counts as slow, so a renamed or new
# test never slips into `make test-fast` (the inner loop) unmeasured.
DURATIONS = Path(os.environ.get("IFAUDIT_DURATIONS_FILE") or Path(__file__).with_name("durations.json"))
MEASURED_DURATIONS = Path(
    os.environ.get("IFAUDIT_MEASURED_DURATIONS_FILE") or Path(__file__).with_name("durations.measured.json")
)
SLOW_SECONDS = 0.5
_MEASURED: dict[str, float] = {}
_COLLECTED: set[str] = set()


def _base_id(nodeid: str) -> str:
    return nodeid.split("[")[0]


def _recorded_sides() -> dict[str, list[str]]:
    return json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {"fast": [], "slow": []}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    fast = set(_recorded_sides()["fast"])
    for item in items:
        _COLLECTED.add(_base_id(item.nodeid))
        if _base_id(item.nodeid) not in fast:
            item.add_marker(pytest.mark.slow)
    # The files that run the DAG or build environments first, each in its collected order: under
    # pytest-xdist (a file to a worker, in this order) a long file started last would run alone.
    heavy = {_file(item) for item in items if item.get_closest_marker("e2e") or item.get_closest_marker("scratch_env")}
    items.sort(key=lambda item: _file(item) not in heavy)


def _file(item: pytest.Item) -> str:
    return item.nodeid.split("::")[0]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: object, ids: list[str]) -> None:
    """Under pytest-xdist the controller collects nothing itself: what the workers collected."""
    _COLLECTED.update(_base_id(nodeid) for nodeid in ids)


def _time_taken(report: pytest.TestReport) -> None:
    base = _base_id(report.nodeid)
    _MEASURED[base] = max(_MEASURED.get(base, 0.0), report.duration)


def _record_durations() -> None:
    """Move each test that ran to the side its slowest case measured, keep the rest as recorded,
    and drop tests no longer collected: the measured sides, beside the tracked ones."""
    sides = _recorded_sides()
    slow = {test for test in sides["slow"] if test in _COLLECTED and test not in _MEASURED}
    fast = {test for test in sides["fast"] if test in _COLLECTED and test not in _MEASURED}
    for test, seconds in _MEASURED.items():
        (slow if seconds >= SLOW_SECONDS else fast).add(test)
    recorded = {"slow_seconds": SLOW_SECONDS, "fast": sorted(fast), "slow": sorted(slow)}
    MEASURED_DURATIONS.write_text(json.dumps(recorded, indent=1) + "\n")


def passed_canary_environment(grader: dict) -> dict:
    """The environment a passed canary verdict of this process records for `grader`: what a run's
    summary reads of it (the grader, and the Unicode version and exposure data that graded)."""
    import unicodedata

    from ifaudit.tasks.unicode_exposure import exposure_sha256

    return {"grader": grader, "unicodedata": unicodedata.unidata_version, "unicodedata_exposure": exposure_sha256()}


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
def scenario_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[str], ScenarioRun]]:
    """Each scenario of output_digests.SCENARIOS run by Snakemake once per test run, when a test
    first asks for it: the digest check and the end-to-end tests that assert other things on the
    same configuration share it, and so do pytest-xdist's workers (the first to ask runs it, a
    second waits for it; see _shared_scenario). The folders are READ-ONLY to tests: a test that
    runs Snakemake, writes a config or adds a file works in a copy (copy_of_scenario). At the end
    of each worker's session every file of every folder it used is compared with what the DAG
    left, and any change is an error naming the files (root ignores permission bits, so the guard
    is this check)."""
    runs_root = tmp_path_factory.getbasetemp()
    if _is_worker(request.config):
        runs_root = runs_root.parent  # the controller's folder, which holds each worker's
    finished: dict[str, tuple[ScenarioRun, dict[str, str]]] = {}

    def scenario(name: str) -> ScenarioRun:
        if name not in finished:
            finished[name] = _shared_scenario(runs_root, name)
        return finished[name][0]

    yield scenario
    changed = [
        f"{name}: {path}"
        for name, (run, as_left) in finished.items()
        for now in [tree_digests(run.workdir)]
        for path in sorted(set(now) | set(as_left))
        if now.get(path) != as_left.get(path)
    ]
    assert not changed, "a test changed a shared session run (copy it first):\n" + "\n".join(changed)


def _shared_scenario(runs_root: Path, name: str) -> tuple[ScenarioRun, dict[str, str]]:
    """Scenario `name` run once under `runs_root`, shared by every process that asks: under a lock
    on the scenario, the first one runs the DAG in a folder of its own and writes the run's record
    (its folder, digests and every file as the DAG left it) last; the others read the record. A
    failed run leaves no record, so the next one to ask runs it afresh in a new folder."""
    import fcntl
    from dataclasses import asdict

    import output_digests

    record = runs_root / f"scenario_{name}.json"
    with open(runs_root / f"scenario_{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.is_file():
            workdir = Path(tempfile.mkdtemp(prefix=f"scenario_{name}_", dir=runs_root))
            digests = output_digests.run(name, workdir)
            done = {"workdir": str(workdir), "digests": asdict(digests), "as_left": tree_digests(workdir)}
            record.write_text(json.dumps(done))
    done = json.loads(record.read_text())
    run = ScenarioRun(Path(done["workdir"]), output_digests.Measured(**done["digests"]))
    return run, done["as_left"]


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


IFBENCH_300_RUN = "ifbench_sample_300"


def with_a_run_on_ifbenchs_300_rows(config: dict, workdir: Path) -> dict:
    """`config` with a run on IFBench's 300-row data (a different benchmark from the 294 rows):
    the sample outputs whose prompt text the 300 rows hold (keyed, in a file of `workdir`), the
    seven others unanswered, graded at db69a6f (docs/ifbench.md: 76/300, 92/344, 86/300, 107/344)."""
    keys = {row["prompt"].strip(): row["key"] for row in read_jsonl(DATA / "ifbench" / "IFBench_test_300.jsonl")}
    answered = [
        {"key": keys[row["prompt"].strip()], "response": row["response"]}
        for row in read_jsonl(DATA / "ifbench" / "sample_output.jsonl")
        if row["prompt"].strip() in keys
    ]
    write_jsonl(workdir / "ifbench_sample_outputs_300.jsonl", answered)
    dataset = {"description": "IFBench's sample outputs keyed to the 300 rows", "licence": "ODC-BY-1.0"}
    run = {"label": "IFBench sample outputs on the 300 rows, grader db69a6f", "task": "ifbench_db69a6f"}
    return config | {
        "datasets": config.get("datasets", {})
        | {"ifbench_sample_outputs_300": dataset | {"path": "ifbench_sample_outputs_300.jsonl"}},
        "runs": config["runs"]
        | {IFBENCH_300_RUN: run | {"prompts": "ifbench_prompts_300", "responses": "ifbench_sample_outputs_300"}},
    }


@pytest.fixture(scope="session")
def ifbench_dag_run(scenario_run, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """config/ifbench.yaml (as the folder's test.yaml) on the offline config, through the real DAG
    once per session, in a copy of the offline default run: IFBench's sample outputs under both
    pinned graders beside gpt4_google, and on the 300-row data (with_a_run_on_ifbenchs_300_rows).
    READ-ONLY to tests, as the scenario runs are."""
    import yaml

    from test_workflow import snakemake_call  # here: test_workflow imports this module

    workdir = copy_of_default_run(scenario_run, tmp_path_factory.mktemp("ifbench_dag"))
    config = yaml.safe_load((REPO / "config" / "ifbench.yaml").read_text(encoding="utf-8"))
    (workdir / "test.yaml").write_text(
        yaml.safe_dump(with_a_run_on_ifbenchs_300_rows(config, workdir), sort_keys=False)
    )
    command, env = snakemake_call(workdir)
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return workdir


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
    from ifaudit.io.remote.nltk_data import resolve_punkt

    return resolve_punkt(resources / "nltk_data", NLTK_MIRROR)


@pytest.fixture(scope="session")
def stand_in(resources: Path):
    """The stand-in checker registry, loaded in this process, with the NLTK data resolved."""
    from ifaudit.tasks.graders import load_stand_in
    from ifaudit.io.remote.nltk_data import resolve_punkt

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
