"""What a prompt set and a grader do that a score's reader must be told, computed from the data.

- Substituted settings: kwargs the grader does not use as given but replaces with a draw of its
  own (IFEval's letter_frequency counts a random letter when asked for `#` or `!`). Found by
  building every instruction, seeded as in grading, and comparing what the checker holds with
  what the prompt set says.
- Text that contradicts settings: a prompt whose text states a number of placeholders other than
  the one its kwargs hold (prompt 2785 in the Hugging Face copy); the grader reads the kwargs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ifaudit.core.errors import VerificationError

if TYPE_CHECKING:  # combine-audits, a small job, starts without the grading machinery
    from ifaudit.core.records import Prompt
    from ifaudit.tasks.base import Grading
    from ifaudit.tasks.graders import CheckerRegistry

_NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_PLACEHOLDERS = re.compile(r"at least (\w+) placeholders?", re.IGNORECASE)


def _normalized(value: Any) -> Any:
    """Checkers store some settings in a canonical form (keyword lists sorted, text stripped)."""
    if isinstance(value, str):
        return value.strip().lower()
    if isinstance(value, list | tuple):
        return sorted(_normalized(item) for item in value)
    return value


def substituted_settings(registry: CheckerRegistry, prompts: Sequence[Prompt]) -> list[dict[str, Any]]:
    from ifaudit.tasks.grading import build_instruction, reset_randomness

    found = []
    for prompt in prompts:
        for index, instruction_id in enumerate(prompt.instruction_id_list):
            reset_randomness()
            used = build_instruction(registry, prompt, index).get_instruction_args() or {}
            for name, given in sorted(prompt.kwargs[index].items()):
                if name in used and _normalized(used[name]) != _normalized(given):
                    found.append(
                        {
                            "key": prompt.key,
                            "index": index,
                            "instruction_id": instruction_id,
                            "setting": name,
                            "given": given,
                            "used": used[name],
                        }
                    )
    return found


def text_contradicts_settings(prompts: Sequence[Prompt]) -> list[dict[str, Any]]:
    found = []
    for prompt in prompts:
        for index, instruction_id in enumerate(prompt.instruction_id_list):
            if instruction_id != "detectable_content:number_placeholders":
                continue
            match = _PLACEHOLDERS.search(prompt.prompt)
            if not match:
                continue
            word = match.group(1).lower()
            stated = int(word) if word.isdigit() else _NUMBER_WORDS.get(word)
            setting = prompt.kwargs[index].get("num_placeholders")
            if stated is not None and setting is not None and stated != setting:
                found.append(
                    {
                        "key": prompt.key,
                        "index": index,
                        "instruction_id": instruction_id,
                        "text": match.group(0),
                        "stated": stated,
                        "setting": setting,
                        "graded_against": "setting",
                    }
                )
    return found


def audit_prompts(registry: CheckerRegistry, prompts: Sequence[Prompt]) -> dict[str, Any]:
    return {
        "grader": registry.identity().as_record(),
        "prompts": len(prompts),
        "substituted_settings": substituted_settings(registry, prompts),
        "text_contradicts_settings": text_contradicts_settings(prompts),
    }


def grading_audit(task: str, grading: Grading, prompts: Sequence[Prompt]) -> dict[str, Any]:
    """The audit a grading process writes of its prompt set, with the registry it grades with
    (about 10 ms, where a process of its own spent ~0.5 s loading the grader again)."""
    if grading.checkers is None:
        return {"task": task, "prompts": len(prompts), "audited": False, "why": "graded by a judge, not by checkers"}
    return audit_prompts(grading.checkers, prompts)


def combine_audits(audits: dict[str, bytes]) -> bytes:
    """One prompt set's audit from those its grading processes wrote, which must be identical
    (the same registry and prompts, seeded alike, in processes with different hash seeds)."""
    (first_path, first), *rest = sorted(audits.items())
    for path, data in rest:
        if data != first:
            raise VerificationError(f"prompt audits differ: {first_path} and {path}; the grading processes disagree")
    return first
