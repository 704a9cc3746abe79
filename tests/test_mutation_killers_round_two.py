"""The promises of the code added since the first mutation round, each held by a fast test that
fails when it breaks (issue #50): IFBench's grading randomness, pins and versions, the grading
process's environment, the content ledger, escaping, the key's redaction and the headlines.

Each test was seen failing on the mutation its docstring names (applied by hand, then reverted).
IFBench's graders are the session's (grader_fixtures.ifbench_graders): both pinned commits,
materialized from ../shared/upstream and imported in this process once."""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
from conftest import DATA, REPO, grade_args
from grader_fixtures import IFBENCH_MIRROR, IfbenchGraders, ifbench_options
from test_mutation_killers_inputs import RUN, _checksum_list, _minimal_bundle, _own_pins, _sha, _write

from ifaudit.core.errors import InputError, VerificationError
from ifaudit.core.records import Prompt, Response
from ifaudit.io import ledger
from ifaudit.io.ledger import Entry
from ifaudit.io.formats.escape import csv_cell, one_line, xml_text
from ifaudit.io.remote.redact import REDACTED, Redactor
from ifaudit.steps.artifact.bundle_verify import verify_bundle
from ifaudit.steps.planning import plan
from ifaudit.steps.planning.content import changed_since_recorded
from ifaudit.steps.reporting.headlines import headline, headline_lines
from ifaudit.tasks.grading import grade_response
from ifaudit.tasks.ifbench import IFBENCH, IFBENCH_DB69A6F
from ifaudit.tasks.ifbench_grader import _importing, spacy_unused_for_verdicts

C6767A1 = "c6767a1"
DB69A6F = "db69a6f"
IFBENCH_PROMPTS, IFBENCH_OUTPUTS = DATA / "ifbench/IFBench_test_294.jsonl", DATA / "ifbench/sample_output.jsonl"
TEN_WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa"


def _prompt(kwargs: dict, key: int = 286) -> Prompt:
    return Prompt(key, "(a test prompt)", ("repeat:repeat_span",), (kwargs,), "given.jsonl", 1)


def _verdicts(graders: IfbenchGraders, version: str, kwargs: dict, text: str) -> tuple[bool, bool]:
    """(strict, loose) of IFBench's repeat-span checker at `version`, graded after `random` was
    left in a state of its own (grading must not depend on it)."""
    random.seed(20261207)
    record = grade_response(graders.registries[version], IFBENCH, _prompt(kwargs), Response(286, 0, text, 1))
    return record["strict"]["follow_instruction_list"][0], record["loose"]["follow_instruction_list"][0]


# --- grading randomness: reset before strict AND again before loose --------------------------


@pytest.mark.parametrize(
    ("kwargs", "text", "verdicts"),
    [
        # 8 words, n_start 0: c6767a1 draws the start, word 6 after random.seed(0); drawn again
        # without the reset it is word 3 ("delta ... theta").
        (
            {"prompt_to_repeat": " ".join(TEN_WORDS.split()[:8]), "n_start": 0, "n_end": 8},
            "Sure:\neta theta",
            (False, True),
        ),
        (
            {"prompt_to_repeat": " ".join(TEN_WORDS.split()[:8]), "n_start": 0, "n_end": 8},
            "Sure:\ndelta epsilon zeta eta theta",
            (False, False),
        ),
        # 10 words, n_start and n_end 0: both drawn, words 6-7 after random.seed(0); 0-4 drawn again.
        ({"prompt_to_repeat": TEN_WORDS, "n_start": 0, "n_end": 0}, "Here it is:\neta theta", (False, True)),
        (
            {"prompt_to_repeat": TEN_WORDS, "n_start": 0, "n_end": 0},
            "Here:\nalpha beta gamma delta epsilon",
            (False, False),
        ),
    ],
)
def test_ifbench_loose_verdict_is_that_of_the_draw_made_after_the_reset_before_loose(
    ifbench_graders: IfbenchGraders, kwargs: dict, text: str, verdicts: tuple[bool, bool]
) -> None:
    """The seed write-up's promise for a checker that draws its setting when it is built (IFBench's
    repeat-span at c6767a1, FACTS.md §11, key 286): `random` is reset before strict grading and
    again before loose, so the loose pass builds the checker with the strict pass's draw. The
    responses fail strict (their first line is not the span), so loose grading checks them again:
    killed mutations, `reset_randomness()` once per response (before the modes' loop), only
    before strict, not at all (`random.seed` left out), and SEED another number."""
    assert _verdicts(ifbench_graders, C6767A1, kwargs, text) == verdicts


def test_ifbench_db69a6f_draws_no_repeat_span_start_for_a_character_index_of_zero(
    ifbench_graders: IfbenchGraders,
) -> None:
    """At db69a6f `n_start: 0` is a character index and nothing is drawn: the same response is
    judged against the first characters, whatever the randomness (the pins are told apart)."""
    kwargs = {"prompt_to_repeat": TEN_WORDS, "n_start": 0, "n_end": 10}
    assert _verdicts(ifbench_graders, DB69A6F, kwargs, "Sure:\neta theta") == (False, False)
    assert _verdicts(ifbench_graders, DB69A6F, kwargs, "Sure:\nalpha beta") == (False, True)
    assert ifbench_graders.registries[DB69A6F].version.startswith(DB69A6F)
    assert ifbench_graders.registries[C6767A1].version.startswith(C6767A1)


