"""Writing outputs: the user's umask decides the mode, and a write that fails (disk full, read-only
folder, the output is a folder) is one line, exit 2, and leaves no temporary or partial file."""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import GPT4_RESPONSES, IFAUDIT

ERROR = "ifaudit: error: "


def fetch_into(folder: Path) -> list[str]:
    """An ifaudit command writing 830 kB (a dataset copy) and its record into `folder`."""
    return [
        str(IFAUDIT),
        "fetch",
        "--name",
        "gpt4",
        "--from",
        str(GPT4_RESPONSES),
        "--out",
        str(folder / "gpt4.jsonl"),
        "--record",
        str(folder / "gpt4.json"),
    ]


def on_small_filesystem(tmp_path: Path, options: str) -> subprocess.CompletedProcess:
    """Run fetch into a fresh 64 kB tmpfs (`options`: e.g. `ro`), mounted in a private mount
    namespace; the listing after the command shows what it left there."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) to mount a private tmpfs")
    mount = tmp_path / "mnt"
    mount.mkdir()
    script = (
        f"mount -t tmpfs -o size=64k,{options} tmpfs {shlex.quote(str(mount))} || exit 99; "
        f"{shlex.join(fetch_into(mount))}; status=$?; ls -A {shlex.quote(str(mount))} >&2; exit $status"
    )
    done = subprocess.run(["unshare", "--map-root-user", "--mount", "sh", "-c", script], capture_output=True, text=True)
    if done.returncode == 99 or "unshare failed" in done.stderr:
        pytest.skip(f"cannot mount a private tmpfs here: {done.stderr.strip()}")
    return done


def assert_one_line(done: subprocess.CompletedProcess, reason: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith(ERROR) and reason in lines[0], done.stderr


def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    done = on_small_filesystem(tmp_path, "rw")
    assert_one_line(done, "gpt4.jsonl: cannot write: No space left on device")  # the listing is empty


def test_a_read_only_folder_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    done = on_small_filesystem(tmp_path, "ro")
    assert_one_line(done, "gpt4.jsonl: cannot write: Read-only file system")


def test_an_output_that_is_a_folder_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    (tmp_path / "gpt4.jsonl").mkdir()
    done = subprocess.run(fetch_into(tmp_path), capture_output=True, text=True)
    assert_one_line(done, "gpt4.jsonl: cannot write: Is a directory")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["gpt4.jsonl"]
    assert not any((tmp_path / "gpt4.jsonl").iterdir())


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_written_files_take_the_users_umask(tmp_path: Path, umask: int) -> None:
    done = subprocess.run(fetch_into(tmp_path), capture_output=True, text=True, umask=umask)
    assert done.returncode == 0, done.stderr
    for name in ("gpt4.jsonl", "gpt4.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~umask


def test_a_failed_write_keeps_the_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ifaudit.io.canonical import atomic_write_bytes
    from ifaudit.core.errors import IfauditError

    target = tmp_path / "summary.json"
    atomic_write_bytes(target, b"before\n")

    def full(fd: int) -> None:
        raise OSError(28, os.strerror(28))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(IfauditError, match="summary.json: cannot write: No space left on device"):
        atomic_write_bytes(target, b"after\n")
    assert target.read_bytes() == b"before\n"
    assert [path.name for path in tmp_path.iterdir()] == ["summary.json"]


def test_outputs_written_together_go_together(tmp_path: Path) -> None:
    """verify writes both merged passes and the grades, then its record; when the record cannot
    be written (here: its path is a folder) the others go too, so no output is left without the
    rest."""
    from ifaudit.core.errors import IfauditError
    from ifaudit.steps.grading.passes import PassOutputs, verify_passes

    shard = tmp_path / "shard-0-of-1.jsonl"
    shard.write_text('{"key":1}\n')
    (tmp_path / "verify.json").mkdir()
    outs = PassOutputs(tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "grades.jsonl", tmp_path / "verify.json")
    with pytest.raises(IfauditError, match="verify.json: cannot write: Is a directory"):
        verify_passes([shard], [shard], outs)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["shard-0-of-1.jsonl", "verify.json"]


def test_a_staged_value_is_named_by_its_bytes_and_refused_once_changed(tmp_path: Path) -> None:
    """What a job reads from a staged file (its command line would be too long) is the value the
    workflow planned, or the job stops naming the file."""
    from ifaudit.core.errors import InputError
    from ifaudit.io.canonical import read_staged_json, staged_json

    plan = {"runs": {f"run_{index:03d}": {"summary": "x" * 100} for index in range(2000)}}  # > 128 KiB
    path, digest = staged_json(tmp_path, "report-plan", plan)
    assert path.name == f"report-plan-{digest}.json" and path.stat().st_size > 128 * 1024
    assert staged_json(tmp_path, "report-plan", plan) == (path, digest)  # the same value: the same file
    assert read_staged_json(path, digest) == plan
    path.write_bytes(path.read_bytes().replace(b"run_000", b"run_999"))
    with pytest.raises(InputError, match="changed since it was planned") as raised:
        read_staged_json(path, digest)
    assert str(raised.value).startswith(f"{path}: sha256 ")
