"""Responses from a model endpoint, recorded so a reviewer can replay them without the model.

- A model is an OpenAI-compatible endpoint (vLLM, SGLang, llama.cpp server, TGI, OpenAI) asked
  through its chat or completions API with fixed sampling settings, `samples` responses per
  prompt. The HTTP policy is the judge's (ifaudit.io.remote.http_client).
- `n`: each prompt is asked for all the samples it still lacks (`n` = what is missing). A server
  that gives fewer choices (one that ignores `n`, or caps it) is asked again for the rest; each
  such follow-up is a distinct recorded request (its `draw` number), with the seed, if any,
  advanced by the number of samples already received, so the follow-ups do not repeat a sample.
- Every request goes to the shared content-addressed store (ifaudit.io.remote.store), keyed by the exact
  request (the body, the API path, the draw). An interrupted or repeated run asks only what is
  missing; a replay-only run asks nothing. Each response record carries the sha256 of the
  request that produced it and the server's `finish_reason`.
- The response file holds only what the recorded answers say about the text; what the server
  says about itself (model name, system_fingerprint, usage) and wall times go to a side record
  for the manifest.
- Key material an answer holds (ifaudit.io.remote.redact) is redacted before the answer is stored, so a
  response that held any differs from what the server sent: the side record counts the stretches
  redacted from this call's live answers (the count only).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from typing import Any

from ifaudit.core import bounds
from ifaudit.core.errors import InputError
from ifaudit.io.remote.http_client import DEFAULT_MAX_ANSWER_BYTES, HttpPolicy, post_json
from ifaudit.core.records import Prompt
from ifaudit.io.remote.store import Recorded, RequestStore, request_key


@dataclass(frozen=True)
class ChatApi:
    """/chat/completions: the prompt as the user's message, after the system prompt if any."""

    path: str = "/chat/completions"

    def payload(self, prompt: str, system: str | None) -> dict[str, Any]:
        messages = [{"role": "system", "content": system}] if system is not None else []
        return {"messages": [*messages, {"role": "user", "content": prompt}]}

    def text(self, choice: dict[str, Any]) -> str:
        return choice["message"]["content"]


@dataclass(frozen=True)
class CompletionsApi:
    """/completions: the prompt text as given (a chat template, if wanted, is the server's job)."""

    path: str = "/completions"

    def payload(self, prompt: str, system: str | None) -> dict[str, Any]:
        return {"prompt": prompt if system is None else f"{system}\n\n{prompt}"}

    def text(self, choice: dict[str, Any]) -> str:
        return choice["text"]


APIS: dict[str, ChatApi | CompletionsApi] = {"chat": ChatApi(), "completions": CompletionsApi()}
SAMPLING = ("temperature", "top_p", "max_tokens", "seed", "stop")  # sent only when set
NUMERIC: dict[str, type | tuple[type, ...]] = {
    "temperature": (int, float),
    "top_p": (int, float),
    "max_tokens": int,
    "seed": int,
    "retries": int,
    "backoff_seconds": (int, float),
    "timeout_seconds": (int, float),
    "deadline_seconds": (int, float),
    "max_answer_bytes": int,
}
POSITIVE = ("deadline_seconds", "max_answer_bytes")  # a cap of 0 or less would refuse every answer
# Every number's documented bounds (the config's schema states the same): finite, within range.
BOUNDS = {
    "temperature": bounds.TEMPERATURE,
    "top_p": bounds.TOP_P,
    "max_tokens": bounds.MAX_TOKENS,
    "seed": bounds.REQUEST_SEED,
    "samples": bounds.SAMPLES,
    "concurrency": bounds.CONCURRENCY,
    "retries": bounds.RETRIES,
    "backoff_seconds": bounds.BACKOFF_SECONDS,
    "timeout_seconds": bounds.TIMEOUT_SECONDS,
    "deadline_seconds": bounds.TIMEOUT_SECONDS,
    "max_answer_bytes": bounds.BYTES,
}