def test_googles_letter_frequency_drawn_when_built_is_drawn_again_after_the_reset_before_loose(upstream) -> None:
    """The same promise for Google's grader: `keywords:letter_frequency` without settings draws its
    letter, count and relation when built; after random.seed(0), "y", 7, "less than" (drawn
    again without the reset: "q", 9, "at least"). The first line breaks the rule, the loose text
    without it follows it."""
    from ifaudit.tasks.registry import TASKS

    prompt = Prompt(9002, "(a test prompt)", ("keywords:letter_frequency",), ({},), "given.jsonl", 1)
    for text, verdicts in (("yyyyyyyyyy\nok", (False, True)), ("yyyyyyyyyy\nyyyyyyyyyy\nqqqqqqqqqq", (False, False))):
        random.seed(20261207)
        record = grade_response(upstream, TASKS["ifeval"], prompt, Response(9002, 0, text, 1))
        assert (record["strict"]["follow_all_instructions"], record["loose"]["follow_all_instructions"]) == verdicts


# --- pins and versions --------------------------------------------------------------------------


def test_a_task_fixed_to_a_pinned_version_grades_with_it_and_refuses_another_grader_version(tmp_path: Path) -> None:
    """`ifbench_db69a6f` grades at db69a6f whatever `--grader-version` repeats, and refuses
    c6767a1 rather than grading at it; `ifbench` grades at the pin's default unless told another
    (mutations: the task's version and `--grader-version` consulted in the other order, the
    refusal left out, the default taken for a fixed task)."""
    options = lambda version: ifbench_options(tmp_path, version)  # noqa: E731 - a short alias
    assert IFBENCH_DB69A6F.pin(options(None)).version == DB69A6F
    assert IFBENCH_DB69A6F.pin(options(DB69A6F)).commit.startswith(DB69A6F)
    with pytest.raises(InputError) as caught:
        IFBENCH_DB69A6F.pin(options(C6767A1))
    assert caught.value.field == "grader_version"
    assert str(caught.value).endswith(
        f"task ifbench_db69a6f grades with version {DB69A6F}; {C6767A1!r} is another task's"
    )
    assert IFBENCH.pin(options(None)).commit.startswith(C6767A1)
    assert IFBENCH.pin(options(DB69A6F)).commit.startswith(DB69A6F)
    assert IFBENCH.pinned_grader("upstream").version is None
    assert IFBENCH_DB69A6F.pinned_grader("upstream").version == DB69A6F


@pytest.mark.parametrize("version", [None, C6767A1, DB69A6F])
def test_grade_passes_the_grader_version_asked_for_to_the_task_and_each_task_its_own_pin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str | None
) -> None:
    """`ifaudit grade --task ifbench --grader-version V` grades at V: the option reaches the
    grading options (mutation: the option dropped, every run graded at the default), and each
    task's pin is its own (IFBench's for both IFBench tasks)."""
    from ifaudit.cli import _grading_options
    from ifaudit.cli_parser import build_parser

    monkeypatch.setenv("IFAUDIT_RESOURCES", str(tmp_path))
    extra = ["--grader-version", version] if version else []
    for task in ("ifbench", "ifbench_db69a6f"):
        args = build_parser().parse_args(
            [*grade_args(IFBENCH_PROMPTS, IFBENCH_OUTPUTS, tmp_path / "g.jsonl", "--task", task, *extra, "--offline")]
        )
        options = _grading_options(args)
        assert (options.grader_version, options.offline, options.resources) == (version, True, tmp_path)
        assert options.pin is not None and options.pin.resolve() == (REPO / "vendor/allenai_ifbench/pin.toml").resolve()


def test_ifbench_refuses_the_stand_in_a_missing_pin_and_googles_pin(tmp_path: Path) -> None:
    import dataclasses

    options = ifbench_options(tmp_path)
    for changed, field in (({"grader": "stand-in"}, "grader"), ({"pin": None}, "pin")):
        with pytest.raises(InputError) as caught:
            IFBENCH.pin(dataclasses.replace(options, **changed))
        assert caught.value.field == field
    with pytest.raises(InputError, match="pins google-research/instruction_following_eval, not allenai/IFBench"):
        IFBENCH.pin(dataclasses.replace(options, pin=REPO / "vendor/google_ifeval/pin.toml"))


@pytest.mark.parametrize(("task", "other"), [(IFBENCH, DB69A6F), (IFBENCH_DB69A6F, C6767A1)])
def test_the_claims_audit_loads_the_other_pinned_version_beside_either_task(
    ifbench_graders: IfbenchGraders, task, other: str
) -> None:
    """The other version's registry (the claims audit's `grader_version` cause) is loaded with the
    task unfixed: `ifbench_db69a6f` fixed to its own version would refuse c6767a1 (mutation: the
    task not unfixed, a claims audit of a db69a6f run raises)."""
    (loaded,) = task.other_graders(ifbench_graders.options(None))
    assert loaded.version.startswith(other)
    assert loaded.instructions is ifbench_graders.registries[other].instructions


@pytest.mark.parametrize(("task", "other"), [(IFBENCH, DB69A6F), (IFBENCH_DB69A6F, C6767A1)])
def test_the_other_pinned_version_is_asked_of_the_task_unfixed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, task, other: str
) -> None:
    """The same without loading a grader: each other version is asked of the task unfixed, whose
    own pin check then accepts it (the test above loads them)."""
    from ifaudit.tasks.ifbench import IfbenchTask

    monkeypatch.setattr(IfbenchTask, "load_registry", lambda self, options: self.pin(options).version)
    assert task.other_graders(ifbench_options(tmp_path)) == (other,)


