"""`ifaudit vendor`: pinned bytes from ordered sources over real HTTP and local copies; every
mismatch refused, nothing half-written, materialized files re-verified before use."""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from conftest import REPO, UPSTREAM_SOURCE, grade_args, run_cli
from ifaudit.core.errors import VerificationError
from ifaudit.io.remote.pins import load_pin, materialize, verify_tree
from ifaudit.io.remote.sources import Archive, GitCheckout, LocalFolder, UrlTemplate, Wanted

COMMIT = "0123456789abcdef0123456789abcdef01234567"
FILES = {"pkg/checks.py": b"ANSWER = 42\n", "pkg/util.py": b"def twice(x):\n    return 2 * x\n"}


def write_pin(path: Path, files: dict[str, bytes], commit: str = COMMIT) -> Path:
    lines = [
        'name = "test/pkg"',
        'repository = "https://example.invalid/pkg"',
        f'commit = "{commit}"',
        'licence = "Apache-2.0"',
        'url_template = "http://127.0.0.1:9/{commit}/{path}"',
        'package = "pkg"',
    ]
    for name, data in files.items():
        lines += [
            "",
            "[[files]]",
            f'path = "{name}"',
            f"size = {len(data)}",
            f'sha256 = "{hashlib.sha256(data).hexdigest()}"',
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_tree(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def serve(root: Path, files: dict[str, bytes]) -> None:
    """Lay files out as the URL template {commit}/{path} expects."""
    write_tree(root / COMMIT, files)


def vendor(tmp_path: Path, pin: Path, *sources: str) -> subprocess.CompletedProcess:
    args = ["vendor", "--pin", str(pin), "--vendor-dir", str(tmp_path / "cache"), "--offline"]
    for source in sources:
        args += ["--from", source]
    return run_cli(args, tmp_path / "resources", check=False)


def test_vendor_accepts_matching_bytes_over_http(http_folder, tmp_path: Path) -> None:
    root, base = http_folder
    serve(root, FILES)
    done = vendor(tmp_path, write_pin(tmp_path / "pin.toml", FILES), base + "/{commit}/{path}")
    assert done.returncode == 0, done.stderr
    for name, data in FILES.items():
        assert (tmp_path / "cache" / COMMIT / name).read_bytes() == data


def test_vendor_refuses_one_flipped_byte(http_folder, tmp_path: Path) -> None:
    root, base = http_folder
    serve(root, FILES)
    served = root / COMMIT / "pkg/util.py"
    data = bytearray(served.read_bytes())
    data[5] ^= 0x01
    served.write_bytes(bytes(data))
    done = vendor(tmp_path, write_pin(tmp_path / "pin.toml", FILES), base + "/{commit}/{path}")
    assert done.returncode == 3
    message = done.stderr.strip()
    assert "pkg/util.py" in message and "sha256 mismatch" in message
    assert hashlib.sha256(FILES["pkg/util.py"]).hexdigest() in message
    assert hashlib.sha256(bytes(data)).hexdigest() in message
    assert not (tmp_path / "cache" / COMMIT).exists(), "nothing may be materialized from a failed fetch"
    assert not list((tmp_path / "cache").glob(".staging-*")), "no staging folder may be left behind"


def test_vendor_refuses_a_missing_file(http_folder, tmp_path: Path) -> None:
    root, base = http_folder
    serve(root, {"pkg/checks.py": FILES["pkg/checks.py"]})
    done = vendor(tmp_path, write_pin(tmp_path / "pin.toml", FILES), base + "/{commit}/{path}")
    assert done.returncode == 3
    assert "pkg/util.py" in done.stderr and "HTTP 404" in done.stderr
    assert not (tmp_path / "cache" / COMMIT).exists()


def test_a_bad_source_is_skipped_for_a_later_good_one(http_folder, tmp_path: Path) -> None:
    root, base = http_folder
    serve(root, FILES)
    stale = tmp_path / "stale"
    (stale / "pkg").mkdir(parents=True)
    (stale / "pkg/util.py").write_bytes(b"tampered\n")
    done = vendor(tmp_path, write_pin(tmp_path / "pin.toml", FILES), str(stale), base + "/{commit}/{path}")
    # Of another size than the pinned one: refused before it is read, as other bytes (not as missing).
    assert "skipped folder" in done.stderr and "size mismatch" in done.stderr and "not read" in done.stderr
    assert (tmp_path / "cache" / COMMIT / "pkg/util.py").read_bytes() == FILES["pkg/util.py"]


def test_local_folder_archive_and_git_checkout_sources(tmp_path: Path) -> None:
    pin = load_pin(write_pin(tmp_path / "pin.toml", FILES))
    tree = write_tree(tmp_path / "tree", FILES)
    archive = tmp_path / "snapshot.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:  # laid out like GitHub's archive of a commit
        tar.add(tree / "pkg", arcname=f"repo-{COMMIT}/pkg")
    for index, source in enumerate([LocalFolder(tree), LocalFolder(tree / "pkg"), Archive(archive)]):
        folder = materialize(pin, tmp_path / f"cache{index}", [source])
        verify_tree(pin, folder)
    # A git checkout serves the pinned commit's blobs even when the working tree has moved on.
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tree)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "pinned"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    (tree / "pkg/util.py").write_bytes(b"moved on\n")
    pin_at_head = load_pin(write_pin(tmp_path / "pin-at-head.toml", FILES, commit=head))
    folder = materialize(pin_at_head, tmp_path / "cache-git", [GitCheckout(tree)])
    assert (folder / "pkg/util.py").read_bytes() == FILES["pkg/util.py"]


def test_materialized_files_are_verified_again_before_use(tmp_path: Path) -> None:
    pin = load_pin(write_pin(tmp_path / "pin.toml", FILES))
    tree = write_tree(tmp_path / "tree", FILES)
    folder = materialize(pin, tmp_path / "cache", [LocalFolder(tree)])
    (folder / "pkg/checks.py").write_bytes(b"ANSWER = 43\n")
    with pytest.raises(VerificationError, match="pkg/checks.py: sha256 mismatch"):
        verify_tree(pin, folder)
    (folder / "pkg/checks.py").write_bytes(FILES["pkg/checks.py"])
    (folder / "pkg/extra.py").write_bytes(b"import os\n")
    with pytest.raises(VerificationError, match="extra.py: not part of the pin"):
        verify_tree(pin, folder)
    # materialize() repairs a tampered folder from its sources rather than trusting it.
    assert materialize(pin, tmp_path / "cache", [LocalFolder(tree)]) == folder
    verify_tree(pin, folder)


def test_upstream_grader_is_never_replaced_by_the_stand_in(tmp_path: Path) -> None:
    """Asking for the pinned upstream with no reachable copy fails; it never falls back."""
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"key": 1, "prompt": "Say hi.", "instruction_id_list": [], "kwargs": []}\n')
    responses = tmp_path / "r.jsonl"
    responses.write_text('{"key": 1, "response": "hi"}\n')
    done = run_cli(
        grade_args(prompts, responses, tmp_path / "g.jsonl", "--offline", grader="upstream"),
        tmp_path / "resources",
        check=False,
        IFAUDIT_GRADER_SOURCE="",
    )
    assert done.returncode == 3
    assert "instruction_following_eval/instructions.py: no source has the pinned bytes" in done.stderr
    assert not (tmp_path / "g.jsonl").exists()


