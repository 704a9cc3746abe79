"""An LLM judge for decomposed yes/no questions (InFoBench), recorded so it can be replayed.

- Protocol: how the questions are put and the answers read (ifaudit.judge_protocol: InFoBench's
  reference, pinned, or ifaudit's own).
- Client: any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, llama.cpp server...).
  Retries with backoff on 429, 5xx and time-outs. The API key is read from an environment
  variable at call time and never written to a log, an error or the store.
- Store: every request and its answer, content-addressed by the sha256 of the exact request
  (model, parameters, messages). A request already in the store is replayed, never re-asked; a
  replay-only run that meets a request not in the store stops with an error. The store is the
  audit trail a paper ships.
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ifaudit.canonical import atomic_write_bytes, dumps, pretty_json_bytes, sha256_bytes
from ifaudit.errors import IfauditError, VerificationError


class JudgeError(IfauditError):
    """The judge endpoint could not answer, or a replay met a request that was never recorded."""


@dataclass(frozen=True)
class JudgeSettings:
    model: str
    base_url: str = "https://api.openai.com/v1"
    temperature: float = 0.0
    max_tokens: int = 64
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 4
    retries: int = 5
    backoff_seconds: float = 1.0
    timeout_seconds: float = 120.0


class JudgementStore:
    """Requests and answers on disk, one canonical JSON file per distinct request."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @staticmethod
    def key(request: dict[str, Any]) -> str:
        return sha256_bytes(dumps(request).encode("utf-8"))

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, request: dict[str, Any]) -> str | None:
        path = self._path(self.key(request))
        if not path.is_file():
            return None
        entry = json.loads(path.read_text(encoding="utf-8"))
        if entry["request"] != request:
            raise VerificationError(f"{path}: the stored request does not match its content address")
        return entry["answer"]

    def put(self, request: dict[str, Any], answer: str, endpoint: str, protocol: dict[str, Any]) -> None:
        """`protocol` says how the request was made (for InFoBench's reference: which pinned commit)."""
        atomic_write_bytes(self._path(self.key(request)), pretty_json_bytes(
            {"answer": answer, "endpoint": endpoint, "protocol": protocol, "request": request}))


def chat_completion(settings: JudgeSettings, request: dict[str, Any]) -> str:
    """One request to an OpenAI-compatible endpoint, retried on 429, 5xx and time-outs."""
    url = settings.base_url.rstrip("/") + "/chat/completions"
    body = json.dumps(request).encode("utf-8")
    problem = ""
    for attempt in range(settings.retries + 1):
        headers = {"Content-Type": "application/json"}
        if key := os.environ.get(settings.api_key_env):
            headers["Authorization"] = f"Bearer {key}"
        try:
            with urllib.request.urlopen(urllib.request.Request(url, body, headers),
                                        timeout=settings.timeout_seconds) as reply:
                return json.loads(reply.read())["choices"][0]["message"]["content"]
        except urllib.error.HTTPError as error:
            if error.code != 429 and error.code < 500:
                raise JudgeError(f"judge at {url} answered HTTP {error.code}") from None
            problem = f"HTTP {error.code}"
            delay = float(error.headers.get("Retry-After") or settings.backoff_seconds * 2**attempt)
        except (urllib.error.URLError, TimeoutError, OSError) as error:
            problem = str(getattr(error, "reason", error))
            delay = settings.backoff_seconds * 2**attempt
        except (KeyError, IndexError, json.JSONDecodeError):
            raise JudgeError(f"judge at {url} answered something that is not a chat completion") from None
        if attempt < settings.retries:
            time.sleep(min(delay, 60.0))
    raise JudgeError(f"judge at {url} gave no answer after {settings.retries + 1} attempts (last: {problem})")


class RecordedJudge:
    """Answers from the store; on a miss, from the live endpoint (at most once per distinct
    request, even across threads), unless replay-only."""

    def __init__(self, store: JudgementStore, settings: JudgeSettings, live: bool,
                 protocol: dict[str, Any] | None = None) -> None:
        self.store, self.settings, self.live, self.protocol = store, settings, live, protocol or {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self.live_calls = 0

    def __call__(self, request: dict[str, Any]) -> str:
        key = JudgementStore.key(request)
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            answer = self.store.get(request)
            if answer is not None:
                return answer
            if not self.live:
                raise JudgeError(f"request {key} is not in the judgement store {self.store.root} "
                                 "(replay only: run the judge step first)")
            answer = chat_completion(self.settings, request)
            self.store.put(request, answer, self.settings.base_url, self.protocol)
            with self._guard:
                self.live_calls += 1
            return answer
