"""The one HTTP policy of every client that talks to a model endpoint (the judge, generation).

- The API key is read from an environment variable at call time and sent only to the configured
  origin: redirects are never followed, and a 3xx is one error naming where it pointed. The key
  never reaches a log, an error message or a store: an answer that echoes it (a server that puts
  the request's headers into a field) has every occurrence replaced before anyone reads it.
- A proxy never sees the key in clear text: over https a proxy only tunnels (CONNECT), so the
  environment's proxy settings apply; a plain-http request that carries a key goes straight to
  the origin, never to `http_proxy` (a request without a key follows the proxy settings as usual).
- Bounded retries with exponential backoff on 429, 5xx, time-outs, dropped connections and
  bodies that are not JSON. A `Retry-After` (seconds or an HTTP date) replaces the backoff, capped;
  one that cannot be parsed falls back to the backoff.
- Any other failure is one line naming the endpoint and what it said.
"""

from __future__ import annotations

import email.utils
import json
import math
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ifaudit.core.errors import IfauditError


class EndpointError(IfauditError):
    """The endpoint could not give a usable answer (after the retries the policy allows)."""


POLICY_FIELDS = ("base_url", "api_key_env", "retries", "backoff_seconds", "timeout_seconds")


@dataclass(frozen=True)
class HttpPolicy:
    base_url: str
    api_key_env: str = "OPENAI_API_KEY"
    retries: int = 5
    backoff_seconds: float = 1.0
    timeout_seconds: float = 120.0
    max_wait_seconds: float = 60.0  # cap on any single wait, Retry-After included

    @classmethod
    def of(cls, settings: Any) -> HttpPolicy:
        """The policy a client's settings (judge, generation) name with the same field names."""
        return cls(**{name: getattr(settings, name) for name in POLICY_FIELDS})

    def backoff(self, attempt: int) -> float:
        return min(self.backoff_seconds * 2**attempt, self.max_wait_seconds)


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


_OPENER = urllib.request.build_opener(_NoRedirect)
# For plain-http requests that carry a key: no proxy at all (an empty ProxyHandler).
_DIRECT_OPENER = urllib.request.build_opener(_NoRedirect, urllib.request.ProxyHandler({}))
REDACTED = "[redacted: the API key]"


def redact(value: Any, secret: str) -> Any:
    """`value` (decoded JSON) with every occurrence of `secret` in its strings, keys included,
    replaced: what a server echoes of the key is never recorded."""
    if isinstance(value, str):
        return value.replace(secret, REDACTED)
    if isinstance(value, list):
        return [redact(item, secret) for item in value]
    if isinstance(value, dict):
        return {redact(key, secret): redact(item, secret) for key, item in value.items()}
    return value


def _opener_for(url: str, key: str | None) -> urllib.request.OpenerDirector:
    plain = urllib.parse.urlsplit(url).scheme == "http"
    return _DIRECT_OPENER if key and plain else _OPENER


class _Transient(Exception):
    def __init__(self, problem: str, wait: float | None = None) -> None:
        super().__init__(problem)
        self.problem, self.wait = problem, wait


def _post_once(policy: HttpPolicy, url: str, body: bytes) -> Any:
    headers = {"Content-Type": "application/json"}
    if key := os.environ.get(policy.api_key_env):
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(url, body, headers)
    try:
        with _opener_for(url, key).open(request, timeout=policy.timeout_seconds) as reply:
            raw = reply.read()
    except urllib.error.HTTPError as error:
        code = error.code
        if 300 <= code < 400:
            target = urllib.parse.urljoin(url, error.headers.get("Location") or "")
            raise EndpointError(
                f"endpoint {url} redirected (HTTP {code}) to {origin(target)}; not followed: "
                f"the key goes only to {origin(url)} (set base_url to the final address)"
            ) from None
        if code == 429 or code >= 500:
            raise _Transient(
                f"HTTP {code}", retry_after_seconds(error.headers.get("Retry-After"), time.time())
            ) from None
        raise EndpointError(f"endpoint {url} answered HTTP {code}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        raise _Transient(str(getattr(error, "reason", error)) or type(error).__name__) from None
    try:
        answer = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise _Transient("a body that is not JSON") from None
    return redact(answer, key) if key else answer


def post_json(
    policy: HttpPolicy,
    path: str,
    payload: dict[str, Any],
    accept: Callable[[Any], bool] = lambda answer: True,
    sleep: Callable[[float], None] = time.sleep,
) -> Any:
    """POST `payload` to base_url + path; the decoded JSON answer, once `accept` takes it
    (an answer it refuses is retried like a malformed body)."""
    url = policy.base_url.rstrip("/") + path
    body = json.dumps(payload).encode("utf-8")
    problem = ""
    for attempt in range(policy.retries + 1):
        try:
            answer = _post_once(policy, url, body)
            if accept(answer):
                return answer
            problem, wait = "an answer of the wrong shape", None
        except _Transient as transient:
            problem, wait = transient.problem, transient.wait
        if attempt < policy.retries:
            sleep(min(policy.backoff(attempt) if wait is None else wait, policy.max_wait_seconds))
    raise EndpointError(f"endpoint {url} gave no usable answer after {policy.retries + 1} attempts (last: {problem})")
