"""One line, never a traceback or a hang (issue 37): each class of hostile input below stops the
command (or the DAG, before any job) with exit status non-zero and exactly one line naming the
key, the variable or the path, and no traceback. Commands run as real processes with a timeout,
so a hang fails the test instead of blocking it."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from conftest import IFAUDIT, IFEVAL_PROMPTS, REPO, cli_env, grade_args, read_jsonl, write_jsonl
from test_workflow import snakemake_call, without_profile_note

LOGS = Path(__file__).parent / "data" / "harness_logs"
LM_EVAL_SAMPLES = next((LOGS / "lm_eval").glob("samples_*.jsonl"))
LM_EVAL_RESULTS = next((LOGS / "lm_eval").glob("results_*.json"))
INSPECT_EVAL = next((LOGS / "inspect").glob("*.eval"))
PROMPTS = read_jsonl(IFEVAL_PROMPTS)[:2]
# Run as root, permissions do not stop a write; without these capabilities they do.
NO_OVERRIDE = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []


def ifaudit(args: list[str], resources: Path, **env: str) -> subprocess.CompletedProcess:
    """The CLI as its own process; a read that blocks (a FIFO, a device) fails the test at the timeout."""
    return subprocess.run(
        [str(IFAUDIT), *args], env=cli_env(resources, **env), capture_output=True, text=True, timeout=60
    )


def snakemake(workdir: Path, *args: str, wrap: Sequence[str] = (), **env: str) -> subprocess.CompletedProcess:
    """The project's Snakefile in `workdir` on the offline config and the test's own `test.yaml`."""
    command, environment = snakemake_call(workdir, *args)
    return subprocess.run(
        [*wrap, *command], cwd=workdir, env={**environment, **env}, capture_output=True, text=True, timeout=300
    )


def one_line(done: subprocess.CompletedProcess, *words: str) -> str:
    """The one error line of a failed command, holding every one of `words`."""
    assert done.returncode != 0, done.stderr
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("ifaudit: error: "), lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def small_grading(tmp_path: Path) -> list[str]:
    """`ifaudit grade` of two short responses with the stand-in: quick, and reads JSONL."""
    prompts = write_jsonl(tmp_path / "prompts.jsonl", PROMPTS)
    responses = write_jsonl(tmp_path / "responses.jsonl", [{"key": p["key"], "response": "fine"} for p in PROMPTS])
    return grade_args(prompts, responses, tmp_path / "grades.jsonl")


# --- NaN and infinity in a harness's results file ---------------------------------------------


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_nonfinite_number_in_lm_eval_results_one_line(resources: Path, tmp_path: Path, number: str) -> None:
    results = json.loads(LM_EVAL_RESULTS.read_text(encoding="utf-8"))
    field = "prompt_level_strict_acc,none"
    task = next(name for name, figures in results["results"].items() if field in figures)
    text = json.dumps(results, indent=2).replace(
        f'"{field}": {results["results"][task][field]!r}', f'"{field}": {number}'
    )
    assert number in text
    hostile = tmp_path / "results.json"
    hostile.write_text(text, encoding="utf-8")
    out, harness = tmp_path / "responses.jsonl", tmp_path / "harness.json"
    args = ["import-log", "--format", "lm-eval", "--log", str(LM_EVAL_SAMPLES), "--prompts", str(IFEVAL_PROMPTS)]
    args += ["--out", str(out), "--harness", str(harness), "--options-json", json.dumps({"results": str(hostile)})]
    line = one_line(
        ifaudit(args, resources), f"{hostile}: field 'results.{task}.{field}': {number} is not a finite number"
    )
    assert not out.exists() and not harness.exists(), line


# --- IFAUDIT_* caps in digits other than 0-9, or out of range ---------------------------------


@pytest.mark.parametrize(
    "value",
    ["١٠٠٠٠", "１００００", "²", "0", "-5", "99999999999999999999999", "9" * 5000],
    ids=["arabic-indic", "fullwidth", "superscript", "zero", "negative", "huge", "thousands-of-digits"],
)
def test_non_ascii_digits_in_caps_refused(resources: Path, tmp_path: Path, value: str) -> None:
    done = ifaudit(small_grading(tmp_path), resources, IFAUDIT_MAX_LINE_BYTES=value)
    one_line(done, "IFAUDIT_MAX_LINE_BYTES=", "expected a positive number of bytes, written in the digits 0-9")
    assert not (tmp_path / "grades.jsonl").exists()
    out, harness = tmp_path / "imported.jsonl", tmp_path / "harness.json"
    args = ["import-log", "--format", "inspect", "--log", str(INSPECT_EVAL), "--prompts", str(IFEVAL_PROMPTS)]
    done = ifaudit([*args, "--out", str(out), "--harness", str(harness)], resources, IFAUDIT_MAX_MEMBER_BYTES=value)
    one_line(done, "IFAUDIT_MAX_MEMBER_BYTES=", "expected a positive number of bytes")
    assert not out.exists()


# --- keys YAML reads as numbers, booleans, null or dates ----------------------------------------


@pytest.mark.e2e
@pytest.mark.parametrize(
    "config, where, kind",
    [
        ("datasets:\n  1: {path: x.jsonl}\n  a: {path: y.jsonl}\n", "datasets.1", "a number"),
        ("statistics:\n  true: 3\n  resamples: 100\n", "statistics.true", "a boolean"),
        ("datasets:\n  null: {path: x.jsonl}\n  a: {path: y.jsonl}\n", "datasets.null", "null"),
        ("runs:\n  2024-01-01: {task: ifeval}\n  b: {task: ifeval}\n", "runs.2024-01-01", "a date"),
    ],
    ids=["number", "boolean", "null", "date"],
)
def test_mixed_type_config_keys_one_line(tmp_path: Path, config: str, where: str, kind: str) -> None:
    (tmp_path / "test.yaml").write_text(config)
    done = snakemake(tmp_path, "--dry-run")
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        without_profile_note(done.stderr)
        == f"ifaudit: error: {tmp_path / 'test.yaml'}:2: config: {where}: a key must be text; YAML read this one as {kind}: quote it\n"
    )
    assert "Traceback" not in done.stdout
    assert not (tmp_path / "results").exists()


# --- the workflow's staging folder (.snakemake/ifaudit) that cannot be written ------------------


def _staging_is_a_file(workdir: Path) -> None:
    (workdir / ".snakemake").mkdir()
    (workdir / ".snakemake" / "ifaudit").write_text("not a folder\n")


def _snakemake_folder_is_a_file(workdir: Path) -> None:
    (workdir / ".snakemake").write_text("not a folder\n")


def _staging_is_read_only(workdir: Path) -> None:
    (workdir / ".snakemake" / "ifaudit").mkdir(parents=True)
    (workdir / ".snakemake" / "ifaudit").chmod(0o555)


@pytest.mark.e2e
@pytest.mark.parametrize(
    "make, said",
    [
        (_staging_is_a_file, "cannot write: it is a file, not a folder"),
        (_snakemake_folder_is_a_file, "is not a folder"),
        (_staging_is_read_only, "cannot write: Permission denied"),
    ],
    ids=["staging-is-a-file", "dot-snakemake-is-a-file", "read-only"],
)
def test_staging_folder_is_a_file_one_line(tmp_path: Path, make, said: str) -> None:
    make(tmp_path)
    done = snakemake(tmp_path, "--dry-run", wrap=NO_OVERRIDE if make is _staging_is_read_only else ())
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    ours = without_profile_note(done.stderr)
    assert ours.splitlines() == [ours.strip()], done.stderr
    assert ours.startswith("ifaudit: error: .snakemake/ifaudit: ") and said in ours, done.stderr


# --- a folder, a FIFO, a device or a binary file where a file is wanted -------------------------


def _special(tmp_path: Path, kind: str) -> tuple[Path, str]:
    """A path of `kind` and what the refusal says it is."""
    if kind == "folder":
        (tmp_path / "a_folder").mkdir()
        return tmp_path / "a_folder", "is a folder, not a file"
    if kind == "fifo":
        os.mkfifo(tmp_path / "fifo")  # a plain open would wait for a writer forever
        return tmp_path / "fifo", "is a FIFO (named pipe), not a file"
    if kind == "dev-zero":
        return Path("/dev/zero"), "is a character device, not a file"  # a read never ends
    (tmp_path / "pin.toml").write_bytes(bytes(range(256)))
    return tmp_path / "pin.toml", "not a pin file: not UTF-8 text"


@pytest.mark.parametrize("kind", ["folder", "fifo", "dev-zero", "binary"])
def test_special_files_where_a_file_is_wanted_refused(resources: Path, tmp_path: Path, kind: str) -> None:
    """IFAUDIT_PIN names the grader's pin file: refused at once (a FIFO and /dev/zero hung, a
    folder and a binary file ended in a traceback)."""
    path, said = _special(tmp_path, kind)
    done = ifaudit([*small_grading(tmp_path), "--offline"], resources, IFAUDIT_PIN=str(path))
    line = one_line(done, f"{path}: {said}")
    assert kind == "binary" or line.endswith("(hint: named by IFAUDIT_PIN)"), line  # its content is the pin's
    assert not (tmp_path / "grades.jsonl").exists()


@pytest.mark.parametrize(
    "command, said",
    [
        (["canary", "--canary", "{binary}", "--out", "{out}"], "cannot read canary: 'utf-8' codec can't decode"),
        (["selfcheck", "--config", "{binary}", "--out", "{out}", "--offline"], "not a config with datasets"),
    ],
    ids=["canary-file", "selfcheck-config"],
)
def test_binary_file_where_a_text_file_is_wanted_one_line(
    resources: Path, tmp_path: Path, command: list[str], said: str
) -> None:
    binary, out = tmp_path / "binary", tmp_path / "out.json"
    binary.write_bytes(bytes(range(255, -1, -1)))
    done = ifaudit([part.format(binary=binary, out=out) for part in command], resources)
    one_line(done, f"{binary}: {said}")
    assert not out.exists()


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["folder", "fifo", "dev-zero"])
def test_special_files_where_a_file_is_wanted_refused_by_the_config_check(tmp_path: Path, kind: str) -> None:
    """A dataset's `path` in the config: refused before any job, saying what it is."""
    path, said = _special(tmp_path, kind)
    config = {
        "datasets": {"mine": {"path": str(path)}},
        "runs": {"mine": {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "mine"}},
    }
    (tmp_path / "test.yaml").write_text(json.dumps(config))
    done = snakemake(tmp_path, "--dry-run")
    assert done.returncode == 2, done.stdout + done.stderr
    said = f"ifaudit: error: {tmp_path / 'test.yaml'}:1: config: datasets.mine.path: {said}: {path}\n"
    assert without_profile_note(done.stderr) == said


