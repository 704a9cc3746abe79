"""IFBench's task (tasks/ifbench.py) in process, where mutmut's run left it (2026-12-08): the parts
of a grading environment each step asks of it, the NLTK sources it names, its refusals in their
words, its headline's title. Each test was seen failing on the mutations its docstring names
(applied by hand, then reverted). None loads the grader: what it would load is stood in."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest
from grader_fixtures import IFBENCH_PIN, ifbench_options

from ifaudit.core.errors import InputError, VerificationError
from ifaudit.core.metrics import ifeval_metrics
from ifaudit.io.remote import nltk_resources, pins
from ifaudit.io.remote.nltk_data import import_nltk
from ifaudit.tasks import environment as environment_module
from ifaudit.tasks import ifbench
from ifaudit.tasks.base import CheckerGrading
from ifaudit.tasks.ifbench import IFBENCH, IFBENCH_DB69A6F, PIN_VERSIONS, IfbenchTask
from ifaudit.tasks.ifbench_grader import spacy_unused_for_verdicts

REGISTRY = SimpleNamespace(name="allenai_ifbench", version="c6767a1d")
NLTK = object()


def _environment_stood_in(monkeypatch: pytest.MonkeyPatch, options: object) -> None:
    """The task's environment, for exactly these options, is (REGISTRY, NLTK)."""

    def environment(self: IfbenchTask, given: object) -> tuple[object, object]:
        assert given is options
        return REGISTRY, NLTK

    monkeypatch.setattr(IfbenchTask, "environment", environment)


