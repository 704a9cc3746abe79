"""Security, the bundle is read only inside itself: `verify-bundle` refuses, first and in one
line, a symbolic link anywhere in the bundle (a folder link once let the reviewer's steps write
grader files outside it), a FIFO or device, a checksum entry whose path leads out (`../../…`,
`/etc/passwd`), and an archive member that is a link or leads out; a folder that is not there or
is a file is one line too. Nothing outside the bundle is read or written."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from conftest import run_cli


def _bundle_folder(folder: Path) -> Path:
    """A folder laid out as a bundle's top (one listed file): enough for what is checked first."""
    (folder / "results").mkdir(parents=True)
    (folder / "results/x.txt").write_text("x\n")
    digest = "6ac6dbd7d3e7cf9bc4f6c6f0fbb5a0e6a5e3e2f8b3a3c6d7e6e1f3c2d1b0a9f8"
    (folder / "CHECKSUMS.sha256").write_text(f"{digest}  results/x.txt\n")
    return folder


def _refused(resources: Path, bundle: Path, *expected: str, exit_code: int = 3) -> str:
    """verify-bundle's one error line, last (after the note that no --expect was given): exit 3
    for a bundle that does not verify, 2 for a wrong request."""
    done = run_cli(["verify-bundle", str(bundle)], resources, check=False)
    assert done.returncode == exit_code, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("ifaudit: error: ")]
    assert len(errors) == 1 and done.stderr.strip().splitlines()[-1] == errors[0], done.stderr
    assert all(part in errors[0] for part in expected), errors[0]
    return errors[0]


@pytest.mark.parametrize(
    "link, target",
    [("resources/vendor", "outside"), ("results/root", "/"), ("results/passwd", "/etc/passwd")],
)
def test_security_a_symbolic_link_anywhere_in_the_bundle_is_refused_first(
    resources: Path, tmp_path: Path, link: str, target: str
) -> None:
    bundle = _bundle_folder(tmp_path / "bundle")
    outside = tmp_path / "outside"
    outside.mkdir()
    (bundle / link).parent.mkdir(parents=True, exist_ok=True)
    (bundle / link).symlink_to(outside if target == "outside" else target)
    _refused(resources, bundle, f"{bundle / link}: a symbolic link in the bundle")
    assert list(outside.iterdir()) == []  # nothing written through it


def test_security_a_fifo_in_the_bundle_is_refused_without_blocking(resources: Path, tmp_path: Path) -> None:
    bundle = _bundle_folder(tmp_path / "bundle")
    os.mkfifo(bundle / "results/pipe")
    _refused(resources, bundle, f"{bundle / 'results/pipe'}: is a FIFO (named pipe), not a file")


@pytest.mark.parametrize("name", ["../../etc/passwd", "/etc/passwd", "results/../../x", "./results/x.txt"])
def test_security_a_checksum_entry_leading_out_of_the_bundle_is_refused(
    resources: Path, tmp_path: Path, name: str
) -> None:
    bundle = _bundle_folder(tmp_path / "bundle")
    digest = "0" * 64
    with (bundle / "CHECKSUMS.sha256").open("a") as listing:
        listing.write(f"{digest}  {name}\n")
    line = _refused(resources, bundle, "CHECKSUMS.sha256:2: ", "not a sha256 and a path inside the bundle")
    assert "root:" not in line  # /etc/passwd was not read, so nothing of it is shown


def _archive(path: Path, members: list[tarfile.TarInfo]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for member in members:
            tar.addfile(member, io.BytesIO(b"x\n") if member.isfile() else None)
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "") -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.type, member.linkname, member.size = kind, linkname, 2 if kind == tarfile.REGTYPE else 0
    return member


@pytest.mark.parametrize(
    "hostile",
    [
        _member("bundle/results/root", tarfile.SYMTYPE, "/"),
        _member("bundle/results/hard", tarfile.LNKTYPE, "/etc/passwd"),
        _member("bundle/../escaped.txt"),
        _member("/tmp/absolute.txt"),
    ],
    ids=["symlink", "hardlink", "dot-dot", "absolute"],
)
def test_security_a_bundle_archive_with_a_link_or_an_escaping_member_is_refused(
    resources: Path, tmp_path: Path, hostile: tarfile.TarInfo
) -> None:
    archive = _archive(tmp_path / "bundle.tar.gz", [_member("bundle/CHECKSUMS.sha256"), hostile])
    _refused(resources, archive, f"{archive}: member {hostile.name!r} is not a plain file or folder")
    assert not (tmp_path / "escaped.txt").exists() and not Path("/tmp/absolute.txt").exists()


@pytest.mark.parametrize("kind", ["missing", "a file"])
def test_a_bundle_that_is_not_a_folder_is_one_line(resources: Path, tmp_path: Path, kind: str) -> None:
    given = tmp_path / "bundle"
    if kind == "a file":
        given.write_text("not a bundle")
    expected = (
        "file or folder not found" if kind == "missing" else "not a folder; give the folder `ifaudit bundle` made"
    )
    _refused(resources, given, f"{given}: {expected}", exit_code=2)