@dataclass(frozen=True)
class ModelSettings:
    """A run's `model:` block: where to ask, how to sample, how many responses per prompt."""

    model: str
    base_url: str
    api: str = "chat"
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    stop: tuple[str, ...] | None = None
    system: str | None = None
    samples: int = 1
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 8
    retries: int = 5
    backoff_seconds: float = 1.0
    timeout_seconds: float = 600.0
    deadline_seconds: float | None = None  # a whole request; None: twice timeout_seconds
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES
    key_via_proxy: bool = False  # the key may go through http_proxy over plain http
    extra: dict[str, Any] = field(default_factory=dict)  # other body fields, sent as given

    @classmethod
    def from_dict(cls, spec: dict[str, Any], where: str = "model") -> ModelSettings:
        known = {f.name for f in fields(cls)}
        for name in spec:
            if name not in known:
                raise InputError(
                    f"unknown setting {name!r} (known: {', '.join(sorted(known))})", field=f"{where}.{name}"
                )
        for name in ("model", "base_url"):
            if not isinstance(spec.get(name), str):
                raise InputError("required, a string", field=f"{where}.{name}")
        if spec.get("api", "chat") not in APIS:
            raise InputError(f"expected one of {sorted(APIS)}, got {spec['api']!r}", field=f"{where}.api")
        for name in ("samples", "concurrency"):
            value = spec.get(name, 1)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InputError(f"expected an integer of at least 1, got {value!r}", field=f"{where}.{name}")
        for name, kind in NUMERIC.items():
            value = spec.get(name)
            if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
                raise InputError(f"expected a number, got {value!r}", field=f"{where}.{name}")
        for name in POSITIVE:
            value = spec.get(name)
            if value is not None and value <= 0:
                raise InputError(f"expected a number above 0, got {value!r}", field=f"{where}.{name}")
        for name, within in BOUNDS.items():
            if spec.get(name) is not None and (problem := within.problem(spec[name])):
                raise InputError(problem, field=f"{where}.{name}")
        if not isinstance(spec.get("key_via_proxy", False), bool):
            raise InputError(f"expected true or false, got {spec['key_via_proxy']!r}", field=f"{where}.key_via_proxy")
        stop = spec.get("stop")
        if stop is not None and not (
            isinstance(stop, str) or (isinstance(stop, list) and all(isinstance(s, str) for s in stop))
        ):
            raise InputError(f"expected a string or a list of strings, got {stop!r}", field=f"{where}.stop")
        if not isinstance(spec.get("extra", {}), dict):
            raise InputError("expected an object of request-body fields", field=f"{where}.extra")
        return cls(**{**spec, "stop": (stop,) if isinstance(stop, str) else tuple(stop) if stop else None})

    def policy(self) -> HttpPolicy:
        return HttpPolicy.of(self)

    def request(self, prompt: str, wanted: int, received: int, draw: int) -> dict[str, Any]:
        """The recorded request for `wanted` more samples after `received` (see the module doc)."""
        api = APIS[self.api]
        body: dict[str, Any] = {"model": self.model, **self.extra, **api.payload(prompt, self.system)}
        for name in SAMPLING:
            value = getattr(self, name)
            if value is not None:
                body[name] = list(value) if name == "stop" else value
        if self.seed is not None:
            body["seed"] = self.seed + received
        if wanted > 1:
            body["n"] = wanted
        return {"body": body, "draw": draw, "path": api.path}


def _choices(answer: Any) -> list[dict[str, Any]] | None:
    choices = answer.get("choices") if isinstance(answer, dict) else None
    return choices if isinstance(choices, list) and choices and all(isinstance(c, dict) for c in choices) else None


@dataclass
class Redactions:
    """Stretches of key material redacted from the live answers (how many, never what)."""

    count: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, count: int) -> None:
        with self.lock:
            self.count += count


