"""The shared HTTP policy over real loopback HTTP: the key never leaves its origin, Retry-After
in seconds or as an HTTP date is honoured (capped), anything else falls back to the backoff."""

from __future__ import annotations

import email.utils
import http.server
import json
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from conftest import IFEVAL_PROMPTS, run_cli
from ifaudit.io.remote.http_client import EndpointError, HttpPolicy, post_json, retry_after_seconds
from ifaudit.io.remote.redact import REDACTED

# Made at run time, so the key is in no file unless the code under test writes it (a bundle
# carries this test file too).
SECRET = "sk-test-never-leaves-its-" + secrets.token_hex(12)


class Recorder(http.server.BaseHTTPRequestHandler):
    """Logs every request it gets (path and Authorization) and answers from `script`."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.log.append(
            {"path": self.path, "authorization": self.headers.get("Authorization"), "time": time.monotonic()}
        )
        status, headers, body = self.server.script.pop(0) if self.server.script else (200, {}, b'{"ok": true}')
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST  # noqa: N815 - a followed redirect may arrive as a GET

    def log_message(self, *args) -> None:
        pass


def serve() -> http.server.ThreadingHTTPServer:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    server.log, server.script = [], []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def two_servers() -> Iterator[tuple[http.server.ThreadingHTTPServer, http.server.ThreadingHTTPServer]]:
    endpoint, elsewhere = serve(), serve()
    yield endpoint, elsewhere
    endpoint.shutdown()
    elsewhere.shutdown()


def url(server: http.server.ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_origin_never_gets_the_key(two_servers, monkeypatch, status: int) -> None:
    endpoint, elsewhere = two_servers
    monkeypatch.setenv("TEST_KEY", SECRET)
    endpoint.script = [(status, {"Location": url(elsewhere) + "/v1/chat/completions"}, b"")]
    policy = HttpPolicy(base_url=url(endpoint) + "/v1", api_key_env="TEST_KEY", retries=2, backoff_seconds=0)
    with pytest.raises(EndpointError) as raised:
        post_json(policy, "/chat/completions", {"model": "m"})
    message = str(raised.value)
    assert f"redirected (HTTP {status}) to {url(elsewhere)}" in message and "not followed" in message
    assert SECRET not in message
    assert elsewhere.log == []  # nothing at all reached the other server
    assert [entry["authorization"] for entry in endpoint.log] == [f"Bearer {SECRET}"]  # asked once, not retried


def test_an_http_date_retry_after_is_honoured(two_servers) -> None:
    endpoint, _ = two_servers
    when = email.utils.formatdate(time.time() + 2, usegmt=True)  # HTTP dates have whole seconds
    endpoint.script = [(429, {"Retry-After": when}, b"")]
    policy = HttpPolicy(base_url=url(endpoint), retries=1, backoff_seconds=0)
    assert post_json(policy, "/x", {}) == {"ok": True}
    waited = endpoint.log[1]["time"] - endpoint.log[0]["time"]
    assert 0.9 <= waited <= 3.5


def test_retry_after_in_seconds_is_capped_and_garbage_falls_back_to_the_backoff(two_servers) -> None:
    endpoint, _ = two_servers
    endpoint.script = [
        (503, {"Retry-After": "3600"}, b""),
        (429, {"Retry-After": "soon, maybe"}, b""),
        (200, {}, b"not json"),
        (200, {}, b'{"done": 1}'),
    ]
    waits: list[float] = []
    policy = HttpPolicy(base_url=url(endpoint), retries=3, backoff_seconds=0.25, max_wait_seconds=5)
    assert post_json(policy, "/x", {}, sleep=waits.append) == {"done": 1}
    assert waits == [5, 0.5, 1.0]  # capped; unparsable -> backoff of attempt 1; malformed body -> attempt 2


def test_retries_are_bounded_and_end_in_one_line(two_servers) -> None:
    endpoint, _ = two_servers
    endpoint.script = [(500, {}, b"")] * 3
    with pytest.raises(EndpointError, match=r"gave no usable answer after 3 attempts \(last: HTTP 500\)"):
        post_json(HttpPolicy(base_url=url(endpoint), retries=2), "/x", {}, sleep=lambda s: None)
    endpoint.script = [(401, {}, b"")]
    with pytest.raises(EndpointError, match="answered HTTP 401"):
        post_json(HttpPolicy(base_url=url(endpoint), retries=2), "/x", {}, sleep=lambda s: None)


def test_retry_after_parsing() -> None:
    now = 1_000_000_000.0
    assert retry_after_seconds("7", now) == 7
    assert retry_after_seconds(email.utils.formatdate(now + 30, usegmt=True), now) == 30
    assert retry_after_seconds(email.utils.formatdate(now - 30, usegmt=True), now) == 0
    for bad in (None, "", "-1", "nan", "inf", "tomorrow", "Sun, 99 Foo 2026"):
        assert retry_after_seconds(bad, now) is None


def _answer_echoing(secret: str) -> bytes:
    """A chat completion from a server that copies the request's Authorization into its answer."""
    choice = {"index": 0, "message": {"role": "assistant", "content": f"echo Bearer {secret}"}, "finish_reason": "stop"}
    return json.dumps({"model": "m", "system_fingerprint": f"Bearer {secret}", "choices": [choice]}).encode()


