"""Hostile files, each one line and nothing partial: a pin whose path, commit, version or package
leads out of its folder; a source file (a link in a mirror, the user's folder, an NLTK mirror) of
another size than the pin's, a 3 GiB sparse file behind a link, refused before it is read; a
file-size limit (`ulimit -f`) while resources are materialized; a `BUNDLE.json` or a manifest of
the wrong shape or nested 10,000 deep, `verify-bundle ""`, a folder that is no bundle; an inspect
`.eval` whose central directory offset lies.

What is refused is said in one `ifaudit: error:` line naming the file (and the field or entry),
with a non-zero exit, and leaves nothing written outside its folder and no half-made resource
that a later run would take for a valid one."""

from __future__ import annotations

import hashlib
import os
import re
import resource
import shutil
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import IFAUDIT, IFEVAL_PROMPTS, NLTK_MIRROR, REPO, UPSTREAM_SOURCE, cli_env, run_cli
from test_confinement_hostile import _eval_archive, _eval_members, _hand_made_bundle, _one_error, _refused_import

PIN = REPO / "vendor/google_ifeval/pin.toml"
IFBENCH_PIN = REPO / "vendor/allenai_ifbench/pin.toml"
PINNED = "instruction_following_eval/instructions.py"  # 52,983 bytes
SPARSE = 3 * 1024**3  # the 3 GiB sparse file a link in a mirror leads to
ADDRESS_SPACE = 2 * 1024**3  # a process reading the sparse file whole fails under this limit


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _limited(*, address_space: int | None = None, file_size: int | None = None) -> Callable[[], None]:
    """A preexec function setting `ulimit -v` (bytes of address space) or `ulimit -f` (bytes per file)."""

    def limit() -> None:
        if address_space is not None:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        if file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

    return limit


def _ifaudit(
    args: list[str], resources: Path, limit: Callable[[], None] | None = None, **env: str
) -> tuple[int, list[str]]:
    done = subprocess.run(
        [str(IFAUDIT), *args],
        env=cli_env(resources, **env),
        capture_output=True,
        text=True,
        preexec_fn=limit,
        check=False,
    )
    return done.returncode, done.stderr.splitlines()


def _only_error(code: int, lines: list[str], exit_code: int = 2) -> str:
    """The one line an `ifaudit` that refused printed (notes before it allowed), never a traceback."""
    assert code == exit_code, lines
    assert lines and lines[-1].startswith("ifaudit: error: "), lines
    assert not any("Traceback" in line for line in lines), lines
    return lines[-1]


def _files_below(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() or p.is_symlink())


# --- a pin's paths stay inside the folder its files are materialized in --------------------------


def _pin_with(tmp: Path, old: str, new: str) -> Path:
    text = PIN.read_text()
    assert old in text
    pin = tmp / "pin.toml"
    pin.write_text(text.replace(old, new, 1))
    return pin


ESCAPING_PINS = {
    "path ../../": (
        'path = "instruction_following_eval/evaluation_main.py"',
        'path = "../../escaped.py"',
        "files[4].path",
    ),
    "path absolute": (
        'path = "instruction_following_eval/evaluation_main.py"',
        'path = "{tmp}/escaped-absolute.py"',
        "files[4].path",
    ),
    "path a/../..": (
        'path = "instruction_following_eval/evaluation_main.py"',
        'path = "instruction_following_eval/../../../escaped.py"',
        "files[4].path",
    ),
    "commit ../": ('commit = "5b09c22d73a9d35eb6c5d2a99b95677a45053466"', 'commit = "../../escaped"', "commit"),
    "commit a table": ('commit = "5b09c22d73a9d35eb6c5d2a99b95677a45053466"', "commit = {a = 1}", "commit"),
    "package ../..": ('package = "instruction_following_eval"', 'package = "../.."', "package"),
    "size huge": ("size = 52983", "size = 1e400", "files[0].size"),
    "size negative": ("size = 52983", "size = -1", "files[0].size"),
    "path twice": (
        'path = "instruction_following_eval/evaluation_main.py"',
        'path = "instruction_following_eval/instructions.py"',
        "files[4].path",
    ),
}


