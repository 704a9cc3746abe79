"""IFBench (AllenAI, "Generalizing Verifiable Instruction Following", 2025): 58 out-of-distribution
constraints in IFEval's format, graded by AllenAI's pinned upstream grader (docs/ifbench.md).

Prompts and responses are keyed as IFEval's (the sample outputs by prompt text); the metrics are
IFEval's four, prompt-level loose being the benchmark's headline. The grader is pinned at two
commits (vendor/allenai_ifbench/pin.toml), chosen per run: c6767a1 (default; upstream's committed
verdicts and the paper-era figures) and db69a6f (the newest seen). Grading is the one driver's
(ifaudit.tasks.grading): `random` seeded before each response's strict grading and again before
its loose grading, strict then loose over the same kwargs dicts (their `None` values dropped when
read, as upstream's strict pass drops them in place for both passes). The NLTK resources the
checkers read are pinned here by sha256; the grader's network calls are neutralized in
ifaudit.tasks.ifbench_grader. There is no registry stand-in.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ifaudit.core.errors import InputError
from ifaudit.core.metrics import MetricSpec, ifeval_metrics
from ifaudit.io.remote.nltk_resources import NltkFile, NltkResource, perceptron_json
from ifaudit.core.identity import GraderKind
from ifaudit.tasks.base import (
    CheckerGrading,
    CheckerTask,
    Grading,
    GradingOptions,
    NltkFiles,
    PinnedGrader,
    named_pin,
    upstream_pin_file,
)
from ifaudit.tasks.credit import UpstreamGrader
from ifaudit.tasks.ifeval import strict_vs_loose

if TYPE_CHECKING:
    from ifaudit.io.remote.nltk_resources import NltkData
    from ifaudit.io.remote.pins import Pin
    from ifaudit.tasks.graders import CheckerRegistry

IFBENCH_PIN = "vendor/allenai_ifbench/pin.toml"
PIN_NAME = "allenai/IFBench"
REGISTRY = "allenai_ifbench"
PIN_VERSIONS = ("c6767a1", "db69a6f")  # the versions vendor/allenai_ifbench/pin.toml holds
ALLENAI_IFBENCH = UpstreamGrader(
    "AllenAI's IFBench grader", PIN_NAME, "https://github.com/allenai/IFBench", IFBENCH_PIN
)
NLTK_FOLDER = "nltk_data_pinned"  # below resources/: the pinned NLTK resources, materialized

_PUNKT = "tokenizers/punkt_tab"
_STOPWORDS = "corpora/stopwords"
_TAGGER = "taggers/averaged_perceptron_tagger_eng"
# The NLTK resources IFBench's checkers read, pinned (../shared/data/nltk/PROVENANCE.md): punkt_tab
# (sentence and word splitting), the 198-word English stop-word list (`count_stopwords`), and the
# 2015 English POS tagger (`words:start_verb`), as nltk >= 3.9's JSON made from its pinned pickle.
NLTK_RESOURCES = (
    NltkResource(
        _PUNKT,
        (
            NltkFile(f"{_PUNKT}/README", "d3251cae66a9359bd68c039e3a46172a05ca9df0b27dcdfa23ae594d68d27ec4", 8574),
            NltkFile(
                f"{_PUNKT}/english/abbrev_types.txt",
                "92a3e070f43d9b4c5534758ca40ad7343b04e7e29bfe0c2eb658a39445a4f779",
                619,
            ),
            NltkFile(
                f"{_PUNKT}/english/collocations.tab",
                "8e2da1225e4dd2cc9dba261ee231ccb134859e21b46006e7f472c5ee269af0cf",
                594,
            ),
            NltkFile(
                f"{_PUNKT}/english/ortho_context.tab",
                "4bbcca25ed3d3f06c02402abf8419b9f033b8adc06e7b482eca4e45f81a5dc4c",
                236303,
            ),
            NltkFile(
                f"{_PUNKT}/english/sent_starters.txt",
                "f3f8535483e1dba487241b764945168123bca3209a9645e59acd1225dc76edac",
                241,
            ),
        ),
    ),
    NltkResource(
        _STOPWORDS,
        (
            NltkFile(f"{_STOPWORDS}/README", "e0365fde880eadb522f844cba2774529969b66b7406db7643cf260dcd77d6541", 909),
            NltkFile(f"{_STOPWORDS}/english", "f6d005956f407dbc6ea32e5ff0c7e8e6f71488d3239b9023efdc7fc139d6375b", 1048),
        ),
    ),
    NltkResource(
        _TAGGER,
        (
            NltkFile(
                f"{_TAGGER}/averaged_perceptron_tagger_eng.classes.json",
                "7a87ba804751f4719b2d8e0e7693955761c579526b20a1b68ffc365b412e7f10",
                285,
            ),
            NltkFile(
                f"{_TAGGER}/averaged_perceptron_tagger_eng.tagdict.json",
                "4c713731cb06727736962bc8cd94ad919217a040e76691059af99bc0c2c9c246",
                25788,
            ),
            NltkFile(
                f"{_TAGGER}/averaged_perceptron_tagger_eng.weights.json",
                "789e8e35f6fac656d9b7eccea29ba4e8a137cbb5b525dd31f39e4291a9e80832",
                5677744,
            ),
        ),
        source=NltkFile(
            "packages/taggers/averaged_perceptron_tagger.zip",
            "e1f13cf2532daadfd6f3bc481a49859f0b8ea6432ccdcd83e6a49a5f19008de9",
            2526731,
        ),
        convert=perceptron_json,
    ),
)


def nltk_sources(options: GradingOptions) -> list[Path]:
    """Where the pinned NLTK files may be found: the mirror given (or IFAUDIT_NLTK_MIRROR), then
    every folder on nltk's path. Only bytes that match the pins are taken."""
    from ifaudit.io import variables
    from ifaudit.io.remote.nltk_data import import_nltk

    mirror = options.nltk_mirror or variables.input_folder(variables.NLTK_MIRROR)
    return [*([mirror] if mirror else []), *(Path(entry) for entry in import_nltk().data.path)]


