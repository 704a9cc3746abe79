"""Behaviours `make mutation` found unpinned in what ifaudit takes in from outside: deterministic
archives and checksum lists (io/archive.py), a harness's log imported and its claims audited
(steps/auditing/importing.py), and a bundle verified (steps/artifact/bundle_verify.py). Each test
here failed against a surviving mutant of the module it names, or reaches in process a function
that only CLI-process tests reached before (mutmut counts those mutants as "no tests");
tests/mutation_survivors.md lists the survivors left, and why. Expected values come from a second
route (hashlib, tarfile, gzip, zipfile, bytes written by hand), never from the code under test."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import stat
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pytest
from conftest import GPT4_RESPONSES, IFEVAL_PROMPTS, REFERENCE_GRADES, REPO, SHARED, read_jsonl, write_jsonl

from ifaudit.core.errors import IfauditError, InputError, VerificationError
from ifaudit.core.difference import first_difference
from ifaudit.core.metrics import ifeval_metrics
from ifaudit.core.records import Prompt, PromptKey
from ifaudit.inputs.importers import FORMATS
from ifaudit.inputs.importers.model import HarnessLog, HarnessSample
from ifaudit.io.prompts import prompt_from_record, read_prompts
from ifaudit.steps.artifact.bundle_verify import (
    UNCHECKED,
    Replay,
    _source,
    _store,
    fetch_withheld,
    ifaudit_command,
    recompute,
    recorded_config,
    replay_plan,
    report_plan,
    bundled_graders,
    bundled_run_order,
    check_checksums,
    check_grader_files,
    check_manifest_hashes,
    check_pins,
    check_root_digest,
    compare_made,
    verified_line,
    verify_bundle,
    verify_bundle_step,
)
from ifaudit.steps.auditing.claims import HarnessVerdicts, audit_claims
from ifaudit.steps.auditing.importing import (
    ClaimsFiles,
    audit_claims_step,
    claims_lines,
    disagreements_csv,
    harness_record,
    headline_warning,
    import_log,
    read_harness,
    read_log,
)
from ifaudit.steps.grading.analysis import Settings
from ifaudit.io import archive
from ifaudit.io.archive import (
    checksum_lines,
    deterministic_tar_gz,
    extract_tar_gz,
    parse_checksums,
    read_zip_member,
    tree_files,
    write_public,
    zip_member,
)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write(root: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)


# --- io/archive.py: the files of a tree, checksum lists ---------------------------------------------------


def test_tree_files_are_sorted_relative_paths_with_linked_files_but_not_linked_folders(tmp_path: Path) -> None:
    _write(tmp_path, {"b.txt": b"b", "a/z.txt": b"z", "a/b/c.txt": b"c", "skip.txt": b"s"})
    (tmp_path / "empty").mkdir()
    (tmp_path / "link-to-file").symlink_to(tmp_path / "b.txt")
    (tmp_path / "link-to-folder").symlink_to(tmp_path / "a")
    assert tree_files(tmp_path, frozenset({"skip.txt"})) == ["a/b/c.txt", "a/z.txt", "b.txt", "link-to-file"]
    assert tree_files(tmp_path) == ["a/b/c.txt", "a/z.txt", "b.txt", "link-to-file", "skip.txt"]


def test_checksum_lines_are_sha256sums_format(tmp_path: Path) -> None:
    _write(tmp_path, {"x/one": b"one\n", "two": b""})
    assert checksum_lines(tmp_path, ["two", "x/one"]) == (
        f"{_sha(b'')}  two\n{_sha(b'one' + bytes([10]))}  x/one\n".encode()
    )


def test_checksum_list_is_read_into_digests_by_path() -> None:
    a, b = _sha(b"a"), _sha(b"b")
    listed = f"{a}  results/a.json\n{b}  b c.txt\n{a}  two  spaces.txt\n".encode()
    assert parse_checksums(listed) == {"results/a.json": a, "b c.txt": b, "two  spaces.txt": a}
    assert parse_checksums(b"") == {}


@pytest.mark.parametrize(
    "line",
    [
        f"{'A' * 64}  upper.txt",  # not lowercase hex
        f"{'a' * 63}  short.txt",
        f"{'a' * 65}  long.txt",
        f"{'a' * 64} one-space.txt",
        f"{'a' * 64}  ../out.txt",
        f"{'a' * 64}  /abs.txt",
        f"{'a' * 64}  ",
    ],
)
def test_checksum_list_refuses_a_line_that_is_not_a_sha256_and_a_path_inside_naming_its_line(line: str) -> None:
    good = f"{'b' * 64}  fine.txt\n"
    with pytest.raises(VerificationError, match=r"^LIST:2: ") as caught:
        parse_checksums((good + line + "\n").encode(), "LIST")
    assert repr(line[:200]) in str(caught.value)


def test_checksum_list_in_bad_utf8_is_one_verification_error_not_a_decode_error() -> None:
    with pytest.raises(VerificationError, match=r"^CHECKSUMS\.sha256:1: "):
        parse_checksums(b"\xff\xfe" + b"a" * 62 + b"  x\n")


def test_checksum_list_refuses_a_path_listed_twice_naming_both_lines_and_whether_digests_agree() -> None:
    a, b = "a" * 64, "b" * 64
    with pytest.raises(VerificationError) as same:
        parse_checksums(f"{a}  x\n{b}  y\n{a}  x\n".encode(), "L")
    assert str(same.value) == "L:3: 'x' is listed again (line 1), with the same sha256"
    with pytest.raises(VerificationError) as other:
        parse_checksums(f"{b}  y\n{a}  x\n{b}  x\n".encode(), "L")
    assert str(other.value) == "L:3: 'x' is listed again (line 2), with another sha256"


# --- io/archive.py: packing and unpacking a bundle's .tar.gz -------------------------------------------


def _tar_gz(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _file(name: str, data: bytes = b"x", mode: int = 0o644) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.mode = mode
    return info, data


def _entry(name: str, kind: bytes, target: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, None


def test_bundle_archive_unpacks_its_one_top_folder_and_returns_it(tmp_path: Path) -> None:
    packed = _tar_gz(tmp_path / "b.tar.gz", [_entry("top/", tarfile.DIRTYPE), _file("top/a/b.txt", b"bytes")])
    into = tmp_path / "into"
    into.mkdir()
    assert extract_tar_gz(packed, into) == into / "top"
    assert (into / "top" / "a" / "b.txt").read_bytes() == b"bytes"


@pytest.mark.parametrize(
    "member",
    [
        _entry("top/link", tarfile.SYMTYPE, "/etc/passwd"),
        _entry("top/hard", tarfile.LNKTYPE, "top/a"),
        _entry("top/fifo", tarfile.FIFOTYPE),
        _file("top/../out.txt"),
        _file("/top/abs.txt"),
    ],
)
def test_bundle_archive_refuses_a_member_that_is_not_a_plain_file_or_folder_inside(
    tmp_path: Path, member: tuple[tarfile.TarInfo, bytes | None]
) -> None:
    packed = _tar_gz(tmp_path / "b.tar.gz", [_file("top/a"), member])
    into = tmp_path / "into"
    into.mkdir()
    with pytest.raises(VerificationError, match="is not a plain file or folder inside the archive"):
        extract_tar_gz(packed, into)
    assert list(into.iterdir()) == []  # refused before anything is written


def test_bundle_archive_of_exactly_the_member_cap_unpacks_and_one_more_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archive, "MAX_ENTRIES", 3)
    three = _tar_gz(tmp_path / "three.tar.gz", [_file(f"top/{n}") for n in range(3)])
    four = _tar_gz(tmp_path / "four.tar.gz", [_file(f"top/{n}") for n in range(4)])
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert extract_tar_gz(three, tmp_path / "a") == tmp_path / "a" / "top"
    with pytest.raises(VerificationError, match=r"holds more than 3 members; not unpacked$"):
        extract_tar_gz(four, tmp_path / "b")
    assert list((tmp_path / "b").iterdir()) == []


def test_bundle_archive_with_two_top_folders_is_refused(tmp_path: Path) -> None:
    packed = _tar_gz(tmp_path / "b.tar.gz", [_file("one/a"), _file("two/b")])
    (tmp_path / "into").mkdir()
    with pytest.raises(VerificationError, match=r"holds 2 top folders, a bundle archive one$"):
        extract_tar_gz(packed, tmp_path / "into")


# gzip's header holds the time it compressed at: mtime=0 and named cases, so every pytest-xdist
# worker collects the same test ids (a case named by its bytes differed between workers).
@pytest.mark.parametrize(
    "content",
    [b"not gzip at all", gzip.compress(b"not a tar" * 100, mtime=0), b""],
    ids=["not gzip", "gzip of no tar", "empty"],
)
def test_a_bundle_archive_that_is_no_tar_gz_is_one_verification_error(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "b.tar.gz").write_bytes(content)
    with pytest.raises(VerificationError, match=r"b\.tar\.gz: not a readable \.tar\.gz \("):
        extract_tar_gz(tmp_path / "b.tar.gz", tmp_path)


def test_a_bundle_archive_must_be_gzipped_an_uncompressed_tar_is_refused(tmp_path: Path) -> None:
    with tarfile.open(tmp_path / "b.tar.gz", "w") as tar:
        info, data = _file("top/a")
        tar.addfile(info, io.BytesIO(data))
    (tmp_path / "into").mkdir()
    with pytest.raises(VerificationError, match=r"b\.tar\.gz: not a readable \.tar\.gz \("):
        extract_tar_gz(tmp_path / "b.tar.gz", tmp_path / "into")


def test_bundle_archive_is_unpacked_with_the_data_filter_no_setuid_or_world_write(tmp_path: Path) -> None:
    packed = _tar_gz(tmp_path / "b.tar.gz", [_file("top/run", b"#!/bin/sh\n", mode=0o4777)])
    (tmp_path / "into").mkdir()
    extract_tar_gz(packed, tmp_path / "into")
    mode = (tmp_path / "into" / "top" / "run").stat().st_mode
    assert not mode & (stat.S_ISUID | stat.S_IWOTH | stat.S_IWGRP)


def test_deterministic_tar_gz_depends_only_on_names_and_bytes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _write(root, {"b.txt": b"bee\n", "a/x.sh": b"#!/bin/sh\n"})
    (root / "a" / "x.sh").chmod(0o700)
    os.utime(root / "b.txt", (12345, 12345))
    out = tmp_path / "out.tar.gz"
    digest = deterministic_tar_gz(root, out, "bundle-1")
    data = out.read_bytes()
    assert digest == _sha(data)
    # gzip header: no file name (FLG 0), mtime 0, extra flags 2 (the slowest, best compression)
    assert data[:10] == bytes([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 2, 255])
    raw = gzip.decompress(data)
    assert data[10:] == gzip.compress(raw, compresslevel=9, mtime=0)[10:]  # (its OS byte differs)
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        members = tar.getmembers()
        assert [m.name for m in members] == ["bundle-1/a/x.sh", "bundle-1/b.txt"]
        assert [(m.mode, m.mtime, m.uid, m.gid, m.uname, m.gname) for m in members] == [
            (0o755, 0, 0, 0, "", ""),
            (0o644, 0, 0, 0, "", ""),
        ]
        assert [tar.extractfile(m).read() for m in members] == [b"#!/bin/sh\n", b"bee\n"]  # type: ignore[union-attr]
    again = tmp_path / "again.tar.gz"
    (root / "b.txt").touch()
    assert deterministic_tar_gz(root, again, "bundle-1") == digest


def test_deterministic_tar_gz_marks_executable_only_what_its_owner_may_execute(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _write(root, {"others-only": b"", "group-only": b"", "owner": b""})
    for name, mode in (("others-only", 0o641), ("group-only", 0o654), ("owner", 0o744)):
        (root / name).chmod(mode)
    deterministic_tar_gz(root, tmp_path / "out.tar.gz", "top")
    with tarfile.open(tmp_path / "out.tar.gz") as tar:
        assert {m.name: m.mode for m in tar.getmembers()} == {
            "top/group-only": 0o644,
            "top/others-only": 0o644,
            "top/owner": 0o755,
        }


def test_write_public_writes_the_bytes(tmp_path: Path) -> None:
    write_public(tmp_path / "f", b"data")
    assert (tmp_path / "f").read_bytes() == b"data"


# --- io/archive.py: zip members read in bounded memory ------------------------------------------------


def _zip(path: Path, members: dict[str, tuple[bytes, int, int]]) -> zipfile.ZipFile:
    """A zip of `name: (bytes, method, flag bits)`, opened for reading."""
    with zipfile.ZipFile(path, "w") as out:
        for name, (data, method, flags) in members.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = method
            info.flag_bits |= flags
            out.writestr(info, data)
    return zipfile.ZipFile(path)


def test_a_zip_member_is_read_whole_at_exactly_the_cap_and_refused_one_byte_over(tmp_path: Path) -> None:
    data = bytes(range(256)) * 40
    with _zip(tmp_path / "z.zip", {"m": (data, zipfile.ZIP_DEFLATED, 0), "s": (data, zipfile.ZIP_STORED, 0)}) as z:
        assert read_zip_member(z, "m", len(data), "z.zip", "raise it") == data
        assert read_zip_member(z, "s", len(data), "z.zip", "raise it") == data
        with pytest.raises(InputError) as caught:
            read_zip_member(z, "m", len(data) - 1, "z.zip", "raise it")
    error = caught.value
    assert (error.message, error.path, error.hint) == (
        f"member m declares {len(data)} bytes, over the cap of {len(data) - 1}",
        "z.zip",
        "raise it",
    )


def test_a_zip_member_larger_than_one_read_chunk_is_read_whole(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(archive, "ZIP_CHUNK", 7)
    data = b"0123456789" * 5
    with _zip(tmp_path / "z.zip", {"m": (data, zipfile.ZIP_DEFLATED, 0)}) as z:
        assert read_zip_member(z, "m", 1000, "z.zip", "") == data
        assert read_zip_member(z, "m", len(data), "z.zip", "") == data


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_a_zip_member_compressed_but_not_stored_or_deflated_is_refused_unread(tmp_path: Path, method: int) -> None:
    with (
        _zip(tmp_path / "z.zip", {"m": (b"abc", method, 0)}) as z,
        pytest.raises(NotImplementedError, match=f"^member m: zip method {method}, not inflated"),
    ):
        read_zip_member(z, "m", 100, "z.zip", "")


def test_an_encrypted_zip_member_is_refused_and_other_flag_bits_are_not(tmp_path: Path) -> None:
    """zipfile writes no encrypted member: its flag bit 0 is set in the bytes written (the local
    header's flags at offset 6, the central directory's at offset 8)."""
    _zip(tmp_path / "z.zip", {"locked": (b"abc", zipfile.ZIP_STORED, 0)}).close()
    data = bytearray((tmp_path / "z.zip").read_bytes())
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        data[data.index(signature) + offset] |= 0x1
    (tmp_path / "z.zip").write_bytes(bytes(data))
    with zipfile.ZipFile(tmp_path / "z.zip") as z, pytest.raises(InputError) as caught:
        zip_member(z, "locked", "z.zip")
    assert (caught.value.message, caught.value.path) == ("member locked is encrypted; it cannot be read", "z.zip")
    with zipfile.ZipFile(tmp_path / "z.zip") as z, pytest.raises(InputError) as read:
        read_zip_member(z, "locked", 100, "z.zip", "")
    assert (read.value.message, read.value.path) == ("member locked is encrypted; it cannot be read", "z.zip")
    with _zip(tmp_path / "u.zip", {"ü.txt": (b"ok", zipfile.ZIP_STORED, 0)}) as z:
        assert z.getinfo("ü.txt").flag_bits == 0x800  # the UTF-8 name flag, and no other
        assert zip_member(z, "ü.txt", "u.zip").filename == "ü.txt"
        assert read_zip_member(z, "ü.txt", 2, "u.zip", "") == b"ok"


# --- steps/auditing/importing.py: a harness's log against the pinned prompts --------------------------------


@pytest.fixture(scope="module")
def three_prompts() -> list:
    """IFEval's first three prompts: 1000 (3 instructions), 1001 (1), 1005 (1)."""
    prompts = read_prompts(IFEVAL_PROMPTS)[:3]
    assert [(p.key, len(p.instruction_id_list)) for p in prompts] == [(1000, 3), (1001, 1), (1005, 1)]
    return prompts


