"""The canary: 20 fixed responses regraded in the run's own environment before its grades count.

The committed canary holds keys, the sha256 of each response text and the grades the unmodified
upstream grader gave them; the texts themselves come from the fetched, verified response file.
A disagreement on any instruction (or a response whose text is not the pinned one) fails the
canary, and the verdict names each disagreeing response and instruction with the environment's
versions, so a container whose grader, NLTK data or seeding differs is caught before it counts.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from ifaudit.canonical import sha256_bytes
from ifaudit.errors import InputError
from ifaudit.graders import CheckerRegistry
from ifaudit.grading import grade_response
from ifaudit.prompts import Prompt
from ifaudit.responses import Response


def load_canary(task: str) -> dict[str, Any]:
    """The committed canary of `task` (package data under ifaudit/canaries/)."""
    try:
        text = resources.files("ifaudit.canaries").joinpath(f"{task}.json").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"no canary for task {task!r}", field="task") from None
    return json.loads(text)


def check_canary(canary: dict[str, Any], registry: CheckerRegistry, prompts: list[Prompt],
                 responses: list[Response]) -> dict[str, Any]:
    by_key = {prompt.key: prompt for prompt in prompts}
    by_pair = {(r.key, r.sample): r for r in responses}
    disagreements: list[dict[str, Any]] = []
    for item in canary["items"]:
        pair = (item["key"], item["sample"])
        response = by_pair.get(pair)
        if response is None or item["key"] not in by_key:
            disagreements.append({"key": item["key"], "sample": item["sample"], "problem": "response or prompt missing"})
            continue
        actual_sha = sha256_bytes(response.text.encode("utf-8"))
        if actual_sha != item["response_sha256"]:
            disagreements.append({"key": item["key"], "sample": item["sample"], "problem": "response text differs",
                                  "expected_sha256": item["response_sha256"], "got_sha256": actual_sha})
            continue
        graded = grade_response(registry, by_key[item["key"]], response, canary["task"])
        for mode in ("strict", "loose"):
            got = graded[mode]["follow_instruction_list"]
            for index, (expected, actual) in enumerate(zip(item[mode], got, strict=True)):
                if expected != actual:
                    disagreements.append({
                        "key": item["key"], "sample": item["sample"], "mode": mode, "index": index,
                        "instruction_id": item["instruction_id_list"][index], "expected": expected, "got": actual,
                        "problem": "grade differs",
                    })
    return {"task": canary["task"], "items": len(canary["items"]), "passed": not disagreements,
            "disagreements": disagreements}


def load_canary_file(path: Path) -> dict[str, Any]:
    """A canary given as a file instead of the committed one (tests tamper with a copy)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read canary: {exc}", path=path) from None
