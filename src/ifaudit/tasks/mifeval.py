"""M-IFEval (Lightblue, arXiv 2502.04688): IFEval's format in French, Japanese and Spanish with
language-specific checkers, graded by Lightblue's pinned upstream grader (docs/mifeval.md).

One task per language (`mifeval_fr`, `mifeval_ja`, `mifeval_es`), each grading only its own
language's ids (`fr:...`) with the pinned registry at 0bc3143 (vendor/lightblue_mifeval/pin.toml);
the metrics are IFEval's four, instruction-level strict being what M-IFEval's leaderboard reports.
Grading is the one driver's (ifaudit.tasks.grading): `random` and langdetect seeded before each
response's strict grading and again before its loose grading; upstream's strict and loose passes
are IFEval's (a blank response follows nothing). The NLTK data the French checkers read (punkt_tab,
French and English) is pinned here by sha256; janome and ja_sentence_segmenter, which the Japanese
checkers read, are pinned in the hash-locked requirements at upstream's versions. Spanish needs two
spaCy models no pin can hold yet and is refused (ifaudit.tasks.mifeval_grader). English is Google's
`ifeval` task on M-IFEval's English prompts (ifaudit.tasks.ifeval).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ifaudit.core.errors import InputError
from ifaudit.core.metrics import MetricSpec, ifeval_metrics
from ifaudit.io.remote.nltk_resources import NltkFile, NltkResource
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
from ifaudit.tasks.ifbench import nltk_sources
from ifaudit.tasks.ifeval import strict_vs_loose

if TYPE_CHECKING:
    from ifaudit.io.remote.nltk_resources import NltkData
    from ifaudit.io.remote.pins import Pin
    from ifaudit.tasks.graders import CheckerRegistry

MIFEVAL_PIN = "vendor/lightblue_mifeval/pin.toml"
PIN_NAME = "lightblue-tech/M-IFEval"
REGISTRY = "lightblue_mifeval"
LEADERBOARD_METRIC = "inst_level_strict_acc"  # what the published table reports (FACTS §12)
NLTK_FOLDER = "nltk_data_mifeval"  # below resources/: the pinned NLTK resources, materialized
LIGHTBLUE_MIFEVAL = UpstreamGrader(
    "Lightblue's M-IFEval grader", PIN_NAME, "https://github.com/lightblue-tech/M-IFEval", MIFEVAL_PIN
)

_PUNKT = "tokenizers/punkt_tab"
# punkt_tab as nltk >= 3.9 reads it: French for the French sentence counter (upstream asks for
# `tokenizers/punkt/french.pickle`, which nltk serves from punkt_tab/french), English for
# `nltk.word_tokenize` (capital_word_frequency). ../shared/data/nltk/PROVENANCE.md.
NLTK_RESOURCES = (
    NltkResource(
        _PUNKT,
        tuple(
            NltkFile(f"{_PUNKT}/{path}", sha256, size)
            for path, sha256, size in (
                ("README", "d3251cae66a9359bd68c039e3a46172a05ca9df0b27dcdfa23ae594d68d27ec4", 8574),
                ("english/abbrev_types.txt", "92a3e070f43d9b4c5534758ca40ad7343b04e7e29bfe0c2eb658a39445a4f779", 619),
                ("english/collocations.tab", "8e2da1225e4dd2cc9dba261ee231ccb134859e21b46006e7f472c5ee269af0cf", 594),
                (
                    "english/ortho_context.tab",
                    "4bbcca25ed3d3f06c02402abf8419b9f033b8adc06e7b482eca4e45f81a5dc4c",
                    236303,
                ),
                ("english/sent_starters.txt", "f3f8535483e1dba487241b764945168123bca3209a9645e59acd1225dc76edac", 241),
                ("french/abbrev_types.txt", "01747ecfed08830d582d8c94634b63a36da316c0a67feec2871cf03f0dd5c657", 245),
                ("french/collocations.tab", "8ddf150ef5a0d22694e7c4d807f80b6d55da731ca81ea139633f560b378af990", 334),
                (
                    "french/ortho_context.tab",
                    "7090ef4292647d4fe137159bd768a5304015d0614d59fdcfc30b2389634365ac",
                    334275,
                ),
                ("french/sent_starters.txt", "b45a1ebdae9cdf46cf2e8be016b4718bf4f825445fc783d445faf0cfb2d569f8", 233),
            )
        ),
    ),
)


@dataclass(frozen=True)
class MifevalTask(CheckerTask):
    """One language of M-IFEval, graded by Lightblue's pinned grader restricted to its ids."""

    pin_file: ClassVar[str] = MIFEVAL_PIN
    language: str = "fr"
    # The models the language's checkers load that no pin can hold yet (read from the pinned
    # source: tests/test_mifeval_grader.py); a task needing any is refused before anything is read.
    unpinned_models: tuple[str, ...] = ()

    def refusal(self) -> str | None:
        if not self.unpinned_models:
            return None
        return (
            f"task {self.name} needs spaCy's {' and '.join(self.unpinned_models)}, which no registry reachable "
            "here serves and no pin holds yet; see docs/mifeval.md"
        )

    def uses_pinned_upstream(self, grader: str) -> bool:
        return True

    def grader_kinds(self) -> tuple[GraderKind, ...]:
        return (GraderKind.UPSTREAM,)

    def upstream_grader(self) -> UpstreamGrader:
        return LIGHTBLUE_MIFEVAL

    def pinned_grader(self, grader: str) -> PinnedGrader:
        return PinnedGrader(MIFEVAL_PIN, None, REGISTRY)

    def pin(self, options: GradingOptions) -> Pin:
        """M-IFEval's pin; the stand-in, another version and another grader's pin are refused."""
        if refusal := self.refusal():
            raise InputError(refusal, field="task")
        path = upstream_pin_file(self, options, "M-IFEval's grader", MIFEVAL_PIN)
        if options.grader_version:
            raise InputError(f"task {self.name}'s pin has one version", field="grader_version")
        return named_pin(self, path, None, PIN_NAME, "M-IFEval's grader")

    def vendor_dir(self, options: GradingOptions) -> Path:
        return options.vendor_dir or options.resources / "vendor" / REGISTRY

    def load_registry(self, options: GradingOptions) -> CheckerRegistry:
        from ifaudit.io.remote.pins import default_sources
        from ifaudit.io.timelimits import disable_time_limits
        from ifaudit.tasks.mifeval_grader import load_mifeval

        pin = self.pin(options)
        disable_time_limits()
        sources = default_sources(pin, list(options.sources), offline=options.offline)
        return load_mifeval(pin, self.language, self.vendor_dir(options), sources)

    def nltk_data(self, options: GradingOptions) -> NltkData:
        from ifaudit.io.remote.nltk_resources import materialize_nltk

        return materialize_nltk(options.resources / NLTK_FOLDER, NLTK_RESOURCES, nltk_sources(options))

    def nltk_files(self, options: GradingOptions) -> NltkFiles:
        """The pinned punkt_tab files, from the materialized folder, else the mirror and nltk's path."""
        from ifaudit.io.canonical import sha256_bytes
        from ifaudit.io.remote.nltk_resources import describe_resources, pinned_inputs

        files = pinned_inputs(NLTK_RESOURCES, [options.resources / NLTK_FOLDER, *nltk_sources(options)])
        pinned = {path: sha256_bytes(data) for path, data in sorted(files.items())}
        return NltkFiles(files, {**describe_resources(NLTK_RESOURCES), "pinned": pinned})

    def environment(self, options: GradingOptions) -> tuple[CheckerRegistry, NltkData]:
        self.pin(options)  # a wrong grader or pin is refused before anything is materialized
        nltk_data = self.nltk_data(options)
        return self.load_registry(options), nltk_data

    def prepare(self, options: GradingOptions, record: bool) -> dict[str, Any] | None:
        from ifaudit.tasks.environment import fingerprint

        registry, nltk_data = self.environment(options)
        files = len(self.pin(options).files)
        print(
            f"verified {files} files of {registry.name}@{registry.version} ({self.language}) and its NLTK data",
            file=sys.stderr,
        )
        return fingerprint(registry, nltk_data) if record else None

    def load(self, options: GradingOptions) -> Grading:
        return CheckerGrading(self, options, *self.environment(options))