def _sample(key: object, sample: int = 0, **extra: object) -> HarnessSample:
    fields = {"response": f"response to {key}", "where": f"log.jsonl:{sample + 1}", **extra}
    return HarnessSample(key=key, sample=sample, **fields)  # type: ignore[arg-type]


def _log(*samples: HarnessSample, **extra: object) -> HarnessLog:
    fields = {"format": "fmt", "tool": {"name": "harness", "version": "1"}, "task": "ifeval", "model": "m", **extra}
    return HarnessLog(samples=tuple(samples), **fields)  # type: ignore[arg-type]


def _doc(pinned: Prompt, **changed: object) -> dict:
    return {
        "key": pinned.key,
        "prompt": pinned.prompt,
        "instruction_id_list": list(pinned.instruction_id_list),
        "kwargs": [dict(k) for k in pinned.kwargs],
        **changed,
    }


def test_imported_log_becomes_responses_and_a_harness_record_keyed_as_the_pinned_set(three_prompts: list) -> None:
    """Four samples: 1000 named by its key as text, with verdicts graded on the response itself;
    1001 with verdicts graded on another text, its harness copy of the prompt the pinned one; an
    unknown key whose copy holds 1005's text with other kwargs (so its verdicts may count
    otherwise); and 1001's sample 1 with no verdicts."""

    p1000, p1001, p1005 = three_prompts
    strict3 = {"strict": [True, True, False], "loose": [True, True, True]}
    samples = [
        _sample("1000", verdicts=strict3, graded_text="response to 1000"),
        _sample(1001, verdicts={"strict": [False]}, graded_text="the graded text", doc=_doc(p1001)),
        _sample("h-77", verdicts={"strict": [True, True]}, doc=_doc(p1005, kwargs=[{"num_placeholders": 40}])),
        _sample(1001, 1, per_instruction=False),
    ]
    log = _log(*samples, reported={"prompt_level_strict_acc": 0.5}, generation={"t": 0}, provenance={"p": 1})
    responses, record = harness_record(log, three_prompts)
    assert responses == [
        {"key": 1000, "sample": 0, "response": "response to 1000"},
        {"key": 1001, "sample": 0, "response": "response to 1001"},
        {"key": 1005, "sample": 0, "response": "response to h-77"},
        {"key": 1001, "sample": 1, "response": "response to 1001"},
    ]
    assert record == {
        "format": "fmt",
        "tool": {"name": "harness", "version": "1"},
        "task": "ifeval",
        "model": "m",
        "generation": {"t": 0},
        "reported": {"prompt_level_strict_acc": 0.5},
        "provenance": {"p": 1},
        "samples": 4,
        "prompt_differences": [{"key": 1005, "fields": ["kwargs"]}],
        "verdicts": [
            {"key": 1000, "sample": 0, "verdicts": strict3, "per_instruction": True, "graded_text": None, "doc": None},
            {
                "key": 1001,
                "sample": 0,
                "verdicts": {"strict": [False]},
                "per_instruction": True,
                "graded_text": "the graded text",
                "doc": None,
            },
            {
                "key": 1005,
                "sample": 0,
                "verdicts": {"strict": [True, True]},
                "per_instruction": True,
                "graded_text": None,
                "doc": samples[2].doc,
            },
        ],
    }


def test_imported_verdicts_of_another_count_than_the_pinned_instructions_are_refused(three_prompts: list) -> None:
    for verdicts in ({"strict": [True, True]}, {"strict": [True, True, True], "loose": [True]}):
        with pytest.raises(InputError) as caught:
            harness_record(_log(_sample(1000, verdicts=verdicts)), three_prompts)
        counts = {mode: len(v) for mode, v in verdicts.items()}
        assert (caught.value.message, caught.value.path, caught.value.field) == (
            f"holds {counts} verdicts for 3 instructions",
            "log.jsonl:1",
            "verdicts",
        )


@pytest.mark.parametrize("key", ["١٠٠٠", "999", "h-1", " 1000"])
def test_an_imported_key_that_is_no_pinned_key_nor_ascii_digits_of_one_is_refused_naming_its_field(
    three_prompts: list, key: object
) -> None:
    """Arabic-Indic digits read as 1000 by int(), but a log's key is only ever matched as ASCII digits."""

    with pytest.raises(InputError) as caught:
        harness_record(_log(_sample(key, key_field="doc.id")), three_prompts)
    error = caught.value
    assert (error.message, error.path, error.field, error.hint) == (
        f"prompt {key!r} is not in the pinned prompt set",
        "log.jsonl:1",
        "doc.id",
        "import the log of a run on this task's prompts",
    )


def test_an_unknown_key_is_matched_by_its_prompt_text_only_when_the_copy_holds_a_text(three_prompts: list) -> None:
    copy = _doc(three_prompts[1], key="x")
    responses, _ = harness_record(_log(_sample("x", doc=copy)), three_prompts)
    assert [r["key"] for r in responses] == [1001]
    for doc in ({**copy, "prompt": None}, {key: value for key, value in copy.items() if key != "prompt"}):
        with pytest.raises(InputError, match="is not in the pinned prompt set"):
            harness_record(_log(_sample("x", doc=doc)), three_prompts)


def test_an_imported_sample_number_below_zero_is_refused_and_zero_is_the_first(three_prompts: list) -> None:
    assert [r["sample"] for r in harness_record(_log(_sample(1000, 0)), three_prompts)[0]] == [0]
    with pytest.raises(InputError) as caught:
        harness_record(_log(_sample(1000, -1, sample_field="epoch")), three_prompts)
    error = caught.value
    assert (error.message, error.path, error.field) == (
        "gives sample number -1; a response's sample is 0 or more",
        "log.jsonl:0",
        "epoch",
    )


def test_one_pinned_prompt_sample_logged_twice_under_two_spellings_is_refused_naming_both(three_prompts: list) -> None:
    first = _sample(1000, 2, where="log.jsonl:4")
    again = _sample("1000", 2, where="log.jsonl:9", key_field="doc_id")
    other = _sample(1000, 3)
    with pytest.raises(InputError) as caught:
        harness_record(_log(first, other, again), three_prompts)
    error = caught.value
    assert (error.message, error.path, error.field, error.hint) == (
        "prompt 1000 sample 2 appears twice: as '1000' here and as 1000 at log.jsonl:4",
        "log.jsonl:9",
        "doc_id",
        "a log holds each response once; import one run's log",
    )