def _ifbench_bundle(tmp_path: Path, pin: bytes) -> Path:
    """The minimal verifiable bundle with two more runs, graded by IFBench at c6767a1 (`ifbench`)
    and at db69a6f (`ifbench_db69a6f`), each grader's files from the shared mirror in its own
    folder, and `pin` as the bundle's pin of IFBench."""
    from ifaudit.io.remote.pins import load_pin

    bundle = _minimal_bundle(tmp_path)
    added: dict[str, bytes] = {"project/vendor/allenai_ifbench/pin.toml": pin}
    for run, task, version in (("ifb", "ifbench", C6767A1), ("ifd", "ifbench_db69a6f", DB69A6F)):
        summary = json.dumps({"summary": run}).encode()
        manifest = {
            "run": run,
            "files": {"summary": {"path": f"results/{run}/summary.json", "sha256": _sha(summary)}},
            "datasets": {},
            "config": {"run": {"task": task}, "settings": {"grader": "upstream"}},
        }
        commit = next(folder for folder in IFBENCH_MIRROR.iterdir() if folder.name.startswith(version))
        for pinned in load_pin(REPO / "vendor/allenai_ifbench/pin.toml", version).files:
            added[f"grader/allenai_ifbench/{version}/{pinned.path}"] = (commit / pinned.path).read_bytes()
        added |= {f"results/{run}/summary.json": summary, f"results/{run}/MANIFEST.json": json.dumps(manifest).encode()}
    added["BUNDLE.json"] = json.dumps({"runs": [RUN, "ifb", "ifd"], "datasets": {}}).encode()
    _write(bundle, added)
    (bundle / "CHECKSUMS.sha256").write_bytes(_checksum_list(bundle))
    return bundle


OWN_PINS = {"vendor/allenai_ifbench/pin.toml": REPO / "vendor/allenai_ifbench/pin.toml"}


def test_each_ifbench_version_a_bundles_runs_grade_with_is_checked_in_its_own_folder(tmp_path: Path) -> None:
    """The runs' graders are checked at the version each task grades with: an edited file of
    db69a6f's is named (mutations: the bundle's pin read at its default version for every task,
    the folder not the version's)."""
    ours = (REPO / "vendor/allenai_ifbench/pin.toml").read_bytes()
    bundle = _ifbench_bundle(tmp_path, ours)
    verified = verify_bundle(bundle, recompute_all=False, own_pins={**_own_pins(), **OWN_PINS})
    assert verified["manifest_hashes"] == 3
    edited = f"grader/allenai_ifbench/{DB69A6F}/ifbench/instructions.py"
    (bundle / edited).write_bytes((bundle / edited).read_bytes() + b"# edited\n")
    (bundle / "CHECKSUMS.sha256").write_bytes(_checksum_list(bundle))
    with pytest.raises(VerificationError, match=rf"^grader files are not the pinned ones: {edited}: its bytes have "):
        verify_bundle(bundle, recompute_all=False, own_pins={**_own_pins(), **OWN_PINS})


def test_the_verifier_compares_ifbenchs_pin_with_its_own_not_only_googles(tmp_path: Path) -> None:
    """A bundle of an IFBench run is verified against the verifier's own pin of IFBench too: one
    whose pin differs (rewritten with every checksum) is refused, naming it (mutation: only
    Google's pin compared, the other bundled graders' pins never)."""
    own = {**_own_pins(), **OWN_PINS}
    ours = (REPO / "vendor/allenai_ifbench/pin.toml").read_bytes()
    verify_bundle(_ifbench_bundle(tmp_path / "a", ours), recompute_all=False, own_pins=own)
    edited = _ifbench_bundle(tmp_path / "b", ours + b"# another pin\n")
    with pytest.raises(VerificationError, match=r"^project/vendor/allenai_ifbench/pin\.toml: not this ifaudit's pin"):
        verify_bundle(edited, recompute_all=False, own_pins=own)


# --- the grading process's environment ------------------------------------------------------


def test_loading_ifbench_leaves_nltk_data_unset_as_it_was(ifbench_graders: IfbenchGraders) -> None:
    """db69a6f's files set NLTK_DATA to a folder inside themselves when it is unset: after they
    import it is unset again (mutation: NLTK_DATA not restored after the import)."""
    assert ifbench_graders.nltk_data_before is None
    assert ifbench_graders.nltk_data_after is None


def test_a_grading_process_downloads_no_nltk_data_and_is_told_false_as_offline(
    ifbench_graders: IfbenchGraders,
) -> None:
    """Loading IFBench's grader refuses nltk.download for the process (c6767a1 calls it while
    grading): nothing is fetched, and the caller gets False, as upstream gets offline."""
    import nltk
    import nltk.downloader

    from ifaudit.tasks.ifbench_grader import REFUSED_DOWNLOADS

    asked = len(REFUSED_DOWNLOADS)
    assert nltk.download("punkt_tab") is False
    assert nltk.downloader.download("stopwords", quiet=True) is False
    assert REFUSED_DOWNLOADS[asked:] == ["punkt_tab", "stopwords"]


@pytest.mark.parametrize("before", [None, "/somewhere/nltk_data"])
def test_the_pinned_files_import_with_nltk_data_and_nltk_path_restored_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str | None
) -> None:
    """Whatever the import does to NLTK_DATA, nltk's path and spaCy's modules, they are as before
    after it, set or unset (mutations: the variable not put back, not removed, the path kept)."""
    import nltk

    if before is None:
        monkeypatch.delenv("NLTK_DATA", raising=False)
    else:
        monkeypatch.setenv("NLTK_DATA", before)
    monkeypatch.setattr(nltk.data, "path", ["/a", "/b"])
    with _importing(tmp_path, stand_in_spacy=True):
        assert sys.modules["spacy.cli"].download("en_core_web_sm") is None  # the stand-in, recording
        os.environ["NLTK_DATA"] = str(tmp_path / "inside")
        nltk.data.path.insert(0, str(tmp_path / "inside"))
        (tmp_path / "inside").mkdir()  # the pinned folder stays as verified
    assert os.environ.get("NLTK_DATA") == before
    assert nltk.data.path == ["/a", "/b"]
    assert not (tmp_path / "inside").exists()
    assert "spacy" not in sys.modules and "spacy.cli" not in sys.modules
    (tmp_path / "outside").mkdir()  # mkdir is itself again


