"""The content-addressed record of requests to a model endpoint and their answers (judge and
generation share it).

One canonical JSON file per distinct request, at `<root>/<sha[:2]>/<sha>.json` where sha is the
sha256 of the request's canonical JSON: `{"answer", "endpoint", "request"}`. A request already in
the store is replayed, never re-asked; a replay-only run that meets a request not in the store
stops with an error. Nothing secret is in a request or an answer, so the store is the audit
trail a paper ships.

Parallel jobs may share one store (two runs with the same model block in one DAG). A live miss
is asked under a per-entry lock: an flock'd `.<sha>.json.lock` beside the entry, so a second
process waits for the first's answer and replays it instead of asking again. The lock file is
removed by its holder when done, so the store tree keeps only entries; one left by a killed
process is a dot file, which bundles never copy (ifaudit.steps.artifact.bundle skips dot files), and is
reused and removed by the next writer of that entry. A replay (an entry already present, or a
replay-only run) takes no lock, so a read-only store replays.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from ifaudit.io.canonical import atomic_write_bytes, dumps, lock_named, pretty_json_bytes, sha256_bytes
from ifaudit.core.errors import IfauditError, VerificationError
from ifaudit.io.paths import open_input


MAX_ENTRY_BYTES = 64 * 1024 * 1024  # one request and its answer, as for a JSONL line


class NotRecordedError(IfauditError):
    """A replay-only run met a request that was never recorded."""


def request_key(request: dict[str, Any]) -> str:
    return sha256_bytes(dumps(request).encode("utf-8"))


@contextmanager
def entry_lock(path: Path) -> Iterator[None]:
    """Hold the exclusive lock of store entry `path` (the flock'd `.<name>.lock` beside it) for the
    block, waiting for another process that holds it.

    The holder removes the lock file before releasing it; a waiter that then gets the lock of the
    removed file sees the path no longer names it and locks afresh, so two processes never both
    hold an entry. Where no lock can be taken (the folder cannot be written, the file system has
    no flock) the block runs unlocked: at worst a request is asked twice, as before locking."""
    lock = path.parent / f".{path.name}.lock"
    fd = _locked(lock)
    try:
        yield
    finally:
        if fd is not None:
            with suppress(OSError):
                lock.unlink()
            os.close(fd)


def _locked(lock: Path) -> int | None:
    """An open, flock'd descriptor of `lock` that the path still names, or None (no lock here)."""
    while True:
        try:
            lock.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW, 0o666)
        except OSError:
            return None
        try:
            held = lock_named(fd, lock)
            if held is None:
                os.close(fd)
                return None
            if held:
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


class RequestStore:
    """Requests and answers on disk, one canonical JSON file per distinct request."""

    def __init__(self, root: Path) -> None:
        self.root = root

    key = staticmethod(request_key)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, request: dict[str, Any]) -> Any | None:
        path = self.path(self.key(request))
        if not path.is_file():
            return None
        try:
            with open_input(path) as handle:  # a FIFO or a device is refused, not waited on
                data = handle.read(MAX_ENTRY_BYTES + 1)
            if len(data) > MAX_ENTRY_BYTES:
                raise VerificationError(f"{path}: more than {MAX_ENTRY_BYTES} bytes; not a store entry ifaudit wrote")
            entry = json.loads(data.decode("utf-8"))  # an answer may hold any text the endpoint sent
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):  # RecursionError: nested 10,000 deep
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
        atomic_write_bytes(self.path(self.key(request)), pretty_json_bytes(entry), durable=False)


class Recorded:
    """Answers from the store; on a miss, from `ask` (at most once per distinct request, even
    across threads and across processes sharing the store), unless replay-only."""

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
        answer = self.store.get(request)  # entries appear whole (atomic rename): no lock to read
        if answer is not None:
            return answer
        if not self.live:
            raise NotRecordedError(
                f"request {key} is not in the {self.kind} store {self.store.root} "
                f"(replay only: run the {self.step} step first)"
            )
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock, entry_lock(self.store.path(key)):
            answer = self.store.get(request)  # another thread or process may have asked meanwhile
            if answer is not None:
                return answer
            answer = self.ask(request)
            self.store.put(request, answer, self.endpoint, self.annotation)
            with self._guard:
                self.live_calls += 1
            return answer
