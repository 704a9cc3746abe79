"""Dataset fetching: sources in order, pinned sha256, the first-fetch lock, real HTTP."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from ifaudit.core.errors import InputError, VerificationError
from ifaudit.io.remote.fetch import fetch
from ifaudit.io.remote.sources import LocalFile, WebFile

BYTES = b'{"key": 1, "prompt": "p", "instruction_id_list": [], "kwargs": []}\n'
SHA = hashlib.sha256(BYTES).hexdigest()


def test_pinned_bytes_over_http_after_a_missing_mirror(http_folder, tmp_path: Path) -> None:
    root, base = http_folder
    (root / "d.jsonl").write_bytes(BYTES)
    out, record = tmp_path / "data/d.jsonl", tmp_path / "data/d.json"
    fetch(
        "d", out, record, [LocalFile(tmp_path / "mirror/d.jsonl"), WebFile(f"{base}/d.jsonl")], SHA, tmp_path / "locks"
    )
    assert out.read_bytes() == BYTES
    written = json.loads(record.read_text())
    assert written["sha256"] == SHA and written["pinned"] and written["source"] == f"URL {base}/d.jsonl"


def test_wrong_bytes_are_refused_and_nothing_is_written(http_folder, tmp_path: Path) -> None:
    root, base = http_folder
    (root / "d.jsonl").write_bytes(BYTES.replace(b"p", b"q"))
    out = tmp_path / "d.jsonl"
    with pytest.raises(VerificationError, match=f"sha256 mismatch, expected {SHA}"):
        fetch("d", out, tmp_path / "d.json", [WebFile(f"{base}/d.jsonl")], SHA, tmp_path / "locks")
    assert not out.exists()


def test_unpinned_published_data_is_locked_on_first_fetch(http_folder, tmp_path: Path) -> None:
    root, base = http_folder
    (root / "d.jsonl").write_bytes(BYTES)
    sources = [WebFile(f"{base}/d.jsonl")]
    fetch("d", tmp_path / "d.jsonl", tmp_path / "d.json", sources, None, tmp_path / "locks")
    assert (tmp_path / "locks/d.sha256").read_text().split()[0] == SHA
    (root / "d.jsonl").write_bytes(BYTES + BYTES)  # the upstream file changes under the same name
    with pytest.raises(VerificationError, match="recorded on first fetch"):
        fetch("d", tmp_path / "d.jsonl", tmp_path / "d.json", sources, None, tmp_path / "locks")


def test_a_users_own_file_is_not_locked(tmp_path: Path) -> None:
    mine = tmp_path / "mine.jsonl"
    mine.write_bytes(BYTES)
    fetch("mine", tmp_path / "out.jsonl", tmp_path / "out.json", [LocalFile(mine)], None, tmp_path / "locks")
    mine.write_bytes(BYTES + BYTES)
    fetch("mine", tmp_path / "out.jsonl", tmp_path / "out.json", [LocalFile(mine)], None, tmp_path / "locks")
    assert (tmp_path / "out.jsonl").read_bytes() == BYTES + BYTES
    assert not (tmp_path / "locks").exists()


def test_no_source_at_all_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"dataset d: no source has the expected bytes: file .*: missing"):
        fetch("d", tmp_path / "d.jsonl", tmp_path / "d.json", [LocalFile(tmp_path / "none")], SHA, tmp_path / "l")


def test_manifest_refuses_a_dataset_changed_after_its_fetch(tmp_path: Path) -> None:
    from ifaudit.steps.grading.manifest import checked_dataset

    mine = tmp_path / "mine.jsonl"
    mine.write_bytes(BYTES)
    fetch("d", tmp_path / "d.jsonl", tmp_path / "d.json", [LocalFile(mine)], SHA, tmp_path / "locks")
    assert checked_dataset("d", tmp_path / "d.json")["sha256"] == SHA
    (tmp_path / "d.jsonl").write_bytes(BYTES.replace(b"p", b"q"))
    with pytest.raises(VerificationError, match="changed after it was fetched"):
        checked_dataset("d", tmp_path / "d.json")
