"""An LLM judge for decomposed yes/no questions (InFoBench), recorded so it can be replayed.

- Protocol: how the questions are put and the answers read (ifaudit.judging.judge_protocol: InFoBench's
  reference, pinned, or ifaudit's own).
- Client: any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, llama.cpp server...),
  under the shared HTTP policy (ifaudit.io.remote.http_client: key from the environment, same origin only,
  bounded retries).
- Store: every request and its answer, content-addressed by the sha256 of the exact request
  (model, parameters, messages), in the shared store (ifaudit.io.remote.store): asked once, replayed ever
  after. Each judgement entry also says which protocol made it. The store is the audit trail a
  paper ships.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ifaudit.core.errors import IfauditError
from ifaudit.io.remote.http_client import DEFAULT_MAX_ANSWER_BYTES, HttpPolicy, post_json
from ifaudit.io.remote.store import Recorded, RequestStore


class JudgeError(IfauditError):
    """The judge answered something a protocol cannot use."""


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
    deadline_seconds: float | None = None  # a whole request; None: twice timeout_seconds
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES
    key_via_proxy: bool = False  # the key may go through http_proxy over plain http

    def policy(self) -> HttpPolicy:
        return HttpPolicy.of(self)


JudgementStore = RequestStore  # the judge's store is the shared one; its on-disk format is unchanged


def chat_completion(settings: JudgeSettings, request: dict[str, Any]) -> str:
    """One request to an OpenAI-compatible endpoint under the shared HTTP policy."""
    answer = post_json(settings.policy(), "/chat/completions", request, accept=_is_chat_completion)
    return answer["choices"][0]["message"]["content"]


def _is_chat_completion(answer: Any) -> bool:
    try:
        return isinstance(answer["choices"][0]["message"]["content"], str)
    except (KeyError, IndexError, TypeError):
        return False


class RecordedJudge(Recorded):
    """The judge's answers from the store; on a miss, from the live endpoint, unless replay-only.
    `protocol` (how the requests were made) is written into every entry recorded."""

    def __init__(
        self, store: RequestStore, settings: JudgeSettings, live: bool, protocol: dict[str, Any] | None = None
    ) -> None:
        super().__init__(
            store,
            lambda request: chat_completion(settings, request),
            settings.base_url,
            live,
            kind="judgement",
            step="judge",
            annotation={"protocol": protocol or {}},
        )
        self.settings = settings