@pytest.mark.parametrize("case", sorted(ESCAPING_PINS))
def test_a_pin_naming_a_place_outside_its_folder_is_one_line_and_writes_nothing(tmp_path: Path, case: str) -> None:
    old, new, field = ESCAPING_PINS[case]
    pin = _pin_with(tmp_path, old, new.replace("{tmp}", str(tmp_path)))
    # A source that has the pinned bytes at the hostile path too (by its file name): before the
    # pin's paths were checked, `../../escaped.py` was written two folders above the staging folder.
    source = tmp_path / "work" / "source"
    shutil.copytree(Path(UPSTREAM_SOURCE) / "instruction_following_eval", source / "instruction_following_eval")
    for name in ("escaped.py", "escaped-absolute.py"):
        shutil.copyfile(source / "instruction_following_eval/evaluation_main.py", source / name)
    resources = tmp_path / "work" / "resources"
    before = _files_below(tmp_path)
    code, lines = _ifaudit(["vendor", "--pin", str(pin), "--from", str(source), "--offline"], resources)
    line = _only_error(code, lines)
    assert f"{pin}: field '{field}': " in line, line
    assert _files_below(tmp_path) == before  # nothing written anywhere, inside resources or out


NOT_PINS = {
    "nested 10,000 deep": (
        "x = " + "[" * 10_000 + "]" * 10_000 + "\n",
        "not a pin file: nested too deep for TOML to read",
    ),
    "tables 3,000 deep": ("x = " + "{a=" * 3_000 + "1" + "}" * 3_000 + "\n", "not a pin file: nested too deep"),
    "mirrors a string": (None, "field 'mirrors': expected a list of folders or URLs"),
    "a link to a 3 GiB sparse file": (None, "not a pin file: more than 1048576 bytes"),
}


@pytest.mark.parametrize("case", sorted(NOT_PINS))
def test_a_pin_file_that_is_no_pin_is_one_line(tmp_path: Path, sparse: Path, case: str) -> None:
    text, expected = NOT_PINS[case]
    pin = tmp_path / "pin.toml"
    if case == "mirrors a string":
        pin = _pin_with(tmp_path, 'package = "instruction_following_eval"', 'package = "x"\nmirrors = "abc"')
    elif text is None:
        pin.symlink_to(sparse)
    else:
        pin.write_text(text)
    args = ["vendor", "--pin", str(pin), "--offline"]
    line = _only_error(*_ifaudit(args, tmp_path / "resources", _limited(address_space=ADDRESS_SPACE)))
    assert f"{pin}: {expected}" in line, line
    assert not (tmp_path / "resources").exists()


def test_a_pin_version_leading_out_is_one_line(tmp_path: Path) -> None:
    text = IFBENCH_PIN.read_text().replace('default = "c6767a1"', 'default = "../../c6767a1"')
    text = text.replace("versions.c6767a1", 'versions."../../c6767a1"')
    pin = tmp_path / "pin.toml"
    pin.write_text(text)
    code, lines = _ifaudit(["vendor", "--task", "ifbench", "--pin", str(pin), "--offline"], tmp_path / "resources")
    line = _only_error(code, lines)
    assert f"{pin}: field 'versions': '../../c6767a1' is not a plain name" in line, line
    assert _files_below(tmp_path) == ["pin.toml"]


def test_an_nltk_resource_path_leading_out_is_refused_before_anything_is_read_or_written(tmp_path: Path) -> None:
    from ifaudit.core.errors import VerificationError
    from ifaudit.io.remote.nltk_resources import NltkFile, NltkResource, materialize_nltk

    data = b"the stop words\n"
    (tmp_path / "escaped").write_bytes(data)
    for path in ("corpora/x/../../../escaped", "/abs/escaped", "elsewhere/escaped"):
        hostile = NltkResource("corpora/x", (NltkFile(path, _sha256(data), len(data)),))
        with pytest.raises(VerificationError, match=re.escape(repr(path))):
            materialize_nltk(tmp_path / "nltk", [hostile], [tmp_path])
    assert _files_below(tmp_path) == ["escaped"]


