"""A paper's whole life through the real DAG: a run's results hang on its own grading only (a
run whose responses cannot be fetched leaves every other run's files as they were, byte and
time); a run that does not count fails the DAG and is named last; `--config key=true` works for
the schema's booleans; a failed live step shows its error, not its progress bar."""

from __future__ import annotations

import hashlib
import http.server
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import GPT4_RESPONSES, read_jsonl, write_jsonl
from output_digests import FIXTURE
from test_workflow import snakemake, summary, write_config

pytestmark = pytest.mark.e2e

ERROR = "ifaudit: error: "


def snapshot(paths: list[Path]) -> dict[str, tuple[bytes, int]]:
    """Each file's bytes and modification time (ns), by path."""
    return {str(path): (path.read_bytes(), path.stat().st_mtime_ns) for path in paths}


def files_under(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*") if path.is_file())


def test_a_run_that_cannot_be_fetched_leaves_every_other_run_untouched(default_run_copy: Path) -> None:
    workdir = default_run_copy
    results = workdir / "results"
    kept = [*files_under(results / "gpt4_google"), results / "canary/ifeval.json"]
    kept.append(results / "prompts/ifeval_prompts_github.json")
    assert results / "gpt4_google/canary.json" in kept and results / "gpt4_google/summary.json" in kept
    before = snapshot(kept)
    # The summary's bytes are those the digest check recorded for the default run.
    recorded = json.loads(FIXTURE.read_text())["scenarios"]["offline_default"]["files"]
    summary_bytes = before[str(results / "gpt4_google/summary.json")][0]
    assert hashlib.sha256(summary_bytes).hexdigest() == recorded["gpt4_google/summary.json"]
    # Declared in the mirror's place but absent from it: the config check passes, fetch fails.
    write_config(
        workdir,
        {
            "datasets": {"lost_responses": {"mirror": "ifeval/no_such_responses.jsonl"}},
            "runs": {"lost": {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "lost_responses"}},
        },
    )

    done = snakemake(workdir, check=False)

    assert done.returncode != 0
    reasons = [line for line in done.stderr.splitlines() if line.startswith(ERROR)]
    assert len(reasons) == 1 and "fetch (dataset=lost_responses)" in reasons[0], done.stderr
    assert snapshot(kept) == before  # every byte and every time stamp
    assert files_under(results / "lost") == []
    # Only what combines the failed run goes: the report (its comparison with gpt4_google was
    # never made).
    assert not (results / "report.md").exists()
    assert not (results / "comparisons/gpt4_google/lost.json").exists()
    removed = next(line for line in done.stderr.splitlines() if line.startswith("ifaudit: note: removed"))
    assert "results/report.md" in removed and "results/gpt4_google/" not in removed and "canary" not in removed


def test_runs_not_counted_are_named_last_and_fail_the_dag(default_run_copy: Path) -> None:
    workdir = default_run_copy
    from ifaudit.tasks.canary_files import load_canary

    canary = load_canary("ifeval")
    item = next(i for i in canary["items"] if i["key"] == 1122)
    item["strict"][0] = not item["strict"][0]
    (workdir / "tampered.json").write_text(json.dumps(canary))
    subset = write_jsonl(workdir / "gpt4_subset.jsonl", read_jsonl(GPT4_RESPONSES)[:20])
    write_config(
        workdir,
        {
            "canary": {"ifeval": str(workdir / "tampered.json")},
            "datasets": {"gpt4_subset": {"path": str(subset)}},
            "runs": {"gpt4_subset": {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "gpt4_subset"}},
        },
    )

    done = snakemake(workdir, check=False)

    assert done.returncode == 1, done.stderr
    # The last lines: each run not counted, in config order, with its summary's reasons (each run's
    # own canary verdict).
    runs = ("gpt4_google", "gpt4_subset")
    reasons = {run: summary(workdir, run)["not_counted_because"] for run in runs}
    assert done.stderr.rstrip().splitlines()[-2:] == [
        f"{ERROR}run {run} NOT COUNTED: {'; '.join(reasons[run])}" for run in runs
    ]
    for run in runs:
        assert len(reasons[run]) == 1 and reasons[run][0].startswith("canary failed: ")
        assert reasons[run][0].endswith(f" in results/{run}/canary.json")
    # Every job ran and nothing was removed: the results say why the runs do not count.
    assert "steps (100%) done" in done.stderr
    for run in runs:
        assert summary(workdir, run)["counted"] is False
        assert (workdir / "results" / run / "MANIFEST.json").is_file()
    assert "NOT COUNTED" in (workdir / "results/report.md").read_text()
    # The lock was released: Snakemake deletes its lock folder on unlock (a killed run leaves it).
    assert not (workdir / ".snakemake/locks").exists()


@pytest.mark.parametrize("word", ["true", "TRUE", "True", "false", "False"])
def test_a_boolean_key_from_the_command_line_takes_true_and_false_in_any_case(tmp_path: Path, word: str) -> None:
    write_config(
        tmp_path,
        {
            "runs": {
                "m": {
                    "task": "ifeval",
                    "prompts": "ifeval_prompts_github",
                    "model": {"model": "x", "base_url": "http://127.0.0.1:9/v1"},
                }
            }
        },
    )

    done = snakemake(tmp_path, f"replay_only={word}", "--dry-run", "--printshellcmds", "results/m/responses.jsonl")

    generate = next(line for line in done.stdout.splitlines() if "ifaudit generate" in line)
    assert ("--replay-only" in generate) is (word.lower() == "true")


def test_only_the_schemas_booleans_are_read_as_booleans(tmp_path: Path) -> None:
    nested = "runs={m: {task: ifeval, prompts: ifeval_prompts_github, model: {model: x, base_url: 'http://127.0.0.1:9/v1', key_via_proxy: TRUE}}}"
    done = snakemake(tmp_path, nested, "container=true", "--dry-run", "--printshellcmds", "results/m/responses.jsonl")
    generate = next(line for line in done.stdout.splitlines() if "ifaudit generate" in line)
    assert '"key_via_proxy": true' in generate  # a nested boolean, read as YAML reads it
    # `container` is a string in the schema: "true" stays the string (a boolean would be refused).
    refused = snakemake(tmp_path, "replay_only=maybe", "--dry-run", check=False)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[-1] == f"{ERROR}--config replay_only: 'maybe' is not of type 'boolean'"


class RefusingHandler(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that refuses every request with HTTP 400."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = b'{"error": {"message": "no such model"}}'
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass


@pytest.fixture
def refusing_endpoint() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RefusingHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_a_failed_generate_shows_its_error_not_its_progress_bar(refusing_endpoint: str, tmp_path: Path) -> None:
    model = {"model": "x", "base_url": refusing_endpoint}
    write_config(tmp_path, {"runs": {"m": {"task": "ifeval", "prompts": "ifeval_prompts_github", "model": model}}})

    done = snakemake(tmp_path, "--printshellcmds", "results/m/responses.jsonl", check=False)

    assert done.returncode != 0
    # The log as it was: the error follows the open bar on its line, and the bar is drawn again.
    log = (tmp_path / "logs/m/generate.log").read_text()
    error = f"{ERROR}endpoint {refusing_endpoint}/chat/completions answered HTTP 400"
    assert re.search(rf"generating: +0%[^\n]*\]{re.escape(error)}\n", log), log
    assert re.fullmatch(r"generating: +0%.*\]", log.rstrip().splitlines()[-1]), log
    reasons = [line for line in done.stderr.splitlines() if line.startswith(ERROR)]
    assert reasons == [f"{error} [generate (run=m), log logs/m/generate.log]"]
