"""How the InFoBench judge is asked: the message layout, the request, the answer parsing, and
whether a conversation stops after an unparsable answer.

- `reference` (the default): InFoBench's own `evaluation.py`, pinned by commit and sha256
  (vendor/infobench/pin.toml). Its judge instruction SYS_MSG is read from the pinned file by
  parsing it (ast), never by running it; the layout, the request (model, messages, temperature;
  no max_tokens), the parsing (no stripping: " Yes" is unparsable) and the early stop are the
  reference's, byte for byte. After an unparsable answer the reference writes `None` and asks
  nothing more, so its verdict list is shorter than the question list; the questions not asked
  are recorded as such.
- `ifaudit`: ifaudit's own instruction text, max_tokens sent, answers stripped before parsing,
  and every question asked even after an unparsable answer.

Both keep one growing conversation per response: each question goes after the earlier
questions and the judge's answers.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ifaudit.io.canonical import sha256_file
from ifaudit.core.errors import InputError
from ifaudit.core.identity import GraderIdentity
from ifaudit.judging.judge import JudgeError, JudgeSettings
from ifaudit.io.remote.pins import Pin, materialize
from ifaudit.io.remote.sources import Source

REFERENCE = "reference"
IFAUDIT = "ifaudit"
PROTOCOLS = (REFERENCE, IFAUDIT)
REFERENCE_FILE = "evaluation.py"


class JudgeProtocol(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def stops_after_unparsed(self) -> bool: ...

    def first_message(self, task_input: str, generated: str, question: str) -> str: ...

    def next_message(self, question: str) -> str: ...

    def request(self, settings: JudgeSettings, messages: list[dict[str, str]]) -> dict[str, Any]: ...

    def parse(self, answer: str) -> bool | None: ...

    def identity(self) -> dict[str, Any]: ...


def read_sys_msg(path: Path) -> str:
    """The string literal assigned to SYS_MSG at the top level of `path`, found by parsing the
    file: nothing in it runs."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except SyntaxError as exc:
        raise InputError(f"not Python: {exc.msg}", path=path, line=exc.lineno) from None
    found = [
        node
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(target, ast.Name) and target.id == "SYS_MSG" for target in node.targets)
    ]
    if len(found) != 1:
        raise InputError(f"expected one top-level SYS_MSG assignment, found {len(found)}", path=path, field="SYS_MSG")
    value = found[0].value
    if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
        raise InputError("SYS_MSG is not a string literal", path=path, line=found[0].lineno, field="SYS_MSG")
    return value.value


@dataclass(frozen=True)
class ReferenceText:
    """The pinned reference script's judge instruction and where it came from."""

    sys_msg: str
    repository: str
    version: str
    commit: str
    path: str
    sha256: str

    def identity(self) -> dict[str, str]:
        return {
            "repository": self.repository,
            "version": self.version,
            "commit": self.commit,
            "path": self.path,
            "sha256": self.sha256,
        }


def load_reference(pin: Pin, cache_root: Path, sources: list[Source]) -> ReferenceText:
    """Materialize (or re-verify) the pinned evaluation.py and read its SYS_MSG."""
    folder = materialize(pin, cache_root, sources)
    (pinned,) = [f for f in pin.files if f.path == REFERENCE_FILE]
    path = folder / pinned.path
    return ReferenceText(
        sys_msg=read_sys_msg(path),
        repository=pin.repository,
        version=pin.version,
        commit=pin.commit,
        path=pinned.path,
        sha256=sha256_file(path),
    )


def reference_parse(answer: str) -> bool | None:
    """The reference's parsing, exactly: a lower-cased answer starting with yes or no decides (no
    stripping); otherwise YES without NO, or NO without YES; otherwise unparsable (None)."""
    return _yes_or_no(answer.lower(), answer)


def _yes_or_no(start: str, answer: str) -> bool | None:
    """The rules both protocols read an answer by: `start` (the lower-cased answer, stripped or
    not) beginning with yes or no decides; otherwise a YES without a NO in `answer`, or a NO
    without a YES; otherwise unparsable (None)."""
    if start.startswith("yes"):
        return True
    if start.startswith("no"):
        return False
    if "YES" in answer and "NO" not in answer:
        return True
    if "NO" in answer and "YES" not in answer:
        return False
    return None


