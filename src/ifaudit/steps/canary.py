"""The canary: fixed responses regraded in the run's own environment before its grades count.

A committed canary lists responses with the grades a reference gave them. IFEval's canary names
20 of Google's GPT-4 responses by key and sha256 (the texts come from the fetched, verified
response file) with the grades of the unmodified upstream grader. A canary may instead carry its
prompts and responses inline (Arabic IFEval's, built from the reference implementation's test
vectors). Any disagreement (or a response whose text is not the pinned one) fails the canary,
and the verdict names each disagreeing response and instruction, so an environment whose grader,
NLTK data or seeding differs is caught before its runs count.

Real responses rarely touch the corners where environments differ (the 20 GPT-4 responses grade
the same under nltk 3.9.1 ... 3.10.4), so a canary also carries *sentinels*: short made-up
responses, each built so that one known environment-sensitive behaviour (nltk's sentence
splitting or word counting, the punkt data, langdetect on a borderline text, the Unicode tables of
Python or of `regex`) decides its verdict. A sentinel that flips names itself, what it guards, what
was expected and what came out; docs/environment_sensitivity.md lists them all.

In the DAG every grading process runs the canary itself, with the grader it then grades with,
before grading (grading resets its randomness before each response, so the canary leaves no
trace in the grades). The task's verdict combines those of all its grading processes: one
process that fails is enough to fail it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from ifaudit.io.canonical import pretty_json_bytes, sha256_bytes
from ifaudit.core.errors import IfauditError, InputError
from ifaudit.io.prompts import prompt_from_record
from ifaudit.io.responses import read_responses
from ifaudit.core.records import Prompt, Response
from ifaudit.tasks.base import Grading, Task
from ifaudit.tasks.registry import read_task_prompts


def load_canary(name: str) -> dict[str, Any]:
    """A committed canary (package data under ifaudit/tasks/canaries/)."""
    try:
        text = resources.files("ifaudit.tasks.canaries").joinpath(f"{name}.json").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"no canary named {name!r}", field="canary") from None
    return json.loads(text)


def load_canary_file(path: Path) -> dict[str, Any]:
    """A canary given as a file instead of the committed one (tests tamper with a copy)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read canary: {exc}", path=path) from None


def needs_datasets(canary: dict[str, Any]) -> bool:
    return "responses" in canary


def canary_of(task: Task, path: Path | None) -> dict[str, Any]:
    """The canary file given, else the task's committed one."""
    return load_canary_file(path) if path else load_canary(task.name)


def canary_inputs(
    task: Task, canary: dict[str, Any], prompts: Path | None, responses: Path | None, options: str
) -> tuple[list[Prompt], list[Response]]:
    """The canary's prompts and responses: read from its datasets' files, or carried inline.
    `options` names the command-line options that give the files, for the error."""
    if not needs_datasets(canary):
        return inline_inputs(canary)
    if not (prompts and responses):
        raise IfauditError(
            f"the {task.name} canary needs {options} (its datasets: "
            f"{canary['prompts']['dataset']}, {canary['responses']['dataset']})"
        )
    read = read_task_prompts(task, prompts)
    return read, read_responses(responses, read)


def inline_inputs(canary: dict[str, Any]) -> tuple[list[Prompt], list[Response]]:
    prompts = [prompt_from_record(item["prompt"], "<canary>", index) for index, item in enumerate(canary["items"], 1)]
    responses = [
        Response(key=item["key"], sample=item["sample"], text=item["response"], line=index)
        for index, item in enumerate(canary["items"], 1)
    ]
    return prompts, responses


def _graded_verdicts(graded: dict[str, Any], mode: str) -> Any:
    return graded["gate"]["passed"] if mode == "gate" else graded[mode]["follow_instruction_list"]


def check_sentinels(
    canary: dict[str, Any], grade: Callable[[Prompt, Response], dict[str, Any]]
) -> list[dict[str, Any]]:
    """Grade each sentinel with `grade`; one record per sentinel whose text or verdict is not the pinned one."""
    flips: list[dict[str, Any]] = []
    for index, sentinel in enumerate(canary.get("sentinels", []), 1):
        where = {"sentinel": sentinel["name"], "guards": sentinel["guards"]}
        actual_sha = sha256_bytes(sentinel["response"].encode("utf-8"))
        if actual_sha != sentinel["response_sha256"]:  # an editor normalizing NFD text, say
            flips.append(
                {
                    **where,
                    "problem": "sentinel text differs",
                    "expected_sha256": sentinel["response_sha256"],
                    "got_sha256": actual_sha,
                }
            )
            continue
        prompt = prompt_from_record(sentinel["prompt"], "<canary sentinel>", index)
        graded = grade(prompt, Response(key=prompt.key, sample=0, text=sentinel["response"], line=index))
        for mode, expected in sorted(sentinel["expected"].items()):
            got = _graded_verdicts(graded, mode)
            if got != expected:
                flips.append(
                    {
                        **where,
                        "mode": mode,
                        "instruction_id_list": list(prompt.instruction_id_list),
                        "expected": expected,
                        "got": got,
                        "problem": "sentinel flipped",
                    }
                )
    return flips


