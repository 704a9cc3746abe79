"""The one HTTP policy of every client that talks to a model endpoint (the judge, generation).

- The API key is read from an environment variable at call time and sent only to the configured
  origin: redirects are never followed, and a 3xx is one error naming where it pointed. The key
  never reaches a log, an error message or a store: an answer that echoes it, or a slice or an
  encoding of it (a server that puts the request's headers into a field), has it redacted
  (ifaudit.io.remote.redact) before anyone reads it, and so has every error line.
- A proxy never sees the key in clear text: over https a proxy only tunnels (CONNECT), so the
  environment's proxy settings apply; a plain-http request that carries a key goes straight to
  the origin, never to `http_proxy` (a request without a key follows the proxy settings as usual),
  unless the settings say `key_via_proxy: true` (a proxy the user trusts with the key).
- Bounded retries with exponential backoff on 429, 5xx, time-outs, dropped connections and
  bodies that are not JSON. A `Retry-After` (seconds or an HTTP date) replaces the backoff, capped;
  one that cannot be parsed falls back to the backoff.
- Bounded resources, whatever the server does. An answer is read in chunks and refused past
  `max_answer_bytes` (at once when its Content-Length says so); that is not retried, since the
  same request would get the same oversized answer, only slower. A whole request (connect, headers,
  body) must finish within `deadline_seconds` (default twice `timeout_seconds`, which bounds each
  silence: one full silent wait for the answer to be computed, and as long again to receive it):
  every socket read is given only the time left, so a server trickling a byte a second is cut at
  the deadline. That counts as a time-out: retried within the retry budget. No thread per request.
- An answer is JSON as RFC 8259 defines it, or it is refused at once in one line naming the field,
  not retried (the server would send the same again): no NaN or Infinity (nor a number too big
  for a float), no lone surrogate in a string (no UTF-8 file can hold one; replacing it would
  record text the server did not send), no nesting deeper than MAX_DEPTH levels.
- Any other failure is one line naming the endpoint and what it said.
"""

from __future__ import annotations

import email.utils
import functools
import http.client
import io
import json
import math
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ifaudit.io import variables
from ifaudit.io.remote.redact import Redactor, redactor
from ifaudit.core.errors import IfauditError


class EndpointError(IfauditError):
    """The endpoint could not give a usable answer (after the retries the policy allows)."""


POLICY_FIELDS = (
    "base_url",
    "api_key_env",
    "retries",
    "backoff_seconds",
    "timeout_seconds",
    "deadline_seconds",
    "max_answer_bytes",
    "key_via_proxy",
)
DEFAULT_MAX_ANSWER_BYTES = 64 * 1024 * 1024  # a chat completion is kilobytes; 64 MiB is ample
MAX_DEPTH = 64  # a chat completion nests 5 levels, with log-probabilities 7
_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class HttpPolicy:
    base_url: str
    api_key_env: str = "OPENAI_API_KEY"
    retries: int = 5
    backoff_seconds: float = 1.0
    timeout_seconds: float = 120.0  # the longest silence: each connect, send or read
    deadline_seconds: float | None = None  # the longest whole request; None: 2 x timeout_seconds
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES
    key_via_proxy: bool = False  # True: a plain-http request with a key may go through http_proxy
    max_wait_seconds: float = 60.0  # cap on any single wait, Retry-After included

    @classmethod
    def of(cls, settings: Any) -> HttpPolicy:
        """The policy a client's settings (judge, generation) name with the same field names."""
        return cls(**{name: getattr(settings, name) for name in POLICY_FIELDS})

    def backoff(self, attempt: int) -> float:
        return min(self.backoff_seconds * 2**attempt, self.max_wait_seconds)

    def deadline(self) -> float:
        """Seconds a whole request may take (see the module doc for the default)."""
        return self.deadline_seconds if self.deadline_seconds is not None else 2 * self.timeout_seconds


def origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """A `Retry-After` header as seconds from `now`: delay-seconds or an HTTP date; None when
    absent or unparsable (the caller then backs off as usual)."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        return max(0.0, when.timestamp() - now)
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect surfaces as the 3xx it is; nothing is re-sent anywhere."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001, D102 - urllib's signature
        return None


class DeadlinePassed(TimeoutError):
    """The whole request outlasted its deadline (an OSError, so urllib and http.client pass it on)."""


class _DeadlineReader(io.RawIOBase):
    """A response's socket reads, each given only the time left before the deadline (and never
    more than the per-read timeout): whatever http.client reads (status line, headers, chunk
    sizes, body), a server cannot stretch the request past the deadline by trickling bytes."""

    def __init__(self, raw: Any, sock: socket.socket, deadline: float, read_timeout: float) -> None:
        super().__init__()
        self._raw, self._sock, self._deadline, self._read_timeout = raw, sock, deadline, read_timeout

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise DeadlinePassed("deadline passed")
        self._sock.settimeout(min(self._read_timeout, left))
        try:
            return self._raw.readinto(buffer)
        except TimeoutError:
            if left < self._read_timeout:  # the wait was cut to what the deadline left
                raise DeadlinePassed("deadline passed") from None
            raise

    def close(self) -> None:
        self._raw.close()  # the socket's own reader: releases its reference to the socket
        super().close()


class _DeadlineResponse(http.client.HTTPResponse):
    def __init__(self, sock: socket.socket, *args: Any, deadline: float, read_timeout: float, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        self.fp = io.BufferedReader(_DeadlineReader(self.fp.detach(), sock, deadline, read_timeout))


class _TimedRequest(urllib.request.Request):
    """A request that carries its deadline (time.monotonic) and per-read timeout to the handler."""

    def __init__(self, url: str, data: bytes, headers: dict[str, str], deadline: float, read_timeout: float) -> None:
        super().__init__(url, data, headers)
        self.deadline, self.read_timeout = deadline, read_timeout


class _DeadlineHandling(urllib.request.AbstractHTTPHandler):
    """Connections made for a _TimedRequest read their responses under its deadline (the tunnel's
    answer from a proxy included: http.client builds both from `response_class`)."""

    def do_open(self, http_class: Any, req: Any, **http_conn_args: Any) -> Any:
        if isinstance(req, _TimedRequest):
            http_class = functools.partial(_timed_connection, http_class, req.deadline, req.read_timeout)
        return super().do_open(http_class, req, **http_conn_args)


def _timed_connection(http_class: Any, deadline: float, read_timeout: float, host: str, **kwargs: Any) -> Any:
    connection = http_class(host, **kwargs)
    connection.response_class = functools.partial(_DeadlineResponse, deadline=deadline, read_timeout=read_timeout)
    return connection


class _HTTPHandler(_DeadlineHandling, urllib.request.HTTPHandler):
    pass


class _HTTPSHandler(_DeadlineHandling, urllib.request.HTTPSHandler):
    pass


_OPENER = urllib.request.build_opener(_NoRedirect, _HTTPHandler, _HTTPSHandler)
# For plain-http requests that carry a key: no proxy at all (an empty ProxyHandler).
_DIRECT_OPENER = urllib.request.build_opener(_NoRedirect, _HTTPHandler, _HTTPSHandler, urllib.request.ProxyHandler({}))


def _opener_for(url: str, key: str | None, key_via_proxy: bool) -> urllib.request.OpenerDirector:
    plain = urllib.parse.urlsplit(url).scheme == "http"
    return _DIRECT_OPENER if key and plain and not key_via_proxy else _OPENER


class _Transient(Exception):
    def __init__(self, problem: str, wait: float | None = None) -> None:
        super().__init__(problem)
        self.problem, self.wait = problem, wait


def _as_said(text: str, limit: int = 200) -> str:
    """What a server said (a status line, a redirect's target), as printable text that stays on
    its line: JSON-escaped, so no control character reaches a terminal, and cut at `limit`."""
    escaped = json.dumps(text)[1:-1]
    return escaped if len(escaped) <= limit else f"{escaped[:limit]}..."


def _too_big(url: str, cap: int) -> EndpointError:
    return EndpointError(
        f"endpoint {url} answered with more than {cap} bytes, the cap on an answer; not read further "
        "(raise max_answer_bytes in the model or judge settings if such an answer is expected)"
    )


def _read_capped(reply: Any, url: str, cap: int) -> bytearray:
    """The answer's body, read in chunks: refused at once when its Content-Length is over `cap`,
    or as soon as more than `cap` bytes have come (a chunked or length-less answer)."""
    if reply.length is not None and reply.length > cap:
        raise _too_big(url, cap)
    raw = bytearray()
    while chunk := reply.read(min(_CHUNK, cap + 1 - len(raw))):
        raw += chunk
        if len(raw) > cap:
            raise _too_big(url, cap)
    return raw


class _NotFinite:
    """Where the decoder met NaN, Infinity or a number too big for a float (the text it read)."""

    def __init__(self, text: str) -> None:
        self.text = text


def _finite_float(text: str) -> float | _NotFinite:
    number = float(text)
    return number if math.isfinite(number) else _NotFinite(text)


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SURROGATE = re.compile("[\ud800-\udfff]")  # in a decoded string only lone ones are left


def _field(path: str, name: str) -> str:
    """The path of member `name` under `path`, as `usage.total_tokens`, `x[odd name]` (escaped)."""
    if not _IDENTIFIER.fullmatch(name):
        return f"{path}[{_as_said(name, 60)}]"
    return f"{path}.{name}" if path else name


def _refused(url: str, what: str) -> EndpointError:
    return EndpointError(f"endpoint {url} answered {what}; refused (not JSON an audit can record)")


def _decoded(raw: bytes | bytearray, url: str, scrub: Redactor | None) -> tuple[Any, int]:
    """The answer's JSON, checked (see the module doc) and with key material redacted from every
    string, keys included; and how many stretches were redacted. Walked without recursion."""
    try:
        answer = json.loads(raw, parse_constant=_NotFinite, parse_float=_finite_float)
    except RecursionError:
        raise _refused(url, f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except (ValueError, UnicodeDecodeError):  # JSONDecodeError, or an integer too long to convert
        raise _Transient("a body that is not JSON") from None
    redactions = 0

    def text(value: str, path: str) -> str:
        nonlocal redactions
        if found := _SURROGATE.search(value):
            raise _refused(url, f"a lone surrogate (U+{ord(found.group()):04X}) in field '{path}'")
        if scrub is None:
            return value
        value, count = scrub.text(value)
        redactions += count
        return value

    top: list[Any] = [None]
    stack: list[tuple[Any, Any, Any, str, int]] = [(answer, top, 0, "", 0)]  # value, into, slot, path, depth
    while stack:
        value, into, slot, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _refused(url, f"JSON nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, _NotFinite):
            raise _refused(url, f"{_as_said(value.text, 40)}, not a JSON number, in field '{path}'")
        if isinstance(value, str):
            value = text(value, path)
        elif isinstance(value, list):
            items: list[Any] = [None] * len(value)
            stack += [(item, items, index, f"{path}[{index}]", depth + 1) for index, item in enumerate(value)][::-1]
            value = items
        elif isinstance(value, dict):
            members: dict[str, Any] = {}
            children = []
            for name, item in value.items():
                label = _field(path, name)
                name = text(name, label)
                members[name] = None
                children.append((item, members, name, label, depth + 1))
            stack += children[::-1]
            value = members
        into[slot] = value
    return top[0], redactions


def _post_once(policy: HttpPolicy, url: str, body: bytes, key: str | None) -> tuple[Any, int]:
    """One request: the checked, redacted answer and how many stretches of the key it held."""
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    deadline = time.monotonic() + policy.deadline()
    request = _TimedRequest(url, body, headers, deadline, policy.timeout_seconds)
    try:
        # Connecting and sending get the time left too; every read after is bounded by the reader.
        first_wait = max(min(policy.timeout_seconds, deadline - time.monotonic()), 0.001)
        with _opener_for(url, key, policy.key_via_proxy).open(request, timeout=first_wait) as reply:
            raw = _read_capped(reply, url, policy.max_answer_bytes)
    except urllib.error.HTTPError as error:
        code = error.code
        if 300 <= code < 400:
            target = urllib.parse.urljoin(url, error.headers.get("Location") or "")
            raise EndpointError(
                f"endpoint {url} redirected (HTTP {code}) to {_as_said(origin(target))}; not followed: "
                f"the key goes only to {origin(url)} (set base_url to the final address)"
            ) from None
        if code == 429 or code >= 500:
            raise _Transient(
                f"HTTP {code}", retry_after_seconds(error.headers.get("Retry-After"), time.time())
            ) from None
        raise EndpointError(f"endpoint {url} answered HTTP {code}") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
        reason = getattr(error, "reason", error)
        if isinstance(reason, DeadlinePassed) or time.monotonic() >= deadline:
            raise _Transient(
                f"no complete answer within the {policy.deadline():g} s deadline (deadline_seconds)"
            ) from None
        raise _Transient(_as_said(str(reason)) or type(reason).__name__) from None
    return _decoded(raw, url, redactor(key) if key else None)


def post_json(
    policy: HttpPolicy,
    path: str,
    payload: dict[str, Any],
    accept: Callable[[Any], bool] = lambda answer: True,
    sleep: Callable[[float], None] = time.sleep,
    redacted: Callable[[int], None] = lambda count: None,
) -> Any:
    """POST `payload` to base_url + path; the decoded JSON answer, once `accept` takes it
    (an answer it refuses is retried like a malformed body). `redacted` is told how many
    stretches of key material were taken out of the answer returned, when there were any.
    A failure's line is redacted too: what a server says (a status line, a redirect's target)
    can reach it."""
    key = variables.credential(policy.api_key_env)
    try:
        answer, count = _post(policy, policy.base_url.rstrip("/") + path, payload, accept, sleep, key)
    except EndpointError as error:
        raise EndpointError(redactor(key).line(str(error)) if key else str(error)) from None
    if count:
        redacted(count)
    return answer


def _post(
    policy: HttpPolicy,
    url: str,
    payload: dict[str, Any],
    accept: Callable[[Any], bool],
    sleep: Callable[[float], None],
    key: str | None,
) -> tuple[Any, int]:
    body = json.dumps(payload).encode("utf-8")
    problem = ""
    for attempt in range(policy.retries + 1):
        try:
            answer, count = _post_once(policy, url, body, key)
            if accept(answer):
                return answer, count
            problem, wait = "an answer of the wrong shape", None
        except _Transient as transient:
            problem, wait = transient.problem, transient.wait
        if attempt < policy.retries:
            sleep(min(policy.backoff(attempt) if wait is None else wait, policy.max_wait_seconds))
    raise EndpointError(f"endpoint {url} gave no usable answer after {policy.retries + 1} attempts (last: {problem})")
