"""InFoBench (Qin et al. 2024): instructions decomposed into yes/no questions, judged by an LLM.

A response's grade is the judge's verdict on each of its instruction's questions. Verdicts come
either from the recorded judge (ifaudit.judging.judge: live once, replayed ever after) or from an
imported judgement set: a response file with the judge's verdicts already attached, such as
the GPT-4-judged file published with the benchmark.

InFoBench's reference stops a conversation at the first unparsable answer, so its verdict list
may be shorter than the question list (the last verdict written is then None). Such lists are
kept as written (`verdicts`, `verdicts_written`), and DRFR is given two ways: as the reference's
`bool_ratio` computes it, over the verdicts written (None counts as NO), and over all questions,
unasked and unparsed ones counted as not satisfied.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ifaudit.io.canonical import sha256_bytes, sha256_file
from ifaudit.core.errors import InputError
from ifaudit.core.identity import GraderIdentity
from ifaudit.io.jsonl import iter_objects, require
from ifaudit.judging.judge import JudgeSettings
from ifaudit.judging.judge_protocol import JudgeProtocol, conversation, judge_identity
from ifaudit.checkers.thinking import strip_thinking
from ifaudit.core.records import Prompt
from ifaudit.core.records import Response

Verdicts = dict[tuple[Any, int], dict[str, Any]]  # (key, sample) -> {"verdicts", "answers", "response_sha256"}


def read_infobench(path: str | Path) -> list[Prompt]:
    """InFoBench.json (JSON lines): each instruction with its questions, their labels and subset."""
    path = Path(path)
    prompts = []
    for line, obj in iter_objects(path):
        questions = require(obj, "decomposed_questions", list, path, line)
        labels = require(obj, "question_label", list, path, line)
        if len(labels) != len(questions) or not all(isinstance(q, str) for q in questions):
            raise InputError("needs one label list per question", path=path, line=line, field="question_label")
        prompts.append(
            Prompt(
                key=require(obj, "id", str, path, line),
                prompt=require(obj, "instruction", str, path, line),
                instruction_id_list=tuple("+".join(label) for label in labels),
                kwargs=tuple({"question": question} for question in questions),
                path=str(path),
                line=line,
                subset=require(obj, "subset", str, path, line),
                context=obj.get("input") or "",
            )
        )
    return prompts


def questions_of(prompt: Prompt) -> list[str]:
    return [kwargs["question"] for kwargs in prompt.kwargs]


def judge_all(
    ask: Callable[[dict[str, Any]], str],
    settings: JudgeSettings,
    protocol: JudgeProtocol,
    prompts: Sequence[Prompt],
    responses: Sequence[Response],
    progress: Callable[[Iterable[Any], int], Iterable[Any]] = lambda items, total: items,
) -> Verdicts:
    """Every response through the judge, conversations in parallel up to the concurrency limit."""
    by_key = {prompt.key: prompt for prompt in prompts}

    def one(response: Response) -> tuple[tuple[Any, int], dict[str, Any]]:
        prompt = by_key[response.key]
        text, _ = strip_thinking(response.text)
        answers = conversation(ask, settings, protocol, prompt.context, text, questions_of(prompt))
        return (response.key, response.sample), {
            "answers": answers,
            "verdicts": [protocol.parse(answer) for answer in answers],
            "response_sha256": sha256_bytes(response.text.encode("utf-8")),
        }

    with ThreadPoolExecutor(max_workers=max(1, settings.concurrency)) as pool:
        return dict(progress(pool.map(one, responses), len(responses)))


def read_judgement_set(path: Path) -> tuple[Verdicts, GraderIdentity]:
    """A response file with the judge's verdicts attached (`eval`: one boolean per question, or
    fewer where the reference stopped early; checked against the questions when graded)."""
    verdicts: Verdicts = {}
    for line, obj in iter_objects(path):
        key = require(obj, "id" if "id" in obj else "key", (int, str), path, line)
        text = require(obj, "output" if "output" in obj else "response", str, path, line)
        marks = require(obj, "eval", list, path, line)
        if not all(mark is None or isinstance(mark, bool) for mark in marks):
            raise InputError("expected true, false or null per question", path=path, line=line, field="eval")
        verdicts[key, obj.get("sample", 0)] = {
            "answers": None,
            "verdicts": marks,
            "response_sha256": sha256_bytes(text.encode("utf-8")),
        }
    return verdicts, GraderIdentity.imported(path.name, sha256_file(path))


def recorded_verdicts(
    prompts: Sequence[Prompt],
    responses: Sequence[Response],
    *,
    judgements: Path | None = None,
    store: Path | None = None,
    settings: JudgeSettings | None = None,
    protocol: JudgeProtocol | None = None,
) -> tuple[Verdicts, GraderIdentity]:
    """Verdicts and whoever gave them, never asking a live endpoint: an imported judgement set, or
    the judge's answers replayed from its store."""
    from ifaudit.judging.judge import JudgementStore, RecordedJudge

    if judgements is not None:
        return read_judgement_set(judgements)
    if store is None or settings is None or protocol is None:
        raise InputError(
            "a judged task needs recorded verdicts: a judgement store with the judge's settings, "
            "or an imported judgement set",
            field="judgements",
        )
    replay = RecordedJudge(JudgementStore(store), settings, live=False)
    return judge_all(replay, settings, protocol, prompts, responses), judge_identity(settings, protocol)


