"""Tasks that carry their behaviour: how a task reads its prompts, what grades it, its gate, its
metrics. Each task is one declaration below plus its line in TASKS; `grade`, `canary`, `vendor`
and the bundle's regrade call a task's methods and never ask which task it is.

- A CheckerTask grades with a checker registry (Google's, pinned or the stand-in, or one of ours),
  optionally behind a language Gate (ifaudit.gates); grading itself is ifaudit.grading.
- A JudgedTask grades from an LLM judge's recorded verdicts (ifaudit.infobench).
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ifaudit.errors import IfauditError, InputError
from ifaudit.gates import ArabicHfGate, EnglishGate, Gate, InceptionGate
from ifaudit.metrics import LANGUAGE_CHECK, MetricSpec, ifeval_metrics
from ifaudit.prompts import read_prompts
from ifaudit.records import Prompt

if TYPE_CHECKING:
    from ifaudit.graders import CheckerRegistry
    from ifaudit.judge import JudgeSettings
    from ifaudit.judge_protocol import JudgeProtocol
    from ifaudit.nltk_data import PunktData
    from ifaudit.records import Response

# Checker registries: Google's (the pinned upstream, or the registry stand-in) and our own.
GOOGLE = "google_ifeval"
ARABIC_INCEPTION = "arabic_inception"
ARABIC_HF = "arabic_hf"
INFOBENCH_LABELS = ("Content", "Linguistic", "Style", "Format", "Number")

Record = dict[str, Any]
GradeOne = Callable[["Prompt", "Response"], Record]
Progress = Callable[[Iterable[Any], int], Iterable[Any]]


def _no_progress(items: Iterable[Any], total: int) -> Iterable[Any]:
    return items


@dataclass(frozen=True)
class GradingOptions:
    """What grading may use, parsed once from the command line into types."""

    resources: Path  # the resources/ cache: NLTK data, materialized grader files
    grader: str = "upstream"  # Google's registry: the pinned upstream files or the labelled stand-in
    pin: Path | None = None
    vendor_dir: Path | None = None
    sources: tuple[str, ...] = ()
    offline: bool = False
    nltk_mirror: Path | None = None
    jobs: int = 1
    progress: Progress = _no_progress
    judgements: Path | None = None  # judged tasks: a response file with the verdicts attached
    store: Path | None = None  # judged tasks: the judgement store to replay
    # judged tasks replaying the store: the judge's settings and protocol, made only when needed
    # (the reference protocol materializes its pinned script)
    replay_judge: Callable[[], tuple[JudgeSettings, JudgeProtocol]] | None = None


@dataclass(frozen=True)
class Task(ABC):
    name: str
    description: str
    modes: tuple[str, ...]  # "strict", and "loose" where the task grades loosely
    metrics: tuple[MetricSpec, ...]
    within_run: tuple[tuple[str, str], ...]  # paired comparisons (A, B) between a run's own metrics
    # The committed canary of a task is ifaudit/canaries/<name>.json.

    judged: ClassVar[bool] = False  # graded from a judge's verdicts, not by checkers

    def read_prompts(self, path: Path) -> list[Prompt]:
        """The task's prompt set, read in its own format."""
        return read_prompts(path)

    def uses_pinned_upstream(self, grader: str) -> bool:
        """Does grading with `grader` need the pinned upstream files?"""
        return False

    @abstractmethod
    def prepare(self, options: GradingOptions, record: bool) -> dict[str, Any] | None:
        """Materialize what grading needs; with `record`, the grading environment's fingerprint."""

    @abstractmethod
    def grade(self, options: GradingOptions, prompts: Sequence[Prompt], responses: Sequence[Response]) -> list[Record]:
        """Grade `responses` in the order given: the one entry point of `grade` and the bundle's regrade."""

    @abstractmethod
    def canary_grader(self, options: GradingOptions, responses: Path | None) -> tuple[GradeOne, dict[str, Any]]:
        """How the canary grades one response, and the environment it records."""

    def summary_extras(self, grades: Sequence[Record]) -> dict[str, Any]:
        """What the task adds to a run's summary beyond its metrics."""
        return {}


