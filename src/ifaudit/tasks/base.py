"""The kinds of task, each carrying its behaviour: how a task reads its prompts, what grades it,
its gate, its metrics. `grade`, `canary`, `vendor` and the bundle's regrade call a task's methods
and never ask which task it is; the tasks themselves are declared one module each
(ifaudit.tasks.ifeval, ifaudit.tasks.arabic, ifaudit.tasks.infobench, ifaudit.tasks.ifbench) and listed in
ifaudit.tasks.registry.

- A CheckerTask grades with a checker registry (Google's, pinned or the stand-in, or one of ours),
  optionally behind a language Gate (ifaudit.checkers.gates); grading itself is ifaudit.tasks.grading.
- A JudgedTask grades from an LLM judge's recorded verdicts (ifaudit.judging.infobench).
"""

from __future__ import annotations

import dataclasses

import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ifaudit.core.errors import IfauditError
from ifaudit.checkers.gates import Gate
from ifaudit.core.identity import GraderIdentity, GraderKind
from ifaudit.core.metrics import MetricSpec
from ifaudit.io.prompts import read_prompts
from ifaudit.core.records import Prompt
from ifaudit.tasks.credit import GOOGLE_IFEVAL, GraderCredit, UpstreamGrader, grader_credit

if TYPE_CHECKING:
    from ifaudit.io.remote.pins import Pin
    from ifaudit.tasks.graders import CheckerRegistry
    from ifaudit.judging.judge import JudgeSettings
    from ifaudit.judging.judge_protocol import JudgeProtocol
    from ifaudit.io.remote.nltk_data import PunktData
    from ifaudit.core.records import Response

# Checker registries: Google's (the pinned upstream, or the registry stand-in) and our own.
GOOGLE = "google_ifeval"
ARABIC_INCEPTION = "arabic_inception"
ARABIC_HF = "arabic_hf"

Record = dict[str, Any]
GradeOne = Callable[["Prompt", "Response"], Record]
Progress = Callable[[Iterable[Any], int], Iterable[Any]]


def _no_progress(items: Iterable[Any], total: int) -> Iterable[Any]:
    return items


@dataclass(frozen=True)
class PinnedGrader:
    """The pinned upstream grader files a task grades with: what an artifact bundle carries of it."""

    pin_file: str  # relative to the project (a checkout, or a bundle's project/)
    version: str | None  # the pin's version the task grades with (None: its only one, or its default)
    vendor: str  # the folder below resources/vendor/ its files are materialized in (<vendor>/<commit>/)


@dataclass(frozen=True)
class NltkFiles:
    """The NLTK data a task's checkers read, as an artifact bundle carries it: each file's bytes
    by its path below an NLTK data folder (which a grading process can be pointed at as its NLTK
    mirror), checked as grading checks them, and what BUNDLE.json says of them."""

    files: dict[str, bytes]
    described: dict[str, object]


class Grading(ABC):
    """A task's grading, loaded in this process (registry, NLTK data, or recorded verdicts)."""

    @abstractmethod
    def grade(self, prompts: Sequence[Prompt], responses: Sequence[Response]) -> list[Record]:
        """Grade `responses` in the order given: the one entry point of `grade` and the bundle's regrade."""

    @abstractmethod
    def canary_grader(self, responses: Path | None) -> tuple[GradeOne, dict[str, Any]]:
        """How the canary grades one response, and the environment it records (`responses`: the
        canary's own response file, where it names one)."""

    @property
    def checkers(self) -> CheckerRegistry | None:
        """The checker registry grading builds instructions from; None for a judged task."""
        return None

    def with_options(self, options: GradingOptions) -> Grading:
        """This grading, loaded once, with another run's process-local options (its progress bar):
        how a process that grades many runs grades the next. A task's grading is a dataclass whose
        `options` field holds them."""
        return dataclasses.replace(self, options=options)  # type: ignore[type-var]


