"""The shared HTTP policy over real loopback HTTP: the key never leaves its origin, Retry-After
in seconds or as an HTTP date is honoured (capped), anything else falls back to the backoff."""

from __future__ import annotations

import email.utils
import http.server
import secrets
import threading
import time
from collections.abc import Iterator

import pytest

from ifaudit.io.http_client import EndpointError, HttpPolicy, post_json, retry_after_seconds

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