@dataclass(frozen=True)
class CheckerTask(Task):
    registry: str = GOOGLE
    clean: bool = False  # Inception's cleaning (NFKC, invisible and Cc/Cf characters out) before checking
    gate: Gate | None = None  # the language/repetition gate, if any

    def uses_pinned_upstream(self, grader: str) -> bool:
        from ifaudit.graders import UPSTREAM

        return self.registry == GOOGLE and grader == UPSTREAM

    def load_registry(self, options: GradingOptions) -> CheckerRegistry:
        """The task's registry: Google's (pinned upstream, or the stand-in if asked for) or ours."""
        from ifaudit.graders import load_registry
        from ifaudit.identity import GraderKind
        from ifaudit.pins import default_sources, load_pin

        pin = load_pin(options.pin) if self.registry == GOOGLE and options.pin is not None else None
        sources = []
        if pin is not None and self.uses_pinned_upstream(options.grader):
            sources = default_sources(pin, list(options.sources), offline=options.offline)
        registry = load_registry(self.registry, options.grader, pin, _vendor_dir(options), sources)
        if registry.kind is GraderKind.STAND_IN:
            print(
                f"ifaudit: note: grading with the registry stand-in {registry.name}=={registry.version}, "
                "not the pinned upstream grader; outputs say so",
                file=sys.stderr,
            )
        return registry

    def environment(self, options: GradingOptions) -> tuple[CheckerRegistry, PunktData]:
        from ifaudit.nltk_data import resolve_punkt

        punkt = resolve_punkt(options.resources / "nltk_data", options.nltk_mirror)
        return self.load_registry(options), punkt

    def prepare(self, options: GradingOptions, record: bool) -> dict[str, Any] | None:
        from ifaudit.environment import fingerprint
        from ifaudit.pins import default_sources, load_pin, materialize

        if self.uses_pinned_upstream(options.grader) and options.pin is not None:
            pin = load_pin(options.pin)
            folder = materialize(
                pin, _vendor_dir(options), default_sources(pin, list(options.sources), offline=options.offline)
            )
            print(f"verified {len(pin.files)} files of {pin.name}@{pin.commit} in {folder}", file=sys.stderr)
        return fingerprint(*self.environment(options)) if record else None

    def grade(self, options: GradingOptions, prompts: Sequence[Prompt], responses: Sequence[Response]) -> list[Record]:
        from ifaudit.grading import grade_in_parallel, validate_prompts

        registry, _ = self.environment(options)
        validate_prompts(registry, prompts)
        return grade_in_parallel(registry, self, prompts, responses, options.jobs, progress=options.progress)

    def canary_grader(self, options: GradingOptions, responses: Path | None) -> tuple[GradeOne, dict[str, Any]]:
        from ifaudit.environment import fingerprint
        from ifaudit.grading import grade_response

        registry, punkt = self.environment(options)
        return (lambda prompt, response: grade_response(registry, self, prompt, response)), fingerprint(registry, punkt)


@dataclass(frozen=True)
class JudgedTask(Task):
    judged: ClassVar[bool] = True

    def read_prompts(self, path: Path) -> list[Prompt]:
        from ifaudit.infobench import read_infobench

        return read_infobench(path)

    def prepare(self, options: GradingOptions, record: bool) -> dict[str, Any] | None:
        from ifaudit.environment import judged_fingerprint

        return judged_fingerprint() if record else None

    def grade(self, options: GradingOptions, prompts: Sequence[Prompt], responses: Sequence[Response]) -> list[Record]:
        from ifaudit.infobench import grade_infobench, recorded_verdicts

        replayed = options.judgements is None and options.store is not None and options.replay_judge is not None
        settings, protocol = options.replay_judge() if replayed and options.replay_judge else (None, None)
        verdicts, identity = recorded_verdicts(
            prompts, responses, judgements=options.judgements, store=options.store, settings=settings, protocol=protocol
        )
        return grade_infobench(self.name, identity, prompts, responses, verdicts)

    def canary_grader(self, options: GradingOptions, responses: Path | None) -> tuple[GradeOne, dict[str, Any]]:
        """The imported verdicts of the canary's own response file."""
        from ifaudit.environment import judged_fingerprint
        from ifaudit.infobench import grade_infobench, read_judgement_set

        if responses is None:
            raise IfauditError(f"the {self.name} canary needs --responses with the judge's verdicts")
        verdicts, identity = read_judgement_set(responses)
        return (
            (lambda prompt, response: grade_infobench(self.name, identity, [prompt], [response], verdicts)[0]),
            {**judged_fingerprint(), "grader": identity.as_record()},
        )

    def summary_extras(self, grades: Sequence[Record]) -> dict[str, Any]:
        """How many verdict lists stopped early (the reference protocol) or hold unparsed answers."""
        from ifaudit.infobench import verdict_counts

        return {"verdict_lists": verdict_counts(grades)}


def _vendor_dir(options: GradingOptions) -> Path:
    return options.vendor_dir or options.resources / "vendor" / "google_ifeval"


def _strict_vs_loose() -> tuple[tuple[str, str], ...]:
    return (("prompt_level_loose_acc", "prompt_level_strict_acc"), ("inst_level_loose_acc", "inst_level_strict_acc"))


def _gated_metrics() -> tuple[MetricSpec, ...]:
    """The seed's langcheck tasks: IFEval's four names hold the gated values; the ungated values
    sit beside them, so the gate's effect is visible; and the share passing the gate."""
    return ifeval_metrics(gated=True) + ifeval_metrics(suffix="_ungated") + (LANGUAGE_CHECK,)


def _gated_vs_ungated() -> tuple[tuple[str, str], ...]:
    return (
        ("prompt_level_strict_acc", "prompt_level_strict_ungated_acc"),
        ("inst_level_strict_acc", "inst_level_strict_ungated_acc"),
        ("prompt_level_loose_acc", "prompt_level_loose_ungated_acc"),
        ("inst_level_loose_acc", "inst_level_loose_ungated_acc"),
    )


