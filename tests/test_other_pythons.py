"""Python 3.13 (Unicode 15.1, what Debian 13 ships) grades like the reference Python 3.11
(Unicode 14.0), and its runs count, when no text holds a code point whose properties moved.

One session venv is built from requirements-runtime.lock on Python 3.13 (with ifaudit from this
checkout), as `make run PYTHON=python3.13` builds it. In it the real DAG grades the default run and
one run of every checker task; their grades are compared byte for byte with Python 3.11's (the
session's scenario runs, or the CLI in this venv), every canary passes, and every run counts, its
summary saying Unicode 15.1.0 and that the exposure check passed. One more run holds U+1DF25 (a
lowercase letter from Unicode 15.0 on, unassigned in 14.0) in three all-capital responses: under
3.13 it grades differently and is NOT COUNTED, naming the code point and each (key, sample); under
3.11 the same run counts."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import GPT4_RESPONSES, IFEVAL_PROMPTS, REPO, ScenarioRun, copy_of_default_run, read_jsonl, run_cli
from conftest import write_jsonl
from output_digests import ARABIC_PROMPTS, SCENARIOS
from test_workflow import snakemake, snakemake_call, summary, write_config

import yaml

pytestmark = pytest.mark.e2e

NEW_IN_15 = "\U0001df25"
# Three of Google's GPT-4 responses to all-capital prompts (english_capital, followed on 3.11),
# each ending in U+1DF25: all capitals under Unicode 14.0, not under 15.0 and later.
EXPOSED_KEYS = (1132, 1219, 1389)


def python_3_13() -> str | None:
    candidates = [
        shutil.which("python3.13"),
        *map(str, sorted(Path.home().glob(".pyenv/versions/3.13*/bin/python3.13"))),
    ]
    runs = (c for c in candidates if c and subprocess.run([c, "-c", ""], capture_output=True).returncode == 0)
    return next(runs, None)


@pytest.fixture(scope="session")
def py313_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin folder of a venv of requirements-runtime.lock (hashes required) on Python 3.13,
    ifaudit installed from this checkout: what the Makefile builds with PYTHON=python3.13."""
    python = python_3_13()
    if python is None:
        pytest.skip("no Python 3.13 on this machine (CI machines have pyenv's)")
    venv = tmp_path_factory.mktemp("python313") / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    # --no-compile: what the DAG imports compiles when first imported (a third of pip's CPU saved).
    pip = [str(venv / "bin" / "pip"), "install", "--quiet", "--no-compile"]
    for args in (["--require-hashes", "-r", str(REPO / "requirements-runtime.lock")], ["--no-deps", "-e", str(REPO)]):
        done = subprocess.run([*pip, *args], capture_output=True, text=True)
        assert done.returncode == 0, f"pip install {' '.join(args)} on Python 3.13 failed:\n{done.stderr}"
    return venv / "bin"


def exposed_responses(path: Path) -> Path:
    by_prompt = {record["prompt"]: record["response"] for record in read_jsonl(GPT4_RESPONSES)}
    prompts = {record["key"]: record["prompt"] for record in read_jsonl(IFEVAL_PROMPTS)}
    records = [{"key": key, "response": by_prompt[prompts[key]].rstrip() + f" {NEW_IN_15}"} for key in EXPOSED_KEYS]
    records.append({"key": 1000, "response": by_prompt[prompts[1000]]})  # one without: named nowhere
    return write_jsonl(path, records)


EXPOSED_RUN = {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "gpt4_exposed"}


