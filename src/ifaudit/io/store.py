"""The content-addressed record of requests to a model endpoint and their answers (judge and
generation share it).

One canonical JSON file per distinct request, at `<root>/<sha[:2]>/<sha>.json` where sha is the
sha256 of the request's canonical JSON: `{"answer", "endpoint", "request"}`. A request already in
the store is replayed, never re-asked; a replay-only run that meets a request not in the store
stops with an error. Nothing secret is in a request or an answer, so the store is the audit
trail a paper ships.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ifaudit.io.canonical import atomic_write_bytes, dumps, pretty_json_bytes, sha256_bytes
from ifaudit.core.errors import IfauditError, VerificationError


class NotRecordedError(IfauditError):
    """A replay-only run met a request that was never recorded."""


def request_key(request: dict[str, Any]) -> str:
    return sha256_bytes(dumps(request).encode("utf-8"))


class RequestStore:
    """Requests and answers on disk, one canonical JSON file per distinct request."""

    def __init__(self, root: Path) -> None:
        self.root = root

    key = staticmethod(request_key)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, request: dict[str, Any]) -> Any | None:
        path = self._path(self.key(request))
        if not path.is_file():
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise VerificationError(
                f"{path}: not a store entry (cut short by a system crash?); "
                "delete it and run the live step to ask again"
            ) from None
        if not isinstance(entry, dict) or entry.get("request") != request or "answer" not in entry:
            raise VerificationError(f"{path}: the stored request does not match its content address")
        return entry["answer"]

    def put(
        self, request: dict[str, Any], answer: Any, endpoint: str, annotation: dict[str, Any] | None = None
    ) -> None:
        """`annotation`: fields recorded beside the answer (a judgement's protocol), never keyed on."""
        # No fsync per entry (it costs more than a loopback request): a killed run keeps every
        # entry it finished; a system crash may leave an empty one, which get() names.
        entry = {**(annotation or {}), "answer": answer, "endpoint": endpoint, "request": request}
        atomic_write_bytes(self._path(self.key(request)), pretty_json_bytes(entry), durable=False)


class Recorded:
    """Answers from the store; on a miss, from `ask` (at most once per distinct request, even
    across threads), unless replay-only."""

    def __init__(
        self,
        store: RequestStore,
        ask: Callable[[dict[str, Any]], Any],
        endpoint: str,
        live: bool,
        kind: str,
        step: str,
        annotation: dict[str, Any] | None = None,
    ) -> None:
        self.store, self.ask, self.endpoint, self.live = store, ask, endpoint, live
        self.annotation = annotation
        self.kind, self.step = kind, step  # for the replay error: "not in the <kind> store ... run <step>"
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self.live_calls = 0

    def __call__(self, request: dict[str, Any]) -> Any:
        key = request_key(request)
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            answer = self.store.get(request)
            if answer is not None:
                return answer
            if not self.live:
                raise NotRecordedError(
                    f"request {key} is not in the {self.kind} store {self.store.root} "
                    f"(replay only: run the {self.step} step first)"
                )
            answer = self.ask(request)
            self.store.put(request, answer, self.endpoint, self.annotation)
            with self._guard:
                self.live_calls += 1
            return answer
