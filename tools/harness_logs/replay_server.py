"""A loopback OpenAI-compatible server that answers each prompt with a recorded response.

Used to make real harness logs (lm-eval, inspect) from Google's published GPT-4 responses: the
harness sends the prompt as the last user message; the server finds the recorded response whose
prompt text is exactly that message and returns it, as chat or as completions. A harness that
strips the prompt before sending it (lighteval does) is answered by the prompt whose stripped text
is the message, and counted in `stripped_matches`. Only 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def load_answers(responses_path: Path) -> dict[str, str]:
    answers: dict[str, str] = {}
    for line in responses_path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            answers[record["prompt"]] = record["response"]
    return answers


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # content parts
                return "".join(part.get("text", "") for part in content if isinstance(part, dict))
            return str(content)
    return ""


class ReplayServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, answers: dict[str, str], model: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answers = answers
        self.model = model
        self.requests_seen = 0
        self.unknown: list[str] = []
        self.stripped = {prompt.strip(): prompt for prompt in answers}
        self.stripped_matches = 0
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def answer(self, prompt: str) -> str:
        with self.lock:
            self.requests_seen += 1
            if prompt not in self.answers and prompt in self.stripped:
                self.stripped_matches += 1
                prompt = self.stripped[prompt]
            if prompt not in self.answers:
                self.unknown.append(prompt[:80])
        return self.answers.get(prompt, "")


class _Handler(BaseHTTPRequestHandler):
    server: ReplayServer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": self.server.model, "object": "model"}]})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        created = int(time.time())
        usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        if self.path.rstrip("/").endswith("/chat/completions"):
            text = self.server.answer(_last_user_text(body.get("messages", [])))
            choices = [
                {
                    "index": i,
                    "finish_reason": "stop",
                    "logprobs": None,
                    "message": {"role": "assistant", "content": text},
                }
                for i in range(int(body.get("n", 1)))
            ]
            self._send(
                200,
                {
                    "id": f"chatcmpl-{self.server.requests_seen}",
                    "object": "chat.completion",
                    "created": created,
                    "model": self.server.model,
                    "choices": choices,
                    "usage": usage,
                },
            )
        elif self.path.rstrip("/").endswith("/completions"):
            prompt = body.get("prompt", "")
            text = self.server.answer(prompt[0] if isinstance(prompt, list) else prompt)
            self._send(
                200,
                {
                    "id": f"cmpl-{self.server.requests_seen}",
                    "object": "text_completion",
                    "created": created,
                    "model": self.server.model,
                    "choices": [{"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}],
                    "usage": usage,
                },
            )
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--responses", type=Path, required=True, help="upstream-format response JSONL")
    parser.add_argument("--model", default="gpt-4-0613-replay")
    args = parser.parse_args()
    server = ReplayServer(load_answers(args.responses), args.model)
    print(server.base_url, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
