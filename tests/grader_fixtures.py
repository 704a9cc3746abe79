"""The two graders of Google's registry, for tests that must hold for both: the pinned upstream
grader (the product's default, materialized from conftest.UPSTREAM_SOURCE) and the registry
stand-in; and IFBench's pinned grader at both its commits (`ifbench_graders`), loaded in this
process once for the session, so the fast tests reach the second benchmark family. A plugin of
conftest.py (`pytest_plugins`), so its fixtures reach every test module.

A missing upstream copy fails the tests that ask for it; nothing here skips or falls back to the
stand-in."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from conftest import GPT4_RESPONSES, IFEVAL_PROMPTS, NLTK_MIRROR, REPO, UPSTREAM, UPSTREAM_SOURCE, grade_args, run_cli

if TYPE_CHECKING:
    from ifaudit.tasks.base import GradingOptions
    from ifaudit.tasks.graders import CheckerRegistry

GRADERS = ("upstream", "stand-in")  # the --grader choices, and the ids of the tests over them
PIN = REPO / "vendor/google_ifeval/pin.toml"


def upstream_copy(source: str = UPSTREAM_SOURCE) -> Path:
    """The first entry of `source` (os.pathsep-separated, as IFAUDIT_GRADER_SOURCE may be) that
    exists, else its first entry: a test handed a missing copy fails on it."""
    entries = [Path(entry) for entry in source.split(os.pathsep) if entry]
    return next((entry for entry in entries if entry.exists()), entries[0])


def missing_upstream_copy(copy: Path) -> str:
    """The one line a test fails with when the upstream grader copy is not there."""
    return (
        f"no copy of the pinned upstream grader at {copy}: set IFAUDIT_SHARED to the shared/ folder "
        "or IFAUDIT_GRADER_SOURCE to a copy of the pinned grader files"
    )


@pytest.fixture(scope="session")
def upstream(resources: Path) -> CheckerRegistry:
    """The pinned upstream checker registry, loaded in this process from the first existing entry
    of conftest.UPSTREAM_SOURCE alone (never a mirror or the canonical URL), with the NLTK data
    resolved. Materialized where `ifaudit --grader upstream` looks (resources/vendor/google_ifeval),
    so the CLI runs of the session reuse the verified files."""
    from ifaudit.io.remote.nltk_data import resolve_punkt
    from ifaudit.io.remote.pins import load_pin
    from ifaudit.io.remote.sources import Holds, parse_source
    from ifaudit.tasks.graders import load_upstream

    copy = upstream_copy()
    if not copy.exists():
        pytest.fail(missing_upstream_copy(copy), pytrace=False)
    resolve_punkt(resources / "nltk_data", NLTK_MIRROR)
    source = parse_source(str(copy), Holds.TREE)
    pin = load_pin(PIN)
    # A second pytest session in this process (mutmut runs one per mutant) finds the grader
    # imported from the first session's folder, and load_upstream refuses a module imported from
    # anywhere but the folder it verifies: that session materializes where the first one did.
    imported = sys.modules.get(f"{pin.package}.instructions_registry")
    cache = (
        Path(imported.__file__).parents[2] if imported and imported.__file__ else resources / "vendor" / "google_ifeval"
    )
    return load_upstream(pin, cache, [source])


@pytest.fixture(scope="session", params=GRADERS)
def grader(request: pytest.FixtureRequest) -> str:
    """Each grader of Google's registry in turn, by its --grader name (test ids "upstream" and
    "stand-in"). Its registry is loaded first, so a missing upstream copy fails the test here
    and the CLI finds the upstream files already materialized."""
    request.getfixturevalue(_fixture_of(request.param))
    return str(request.param)


@pytest.fixture(scope="session")
def registry(grader: str, request: pytest.FixtureRequest) -> CheckerRegistry:
    """The registry of the `grader` in turn, loaded in this process (`upstream` or `stand_in`)."""
    return request.getfixturevalue(_fixture_of(grader))


def _fixture_of(grader: str) -> str:
    return {"upstream": "upstream", "stand-in": "stand_in"}[grader]


@pytest.fixture(scope="session")
def upstream_gpt4_grades(upstream: CheckerRegistry, resources: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The GPT-4 responses graded once by the CLI with the pinned upstream grader, under hash
    seed 1 (the upstream twin of conftest.standin_gpt4_grades)."""
    return grade_gpt4(tmp_path_factory.mktemp("grades") / "gpt4-upstream.jsonl", resources, "1", "upstream")