# --- sizes checked against the pin before a byte is read ------------------------------------------


@pytest.fixture
def sparse(tmp_path: Path) -> Path:
    """A 3 GiB sparse file (it takes no room on disk), removed afterwards."""
    path = tmp_path / "sparse.bin"
    with path.open("wb") as handle:
        handle.truncate(SPARSE)
    return path


def _mirror_with_link(tmp: Path, sparse: Path) -> Path:
    """A copy of the upstream grader files whose PINNED file is a link to the sparse file."""
    mirror = tmp / "mirror"
    shutil.copytree(Path(UPSTREAM_SOURCE) / "instruction_following_eval", mirror / "instruction_following_eval")
    (mirror / PINNED).unlink()
    (mirror / PINNED).symlink_to(sparse)
    return mirror


@pytest.mark.parametrize("where", ["--from folder", "the pin's mirror"])
def test_a_link_to_a_3_gib_sparse_file_in_a_grader_source_is_refused_unread(
    tmp_path: Path, sparse: Path, where: str
) -> None:
    mirror = _mirror_with_link(tmp_path, sparse)
    args = ["vendor", "--offline"]
    if where == "--from folder":
        args += ["--pin", str(PIN), "--from", str(mirror)]
    else:
        pin = _pin_with(
            tmp_path,
            'package = "instruction_following_eval"',
            f'package = "instruction_following_eval"\nmirrors = ["{mirror}"]',
        )
        args += ["--pin", str(pin)]
    # Under `ulimit -v` 2 GiB: a reader taking the file whole fails with a MemoryError traceback.
    code, lines = _ifaudit(
        args, tmp_path / "resources", _limited(address_space=ADDRESS_SPACE), IFAUDIT_GRADER_SOURCE=""
    )
    line = _only_error(code, lines, exit_code=3)
    assert f"{PINNED}: no source has the pinned bytes" in line, line
    assert f"{mirror / PINNED} has {SPARSE} bytes, pinned 52983; not read" in line, line
    assert not (
        tmp_path / "resources" / "vendor" / "google_ifeval" / "5b09c22d73a9d35eb6c5d2a99b95677a45053466"
    ).exists()


def _nltk_mirror_with_link(tmp: Path, sparse: Path, relative: str) -> Path:
    mirror = tmp / "nltk"
    shutil.copytree(NLTK_MIRROR, mirror)
    (mirror / relative).unlink()
    (mirror / relative).symlink_to(sparse)
    return mirror


def test_a_link_to_a_3_gib_sparse_file_in_an_nltk_mirror_is_passed_over_unread(tmp_path: Path, sparse: Path) -> None:
    """IFBench's pinned NLTK files: the linked one is passed over, named with its size."""
    mirror = _nltk_mirror_with_link(tmp_path, sparse, "corpora/stopwords/english")
    code, lines = _ifaudit(
        ["vendor", "--task", "ifbench", "--pin", str(IFBENCH_PIN), "--offline", "--nltk-mirror", str(mirror)],
        tmp_path / "resources",
        _limited(address_space=ADDRESS_SPACE),
        NLTK_DATA=str(tmp_path / "none"),
    )
    line = _only_error(code, lines, exit_code=3)
    assert "NLTK data corpora/stopwords/english: no source has the pinned bytes" in line, line
    assert f"{mirror}/corpora/stopwords/english has {SPARSE} bytes, pinned 1048; not read" in line, line
    assert not (tmp_path / "resources" / "nltk_data_pinned" / "corpora").exists()