def test_a_malformed_prompt_copy_in_a_log_is_named_at_the_sample_under_the_copys_field(three_prompts: list) -> None:
    doc = _doc(three_prompts[0], kwargs=[{}, {}])
    with pytest.raises(InputError) as caught:
        harness_record(_log(_sample(1000, doc=doc, doc_field="arguments.doc", where="log:7")), three_prompts)
    error = caught.value
    assert (error.message, error.path, error.line, error.field, error.hint) == (
        "has 2 entries but instruction_id_list has 3",
        "log:7",
        None,
        "arguments.doc.kwargs",
        None,
    )


def test_an_unknown_log_format_is_refused_listing_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        read_log("lm_eval", tmp_path / "log", {})
    assert (caught.value.message, caught.value.field) == (
        "unknown log format 'lm_eval'; known: evalscope, inspect, jsonl, leaderboard, lighteval, lm-eval, openai-batch, "
        "opencompass",
        "import.format",
    )


def test_import_log_writes_the_responses_and_the_harness_record_it_returns(
    three_prompts: list, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"id": 1001, "out": "A", "n": 1}\n{"id": "1000", "out": "B"}\n', encoding="utf-8")
    options = {"fields": {"key": "id", "response": "out", "sample": "n"}}
    out_responses, out_harness = tmp_path / "responses.jsonl", tmp_path / "harness.json"
    record = import_log("jsonl", log, options, three_prompts, out_responses, out_harness)
    assert [json.loads(line) for line in out_responses.read_text(encoding="utf-8").splitlines()] == [
        {"key": 1001, "sample": 1, "response": "A"},
        {"key": 1000, "sample": 0, "response": "B"},
    ]
    assert json.loads(out_harness.read_text(encoding="utf-8")) == record
    assert (record["format"], record["tool"]["name"], record["samples"], record["verdicts"]) == (
        "jsonl",
        "generic JSONL",
        2,
        [],
    )
    assert capsys.readouterr().err == ""  # no prompt differs: no note


def test_import_log_notes_the_prompts_that_differ_on_stderr_naming_ten_keys_at_most(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twelve pinned prompts whose log copies all differ in their text: the note counts 12 and names
    the first 10 keys, then `...`; with eleven too; with ten, all ten and no `...`."""
    prompts = read_prompts(IFEVAL_PROMPTS)[:12]
    samples = [_sample(p.key, doc=_doc(p, prompt=p.prompt + " ")) for p in prompts]
    log = tmp_path / "log"
    for count, tail in ((12, ", ..."), (11, ", ..."), (10, "")):
        monkeypatch.setitem(FORMATS, "fake", lambda path, options, n=count: _log(*samples[:n]))
        import_log("fake", log, {}, prompts, tmp_path / "r.jsonl", tmp_path / "h.json")
        keys = ", ".join(str(p.key) for p in prompts[:10])
        assert capsys.readouterr().err == (
            f"ifaudit: note: {count} prompts in {log} differ from the pinned prompt set (keys {keys}{tail}); "
            "grading against the pinned set\n"
        )


def test_a_harness_record_read_back_gives_each_responses_verdicts_as_recorded(tmp_path: Path) -> None:
    verdicts = [
        {
            "key": 1,
            "sample": 0,
            "verdicts": {"strict": [True]},
            "per_instruction": False,
            "graded_text": "g",
            "doc": {},
        },
        {"key": "k", "sample": 2, "verdicts": {"loose": [False]}, "per_instruction": True},
    ]
    record = {"tool": {"name": "h"}, "verdicts": verdicts}
    (tmp_path / "h.json").write_text(json.dumps(record), encoding="utf-8")
    assert read_harness(tmp_path / "h.json") == (
        record,
        [
            HarnessVerdicts(1, 0, {"strict": [True]}, "g", {}, per_instruction=False),
            HarnessVerdicts("k", 2, {"loose": [False]}, None, None, per_instruction=True),
        ],
    )


def test_disagreements_csv_is_a_header_and_one_row_a_disagreement_lf_terminated() -> None:
    row = {
        "key": 1005,
        "sample": 0,
        "mode": "strict",
        "index": 0,
        "instruction_id": "a:b",
        "harness": False,
        "pinned": True,
        "cause": "=cmd",
        "detail": "x, y",
    }
    assert disagreements_csv([row]) == (
        b"key,sample,mode,index,instruction_id,harness,pinned,cause,detail\n"
        b'1005,0,strict,0,a:b,False,True,\'=cmd,"x, y"\n'
    )
    assert disagreements_csv([]) == b"key,sample,mode,index,instruction_id,harness,pinned,cause,detail\n"


def test_claims_lines_say_how_many_verdicts_differ_warn_of_unexplained_and_name_claimed_denominators() -> None:
    files = ClaimsFiles(Path("g"), Path("r"), Path("h"), Path("out.json"), Path("table.csv"))
    result = {
        "harness": {"tool": {"name": "lm-eval"}},
        "disagreements": [{}, {}, {}],
        "unexplained": 2,
        "claimed_over": {
            "prompt_level_strict_acc": {"correct": 3, "over": 4, "data": "v1"},
            "inst_level_strict_acc": {"correct": None, "over": None, "data": "none fits"},
        },
    }
    assert claims_lines(result, files) == [
        "claims of lm-eval: 3 verdicts differ from the pinned grader's (2 unexplained) -> out.json",
        "ifaudit: warning: 2 disagreements with the harness have no established cause; see table.csv",
        "claimed prompt_level_strict_acc: 3/4, over v1",
    ]
    quiet = {**result, "unexplained": 0, "claimed_over": {}}
    assert claims_lines(quiet, files) == [
        "claims of lm-eval: 3 verdicts differ from the pinned grader's (0 unexplained) -> out.json"
    ]
    assert claims_lines({key: value for key, value in quiet.items() if key != "claimed_over"}, files) == [
        "claims of lm-eval: 3 verdicts differ from the pinned grader's (0 unexplained) -> out.json"
    ]


def test_headline_warning_gives_each_unsupported_figure_reported_and_recomputed_in_percent() -> None:
    audit = {
        "metrics": {"a": {"title": "prompt-level strict"}, "b": {"title": "inst-level loose"}},
        "headline_mismatches": {
            "a": {"reported": 0.5, "recomputed_from_harness": 0.123456},
            "b": {"reported": 1.0, "recomputed_from_harness": 0.99996},
        },
    }
    assert headline_warning(audit, Path("c.json")) == (
        "ifaudit: warning: the harness's headline is not what its own samples give: "
        "prompt-level strict 50.00 reported, 12.35 from its own verdicts; "
        "inst-level loose 100.00 reported, 100.00 from its own verdicts; see c.json"
    )


def test_audit_claims_step_writes_the_claims_and_the_disagreements_and_warns_of_an_unsupported_headline(
    upstream, three_prompts: list, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The three prompts graded as the reference, against a harness that says 1005's one
    instruction was not followed (strict), and reports 1/3 strict prompt-level where its own
    verdicts give 0/3 (1000 and 1001 are not followed strictly by GPT-4's responses)."""
    texts = {row["prompt"]: row["response"] for row in read_jsonl(GPT4_RESPONSES)}
    grades = [{**g, "sample": 0} for g in read_jsonl(REFERENCE_GRADES) if g["key"] in (1000, 1001, 1005)]
    assert [g["strict"]["follow_instruction_list"] for g in grades] == [[True, True, False], [False], [True]]
    flipped = {1005: [False]}
    samples = [
        _sample(
            p.key,
            response=texts[p.prompt],
            verdicts={
                mode: flipped.get(p.key, g[mode]["follow_instruction_list"])
                if mode == "strict"
                else g[mode]["follow_instruction_list"]
                for mode in ("strict", "loose")
            },
        )
        for p, g in zip(three_prompts, grades, strict=True)
    ]
    responses, record = harness_record(_log(*samples, reported={"prompt_level_strict_acc": 1 / 3}), three_prompts)
    files = ClaimsFiles(
        write_jsonl(tmp_path / "grades.jsonl", grades),
        write_jsonl(tmp_path / "responses.jsonl", responses),
        tmp_path / "harness.json",
        tmp_path / "claims.json",
        tmp_path / "disagreements.csv",
    )
    files.harness.write_text(json.dumps(record), encoding="utf-8")
    settings, denominators = Settings(resamples=20), {3: "three prompts", 541: "all"}
    result = audit_claims_step(upstream, ifeval_metrics(), three_prompts, files, settings, (), denominators)
    assert result["claimed_over"] == {"prompt_level_strict_acc": {"over": 3, "correct": 1, "data": "three prompts"}}
    assert result["harness"] == {
        "format": "fmt",
        "tool": {"name": "harness", "version": "1"},
        "task": "ifeval",
        "model": "m",
    }
    assert result["prompt_differences"] == []
    assert [(d["key"], d["mode"], d["harness"], d["pinned"], d["cause"]) for d in result["disagreements"]] == [
        (1005, "strict", False, True, "unexplained")
    ]
    assert json.loads(files.out.read_text(encoding="utf-8")) == result
    assert files.table.read_text(encoding="utf-8").splitlines()[1].startswith("1005,0,strict,0,")
    assert result["headline_mismatches"] == {
        "prompt_level_strict_acc": {"reported": 1 / 3, "recomputed_from_harness": 0.0}
    }
    assert capsys.readouterr().err == headline_warning(result, files.out) + "\n"


# --- steps/artifact/bundle_verify.py: nothing handed in is trusted ---------------------------------------------

RUN = "r1"
GRADER_FILES = (
    "instructions.py",
    "instructions_registry.py",
    "instructions_util.py",
    "evaluation_lib.py",
    "evaluation_main.py",
)


def _checksum_list(bundle: Path) -> bytes:
    """CHECKSUMS.sha256 as sha256sum would write it over every file but the side files."""
    skip = {"CHECKSUMS.sha256", "ROOT_DIGEST", "results/report.digest.md"}
    names = sorted(
        path.relative_to(bundle).as_posix() for path in bundle.rglob("*") if path.is_file() and not path.is_symlink()
    )
    return "".join(f"{_sha((bundle / n).read_bytes())}  {n}\n" for n in names if n not in skip).encode()


def _minimal_bundle(root: Path) -> Path:
    """The smallest bundle `verify-bundle --checksums-only` accepts: one IFEval run graded with the
    upstream grader (its manifest naming its summary), the project's pin of Google's grader and the
    pinned files from the shared copy, BUNDLE.json's run order, and the checksum list."""
    bundle = root / "bundle"
    summary = b'{"summary": 1}\n'
    manifest = {
        "run": RUN,
        "files": {"summary": {"path": f"results/{RUN}/summary.json", "sha256": _sha(summary)}},
        "datasets": {},
        "config": {"run": {"task": "ifeval"}, "settings": {"grader": "upstream"}},
    }
    _write(
        bundle,
        {
            f"results/{RUN}/summary.json": summary,
            f"results/{RUN}/MANIFEST.json": json.dumps(manifest).encode(),
            "project/vendor/google_ifeval/pin.toml": (REPO / "vendor/google_ifeval/pin.toml").read_bytes(),
            "BUNDLE.json": json.dumps({"runs": [RUN], "datasets": {}}).encode(),
        },
    )
    upstream = SHARED / "upstream/google_ifeval/instruction_following_eval"
    for name in GRADER_FILES:
        _write(bundle, {f"grader/google_ifeval/instruction_following_eval/{name}": (upstream / name).read_bytes()})
    (bundle / "CHECKSUMS.sha256").write_bytes(_checksum_list(bundle))
    return bundle


def _root(bundle: Path) -> str:
    return "sha256:" + _sha((bundle / "CHECKSUMS.sha256").read_bytes())


def _own_pins() -> dict:
    return {"vendor/google_ifeval/pin.toml": REPO / "vendor/google_ifeval/pin.toml"}


def test_a_minimal_bundle_verifies_by_its_bytes_alone_as_a_folder_and_as_its_tar_gz(tmp_path: Path) -> None:
    bundle = _minimal_bundle(tmp_path)
    expected = {
        "root_digest": _root(bundle),
        "files": 9,
        "manifest_hashes": 1,
        "withheld": [],
        "unfetched": [],
        "regraded": [],
        "recomputed": 0,
    }
    assert verify_bundle(bundle, _root(bundle), recompute_all=False, own_pins=_own_pins()) == expected
    packed = tmp_path / "bundle.tar.gz"
    deterministic_tar_gz(bundle, packed, "bundle")
    assert verify_bundle(packed, _root(bundle), recompute_all=False, own_pins=_own_pins()) == expected
    tgz = packed.rename(tmp_path / "bundle.tgz")
    assert verify_bundle(tgz, None, recompute_all=False) == expected


def test_a_bundle_given_as_no_folder_nor_archive_is_one_input_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "file.zip").write_bytes(b"x")
    for given, what in ((tmp_path / "none", "not found"), (tmp_path / "file.zip", "not a folder")):
        with pytest.raises(InputError) as caught:
            verify_bundle(given, recompute_all=False)
        assert (caught.value.message, caught.value.path) == (
            f"{what}; give the folder `ifaudit bundle` made, or its .tar.gz",
            str(given),
        )