@dataclass(frozen=True)
class GradingOptions:
    """What grading may use, parsed once from the command line into types."""

    resources: Path  # the resources/ cache: NLTK data, materialized grader files
    grader: str = "upstream"  # Google's registry: the pinned upstream files or the labelled stand-in
    pin: Path | None = None
    grader_version: str | None = None  # which version of a pin that holds several (IFBench's commits)
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
    # The benchmark, as a reader names it ("IFEval", "IFBench"): what CITATION.cff's keywords list.
    benchmark: str = ""
    # The metric the benchmark is quoted by (ranked by, given with its interval first); its first if unset.
    headline: str = ""
    # The committed canary of a task is ifaudit/tasks/canaries/<name>.json.

    judged: ClassVar[bool] = False  # graded from a judge's verdicts, not by checkers
    # The pin of the task's upstream grader, relative to the project (Google's unless a task has its own).
    pin_file: ClassVar[str] = "vendor/google_ifeval/pin.toml"
    # The prompt counts of the benchmark's data versions, each named, where it has several: a
    # claim's denominator tells which one it used (IFBench's k/294 and k/300).
    data_versions: ClassVar[tuple[tuple[int, str], ...]] = ()

    def read_prompts(self, path: Path) -> list[Prompt]:
        """The task's prompt set, read in its own format."""
        return read_prompts(path)

    def refusal(self) -> str | None:
        """Why the task cannot grade here at all (a resource no pin can hold yet), in one line;
        None when it can. A run of it is refused when the config is checked, and grading refuses."""
        return None

    @property
    def headline_metric(self) -> str:
        """The name of the metric the benchmark is quoted by: the leaderboard ranks by it, the
        headline line gives its interval."""
        return self.headline or self.metrics[0].name

    def grader_kinds(self) -> tuple[GraderKind, ...]:
        """The kinds of grader whose grades a run of the task can hold."""
        return ()

    def upstream_grader(self) -> UpstreamGrader | None:
        """The task's pinned upstream grader (a judged task's: the pinned script its judge is asked
        by), as outputs credit it; None where there is none."""
        return None

    def credit(self, grader: GraderIdentity) -> GraderCredit:
        """What graded a run of this task whose grades record `grader`, as outputs credit it; a
        grader the task cannot have (another task's pin) is refused."""
        return grader_credit(self.name, self.benchmark, self.grader_kinds(), self.upstream_grader(), grader)

    def uses_pinned_upstream(self, grader: str) -> bool:
        """Does grading with `grader` need the pinned upstream files?"""
        return False

    def pinned_grader(self, grader: str) -> PinnedGrader | None:
        """The pinned upstream grader files grading with `grader` reads; None when it reads none."""
        return None

    def nltk_files(self, options: GradingOptions) -> NltkFiles | None:
        """The NLTK data grading read, from where grading found it (`options.resources`, the
        NLTK mirror); None for a task that reads none."""
        return None

    @abstractmethod
    def prepare(self, options: GradingOptions, record: bool) -> dict[str, Any] | None:
        """Materialize what grading needs; with `record`, the grading environment's fingerprint."""

    @abstractmethod
    def load(self, options: GradingOptions) -> Grading:
        """The grading of one process, loaded once: `grade` grades the run's responses and the
        canary's with it, so the canary certifies the very process whose grades count."""

    def summary_extras(self, grades: Sequence[Record]) -> dict[str, Any]:
        """What the task adds to a run's summary beyond its metrics."""
        return {}


@dataclass(frozen=True)
class CheckerTask(Task):
    registry: str = GOOGLE
    clean: bool = False  # Inception's cleaning (NFKC, invisible and Cc/Cf characters out) before checking
    gate: Gate | None = None  # the language/repetition gate, if any

    def uses_pinned_upstream(self, grader: str) -> bool:
        from ifaudit.tasks.graders import UPSTREAM

        return self.registry == GOOGLE and grader == UPSTREAM

    def pinned_grader(self, grader: str) -> PinnedGrader | None:
        return PinnedGrader(self.pin_file, None, self.registry) if self.uses_pinned_upstream(grader) else None

    def grader_kinds(self) -> tuple[GraderKind, ...]:
        return (GraderKind.UPSTREAM, GraderKind.STAND_IN) if self.registry == GOOGLE else (GraderKind.OWN,)

    def upstream_grader(self) -> UpstreamGrader | None:
        return GOOGLE_IFEVAL if self.registry == GOOGLE else None

    def nltk_files(self, options: GradingOptions) -> NltkFiles | None:
        """The English punkt_tab files the checkers split sentences with, as grading resolved them."""
        from ifaudit.io.remote.nltk_data import resolve_punkt

        punkt = resolve_punkt(options.resources / "nltk_data", options.nltk_mirror, allow_download=False)
        return NltkFiles({name: (punkt.root / name).read_bytes() for name in punkt.sha256}, punkt.describe())

    def other_graders(self, options: GradingOptions) -> tuple[CheckerRegistry, ...]:
        """The other pinned versions of the task's grader, whose verdicts a harness's may be
        (the claims audit's `grader_version` cause); none unless the task's pin holds several."""
        return ()

    def load_registry(self, options: GradingOptions) -> CheckerRegistry:
        """The task's registry: Google's (pinned upstream, or the stand-in if asked for) or ours."""
        from ifaudit.tasks.graders import load_registry
        from ifaudit.io.remote.pins import default_sources, load_pin

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
        from ifaudit.io.remote.nltk_data import resolve_punkt

        punkt = resolve_punkt(options.resources / "nltk_data", options.nltk_mirror)
        return self.load_registry(options), punkt

    def prepare(self, options: GradingOptions, record: bool) -> dict[str, Any] | None:
        from ifaudit.tasks.environment import fingerprint
        from ifaudit.io.remote.pins import default_sources, load_pin, materialize

        if self.uses_pinned_upstream(options.grader) and options.pin is not None:
            pin = load_pin(options.pin)
            folder = materialize(
                pin, _vendor_dir(options), default_sources(pin, list(options.sources), offline=options.offline)
            )
            print(f"verified {len(pin.files)} files of {pin.name}@{pin.commit} in {folder}", file=sys.stderr)
        return fingerprint(*self.environment(options)) if record else None

    def load(self, options: GradingOptions) -> Grading:
        return CheckerGrading(self, options, *self.environment(options))


