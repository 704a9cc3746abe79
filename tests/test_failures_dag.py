"""Failures through the real DAG and `make run`: the reason reaches Snakemake's output in one line,
nothing that looks valid is left behind, and a run with nothing to do does nothing."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import (
    DATA,
    GPT4_RESPONSES,
    IFAUDIT,
    NLTK_MIRROR,
    REPO,
    UPSTREAM_SOURCE,
    disagreeing_second_pass,
    read_jsonl,
    write_jsonl,
)
from ifaudit.steps.planning import plan

pytestmark = pytest.mark.e2e

UMASK = 0o027  # not the usual 022, so modes that only look right by chance would show
OFFLINE = [
    "-s",
    str(REPO / "Snakefile"),
    "--configfile",
    str(REPO / "config/config.yaml"),
    str(REPO / "config/offline.yaml"),
]
MIRRORS = ["--config", f"mirror={DATA}", f"nltk_mirror={NLTK_MIRROR}", f"grader_sources=[{UPSTREAM_SOURCE}]"]


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IFAUDIT_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def make_run(workdir: Path, *configs: Path, extra: str = "") -> subprocess.CompletedProcess:
    """`make run` itself, with the offline config (and the test's own on top; `extra` options)."""
    args = " ".join([*OFFLINE, *map(str, configs), *MIRRORS, "--cores", "2", *extra.split()])
    return subprocess.run(
        ["make", "--no-print-directory", "-f", str(REPO / "Makefile"), "run", f"ARGS={args}"],
        cwd=workdir,
        env=environment(),
        capture_output=True,
        text=True,
        umask=UMASK,
    )


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(Path(sys.executable).parent / "snakemake"), "--cores", "2", *args],
        cwd=workdir,
        env=environment(),
        capture_output=True,
        text=True,
        umask=UMASK,
    )