SPACY = "from spacy.cli import download\n\ndownload('en_core_web_sm')\n"


@pytest.mark.parametrize(
    "source",
    [
        SPACY
        + "\n\ndef checker(text):\n    download('en_core_web_sm')\n    return True\n",  # dropped, inside a function
        SPACY + "\nif True:\n    download('en_core_web_sm')\n",  # dropped, inside a block
        SPACY + "\nclass C:\n    download('en_core_web_sm')\n",
        "from spacy.cli import download as fetch\n\nfetch('m')\n\ndef f():\n    return fetch\n",  # an alias
        "import spacy as sp\n\ndef f(text):\n    return sp.load('en_core_web_sm')(text)\n",
        "from spacy import cli\n\ncli.download('en_core_web_sm')\n",  # not a name's call: refused too
    ],
)
def test_spacy_is_stood_in_only_for_calls_dropped_at_the_top_level(source: str) -> None:
    """A download call whose result is dropped is harmless only as a top-level statement: the
    same call in a function or a block runs when a checker does (mutation: dropped calls looked
    for anywhere in the tree, not in the module's body)."""
    with pytest.raises(VerificationError, match="beyond a dropped top-level call"):
        spacy_unused_for_verdicts(source, "instructions.py")
    assert spacy_unused_for_verdicts(SPACY + "\nx = 1\n", "instructions.py") is True
    assert spacy_unused_for_verdicts("import os\nos.getcwd()\n", "instructions.py") is False


# --- the content ledger --------------------------------------------------------------------------


def _project(tmp_path: Path, names: list[str], kept: list[str]) -> Path:
    """A project folder whose ledger records `names` (made under it), `kept` among them."""
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"{name}\n")
    cwd = Path.cwd()
    os.chdir(tmp_path)  # the ledger records paths as the workflow does: relative to the project
    try:
        ledger.write(Path(plan.STAGED), names, {}, kept)
    finally:
        os.chdir(cwd)
    return tmp_path


@pytest.mark.parametrize("kept", [True, False])
@pytest.mark.parametrize("target", ["nowhere", "copy"])
def test_a_result_replaced_by_a_dangling_link_is_reported(tmp_path: Path, kept: bool, target: str) -> None:
    """A file replaced by a symbolic link, leading nowhere or to a copy of the same bytes, is there
    (`lexists`) and no longer a regular file: reported as changed, whether its absence would have
    counted or not (mutations: `exists` for `lexists`, which takes the dangling link for no file
    at all; the link followed, `stat` for `lstat`)."""
    name = "results/r1/grades.jsonl"
    project = _project(tmp_path, [name], [name] if kept else [])
    (project / "copy").write_bytes((project / name).read_bytes())
    (project / name).unlink()
    (project / name).symlink_to(project / target)
    recorded = ledger.read(project / plan.STAGED)
    assert recorded is not None
    (change,) = ledger.changes(recorded, project)
    assert (change.path, change.now, change.gone) == (name, None, False)
    recorded_sha = _sha(f"{name}\n".encode())
    assert changed_since_recorded(project) == [
        f"{name}: its bytes changed since the DAG last recorded them (no longer a regular file, recorded {recorded_sha})"
    ]


@pytest.mark.parametrize("gone", [1, 2, 3, 7])
def test_the_files_gone_are_named_first_and_counted_in_one_line(tmp_path: Path, gone: int) -> None:
    """`rm -r results/RUN` takes many files at once: one line names the first gone and how many
    MORE there are (mutations: the count off by one, the singular for several)."""
    names = [f"results/r1/file{index}.json" for index in range(gone)] + ["results/r1/summary.json"]
    project = _project(tmp_path, names, names)
    for name in names[:gone]:
        (project / name).unlink()
    lines = changed_since_recorded(project)
    if gone == 1:
        assert lines == ["results/r1/file0.json: gone since the DAG last recorded it"]
    else:
        assert lines == [
            f"results/r1/file0.json and {gone - 1} more files the DAG made: gone since the DAG last recorded them"
        ]


def test_a_ledger_reads_back_as_written_and_one_of_two_or_without_kept_as_documented(tmp_path: Path) -> None:
    """What `write` records `read` gives back, stat keys and all; two ledgers in one folder are not
    trusted (None); a ledger written before `kept` was reads with nothing kept (mutations: the
    count of ledgers off by one, `kept`'s default dropped, a stat key's fields moved)."""
    from ifaudit.io.canonical import dumps, sha256_bytes

    (tmp_path / "a.json").write_text("a")
    (tmp_path / "b.json").write_text("bb")
    os.utime(tmp_path / "a.json", ns=(1, 1))  # a modification time other than the change time
    names = [str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    staged = tmp_path / "staged"
    written = ledger.write(staged, names, {}, kept=names[:1])
    assert ledger.read(staged) == written
    assert {name: entry.stat_key[0] for name, entry in written.items()} == {names[0]: 1, names[1]: 2}
    assert [entry.kept for entry in written.values()] == [True, False]
    old = (dumps({"files": {name: [e.sha256, *e.stat_key] for name, e in written.items()}}) + "\n").encode()
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / f"{ledger.LEDGER_STEM}-{sha256_bytes(old)}.json").write_bytes(old)
    assert ledger.read(legacy) == {name: Entry(e.sha256, e.stat_key, False) for name, e in written.items()}
    (staged / f"{ledger.LEDGER_STEM}-{sha256_bytes(old)}.json").write_bytes(old)  # a second ledger
    assert ledger.read(staged) is None