@dataclass(frozen=True)
class CheckerGrading(Grading):
    task: CheckerTask
    options: GradingOptions
    registry: CheckerRegistry
    punkt: PunktData

    @property
    def checkers(self) -> CheckerRegistry:
        return self.registry

    def grade(self, prompts: Sequence[Prompt], responses: Sequence[Response]) -> list[Record]:
        from ifaudit.tasks.grading import grade_in_parallel, validate_prompts

        validate_prompts(self.registry, prompts)
        return grade_in_parallel(
            self.registry, self.task, prompts, responses, self.options.jobs, progress=self.options.progress
        )

    def canary_grader(self, responses: Path | None) -> tuple[GradeOne, dict[str, Any]]:
        from ifaudit.tasks.environment import fingerprint
        from ifaudit.tasks.grading import grade_response

        registry, task = self.registry, self.task
        return (lambda prompt, response: grade_response(registry, task, prompt, response)), fingerprint(
            registry, self.punkt
        )


@dataclass(frozen=True)
class JudgedTask(Task):
    judged: ClassVar[bool] = True
    reference: UpstreamGrader | None = None  # the pinned script the judge's reference protocol reads

    def grader_kinds(self) -> tuple[GraderKind, ...]:
        return (GraderKind.JUDGE, GraderKind.IMPORTED)

    def upstream_grader(self) -> UpstreamGrader | None:
        return self.reference

    def read_prompts(self, path: Path) -> list[Prompt]:
        from ifaudit.judging.infobench import read_infobench

        return read_infobench(path)

    def prepare(self, options: GradingOptions, record: bool) -> dict[str, Any] | None:
        from ifaudit.tasks.environment import judged_fingerprint

        return judged_fingerprint() if record else None

    def load(self, options: GradingOptions) -> Grading:
        return JudgedGrading(self, options)

    def summary_extras(self, grades: Sequence[Record]) -> dict[str, Any]:
        """How many verdict lists stopped early (the reference protocol) or hold unparsed answers."""
        from ifaudit.judging.infobench import verdict_counts

        return {"verdict_lists": verdict_counts(grades)}


@dataclass(frozen=True)
class JudgedGrading(Grading):
    """Nothing to load: the verdicts are read where they are needed."""

    task: JudgedTask
    options: GradingOptions

    def grade(self, prompts: Sequence[Prompt], responses: Sequence[Response]) -> list[Record]:
        from ifaudit.judging.infobench import grade_infobench, recorded_verdicts

        options = self.options
        replayed = options.judgements is None and options.store is not None and options.replay_judge is not None
        settings, protocol = options.replay_judge() if replayed and options.replay_judge else (None, None)
        verdicts, identity = recorded_verdicts(
            prompts, responses, judgements=options.judgements, store=options.store, settings=settings, protocol=protocol
        )
        return grade_infobench(self.task.name, identity, prompts, responses, verdicts)

    def canary_grader(self, responses: Path | None) -> tuple[GradeOne, dict[str, Any]]:
        """The imported verdicts of the canary's own response file."""
        from ifaudit.tasks.environment import judged_fingerprint
        from ifaudit.judging.infobench import grade_infobench, read_judgement_set

        if responses is None:
            raise IfauditError(f"the {self.task.name} canary needs its response file with the judge's verdicts")
        verdicts, identity = read_judgement_set(responses)
        name = self.task.name
        return (
            (lambda prompt, response: grade_infobench(name, identity, [prompt], [response], verdicts)[0]),
            {**judged_fingerprint(), "grader": identity.as_record()},
        )


def upstream_pin_file(task: Task, options: GradingOptions, grader: str, pin_file: str) -> Path:
    """The pin file of a task graded by its pinned upstream grader only (IFBench's, M-IFEval's):
    the registry stand-in and a missing pin are refused, naming `grader` ("IFBench's grader")."""
    from ifaudit.core.errors import InputError
    from ifaudit.tasks.graders import UPSTREAM

    if options.grader != UPSTREAM:
        raise InputError(
            f"task {task.name} has no registry stand-in: it grades with the pinned upstream grader only",
            field="grader",
        )
    if options.pin is None:
        raise InputError(f"{grader} needs its pin file", field="pin", hint=f"--pin {pin_file}")
    return options.pin


def named_pin(task: Task, path: Path, version: str | None, name: str, grader: str) -> Pin:
    """The pin at `path` (its `version`), refused unless it pins `name`: another grader's pin."""
    from ifaudit.core.errors import InputError
    from ifaudit.io.remote.pins import load_pin

    pin = load_pin(path, version)
    if pin.name != name:
        raise InputError(f"pins {pin.name}, not {name}: task {task.name} grades with {grader}", path=path, field="name")
    return pin


def _vendor_dir(options: GradingOptions) -> Path:
    return options.vendor_dir or options.resources / "vendor" / "google_ifeval"