def grade_infobench(
    task: str, identity: GraderIdentity, prompts: Sequence[Prompt], responses: Sequence[Response], verdicts: Verdicts
) -> list[dict[str, Any]]:
    """One record per response, in the order given; a verdict must belong to this very text. A
    verdict list may be shorter than the question list (the reference's early stop): the
    questions after it were not asked and count as not satisfied."""
    by_key = {prompt.key: prompt for prompt in prompts}
    records = []
    for response in responses:
        prompt = by_key[response.key]
        found = verdicts.get((response.key, response.sample))
        digest = sha256_bytes(response.text.encode("utf-8"))
        if found is None:
            raise InputError(f"no judgement for key {response.key!r}, sample {response.sample}", field="judgements")
        if found["response_sha256"] != digest:
            raise InputError(
                f"the judgement for key {response.key!r} was made on another response text", field="judgements"
            )
        written = len(found["verdicts"])
        if written > len(prompt.kwargs):
            raise InputError(
                f"key {response.key!r}: {written} verdicts for {len(prompt.kwargs)} questions", field="judgements"
            )
        followed = [verdict is True for verdict in found["verdicts"]] + [False] * (len(prompt.kwargs) - written)
        records.append(
            {
                "answers": found["answers"],
                "grader": identity.as_record(),
                "instruction_id_list": list(prompt.instruction_id_list),
                "key": response.key,
                "response_sha256": digest,
                "sample": response.sample,
                "strict": {"follow_all_instructions": all(followed), "follow_instruction_list": followed},
                "subset": prompt.subset,
                "task": task,
                "thinking_stripped": strip_thinking(response.text)[1],
                "verdicts": found["verdicts"],
                "verdicts_written": written,
            }
        )
    return records


def verdict_counts(grades: Sequence[dict[str, Any]]) -> dict[str, int]:
    """What a run's verdict lists hold: questions, verdicts written, unparsed (None) among them,
    questions never asked, and responses whose list stopped short."""
    questions = sum(len(record["instruction_id_list"]) for record in grades)
    written = sum(record["verdicts_written"] for record in grades)
    return {
        "questions": questions,
        "verdicts_written": written,
        "unparsed": sum(verdict is None for record in grades for verdict in record["verdicts"]),
        "unasked": questions - written,
        "short_lists": sum(record["verdicts_written"] < len(record["instruction_id_list"]) for record in grades),
    }
