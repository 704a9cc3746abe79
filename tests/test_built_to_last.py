"""A grading process builds its grader's tables out of the cyclic collector's sight
(io.lifetime.built_to_last): the collector is off while they are built, what was built is frozen
after, and the collector is back for what comes later."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import GPT4_RESPONSES, IFEVAL_PROMPTS, cli_env, grade_args

from ifaudit.io.lifetime import built_to_last


@pytest.fixture(autouse=True)
def collector_as_it_was() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    gc.unfreeze()  # the test process's own objects go back to the collector
    (gc.enable if enabled else gc.disable)()


def tracked(thing: object) -> bool:
    """Seen by the collector's generations (a frozen object is not)."""
    return any(other is thing for other in gc.get_objects())


def test_what_is_built_inside_is_frozen_and_what_comes_after_is_collected() -> None:
    gc.enable()
    with built_to_last():
        assert not gc.isenabled()
        table = [[index] for index in range(1_000)]
    assert gc.isenabled()
    assert not tracked(table) and not tracked(table[0])
    later: list[object] = []
    later.append(later)  # a cycle made after the block
    assert tracked(later)
    del later
    assert gc.collect() >= 1


def test_a_collector_that_was_off_stays_off_and_an_error_still_freezes() -> None:
    gc.disable()
    with pytest.raises(ValueError), built_to_last():
        table = {"kept": [1]}
        raise ValueError
    assert not gc.isenabled()
    assert not tracked(table)


def test_a_grading_process_keeps_langdetects_profiles_out_of_the_collectors_sight(
    resources: Path, tmp_path: Path
) -> None:
    """The default run's pass, in a process of its own as the DAG runs it: its canary's first
    language check loads langdetect's 55 profiles; once it has graded, their table is frozen and
    the collector is on."""
    probe = (
        "import gc, sys\n"
        "from ifaudit.cli import main\n"
        "status = main(sys.argv[1:])\n"
        "import langdetect.detector_factory as factory\n"
        "table = factory._factory.word_lang_prob_map\n"
        "print(status, len(table), gc.isenabled(), any(other is table for other in gc.get_objects()))\n"
    )
    canary = ("--canary-out", str(tmp_path / "canary.json"))
    canary += ("--canary-prompts", str(IFEVAL_PROMPTS), "--canary-responses", str(GPT4_RESPONSES))
    args = grade_args(IFEVAL_PROMPTS, GPT4_RESPONSES, tmp_path / "grades.jsonl", *canary, grader="upstream")
    done = subprocess.run([sys.executable, "-c", probe, *args], env=cli_env(resources), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    status, words, enabled, seen = done.stdout.split()
    assert (status, enabled, seen) == ("0", "True", "False") and int(words) > 50_000