def test_a_bundle_is_checked_for_links_before_its_checksums(tmp_path: Path) -> None:
    bundle = _minimal_bundle(tmp_path)
    (bundle / "results" / "link").symlink_to(bundle / "BUNDLE.json")
    (bundle / "CHECKSUMS.sha256").write_bytes(b"not a checksum list\n")
    with pytest.raises(VerificationError, match="a symbolic link in the bundle"):
        verify_bundle(bundle, recompute_all=False)


def test_a_bundle_with_an_edited_grader_file_and_every_checksum_rewritten_is_refused(tmp_path: Path) -> None:
    bundle = _minimal_bundle(tmp_path)
    edited = "grader/google_ifeval/instruction_following_eval/instructions.py"
    (bundle / edited).write_bytes((bundle / edited).read_bytes() + b"# edited\n")
    (bundle / "CHECKSUMS.sha256").write_bytes(_checksum_list(bundle))
    with pytest.raises(VerificationError, match=rf"^grader files are not the pinned ones: {edited}: its bytes have "):
        verify_bundle(bundle, recompute_all=False, own_pins=_own_pins())


def test_a_bundle_pinning_other_grader_files_is_refused_before_its_manifests_are_read(tmp_path: Path) -> None:
    bundle = _minimal_bundle(tmp_path)
    pin = bundle / "project/vendor/google_ifeval/pin.toml"
    pin.write_bytes(pin.read_bytes() + b"\n")
    (bundle / f"results/{RUN}/MANIFEST.json").write_bytes(b"{}")  # read after the pin check: never reached
    (bundle / "CHECKSUMS.sha256").write_bytes(_checksum_list(bundle))
    with pytest.raises(VerificationError, match=r"^project/vendor/google_ifeval/pin\.toml: not this ifaudit's pin"):
        verify_bundle(bundle, recompute_all=False, own_pins=_own_pins())


def test_a_bundle_carrying_infobench_judge_scripts_under_another_pin_of_them_is_refused(tmp_path: Path) -> None:
    """The judge scripts are replayed from the bundle's pin of them: a pin edited together with the
    scripts and every checksum would otherwise verify against itself."""
    bundle = _minimal_bundle(tmp_path)
    pin = bundle / "project/vendor/infobench/pin.toml"
    own = {**_own_pins(), "vendor/infobench/pin.toml": REPO / "vendor/infobench/pin.toml"}
    another = (REPO / "vendor/infobench/pin.toml").read_bytes() + b"# another pin\n"
    _write(
        bundle,
        {
            "grader/infobench/edited/evaluation.py": b"SYS_MSG = 'edited'\n",
            "project/vendor/infobench/pin.toml": another,
        },
    )
    (bundle / "CHECKSUMS.sha256").write_bytes(_checksum_list(bundle))
    with pytest.raises(VerificationError, match=r"^project/vendor/infobench/pin\.toml: not this ifaudit's pin"):
        verify_bundle(bundle, recompute_all=False, own_pins=own)
    pin.write_bytes((REPO / "vendor/infobench/pin.toml").read_bytes())  # the verifier's own: accepted
    (bundle / "CHECKSUMS.sha256").write_bytes(_checksum_list(bundle))
    verify_bundle(bundle, recompute_all=False, own_pins=own)


def test_bundle_pins_are_compared_with_the_verifiers_own_each_once_and_only_those_it_has(tmp_path: Path) -> None:
    own = tmp_path / "own.toml"
    own.write_bytes(b"pin")
    _write(tmp_path, {"b/project/p.toml": b"pin", "b/project/q.toml": b"other"})
    check_pins(tmp_path / "b", ["p.toml", "p.toml", "q.toml", "missing.toml"], {"p.toml": own})
    with pytest.raises(VerificationError, match=r"^project/q\.toml: not this ifaudit's pin"):
        check_pins(tmp_path / "b", ["p.toml", "no-own-copy.toml", "q.toml"], {"p.toml": own, "q.toml": own})
    for pin_file in ("q.toml", "missing.toml"):
        with pytest.raises(VerificationError, match=rf"^project/{pin_file}: not this ifaudit's pin .*\({own}\)"):
            check_pins(tmp_path / "b", ["p.toml", pin_file], {"p.toml": own, pin_file: own})


def test_grader_files_missing_or_edited_are_each_named_and_all_pinned_ones_counted(tmp_path: Path) -> None:
    bundle = _minimal_bundle(tmp_path)
    manifests = [json.loads((bundle / f"results/{RUN}/MANIFEST.json").read_text())]
    [(pin_file, pin, folder)] = bundled_graders(bundle, manifests)
    assert (pin_file, folder) == ("vendor/google_ifeval/pin.toml", "grader/google_ifeval")
    assert [f.path for f in pin.files] == [f"instruction_following_eval/{n}" for n in GRADER_FILES]
    assert check_grader_files(bundle, manifests) == 5
    base = "grader/google_ifeval/instruction_following_eval"
    (bundle / base / "instructions.py").unlink()
    (bundle / base / "evaluation_lib.py").write_bytes(b"edited")
    with pytest.raises(VerificationError) as caught:
        check_grader_files(bundle, manifests)
    assert str(caught.value) == (
        f"grader files are not the pinned ones: {base}/instructions.py: missing (the runs' task grades with it); "
        f"{base}/evaluation_lib.py: its bytes have sha256 {_sha(b'edited')}; "
        f"project/vendor/google_ifeval/pin.toml pins {pin.files[3].sha256}"
    )


def test_root_digest_must_be_the_expected_one_with_or_without_prefix_and_what_side_files_state(tmp_path: Path) -> None:
    (tmp_path / "CHECKSUMS.sha256").write_bytes(b"list\n")
    digest = "sha256:" + _sha(b"list\n")
    assert check_root_digest(tmp_path, None) == digest
    assert check_root_digest(tmp_path, digest) == digest
    assert check_root_digest(tmp_path, digest.removeprefix("sha256:")) == digest
    with pytest.raises(VerificationError) as caught:
        check_root_digest(tmp_path, "sha256:" + "0" * 64)
    assert str(caught.value) == (
        f"root digest {digest}, expected sha256:{'0' * 64}: CHECKSUMS.sha256 is not the list the cited digest was made from"
    )
    for side in ("ROOT_DIGEST", "results/report.digest.md"):
        _write(tmp_path, {side: f"the root digest is {digest}.\n".encode()})
        assert check_root_digest(tmp_path, None) == digest
        _write(tmp_path, {side: b"sha256:" + b"1" * 64})
        with pytest.raises(VerificationError) as side_caught:
            check_root_digest(tmp_path, None)
        assert str(side_caught.value) == f"{side}: does not state the root digest {digest} of CHECKSUMS.sha256"
        (tmp_path / side).unlink()


def test_checksum_layer_names_each_missing_edited_or_unlisted_file_five_at_most(tmp_path: Path) -> None:
    files = {f"f{n}": b"%d" % n for n in range(8)}
    _write(tmp_path, files)
    (tmp_path / "CHECKSUMS.sha256").write_bytes(checksum_lines(tmp_path, sorted(files)))
    present = [*sorted(files), "CHECKSUMS.sha256", "ROOT_DIGEST", "results/report.digest.md"]
    assert check_checksums(tmp_path, present) == 8
    (tmp_path / "f0").unlink()
    (tmp_path / "f1").write_bytes(b"edited")
    assert_message = (
        f"bundle {tmp_path} does not verify: f0: missing; f1: its bytes now have sha256 {_sha(b'edited')}; "
        f"CHECKSUMS.sha256 records {_sha(b'1')}; 2 file(s) not in CHECKSUMS.sha256: x, y "
        "(keep what you add, such as a Python environment, outside the bundle's folder)"
    )
    with pytest.raises(VerificationError) as caught:
        check_checksums(tmp_path, [*present[1:], "x", "y"])
    assert str(caught.value) == assert_message
    for n in (2, 3, 4):  # five problems: all named
        (tmp_path / f"f{n}").unlink()
    with pytest.raises(VerificationError) as five:
        check_checksums(tmp_path, present)
    assert str(five.value).endswith("f4: missing") and "more" not in str(five.value)
    (tmp_path / "f5").unlink()
    with pytest.raises(VerificationError) as six:
        check_checksums(tmp_path, present)
    assert str(six.value).endswith("f4: missing; and 1 more")


def test_checksum_layer_refuses_a_listed_path_through_a_link_as_a_verification_error(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _write(outside, {"f": b"secret"})
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "in").symlink_to(outside)
    (bundle / "CHECKSUMS.sha256").write_bytes(f"{_sha(b'secret')}  in/f\n".encode())
    with pytest.raises(VerificationError, match=r"^CHECKSUMS\.sha256: path 'in/f' goes through a symbolic link"):
        check_checksums(bundle, [])


def _manifest(files: dict[str, tuple[str, str]], datasets: dict[str, tuple[str, str]] | None = None) -> dict:
    return {
        "run": RUN,
        "files": {label: {"path": path, "sha256": digest} for label, (path, digest) in files.items()},
        "datasets": {name: {"path": path, "sha256": digest} for name, (path, digest) in (datasets or {}).items()},
    }


def test_manifest_hashes_are_checked_in_the_bundle_then_in_the_fetched_folder_each_problem_named(
    tmp_path: Path,
) -> None:

    bundle, fetched = tmp_path / "bundle", tmp_path / "fetched"
    _write(bundle, {"results/r1/summary.json": b"summary", "resources/data/both.jsonl": b"bundled"})
    _write(fetched, {"resources/data/withheld.jsonl": b"fetched", "resources/data/both.jsonl": b"fetched copy"})
    good = _manifest(
        {"summary": ("results/r1/summary.json", _sha(b"summary"))},
        {
            "withheld": ("./resources/data/withheld.jsonl", _sha(b"fetched")),
            "both": ("resources/data/both.jsonl", _sha(b"bundled")),
        },
    )
    assert check_manifest_hashes(bundle, [good, good], fetched) == 6
    bad = _manifest(
        {"summary": ("results/r1/summary.json", _sha(b"other")), "canary": ("results/r1/canary.json", "0" * 64)},
        {"both": ("resources/data/both.jsonl", _sha(b"fetched copy"))},
    )
    with pytest.raises(VerificationError) as caught:
        check_manifest_hashes(bundle, [bad], fetched)
    where = "results/r1/MANIFEST.json"
    assert str(caught.value) == (
        "manifest hashes do not match: "
        f"results/r1/summary.json: its bytes now have sha256 {_sha(b'summary')}; {where} (summary) records {_sha(b'other')}; "
        f"results/r1/canary.json: named by {where} (canary), not in the bundle; "
        f"resources/data/both.jsonl: its bytes now have sha256 {_sha(b'bundled')}; "
        f"{where} (dataset both) records {_sha(b'fetched copy')}"
    )