def ask_endpoint(settings: ModelSettings, redactions: Redactions) -> Callable[[dict[str, Any]], Any]:
    """The live call behind the store: the body POSTed under the shared policy; only an answer
    whose every choice carries a text is accepted (anything else is retried)."""
    api = APIS[settings.api]

    def well_formed(answer: Any) -> bool:
        choices = _choices(answer)
        try:
            return choices is not None and all(isinstance(api.text(c), str) for c in choices)
        except (KeyError, TypeError):
            return False

    def ask(request: dict[str, Any]) -> Any:
        return post_json(
            settings.policy(), request["path"], request["body"], accept=well_formed, redacted=redactions.add
        )

    return ask


@dataclass
class Tally:
    """What a generation used and what the servers said about themselves (the side record)."""

    usage: Counter = field(default_factory=Counter)
    served_by: Counter = field(default_factory=Counter)  # (model, system_fingerprint) -> requests
    finish: Counter = field(default_factory=Counter)
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, answer: dict[str, Any], choices: Sequence[dict[str, Any]]) -> None:
        with self.lock:
            self.requests += 1
            usage = answer["usage"] if isinstance(answer.get("usage"), dict) else {}
            self.usage.update({k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)})
            self.served_by[f"{answer.get('model')} / {answer.get('system_fingerprint')}"] += 1
            self.finish.update(str(choice.get("finish_reason")) for choice in choices)


def generate(
    settings: ModelSettings,
    prompts: Sequence[Prompt],
    ask: Callable[[dict[str, Any]], Any],
    on_prompt: Callable[[int, Tally], None] = lambda done, tally: None,
) -> tuple[list[dict[str, Any]], Tally]:
    """`samples` responses per prompt, in prompt order; `ask` answers a recorded request (from the
    store or live). Prompts are asked in parallel up to the concurrency bound."""
    tally = Tally()

    def one(prompt: Prompt) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        draw = 0
        while len(records) < settings.samples:
            request = settings.request(prompt.prompt, settings.samples - len(records), len(records), draw)
            answer = ask(request)
            choices = _choices(answer)
            if choices is None:
                raise InputError(
                    f"the recorded answer to request {request_key(request)} has no choices", field="choices"
                )
            choices = choices[: settings.samples - len(records)]
            tally.add(answer, choices)
            for choice in choices:
                records.append(
                    {
                        "finish_reason": choice.get("finish_reason"),
                        "key": prompt.key,
                        "request_sha256": request_key(request),
                        "response": APIS[settings.api].text(choice),
                        "sample": len(records),
                    }
                )
            draw += 1
        on_prompt(len(records), tally)
        return records

    pool = ThreadPoolExecutor(max_workers=settings.concurrency)
    try:
        return [record for records in pool.map(one, prompts) for record in records], tally
    finally:  # on an error, prompts not yet started are not asked
        pool.shutdown(wait=True, cancel_futures=True)


def recorded_asker(
    settings: ModelSettings, store: RequestStore, live: bool, redactions: Redactions | None = None
) -> Recorded:
    """`redactions`: where the live answers' redactions are counted (nowhere if None)."""
    ask = ask_endpoint(settings, redactions or Redactions())
    return Recorded(store, ask, settings.base_url, live, kind="generation", step="generate")


def side_record(
    settings: ModelSettings,
    records: Sequence[dict[str, Any]],
    tally: Tally,
    live_requests: int,
    redactions: int,
    wall_seconds: float,
) -> dict[str, Any]:
    """For the manifest only: never compared, it holds wall times and server self-reports."""
    return {
        "endpoint": settings.base_url,
        "api": settings.api,
        "model": settings.model,
        "samples": settings.samples,
        "responses": len(records),
        "requests": tally.requests,
        "live_requests": live_requests,
        "replayed_requests": tally.requests - live_requests,
        "key_redactions": redactions,
        "finish_reasons": dict(sorted(tally.finish.items())),
        "usage": dict(sorted(tally.usage.items())),
        "served_by": dict(sorted(tally.served_by.items())),
        "wall_seconds": round(wall_seconds, 3),
    }