@dataclass(frozen=True)
class IfbenchTask(CheckerTask):
    """A task graded by AllenAI's pinned IFBench grader at the version a run chooses."""

    pin_file: ClassVar[str] = IFBENCH_PIN
    # The pin's version this task grades with (None: the pin's default); `--grader-version` may
    # name it again, never another.
    pin_version: str | None = None
    data_versions: ClassVar[tuple[tuple[int, str], ...]] = (
        (294, "IFBench's 294 prompts (the paper release, 8a66c06 through c6767a1)"),
        (300, "IFBench's 300 prompts (since cb932e3, 2026-04-11; what Hugging Face serves)"),
    )

    def uses_pinned_upstream(self, grader: str) -> bool:
        return True

    def grader_kinds(self) -> tuple[GraderKind, ...]:
        return (GraderKind.UPSTREAM,)

    def upstream_grader(self) -> UpstreamGrader:
        return ALLENAI_IFBENCH

    def pinned_grader(self, grader: str) -> PinnedGrader:
        return PinnedGrader(IFBENCH_PIN, self.pin_version, REGISTRY)

    def pin(self, options: GradingOptions) -> Pin:
        """The run's version of IFBench's pin; the stand-in and another grader's pin are refused."""
        path = upstream_pin_file(self, options, "IFBench's grader", IFBENCH_PIN)
        version = options.grader_version or self.pin_version
        if self.pin_version and version != self.pin_version:
            raise InputError(
                f"task {self.name} grades with version {self.pin_version}; {version!r} is another task's",
                field="grader_version",
            )
        return named_pin(self, path, version, PIN_NAME, "IFBench's grader")

    def vendor_dir(self, options: GradingOptions) -> Path:
        return options.vendor_dir or options.resources / "vendor" / REGISTRY

    def load_registry(self, options: GradingOptions) -> CheckerRegistry:
        from ifaudit.io.timelimits import disable_time_limits
        from ifaudit.io.remote.pins import default_sources
        from ifaudit.tasks.ifbench_grader import load_ifbench

        pin = self.pin(options)
        disable_time_limits()
        sources = default_sources(pin, list(options.sources), offline=options.offline)
        return load_ifbench(pin, self.vendor_dir(options), sources)

    def other_graders(self, options: GradingOptions) -> tuple[CheckerRegistry, ...]:
        """The pin's other versions, loaded beside this one (their modules' names differ: the flat
        layout's and the package's)."""
        chosen = self.pin(options).version
        unfixed = dataclasses.replace(self, pin_version=None)  # a task fixed to one version loads the others too
        return tuple(
            unfixed.load_registry(dataclasses.replace(options, grader_version=version))
            for version in PIN_VERSIONS
            if version != chosen
        )

    def nltk_data(self, options: GradingOptions) -> NltkData:
        from ifaudit.io.remote.nltk_resources import materialize_nltk

        return materialize_nltk(options.resources / NLTK_FOLDER, NLTK_RESOURCES, nltk_sources(options))

    def nltk_files(self, options: GradingOptions) -> NltkFiles:
        """The pinned bytes the NLTK resources are materialized from (the tagger's pinned archive,
        not the JSON made of it), taken from the materialized folder, else the mirror and nltk's path."""
        from ifaudit.io.canonical import sha256_bytes
        from ifaudit.io.remote.nltk_resources import describe_resources, pinned_inputs

        files = pinned_inputs(NLTK_RESOURCES, [options.resources / NLTK_FOLDER, *nltk_sources(options)])
        pinned = {path: sha256_bytes(data) for path, data in sorted(files.items())}
        return NltkFiles(files, {**describe_resources(NLTK_RESOURCES), "pinned": pinned})

    def environment(self, options: GradingOptions) -> tuple[CheckerRegistry, NltkData]:
        self.pin(options)  # a wrong grader or pin is refused before anything is materialized
        nltk_data = self.nltk_data(options)  # before the grader imports: it looks for its resources then
        return self.load_registry(options), nltk_data

    def prepare(self, options: GradingOptions, record: bool) -> dict[str, Any] | None:
        from ifaudit.tasks.environment import fingerprint

        registry, nltk_data = self.environment(options)
        files = len(self.pin(options).files)
        print(f"verified {files} files of {registry.name}@{registry.version} and its NLTK data", file=sys.stderr)
        return fingerprint(registry, nltk_data) if record else None

    def load(self, options: GradingOptions) -> Grading:
        return CheckerGrading(self, options, *self.environment(options))