@pytest.mark.parametrize("linked", ["bundle", "fetched"])
def test_manifest_hashes_refuse_a_path_through_a_link_in_the_bundle_or_the_fetched_folder(
    tmp_path: Path, linked: str
) -> None:

    _write(tmp_path, {"outside/x": b"x"})
    (tmp_path / "bundle").mkdir()
    (tmp_path / "fetched").mkdir()
    (tmp_path / linked / "results").symlink_to(tmp_path / "outside")
    manifest = _manifest({"summary": ("results/x", _sha(b"x"))})
    with pytest.raises(
        VerificationError, match=r"results/r1/MANIFEST\.json \(summary\): path 'results/x' goes through"
    ):
        check_manifest_hashes(tmp_path / "bundle", [manifest], tmp_path / "fetched")


def test_bundled_run_order_is_bundle_jsons_list_of_names_else_none(tmp_path: Path) -> None:
    assert bundled_run_order(tmp_path) == []
    for runs, order in (([RUN, 3, "a", None], [RUN, "a"]), ({"a": 1}, []), (None, [])):
        _write(tmp_path, {"BUNDLE.json": json_bytes({"runs": runs})})
        assert bundled_run_order(tmp_path) == order
    _write(tmp_path, {"BUNDLE.json": json_bytes({})})
    assert bundled_run_order(tmp_path) == []


def json_bytes(value: object) -> bytes:
    return json.dumps(value).encode()


def test_verified_line_says_what_was_checked_and_what_was_not(tmp_path: Path) -> None:
    result = {"root_digest": "sha256:ab", "files": 7, "manifest_hashes": 3, "withheld": [], "regraded": ["a"]}
    checked = "root digest sha256:ab; 7 files match their checksums; 3 manifest hashes match"
    assert verified_line({**result, "recomputed": 0}, True, True) == (
        f"bundle's bytes verify (--checksums-only): {checked}; not regraded or recomputed "
        "(run verify-bundle without --checksums-only to reproduce the results)"
    )
    assert verified_line({**result, "recomputed": 0}, False, True).startswith(
        "bundle's bytes verify (--checksums-only) (authenticity NOT checked: no --expect): "
    )
    assert verified_line({**result, "recomputed": 9}, True, False) == (
        f"bundle verifies: {checked}; 1 run regraded byte-identically (both passes): a; "
        "9 derived files recomputed identically"
    )
    assert verified_line({**result, "recomputed": 0, "unfetched": ["d1", "d2"]}, True, True).endswith(
        "(run verify-bundle without --checksums-only to reproduce the results); not fetched (not redistributable): d1, d2"
    )
    two = {**result, "recomputed": 9, "regraded": ["a", "b"], "withheld": ["d1", "d2"]}
    assert verified_line(two, False, False) == (
        f"bundle verifies (authenticity NOT checked: no --expect): {checked}; 2 runs regraded byte-identically "
        "(both passes): a, b; 9 derived files recomputed identically; fetched (not redistributable): d1, d2"
    )


def test_verify_bundle_step_notes_at_once_what_is_not_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:

    bundle = _minimal_bundle(tmp_path)
    missing = tmp_path / "no-pin.toml"
    own = {**_own_pins(), "vendor/other/pin.toml": missing}
    lines = verify_bundle_step(bundle, None, None, True, own)
    assert lines[1:] == [UNCHECKED] and lines[0].startswith("bundle's bytes verify (--checksums-only) (auth")
    assert capsys.readouterr().err == (
        f"{UNCHECKED}\nifaudit: note: no pin of this ifaudit at {missing}: the bundled pin is NOT compared\n"
    )
    lines = verify_bundle_step(bundle, _root(bundle), None, True, _own_pins())
    assert len(lines) == 1 and lines[0].startswith(
        f"bundle's bytes verify (--checksums-only): root digest {_root(bundle)}"
    )
    assert capsys.readouterr().err == ""
    pin = bundle / "project/vendor/google_ifeval/pin.toml"
    pin.write_bytes(pin.read_bytes() + b"\n")
    (bundle / "CHECKSUMS.sha256").write_bytes(_checksum_list(bundle))
    with pytest.raises(VerificationError, match="not this ifaudit's pin"):
        verify_bundle_step(bundle, None, None, True, _own_pins())


def test_compare_made_names_each_recomputed_file_that_differs_or_is_not_bundled(tmp_path: Path) -> None:
    bundle, work = tmp_path / "bundle", tmp_path / "work"
    _write(bundle, {"same": b"1\n2\n", "differs": b"1\n2\n"})
    _write(work, {"same": b"1\n2\n", "differs": b"1\n3\n", "extra": b""})
    compare_made(bundle, work, ["same"])
    with pytest.raises(VerificationError) as caught:
        compare_made(bundle, work, ["same", "differs", "extra"])
    where = first_difference(b"1\n3\n", b"1\n2\n", "differs")
    assert str(caught.value) == (
        "recomputing from the bundled inputs gives other bytes: "
        f"differs: {where} (recomputed sha256 {_sha(b'1' + bytes([10, 51, 10]))}, bundled {_sha(b'1' + bytes([10, 50, 10]))}); "
        "extra: recomputed, but not in the bundle"
    )


# --- steps/auditing/claims.py: the causes only the seed probes establish, in process -----------------------------


def _graded(key: PromptKey, sample: int, strict: list[bool], loose: list[bool]) -> dict:
    """A grades record as `grade` writes it, with these per-instruction verdicts."""
    modes = {"strict": strict, "loose": loose}
    verdicts = {mode: {"follow_all_instructions": all(v), "follow_instruction_list": v} for mode, v in modes.items()}
    return {"key": key, "sample": sample, **verdicts}


def _row(prompt: Prompt, sample: int, mode: str, harness: bool, cause: str, detail: str) -> dict:
    """A disagreement on the prompt's first instruction."""
    return {
        "key": prompt.key,
        "sample": sample,
        "mode": mode,
        "index": 0,
        "instruction_id": prompt.instruction_id_list[0],
        "harness": harness,
        "pinned": not harness,
        "cause": cause,
        "detail": detail,
    }


@pytest.fixture(scope="module")
def ifeval() -> dict[PromptKey, tuple[Prompt, str]]:
    """IFEval's prompts by key, each with GPT-4's response to it."""
    gpt4 = {row["prompt"]: row["response"] for row in read_jsonl(GPT4_RESPONSES)}
    return {p.key: (p, gpt4[p.prompt]) for p in read_prompts(IFEVAL_PROMPTS)}


# The seed-probe counts below were measured with the pinned grader (claims.PROBE_SEEDS: 32 seeds).


def test_claims_audit_names_a_verdict_that_moves_with_a_setting_the_grader_substitutes(upstream, ifeval) -> None:
    """IFEval 1129 asks for 6 `!`; the grader's letter_frequency replaces `!` with a random letter,
    and 26 of 32 seeds follow it on GPT-4's response: a harness's "not followed" is 6 of 32, as a
    verdict per instruction (sample 0) and as a count only (sample 1)."""
    prompt, response = ifeval[1129]
    grades = [_graded(1129, sample, [True, True], [True, True]) for sample in (0, 1)]
    theirs = {"strict": [False, True], "loose": [True, True]}
    harness = [
        HarnessVerdicts(1129, 0, theirs, None, None),
        HarnessVerdicts(1129, 1, theirs, None, None, per_instruction=False),
    ]
    responses = {(1129, 0): response, (1129, 1): response}
    audit = audit_claims(upstream, ifeval_metrics(), [prompt], grades, responses, harness, {}, Settings(resamples=20))
    detail = "the grader replaces a setting with a random draw; 6 of 32 seeds give the harness's verdict"
    assert audit["disagreements"] == [
        _row(prompt, 0, "strict", False, "substituted_setting", detail),
        _row(prompt, 1, "strict", False, "substituted_setting", detail + " (the harness recorded only counts)"),
    ]
    assert audit["causes"] == {"substituted_setting": 2}


def test_claims_audit_names_a_verdict_that_moves_with_other_randomness_of_the_grader_in_each_mode(
    upstream, ifeval
) -> None:
    """A prompt whose letter_frequency settings were left out (null in the data, dropped as the
    prompt reader drops nulls): the grader draws letter, relation and count at random, and no
    setting is substituted. On GPT-4's response to 1129, strictly 14 of 32 seeds follow it (seed 0
    does not), loosely 18 (seed 0 does: the loose texts differ), so the harness's opposite verdicts
    are 14 of 32 seeds' in both modes, and the loose one is not the strict count (18)."""
    record = {"key": 9001, "prompt": "Pitch it.", "instruction_id_list": ["keywords:letter_frequency"], "kwargs": [{}]}
    prompt = prompt_from_record(record, "given.jsonl", 1)
    grades = [_graded(9001, 0, [False], [True])]
    harness = [HarnessVerdicts(9001, 0, {"strict": [True], "loose": [False]}, None, None)]
    responses = {(9001, 0): ifeval[1129][1]}
    audit = audit_claims(upstream, ifeval_metrics(), [prompt], grades, responses, harness, {}, Settings(resamples=20))
    assert audit["disagreements"] == [
        _row(prompt, 0, "loose", False, "grader_randomness", "14 of 32 seeds give the harness's verdict"),
        _row(prompt, 0, "strict", True, "grader_randomness", "14 of 32 seeds give the harness's verdict"),
    ]
    assert audit["causes"] == {"grader_randomness": 2}


@pytest.fixture(scope="module")
def langdetect_profiles() -> None:
    """langdetect loads its language profiles on its first call: once, outside the tests' time."""
    import langdetect

    langdetect.detect("warm up")


def test_claims_audit_names_a_language_verdict_that_moves_with_langdetects_seed(
    upstream, ifeval, langdetect_profiles
) -> None:
    """IFEval 2299 asks for Swahili; "habari jambo" is detected as Swahili under 24 of 32 seeds
    but not under seed 0: a harness's "followed" is langdetect's verdict under other seeds."""
    prompt = ifeval[2299][0]
    grades = [_graded(2299, 0, [False], [False])]
    harness = [HarnessVerdicts(2299, 0, {"strict": [True], "loose": [False]}, None, None)]
    audit = audit_claims(
        upstream, ifeval_metrics(), [prompt], grades, {(2299, 0): "habari jambo"}, harness, {}, Settings(resamples=20)
    )
    detail = "langdetect's verdict moves with its seed; 24 of 32 seeds give the harness's verdict"
    assert audit["disagreements"] == [_row(prompt, 0, "strict", True, "language_detection", detail)]
    assert audit["causes"] == {"language_detection": 1}


# --- steps/artifact/bundle_verify.py: how the bundle is replayed ---------------------------------------------

