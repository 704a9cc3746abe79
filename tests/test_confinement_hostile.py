"""Nothing handed in reaches past its folder, and nothing it names reaches the terminal raw: a
bundle's manifest path or checksum entry, a details folder's file, an archive's member is read
only inside its own folder (every verify mode, `--checksums-only` included); a listing that says
two things (two checksums of one file, two `header.json` members) is refused, not resolved
silently; a folder nested 1,100 deep, a member whose size lies, a YAML alias bomb are one line,
never a traceback or a hang; a file name holding a line break cannot print a line of its own.

The bundles are made by hand, as small as what is checked first needs (a real bundle is made
and verified in tests/test_bundle.py); the logs are the committed real ones (tests/data)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import IFEVAL_PROMPTS, REPO, run_cli
from test_importers import IFEVAL_CONFIG, LATEST, MODEL, details_folder

PIN = REPO / "vendor/google_ifeval/pin.toml"  # the pin run_cli's IFAUDIT_PIN names
INSPECT_JSON = next((Path(__file__).parent / "data/harness_logs/inspect").glob("*.json"))
HF_OFFLINE = {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
FORGED = "bundle verifies: root digest sha256:0; everything fine"
MODES = {"default": [], "--expect": ["--expect"], "--checksums-only": ["--checksums-only"]}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _hand_made_bundle(folder: Path, canary: str, canary_sha256: str) -> Path:
    """A bundle's top as the verifier reads it before regrading: this ifaudit's pin, a BUNDLE.json
    withholding nothing, one run whose manifest names its canary verdict at `canary`, and a
    checksum list of every file."""
    files = {
        "project/vendor/google_ifeval/pin.toml": PIN.read_bytes(),
        "BUNDLE.json": json.dumps({"datasets": {}}).encode(),
        "results/run1/canary.json": b"{}\n",
        "results/run1/MANIFEST.json": json.dumps(
            {"run": "run1", "files": {"canary": {"path": canary, "sha256": canary_sha256}}, "datasets": {}}
        ).encode(),
    }
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    listing = "".join(f"{_sha256(data)}  {name}\n" for name, data in sorted(files.items()))
    (folder / "CHECKSUMS.sha256").write_text(listing)
    return folder


def _root_digest(bundle: Path) -> str:
    return "sha256:" + _sha256((bundle / "CHECKSUMS.sha256").read_bytes())


def _verify(resources: Path, bundle: Path, mode: str) -> tuple[int, list[str]]:
    """verify-bundle's exit code and its stderr lines, in `mode` (--expect: the right digest)."""
    args = ["verify-bundle", str(bundle), *MODES[mode]]
    if mode == "--expect":
        args.append(_root_digest(bundle))
    done = run_cli(args, resources, check=False)
    return done.returncode, done.stderr.splitlines()


def _one_error(code: int, lines: list[str], exit_code: int = 3) -> str:
    """The one `ifaudit: error:` line, last, and every other line an `ifaudit: note:`."""
    assert code == exit_code, lines
    assert lines and lines[-1].startswith("ifaudit: error: "), lines
    assert all(line.startswith("ifaudit: note: ") for line in lines[:-1]), lines
    return lines[-1]


@pytest.mark.parametrize("mode", sorted(MODES))
def test_verifier_refuses_manifest_path_escaping_its_folder(resources: Path, tmp_path: Path, mode: str) -> None:
    secret = tmp_path / "secret.txt"  # beside the bundle: `results/../../secret.txt` from inside it
    secret.write_bytes(b"not the bundle's\n")
    digest = _sha256(secret.read_bytes())
    bundle = _hand_made_bundle(tmp_path / "bundle", "results/../../secret.txt", digest)
    before = sorted(os.listdir(tmp_path))
    line = _one_error(*_verify(resources, bundle, mode))
    assert "results/run1/MANIFEST.json (canary): path 'results/../../secret.txt' has an empty, `.` or `..` part" in line
    assert digest not in line
    assert sorted(os.listdir(tmp_path)) == before  # nothing written beside the bundle


