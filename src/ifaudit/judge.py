"""An LLM judge for decomposed yes/no questions (InFoBench), recorded so it can be replayed.

- Protocol (the reference's): one conversation per response; its questions are asked one after
  another, each earlier question and answer kept in the history. The first message carries the
  judging rules, the task input and the generated text.
- Client: any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, llama.cpp server...),
  under the shared HTTP policy (ifaudit.http_client: key from the environment, same origin only,
  bounded retries).
- Store: every request and its answer, content-addressed by the sha256 of the exact request
  (model, parameters, messages), in the shared store (ifaudit.store): asked once, replayed ever
  after. The store is the audit trail a paper ships.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ifaudit.http_client import HttpPolicy, post_json
from ifaudit.store import Recorded, RequestStore

RULES = (
    "You check whether a generated text meets one requirement at a time. Answer each question with YES or NO. "
    "Answer YES only if the generated text meets the requirement completely: even a small failure means NO. "
    "Answer NO as well when the generated text gives nothing that would let the requirement be checked."
)


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

    def policy(self) -> HttpPolicy:
        return HttpPolicy(base_url=self.base_url, api_key_env=self.api_key_env, retries=self.retries,
                          backoff_seconds=self.backoff_seconds, timeout_seconds=self.timeout_seconds)

    def identity(self) -> dict[str, object]:
        """What a grade made with this judge records (no endpoint secrets, no key)."""
        return {"kind": "judge", "name": self.model, "upstream": False,
                "version": f"temperature={self.temperature},max_tokens={self.max_tokens}"}


def parse_answer(text: str) -> bool | None:
    """YES/NO from a judge's answer: a leading yes or no decides; otherwise YES without NO, or NO
    without YES; otherwise unparsed (None, which counts as not satisfied)."""
    start = text.strip().lower()
    if start.startswith("yes"):
        return True
    if start.startswith("no"):
        return False
    if "YES" in text and "NO" not in text:
        return True
    if "NO" in text and "YES" not in text:
        return False
    return None


def first_message(task_input: str, generated: str, question: str) -> str:
    parts = [RULES]
    if task_input.strip():
        parts.append(f'Input:\n"{task_input}"')
    parts += [f'Generated Text:\n"{generated}"', f"Question:\n{question}"]
    return "\n\n".join(parts) + "\n"


def conversation(ask: Callable[[dict[str, Any]], str], settings: JudgeSettings, task_input: str, generated: str,
                 questions: Sequence[str]) -> list[str]:
    """Ask every question in one growing conversation; returns the raw answers in order."""
    messages: list[dict[str, str]] = []
    answers = []
    for index, question in enumerate(questions):
        content = first_message(task_input, generated, question) if index == 0 else question + "\n"
        messages.append({"role": "user", "content": content})
        answer = ask({"model": settings.model, "temperature": settings.temperature,
                      "max_tokens": settings.max_tokens, "messages": [dict(m) for m in messages]})
        messages.append({"role": "assistant", "content": answer})
        answers.append(answer)
    return answers


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
    """The judge's answers from the store; on a miss, from the live endpoint, unless replay-only."""

    def __init__(self, store: RequestStore, settings: JudgeSettings, live: bool) -> None:
        super().__init__(store, lambda request: chat_completion(settings, request), settings.base_url, live,
                         kind="judgement", step="judge")
        self.settings = settings