FAKE_IFAUDIT = """#!/bin/sh
{ echo "args=$*"; echo "cwd=$(pwd)"; env; } > "$PWD/seen.txt"
if [ "$1" = fail ]; then echo "first line" >&2; echo "the last line" >&2; exit 3; fi
if [ "$1" = silent ]; then exit 1; fi
exit 0
"""


def _fake_ifaudit(folder: Path) -> Path:
    """An `ifaudit` command that records its arguments, folder and environment in ./seen.txt."""
    folder.mkdir(parents=True, exist_ok=True)
    command = folder / "ifaudit"
    command.write_text(FAKE_IFAUDIT, encoding="utf-8")
    command.chmod(0o755)
    return command


def _seen(work: Path) -> dict[str, str]:
    lines = (work / "seen.txt").read_text(encoding="utf-8").splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def test_a_replayed_step_runs_in_the_scratch_folder_with_the_bundles_source_and_no_ifaudit_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IFAUDIT_PIN", "/elsewhere/pin.toml")
    monkeypatch.setenv("IFAUDIT_GRADER", "stand-in")
    work = tmp_path / "work"
    work.mkdir()
    replay = Replay(tmp_path / "bundle", work, tmp_path / "source", _fake_ifaudit(tmp_path / "bin"))
    replay.run(["grade", "--pass", "a"])
    seen = _seen(work)
    assert (seen["args"], seen["cwd"]) == ("grade --pass a", str(work))
    assert (seen["PYTHONPATH"], seen["PYTHONHASHSEED"]) == (str(tmp_path / "source" / "src"), "0")
    assert (seen["IFAUDIT_RESOURCES"], seen["PYTHONPYCACHEPREFIX"]) == (str(work / "resources"), str(work / ".pycache"))
    assert not {"IFAUDIT_PIN", "IFAUDIT_GRADER"} & set(seen)
    replay.run(["grade"], hash_seed="1")
    assert _seen(work)["PYTHONHASHSEED"] == "1"


def test_a_replayed_step_that_fails_is_named_with_the_last_line_it_said(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    replay = Replay(tmp_path, tmp_path / "work", tmp_path, _fake_ifaudit(tmp_path / "bin"))
    with pytest.raises(VerificationError) as caught:
        replay.run(["fail", "--x"])
    assert str(caught.value) == "`ifaudit fail` failed while recomputing the bundle: the last line"
    with pytest.raises(VerificationError) as silent:
        replay.run(["silent"])
    assert str(silent.value) == "`ifaudit silent` failed while recomputing the bundle: (no message)"


def test_the_ifaudit_command_is_the_one_beside_this_python_else_the_one_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    beside = _fake_ifaudit(tmp_path / "venv" / "bin")
    on_path = _fake_ifaudit(tmp_path / "path")
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "bin" / "python"))
    assert ifaudit_command() == beside
    beside.unlink()
    assert ifaudit_command() == on_path
    on_path.unlink()
    with pytest.raises(VerificationError) as caught:
        ifaudit_command()
    assert str(caught.value) == "the `ifaudit` command is not installed beside this Python nor on PATH"


DIFF = """diff --git a/a.txt b/a.txt
--- a/a.txt
+++ b/a.txt
@@ -1 +1 @@
-one
+two
"""


def test_the_bundled_source_is_project_else_a_copy_with_the_recorded_diff_applied(tmp_path: Path) -> None:
    bundle, work = tmp_path / "bundle", tmp_path / "work"
    _write(bundle, {"project/a.txt": b"one\n"})
    work.mkdir()
    assert _source(bundle, work) == bundle / "project"
    (bundle / "project.diff").write_text(DIFF, encoding="utf-8")
    assert _source(bundle, work) == work / ".project"
    assert (work / ".project/a.txt").read_bytes() == b"two\n"
    assert (bundle / "project/a.txt").read_bytes() == b"one\n"  # the bundle is never written


def test_a_recorded_diff_that_does_not_apply_is_a_verification_error_saying_why(tmp_path: Path) -> None:
    bundle, work = tmp_path / "bundle", tmp_path / "work"
    _write(bundle, {"project/a.txt": b"three\n", "project.diff": DIFF.encode()})
    work.mkdir()
    with pytest.raises(VerificationError, match=r"^project\.diff does not apply to project/: error: patch failed"):
        _source(bundle, work)


def _described(run: str, **settings: object) -> dict:
    return {
        "run": run,
        "config": {
            "settings": {"grader": "upstream", **settings},
            "run": {"task": "ifeval", "prompts": f"{run}-prompts"},
            "datasets": {f"{run}-prompts": {"mirror": f"{run}.jsonl"}},
        },
    }


def test_the_recorded_config_is_the_workflows_record_limited_to_the_bundled_runs(tmp_path: Path) -> None:
    record = {"config": {"grader": "upstream", "runs": {"r1": {"task": "a"}, "r2": {"task": "b"}}}}
    _write(tmp_path, {"results/MANIFEST.json": json_bytes(record)})
    assert recorded_config(tmp_path, [_described("r2")]) == {"grader": "upstream", "runs": {"r2": {"task": "b"}}}


def test_without_the_workflows_record_the_config_is_what_the_manifests_and_first_statistics_record(
    tmp_path: Path,
) -> None:
    manifests = [_described("r1", offline=False), _described("r2", offline=True)]
    expected = {
        "grader": "upstream",
        "offline": False,
        "runs": {
            "r1": {"task": "ifeval", "prompts": "r1-prompts"},
            "r2": {"task": "ifeval", "prompts": "r2-prompts"},
        },
        "datasets": {"r1-prompts": {"mirror": "r1.jsonl"}, "r2-prompts": {"mirror": "r2.jsonl"}},
        "comparisons": None,
    }
    assert recorded_config(tmp_path, manifests) == expected

    def statistics(seed: int) -> bytes:
        return json_bytes({"settings": {"resamples": 99, "level": 0.9, "seed": seed, "method": "bca", "x": 1}})

    _write(tmp_path, {"results/comparisons/r1/r2.json": statistics(7)})
    assert recorded_config(tmp_path, manifests)["statistics"] == {
        "resamples": 99,
        "level": 0.9,
        "seed": 7,
        "interval": "bca",
    }
    _write(tmp_path, {"results/r2/stats.json": statistics(2), "results/r1/stats.json": statistics(1)})
    assert recorded_config(tmp_path, manifests)["statistics"]["seed"] == 1


