"""Per-run accuracies from verified grades: prompt- and instruction-level, strict and loose.

Several responses to one prompt are averaged within the prompt first, so a prompt weighs the
same however many samples it has; a prompt with no response counts as failed (and is listed).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from ifaudit.prompts import Prompt, PromptKey

MODES = ("strict", "loose")


def per_prompt_scores(prompts: Sequence[Prompt], grades: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """For each mode, one row per prompt in prompt order: key, instructions, mean prompt-level
    success over its samples, mean instructions followed over its samples, and sample count."""
    by_key: dict[PromptKey, list[dict[str, Any]]] = defaultdict(list)
    for record in grades:
        by_key[record["key"]].append(record)
    table: dict[str, list[dict[str, Any]]] = {}
    for mode in MODES:
        rows = []
        for prompt in prompts:
            samples = by_key.get(prompt.key, [])
            n = len(samples)
            rows.append({
                "key": prompt.key,
                "instructions": len(prompt.instruction_id_list),
                "samples": n,
                "prompt_followed": sum(s[mode]["follow_all_instructions"] for s in samples) / n if n else 0.0,
                "instructions_followed": sum(sum(s[mode]["follow_instruction_list"]) for s in samples) / n if n else 0.0,
            })
        table[mode] = rows
    return table


def accuracies(table: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """The four IFEval metrics with the counts they are made of."""
    metrics: dict[str, dict[str, Any]] = {}
    for mode, rows in table.items():
        prompt_correct = sum(row["prompt_followed"] for row in rows)
        instruction_correct = sum(row["instructions_followed"] for row in rows)
        instructions = sum(row["instructions"] for row in rows)
        metrics[f"prompt_level_{mode}_acc"] = {
            "correct": prompt_correct, "total": len(rows), "value": prompt_correct / len(rows) if rows else 0.0,
        }
        metrics[f"inst_level_{mode}_acc"] = {
            "correct": instruction_correct, "total": instructions,
            "value": instruction_correct / instructions if instructions else 0.0,
        }
    return metrics