@pytest.mark.parametrize("mode", ["default", "--expect"])
def test_verifier_prints_no_forged_line_from_a_newline_name(resources: Path, tmp_path: Path, mode: str) -> None:
    bundle = _hand_made_bundle(tmp_path / "bundle", "results/run1/canary.json", _sha256(b"{}\n"))
    for forged in (f"x\n{FORGED}", f"y\r{FORGED}", f"z\x1b[2K\u2028{FORGED}\u202e"):
        (bundle / "results" / forged).write_text("not listed\n")
    line = _one_error(*_verify(resources, bundle, mode))
    assert "not in CHECKSUMS.sha256" in line and "x\\nbundle verifies" in line, line
    assert not any(char in line for char in "\r\x1b\u2028\u202e"), line


@pytest.mark.parametrize("conflicting", [True, False], ids=["conflicting", "repeated"])
def test_checksums_with_conflicting_duplicate_entries_refused(
    resources: Path, tmp_path: Path, conflicting: bool
) -> None:
    bundle = _hand_made_bundle(tmp_path / "bundle", "results/run1/canary.json", _sha256(b"{}\n"))
    listing = (bundle / "CHECKSUMS.sha256").read_text().splitlines(keepends=True)
    first = next(number for number, line in enumerate(listing, 1) if line.endswith("  BUNDLE.json\n"))
    other = ("0" * 64 if conflicting else listing[first - 1][:64]) + "  BUNDLE.json\n"
    # The conflicting digest first, the right one last: a reader keeping the last entry accepts it.
    listing.insert(first - 1, other)
    (bundle / "CHECKSUMS.sha256").write_text("".join(listing))
    line = _one_error(*_verify(resources, bundle, "--checksums-only"))
    assert f"CHECKSUMS.sha256:{first + 1}: " in line and f"'BUNDLE.json' is listed again (line {first})" in line


def _deep(root: Path, depth: int) -> list[Path]:
    """`depth` folders nested under `root`, outermost first (removed by _remove, innermost first:
    a recursive remover would meet the same recursion limit)."""
    made, path = [], root
    for _ in range(depth):
        path = path / "d"
        path.mkdir()
        made.append(path)
    return made


@pytest.mark.parametrize("handed_in", ["bundle", "details folder"])
def test_deep_folder_gives_one_line(resources: Path, tmp_path: Path, handed_in: str) -> None:
    if handed_in == "bundle":
        folder = _hand_made_bundle(tmp_path / "bundle", "results/run1/canary.json", _sha256(b"{}\n"))
    else:
        folder = details_folder(tmp_path / "details")
    made = _deep(folder, 1100)
    try:
        if handed_in == "bundle":
            line = _one_error(*_verify(resources, folder, "--checksums-only"))
        else:
            line = _refused_import(resources, tmp_path, "leaderboard", folder, {"config": IFEVAL_CONFIG})
        assert f"{folder}: folders nested deeper than 100 levels" in line, line
    finally:
        for path in reversed(made):
            path.rmdir()


def _refused_import(resources: Path, tmp: Path, fmt: str, log: Path, options: dict | None = None) -> str:
    """`import-log` of `log` stops with exit 2 and one `ifaudit: error:` line, writing nothing."""
    args = ["import-log", "--format", fmt, "--log", str(log), "--prompts", str(IFEVAL_PROMPTS)]
    args += ["--out", str(tmp / "r.jsonl"), "--harness", str(tmp / "h.json")]
    args += ["--options-json", json.dumps(options)] if options is not None else []
    done = run_cli(args, resources, check=False, HF_HOME=str(tmp / "hf"), **HF_OFFLINE)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("ifaudit: error: "), done.stderr[-2000:]
    assert not (tmp / "r.jsonl").exists() and not (tmp / "h.json").exists()
    return lines[0]


def _eval_members(model: str = "the-logged-model") -> dict[str, bytes]:
    """An inspect `.eval` archive's members, from the committed `.json` log: its header and two samples."""
    log = json.loads(INSPECT_JSON.read_text())
    header = {key: value for key, value in log.items() if key != "samples"}
    header["eval"]["model"] = model
    members = {"header.json": json.dumps(header).encode()}
    for sample in log["samples"][:2]:
        members[f"samples/{sample['id']}_epoch_{sample['epoch']}.json"] = json.dumps(sample).encode()
    return members