def error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("ifaudit: error:")]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One complete `make run` on the offline config: the DAG and the HTML report."""
    workdir = tmp_path_factory.mktemp("made")
    (workdir / "fast.yaml").write_text(yaml.safe_dump({"statistics": {"resamples": 500}}))
    done = make_run(workdir, workdir / "fast.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (workdir / "results/report.html").is_file()
    # One Snakemake process ran the DAG and rendered its HTML report (workflow/rules/common.smk):
    # make started no second one for `--report`.
    assert "--report" not in done.stdout and "Report created" in done.stdout + done.stderr
    # It ends with each run's headline, said once: found by the DAG's last hook, which leaves it
    # for make to print and remove instead of starting `ifaudit counted` again.
    [headline] = [line for line in done.stdout.splitlines() if line.startswith("gpt4_google: counted; prompt-level")]
    assert done.stdout.rstrip().endswith(headline) and not (workdir / plan.COUNTED_SAID).exists()
    return workdir


def test_the_dag_run_by_make_finds_what_counted_says_and_leaves_it_for_make_to_print(
    made: Path, tmp_path: Path
) -> None:
    workdir = copy_of(made, tmp_path)
    env = {**environment(), "IFAUDIT_HTML_REPORT": "results/report.html"}
    args = [*OFFLINE, str(workdir / "fast.yaml"), *MIRRORS, "--cores", "2", "--forcerun", "report"]
    done = subprocess.run(
        [str(Path(sys.executable).parent / "snakemake"), *args], cwd=workdir, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    asked = subprocess.run([str(IFAUDIT), "counted"], cwd=workdir, env=environment(), capture_output=True, text=True)
    assert asked.returncode == 0 and asked.stdout
    assert (workdir / plan.COUNTED_SAID).read_text() == asked.stdout
    (workdir / plan.COUNTED_SAID).unlink()
    plain = snakemake(workdir, *OFFLINE, str(workdir / "fast.yaml"), *MIRRORS, "--forcerun", "report")
    assert plain.returncode == 0 and not (workdir / plan.COUNTED_SAID).exists()  # only for make run


def copy_of(made: Path, tmp_path: Path) -> Path:
    """A copy of the finished run (times and Snakemake's records kept) to break on purpose."""
    workdir = tmp_path / "copy"
    shutil.copytree(made, workdir, symlinks=True)
    return workdir


def test_make_run_with_nothing_changed_does_nothing(made: Path) -> None:
    report = made / "results/report.html"
    before = report.stat().st_mtime_ns
    done = make_run(made, made / "fast.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Nothing to be done" in done.stdout + done.stderr
    assert "--report" not in done.stdout and "Report created" not in done.stdout + done.stderr
    assert report.stat().st_mtime_ns == before


def test_results_honour_the_umask(made: Path) -> None:
    files = [path for path in (made / "results").rglob("*") if path.is_file()]
    assert len(files) > 15
    modes = {str(path.relative_to(made)): oct(stat.S_IMODE(path.stat().st_mode)) for path in files}
    assert set(modes.values()) == {oct(0o666 & ~UMASK)}, modes


def test_a_failed_verify_leaves_nothing_that_looks_valid(made: Path, tmp_path: Path) -> None:
    workdir = copy_of(made, tmp_path)
    disagreeing_second_pass(workdir / "results/gpt4_google")
    done = make_run(workdir, workdir / "fast.yaml")
    assert done.returncode != 0
    [reason] = error_lines(done.stderr)
    assert "grading passes differ" in reason and "[verify (run=gpt4_google), log logs/gpt4_google/verify.log]" in reason
    assert "Traceback" not in done.stderr
    run = workdir / "results/gpt4_google"
    for name in ("summary.json", "stats.json", "MANIFEST.json", "grades.jsonl", "verify.json"):
        assert not (run / name).exists(), name
    for name in ("report.md", "report.html", "metrics.csv", "tables.json", "plots/accuracy.png", "plots/breakdown"):
        assert not (workdir / "results" / name).exists(), name


def test_a_bad_response_file_is_named_by_the_users_path_and_line(made: Path, tmp_path: Path) -> None:
    workdir = copy_of(made, tmp_path)
    responses = read_jsonl(GPT4_RESPONSES)[:2]
    bad = write_jsonl(tmp_path / "my responses.jsonl", responses)
    with bad.open("a") as handle:
        handle.write('{"prompt": "x", "response": 5}\n')
    (workdir / "test.yaml").write_text(
        yaml.safe_dump(
            {
                "datasets": {"mine": {"path": str(bad)}},
                "runs": {"mine": {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "mine"}},
            }
        )
    )
    done = snakemake(workdir, *OFFLINE, str(workdir / "fast.yaml"), str(workdir / "test.yaml"), *MIRRORS)
    assert done.returncode != 0
    reasons = error_lines(done.stderr)
    assert len(reasons) == 1, done.stderr
    assert f"{bad}:3: field 'response'" in reasons[0] and "resources/data" not in reasons[0]
    assert "grade_shard (run=mine, pass_=a" in reasons[0] and "grade_shard (run=mine, pass_=b" in reasons[0]
    assert "Traceback" not in done.stderr
    assert not (workdir / "results/report.md").exists()  # it would not have shown the new run


def test_unreachable_sources_are_one_line_naming_the_offline_config(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on: connection refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (tmp_path / "test.yaml").write_text(
        yaml.safe_dump(
            {
                "grader": "stand-in",
                "nltk_mirror": str(NLTK_MIRROR),
                "datasets": {
                    name: {"url": f"http://127.0.0.1:{port}/{name}.jsonl"}
                    for name in ("ifeval_prompts_github", "gpt4_responses")
                },
            }
        )
    )
    done = snakemake(
        tmp_path,
        "-s",
        str(REPO / "Snakefile"),
        "--configfile",
        str(REPO / "config/config.yaml"),
        str(tmp_path / "test.yaml"),
    )
    assert done.returncode != 0
    [reason] = error_lines(done.stderr)
    assert f"cannot reach 127.0.0.1:{port}" in reason and "Connection refused" in reason
    assert "(needed by fetch (dataset=" in reason  # the jobs that failed so before Snakemake stopped
    assert "config/offline.yaml" in reason and "mirror:" in reason and "nltk_mirror:" in reason
    # The Snakefile loads config/config.yaml itself: the README says never to name it again.
    assert 'ARGS="--configfile config/offline.yaml"' in reason and "config/config.yaml" not in reason


@pytest.mark.parametrize(
    ("settings", "line"),
    [
        ({"statistcs": {"seed": 1}}, "1: config: statistcs: unknown key; did you mean 'statistics'?"),
        ({"datasets": {"mine": {"pth": "x.jsonl"}}}, "3: config: datasets.mine.pth: unknown key; did you mean 'path'?"),
        (
            {"grader": "upstrem"},
            "1: config: grader: 'upstrem' is not one of ['upstream', 'stand-in']; did you mean 'upstream'?",
        ),
        ({"shards": 0}, "1: config: shards: 0 is less than the minimum of 1"),
    ],
)
def test_config_errors_are_one_line_with_the_key_and_the_nearest_valid_one(
    tmp_path: Path, settings: dict, line: str
) -> None:
    """The file and line the key was written at, the key and the nearest valid one."""
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(settings))
    done = snakemake(tmp_path, "--dry-run", *OFFLINE, str(tmp_path / "test.yaml"), *MIRRORS)
    assert done.returncode == 2
    assert error_lines(done.stderr) == [f"ifaudit: error: {tmp_path / 'test.yaml'}:{line}"]
    assert len(done.stderr.splitlines()) <= 2, done.stderr  # at most Snakemake's note on the profile it reads


def test_a_run_not_counted_fails_make_run_again_when_nothing_is_left_to_do(made: Path, tmp_path: Path) -> None:
    """Snakemake calls no hook when it has nothing to do: a second `make run` after a run that does
    not count must fail too, with the run named last, and render no HTML report."""
    from ifaudit.tasks.canary_files import load_canary

    workdir = copy_of(made, tmp_path)
    canary = load_canary("ifeval")
    item = next(i for i in canary["items"] if i["key"] == 1122)
    item["strict"][0] = not item["strict"][0]
    (workdir / "tampered.json").write_text(json.dumps(canary))
    (workdir / "test.yaml").write_text(yaml.safe_dump({"canary": {"ifeval": str(workdir / "tampered.json")}}))
    for attempt in ("the DAG", "nothing to do"):
        done = make_run(workdir, workdir / "fast.yaml", workdir / "test.yaml")
        assert done.returncode != 0, attempt
        last = [line for line in done.stderr.strip().splitlines() if not (line.startswith("make") and "***" in line)][
            -1
        ]
        assert last.startswith("ifaudit: error: run gpt4_google NOT COUNTED: canary failed"), (attempt, last)
        assert not (workdir / "results/report.html").exists(), attempt
    assert "Nothing to be done" in done.stdout + done.stderr
