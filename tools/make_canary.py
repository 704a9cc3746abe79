"""How the IFEval canary was chosen (run once; its output is committed as
src/ifaudit/canaries/ifeval.json). Kept so the choice can be audited and repeated.

    python tools/make_canary.py ../shared/data/ifeval > src/ifaudit/canaries/ifeval.json

Picks 20 of Google's GPT-4 responses, deterministically: both letter_frequency prompts graded on
a substitute letter (1122, 1129), language-detection cases that pass and fail, each case check,
loose-only passes, then greedy coverage of the remaining instruction types. Expected grades are
the reference grades made by the unmodified upstream grader.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

SIZE = 20


def main(data: Path) -> None:
    prompts = [json.loads(line) for line in (data / "input_data.jsonl").open()]
    responses = {json.loads(line)["prompt"]: json.loads(line)["response"]
                 for line in (data / "input_response_data_gpt4_20231107_145030.jsonl").open()}
    grades = {g["key"]: g for g in map(json.loads, (data / "reference_grades_gpt4.jsonl").open())}
    by_key = {p["key"]: p for p in prompts}

    def has(key: int, instruction: str) -> bool:
        return instruction in by_key[key]["instruction_id_list"]

    def strict_all(key: int) -> bool:
        return grades[key]["strict"]["follow_all_instructions"]

    keys = sorted(by_key)
    chosen: dict[int, list[str]] = {}

    def take(reason: str, candidates: list[int], count: int = 1) -> None:
        for key in [k for k in candidates if k not in chosen][:count]:
            chosen[key] = [reason]

    take("letter_frequency graded on a substitute letter", [1122, 1129], 2)
    take("language detection, followed", [k for k in keys if has(k, "language:response_language") and strict_all(k)])
    take("language detection, not followed",
         [k for k in keys if has(k, "language:response_language") and not strict_all(k)])
    take("case check: capitals", [k for k in keys if has(k, "change_case:english_capital")])
    take("case check: lowercase", [k for k in keys if has(k, "change_case:english_lowercase")])
    take("loose-only pass", [k for k in keys if not strict_all(k) and grades[k]["loose"]["follow_all_instructions"]], 2)
    covered = {i for k in chosen for i in by_key[k]["instruction_id_list"]}
    while len(chosen) < SIZE:
        best = max((k for k in keys if k not in chosen),
                   key=lambda k: (len(set(by_key[k]["instruction_id_list"]) - covered), -k))
        new = sorted(set(by_key[best]["instruction_id_list"]) - covered)
        chosen[best] = ["covers " + ", ".join(new)] if new else ["filler"]
        covered |= set(by_key[best]["instruction_id_list"])

    items = []
    for key in sorted(chosen):
        text = responses[by_key[key]["prompt"]]
        items.append({
            "key": key, "sample": 0, "why": chosen[key],
            "response_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "instruction_id_list": by_key[key]["instruction_id_list"],
            "strict": grades[key]["strict"]["follow_instruction_list"],
            "loose": grades[key]["loose"]["follow_instruction_list"],
        })
    canary = {
        "task": "ifeval",
        "description": "20 of Google's GPT-4 responses with the grades the unmodified upstream grader gave them",
        "prompts": {"dataset": "ifeval_prompts_github",
                    "sha256": hashlib.sha256((data / "input_data.jsonl").read_bytes()).hexdigest()},
        "responses": {"dataset": "gpt4_responses", "sha256": hashlib.sha256(
            (data / "input_response_data_gpt4_20231107_145030.jsonl").read_bytes()).hexdigest()},
        "expected_from": "reference grades of the unmodified upstream grader at the pinned commit, seeded (FACTS §3)",
        "instruction_types_covered": len({i for item in items for i in item["instruction_id_list"]}),
        "items": items,
    }
    json.dump(canary, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
