"""`ifaudit generate` against a hostile loopback server (tests/vllm_like.py, `hostile`): no piece
of the key it echoes is stored or printed, a refused generation leaves nothing behind, and a
reply that is not JSON an audit can record (NaN, nesting, a lone surrogate) is one line."""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import GPT4_RESPONSES, IFEVAL_PROMPTS, run_cli, tree_digests
from ifaudit.io.remote.redact import REDACTED
from vllm_like import VllmLikeServer

# Made at run time (random, so that no ordinary text shares 8 characters with it by chance).
SECRET = "sk-" + secrets.token_urlsafe(30)
KEY_ENV = "HOSTILE_TEST_KEY"


@pytest.fixture
def server() -> Iterator[VllmLikeServer]:
    served = VllmLikeServer(GPT4_RESPONSES).start()
    yield served
    served.stop()


def prompts_file(folder: Path, count: int) -> Path:
    path = folder / f"prompts-{count}.jsonl"
    path.write_text("".join(IFEVAL_PROMPTS.read_text(encoding="utf-8").splitlines(keepends=True)[:count]))
    return path


def generate(
    server: VllmLikeServer, prompts: Path, results: Path, resources: Path, run: str = "run"
) -> subprocess.CompletedProcess:
    """`ifaudit generate` as the DAG calls it: the store in results/generations, the outputs in
    results/<run>/."""
    settings = {
        "model": "loopback/gpt-4-0613",
        "base_url": server.base_url,
        "api_key_env": KEY_ENV,
        "retries": 1,
        "backoff_seconds": 0.01,
        "timeout_seconds": 5.0,
    }
    args = ["generate", "--prompts", str(prompts), "--model-json", json.dumps(settings), "--quiet"]
    args += ["--store", str(results / "generations"), "--out", str(results / run / "responses.jsonl")]
    args += ["--record", str(results / run / "generation.json")]
    return run_cli(args, resources, check=False, **{KEY_ENV: SECRET})


def key_material(text: str) -> list[str]:
    """Every 8-character window of the key in `text`, in any letter case (a URL's host is printed
    in lower case), and the key's base64 forms."""
    windows = {SECRET[start : start + 8].lower() for start in range(len(SECRET) - 7)}
    encoded = {base64.b64encode(form.encode()).decode().rstrip("=") for form in (SECRET, f"Bearer {SECRET}")}
    return sorted({found for found in windows if found in text.lower()} | {found for found in encoded if found in text})


def leaks(done: subprocess.CompletedProcess, folder: Path) -> dict[str, list[str]]:
    """The key material in the command's output and in each file under `folder`."""
    texts = {"stdout/stderr": done.stdout + done.stderr}
    for path in folder.rglob("*"):
        if path.is_file():
            texts[str(path)] = path.read_bytes().decode("utf-8", errors="replace")
    return {where: found for where, text in texts.items() if (found := key_material(text))}


def one_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("ifaudit: error: "), done.stderr
    return lines[0]


def test_key_slices_never_stored_or_printed(server: VllmLikeServer, resources: Path, tmp_path: Path) -> None:
    prompts = prompts_file(tmp_path, 3)
    server.hostile = "echo_key"  # in the content, the fingerprint, a usage field's name, a header
    done = generate(server, prompts, tmp_path / "results", resources)
    assert done.returncode == 0, done.stderr
    assert server.authorizations == {f"Bearer {SECRET}": 3}
    assert leaks(done, tmp_path / "results") == {}
    responses = [json.loads(line) for line in (tmp_path / "results/run/responses.jsonl").read_text().splitlines()]
    assert all(f"(as you sent me: {REDACTED} | {REDACTED} | " in r["response"] for r in responses)
    record = json.loads((tmp_path / "results/run/generation.json").read_text())
    # per answer: 2 slices, 3 base64 forms, hex and percent-encoded in the content, the fingerprint,
    # the usage field's name
    assert record["key_redactions"] == 3 * 9
    assert "27 stretches of the API key redacted from the answers" in done.stderr

    for mode in ("unauthorized_echo", "redirect_echo", "status_line_echo"):  # error bodies, headers, status line
        server.hostile = mode
        refused = generate(server, prompts, tmp_path / mode, resources)
        one_line(refused)
        assert leaks(refused, tmp_path / mode) == {}, mode


def test_refused_generation_leaves_nothing_behind(server: VllmLikeServer, resources: Path, tmp_path: Path) -> None:
    server.hostile = "unauthorized"
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert "answered HTTP 401" in one_line(generate(server, prompts_file(tmp_path, 5), fresh / "results", resources))
    assert list(fresh.iterdir()) == []

    # A store with entries of an earlier run: a refused run (2 prompts replayed, 4 refused) keeps
    # every one of them, and leaves no output and no folder of its own.
    kept = tmp_path / "kept"
    server.hostile = None
    assert generate(server, prompts_file(tmp_path, 2), kept, resources).returncode == 0
    before = tree_digests(kept), sorted(kept.rglob("*"))
    server.hostile = "unauthorized"
    assert "answered HTTP 401" in one_line(generate(server, prompts_file(tmp_path, 6), kept, resources, run="again"))
    assert (tree_digests(kept), sorted(kept.rglob("*"))) == before


def assert_refused_in_one_line(server: VllmLikeServer, mode: str, folder: Path, *expected: str) -> None:
    """`mode` refused in one line holding `expected`, nothing written: no store, no output."""
    server.hostile = mode
    line = one_line(generate(server, prompts_file(folder, 2), folder / "results", folder / "resources"))
    assert "Traceback" not in line and all(part in line for part in expected), line
    assert not (folder / "results").exists()


@pytest.mark.parametrize(("mode", "number"), [("nan_usage", "NaN"), ("infinite_usage", "1e999")])
def test_nan_in_usage_is_one_line(server: VllmLikeServer, tmp_path: Path, mode: str, number: str) -> None:
    assert_refused_in_one_line(server, mode, tmp_path, f"{number}, not a JSON number, in field 'usage.prompt_tokens'")


@pytest.mark.parametrize("mode", ["deep", "deep_field"])
def test_deeply_nested_reply_is_one_line(server: VllmLikeServer, tmp_path: Path, mode: str) -> None:
    assert_refused_in_one_line(server, mode, tmp_path, "JSON nested deeper than 64 levels")


def test_lone_surrogate_in_reply_is_one_line(server: VllmLikeServer, tmp_path: Path) -> None:
    assert_refused_in_one_line(
        server, "surrogate", tmp_path, "a lone surrogate (U+D800) in field 'choices[0].message.content'"
    )
