"""No grade depends on the clock: nltk's wall-clock regex limit is off in every grading process.

The limit is forced to a billionth of a second in the CLI's process (a sitecustomize module that
sets nltk.redos.DEFAULT_TIMEOUT when Python starts), a limit every nltk match exceeds, as the
first test shows with the grading function itself; every registry then still grades, in forked
workers too, to the same bytes as a normal run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import DATA, GPT4_RESPONSES, IFAUDIT, IFEVAL_PROMPTS, cli_env, read_jsonl, run_cli, write_jsonl
from grader_fixtures import missing_upstream_copy, upstream_copy

FORCED = 1e-9
UPSTREAM_MIRROR = upstream_copy()  # the first existing entry of conftest.UPSTREAM_SOURCE
ARABIC_PROMPTS = DATA / "arabic_ifeval" / "ar_input_data.jsonl"
ARABIC_ANSWER = "ذهب أحمد إلى السوق صباحا. اشترى خبزا وجبنا وبعض الفاكهة. ثم عاد إلى البيت مسرورا. "
LONG_ENGLISH = "The grader splits this into words and sentences with nltk. " * 4000  # 240 kB


@pytest.fixture(scope="module")
def forced_limit(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment under which every Python process starts with nltk's limit at FORCED seconds."""
    folder = tmp_path_factory.mktemp("forced_limit")
    (folder / "sitecustomize.py").write_text(f"import nltk.redos\nnltk.redos.DEFAULT_TIMEOUT = {FORCED!r}\n")
    return {"PYTHONPATH": str(folder)}


def test_the_forced_limit_would_stop_grading(stand_in, forced_limit, resources: Path, monkeypatch) -> None:
    """The control: the forcing reaches the CLI's Python, and at that limit the grading function
    fails on an ordinary response unless the limit is turned off, as loading a registry does."""
    import nltk.redos

    from ifaudit.tasks.grading import grade_response
    from ifaudit.io.prompts import read_prompts
    from ifaudit.core.records import Response
    from ifaudit.tasks.registry import TASKS
    from ifaudit.io.timelimits import disable_time_limits

    show = "import nltk.redos; print(nltk.redos.DEFAULT_TIMEOUT)"
    started = subprocess.run(
        [str(IFAUDIT.parent / "python"), "-c", show],
        env=cli_env(resources, **forced_limit),
        capture_output=True,
        text=True,
        check=True,
    )
    assert float(started.stdout) == FORCED
    prompt = next(p for p in read_prompts(IFEVAL_PROMPTS) if "length_constraints:number_words" in p.instruction_id_list)
    response = Response(prompt.key, 0, "A short answer of a few words.", 1)
    monkeypatch.setattr(nltk.redos, "DEFAULT_TIMEOUT", FORCED)
    with pytest.raises(TimeoutError, match="time limit"):
        grade_response(stand_in, TASKS["ifeval"], prompt, response)
    disable_time_limits()
    assert nltk.redos.DEFAULT_TIMEOUT is None
    assert grade_response(stand_in, TASKS["ifeval"], prompt, response)["strict"]["follow_instruction_list"]


def ifeval_inputs(folder: Path) -> tuple[Path, Path]:
    """40 GPT-4 answers (two chunks, so --jobs 2 forks workers) and a 240 kB answer."""
    prompts = read_jsonl(IFEVAL_PROMPTS)[:40]
    answers = {r["prompt"]: r["response"] for r in read_jsonl(GPT4_RESPONSES)}
    records = [{"key": p["key"], "response": answers[p["prompt"]]} for p in prompts]
    records.append({"key": prompts[0]["key"], "sample": 1, "response": LONG_ENGLISH})
    return IFEVAL_PROMPTS, write_jsonl(folder / "responses.jsonl", records)


def arabic_inputs(folder: Path) -> tuple[Path, Path]:
    prompts = read_jsonl(ARABIC_PROMPTS)[:40]
    records = [{"key": p["key"], "response": ARABIC_ANSWER * (1 + i % 5)} for i, p in enumerate(prompts)]
    records.append({"key": prompts[0]["key"], "sample": 1, "response": ARABIC_ANSWER * 2000})
    return ARABIC_PROMPTS, write_jsonl(folder / "responses.jsonl", records)


REGISTRIES = [  # (task, grader options, inputs): Google's upstream and stand-in, and ours with its gates
    ("ifeval", ["--grader", "upstream", "--from", str(UPSTREAM_MIRROR), "--offline"], ifeval_inputs),
    ("ifeval", ["--grader", "stand-in"], ifeval_inputs),
    ("ifeval_arabic_inception", [], arabic_inputs),
    ("ifeval_arabic_inception_hf_langcheck", [], arabic_inputs),
]


@pytest.mark.parametrize("task, options, inputs", REGISTRIES, ids=["upstream", "stand-in", "arabic", "arabic-hf-gate"])
def test_grades_are_identical_under_a_forced_limit(
    resources: Path, tmp_path: Path, forced_limit, task, options, inputs
) -> None:
    assert "upstream" not in options or UPSTREAM_MIRROR.exists(), missing_upstream_copy(UPSTREAM_MIRROR)
    prompts, responses = inputs(tmp_path)
    base = ["grade", "--quiet", "--task", task, *options, "--prompts", str(prompts), "--responses", str(responses)]
    normal, forced = tmp_path / "normal.jsonl", tmp_path / "forced.jsonl"
    run_cli([*base, "--out", str(normal)], resources)
    run_cli([*base, "--out", str(forced), "--jobs", "2"], resources, **forced_limit)
    assert normal.read_bytes() == forced.read_bytes()
    assert len(read_jsonl(forced)) == 41


def test_the_fingerprint_records_the_limit_in_force(resources: Path, tmp_path: Path, forced_limit) -> None:
    record = tmp_path / "environment.json"
    run_cli(["vendor", "--grader", "stand-in", "--record", str(record)], resources, **forced_limit)
    assert json.loads(record.read_text())["time_limits"] == {"nltk.redos.DEFAULT_TIMEOUT": None}