def test_a_link_to_a_3_gib_sparse_file_in_the_punkt_mirror_is_not_copied(tmp_path: Path, sparse: Path) -> None:
    """IFEval's punkt_tab, copied from the mirror as it is (recorded by hash): a file over the cap
    is refused before it is read, and nothing of punkt_tab is left in the cache."""
    mirror = _nltk_mirror_with_link(tmp_path, sparse, "tokenizers/punkt_tab/english/ortho_context.tab")
    resources = tmp_path / "resources"
    code, lines = _ifaudit(
        ["vendor", "--pin", str(PIN), "--offline", "--record", str(tmp_path / "record.json")],
        resources,
        _limited(address_space=ADDRESS_SPACE),
        IFAUDIT_NLTK_MIRROR=str(mirror),
        NLTK_DATA=str(tmp_path / "none"),
    )
    line = _only_error(code, lines)
    assert f"{mirror}/tokenizers/punkt_tab/english/ortho_context.tab: {SPARSE} bytes, over the" in line, line
    assert not (resources / "nltk_data" / "tokenizers").exists() and not (tmp_path / "record.json").exists()
    assert not list((resources / "nltk_data").glob(".staging-*"))


# --- a file-size limit while resources are written ------------------------------------------------


@pytest.mark.parametrize("what", ["grader files", "IFBench's NLTK data", "punkt_tab"])
def test_a_file_size_limit_while_resources_are_written_is_one_line_and_leaves_nothing_half_made(
    tmp_path: Path, what: str
) -> None:
    resources = tmp_path / "resources"
    limit = 100 * 1024  # the grader files (53 KB at most) fit; punkt's ortho_context.tab (236 KB) does not
    args = {
        "grader files": ["vendor", "--pin", str(PIN), "--offline"],
        "IFBench's NLTK data": ["vendor", "--task", "ifbench", "--pin", str(IFBENCH_PIN), "--offline"],
        "punkt_tab": ["vendor", "--pin", str(PIN), "--offline", "--record", str(tmp_path / "record.json")],
    }[what]
    if what == "grader files":
        limit = 40 * 1024  # instructions.py, 53 KB, does not fit
    code, lines = _ifaudit(args, resources, _limited(file_size=limit), NLTK_DATA=str(tmp_path / "none"))
    line = _only_error(code, lines)
    assert "cannot write: File too large" in line, line
    left = _files_below(resources)
    assert not any(".staging-" in name for name in left), left  # no staging folder left behind
    if what == "grader files":
        assert left == [], left
    elif what == "IFBench's NLTK data":
        assert not any(name.startswith("nltk_data_pinned/") for name in left), left
    else:
        assert not any(name.startswith("nltk_data/") for name in left), left
        assert not (tmp_path / "record.json").exists()
    # The limit lifted, the same command materializes everything and verifies.
    assert _ifaudit(args, resources, NLTK_DATA=str(tmp_path / "none"))[0] == 0


# --- a bundle's documents of the wrong shape ------------------------------------------------------


def _relist(bundle: Path) -> None:
    """The checksum list made again for the bundle's files (a hostile bundle agrees with itself)."""
    names = sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file())
    names.remove("CHECKSUMS.sha256")
    (bundle / "CHECKSUMS.sha256").write_text("".join(f"{_sha256((bundle / n).read_bytes())}  {n}\n" for n in names))


DEEP = "[" * 10_000 + "]" * 10_000