def test_a_recorded_request_store_is_read_inside_the_bundle_only(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    assert _store(bundle, {}, "judgement_store", "results/judgements") == bundle / "results/judgements"
    assert _store(bundle, {"generation_store": "/home/me/gens"}, "generation_store", "x") == bundle / "stores/gens"
    assert _store(bundle, {"judgement_store": "results/mine"}, "judgement_store", "x") == bundle / "results/mine"
    with pytest.raises(VerificationError) as caught:
        _store(bundle, {"judgement_store": "results/../../etc"}, "judgement_store", "x")
    assert str(caught.value).startswith("the recorded config (judgement_store): path 'results/../../etc' has an")
    (bundle / "results").symlink_to(tmp_path)
    with pytest.raises(VerificationError, match="goes through a symbolic link"):
        _store(bundle, {}, "judgement_store", "results/judgements")


def _plan_bundle(tmp_path: Path, plan: dict | None) -> Path:
    _write(tmp_path, {"results/tables.json": json_bytes({"tables": [], **({"plan": plan} if plan else {})})})
    return tmp_path


def test_the_report_plan_may_order_and_pair_runs_but_never_relabel_them_or_change_published_figures(
    tmp_path: Path,
) -> None:
    published = {"prompt_level_strict_acc": 0.8}
    runs = {
        "r1": {"config": {"run": {"task": "ifeval", "prompts": "p1", "label": "Run one", "published": published}}},
        "r2": {"config": {"run": {"task": "ifeval", "prompts": "p2"}}},
    }
    entries = {
        "r2": {"task": "ifeval", "prompts": "p2", "label": "r2"},
        "r1": {"task": "ifeval", "prompts": "p1", "label": "Run one", "published": published},
    }
    plan = {"runs": entries, "pairs": [["r2", "r1"]]}
    assert report_plan(_plan_bundle(tmp_path, plan), runs) == plan
    changed = {
        "task": (
            {"r1": {**entries["r1"], "task": "ifbench"}},
            "plan gives run r1 task 'ifbench', its manifest 'ifeval'",
        ),
        "prompts": ({"r2": {**entries["r2"], "prompts": "p1"}}, "plan gives run r2 prompts 'p1', its manifest 'p2'"),
        "label": ({"r2": {**entries["r2"], "label": "R2"}}, "plan's label or published figures of run r2 differ"),
        "published": (
            {"r1": {**entries["r1"], "published": {"prompt_level_strict_acc": 0.9}}},
            "plan's label or published figures of run r1 differ",
        ),
        "unpublished": ({"r2": {**entries["r2"], "published": {}}}, "plan's label or published figures of run r2"),
        "no manifest": ({"r3": entries["r2"]}, "plan names run 'r3', which has no manifest"),
    }
    for what, (bad, message) in changed.items():
        with pytest.raises(VerificationError) as caught:
            report_plan(_plan_bundle(tmp_path, {"runs": bad}), runs)
        assert str(caught.value).startswith(f"results/tables.json: {message}"), what
    with pytest.raises(VerificationError, match=r"^results/tables\.json: no `plan`; the report was made by an"):
        report_plan(_plan_bundle(tmp_path, None), runs)


def _withheld_bundle(tmp_path: Path, entry: dict) -> Path:
    data = b'{"key": 1}\n'
    _write(tmp_path, {"mirror/small.jsonl": data})
    shipped = {"bundled": True, "path": "../nowhere", "sources": {"mirror": "none"}, "sha256": "0" * 64}
    withheld = {"bundled": False, "path": "resources/data/small.jsonl", "sources": {"mirror": "small.jsonl"}}
    described = {"datasets": {"shipped": shipped, "small": {**withheld, "sha256": _sha(data), **entry}}}
    _write(tmp_path, {"bundle/BUNDLE.json": json_bytes(described)})
    return tmp_path / "bundle"


def test_a_withheld_dataset_is_fetched_into_the_scratch_folder_by_its_sha256_and_a_bundled_one_is_not(
    tmp_path: Path,
) -> None:
    bundle = _withheld_bundle(tmp_path, {})
    work = tmp_path / "work"
    assert fetch_withheld(bundle, work, tmp_path / "mirror", offline=True) == ["small"]
    assert (work / "resources/data/small.jsonl").read_bytes() == b'{"key": 1}\n'
    record = json.loads((work / ".fetched/small.json").read_text(encoding="utf-8"))
    assert (record["name"], record["sha256"]) == ("small", _sha(b'{"key": 1}\n'))
    assert not (tmp_path / "nowhere").exists()


def test_a_withheld_dataset_whose_bytes_are_not_the_bundled_sha256_is_refused(tmp_path: Path) -> None:
    bundle = _withheld_bundle(tmp_path, {"sha256": "1" * 64})
    with pytest.raises(IfauditError, match="1111111111"):
        fetch_withheld(bundle, tmp_path / "work", tmp_path / "mirror", offline=True)
    assert not (tmp_path / "work/resources/data/small.jsonl").exists()


@pytest.mark.parametrize("path", ["results/../../escaped.jsonl", "elsewhere/small.jsonl"])
def test_a_withheld_datasets_path_outside_the_bundles_places_is_refused(tmp_path: Path, path: str) -> None:
    bundle = _withheld_bundle(tmp_path, {"path": path})
    with pytest.raises(VerificationError, match=r"^BUNDLE\.json \(dataset 'small'\): path "):
        fetch_withheld(bundle, tmp_path / "work", tmp_path / "mirror", offline=True)
    assert not (tmp_path / "escaped.jsonl").exists()


RECORDING_IFAUDIT = """#!/bin/sh
echo "$PYTHONHASHSEED $*" >> "$PWD/jobs.log"
if [ "$1" = report ]; then mkdir -p results/plots && touch results/plots/r1.png results/plots/r1.svg; fi
exit 0
"""

REPLAYED_RUNS = {
    "r1": {"task": "ifeval", "prompts": "ifeval_prompts", "responses": "gpt4"},
    "r2": {"task": "ifeval", "prompts": "ifeval_prompts", "responses": "lm_eval_log", "import": {"format": "lm-eval"}},
    "r3": {"task": "ifeval", "prompts": "ifeval_prompts", "model": {"name": "m"}},
}


def _replayed_bundle(tmp_path: Path) -> tuple[Path, list[dict]]:
    """A bundle of three runs as the workflow records them (a recorded, an imported and a generated
    one), with the derived files whose presence decides what is recomputed: r1's statistics, r2's
    claims, a comparison of r1 and r2, the prompt set's audit, the report's tables with its plan,
    and the task-wide canary verdicts; and a recording `ifaudit` command in project/."""
    bundle = tmp_path / "bundle"
    config = {
        "grader": "upstream",
        "runs": {**REPLAYED_RUNS, "unbundled": REPLAYED_RUNS["r1"]},
        "datasets": {},
        "statistics": {"resamples": 10, "level": 0.95, "interval": "bca", "seed": 0},
        "comparisons": None,
        "generation_store": "/somewhere/generations",  # the judgement store left to its default
    }
    manifests = [
        {
            "run": run,
            "files": {"canary": {"path": f"results/{run}/canary.json"}},
            "datasets": {},
            "config": {"run": spec, "settings": {"grader": "upstream"}},
        }
        for run, spec in REPLAYED_RUNS.items()
    ]
    plan = {"runs": {"r1": {"task": "ifeval", "prompts": "ifeval_prompts", "label": "r1"}}}
    _write(
        bundle,
        {
            "results/MANIFEST.json": json_bytes({"config": config}),
            **{f"results/{run}/canary.json": run.encode() for run in REPLAYED_RUNS},
            "results/r1/stats.json": b"{}",
            "results/r2/claims.json": b"{}",
            "results/r3/claims.json": b"{}",  # a generated run's: no claims audit (only imported runs have one)
            "results/comparisons/r1/r2.json": b"{}",
            "results/prompts/ifeval_prompts.json": b"{}",
            "results/tables.json": json_bytes({"plan": plan}),
            "results/canary/ifeval.json": b"task-wide",
            "grader/infobench/v2/evaluation.py": b"",
            "grader/infobench/v1/evaluation.py": b"",
            "project/vendor/google_ifeval/pin.toml": (REPO / "vendor/google_ifeval/pin.toml").read_bytes(),
        },
    )
    command = bundle / "project" / "ifaudit"
    _write(bundle, {"project/ifaudit": RECORDING_IFAUDIT.encode()})
    command.chmod(0o755)
    return bundle, manifests


def test_the_replay_plan_is_the_recorded_config_with_the_bundles_own_places_offline_and_replaying_only(
    tmp_path: Path,
) -> None:
    bundle, manifests = _replayed_bundle(tmp_path)
    jobs = replay_plan(bundle, bundle / "project", manifests)
    assert (jobs.pin, jobs.infobench_pin) == (
        bundle / "project/vendor/google_ifeval/pin.toml",
        bundle / "project/vendor/infobench/pin.toml",
    )
    config = dict(jobs.config)
    assert config.pop("runs") == REPLAYED_RUNS
    assert {key: config[key] for key in ("offline", "replay_only", "nltk_mirror", "grader_sources")} == {
        "offline": True,
        "replay_only": True,
        "nltk_mirror": str(bundle / "nltk_data"),
        "grader_sources": [str(bundle / "grader/google_ifeval")],
    }
    assert config["infobench_sources"] == [str(bundle / "grader/infobench/v1"), str(bundle / "grader/infobench/v2")]
    assert (config["judgement_store"], config["generation_store"]) == (
        str(bundle / "results/judgements"),
        str(bundle / "stores/generations"),
    )


def test_recompute_replays_every_step_the_workflow_ran_and_names_every_file_it_makes(tmp_path: Path) -> None:
    """Each run's responses (replayed from the store, or the log imported again), both grading
    passes under their own hash seeds, the verification and summary, and the statistics and
    claims the bundle holds; then the comparisons, prompt audits and report: every file made is
    named for the byte comparison."""
    bundle, manifests = _replayed_bundle(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    made = recompute(Replay(bundle, work, bundle / "project", bundle / "project/ifaudit"), manifests)
    logged = [line.split(" ") for line in (work / "jobs.log").read_text(encoding="utf-8").splitlines()]
    # A run's two passes start together (run_side_by_side): their lines come in either order.
    for index in range(len(logged) - 1):
        if logged[index][1] == logged[index + 1][1] == "grade":
            logged[index : index + 2] = sorted(logged[index : index + 2])
    jobs = [args[:2] for args in logged]
    run_steps = [["0", "grade"], ["1", "grade"], ["0", "verify"], ["0", "summarize"]]
    assert jobs == [
        *run_steps,
        ["0", "stats"],
        ["0", "import-log"],
        *run_steps,
        ["0", "audit-claims"],
        ["0", "generate"],
        *run_steps,
        ["0", "compare-many"],
        ["0", "audit-prompts"],
        ["0", "report"],
    ]
    generate = next(args for args in logged if args[1] == "generate")
    assert {"--replay-only", "--quiet"} <= set(generate)  # never a live request to a model
    for pass_, (seed, *grade) in zip("ab", (args for args in logged if args[1:3] == ["grade", "--task"]), strict=False):
        # the regrade of r1 (in the DAG's one shard), quiet and uncertified (no canary run again)
        assert seed == {"a": "0", "b": "1"}[pass_]
        assert grade[grade.index("--shard") + 1] == "0/1" and "--quiet" in grade and "--canary-out" not in grade
        assert grade[-2:] == ["--out", f"results/r1/passes/{pass_}/shard-0-of-1.jsonl"]
    verify = next(args for args in logged if args[1] == "verify")
    assert verify[verify.index("--first") : verify.index("--first-out")] == [
        "--first",
        "results/r1/passes/a/shard-0-of-1.jsonl",
        "--second",
        "results/r1/passes/b/shard-0-of-1.jsonl",
    ]
    report = next(args for args in logged if args[1] == "report")
    staged = Path(report[report.index("--plan") + 1])
    assert staged.parent == work / ".snakemake/ifaudit" and staged.name.startswith("report-plan-")
    assert (
        json.loads(staged.read_text(encoding="utf-8"))
        == json.loads((bundle / "results/tables.json").read_text(encoding="utf-8"))["plan"]
    )

    def derived(run: str) -> list[str]:
        passes = [f"results/{run}/passes/a.jsonl", f"results/{run}/passes/b.jsonl"]
        return [*passes, *(f"results/{run}/{name}" for name in ("grades.jsonl", "verify.json", "summary.json"))]

    assert made == [
        *derived("r1"),
        "results/r1/stats.json",
        "results/r2/imported/responses.jsonl",
        "results/r2/imported/harness.json",
        *derived("r2"),
        "results/r2/claims.json",
        "results/r2/disagreements.csv",
        "results/r3/responses.jsonl",
        *derived("r3"),
        "results/comparisons/r1/r2.json",
        "results/prompts/ifeval_prompts.json",
        *(
            f"results/{name}"
            for name in ("report.md", "metrics.csv", "comparisons.csv", "breakdown.csv", "tables.json")
        ),
        "results/plots/r1.png",
        "results/plots/r1.svg",
    ]
    assert {run: (work / f"results/{run}/canary.json").read_bytes() for run in REPLAYED_RUNS} == {
        run: run.encode() for run in REPLAYED_RUNS
    }
    assert (work / "results/canary/ifeval.json").read_bytes() == b"task-wide"


def test_recompute_refuses_a_report_plan_that_relabels_a_run_before_the_report_is_made_again(tmp_path: Path) -> None:
    bundle, manifests = _replayed_bundle(tmp_path)
    plan = {"runs": {"r1": {"task": "ifeval", "prompts": "ifeval_prompts", "label": "Better run"}}}
    _write(bundle, {"results/tables.json": json_bytes({"plan": plan})})
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(VerificationError, match=r"^results/tables\.json: plan's label or published figures of run r1"):
        recompute(Replay(bundle, work, bundle / "project", bundle / "project/ifaudit"), manifests)
    assert " report " not in (work / "jobs.log").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("results/../canary.json", "path 'results/../canary.json' has an empty"),
        ("results/linked/canary.json", "path 'results/linked/canary.json' goes through a symbolic link"),
    ],
)
def test_recompute_reads_a_runs_canary_verdict_only_inside_the_bundle(tmp_path: Path, path: str, said: str) -> None:
    bundle, manifests = _replayed_bundle(tmp_path)
    (bundle / "results/linked").symlink_to(tmp_path)
    manifests[0]["files"]["canary"]["path"] = path
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(VerificationError) as caught:
        recompute(Replay(bundle, work, bundle / "project", bundle / "project/ifaudit"), manifests)
    assert str(caught.value).startswith(f"results/r1/MANIFEST.json (canary): {said}")


def test_recompute_refuses_a_comparison_of_a_run_the_bundle_has_no_manifest_of(tmp_path: Path) -> None:
    bundle, manifests = _replayed_bundle(tmp_path)
    _write(bundle, {"results/comparisons/r1/unbundled.json": b"{}"})
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(VerificationError) as caught:
        recompute(Replay(bundle, work, bundle / "project", bundle / "project/ifaudit"), manifests)
    assert str(caught.value) == "results/comparisons/r1/unbundled.json: compares a run the bundle has no manifest of"
    assert "compare-many" not in (work / "jobs.log").read_text(encoding="utf-8")


REPRODUCING_IFAUDIT = """#!/bin/sh
echo "$PYTHONHASHSEED $1" >> "$FAKE_LOG"
if [ ! -f resources/data/gpt4.jsonl ]; then echo "the bundled dataset is not in the scratch folder" >&2; exit 1; fi
if [ -f "$PYTHONPATH/../a.txt" ] && [ "$(cat "$PYTHONPATH/../a.txt")" != two ]; then echo "unpatched" >&2; exit 1; fi
if [ "$PYTHONHASHSEED $1" = "$FAKE_FAIL" ]; then sleep 0.2; echo "a progress line" >&2; echo "pass $PYTHONHASHSEED broke" >&2; exit 3; fi
cp -R "$FAKE_BUNDLE/results" .
if [ -n "$FAKE_DIFFER" ]; then echo other > "$FAKE_DIFFER"; fi
exit 0
"""