def leaderboard_metrics() -> tuple[MetricSpec, ...]:
    """IFEval's four, instruction-level strict first (the primary metric runs are ranked by) and
    titled as what M-IFEval's leaderboard reports."""
    import dataclasses

    metrics = ifeval_metrics()
    headline = [
        dataclasses.replace(spec, display="instruction-level strict (M-IFEval's leaderboard)")
        for spec in metrics
        if spec.name == LEADERBOARD_METRIC
    ]
    return (*headline, *(spec for spec in metrics if spec.name != LEADERBOARD_METRIC))


def _task(language: str, name: str, unpinned_models: tuple[str, ...] = ()) -> MifevalTask:
    return MifevalTask(
        name=f"mifeval_{language}",
        benchmark="M-IFEval",
        headline=LEADERBOARD_METRIC,
        description=f"M-IFEval {name}, graded by Lightblue's pinned upstream grader (its {language}: ids), strict and loose",
        registry=REGISTRY,
        modes=("strict", "loose"),
        metrics=leaderboard_metrics(),
        within_run=strict_vs_loose(),
        language=language,
        unpinned_models=unpinned_models,
    )


MIFEVAL_FR = _task("fr", "French")
MIFEVAL_JA = _task("ja", "Japanese")
# Spanish: es_instructions_util.py:77 and es_instructions.py:93 load these at import, and its word,
# sentence and special-character checkers run them (FACTS §12); no reachable registry serves them.
MIFEVAL_ES = _task("es", "Spanish", unpinned_models=("es_core_news_sm", "xx_sent_ud_sm"))