DESCRIPTIONS = {
    "a list": ("[]", "BUNDLE.json: expected an object, got a list"),
    "a string": ('"datasets"', "BUNDLE.json: expected an object, got a string 'datasets'"),
    "datasets a list": ('{"datasets": []}', "BUNDLE.json: field 'datasets': expected an object, got a list"),
    "datasets missing": ("{}", "BUNDLE.json: field 'datasets': missing"),
    "bundled a string": (
        '{"datasets": {"d": {"bundled": "no"}}}',
        "BUNDLE.json: field 'datasets.d.bundled': expected true or false, got a string 'no'",
    ),
    "withheld without path": (
        '{"datasets": {"d": {"bundled": false, "sha256": "0"}}}',
        "BUNDLE.json: field 'datasets.d.path': missing",
    ),
    "sources a list": (
        '{"datasets": {"d": {"bundled": false, "path": "resources/data/d.jsonl", "sha256": "0", "sources": []}}}',
        "BUNDLE.json: field 'datasets.d.sources': expected an object, got a list",
    ),
    "a source leading out": (
        '{"datasets": {"d": {"bundled": false, "path": "resources/data/d.jsonl", "sha256": "0", '
        '"sources": {"mirror": "../../home/x"}}}}',
        "BUNDLE.json: field 'datasets.d.sources.mirror': path '../../home/x' has an empty, `.` or `..` part",
    ),
    "10,000 deep": ('{"datasets": {}, "runs": ' + DEEP + "}", "BUNDLE.json: field 'runs"),
    "a key twice": ('{"datasets": {}, "datasets": {}}', "BUNDLE.json: field 'datasets': given twice in one object"),
    "not UTF-8": ('{"datasets": "\udcff"}', "BUNDLE.json: not JSON"),
}


@pytest.mark.parametrize("mode", ["default", "--checksums-only"])
@pytest.mark.parametrize("case", sorted(DESCRIPTIONS))
def test_a_bundle_description_of_the_wrong_shape_is_one_line_naming_the_field(
    resources: Path, tmp_path: Path, case: str, mode: str
) -> None:
    text, expected = DESCRIPTIONS[case]
    bundle = _hand_made_bundle(tmp_path / "bundle", "results/run1/canary.json", _sha256(b"{}\n"))
    (bundle / "BUNDLE.json").write_bytes(text.encode("utf-8", errors="surrogateescape"))
    _relist(bundle)
    before = _files_below(tmp_path)
    done = run_cli(["verify-bundle", str(bundle), *([mode] if mode != "default" else [])], resources, check=False)
    line = _one_error(done.returncode, done.stderr.splitlines(), exit_code=2)
    assert f"ifaudit: error: {expected}" in line, line
    assert "Traceback" not in done.stderr
    assert _files_below(tmp_path) == before


MANIFESTS = {
    "a list": ("[]", "expected an object, got a list"),
    "files a list": ('{"run": "run1", "files": [], "datasets": {}}', "field 'files': expected an object, got a list"),
    "an entry a string": (
        '{"run": "run1", "files": {"canary": "results/run1/canary.json"}, "datasets": {}}',
        "field 'files.canary': expected an object, got a string",
    ),
    "sha256 a number": (
        '{"run": "run1", "files": {"canary": {"path": "results/run1/canary.json", "sha256": 5}}, "datasets": {}}',
        "field 'files.canary.sha256': expected a string, got an integer 5",
    ),
    "datasets missing": (
        '{"run": "run1", "files": {}}',
        "field 'datasets': missing",
    ),
    "10,000 deep": ('{"run": "run1", "files": ' + DEEP + "}", "field 'files"),
    "task a list": (
        '{"run": "run1", "files": {"canary": {"path": "results/run1/canary.json", "sha256": "CANARY"}}, '
        '"datasets": {}, "config": {"run": {"task": []}, "settings": {"grader": "upstream"}}}',
        "field 'config.run.task': expected a string, got a list",
    ),
}


@pytest.mark.parametrize("case", sorted(MANIFESTS))
def test_a_run_manifest_of_the_wrong_shape_is_one_line_naming_the_field(
    resources: Path, tmp_path: Path, case: str
) -> None:
    text, expected = MANIFESTS[case]
    bundle = _hand_made_bundle(tmp_path / "bundle", "results/run1/canary.json", _sha256(b"{}\n"))
    (bundle / "results/run1/MANIFEST.json").write_text(text.replace("CANARY", _sha256(b"{}\n")))
    _relist(bundle)
    done = run_cli(["verify-bundle", str(bundle), "--checksums-only"], resources, check=False)
    line = _one_error(done.returncode, done.stderr.splitlines(), exit_code=2)
    assert "results/run1/MANIFEST.json" in line and expected in line, line