def _drfr_metrics() -> tuple[MetricSpec, ...]:
    """DRFR (the share of decomposed questions answered YES) overall, by subset and by label, over
    all questions (unasked or unparsed: not satisfied); and, overall and by subset, as InFoBench's
    reference computes it, over the verdicts written. The two differ only where a judge stopped early."""
    overall = (
        MetricSpec("drfr", "strict", "inst", display="DRFR (all questions; unasked or unparsed: not satisfied)"),
        MetricSpec("drfr_easy", "strict", "inst", subset="Easy_set", display="DRFR, Easy set"),
        MetricSpec("drfr_hard", "strict", "inst", subset="Hard_set", display="DRFR, Hard set"),
    )
    labels = tuple(
        MetricSpec(f"drfr_{label.lower()}", "strict", "inst", label=label, display=f"DRFR, {label} questions")
        for label in INFOBENCH_LABELS
    )
    reference = (
        MetricSpec("drfr_reference", "strict", "inst", written_only=True, display="DRFR as the reference computes it"),
        MetricSpec(
            "drfr_reference_easy",
            "strict",
            "inst",
            subset="Easy_set",
            written_only=True,
            display="DRFR as the reference computes it, Easy set",
        ),
        MetricSpec(
            "drfr_reference_hard",
            "strict",
            "inst",
            subset="Hard_set",
            written_only=True,
            display="DRFR as the reference computes it, Hard set",
        ),
    )
    return overall + labels + reference


IFEVAL = CheckerTask(
    name="ifeval",
    description="Google's IFEval, graded by the pinned upstream grader, strict and loose",
    registry=GOOGLE,
    modes=("strict", "loose"),
    metrics=ifeval_metrics(),
    within_run=_strict_vs_loose(),
)
IFEVAL_LANGCHECK = CheckerTask(
    name="ifeval_langcheck",
    description="IFEval with the English language and repetition gate (seed §1)",
    registry=GOOGLE,
    modes=("strict", "loose"),
    gate=EnglishGate(),
    metrics=_gated_metrics(),
    within_run=_gated_vs_ungated(),
)
ARABIC_HF_TASK = CheckerTask(
    name="ifeval_arabic_inception_hf",
    description="Arabic IFEval from the Hugging Face copy: 25 checkers (spec §9), strict and loose, no gate",
    registry=ARABIC_HF,
    modes=("strict", "loose"),
    metrics=ifeval_metrics(),
    within_run=_strict_vs_loose(),
)
ARABIC_HF_LANGCHECK = CheckerTask(
    name="ifeval_arabic_inception_hf_langcheck",
    description="Arabic IFEval (Hugging Face copy) with the Arabic script, repetition and 7 % English gate (seed §2)",
    registry=ARABIC_HF,
    modes=("strict", "loose"),
    gate=ArabicHfGate(),
    metrics=_gated_metrics(),
    within_run=_gated_vs_ungated(),
)
ARABIC_INCEPTION_TASK = CheckerTask(
    name="ifeval_arabic_inception",
    description="Inception's Arabic IFEval: 31 checkers on cleaned text, per-prompt language gate, strict only",
    registry=ARABIC_INCEPTION,
    modes=("strict",),
    clean=True,
    gate=InceptionGate(),
    metrics=(
        MetricSpec("prompt_level_strict_acc", "strict", "prompt"),
        MetricSpec("inst_level_strict_acc", "strict", "inst"),
        MetricSpec("prompt_level_strict_langcheck_acc", "strict", "prompt", gated=True),
        MetricSpec("inst_level_strict_langcheck_acc", "strict", "inst", gated=True),
        LANGUAGE_CHECK,
    ),
    within_run=(
        ("prompt_level_strict_langcheck_acc", "prompt_level_strict_acc"),
        ("inst_level_strict_langcheck_acc", "inst_level_strict_acc"),
    ),
)
INFOBENCH = JudgedTask(
    name="infobench",
    description="InFoBench: decomposed yes/no questions judged by a recorded LLM judge (DRFR)",
    modes=("strict",),
    metrics=_drfr_metrics(),
    within_run=(("drfr_easy", "drfr_hard"), ("drfr_reference", "drfr")),
)

# The registry: adding a task is one declaration above and one line here.
TASKS: dict[str, Task] = {
    task.name: task
    for task in (
        IFEVAL,
        IFEVAL_LANGCHECK,
        ARABIC_HF_TASK,
        ARABIC_HF_LANGCHECK,
        ARABIC_INCEPTION_TASK,
        INFOBENCH,
    )
}


def read_task_prompts(task: Task, path: Path) -> list[Prompt]:
    """The task's prompt set, read in its own format (IFEval JSONL, or InFoBench's)."""
    return task.read_prompts(path)


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise InputError(f"unknown task {name!r}; known: {', '.join(sorted(TASKS))}", field="task") from None


DEFAULT_TASK = IFEVAL.name  # what a subcommand grades when --task is not given
DEFAULT_JUDGED_TASK = INFOBENCH.name  # the same, for the judge