@pytest.fixture(scope="session")
def gpt4_grades(grader: str, request: pytest.FixtureRequest) -> Path:
    """The session's CLI grading of the 541 GPT-4 responses by the `grader` in turn (hash seed 1)."""
    return request.getfixturevalue({"upstream": "upstream_gpt4_grades", "stand-in": "standin_gpt4_grades"}[grader])


def grade_gpt4(out: Path, resources: Path, hash_seed: str, grader: str) -> Path:
    """The 541 GPT-4 responses graded by the CLI with `grader`, under a hash seed."""
    run_cli(grade_args(IFEVAL_PROMPTS, GPT4_RESPONSES, out, grader=grader), resources, PYTHONHASHSEED=hash_seed)
    return out


IFBENCH_PIN = REPO / "vendor/allenai_ifbench/pin.toml"
IFBENCH_MIRROR = UPSTREAM / "allenai_ifbench"


def ifbench_options(resources: Path, version: str | None = None) -> GradingOptions:
    """IFBench's grading options as the CLI makes them, offline, with the shared mirror of both
    pinned commits named as sources (not the pin's own relative mirror: under `make mutation` the
    tests run from a copy of the checkout, from where it does not lead to ../shared)."""
    from ifaudit.tasks.base import GradingOptions

    return GradingOptions(
        resources=resources,
        pin=IFBENCH_PIN,
        grader_version=version,
        sources=tuple(str(folder) for folder in sorted(IFBENCH_MIRROR.iterdir()) if folder.is_dir()),
        offline=True,
        nltk_mirror=NLTK_MIRROR,
    )


@dataclass(frozen=True)
class IfbenchGraders:
    """IFBench's pinned grader at each pinned commit, loaded in this process as a grading process
    loads it, and what loading left of the process's environment."""

    registries: dict[str, CheckerRegistry]  # by pin version (c6767a1, db69a6f)
    nltk_data_before: str | None  # NLTK_DATA before the first load
    nltk_data_after: str | None  # and after both
    options: Callable[[str | None], GradingOptions]


@pytest.fixture(scope="session")
def ifbench_graders(resources: Path) -> IfbenchGraders:
    """Both pinned IFBench graders, materialized from ../shared/upstream and imported once for the
    session (about a second each): the fast tests' IFBench. db69a6f's import sets NLTK_DATA when it
    is unset, so it is loaded with NLTK_DATA unset, and what it is after is recorded."""
    from ifaudit.tasks.ifbench import IFBENCH, PIN_VERSIONS

    # A second pytest session in this process (mutmut runs one per mutant) finds the grader
    # imported from the first session's resources/, and the loader refuses a module imported from
    # anywhere but the folder it verifies: that session materializes there again.
    imported = sys.modules.get("instructions_registry")
    where = Path(imported.__file__) if imported and imported.__file__ else None
    root = where.parents[3] if where and where.parents[1].name == "allenai_ifbench" else resources
    before = os.environ.pop("NLTK_DATA", None)
    registries = {version: IFBENCH.environment(ifbench_options(root, version))[0] for version in PIN_VERSIONS}
    after = os.environ.get("NLTK_DATA")
    if before is not None:
        os.environ["NLTK_DATA"] = before
    return IfbenchGraders(registries, None, after, lambda version: ifbench_options(root, version))
