"""The steps that talk to a model endpoint through a recorded store: `generate` (a model's
responses) and `judge` (an LLM judge's verdicts of a judged task). Each asks only what its store
does not hold, writes its outputs atomically, and returns the line it reports."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ifaudit.core.errors import IfauditError
from ifaudit.io.canonical import all_or_nothing, write_json, write_jsonl
from ifaudit.io.leftovers import no_empty_folders_left
from ifaudit.tasks.base import Task

T = TypeVar("T")


def progress_bar(show: bool, label: str) -> Callable[[Iterable[T], int], Iterable[T]]:
    """A progress bar on stderr around an iteration, or the items as they are."""

    def wrap(items: Iterable[T], total: int) -> Iterable[T]:
        if not show:
            return items
        from tqdm import tqdm

        return tqdm(items, total=total, desc=label, unit="response", file=sys.stderr, mininterval=1.0)

    return wrap


@dataclass(frozen=True)
class GenerateRequest:
    task: Task
    prompts: Path
    model: dict[str, Any]  # the run's `model` block, as the config gives it
    store: Path
    replay_only: bool
    out: Path
    record: Path
    show_progress: bool


def generate_responses(request: GenerateRequest) -> str:
    """A refused generation leaves nothing behind: neither output, nor a folder it made (the
    store's entries recorded before the failure stay: a rerun replays them)."""
    from ifaudit.inputs.generation import ModelSettings, Redactions, generate, recorded_asker, side_record
    from ifaudit.io.remote.store import RequestStore

    settings = ModelSettings.from_dict(request.model)
    prompts = request.task.read_prompts(request.prompts)
    redactions = Redactions()
    asker = recorded_asker(settings, RequestStore(request.store), not request.replay_only, redactions)
    started = time.monotonic()
    bar = None
    if request.show_progress:
        from tqdm import tqdm

        total = len(prompts) * settings.samples
        bar = tqdm(total=total, desc="generating", unit="response", file=sys.stderr, mininterval=1.0)

    def progress(done: int, tally: Any) -> None:
        if bar is not None:
            bar.set_postfix(tokens=tally.usage.get("completion_tokens", 0), refresh=False)
            bar.update(done)

    with no_empty_folders_left(request.store, request.out.parent, request.record.parent), all_or_nothing():
        records, tally = generate(settings, prompts, asker, on_prompt=progress)
        if bar is not None:
            bar.close()
        write_jsonl(request.out, records)
        record = side_record(settings, records, tally, asker.live_calls, redactions.count, time.monotonic() - started)
        write_json(request.record, record)
    usage = ", ".join(f"{name} {count}" for name, count in record["usage"].items()) or "not reported"
    return (
        f"generated {len(records)} responses ({record['finish_reasons'].get('length', 0)} cut at the length limit) "
        f"from {tally.requests} requests ({asker.live_calls} new to {settings.base_url}, "
        f"{tally.requests - asker.live_calls} replayed from {request.store}); tokens: {usage}"
        + (f"; {redactions.count} stretches of the API key redacted from the answers" if redactions.count else "")
    )


@dataclass(frozen=True)
class JudgeRequest:
    task: Task
    prompts: Path
    responses: Path
    store: Path | None
    record: Path


def judge_responses(request: JudgeRequest, settings: Any, protocol: Any) -> str:
    """`settings`: the judge's JudgeSettings; `protocol`: the JudgeProtocol its questions follow."""
    from ifaudit.io.responses import read_responses
    from ifaudit.judging.infobench import judge_all, questions_of
    from ifaudit.judging.judge import JudgementStore, RecordedJudge
    from ifaudit.judging.judge_protocol import judge_identity

    if request.store is None:
        raise IfauditError("judging needs --store: the judgement store its requests and answers are recorded in")
    prompts = request.task.read_prompts(request.prompts)
    responses = read_responses(request.responses, prompts)
    judge = RecordedJudge(JudgementStore(request.store), settings, live=True, protocol=protocol.identity())
    verdicts = judge_all(judge, settings, protocol, prompts, responses, progress=progress_bar(True, "judging"))
    by_key = {prompt.key: prompt for prompt in prompts}
    questions = sum(len(questions_of(by_key[key])) for key, _ in verdicts)
    asked = sum(len(v["verdicts"]) for v in verdicts.values())
    unparsed = sum(v is None for found in verdicts.values() for v in found["verdicts"])
    write_json(
        request.record,
        {
            "judge": judge_identity(settings, protocol).as_record(),
            "live_requests": judge.live_calls,
            "questions": questions,
            "asked": asked,
            "unasked": questions - asked,
            "responses": len(verdicts),
            "unparsed": unparsed,
        },
    )
    return (
        f"judged {len(verdicts)} responses ({asked} of {questions} questions asked, {judge.live_calls} new "
        f"requests to {settings.base_url}, {unparsed} answers unparsed; protocol {protocol.name}) into "
        f"{request.store}"
    )