def test_verify_bundle_of_an_empty_path_or_a_folder_without_checksums_is_one_line(
    resources: Path, tmp_path: Path
) -> None:
    """`""` is not the working folder (pathlib reads it as `.`); a folder without a checksum list is no bundle."""
    done = subprocess.run(
        [str(IFAUDIT), "verify-bundle", ""], env=cli_env(resources), cwd=tmp_path, capture_output=True, text=True
    )
    line = _only_error(done.returncode, done.stderr.splitlines())
    assert 'a path given as "" names no file or folder' in line, line
    (tmp_path / "folder" / "results").mkdir(parents=True)
    done = run_cli(["verify-bundle", str(tmp_path / "folder")], resources, check=False)
    line = _only_error(done.returncode, done.stderr.splitlines())
    assert f"{tmp_path / 'folder'}: not a bundle: no CHECKSUMS.sha256" in line, line


# --- archives whose central directory lies --------------------------------------------------------


def _lie(archive: Path, field_at: int, value: int) -> None:
    """Set a 4-byte field of the end-of-central-directory record (16: its offset, 12: its size)."""
    raw = bytearray(archive.read_bytes())
    struct.pack_into("<I", raw, raw.rfind(b"PK\x05\x06") + field_at, value)
    archive.write_bytes(bytes(raw))


def _lie_in_entry(archive: Path, name: str, value: int) -> None:
    """Set the local-header offset that `name`'s central directory entry gives."""
    raw = bytearray(archive.read_bytes())
    at = raw.find(b"PK\x01\x02")
    while raw[at + 46 : at + 46 + len(name)] != name.encode():
        at = raw.find(b"PK\x01\x02", at + 4)
    struct.pack_into("<I", raw, at + 42, value)
    archive.write_bytes(bytes(raw))


@pytest.mark.parametrize(
    "lie",
    ["central directory offset 0xFFFFFFF0", "central directory offset 0x7FFFFFFF", "a member's offset past the end"],
)
def test_an_inspect_eval_whose_zip_directory_lies_is_one_line(resources: Path, tmp_path: Path, lie: str) -> None:
    archive = _eval_archive(tmp_path / "lying.eval", list(_eval_members().items()))
    if lie.startswith("central directory offset"):
        _lie(archive, 16, int(lie.rsplit(" ", 1)[1], 16))
    else:
        _lie_in_entry(archive, "header.json", archive.stat().st_size + 10)
    line = _refused_import(resources, tmp_path, "inspect", archive)
    assert f"ifaudit: error: {archive}: " in line, line
    if lie != "central directory offset 0x7FFFFFFF":  # that one is Python's own "Bad magic number"
        assert "outside the archive's" in line and "central directory is damaged or forged" in line, line


def test_a_grader_archive_whose_zip_directory_lies_is_passed_over_in_one_line(tmp_path: Path) -> None:
    import zipfile

    archive = tmp_path / "grader.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for path in sorted((Path(UPSTREAM_SOURCE) / "instruction_following_eval").glob("*.py")):
            zipped.write(path, f"google-research-x/instruction_following_eval/{path.name}")
    _lie(archive, 16, 0xFFFFFFF0)
    code, lines = _ifaudit(
        ["vendor", "--pin", str(PIN), "--from", str(archive), "--offline"], tmp_path / "r", IFAUDIT_GRADER_SOURCE=""
    )
    line = _only_error(code, lines, exit_code=3)
    assert f"archive {archive}: missing (" in line and "central directory is damaged or forged" in line, line
    assert not os.path.exists(tmp_path / "r" / "vendor" / "google_ifeval" / "5b09c22d73a9d35eb6c5d2a99b95677a45053466")


def _bundle_archive(tmp: Path) -> Path:
    """The hand-made bundle as the .tar.gz an author uploads, with one file of 200 KB."""
    from ifaudit.io.archive import deterministic_tar_gz

    bundle = _hand_made_bundle(tmp / "bundle", "results/run1/canary.json", _sha256(b"{}\n"))
    (bundle / "results" / "big.bin").write_bytes(b"x" * 200_000)
    _relist(bundle)
    archive = tmp / "bundle.tar.gz"
    deterministic_tar_gz(bundle, archive, top="ifaudit-bundle")
    return archive