@pytest.fixture(scope="module")
def dag_313(py313_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The DAG run by the 3.13 venv's Snakemake: the default run, the Arabic scenario's runs (two
    Arabic tasks), Google's run with the English gate, the Hugging Face Arabic variant without its
    gate, and the exposed run."""
    workdir = tmp_path_factory.mktemp("dag_313")
    SCENARIOS["arabic"](workdir)
    settings = yaml.safe_load((workdir / "test.yaml").read_text())
    settings["datasets"]["gpt4_exposed"] = {"path": str(exposed_responses(workdir / "gpt4_exposed.jsonl"))}
    settings["runs"].update(
        gpt4_langcheck={"task": "ifeval_langcheck", "prompts": "ifeval_prompts_github", "responses": "gpt4_responses"},
        arabic_hf={"task": "ifeval_arabic_inception_hf", "prompts": "arabic_jsonl_standing_in_for_hf"}
        | {"responses": "arabic_answers"},
        gpt4_exposed=EXPOSED_RUN,
    )
    write_config(workdir, settings)
    command, env = snakemake_call(workdir)
    command[0] = str(py313_bin / "snakemake")
    env["PATH"] = f"{py313_bin}:{env['PATH']}"
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True)
    # A run that does not count fails the DAG after everything is written: here the exposed run
    # alone, the last line naming it (test_a_run_holding_u_1df25_... checks what it says).
    refused = [line for line in done.stderr.splitlines() if "NOT COUNTED" in line]
    assert done.returncode == 1 and len(refused) == 1, f"snakemake on Python 3.13:\n{done.stdout}\n{done.stderr}"
    assert done.stderr.strip().splitlines()[-1].startswith("ifaudit: error: run gpt4_exposed NOT COUNTED: ")
    return workdir


def grades(workdir: Path, run: str) -> bytes:
    return (workdir / "results" / run / "grades.jsonl").read_bytes()


def cli_grades(task: str, prompts: Path, responses: Path, out: Path, resources: Path) -> bytes:
    """One unsharded pass of `ifaudit grade` by this (Python 3.11) venv: the bytes the DAG's
    verified grades hold."""
    command = ["grade", "--quiet", "--task", task, "--prompts", str(prompts), "--responses", str(responses)]
    run_cli([*command, "--grader", "upstream", "--offline", "--out", str(out)], resources)
    return out.read_bytes()


def test_python_3_13_grades_every_checker_task_like_3_11_and_its_runs_count(
    dag_313: Path, scenario_run: Callable[[str], ScenarioRun], resources: Path, tmp_path: Path
) -> None:
    reference = {"gpt4_google": scenario_run("offline_default").workdir}
    reference |= dict.fromkeys(("arabic", "arabic_hf_langcheck"), scenario_run("arabic").workdir)
    for run, workdir in reference.items():
        assert grades(dag_313, run) == grades(workdir, run), f"{run}: Python 3.13's grades differ from 3.11's"
    # The two tasks no scenario runs: graded here by Python 3.11 with the CLI.
    assert grades(dag_313, "gpt4_langcheck") == cli_grades(
        "ifeval_langcheck", IFEVAL_PROMPTS, GPT4_RESPONSES, tmp_path / "langcheck.jsonl", resources
    )
    hf_responses = dag_313 / "arabic_responses.jsonl"
    assert grades(dag_313, "arabic_hf") == cli_grades(
        "ifeval_arabic_inception_hf", ARABIC_PROMPTS, hf_responses, tmp_path / "hf.jsonl", resources
    )
    tasks = {"ifeval", "ifeval_langcheck", "ifeval_arabic_inception", "ifeval_arabic_inception_hf"}
    tasks.add("ifeval_arabic_inception_hf_langcheck")
    for task in sorted(tasks):
        verdict = json.loads((dag_313 / "results" / "canary" / f"{task}.json").read_text())
        assert verdict["passed"] and verdict["versions"]["python"].startswith("3.13"), task
        assert verdict["environment"]["unicodedata"] == "15.1.0"
    for run in ("gpt4_google", "arabic", "arabic_hf_langcheck", "gpt4_langcheck", "arabic_hf"):
        result = summary(dag_313, run)
        assert result["counted"] is True and result["not_counted_because"] == [], run
        assert result["unicode"]["version"] == "15.1.0" and result["unicode"]["passed"] is True
        assert result["unicode"]["exposed"] == []
    # On 3.11 the same summary says the reference version, checked and passed.
    assert summary(reference["gpt4_google"], "gpt4_google")["unicode"]["version"] == "14.0.0"
    assert summary(reference["gpt4_google"], "gpt4_google")["unicode"]["passed"] is True


def test_a_run_holding_u_1df25_is_not_counted_under_3_13_naming_it_and_counts_on_3_11(
    dag_313: Path, scenario_run: Callable[[str], ScenarioRun], tmp_path: Path
) -> None:
    result = summary(dag_313, "gpt4_exposed")
    assert result["counted"] is False
    [reason] = result["not_counted_because"]
    places = ", ".join(f"response {key}/0" for key in EXPOSED_KEYS)
    assert reason == (
        "graded under Unicode 15.1.0, whose properties differ from 14.0.0 at code points the run's texts hold: "
        f"U+1DF25 ({places})"
    )
    assert result["unicode"]["exposed"] == [
        {"code_point": "U+1DF25", "in": [{"key": key, "sample": 0} for key in EXPOSED_KEYS]}
    ]
    # Python 3.11 grades the same responses: the run counts, and its all-capital verdicts are
    # not 3.13's (what the refusal protects).
    workdir = copy_of_default_run(scenario_run, tmp_path)
    exposed_responses(workdir / "gpt4_exposed.jsonl")
    write_config(
        workdir,
        {
            "datasets": {"gpt4_exposed": {"path": str(workdir / "gpt4_exposed.jsonl")}},
            "runs": {"gpt4_exposed": EXPOSED_RUN},
        },
    )
    snakemake(workdir)
    on_311 = summary(workdir, "gpt4_exposed")
    assert on_311["counted"] is True and on_311["unicode"]["version"] == "14.0.0" and on_311["unicode"]["passed"]
    capital = "change_case:english_capital"

    def capital_verdicts(folder: Path) -> dict[int, bool]:
        return {
            record["key"]: record["strict"]["follow_instruction_list"][record["instruction_id_list"].index(capital)]
            for record in map(json.loads, grades(folder, "gpt4_exposed").decode().splitlines())
            if capital in record["instruction_id_list"]
        }

    assert capital_verdicts(workdir) == dict.fromkeys(EXPOSED_KEYS, True)
    assert capital_verdicts(dag_313) == dict.fromkeys(EXPOSED_KEYS, False)


# What the pinned `regex` (its own Unicode tables, through nltk's tokenizers and our gates) takes
# as \w, \d, \s, letters, cased letters and marks, and case-insensitively as a cased letter or an
# ASCII letter, over every code point.
REGEX_PROBE = r"""
import hashlib, regex, sys
patterns = (r"\w", r"\d", r"\s", r"\p{L}", r"\p{Lu}", r"\p{Ll}", r"\p{M}", r"(?i)\p{Lu}", r"(?i)[a-z]")
classes = [regex.compile(pattern) for pattern in patterns]
digest = hashlib.sha256()
for cp in range(sys.maxunicode + 1):
    digest.update(bytes(bool(pattern.fullmatch(chr(cp))) for pattern in classes))
print(regex.__version__, digest.hexdigest())
"""


def test_the_pinned_regex_reads_the_same_tables_under_3_13(py313_bin: Path) -> None:
    """regex carries its own Unicode database: the exposure sets need not cover it."""
    found = [
        subprocess.run([str(python), "-c", REGEX_PROBE], capture_output=True, text=True, check=True).stdout.split()
        for python in (Path(sys.executable), py313_bin / "python")
    ]
    assert found[0] == found[1]