def test_walk_files_lists_regular_files_sorted_without_following_links_or_entering_skipped_folders(
    tmp_path: Path,
) -> None:
    import os

    for name in ("r/b.txt", "r/a/x.txt", "r/skip/y.txt", "r/a/deep/z.txt", "elsewhere/w.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    (tmp_path / "r/link").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "r/file-link").symlink_to(tmp_path / "elsewhere/w.txt")
    os.mkfifo(tmp_path / "r/fifo")
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        assert ledger.walk_files(["r", "missing"], frozenset({"r/skip"})) == ["r/a/deep/z.txt", "r/a/x.txt", "r/b.txt"]
        assert ledger.walk_files(["r"], frozenset({"r"})) == []
        assert ledger.walk_files(["r/a", "r/b.txt"]) == ["r/a/deep/z.txt", "r/a/x.txt"]
    finally:
        os.chdir(cwd)


# --- escaping -------------------------------------------------------------------------------------


HOSTILE = ['a" onload="alert(1)', "x' y", "<b>&amp;</b>", 'q"&<>\'"', "tab\tline\nbreak\r\x1b end"]


@pytest.mark.parametrize("text", HOSTILE)
def test_xml_text_is_well_formed_as_an_attribute_value_and_as_element_text(text: str) -> None:
    """xml_text's promise: character data or a double-quoted attribute's value, the text shown as
    one printable line and nothing else (mutations: `"` not escaped, which lets a label close the
    attribute and add one of its own; `&`, `<`, `>` not escaped)."""
    escaped = xml_text(text)
    element = ElementTree.fromstring(f'<text label="{escaped}" fill="#000">{escaped}</text>')
    assert element.attrib == {"label": one_line(text), "fill": "#000"}
    assert element.text == one_line(text)


def test_one_line_and_markdown_show_free_text_literally() -> None:
    """Every line break is one space; every character that could start Markdown is a character
    reference; an underscore inside a word stays (mutations: a break or a special left out)."""
    from ifaudit.io.formats.escape import markdown, markdown_code

    breaks = "\t\n\v\f\r\x1c\x1d\x1e\x85\u2028\u2029"
    assert [one_line(f"a{char}b") for char in breaks] == ["a b"] * len(breaks)
    assert one_line("a\x1b\u200bb") == "a\\x1b\\u200bb"
    assert markdown("\\`*[]|~$&<>") == "&#92;&#96;&#42;&#91;&#93;&#124;&#126;&#36;&amp;&lt;&gt;"
    assert markdown("snake_case _lead trail_ a_b") == "snake_case &#95;lead trail&#95; a_b"
    assert markdown("Plain (text), 1.5 - it's") == "Plain (text), 1.5 - it's"
    assert markdown_code("a``b") == "```a``b```"
    assert markdown_code("`x") == "`` `x ``"
    assert markdown_code("x`") == "`` x` ``"
    assert markdown_code("plain") == "`plain`"


def test_latex_writes_specials_accents_and_other_characters_as_pdflatex_prints_them() -> None:
    """LaTeX's specials escaped, brackets braced, a Latin letter with one accent as the accent
    command (a dotless i under it), a few letters and the report's own symbols as their commands,
    any other character as its code point in brackets, line breaks as spaces (latex's docstring)."""
    from ifaudit.io.formats.escape import latex

    assert latex("\\{}%&#$_~^<>|[]") == (
        r"\textbackslash{}\{\}\%\&\#\$\_\textasciitilde{}\textasciicircum{}\textless{}\textgreater{}\textbar{}{[}{]}"
    )
    assert latex("é ü ñ ç ő í ǰ") == r"\'{e} \"{u} \~{n} \c{c} \H{o} \'{\i} \v{\j}"
    assert latex("ß æ Æ œ Œ ø Ø ł Ł ı − – — … × ⚠") == (
        r"\ss{} \ae{} \AE{} \oe{} \OE{} \o{} \O{} \l{} \L{} \i{} $-$ -- --- \ldots{} $\times$ (!)"
    )
    assert latex("😀 中 a\u0301 ǖ") == "{[}U+1F600{]} {[}U+4E2D{]} a{[}U+0301{]} {[}U+01D6{]}"
    assert latex("line\nbreak\x1b") == r"line break\textbackslash{}x1b"
    assert latex("Plain (text), 1.5 - it's") == "Plain (text), 1.5 - it's"


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("\r=HYPERLINK(1)", "'\n=HYPERLINK(1)"),  # guarded by what the text started with, a CR
        ("\r\n=1", "'\n=1"),  # CRLF is one line break
        ("\t=1", "'\t=1"),
        ("=1+1", "'=1+1"),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("a\rb", "a\nb"),
        ("a\r\nb", "a\nb"),
        ("plain text", "plain text"),
        ("", ""),
        (-1.5, -1.5),  # numbers are never text cells
        (None, None),
    ],
)
def test_csv_cells_guard_formula_starts_of_the_text_as_given(value: object, written: object) -> None:
    """OWASP's rule reads the text as it was given: a cell starting with a carriage return is
    guarded although the CR is written as a line break (mutations: the guard reading the text
    after `\\r` became `\\n`, a start character left out, CRLF made two breaks)."""
    assert csv_cell(value) == written


# --- the key's redaction --------------------------------------------------------------------------


KEY = "sk0abc1def2ghi3jkl4mno5pqr"  # no character of it in the texts around it below


@pytest.mark.parametrize(
    ("text", "stretches"),
    [
        (KEY + KEY, 1),  # adjacent repeats: one stretch
        (KEY + KEY + KEY, 1),
        (KEY + " " + KEY, 2),
        ("İ" + KEY, 1),  # İ lower-cases to two characters
        ("İİİ " + KEY.upper() + " İ", 1),
        ("İ" + KEY + "İ" + KEY + "İ", 2),
        ("ẞ ﬃ İ" + KEY[:9] + "İ", 1),  # 9 characters of the key, after others that fold otherwise
        *(("x" * n + KEY + "y" * n, 1) for n in range(1, 9)),  # the key at every offset of a block
        *(("İ" * n + KEY + KEY, 1) for n in range(1, 9)),
    ],
)
def test_redaction_leaves_no_character_of_the_key_whatever_surrounds_it(text: str, stretches: int) -> None:
    """Every character of the key's stretches is redacted, wherever it falls and whatever comes
    before it (mutations: adjacent stretches split or one window skipped, leaking the key's first
    character; the text case-folded with `str.lower`, which moves every position after an `İ`)."""
    redacted, count = Redactor(KEY).text(text)
    assert count == stretches
    assert not set(redacted.replace(REDACTED, "")) & set(KEY + KEY.upper()), redacted