@dataclass(frozen=True)
class ReferenceProtocol:
    reference: ReferenceText
    name: str = REFERENCE
    stops_after_unparsed: bool = True

    def first_message(self, task_input: str, generated: str, question: str) -> str:
        if task_input:
            return (
                f'{self.reference.sys_msg}\n\nInput:\n"{task_input}"\n\nGenerated Text:\n"{generated}"\n\n'
                f"Question:\n{question}\n"
            )
        return f'{self.reference.sys_msg}\n\nGenerated Text:\n"{generated}"\n\nQuestion:\n{question}\n'

    def next_message(self, question: str) -> str:
        return f"{question}\n"

    def request(self, settings: JudgeSettings, messages: list[dict[str, str]]) -> dict[str, Any]:
        # The reference passes temperature=0, which its client sends as the JSON integer 0.
        temperature = settings.temperature
        sent = int(temperature) if float(temperature).is_integer() else temperature
        return {"model": settings.model, "messages": messages, "temperature": sent}

    def parse(self, answer: str) -> bool | None:
        return reference_parse(answer)

    def identity(self) -> dict[str, Any]:
        return {"name": self.name, "reference": self.reference.identity()}


RULES = (
    "You check whether a generated text meets one requirement at a time. Answer each question with YES or NO. "
    "Answer YES only if the generated text meets the requirement completely: even a small failure means NO. "
    "Answer NO as well when the generated text gives nothing that would let the requirement be checked."
)


def ifaudit_parse(answer: str) -> bool | None:
    """The reference's rules, but on the stripped answer: a leading space or newline does not make
    it unparsed."""
    return _yes_or_no(answer.strip().lower(), answer)


@dataclass(frozen=True)
class IfauditProtocol:
    name: str = IFAUDIT
    stops_after_unparsed: bool = False

    def first_message(self, task_input: str, generated: str, question: str) -> str:
        parts = [RULES]
        if task_input.strip():
            parts.append(f'Input:\n"{task_input}"')
        parts += [f'Generated Text:\n"{generated}"', f"Question:\n{question}"]
        return "\n\n".join(parts) + "\n"

    def next_message(self, question: str) -> str:
        return question + "\n"

    def request(self, settings: JudgeSettings, messages: list[dict[str, str]]) -> dict[str, Any]:
        return {
            "model": settings.model,
            "temperature": settings.temperature,
            "max_tokens": settings.max_tokens,
            "messages": messages,
        }

    def parse(self, answer: str) -> bool | None:
        return ifaudit_parse(answer)

    def identity(self) -> dict[str, Any]:
        return {"name": self.name}


def conversation(
    ask: Callable[[dict[str, Any]], str],
    settings: JudgeSettings,
    protocol: JudgeProtocol,
    task_input: str,
    generated: str,
    questions: Sequence[str],
) -> list[str]:
    """The questions in one growing conversation; the raw answers in order. Under a protocol that
    stops after an unparsable answer, the list ends with that answer."""
    messages: list[dict[str, str]] = []
    answers = []
    for index, question in enumerate(questions):
        content = (
            protocol.first_message(task_input, generated, question) if index == 0 else protocol.next_message(question)
        )
        messages.append({"role": "user", "content": content})
        answer = ask(protocol.request(settings, [dict(m) for m in messages]))
        if not isinstance(answer, str):
            raise JudgeError(f"the judge answered {type(answer).__name__}, not text, to question {index + 1}")
        messages.append({"role": "assistant", "content": answer})
        answers.append(answer)
        if protocol.stops_after_unparsed and protocol.parse(answer) is None:
            break
    return answers


def judge_identity(settings: JudgeSettings, protocol: JudgeProtocol) -> GraderIdentity:
    """What a grade made with this judge records (no endpoint secrets, no key)."""
    sent = f"temperature={settings.temperature}" + (
        f",max_tokens={settings.max_tokens}" if "max_tokens" in protocol.request(settings, []) else ""
    )
    return GraderIdentity.judge(settings.model, f"protocol={protocol.name},{sent}", protocol.identity())


def choose_protocol(name: str, pin: Pin, cache_root: Path, sources: list[Source]) -> JudgeProtocol:
    """A protocol by its name; the reference's reads the pinned evaluation.py (materialized and
    verified under `cache_root`), ifaudit's needs nothing."""
    if name == REFERENCE:
        return ReferenceProtocol(load_reference(pin, cache_root, sources))
    if name == IFAUDIT:
        return IfauditProtocol()
    raise InputError(f"unknown judging protocol {name!r}; known: {', '.join(PROTOCOLS)}", field="protocol")
