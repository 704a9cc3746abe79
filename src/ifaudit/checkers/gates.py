"""Language and repetition gates as small classes behind a registry: a task holds a gate object
and asks it for a verdict; nothing outside the task declarations names a gate.

The gates' rules (with regex and numpy) are imported by the first verdict:
every command knows the tasks, few grade."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from ifaudit.checkers.verdict import GateVerdict
    from ifaudit.core.records import Prompt


class Gate(ABC):
    name: ClassVar[str]

    @abstractmethod
    def verdict(self, prompt: Prompt, text: str) -> GateVerdict:
        """Does the (stripped, and where the task cleans, cleaned) answer pass the gate?"""


class EnglishGate(Gate):
    """ifeval_langcheck (seed §1): no Arabic punctuation, ASCII-letter words, no degenerate repetition."""

    name = "english"

    def verdict(self, prompt: Prompt, text: str) -> GateVerdict:
        from ifaudit.checkers.english_gate import english_gate

        return english_gate(text)


class ArabicHfGate(Gate):
    """The Hugging Face Arabic variant (seed §2): script, stricter repetition, the 7 % English cap."""

    name = "arabic_hf"

    def verdict(self, prompt: Prompt, text: str) -> GateVerdict:
        from ifaudit.checkers.arabic_hf_gate import arabic_hf_gate

        return arabic_hf_gate(text, prompt.instruction_id_list, prompt.prompt)


class InceptionGate(Gate):
    """Inception's per-prompt gate: the prompt's `lang` decides the language rule."""

    name = "inception"

    def verdict(self, prompt: Prompt, text: str) -> GateVerdict:
        from ifaudit.checkers.inception_gate import inception_gate

        return inception_gate(text, prompt.lang)


GATES: dict[str, type[Gate]] = {gate.name: gate for gate in (EnglishGate, ArabicHfGate, InceptionGate)}