def test_redaction_keeps_exactly_the_text_around_the_key() -> None:
    redactor = Redactor(KEY)
    assert redactor.text("İ" + KEY + "İ") == (f"İ{REDACTED}İ", 1)
    assert redactor.text("ab " + KEY + KEY + " cd") == (f"ab {REDACTED} cd", 1)
    assert redactor.text("ab " + KEY + "-" + KEY + " cd") == (f"ab {REDACTED}-{REDACTED} cd", 2)
    assert redactor.text("İs " + KEY[:8]) == (f"İs {REDACTED}", 1)
    assert redactor.text("İs " + KEY[:7]) == ("İs " + KEY[:7], 0)


def test_a_short_key_is_redacted_whole_and_only_whole_with_its_encodings() -> None:
    import base64

    redactor = Redactor("EMPTY")
    assert redactor.text("key EMPTY, EMPT, Empty") == (f"key {REDACTED}, EMPT, Empty", 1)
    header = base64.b64encode(b"Bearer EMPTY").decode()
    assert redactor.text(f"Authorization: Basic {header}") == (f"Authorization: Basic {REDACTED}", 1)
    assert Redactor(KEY[:8]).text("x" + KEY[:8].upper() + "y") == (f"x{REDACTED}y", 1)  # 8: in any case
    assert Redactor(KEY[:8]).text(KEY[:7]) == (KEY[:7], 0)


# A key with characters each encoding writes otherwise: a quote and a backslash (JSON), a slash,
# a plus, a space and a percent sign (percent-encoding), non-ASCII letters (JSON's \\u escapes,
# UTF-8 bytes, a case-insensitive match beyond ASCII).
ODD_KEY = 'sk-"ab/c+d e\\f%g§hключ12'