def check_canary(
    canary: dict[str, Any],
    grade: Callable[[Prompt, Response], dict[str, Any]],
    task: Task,
    prompts: list[Prompt],
    responses: list[Response],
) -> dict[str, Any]:
    """Regrade each item and each sentinel with `grade` (the task's own grading, in this
    environment) and compare."""
    by_key = {prompt.key: prompt for prompt in prompts}
    by_pair = {(r.key, r.sample): r for r in responses}
    disagreements: list[dict[str, Any]] = []
    for item in canary["items"]:
        where = {"key": item["key"], "sample": item["sample"]}
        response = by_pair.get((item["key"], item["sample"]))
        if response is None or item["key"] not in by_key:
            disagreements.append({**where, "problem": "response or prompt missing"})
            continue
        actual_sha = sha256_bytes(response.text.encode("utf-8"))
        if actual_sha != item["response_sha256"]:
            disagreements.append(
                {
                    **where,
                    "problem": "response text differs",
                    "expected_sha256": item["response_sha256"],
                    "got_sha256": actual_sha,
                }
            )
            continue
        graded = grade(by_key[item["key"]], response)
        for mode in task.modes:
            if mode not in item:
                continue
            got = graded[mode]["follow_instruction_list"]
            for index, (expected, actual) in enumerate(zip(item[mode], got, strict=True)):
                if expected != actual:
                    disagreements.append(
                        {
                            **where,
                            "mode": mode,
                            "index": index,
                            "instruction_id": item["instruction_id_list"][index],
                            "expected": expected,
                            "got": actual,
                            "problem": "grade differs",
                        }
                    )
        if "gate" in item and graded["gate"]["passed"] != item["gate"]:
            disagreements.append(
                {
                    **where,
                    "mode": "gate",
                    "expected": item["gate"],
                    "got": graded["gate"]["passed"],
                    "rule": graded["gate"]["rule"],
                    "problem": "gate verdict differs",
                }
            )
    flips = check_sentinels(canary, grade)
    disagreements += flips
    return {
        "task": canary["task"],
        "items": len(canary["items"]),
        "passed": not disagreements,
        "disagreements": disagreements,
        "sentinels": len(canary.get("sentinels", [])),
        "sentinels_flipped": sorted({flip["sentinel"] for flip in flips}),
    }


def run_canary(
    canary: dict[str, Any],
    grading: Grading,
    task: Task,
    prompts: list[Prompt],
    responses: list[Response],
    responses_path: Path | None,
) -> dict[str, Any]:
    """The verdict of `canary` graded by `grading` (this process's), with its environment."""
    from ifaudit.tasks.environment import sensitive_versions

    grade_one, environment = grading.canary_grader(responses_path)
    verdict = check_canary(canary, grade_one, task, prompts, responses)
    verdict["environment"] = environment
    verdict["versions"] = sensitive_versions()
    return verdict


def explain(verdict: dict[str, Any], task: str, out: Path) -> list[str]:
    """The lines a command prints about a verdict: agreement, or each flipped sentinel and the versions."""
    if verdict["passed"]:
        return [
            f"canary {task}: {verdict['items']} responses regraded, all agree; "
            f"{verdict['sentinels']} environment sentinels hold"
        ]
    lines = [
        f"ifaudit: CANARY FAILED for {task}: {len(verdict['disagreements'])} disagreements "
        f"(see {out}); runs graded in this environment will not count"
    ]
    flips = {flip["sentinel"]: flip for flip in verdict["disagreements"] if "sentinel" in flip}
    lines += [
        f"ifaudit: sentinel {name} flipped (expected {flip.get('expected')}, got {flip.get('got')}); "
        f"it guards {flip['guards']}"
        for name, flip in flips.items()
    ]
    if flips:
        lines.append(
            "ifaudit: found " + ", ".join(f"{name} {version}" for name, version in verdict["versions"].items())
        )
    return lines


def combine_verdicts(verdicts: dict[str, bytes]) -> bytes:
    """One verdict for a task from those of its grading processes (file name -> bytes, in order).

    Processes that agree wrote the same bytes, and the task's verdict is those bytes: what a
    single canary process writes. Otherwise the first verdict stands for the rest, except that it
    passes only if every process passed in the same environment, and its disagreements are all
    the processes' disagreements, each naming the verdict files (`in`) that report it."""
    distinct = list(dict.fromkeys(verdicts.values()))
    if not distinct:
        raise InputError("no canary verdicts to combine", field="canary")
    if len(distinct) == 1:
        return distinct[0]
    parsed = {name: json.loads(data) for name, data in verdicts.items()}
    first = next(iter(parsed.values()))
    found: dict[str, list[str]] = {}
    for name, verdict in parsed.items():
        for disagreement in verdict["disagreements"]:
            found.setdefault(json.dumps(disagreement, sort_keys=True), []).append(name)
        if verdict["environment"] != first["environment"]:
            problem = {
                "problem": "grading processes ran in different environments",
                "environment": verdict["environment"],
            }
            found.setdefault(json.dumps(problem, sort_keys=True), []).append(name)
    disagreements = [{**json.loads(key), "in": names} for key, names in found.items()]
    flipped = sorted({name for verdict in parsed.values() for name in verdict["sentinels_flipped"]})
    combined = {**first, "passed": not disagreements, "disagreements": disagreements, "sentinels_flipped": flipped}
    return pretty_json_bytes(combined)