def test_prepare_says_what_it_verified_and_records_the_environment_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ifaudit prepare`'s line names the pinned files' count, the grader and its version, and the
    fingerprint recorded is of the registry and NLTK data loaded (mutations: the options or the
    environment dropped, the count, the line's stream, the record asked or not asked)."""
    options = ifbench_options(tmp_path)
    _environment_stood_in(monkeypatch, options)
    monkeypatch.setattr(environment_module, "fingerprint", lambda registry, nltk: ("fingerprint", registry, nltk))
    count = len(pins.load_pin(IFBENCH_PIN, None).files)
    assert IFBENCH.prepare(options, True) == ("fingerprint", REGISTRY, NLTK)
    assert IFBENCH.prepare(options, False) is None
    said = capsys.readouterr()
    assert said.out == ""
    assert said.err == f"verified {count} files of allenai_ifbench@c6767a1d and its NLTK data\n" * 2


def test_load_grades_with_the_task_the_options_and_the_environment_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(mutations: the task, the options or the environment not handed to the grading)"""
    options = ifbench_options(tmp_path)
    _environment_stood_in(monkeypatch, options)
    grading = IFBENCH_DB69A6F.load(options)
    assert isinstance(grading, CheckerGrading)
    assert (grading.task, grading.options, grading.registry, grading.punkt) == (
        IFBENCH_DB69A6F,
        options,
        REGISTRY,
        NLTK,
    )


def test_the_environment_refuses_a_wrong_pin_first_then_materializes_nltk_before_the_grader_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The grader looks for its NLTK resources as it imports: they are materialized first, and
    both returned; a wrong pin is refused before anything is (mutations: the NLTK data dropped,
    the order of the two swapped, the pin not checked first)."""
    steps: list[str] = []
    monkeypatch.setattr(IfbenchTask, "nltk_data", lambda self, options: steps.append("nltk") or NLTK)
    monkeypatch.setattr(IfbenchTask, "load_registry", lambda self, options: steps.append("grader") or REGISTRY)
    options = ifbench_options(tmp_path)
    assert IFBENCH.environment(options) == (REGISTRY, NLTK) and steps == ["nltk", "grader"]
    google = dataclasses.replace(options, pin=IFBENCH_PIN.parents[1] / "google_ifeval/pin.toml")
    with pytest.raises(InputError):
        IFBENCH.environment(google)
    assert steps == ["nltk", "grader"]


def test_nltk_data_is_materialized_under_resources_from_the_sources_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(mutation: the sources not passed: a fresh resources/ folder then has nothing to make the
    pinned files from)"""
    options = ifbench_options(tmp_path)
    monkeypatch.setattr(nltk_resources, "materialize_nltk", lambda *args: args)
    assert IFBENCH.nltk_data(options) == (
        tmp_path / ifbench.NLTK_FOLDER,
        ifbench.NLTK_RESOURCES,
        ifbench.nltk_sources(options),
    )


def test_nltk_sources_are_the_mirror_given_or_the_variables_then_nltks_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(mutations: IFAUDIT_NLTK_MIRROR not read, a source of None listed when no mirror is named)"""
    on_path = [Path(entry) for entry in import_nltk().data.path]
    options = dataclasses.replace(ifbench_options(tmp_path), nltk_mirror=None)
    monkeypatch.delenv("IFAUDIT_NLTK_MIRROR", raising=False)
    assert ifbench.nltk_sources(options) == on_path
    monkeypatch.setenv("IFAUDIT_NLTK_MIRROR", str(tmp_path))
    assert ifbench.nltk_sources(options) == [tmp_path, *on_path]
    assert ifbench.nltk_sources(dataclasses.replace(options, nltk_mirror=tmp_path / "given")) == [
        tmp_path / "given",
        *on_path,
    ]


@pytest.mark.parametrize("offline", [True, False])
def test_the_graders_sources_are_asked_offline_as_the_options_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offline: bool
) -> None:
    """`--offline` reaches the pinned files' sources: no canonical URL is listed (mutation: the
    flag dropped, every grading process free to reach GitHub)."""
    asked: list[object] = []

    def default_sources(pin: object, sources: list[str], offline: bool = False) -> list[object]:
        asked.append((sources, offline))
        raise RuntimeError("stop here")

    monkeypatch.setattr(pins, "default_sources", default_sources)
    monkeypatch.setattr("ifaudit.io.timelimits.disable_time_limits", lambda: None)
    options = dataclasses.replace(ifbench_options(tmp_path), offline=offline)
    with pytest.raises(RuntimeError, match="stop here"):
        IFBENCH.load_registry(options)
    assert asked == [(list(options.sources), offline)]


def test_ifbench_refusals_name_its_grader_and_its_pin_file(tmp_path: Path) -> None:
    """A missing pin is refused with the pin file to give; another grader's pin with the grader
    the task grades with (mutations: the grader's name or the pin file's path dropped or altered)."""
    options = ifbench_options(tmp_path)
    with pytest.raises(InputError) as missing:
        IFBENCH.pin(dataclasses.replace(options, pin=None))
    assert str(missing.value) == (
        "field 'pin': IFBench's grader needs its pin file (hint: --pin vendor/allenai_ifbench/pin.toml)"
    )
    google = IFBENCH_PIN.parents[1] / "google_ifeval/pin.toml"
    with pytest.raises(InputError) as other:
        IFBENCH.pin(dataclasses.replace(options, pin=google))
    assert str(other.value).endswith(
        "pins google-research/instruction_following_eval, not allenai/IFBench: task ifbench grades with IFBench's grader"
    )


def test_ifbench_is_graded_by_its_pinned_upstream_grader_whatever_the_grader_option() -> None:
    """(mutation: the task said not to use the pinned upstream grader, so its outputs would be
    labelled as graded by the stand-in)"""
    assert IFBENCH.uses_pinned_upstream("upstream") and IFBENCH_DB69A6F.uses_pinned_upstream("stand-in")


def test_ifbench_headlines_are_ifevals_four_with_prompt_level_loose_titled_as_the_paper_reports() -> None:
    """IFBench's metrics are computed at import, so only a call tells a mutation of them
    (mutations: no metric, every or no metric retitled, the title or the metric's name changed)."""
    expected = tuple(
        dataclasses.replace(spec, display="prompt-level loose (IFBench's headline)")
        if spec.name == "prompt_level_loose_acc"
        else spec
        for spec in ifeval_metrics()
    )
    assert ifbench.headline_metrics() == expected == IFBENCH.metrics == IFBENCH_DB69A6F.metrics
    (changed,) = [spec for spec, was in zip(expected, ifeval_metrics(), strict=True) if spec != was]
    assert (changed.name, changed.display) == ("prompt_level_loose_acc", "prompt-level loose (IFBench's headline)")


# --- the grader's loader (tasks/ifbench_grader.py) ---------------------------------------------------


def test_the_spacy_stand_in_is_spacy_and_spacy_cli_recording_each_model_asked_for() -> None:
    """What c6767a1's `import spacy.cli` gets while it imports: modules of those names, `spacy.cli`
    reachable from `spacy`, a download that records the model it was asked for and fetches nothing
    (mutations: the names, the docstring saying what it is, the attribute or the record altered)."""
    from ifaudit.tasks.ifbench_grader import SPACY_DOWNLOADS, _spacy_stand_in

    modules = _spacy_stand_in()
    assert sorted(modules) == ["spacy", "spacy.cli"]
    spacy, cli = modules["spacy"], modules["spacy.cli"]
    assert (spacy.__name__, cli.__name__) == ("spacy", "spacy.cli") and spacy.cli is cli
    assert spacy.__doc__ == "ifaudit's stand-in for spaCy's import-time model download"
    asked = len(SPACY_DOWNLOADS)
    assert cli.download("en_core_web_sm", quiet=True) is None
    assert SPACY_DOWNLOADS[asked:] == ["en_core_web_sm"]
    SPACY_DOWNLOADS[asked:] = []


def test_nltk_downloads_are_refused_under_both_of_nltks_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """(mutations: either name left to download, or set to None: a checker calling it crashes)"""
    import nltk
    import nltk.downloader

    from ifaudit.tasks.ifbench_grader import refuse_download, refuse_nltk_downloads

    monkeypatch.setattr(nltk, "download", None)
    monkeypatch.setattr(nltk.downloader, "download", None)
    refuse_nltk_downloads()
    assert nltk.download is refuse_download and nltk.downloader.download is refuse_download


def test_loading_c6767a1_afresh_stands_spacy_in_only_while_its_files_import(ifbench_graders) -> None:  # noqa: ANN001
    """A grading process imports c6767a1's files once: its top-level spaCy download is answered
    by the stand-in (spaCy is not installed), which is gone after (mutation: the stand-in not
    asked for, the import then fails). The session's modules are put back after."""
    import sys

    from ifaudit.tasks.ifbench_grader import FLAT_MODULES, SPACY_DOWNLOADS

    saved = {name: sys.modules.pop(name) for name in FLAT_MODULES if name in sys.modules}
    asked = len(SPACY_DOWNLOADS)
    try:
        registry = IFBENCH.load_registry(ifbench_graders.options("c6767a1"))
        assert registry.version.startswith("c6767a1") and registry.instructions
        assert SPACY_DOWNLOADS[asked:] == ["en_core_web_sm"]
        assert "spacy" not in sys.modules and "spacy.cli" not in sys.modules
    finally:
        for name in FLAT_MODULES:
            sys.modules.pop(name, None)
        sys.modules.update(saved)
        SPACY_DOWNLOADS[asked:] = []


@pytest.mark.parametrize(
    "source",
    [
        "import spacy.cli\n\ndef f(text):\n    return spacy.load('en_core_web_sm')(text)\n",  # `spacy` bound
        # another import after spaCy's keeps what spaCy's bound
        "from spacy.cli import download\nimport os\n\ndownload('m')\n\ndef f():\n    return download\n",
        "import spacy as sp\nfrom spacy.cli import download\n\ndownload('m')\n\ndef f():\n    return sp\n",
    ],
)
def test_every_name_spacys_imports_bind_is_followed_to_its_uses(source: str) -> None:
    """(mutations: `import spacy.cli` binding another name or none, a later import replacing the
    names bound before instead of adding to them)"""
    with pytest.raises(VerificationError, match="beyond a dropped top-level call"):
        spacy_unused_for_verdicts(source, "instructions.py")


def test_a_pinned_file_that_does_not_parse_is_named_in_the_error() -> None:
    """(mutation: the file's name not given to the parser)"""
    with pytest.raises(SyntaxError) as refused:
        spacy_unused_for_verdicts("def (:\n", "ifbench/instructions.py")
    assert refused.value.filename == "ifbench/instructions.py"


def test_a_loaded_graders_distributions_leave_out_its_own_modules_and_the_spacy_stand_in(ifbench_graders) -> None:  # noqa: ANN001
    """The distributions a grader's verdicts depend on (the environment record's) are those its
    files import, not its own package (db69a6f's `ifbench`) nor spaCy where it is stood in
    (c6767a1's): neither is installed, so either would be recorded as a missing distribution
    (mutations: a module's own name taken whole, spaCy never or always left out)."""
    for version in PIN_VERSIONS:
        distributions = set(IFBENCH.load_registry(ifbench_graders.options(version)).distributions)
        assert {"langdetect", "nltk", "regex"} <= distributions
        assert not distributions & {"spacy", "ifbench", "instructions", "instructions_registry", "instructions_util"}