def test_a_file_size_limit_while_a_bundle_archive_is_unpacked_is_one_line(resources: Path, tmp_path: Path) -> None:
    archive = _bundle_archive(tmp_path)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    done = subprocess.run(
        [str(IFAUDIT), "verify-bundle", str(archive), "--checksums-only"],
        env=cli_env(resources, TMPDIR=str(scratch)),
        capture_output=True,
        text=True,
        preexec_fn=_limited(file_size=100 * 1024),
        check=False,
    )
    line = _only_error(done.returncode, done.stderr.splitlines(), exit_code=3)
    assert f"{archive}: cannot be unpacked into " in line and "File too large" in line, line
    assert list(scratch.iterdir()) == []  # the unpacked part is gone with its temporary folder


def test_a_bundle_archive_larger_than_the_free_space_is_refused_before_unpacking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ifaudit.core.errors import VerificationError
    from ifaudit.io import archive as archives

    archive = _bundle_archive(tmp_path)
    into = tmp_path / "into"
    into.mkdir()
    monkeypatch.setattr(archives.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**9, 10**9, 1000))
    with pytest.raises(VerificationError, match=r"unpacks to \d+ bytes, more than the 1000 free in "):
        archives.extract_tar_gz(archive, into)
    assert list(into.iterdir()) == []


def test_a_side_file_that_is_not_utf8_is_one_line(resources: Path, tmp_path: Path) -> None:
    bundle = _hand_made_bundle(tmp_path / "bundle", "results/run1/canary.json", _sha256(b"{}\n"))
    (bundle / "ROOT_DIGEST").write_bytes(b"\xff\xfe sha256:0\n")
    done = run_cli(["verify-bundle", str(bundle), "--checksums-only"], resources, check=False)
    line = _one_error(done.returncode, done.stderr.splitlines())
    assert "ROOT_DIGEST: does not state the root digest" in line, line


# --- a dataset: no pinned size, but a pinned sha256 checked before the file is held in memory ----


def test_a_dataset_path_linking_to_a_sparse_file_is_hashed_as_it_streams_not_held(tmp_path: Path) -> None:
    """768 MiB behind a link, under `ulimit -v` 512 MiB: a reader holding it whole fails with a
    MemoryError traceback; its sha256, pinned, is checked as it streams by."""
    sparse = tmp_path / "sparse.bin"
    with sparse.open("wb") as handle:
        handle.truncate(768 * 1024**2)
    link = tmp_path / "responses.jsonl"
    link.symlink_to(sparse)
    out, record = tmp_path / "out" / "d.jsonl", tmp_path / "out" / "d.json"
    args = [
        "fetch",
        "--name",
        "d",
        "--from",
        str(link),
        "--sha256",
        "0" * 64,
        "--out",
        str(out),
        "--record",
        str(record),
    ]
    code, lines = _ifaudit(args, tmp_path / "resources", _limited(address_space=512 * 1024**2))
    line = _only_error(code, lines, exit_code=3)
    assert f"dataset d: no source has the expected bytes: file {link}: sha256 mismatch, expected {'0' * 64}" in line
    assert "not read into memory" in line, line
    assert not out.exists() and not record.exists()


@pytest.mark.parametrize("damage", [b"", b"\xff\xfe\n", b"abc  d\n"], ids=["emptied", "not UTF-8", "not a sha256"])
def test_a_damaged_first_fetch_lock_is_one_line_saying_to_remove_it(tmp_path: Path, damage: bytes) -> None:
    resources = tmp_path / "resources"
    (resources / "checksums").mkdir(parents=True)
    (resources / "checksums" / "d.sha256").write_bytes(damage)
    out, record = tmp_path / "out" / "d.jsonl", tmp_path / "out" / "d.json"
    args = ["fetch", "--name", "d", "--from", "http://127.0.0.1:9/d.jsonl", "--out", str(out), "--record", str(record)]
    line = _only_error(*_ifaudit(args, resources))
    assert f"{resources / 'checksums' / 'd.sha256'}: not a first-fetch lock" in line and "remove it" in line, line
    assert not out.exists()