def test_vendor_the_real_pin_over_http(http_folder, tmp_path: Path) -> None:
    """The project's own pin, with the real upstream files served over loopback HTTP."""
    root, base = http_folder
    pin = load_pin(REPO / "vendor/google_ifeval/pin.toml")
    source = LocalFolder(Path(UPSTREAM_SOURCE.split(os.pathsep)[0]))
    for pinned in pin.files:
        target = root / pin.commit / pinned.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read(Wanted(pinned.path, pin.commit)))
    folder = materialize(pin, tmp_path / "cache", [UrlTemplate(base + "/{commit}/{path}")])
    verify_tree(pin, folder)


def test_bytecode_beside_the_pinned_grader_is_never_run_in_place_of_its_verified_source(tmp_path: Path) -> None:
    """Python runs `__pycache__/<module>.<tag>.pyc` instead of a source whose modification time and
    size its header repeats, never reading the source. One planted beside the materialized grader
    (or left there by an earlier process) must not run: the pinned bytes are compiled instead."""
    pin = load_pin(REPO / "vendor/google_ifeval/pin.toml")
    folder = materialize(pin, tmp_path / "cache", [LocalFolder(Path(UPSTREAM_SOURCE))])
    source = folder / "instruction_following_eval/instructions_util.py"
    genuine = source.read_bytes()
    planted = compile(genuine + b"\nTAMPERED = True\n", str(source), "exec")
    stat = source.stat()
    header = importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little")
    header += (int(stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") + (stat.st_size & 0xFFFFFFFF).to_bytes(
        4, "little"
    )
    pyc = source.parent / "__pycache__" / f"instructions_util.{sys.implementation.cache_tag}.pyc"
    pyc.parent.mkdir()
    pyc.write_bytes(header + marshal.dumps(planted))
    probe = (
        "import sys; from pathlib import Path\n"
        "from ifaudit.io.remote.pins import load_pin\n"
        "from ifaudit.io.remote.sources import LocalFolder\n"
        "from ifaudit.tasks.graders import load_upstream\n"
        f"load_upstream(load_pin({str(REPO / 'vendor/google_ifeval/pin.toml')!r}), Path({str(tmp_path / 'cache')!r}), [])\n"
        "util = sys.modules['instruction_following_eval.instructions_util']\n"
        "print(hasattr(util, 'TAMPERED'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False", "the planted bytecode ran instead of the pinned source"
    assert source.read_bytes() == genuine and pyc.is_file()  # nothing repaired behind the test's back
    assert sorted(p.name for p in pyc.parent.iterdir()) == [pyc.name]  # and no bytecode written beside it