# --- a resources variable naming a file -----------------------------------------------------------


def test_resources_variable_naming_a_file_one_line(resources: Path, tmp_path: Path) -> None:
    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder\n")
    done = ifaudit(small_grading(tmp_path), resources, IFAUDIT_RESOURCES=str(a_file))
    one_line(done, f"{a_file}: cannot write: it is a file, not a folder", "IFAUDIT_RESOURCES")
    # A fresh cache, so the mirror is what NLTK's data would come from.
    fresh = tmp_path / "fresh"
    done = ifaudit(small_grading(tmp_path), fresh, IFAUDIT_NLTK_MIRROR=str(a_file))
    one_line(done, f"{a_file}: is a file, not a folder", "IFAUDIT_NLTK_MIRROR")
    assert not (tmp_path / "grades.jsonl").exists()


# --- the HTML report's target is a folder -------------------------------------------------------


@pytest.mark.e2e
def test_html_report_target_folder_refused_before_jobs(tmp_path: Path) -> None:
    """Rendered by the workflow after every job succeeded (IFAUDIT_HTML_REPORT, as `make run`
    sets it): a folder there is refused at the DAG's start, before any job runs."""
    (tmp_path / "results" / "report.html").mkdir(parents=True)
    dataset = tmp_path / "resources" / "data" / "ifeval_prompts_github.jsonl"  # one quick job
    target = str(dataset.relative_to(tmp_path))  # after `--cores`, not taken as a `--config` value
    done = snakemake(tmp_path, "--cores", "2", target, IFAUDIT_HTML_REPORT="results/report.html")
    assert done.returncode == 2, done.stdout + done.stderr
    assert without_profile_note(done.stderr) == "ifaudit: error: results/report.html: cannot write: Is a directory\n"
    assert not dataset.exists() and (tmp_path / "results" / "report.html").is_dir()
    # `make run` says the same one line (and make its own), and leaves the folder as it was.
    command, environment = snakemake_call(tmp_path)
    arguments = " ".join(command[command.index("-s") :])
    made = subprocess.run(
        ["make", "--no-print-directory", "-f", str(REPO / "Makefile"), "run", f"ARGS={arguments}"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode != 0
    ours = without_profile_note(made.stderr).splitlines()
    lines = [line for line in ours if not (line.startswith("make") and "***" in line)]
    assert lines == ["ifaudit: error: results/report.html: cannot write: Is a directory"], made.stderr
    assert not (tmp_path / "resources").exists() and (tmp_path / "results" / "report.html").is_dir()