def headline_metrics() -> tuple[MetricSpec, ...]:
    """IFEval's four; prompt-level loose titled as what IFBench's paper reports."""
    return tuple(
        dataclasses.replace(spec, display="prompt-level loose (IFBench's headline)")
        if spec.name == "prompt_level_loose_acc"
        else spec
        for spec in ifeval_metrics()
    )


IFBENCH = IfbenchTask(
    name="ifbench",
    benchmark="IFBench",
    headline="prompt_level_loose_acc",
    description="AllenAI's IFBench (58 new constraints), graded by its pinned upstream grader, strict and loose",
    registry=REGISTRY,
    modes=("strict", "loose"),
    metrics=headline_metrics(),
    within_run=strict_vs_loose(),
)
# The same benchmark under the newest grader seen, as a task of its own: a run chooses its pin by
# its task, so one audit grades the same responses under both, each task with its own grading
# environment and canary, and compares them pair by pair (a run's `compare:`).
IFBENCH_DB69A6F = IfbenchTask(
    name="ifbench_db69a6f",
    benchmark="IFBench",
    headline="prompt_level_loose_acc",
    description="IFBench graded by its pinned upstream grader at db69a6f (the newest seen), strict and loose",
    registry=REGISTRY,
    modes=("strict", "loose"),
    metrics=headline_metrics(),
    within_run=strict_vs_loose(),
    pin_version="db69a6f",
)