def test_security_key_echoed_by_the_server_is_redacted_before_anyone_reads_it(two_servers, monkeypatch) -> None:
    endpoint, _ = two_servers
    monkeypatch.setenv("TEST_KEY", SECRET)
    endpoint.script = [(200, {}, _answer_echoing(SECRET))]
    answer = post_json(HttpPolicy(base_url=url(endpoint) + "/v1", api_key_env="TEST_KEY"), "/chat/completions", {})
    assert SECRET not in json.dumps(answer)
    assert answer["system_fingerprint"] == f"Bearer {REDACTED}"
    assert answer["choices"][0]["message"]["content"] == f"echo Bearer {REDACTED}"


def test_security_key_echoed_by_the_server_reaches_no_file_generate_writes(two_servers, resources, tmp_path) -> None:
    """`ifaudit generate` against a server that echoes the key: the store, the responses and the
    side record (the files a paper ships) and the log hold no trace of it."""
    endpoint, _ = two_servers
    endpoint.script = [(200, {}, _answer_echoing(SECRET))]
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(IFEVAL_PROMPTS.read_text(encoding="utf-8").splitlines(keepends=True)[0])
    settings = {"model": "m", "base_url": url(endpoint) + "/v1", "api": "chat", "api_key_env": "TEST_KEY"}
    written = tmp_path / "written"
    args = ["generate", "--prompts", str(prompts), "--model-json", json.dumps(settings), "--quiet"]
    args += ["--store", str(written / "store"), "--out", str(written / "responses.jsonl")]
    done = run_cli([*args, "--record", str(written / "generation.json")], resources, TEST_KEY=SECRET)
    assert [entry["authorization"] for entry in endpoint.log] == [f"Bearer {SECRET}"]
    files = [path for path in written.rglob("*") if path.is_file()]
    assert len(files) >= 3  # the store's entry, the responses, the side record
    assert all(SECRET.encode() not in path.read_bytes() for path in files)
    assert SECRET not in done.stdout + done.stderr
    assert REDACTED in (written / "responses.jsonl").read_text()


def _post_in_a_fresh_process(endpoint_url: str, **env: str) -> subprocess.CompletedProcess:
    """post_json in a new interpreter, as a job runs it: urllib reads the proxy settings at import."""
    code = (
        "import sys; from ifaudit.io.remote.http_client import HttpPolicy, post_json; "
        "print(post_json(HttpPolicy(base_url=sys.argv[1], api_key_env='TEST_KEY', retries=0), '/x', {}))"
    )
    environment = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy", "http_proxy", "https_proxy")}
    return subprocess.run(
        [sys.executable, "-c", code, endpoint_url], env=environment | env, capture_output=True, text=True, timeout=60
    )


def test_security_key_over_plain_http_never_goes_through_the_proxy(two_servers) -> None:
    """With `http_proxy` set (usual on cluster nodes) and an http:// endpoint, a request that
    carries the key goes straight to the origin; one without a key still uses the proxy, which
    shows the proxy setting was in force."""
    endpoint, proxy = two_servers
    with_key = _post_in_a_fresh_process(url(endpoint), http_proxy=url(proxy), TEST_KEY=SECRET)
    assert with_key.returncode == 0, with_key.stderr
    assert proxy.log == []
    assert [entry["authorization"] for entry in endpoint.log] == [f"Bearer {SECRET}"]
    without_key = _post_in_a_fresh_process(url(endpoint), http_proxy=url(proxy))
    assert without_key.returncode == 0, without_key.stderr
    assert [(entry["path"], entry["authorization"]) for entry in proxy.log] == [(url(endpoint) + "/x", None)]
    assert len(endpoint.log) == 1  # the keyless request went to the proxy, not here


def test_security_key_goes_through_the_proxy_only_when_the_settings_allow_it(two_servers) -> None:
    endpoint, proxy = two_servers
    code = (
        "import sys; from ifaudit.io.remote.http_client import HttpPolicy, post_json; "
        "print(post_json(HttpPolicy(base_url=sys.argv[1], api_key_env='TEST_KEY', retries=0, key_via_proxy=True),"
        " '/x', {}))"
    )
    environment = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy", "http_proxy", "https_proxy")}
    done = subprocess.run(
        [sys.executable, "-c", code, url(endpoint)],
        env=environment | {"http_proxy": url(proxy), "TEST_KEY": SECRET},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert [entry["authorization"] for entry in proxy.log] == [f"Bearer {SECRET}"] and endpoint.log == []