def _regradable_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The minimal bundle with r1's derived files and its canary verdict, and an `ifaudit` beside
    this Python that "recomputes" by copying the bundle's results/ (logging each step), so what
    verify_bundle does around the steps is seen: the scratch folder, the datasets, the comparison."""
    bundle = _minimal_bundle(tmp_path)
    manifest = json.loads((bundle / f"results/{RUN}/MANIFEST.json").read_text())
    manifest["files"]["canary"] = {"path": f"results/{RUN}/canary.json", "sha256": _sha(b"canary")}
    manifest["config"]["run"] = {"task": "ifeval", "prompts": "p", "responses": "gpt4"}
    manifest["config"]["datasets"] = {}
    derived = ["passes/a.jsonl", "passes/b.jsonl", "grades.jsonl", "verify.json"]
    _write(
        bundle,
        {
            f"results/{RUN}/MANIFEST.json": json_bytes(manifest),
            **{f"results/{RUN}/{name}": name.encode() for name in derived},
            f"results/{RUN}/canary.json": b"canary",
            "resources/data/gpt4.jsonl": b"{}\n",
        },
    )
    (bundle / "CHECKSUMS.sha256").write_bytes(_checksum_list(bundle))
    command = _fake_ifaudit(tmp_path / "venv/bin")
    command.write_text(REPRODUCING_IFAUDIT, encoding="utf-8")
    import sys

    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv/bin/python"))
    monkeypatch.setenv("FAKE_BUNDLE", str(bundle))
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "jobs.log"))
    (tmp_path / "scratch").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "scratch"))
    return bundle


def test_a_bundle_regraded_and_recomputed_to_the_same_bytes_verifies_and_its_scratch_folder_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = _regradable_bundle(tmp_path, monkeypatch)
    result = verify_bundle(bundle, _root(bundle), own_pins=_own_pins())
    assert result == {
        "root_digest": _root(bundle),
        "files": 15,
        "manifest_hashes": 2,
        "withheld": [],
        "unfetched": [],
        "regraded": [RUN],
        "recomputed": 5,
    }
    jobs = (tmp_path / "jobs.log").read_text().splitlines()
    # The two passes (hash seeds 0 and 1) side by side, in either order; verify after both.
    assert sorted(jobs[:2]) == ["0 grade", "1 grade"] and jobs[2:] == ["0 verify", "0 summarize"]
    assert list((tmp_path / "scratch").iterdir()) == []


def test_a_failed_grading_pass_of_the_two_run_side_by_side_is_named_after_both_have_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second pass (hash seed 1) fails while the first succeeds: its own last line is the one
    said, the verification stops before verify, and no pass is left running."""
    bundle = _regradable_bundle(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_FAIL", "1 grade")
    with pytest.raises(VerificationError) as caught:
        verify_bundle(bundle, None, own_pins=_own_pins())
    assert str(caught.value) == "`ifaudit grade` failed while recomputing the bundle: pass 1 broke"
    assert sorted((tmp_path / "jobs.log").read_text().splitlines()) == ["0 grade", "1 grade"]
    assert list((tmp_path / "scratch").iterdir()) == []


def test_a_bundle_whose_recomputed_file_differs_is_refused_naming_it_and_its_scratch_folder_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = _regradable_bundle(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_DIFFER", f"results/{RUN}/grades.jsonl")
    with pytest.raises(VerificationError) as caught:
        verify_bundle(bundle, None, own_pins=_own_pins())
    assert str(caught.value).startswith(
        f"recomputing from the bundled inputs gives other bytes: results/{RUN}/grades.jsonl: "
    )
    assert list((tmp_path / "scratch").iterdir()) == []


def test_a_manifest_path_outside_results_and_resources_is_refused_naming_the_manifest_and_label(tmp_path: Path) -> None:
    manifest = _manifest({"summary": ("project/src/ifaudit/cli.py", "0" * 64)})
    with pytest.raises(VerificationError) as caught:
        check_manifest_hashes(tmp_path, [manifest], tmp_path)
    assert str(caught.value) == (
        "results/r1/MANIFEST.json (summary): path 'project/src/ifaudit/cli.py' is outside results/ and "
        "resources/; a bundle's paths stay inside results/ and resources/"
    )


@pytest.mark.parametrize("name", ["../escaped", "a/../../escaped"])
def test_a_withheld_datasets_name_leading_out_of_the_fetch_records_folder_is_refused(tmp_path: Path, name: str) -> None:
    """BUNDLE.json names the dataset, and the name becomes the fetch record's file name."""
    bundle = _withheld_bundle(tmp_path, {})
    described = json.loads((bundle / "BUNDLE.json").read_text())
    described["datasets"] = {name: described["datasets"]["small"]}
    (bundle / "BUNDLE.json").write_text(json.dumps(described))
    with pytest.raises(VerificationError) as caught:
        fetch_withheld(bundle, tmp_path / "work", tmp_path / "mirror", offline=True)
    assert str(caught.value).startswith(f"BUNDLE.json (dataset {name!r}): path '{name}.json' has an empty")
    assert not (tmp_path / "escaped.json").exists()


def test_each_pinned_grader_of_the_runs_is_the_bundles_pin_at_the_tasks_version_in_its_own_folder(
    tmp_path: Path,
) -> None:
    """IFBench's pin holds two versions; a run of the db69a6f task grades with that one, whose files
    the bundle keeps under grader/allenai_ifbench/db69a6f, and a run of the default task with
    c6767a1: the same pin file, two graders."""
    pin = "vendor/allenai_ifbench/pin.toml"
    _write(tmp_path, {f"project/{pin}": (REPO / pin).read_bytes()})
    manifests = [
        {"run": run, "config": {"run": {"task": task}, "settings": {"grader": "upstream"}}}
        for run, task in (("new", "ifbench_db69a6f"), ("old", "ifbench"))
    ]
    found = [
        (pin_file, p.version, p.commit[:7], folder) for pin_file, p, folder in bundled_graders(tmp_path, manifests)
    ]
    assert found == [
        (pin, "db69a6f", "db69a6f", "grader/allenai_ifbench/db69a6f"),
        (pin, "c6767a1", "c6767a1", "grader/allenai_ifbench/c6767a1"),
    ]


def test_verify_bundle_step_checks_the_expected_digest_it_is_given(tmp_path: Path) -> None:
    bundle = _minimal_bundle(tmp_path)
    with pytest.raises(VerificationError, match=rf"^root digest {_root(bundle)}, expected sha256:0000"):
        verify_bundle_step(bundle, "sha256:" + "0" * 64, None, True, _own_pins())


def _with_withheld_dataset(tmp_path: Path, bundle: Path) -> None:
    """BUNDLE.json's dataset `small`, left out and fetched from tmp_path/mirror, which r1's
    manifest names (so its hash is checked in the fetched copy)."""
    data = b'{"key": 1}\n'
    _write(tmp_path, {"mirror/small.jsonl": data})
    entry = {"bundled": False, "path": "resources/data/small.jsonl", "sources": {"mirror": "small.jsonl"}}
    _write(bundle, {"BUNDLE.json": json_bytes({"runs": [RUN], "datasets": {"small": {**entry, "sha256": _sha(data)}}})})
    manifest = json.loads((bundle / f"results/{RUN}/MANIFEST.json").read_text())
    manifest["datasets"] = {"small": {"path": "resources/data/small.jsonl", "sha256": _sha(data)}}
    _write(bundle, {f"results/{RUN}/MANIFEST.json": json_bytes(manifest)})
    (bundle / "CHECKSUMS.sha256").write_bytes(_checksum_list(bundle))


def test_verify_bundle_step_regrades_fetching_withheld_datasets_from_the_mirror_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """And with the bundle's recorded diff applied to the source it replays with (the recording
    `ifaudit` refuses a source whose a.txt is not the patched one)."""
    bundle = _regradable_bundle(tmp_path, monkeypatch)
    _write(bundle, {"project/a.txt": b"one\n", "project.diff": DIFF.encode()})
    _with_withheld_dataset(tmp_path, bundle)
    [line] = verify_bundle_step(bundle, _root(bundle), tmp_path / "mirror", False, _own_pins())
    assert line == (
        f"bundle verifies: root digest {_root(bundle)}; 17 files match their checksums; 3 manifest hashes match; "
        f"1 run regraded byte-identically (both passes): {RUN}; 5 derived files recomputed identically; "
        "fetched (not redistributable): small"
    )


def test_a_bundle_archive_is_verified_as_its_folder_with_the_same_expectations_pins_and_mirror(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = _regradable_bundle(tmp_path, monkeypatch)
    _with_withheld_dataset(tmp_path, bundle)
    packed = tmp_path / "bundle.tar.gz"
    deterministic_tar_gz(bundle, packed, "bundle")
    result = verify_bundle(packed, _root(bundle), tmp_path / "mirror", True, _own_pins())
    assert (result["withheld"], result["regraded"], result["recomputed"]) == (["small"], [RUN], 5)
    assert list((tmp_path / "scratch").iterdir()) == []  # the unpacked copy is removed too
    with pytest.raises(VerificationError, match=r"^root digest sha256:[0-9a-f]{64}, expected sha256:0000"):
        verify_bundle(packed, "sha256:" + "0" * 64, tmp_path / "mirror", True, _own_pins())
    pin = bundle / "project/vendor/google_ifeval/pin.toml"
    pin.write_bytes(pin.read_bytes() + b"\n")
    (bundle / "CHECKSUMS.sha256").write_bytes(_checksum_list(bundle))
    deterministic_tar_gz(bundle, packed, "bundle")
    with pytest.raises(VerificationError, match="not this ifaudit's pin"):
        verify_bundle(packed, None, tmp_path / "mirror", True, _own_pins())


def test_checksums_only_verifies_a_bundle_with_a_withheld_dataset_without_fetching_it_and_says_so(
    tmp_path: Path,
) -> None:
    """`verify-bundle --checksums-only` (reviewers.md's "Artifacts Available" check) fetches
    nothing: a dataset BUNDLE.json says was left out is in neither the bundle nor a scratch folder,
    so its manifest hash is not checked, and the line says it was not fetched (it used to be
    refused as "named by results/r1/MANIFEST.json (dataset small), not in the bundle")."""
    bundle = _minimal_bundle(tmp_path)
    _with_withheld_dataset(tmp_path, bundle)
    (tmp_path / "mirror/small.jsonl").unlink()  # no source: fetching would fail
    [line] = verify_bundle_step(bundle, _root(bundle), None, True, _own_pins())
    assert line == (
        f"bundle's bytes verify (--checksums-only): root digest {_root(bundle)}; 9 files match their checksums; "
        "1 manifest hashes match; not regraded or recomputed (run verify-bundle without --checksums-only to "
        "reproduce the results); not fetched (not redistributable): small"
    )
    (bundle / "resources/data").mkdir(parents=True)
    manifest = json.loads((bundle / f"results/{RUN}/MANIFEST.json").read_text())
    manifest["datasets"]["other"] = {"path": "resources/data/other.jsonl", "sha256": "0" * 64}
    _write(bundle, {f"results/{RUN}/MANIFEST.json": json_bytes(manifest)})
    (bundle / "CHECKSUMS.sha256").write_bytes(_checksum_list(bundle))
    with pytest.raises(VerificationError, match=r"resources/data/other\.jsonl: named by .*, not in the bundle$"):
        verify_bundle(bundle, None, None, False, _own_pins())  # a dataset BUNDLE.json does not withhold


def test_a_bundle_without_bundle_json_verifies_by_its_checksums_withholding_nothing(tmp_path: Path) -> None:
    bundle = _minimal_bundle(tmp_path)
    (bundle / "BUNDLE.json").unlink()
    (bundle / "CHECKSUMS.sha256").write_bytes(_checksum_list(bundle))
    result = verify_bundle(bundle, _root(bundle), None, False, _own_pins())
    assert (result["files"], result["unfetched"]) == (8, [])