def _echoes(key: str) -> dict[str, str]:
    """The key as a server may echo it, by how: each writing is the key material in it (in a
    base64 text, the characters only the key's bytes decide: those whose 6 bits lie within them)."""
    import base64
    import urllib.parse

    data = key.encode("utf-8")
    echoes = {
        "as is": key,
        "upper case": key.upper(),
        "JSON-escaped": json.dumps(key)[1:-1],
        "JSON-escaped, non-ASCII kept": json.dumps(key, ensure_ascii=False)[1:-1],
        "percent-encoded": urllib.parse.quote(key, safe=""),
        "percent-encoded, lower case": urllib.parse.quote(key, safe="").lower(),
        "form-encoded": urllib.parse.quote_plus(key),
        "hex": data.hex(),
        "HEX": data.hex().upper(),
    }
    for prefix in (b"", b"u", b"us", b"Bearer ", b"user:"):  # every byte offset in a base64 text
        for suffix in (b"", b"!", b"!?"):
            first, end = -(-8 * len(prefix) // 6), 8 * (len(prefix) + len(data)) // 6
            for alphabet, encode in (("base64", base64.b64encode), ("URL-safe base64", base64.urlsafe_b64encode)):
                echo = encode(prefix + data + suffix).decode()
                echoes[f"{alphabet} after {prefix!r}, before {suffix!r}"] = echo[first:end]
    return echoes


@pytest.mark.parametrize("key", [ODD_KEY, KEY[:8], KEY, ODD_KEY * 3])
def test_every_encoding_of_the_key_an_echo_may_hold_is_redacted_leaving_no_8_characters_of_it(key: str) -> None:
    """Whichever way the server wrote the key back, all of that writing is one redacted stretch,
    nothing of it left (mutations: an encoding left out or cut short, the base64 cores at one byte offset wrong
    or dropped, non-ASCII case-folding lost, a key of exactly 8 characters taken as short)."""
    import base64

    redactor = Redactor(key)
    for how, material in _echoes(key).items():
        assert redactor.text(f"error: {material} was refused") == (f"error: {REDACTED} was refused", 1), how
    data = key.encode()
    for prefix in (b"", b"u", b"us", b"Bearer ", b"user:"):  # the whole base64 text too, its other characters kept
        text = base64.b64encode(prefix + data + b"!?").decode()
        redacted, count = redactor.text(text)
        assert count == 1 and redacted.startswith(text[: len(prefix) * 4 // 3]), (prefix, redacted)


def test_a_short_key_is_redacted_in_each_whole_encoding_and_three_stretches_each_once() -> None:
    """A key under 8 characters is redacted as a whole writing only: its lower-case percent-encoding
    (a host name), its upper-case hex, its base64 with and without padding, the longest writing
    first (mutations: a form left out or mis-stripped, the forms tried shortest first); and three
    separate stretches of a long key are three markers, the text between them kept."""
    import base64

    redactor = Redactor("EMPTY")
    padded = base64.b64encode(b"EMPTY").decode()
    for echo in ("http://empty.example/", b"EMPTY".hex().upper(), padded, padded.rstrip("=") + " "):
        redacted, count = redactor.text(f"<{echo}>")
        assert (count, redacted.count(REDACTED)) == (1, 1), echo
        assert "EMPTY".lower() not in redacted.lower() and padded.rstrip("=") not in redacted
    assert redactor.text(f"<{padded}>") == (f"<{REDACTED}>", 1)
    assert Redactor("k/Y").text("http://k%2fy.example/") == (f"http://{REDACTED}.example/", 1)
    assert Redactor(KEY).text(f"a {KEY} b {KEY} c {KEY} d") == (f"a {REDACTED} b {REDACTED} c {REDACTED} d", 3)


# --- the headlines --------------------------------------------------------------------------------


def _row(title: str, value: float, counted: bool = True) -> dict:
    return {
        "title": title,
        "value": value,
        "ci_low": value - 0.02,
        "ci_high": value + 0.03,
        "counted": counted,
        "level": 0.95,
    }


ROWS = [_row("prompt-level strict", 0.7708), _row("instruction-level strict", 0.8369)]


def test_a_headline_says_prompts_without_a_response_only_when_there_are_some() -> None:
    """'0 of N prompts have no response' is never said; '3 of 541' is, before the figures."""
    assert headline("r", ROWS, (0, 541)) == (
        "r: counted; prompt-level strict 77.08 [75.08, 80.08], instruction-level strict 83.69 (percent, 95 % interval)"
    )
    assert headline("r", ROWS) == headline("r", ROWS, (0, 541))
    assert headline("r", [_row("p", 0.5, counted=False)], (3, 541)) == (
        "r: does not count (below); 3 of 541 prompts have no response and count as failed; p 50.00 [48.00, 53.00] "
        "(percent, 95 % interval)"
    )


def test_headline_lines_read_each_runs_unanswered_prompts_from_its_summary(tmp_path: Path) -> None:
    results = tmp_path / "results"
    rows = [{**row, "run": run} for run in ("full", "partial") for row in ROWS]
    (results / "full").mkdir(parents=True)
    (results / "partial").mkdir()
    (results / "tables.json").write_text(json.dumps({"metrics": rows}))
    (results / "full" / "summary.json").write_text(json.dumps({"missing_prompts": [], "prompts": 541}))
    (results / "partial" / "summary.json").write_text(json.dumps({"missing_prompts": [3, 9], "prompts": 541}))
    full, partial = headline_lines(results)
    assert full.startswith("full: counted; prompt-level strict 77.08") and "no response" not in full
    assert partial.startswith("partial: counted; 2 of 541 prompts have no response and count as failed; ")
    # A table row naming no valid run (a hand-edited tables.json) is shown, never read as a path.
    (tmp_path / "summary.json").write_text(json.dumps({"missing_prompts": [1], "prompts": 9}))
    (results / "tables.json").write_text(json.dumps({"metrics": [{**ROWS[0], "run": ".."}]}))
    (shown,) = headline_lines(results)
    assert shown.startswith("..: counted; prompt-level strict") and "no response" not in shown


# --- confinement of names handed in --------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("", "not a relative path"),
        ("/etc/passwd", "not a relative path"),
        ("a\\b", "holds a backslash or a control character"),
        ("a\x00b", "holds a backslash or a control character"),
        ("a\x1fb", "holds a backslash or a control character"),
        ("a\x7fb", "holds a backslash or a control character"),
        ("a/../b", "has an empty, `.` or `..` part"),
        ("..", "has an empty, `.` or `..` part"),
        ("a/./b", "has an empty, `.` or `..` part"),
        ("a//b", "has an empty, `.` or `..` part"),
        ("a/", "has an empty, `.` or `..` part"),
        ("/".join("d" * 101), "is nested deeper than 100 folders"),
    ],
)
def test_a_handed_in_name_that_could_leave_its_folder_is_refused_saying_why(name: str, why: str) -> None:
    from ifaudit.io.confine import name_problem

    assert name_problem(name) == why


@pytest.mark.parametrize("name", ["a", "a/b.json", "a b/c~d", "é/ü", ".hidden/x", "..a/b..", "/".join("d" * 100)])
def test_a_plain_relative_name_is_accepted(name: str) -> None:
    from ifaudit.io.confine import name_problem

    assert name_problem(name) is None


def test_a_joined_path_through_a_link_is_refused_and_one_not_yet_made_is_allowed(tmp_path: Path) -> None:
    from ifaudit.io.confine import inside, leads_out

    root = tmp_path / "root"
    (root / "real").mkdir(parents=True)
    (root / "out").symlink_to(tmp_path)
    (root / "real" / "in").symlink_to(root / "real")  # a link that stays inside is refused too
    assert inside(root, "real/new/file.json", "here") == root.resolve() / "real/new/file.json"
    for name in ("out/x", "out", "real/in/x"):
        with pytest.raises(VerificationError, match=rf"^here: path '{name}' goes through a symbolic link"):
            inside(root, name, "here", VerificationError)
    with pytest.raises(InputError, match=r"^here: path '\.\./x' has an empty"):
        inside(root, "../x", "here")
    assert leads_out(root, "out/x") and leads_out(root, "../x") and not leads_out(root, "real/in/x")


def test_walk_lists_each_folder_sorted_before_its_contents_and_refuses_past_its_caps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ifaudit.io import confine

    for name in ("b/z", "b/a", "a", "c/d/e"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "b")
    listed = [relative for relative, _ in confine.walk(tmp_path)]
    assert listed == ["a", "b", "c", "link", "b/a", "b/z", "c/d", "c/d/e"]  # a folder's entries, then below
    with pytest.raises(InputError, match="a symbolic link in the folder"):
        confine.plain_files(tmp_path, "the folder")
    (tmp_path / "link").unlink()
    assert confine.plain_files(tmp_path, "the folder") == ["a", "b/a", "b/z", "c/d/e"]
    monkeypatch.setattr(confine, "MAX_ENTRIES", 7)
    assert len(list(confine.walk(tmp_path))) == 7
    monkeypatch.setattr(confine, "MAX_ENTRIES", 6)
    with pytest.raises(InputError, match="holds more than 6 files and folders"):
        list(confine.walk(tmp_path))
    monkeypatch.setattr(confine, "MAX_ENTRIES", 200_000)
    monkeypatch.setattr(confine, "MAX_DEPTH", 3)
    assert len(list(confine.walk(tmp_path))) == 7
    monkeypatch.setattr(confine, "MAX_DEPTH", 2)
    with pytest.raises(InputError, match="folders nested deeper than 2 levels"):
        list(confine.walk(tmp_path))


def test_plain_files_names_a_fifo_and_refuses_past_the_caps_with_the_error_type_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A FIFO is named for what it is; the walk's own refusals come as the caller's error type (a
    bundle's are VerificationErrors), not the default InputError."""
    from ifaudit.io import confine
    from ifaudit.io.paths import not_regular

    (tmp_path / "a").mkdir()
    (tmp_path / "a/x").write_text("x")
    monkeypatch.setattr(confine, "MAX_ENTRIES", 1)
    with pytest.raises(VerificationError, match="holds more than 1 files and folders"):
        confine.plain_files(tmp_path, "the bundle", VerificationError)
    monkeypatch.setattr(confine, "MAX_ENTRIES", 200_000)
    os.mkfifo(tmp_path / "a/pipe")
    mode = os.lstat(tmp_path / "a/pipe").st_mode
    with pytest.raises(VerificationError) as caught:
        confine.plain_files(tmp_path, "the bundle", VerificationError)
    assert (
        str(caught.value) == f"{tmp_path / 'a/pipe'}: {not_regular(mode)}; the bundle may hold only files and folders"
    )


# --- the NLTK resources' pins ---------------------------------------------------------------------


def _resource(data: bytes):
    from ifaudit.io.remote.nltk_resources import NltkFile, NltkResource

    return NltkResource("corpora/words", (NltkFile("corpora/words/english", _sha(data), len(data)),))


def test_nltk_resources_are_taken_only_with_their_pinned_bytes_from_the_first_source_that_has_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A source with other bytes is passed over (and named if none has them); the materialized
    folder goes first on nltk's path, once; a copy there that no longer verifies is made again."""
    import nltk

    from ifaudit.io.remote.nltk_resources import materialize_nltk

    monkeypatch.setattr(nltk.data, "path", ["/elsewhere"])
    wrong, right, root = tmp_path / "wrong", tmp_path / "right", tmp_path / "root"
    _write(wrong, {"corpora/words/english": b"others\n"})  # the pinned size, other bytes
    _write(right, {"corpora/words/english": b"pinned\n"})
    with pytest.raises(VerificationError) as caught:
        materialize_nltk(root, [_resource(b"pinned\n")], [wrong])
    assert str(caught.value) == (
        f"NLTK data corpora/words/english: no source has the pinned bytes ({_sha(b'pinned' + bytes([10]))}): "
        f"{wrong}/corpora/words/english: sha256 {_sha(b'others' + bytes([10]))}"
    )
    data = materialize_nltk(root, [_resource(b"pinned\n")], [wrong, right])
    assert (root / "corpora/words/english").read_bytes() == b"pinned\n"
    assert data.sha256 == {"corpora/words/english": _sha(b"pinned\n")}
    assert nltk.data.path == [str(root.resolve()), "/elsewhere"]
    (root / "corpora/words/english").write_bytes(b"edited\n")
    materialize_nltk(root, [_resource(b"pinned\n")], [right])
    assert (root / "corpora/words/english").read_bytes() == b"pinned\n"
    assert nltk.data.path == [str(root.resolve()), "/elsewhere"]


def test_ifbench_grading_records_the_pinned_nltk_inputs_of_its_three_resources(
    ifbench_graders: IfbenchGraders,
) -> None:
    """What a bundle carries of IFBench's NLTK data: the tagger's pinned archive (not the JSON made
    of it), punkt_tab's and the stop words' files, each by its pinned sha256."""
    from ifaudit.tasks.ifbench import NLTK_RESOURCES

    files = IFBENCH.nltk_files(ifbench_graders.options(None))
    assert sorted(files.described["resources"]) == [
        "corpora/stopwords",
        "taggers/averaged_perceptron_tagger_eng",
        "tokenizers/punkt_tab",
    ]
    assert "packages/taggers/averaged_perceptron_tagger.zip" in files.files
    pinned = {f.path: f.sha256 for resource in NLTK_RESOURCES for f in (resource.source,) + resource.files if f}
    assert files.described["pinned"] == {path: _sha(data) for path, data in sorted(files.files.items())}
    assert all(pinned[path] == digest for path, digest in files.described["pinned"].items())


def test_counted_says_each_runs_headline_then_each_changed_file_then_each_recorded_run_not_counted(
    tmp_path: Path,
) -> None:
    """What `ifaudit counted` says, in process: the headlines; a file changed since the DAG
    recorded it, with what that means; and a recorded run that does not count (here, no summary)."""
    from ifaudit.steps.reporting.headlines import said_by_counted

    project = _project(tmp_path, ["results/r1/grades.jsonl"], ["results/r1/grades.jsonl"])
    results = project / "results"
    (results / "tables.json").write_text(json.dumps({"metrics": [{**ROWS[0], "run": "r1"}]}))
    (results / "MANIFEST.json").write_text(json.dumps({"runs": ["r1"]}))
    (results / "r1/grades.jsonl").write_text("edited\n")
    headlines, reasons = said_by_counted(results)
    assert headlines == [headline("r1", [ROWS[0]])]
    assert len(reasons) == 2
    assert reasons[0].startswith("results/r1/grades.jsonl: its bytes changed since the DAG last recorded them (sha256 ")
    assert reasons[0].endswith(": what was made from it does not count until the DAG runs again")
    assert reasons[1].startswith("run r1 ")