def _eval_archive(path: Path, members: list[tuple[str, bytes]], bzip2: str = "") -> Path:
    """A zip of `members`, deflated (the member named `bzip2` compressed with bzip2)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of a name written twice, as one test means to
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in members:
                archive.writestr(name, data, compress_type=zipfile.ZIP_BZIP2 if name == bzip2 else None)
    return path


def test_inspect_eval_with_two_headers_refused(resources: Path, tmp_path: Path) -> None:
    members = _eval_members("model-a")
    second = _eval_members("model-b")["header.json"]
    archive = _eval_archive(tmp_path / "two.eval", [*members.items(), ("header.json", second)])
    line = _refused_import(resources, tmp_path, "inspect", archive)
    assert f"{archive}: " in line and "member header.json twice" in line, line


def _patch_headers(
    path: Path, name: str, at_local: int, at_central: int, patch: Callable[[bytearray, int], None]
) -> None:
    """Apply `patch(raw, offset)` to `name`'s local and central zip headers, at the field offsets given."""
    raw = bytearray(path.read_bytes())
    encoded = name.encode()
    for signature, field_at, name_at in ((b"PK\x03\x04", at_local, 30), (b"PK\x01\x02", at_central, 46)):
        at = raw.find(signature)
        while at >= 0:
            if raw[at + name_at : at + name_at + len(encoded)] == encoded:
                patch(raw, at + field_at)
            at = raw.find(signature, at + 4)
    path.write_bytes(bytes(raw))


def _patch_sizes(path: Path, name: str, declared: int) -> None:
    """Make `name`'s local and central headers declare `declared` uncompressed bytes."""

    def declare(raw: bytearray, at: int) -> None:
        raw[at : at + 4] = struct.pack("<I", declared)

    _patch_headers(path, name, 22, 24, declare)


def _set_encrypted(path: Path, name: str) -> None:
    """Set the `encrypted` flag of `name` in its local and central headers."""

    def encrypt(raw: bytearray, at: int) -> None:
        raw[at] |= 1

    _patch_headers(path, name, 6, 8, encrypt)


@pytest.mark.parametrize("lie", ["declared small, inflates huge", "encrypted"])
def test_inspect_eval_lying_member_size_refused(resources: Path, tmp_path: Path, lie: str) -> None:
    """A bzip2 member declaring 1,000 bytes that inflates to 50 MB (zipfile inflates bzip2 a whole
    read at a time: a few KB can hold gigabytes) is refused unread; so is an encrypted member
    (zipfile raises for want of a password)."""
    members = _eval_members()
    sample = next(name for name in members if name.startswith("samples/"))
    archive = tmp_path / "lying.eval"
    if lie == "encrypted":
        _eval_archive(archive, list(members.items()))
        _set_encrypted(archive, sample)
        expected = f"member {sample} is encrypted"
    else:
        members[sample] += b" " * 50_000_000
        _eval_archive(archive, list(members.items()), bzip2=sample)
        _patch_sizes(archive, sample, 1000)
        expected = f"compressed with a method this reader does not support (member {sample}: zip method 12"
    line = _refused_import(resources, tmp_path, "inspect", archive)
    assert f"{archive}: " in line and expected in line, line


def test_leaderboard_symlinked_parquet_refused(resources: Path, tmp_path: Path) -> None:
    folder = details_folder(tmp_path / "details")
    parquet = next(folder.rglob(f"samples_leaderboard_ifeval_{LATEST}.parquet"))
    outside = tmp_path / "outside.parquet"
    shutil.move(parquet, outside)
    parquet.symlink_to(outside)
    line = _refused_import(resources, tmp_path, "leaderboard", folder, {"config": f"{MODEL}__leaderboard_ifeval"})
    assert f"{parquet}: a symbolic link in the details folder" in line, line


def test_yaml_alias_bomb_refused(resources: Path, tmp_path: Path) -> None:
    """Seven levels of ten aliases each: 10^7 names once expanded (the classic bomb goes to 10^9
    and never ends; this one ends, in seconds, where the aliases are expanded)."""
    folder = details_folder(tmp_path / "details")
    readme = (folder / "README.md").read_text()
    levels = ['- &l0 ["lol"]'] + [f"- &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 8)]
    bomb = "bomb:\n" + "".join(f"  {level}\n" for level in levels)
    readme = readme.replace("configs:\n", f"{bomb}configs:\n- config_name: *l7\n", 1)
    (folder / "README.md").write_text(readme)
    line = _refused_import(resources, tmp_path, "leaderboard", folder, {"config": IFEVAL_CONFIG})
    assert f"{folder / 'README.md'}: " in line and "aliases" in line and len(line) < 500, line[:500]
