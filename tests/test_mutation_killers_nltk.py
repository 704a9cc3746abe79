"""The NLTK resource pins (io/remote/nltk_resources.py) in process, on small resources made here,
where mutmut's run left them (2026-12-08): which bytes are taken from which source and what a miss
says, the pickle the tagger is read from, the paths a pin may name, the folder the files are
assembled in and what is returned. Each test was seen failing on the mutations its docstring names
(applied by hand, then reverted)."""

from __future__ import annotations

import io
import json
import os
import pickle
import zipfile
from pathlib import Path

import pytest

from ifaudit.core.errors import VerificationError
from ifaudit.io.canonical import sha256_bytes
from ifaudit.io.confine import name_problem
from ifaudit.io.remote import nltk_resources
from ifaudit.io.remote.nltk_data import import_nltk
from ifaudit.io.remote.nltk_resources import (
    TAGGER_PICKLE,
    NltkData,
    NltkFile,
    NltkResource,
    check_paths,
    describe_resources,
    materialize_nltk,
    perceptron_json,
    pinned_inputs,
)

WORDS, STOP = b"alpha\nbeta\n", b"the\na\n"


def _pinned(path: str, data: bytes) -> NltkFile:
    return NltkFile(path, sha256_bytes(data), len(data))


def _write(folder: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


@pytest.fixture
def nltk_path(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """nltk's path, restored after the test (materialize_nltk puts its folder first)."""
    nltk = import_nltk()
    monkeypatch.setattr(nltk.data, "path", ["/elsewhere"])
    return nltk.data.path


# --- the tagger's pickle --------------------------------------------------------------------------


MODEL = ({"w": {"NN": 1.5}}, {"the": "DT"}, {"NN", "DT", "VB"})


@pytest.mark.parametrize(("protocol", "fix_imports"), [(2, True), (2, False), (3, True)])
def test_a_pickled_model_of_builtin_sets_loads_under_either_name_of_the_builtins(
    protocol: int, fix_imports: bool
) -> None:
    """Python 2's pickle (the pinned 2015 model) names `set` in `__builtin__`, Python 3's in
    `builtins`: both are sets, anything else is refused (mutations: either name or `set` altered)."""
    data = pickle.dumps(MODEL, protocol=protocol, fix_imports=fix_imports)
    assert nltk_resources._restricted_load(data) == MODEL
    with pytest.raises(
        pickle.UnpicklingError, match=r"^refusing (__builtin__|builtins)\.frozenset in a pickled model$"
    ):
        nltk_resources._restricted_load(pickle.dumps(frozenset({1}), protocol=protocol, fix_imports=fix_imports))


def _archive(model: object) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(TAGGER_PICKLE, pickle.dumps(model, protocol=2))
    return buffer.getvalue()


def test_the_tagger_is_written_as_nltks_three_json_files_from_a_triple_only() -> None:
    """(mutation: a list of three taken for the tuple, `and` for `or`)"""
    made = perceptron_json(_archive(MODEL))
    prefix = "averaged_perceptron_tagger_eng"
    assert made == {
        f"{prefix}.weights.json": json.dumps(MODEL[0]).encode(),
        f"{prefix}.tagdict.json": json.dumps(MODEL[1]).encode(),
        f"{prefix}.classes.json": b'["DT", "NN", "VB"]',
    }
    for other in (list(MODEL), MODEL[:2]):
        with pytest.raises(VerificationError, match=r"expected \(weights, tagdict, classes\)$"):
            perceptron_json(_archive(other))


# --- sources ---------------------------------------------------------------------------------------


def test_a_data_servers_path_is_looked_for_as_given_then_without_packages_in_each_source(tmp_path: Path) -> None:
    """(mutations: the prefix tested or removed altered, removed as a suffix)"""
    a, b = tmp_path / "a", tmp_path / "b"
    assert list(nltk_resources._candidates("packages/taggers/t.zip", [a, b])) == [
        a / "packages/taggers/t.zip",
        a / "taggers/t.zip",
        b / "packages/taggers/t.zip",
        b / "taggers/t.zip",
    ]
    assert list(nltk_resources._candidates("corpora/packages/x", [a])) == [a / "corpora/packages/x"]


def test_the_first_source_with_the_pinned_bytes_is_taken_past_other_sizes_folders_and_other_bytes(
    tmp_path: Path,
) -> None:
    """A source of another size is refused unread, one holding a folder there passed over, one of
    other bytes named with their sha256; the next source is still tried, and a miss everywhere
    names every source's miss or every source (mutations: the size not checked first, a miss's
    words dropped, `break` for `continue`, the message's joins altered)."""
    pinned = _pinned("corpora/words/english", WORDS)
    other = WORDS.replace(b"alpha", b"gamma")
    small = _write(tmp_path / "small", {pinned.path: b"x"})
    folder = tmp_path / "folder"
    (folder / pinned.path).mkdir(parents=True)
    wrong = _write(tmp_path / "wrong", {pinned.path: other})
    right = _write(tmp_path / "right", {pinned.path: WORDS})
    assert nltk_resources._pinned_bytes(pinned, [small, folder, wrong, right]) == WORDS
    with pytest.raises(VerificationError) as missed:
        nltk_resources._pinned_bytes(pinned, [small, folder, wrong])
    assert str(missed.value) == (
        f"NLTK data {pinned.path}: no source has the pinned bytes ({pinned.sha256}): "
        f"size mismatch: {small / pinned.path} has 1 bytes, pinned {len(WORDS)}; not read; "
        f"{wrong / pinned.path}: sha256 {sha256_bytes(other)}"
    )
    with pytest.raises(VerificationError) as nowhere:
        nltk_resources._pinned_bytes(pinned, [tmp_path / "none", folder])
    assert str(nowhere.value).endswith(f"({pinned.sha256}): not found in {tmp_path / 'none'}, {folder}")


# --- the paths a pin names -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "message"),
    [
        (NltkResource("../up", ()), "NLTK data '../up': its name's path '../up' {why}"),
        (
            NltkResource("corpora/words", (_pinned("corpora/../x", WORDS),)),
            "NLTK data 'corpora/words': a file's path 'corpora/../x' {why}",
        ),
        (
            NltkResource(
                "corpora/words", (_pinned("corpora/words/english", WORDS),), source=_pinned("/abs.zip", WORDS)
            ),
            "NLTK data 'corpora/words': its source's path '/abs.zip' {why}",
        ),
        # A resource made from a source has its name and files checked all the same.
        (
            NltkResource("..", (_pinned("../english", WORDS),), source=_pinned("packages/a.zip", WORDS)),
            "NLTK data '..': its name's path '..' {why}",
        ),
        (
            NltkResource("corpora/words", (_pinned("corpora/other/english", WORDS),)),
            "NLTK data 'corpora/words': file 'corpora/other/english' is not in its folder",
        ),
    ],
)
def test_a_pin_naming_a_path_that_leaves_its_folder_is_refused_saying_which(
    resource: NltkResource, message: str
) -> None:
    """(mutations: the name, a file or the source named otherwise; the source's path not checked,
    or checked instead of the name and files)"""
    bad = next(
        path
        for path in (resource.name, *(f.path for f in resource.files), getattr(resource.source, "path", ""))
        if name_problem(path)
    )
    with pytest.raises(VerificationError) as refused:
        check_paths(resource)
    assert str(refused.value) == message.format(why=name_problem(bad) or "")


# --- materializing -------------------------------------------------------------------------------------


def test_a_resource_with_a_source_but_nothing_to_convert_it_is_taken_file_by_file(
    tmp_path: Path, nltk_path: list[str]
) -> None:
    """(mutations: `or` for `and` in choosing what to read and how to make the files)"""
    resource = NltkResource(
        "corpora/words", (_pinned("corpora/words/english", WORDS),), source=_pinned("packages/words.zip", b"zip")
    )
    mirror = _write(tmp_path / "mirror", {"corpora/words/english": WORDS})
    assert pinned_inputs([resource], [mirror]) == {"corpora/words/english": WORDS}
    materialize_nltk(tmp_path / "root", [resource], [mirror])
    assert (tmp_path / "root/corpora/words/english").read_bytes() == WORDS


def test_a_conversion_that_leaves_a_pinned_file_out_is_refused_naming_it(tmp_path: Path, nltk_path: list[str]) -> None:
    """(mutations: the default for a file not made altered: a crash, or another digest said)"""
    source = _pinned("packages/words.zip", b"zip")
    resource = NltkResource(
        "corpora/words",
        (_pinned("corpora/words/english", WORDS), _pinned("corpora/words/README", b"readme")),
        source=source,
        convert=lambda data: {"english": WORDS},
    )
    mirror = _write(tmp_path / "mirror", {"words.zip": b"zip"})
    with pytest.raises(VerificationError) as refused:
        materialize_nltk(tmp_path / "root", [resource], [mirror])
    assert str(refused.value) == (
        f"NLTK data corpora/words/README: made {sha256_bytes(b'')}, pinned {sha256_bytes(b'readme')}"
    )


def test_materializing_assembles_each_resource_in_a_hidden_folder_of_its_root_and_moves_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nltk_path: list[str]
) -> None:
    """A resource in place is kept and the next still made (three levels deep: its parents
    made); each is staged in a hidden folder inside the root (one file system: the rename is
    atomic), removed after; the data returned names the root, its origin and every pinned file,
    and the root goes first on nltk's path, once (mutations: `break` for `continue`, the staging
    folder's name or place altered, not removed, the parents not made, the data's fields)."""
    kept = NltkResource("corpora/stop", (_pinned("corpora/stop/english", STOP),))
    made = NltkResource("misc/lists/words", (_pinned("misc/lists/words/english", WORDS),))
    root = _write(tmp_path / "root", {"corpora/stop/english": STOP})
    mirror = _write(tmp_path / "mirror", {"misc/lists/words/english": WORDS})
    staged: list[Path] = []
    move = nltk_resources._move_into_place

    def watched(source: Path, destination: Path) -> None:
        staged.append(source)
        move(source, destination)

    monkeypatch.setattr(nltk_resources, "_move_into_place", watched)
    data = materialize_nltk(root, [kept, made], [mirror])
    (source,) = staged
    staging = Path(str(source).removesuffix("/" + made.name))
    assert staging / made.name == source
    assert staging.parent == root.resolve() and staging.name.startswith(".staging-")
    assert sorted(path.name for path in root.iterdir()) == ["corpora", "misc"]
    assert (root / "misc/lists/words/english").read_bytes() == WORDS
    assert data == NltkData(
        root=root.resolve(),
        origin="pinned",
        sha256={"corpora/stop/english": sha256_bytes(STOP), "misc/lists/words/english": sha256_bytes(WORDS)},
        resources=(kept, made),
    )
    assert data.describe() == describe_resources([kept, made])
    materialize_nltk(root, [kept, made], [mirror])
    assert nltk_path == [str(root.resolve()), "/elsewhere"]


def test_a_staged_resource_that_cannot_be_renamed_raises_unless_another_process_put_it_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(mutation: the test of the destination inverted: the failure swallowed, the winner's copy
    taken for a failure)"""
    with pytest.raises(FileNotFoundError):
        nltk_resources._move_into_place(tmp_path / "staged-nowhere", tmp_path / "root/corpora/words")
    destination = tmp_path / "root/corpora/words"

    def lost_the_race(source: Path, target: Path) -> None:
        destination.mkdir()
        raise OSError(39, "Directory not empty")

    monkeypatch.setattr(os, "rename", lost_the_race)
    nltk_resources._move_into_place(tmp_path / "staged", destination)
    assert destination.is_dir()
