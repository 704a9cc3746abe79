"""A loopback server that answers like vLLM's OpenAI-compatible server, with the faults a long
run meets. Test support, shared by tests/test_generation.py and bench/generation.py.

Its "model" answers each prompt with Google's GPT-4 response to it, varied per sample: sample
variant v (the request's seed plus the choice index) is the response as is (v % 3 == 0), its
first half, cut at the length limit (finish_reason "length"), or the response after a reasoning
block (v % 3 == 2). It honours `n` up to `max_n` choices (like a server with a cap), counts every
request it gets, and injects each configured fault once: a 429 with Retry-After (an HTTP date),
a 500, an answer slower than the client's time-out, a truncated body.

A hostile server (`hostile`, one of HOSTILE, applied to every request while set; None: a
well-behaved one) answers instead: echoing slices and encodings of the key it was sent in its
answer, its headers and its error bodies (`echo_key`, `unauthorized_echo`, `redirect_echo`,
`status_line_echo`), refusing the key (`unauthorized`: a 401), NaN or an overflowing number in
`usage` (`nan_usage`, `infinite_usage`), 10,000 nested arrays (`deep`) or 500 in a field of an
otherwise good answer (`deep_field`), or a lone surrogate in the content (`surrogate`).
"""

from __future__ import annotations

import base64
import email.utils
import http.server
import json
import threading
import time
import urllib.parse
from collections import Counter
from pathlib import Path
from typing import Any

FAULTS = ("429", "500", "slow", "malformed")
HOSTILE = (
    "echo_key",
    "unauthorized",
    "unauthorized_echo",
    "redirect_echo",
    "status_line_echo",
    "nan_usage",
    "infinite_usage",
    "deep",
    "deep_field",
    "surrogate",
)


def key_echoes(key: str) -> str:
    """What a careless server might repeat of the key it was sent: a 20- and a 16-character
    slice, the key in base64 (alone, in the Authorization header, as `user:key`), in hex and
    percent-encoded."""
    b64 = [base64.b64encode(text.encode()).decode() for text in (key, f"Bearer {key}", f"user:{key}")]
    return " | ".join([key[2:22], key[-16:], *b64, key.encode().hex(), urllib.parse.quote(key, safe="")])


def variant(text: str, v: int) -> tuple[str, str]:
    """(text, finish_reason) of sample variant v."""
    if v % 3 == 1:
        return text[: len(text) // 2], "length"
    if v % 3 == 2:
        return f"<think>The user wants {len(text)} characters of care.</think>{text}", "stop"
    return text, "stop"


class VllmLikeHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: VllmLikeServer

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        state = self.server
        body = json.loads(raw)
        prompt = body["messages"][-1]["content"] if "messages" in body else body["prompt"]
        with state.lock:
            state.requests += 1
            state.authorizations[self.headers.get("Authorization")] += 1
            fault = state.faults.pop(prompt, None)
        if state.delay:
            time.sleep(state.delay)
        if state.hostile:
            return self._hostile(state.hostile, body, prompt)
        if fault == "429":
            when = email.utils.formatdate(time.time() + 1, usegmt=True)
            return self._send(429, b'{"error": "slow down"}', {"Retry-After": when})
        if fault == "500":
            return self._send(500, b'{"error": "internal"}')
        if fault == "slow":
            time.sleep(state.slow_seconds)
        answer = self._answer(body, prompt)
        if fault == "malformed":
            return self._send(200, json.dumps(answer).encode()[:40])
        with state.lock:
            state.answered[json.dumps(body, sort_keys=True)] += 1
        self._send(200, json.dumps(answer).encode())

    def _answer(self, body: dict[str, Any], prompt: str) -> dict[str, Any]:
        text = self.server.responses[prompt]
        chat = "messages" in body
        seed = body.get("seed", 0)
        choices = []
        for index in range(min(body.get("n", 1), self.server.max_n)):
            content, reason = variant(text, seed + index)
            choice = {"message": {"role": "assistant", "content": content}} if chat else {"text": content}
            choices.append({"index": index, "finish_reason": reason, **choice})
        completion = sum(len(c.get("text") or c["message"]["content"]) // 4 for c in choices)
        return {
            "id": f"cmpl-{self.server.requests}",
            "object": "chat.completion" if chat else "text_completion",
            "created": int(time.time()),
            "model": body["model"],
            "system_fingerprint": "fp-loopback",
            "choices": choices,
            "usage": {
                "prompt_tokens": len(prompt) // 4,
                "completion_tokens": completion,
                "total_tokens": len(prompt) // 4 + completion,
            },
        }

    def _hostile(self, mode: str, body: dict[str, Any], prompt: str) -> None:
        key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        echoes = key_echoes(key)
        if mode == "unauthorized":
            return self._send(401, b'{"error": "invalid api key"}')
        if mode == "unauthorized_echo":
            error = json.dumps({"error": f"invalid api key {echoes}"}).encode()
            return self._send(401, error, {"X-Echo": key[2:22], "WWW-Authenticate": f"Bearer {key[-16:]}"})
        if mode == "redirect_echo":
            return self._send(302, b"{}", {"Location": f"http://user:{key[2:22]}@127.0.0.1:9/v1"})
        if mode == "status_line_echo":  # not HTTP at all: the status line is the key
            self.close_connection = True
            self.wfile.write(f"XTTP/1.1 200 {key[2:22]}\r\n\r\n".encode())
            return None
        answer = self._answer(body, prompt)
        if mode == "echo_key":
            answer["choices"][0]["message"]["content"] += f" (as you sent me: {echoes})"
            answer["system_fingerprint"] = f"fp-{key[-16:]}"
            answer["usage"][f"tokens-of-{key[2:22]}"] = 1
            return self._send(200, json.dumps(answer).encode(), {"X-Echo": key[2:22]})
        data = json.dumps(answer)
        if mode in ("nan_usage", "infinite_usage"):
            number = "NaN" if mode == "nan_usage" else "1e999"
            data = data.replace('"prompt_tokens": ', f'"prompt_tokens": {number}, "was": ', 1)
        elif mode == "deep":
            data = "[" * 10_000 + "]" * 10_000
        elif mode == "deep_field":
            data = data.replace('"usage": ', '"detail": ' + "[" * 500 + "]" * 500 + ', "usage": ', 1)
        elif mode == "surrogate":
            data = data.replace('"content": "', '"content": "\\ud800', 1)
        return self._send(200, data.encode())

    def _send(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


class VllmLikeServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 2048  # uvicorn's listen backlog (http.server's 5 drops connections at concurrency 32)

    def __init__(
        self,
        responses_file: Path,
        faults: dict[str, str] | None = None,
        max_n: int = 2,
        delay: float = 0.0,
        slow_seconds: float = 3.0,
        hostile: str | None = None,
    ) -> None:
        super().__init__(("127.0.0.1", 0), VllmLikeHandler)
        self.responses = {}
        for line in responses_file.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            self.responses[record["prompt"]] = record["response"]
        self.faults = dict(faults or {})  # prompt text -> fault, each injected once
        self.max_n, self.delay, self.slow_seconds = max_n, delay, slow_seconds
        self.hostile = hostile  # one of HOSTILE: how every request is answered (None: well)
        self.lock = threading.Lock()
        self.requests = 0
        self.answered: Counter[str] = Counter()  # 200 answers per distinct body
        self.authorizations: Counter[str | None] = Counter()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def start(self) -> VllmLikeServer:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