def test_an_inspect_json_log_over_the_cap_is_refused_before_it_is_read(resources: Path, tmp_path: Path) -> None:
    """A 5 GiB sparse `.json` log (over the 4 GiB cap) under `ulimit -v` 2 GiB: refused by its size,
    not read 4 GiB deep first."""
    log = tmp_path / "huge.json"
    with log.open("wb") as handle:
        handle.truncate(5 * 1024**3)
    args = ["import-log", "--format", "inspect", "--log", str(log), "--prompts", str(IFEVAL_PROMPTS)]
    args += ["--out", str(tmp_path / "r.jsonl"), "--harness", str(tmp_path / "h.json")]
    line = _only_error(*_ifaudit(args, resources, _limited(address_space=ADDRESS_SPACE)))
    assert f"{log}: the log declares {5 * 1024**3} bytes in all, over the cap of {4 * 1024**3}" in line, line
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize("entry", [DEEP.encode(), b"\xff\xfe", b"{" * 100_000], ids=["10,000 deep", "not UTF-8", "cut"])
def test_a_hostile_request_store_entry_is_one_error_naming_it(tmp_path: Path, entry: bytes) -> None:
    """A judgement or generation store (a bundle ships one; verify-bundle replays it)."""
    from ifaudit.core.errors import VerificationError
    from ifaudit.io.remote.store import RequestStore

    store, request = RequestStore(tmp_path / "store"), {"model": "m", "messages": []}
    path = store.path(store.key(request))
    path.parent.mkdir(parents=True)
    path.write_bytes(entry)
    with pytest.raises(VerificationError, match=re.escape(f"{path}: not a store entry")):
        store.get(request)


def test_an_inspect_eval_member_that_is_not_deflate_is_one_line(resources: Path, tmp_path: Path) -> None:
    """A deflated member whose first block type is the reserved one: zlib's error, as one line."""
    archive = _eval_archive(tmp_path / "damaged.eval", list(_eval_members().items()))
    raw = bytearray(archive.read_bytes())
    assert raw[:4] == b"PK\x03\x04" and raw[30:41] == b"header.json"  # the first member's local header
    start = 30 + int.from_bytes(raw[26:28], "little") + int.from_bytes(raw[28:30], "little")
    raw[start] = 0xFF  # BFINAL 1, BTYPE 11: "invalid block type"
    archive.write_bytes(bytes(raw))
    line = _refused_import(resources, tmp_path, "inspect", archive)
    assert f"{archive}: member header.json does not inflate (" in line and "the archive is damaged" in line, line


def test_an_nltk_file_is_pinned_with_its_size_and_a_link_to_a_larger_file_is_never_read(
    tmp_path: Path, sparse: Path
) -> None:
    """Every pinned NLTK file carries its size (a resource without one cannot be written): a link
    to the 3 GiB sparse file is passed over unread, by its size against the pin's."""
    from ifaudit.core.errors import VerificationError
    from ifaudit.io.remote.nltk_resources import NltkFile, NltkResource, materialize_nltk

    with pytest.raises(TypeError):
        NltkFile("corpora/x/words", "0" * 64)  # type: ignore[call-arg]
    source = tmp_path / "mirror"
    (source / "corpora/x").mkdir(parents=True)
    (source / "corpora/x/words").symlink_to(sparse)
    pinned = NltkResource("corpora/x", (NltkFile("corpora/x/words", "0" * 64, 5),))
    with pytest.raises(VerificationError, match="corpora/x/words"):
        materialize_nltk(tmp_path / "nltk", [pinned], [source])
    assert not (tmp_path / "nltk" / "corpora").exists()
