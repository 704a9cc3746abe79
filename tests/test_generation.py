"""Generation as an audited DAG stage, against a loopback server that answers like vLLM's OpenAI
server (n capped at 2, a 429 with an HTTP-date Retry-After, a 500, an answer slower than the
time-out, a truncated body): 120 prompts x 3 samples generated, graded twice, verified,
reported; a SIGKILL half-way then a resume asks only what is missing; a replay from the store
with the server gone asks nothing and gives the same bytes; the key is in no file."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import GPT4_RESPONSES, IFEVAL_PROMPTS, REPO, copy_of_default_run, read_jsonl, run_cli
from test_workflow import snakemake, snakemake_call, summary, write_config
from vllm_like import FAULTS, VllmLikeServer

# Made at run time, so the key is in no file unless the code under test writes it (a bundle
# carries this test file too). Random throughout: 8 characters the key shares with an answer
# ("generation" in a response) are redacted from it (ifaudit.io.remote.redact).
SECRET = "sk-" + secrets.token_urlsafe(30)
RUN = "loopback_x3"
PROMPTS = 120  # the DAG's prompt set: IFEval's first 120 prompts, every fault among them


def fault_plan() -> dict[str, str]:
    """Each fault once, on prompts spread over the set."""
    prompts = [record["prompt"] for record in read_jsonl(IFEVAL_PROMPTS)]
    return {prompts[index]: fault for index, fault in zip((3, 30, 60, 90), FAULTS, strict=True)}


def model_settings(server: VllmLikeServer, **extra) -> dict:
    return {
        "model": "loopback/gpt-4-0613",
        "base_url": server.base_url,
        "api": "chat",
        "temperature": 0.7,
        "top_p": 0.95,
        "max_tokens": 1024,
        "seed": 0,
        "system": "You are a helpful assistant.",
        "samples": 3,
        "api_key_env": "LOOPBACK_KEY",
        "concurrency": 8,
        "retries": 4,
        "backoff_seconds": 0.05,
        "timeout_seconds": 1.0,
        **extra,
    }


def dag_config(server: VllmLikeServer, workdir: Path, **extra) -> dict:
    """The generated run on the first PROMPTS prompts, written into `workdir` as a dataset of its own."""
    prompts = workdir / "first_prompts.jsonl"
    prompts.write_text("".join(IFEVAL_PROMPTS.read_text(encoding="utf-8").splitlines(keepends=True)[:PROMPTS]))
    return {
        "datasets": {"first_prompts": {"path": str(prompts)}},
        "runs": {
            RUN: {
                "task": "ifeval",
                "prompts": "first_prompts",
                "label": "loopback model, 3 samples",
                "model": model_settings(server, **extra),
            }
        },
    }


@pytest.fixture
def server() -> Iterator[VllmLikeServer]:
    served = VllmLikeServer(GPT4_RESPONSES, faults=fault_plan(), slow_seconds=2.5).start()
    yield served
    served.stop()


@pytest.fixture(autouse=True)
def key_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPBACK_KEY", SECRET)


def run_targets() -> list[str]:
    """The run's own outputs (not the report over every run); a flag first ends `--config`'s list."""
    return ["--printshellcmds", f"results/{RUN}/summary.json", f"results/{RUN}/MANIFEST.json"]


def files_with(root: Path, needle: bytes) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file() and needle in path.read_bytes()]


def test_generate_command_records_and_replays(server: VllmLikeServer, resources: Path, tmp_path: Path) -> None:
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(IFEVAL_PROMPTS.read_text(encoding="utf-8").splitlines(keepends=True)[:20]))
    texts = {record["prompt"] for record in read_jsonl(prompts)}
    server.faults = {text: fault for text, fault in server.faults.items() if text in texts}
    assert list(server.faults.values()) == ["429"]
    store, out, record = tmp_path / "store", tmp_path / "responses.jsonl", tmp_path / "generation.json"
    args = [
        "generate",
        "--prompts",
        str(prompts),
        "--model-json",
        json.dumps(model_settings(server)),
        "--store",
        str(store),
        "--out",
        str(out),
        "--record",
        str(record),
        "--quiet",
    ]
    done = run_cli(args, resources, LOOPBACK_KEY=SECRET)
    responses = read_jsonl(out)
    assert [(r["key"], r["sample"]) for r in responses] == [
        (k, s) for k in [p["key"] for p in read_jsonl(prompts)] for s in range(3)
    ]
    assert [r["finish_reason"] for r in responses[:3]] == ["stop", "length", "stop"]
    assert responses[2]["response"].startswith("<think>")
    side = json.loads(record.read_text())
    assert side["live_requests"] == 40 and side["requests"] == 40  # n=3 capped at 2: two requests per prompt
    assert side["finish_reasons"] == {"length": 20, "stop": 40} and side["usage"]["completion_tokens"] > 0
    assert side["served_by"] == {"loopback/gpt-4-0613 / fp-loopback": 40}
    assert server.requests == 40 + 1  # the 429 on prompt 3 was retried
    assert server.authorizations == {f"Bearer {SECRET}": 41}
    assert "20 cut at the length limit" in done.stderr and "40 new" in done.stderr

    # Each record names the request that produced it; the store holds that request and its answer.
    entry = json.loads(
        (store / responses[0]["request_sha256"][:2] / f"{responses[0]['request_sha256']}.json").read_text()
    )
    assert entry["request"]["body"]["n"] == 3 and entry["request"]["draw"] == 0
    assert entry["answer"]["choices"][0]["message"]["content"] == responses[0]["response"]

    first = out.read_bytes()
    server.stop()
    out.unlink()
    replay = run_cli([*args, "--replay-only"], resources)
    assert out.read_bytes() == first and "0 new" in replay.stderr
    assert files_with(tmp_path, SECRET.encode()) == []

    shutil.rmtree(store)
    refused = run_cli([*args, "--replay-only"], resources, check=False)
    assert refused.returncode == 2 and "is not in the generation store" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


def test_a_server_ignoring_n_still_gives_every_sample(server: VllmLikeServer, resources: Path, tmp_path: Path) -> None:
    server.max_n, server.faults = 1, {}
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(IFEVAL_PROMPTS.read_text(encoding="utf-8").splitlines(keepends=True)[:5]))
    out = tmp_path / "responses.jsonl"
    run_cli(
        [
            "generate",
            "--prompts",
            str(prompts),
            "--model-json",
            json.dumps(model_settings(server, api="completions", system=None)),
            "--store",
            str(tmp_path / "store"),
            "--out",
            str(out),
            "--record",
            str(tmp_path / "g.json"),
            "--quiet",
        ],
        resources,
    )
    responses = read_jsonl(out)
    assert len(responses) == 15 and server.requests == 15
    assert [r["finish_reason"] for r in responses[:3]] == ["stop", "length", "stop"]  # seeds 0, 1, 2: distinct
    assert len({r["request_sha256"] for r in responses}) == 15


def test_bad_model_settings_are_one_line(resources: Path, tmp_path: Path) -> None:
    for spec, expected in (
        ('{"model": "m"}', "field 'model.base_url': required"),
        ('{"model": "m", "base_url": "http://x", "sample": 3}', "unknown setting 'sample'"),
        ('{"model": "m", "base_url": "http://x", "samples": 0}', "field 'model.samples'"),
        ('{"model": "m", "base_url": "http://x", "seed": "7"}', "field 'model.seed'"),
        ('{"model": "m", "base_url": "http://x", "stop": 5}', "field 'model.stop'"),
        ("[1]", "expected a JSON object"),
    ):
        done = run_cli(
            [
                "generate",
                "--prompts",
                str(IFEVAL_PROMPTS),
                "--model-json",
                spec,
                "--store",
                str(tmp_path / "s"),
                "--out",
                str(tmp_path / "o"),
                "--record",
                str(tmp_path / "r"),
            ],
            resources,
            check=False,
        )
        assert done.returncode == 2 and expected in done.stderr and len(done.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "o").exists()


def test_generated_run_in_the_dag(server: VllmLikeServer, scenario_run, tmp_path: Path) -> None:
    """Uninterrupted run; then a run SIGKILLed half-way and resumed; then a replay without the
    server. Same grades, requests only for what is missing, nothing when replaying."""
    full = copy_of_default_run(scenario_run, tmp_path / "full")  # the default run finished
    write_config(full, dag_config(server, full))
    snakemake(full)
    responses = read_jsonl(full / f"results/{RUN}/responses.jsonl")
    assert len(responses) == PROMPTS * 3
    folder = full / "results" / RUN
    grades = (folder / "grades.jsonl").read_bytes()
    assert (folder / "passes/a.jsonl").read_bytes() == (folder / "passes/b.jsonl").read_bytes() == grades
    assert json.loads((folder / "verify.json").read_text())["identical"] is True
    facts = summary(full, RUN)
    assert (
        facts["counted"] and facts["responses"] == PROMPTS * 3 and facts["samples_per_prompt"] == {"min": 3, "max": 3}
    )
    assert facts["cut"] == {"thinking": PROMPTS, "length_limit": PROMPTS}
    report = (full / "results/report.md").read_text()
    assert "loopback model, 3 samples" in report
    assert f"{PROMPTS} responses had reasoning cut before grading" in report
    assert f"{PROMPTS} responses hit the length limit" in report
    # The generation store's finish reasons reach the word on responses that may not be answers.
    assert facts["suspect_responses"]["length_limited"]["responses"] == PROMPTS
    assert f"{PROMPTS} responses were cut at the length limit; of them " in report
    manifest = json.loads((folder / "MANIFEST.json").read_text())
    assert "generation" in manifest["files"]
    side = json.loads((folder / "generation.json").read_text())
    requests = PROMPTS * 2  # 3 samples with n capped at 2: one request for two, one for the third
    assert side["live_requests"] == side["requests"] == requests
    assert server.requests == requests + len(FAULTS)  # each fault cost one extra request, then the retry was answered
    stored = len(list((full / "results/generations").rglob("*.json")))
    assert stored == requests and max(server.answered.values()) in (1, 2)  # only the slow body answered twice

    # SIGKILL half-way, resume: only the missing requests reach the server.
    resumed = copy_of_default_run(scenario_run, tmp_path / "resumed")
    fresh = VllmLikeServer(GPT4_RESPONSES, delay=0.01).start()
    try:
        write_config(resumed, dag_config(fresh, resumed))
        killed = start_snakemake(resumed, *run_targets())
        while fresh.requests < requests // 2 and killed.poll() is None:
            time.sleep(0.005)
        assert killed.poll() is None, (resumed / "killed.out").read_text()
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()
        time.sleep(0.5)  # requests in flight when killed may still be answered
        before = sum(fresh.answered.values())
        recorded = len(list((resumed / "results/generations").rglob("*.json")))
        assert requests // 2 <= before < requests and recorded <= before
        assert not (resumed / f"results/{RUN}/responses.jsonl").exists()
        snakemake(resumed, "--unlock")
        snakemake(resumed, "--rerun-incomplete", *run_targets())
        assert sum(fresh.answered.values()) - before == requests - recorded  # only what the store lacked
        assert fresh.requests == sum(fresh.answered.values())  # no faults on this server
    finally:
        fresh.stop()
    assert (resumed / f"results/{RUN}/grades.jsonl").read_bytes() == grades
    assert (resumed / f"results/{RUN}/responses.jsonl").read_bytes() == (folder / "responses.jsonl").read_bytes()

    # The servers are gone: everything but the store removed, replayed, same bytes, no requests.
    for path in (resumed / "results").iterdir():
        if path.name != "generations":
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    write_config(resumed, {**dag_config(fresh, resumed), "replay_only": True})
    snakemake(resumed, *run_targets())
    assert (resumed / f"results/{RUN}/grades.jsonl").read_bytes() == grades
    assert (resumed / f"results/{RUN}/summary.json").read_bytes() == (folder / "summary.json").read_bytes()
    replayed = json.loads((resumed / f"results/{RUN}/generation.json").read_text())
    assert replayed["live_requests"] == 0 and replayed["replayed_requests"] == requests

    # A reviewer's bundle: the responses are replayed from the bundled store, then regraded.
    # The project's source comes from this checkout (dirty while developing, hence --allow-dirty).
    configs = [REPO / "config/config.yaml", REPO / "config/offline.yaml", resumed / "test.yaml"]
    run_cli(
        [
            "bundle",
            "--out",
            str(tmp_path / "bundle"),
            "--project",
            str(REPO),
            "--allow-dirty",
            "--results",
            str(resumed / "results"),
            *(f"--config={c}" for c in configs),
        ],
        resumed / "resources",
    )
    done = run_cli(["verify-bundle", str(tmp_path / "bundle")], tmp_path / "fresh-resources")
    assert re.search(rf"regraded byte-identically[^:]*: [^;]*\b{RUN}\b", done.stderr), done.stderr
    for workdir in (full, resumed, tmp_path / "bundle"):
        assert files_with(workdir, SECRET.encode()) == []


def start_snakemake(workdir: Path, *args: str) -> subprocess.Popen:
    """Snakemake in its own process group, so the whole job tree can be killed at once."""
    command, env = snakemake_call(workdir, *args)
    return subprocess.Popen(
        command,
        cwd=workdir,
        env=env,
        stdout=(workdir / "killed.out").open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def test_a_run_names_a_response_file_or_a_model_not_both(tmp_path: Path) -> None:
    model = {"model": "m", "base_url": "http://127.0.0.1:9/v1"}
    for spec in ({"responses": "gpt4_responses", "model": model}, {}):
        write_config(tmp_path, {"runs": {"x": {"task": "ifeval", "prompts": "ifeval_prompts_github", **spec}}})
        done = snakemake(tmp_path, "-n", check=False)
        assert done.returncode != 0
        assert (
            "runs.x: a run needs exactly one of `responses` (a dataset) or `model` (an endpoint)"
            in done.stdout + done.stderr
        )
