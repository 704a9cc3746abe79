"""Hostile paths and content through the real CLI: every case stops at once with exactly one
line naming the file (and line and field where there are ones), exit 2, no traceback, no output
left behind; or, where it is fine, is graded.

Paths are checked before any work, so each case here pairs the bad path with inputs that would
otherwise fail later (or take long): the error seen is the path's, and nothing was graded."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import GPT4_RESPONSES, IFAUDIT, IFEVAL_PROMPTS, cli_env, grade_args, read_jsonl, write_jsonl

PROMPTS = read_jsonl(IFEVAL_PROMPTS)[:5]  # keys 1000, 1001, 1005, 1012, 1019
ANSWERS = {r["prompt"]: r["response"] for r in read_jsonl(GPT4_RESPONSES)}
GOOD = [{"key": p["key"], "response": ANSWERS[p["prompt"]]} for p in PROMPTS]
# Run as root, permissions do not stop a read or a write; without these capabilities they do.
NO_OVERRIDE = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []


def ifaudit(args: list[str], resources: Path, wrap: list[str] = (), **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*wrap, str(IFAUDIT), *args], env=cli_env(resources, **env), capture_output=True, text=True, timeout=60
    )  # a FIFO read would hang: fail instead


def assert_one_line(done: subprocess.CompletedProcess, starts: str, *words: str) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"ifaudit: error: {starts}"), lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """Good prompts and responses (all 541 GPT-4 answers: grading them takes a while), and a
    FIFO, a dangling link, a link loop and a plain file to put in their places."""
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "loop_a").symlink_to(tmp_path / "loop_b")
    (tmp_path / "loop_b").symlink_to(tmp_path / "loop_a")
    (tmp_path / "a_file").write_text("not a folder\n")
    return {
        "prompts": IFEVAL_PROMPTS,
        "responses": GPT4_RESPONSES,
        "fifo": tmp_path / "fifo",
        "dangling": tmp_path / "dangling",
        "loop": tmp_path / "loop_a",
        "file": tmp_path / "a_file",
        "folder": tmp_path,
    }


INPUTS = [
    ("fifo", "is a FIFO (named pipe), not a file"),
    ("dangling", "is a dangling symbolic link"),
    ("loop", "is a symbolic link loop"),
    ("folder", "is a folder, not a file"),
    ("/dev/zero", "is a character device, not a file"),
]


@pytest.mark.parametrize("role", ["responses", "prompts"])
@pytest.mark.parametrize("bad, message", INPUTS, ids=[case[0] for case in INPUTS])
def test_an_input_that_is_not_a_regular_file_is_refused_at_once(
    resources: Path, tmp_path: Path, files, role, bad, message
) -> None:
    path = files.get(bad, Path(bad))
    paths = {**{k: files[k] for k in ("prompts", "responses")}, role: path}
    out = tmp_path / "grades.jsonl"
    done = ifaudit(grade_args(paths["prompts"], paths["responses"], out), resources)
    assert_one_line(done, f"{path}: ", message)
    assert not out.exists() and not list(tmp_path.glob(".grades.jsonl.*"))


def test_an_unreadable_input_is_refused_at_once(resources: Path, tmp_path: Path) -> None:
    secret = write_jsonl(tmp_path / "secret.jsonl", GOOD)
    secret.chmod(0)
    out = tmp_path / "grades.jsonl"
    done = ifaudit(grade_args(IFEVAL_PROMPTS, secret, out), resources, wrap=NO_OVERRIDE)
    assert_one_line(done, f"{secret}: ", "cannot be read: permission denied")
    assert not out.exists()


@pytest.mark.parametrize("case", ["a folder", "parent is a file", "read-only folder", "a device"])
def test_an_output_that_cannot_be_written_is_refused_before_grading(
    resources: Path, tmp_path: Path, files, case
) -> None:
    """The responses are all 541 GPT-4 answers, and the last line is broken: a check made after
    reading or grading would report that line, or take many seconds, instead."""
    responses = tmp_path / "responses.jsonl"
    responses.write_bytes(GPT4_RESPONSES.read_bytes() + b'{"broken\n')
    read_only = tmp_path / "read_only"
    read_only.mkdir()
    read_only.chmod(0o555)
    out, message = {
        "a folder": (files["folder"], "cannot write: Is a directory"),
        "parent is a file": (files["file"] / "grades.jsonl", f"cannot write: Not a directory ({files['file']} is not"),
        "read-only folder": (read_only / "grades.jsonl", f"cannot write: Permission denied (in {read_only})"),
        "a device": (Path("/dev/null"), "cannot write: it is a character device, not a file"),
    }[case]
    done = ifaudit(grade_args(IFEVAL_PROMPTS, responses, out), resources, wrap=NO_OVERRIDE)
    assert_one_line(done, f"{out}: ", message)
    assert list(read_only.iterdir()) == [] and not list(tmp_path.rglob(".ifaudit-probe-*"))


def test_every_file_argument_of_every_command_is_checked(resources: Path, files) -> None:
    """Not only `grade`: a FIFO handed to any command that reads a file is refused at once."""
    fifo = str(files["fifo"])
    out = str(files["folder"] / "out.json")
    for args in (
        ["stats", "--grades", fifo, "--prompts", str(IFEVAL_PROMPTS), "--out", out],
        [
            "verify",
            "--first",
            fifo,
            "--second",
            fifo,
            "--first-out",
            out,
            "--second-out",
            out,
            "--out",
            out,
            "--record",
            out,
        ],
        ["summarize", "--run", "r", "--grades", fifo, "--prompts", fifo, "--canary", fifo, "--out", out],
        ["agreement", "--annotations", fifo, "--out", out],
        ["selfcheck", "--config", fifo, "--out", out],
    ):
        assert_one_line(ifaudit(args, resources), f"{fifo}: ", "is a FIFO")


def line_of(obj: dict) -> bytes:
    return json.dumps(obj).encode()


CONTENT = [
    (
        "nested 10,000 deep",
        line_of({**GOOD[1], "meta": "X"}).replace(b'"X"', b"[" * 10_000 + b"]" * 10_000),
        2,
        "meta",
        "nested more than 64 levels deep",
    ),
    (
        "nested 100 deep",
        line_of({**GOOD[1], "meta": {"a": "X"}}).replace(b'"X"', b"[" * 100 + b"]" * 100),
        2,
        "meta",
        "nested more than 64 levels deep",
    ),
    (
        "lone surrogate in the response",
        line_of({"key": 1001, "response": "ok \ud800 then"}),
        2,
        "response",
        "unpaired UTF-16 surrogate \\ud800 at character 4",
    ),
    (
        "lone low surrogate, nested",
        line_of({**GOOD[1], "meta": {"notes": ["fine", "\udc00"]}}),
        2,
        "meta.notes[1]",
        "unpaired UTF-16 surrogate \\udc00",
    ),
    (
        "lone surrogate in a field name",
        line_of({**GOOD[1], "x\ud800": 1}),
        2,
        "x\\ud800",
        "unpaired UTF-16 surrogate in the field name",
    ),
    (
        "key and another prompt's text",
        line_of({"key": 1000, "prompt": PROMPTS[1]["prompt"], "response": "x"}),
        2,
        "prompt",
        "is not the text of the prompt that 'key' 1000 names",
    ),
    (
        "response and output",
        line_of({"key": 1001, "response": "x", "output": "y"}),
        2,
        "output",
        "given together with 'response'",
    ),
    ("key and id", line_of({"key": 1001, "id": 1001, "response": "x"}), 2, "id", "given together with 'key'"),
]


@pytest.mark.parametrize("second, line, field, message", [c[1:] for c in CONTENT], ids=[c[0] for c in CONTENT])
def test_hostile_content_is_one_line_naming_file_line_and_field(
    resources: Path, tmp_path: Path, second: bytes, line: int, field: str, message: str
) -> None:
    prompts = write_jsonl(tmp_path / "prompts.jsonl", PROMPTS)
    responses = tmp_path / "responses.jsonl"
    responses.write_bytes(line_of(GOOD[0]) + b"\n" + second + b"\n")
    out = tmp_path / "grades.jsonl"
    done = ifaudit(grade_args(prompts, responses, out), resources)
    assert_one_line(done, f"{responses}:{line}: field '{field}': ", message)
    assert not out.exists() and not list(tmp_path.glob(".grades.jsonl.*"))


def test_a_lone_surrogate_in_a_prompt_set_names_the_prompt_field(resources: Path, tmp_path: Path) -> None:
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_bytes(b"\n".join(line_of(p) for p in [PROMPTS[0], {**PROMPTS[1], "prompt": "Write \udfff."}]))
    responses = write_jsonl(tmp_path / "responses.jsonl", GOOD[:1])
    done = ifaudit(grade_args(prompts, responses, tmp_path / "g.jsonl"), resources)
    assert_one_line(done, f"{prompts}:2: field 'prompt': ", "unpaired UTF-16 surrogate \\udfff")


def test_what_is_not_contradictory_is_graded(resources: Path, tmp_path: Path) -> None:
    """A surrogate pair (an emoji written as two escapes), a key with its own prompt's text, an
    object nested 64 levels deep (the limit) in a field the grader ignores: all graded, as without them."""
    prompts = write_jsonl(tmp_path / "prompts.jsonl", PROMPTS)
    plain = write_jsonl(tmp_path / "plain.jsonl", [*GOOD[:2], {"key": 1005, "response": "smile \U0001f600"}])
    nested: object = []
    for _ in range(62):  # 63 lists in the line's object: 64 levels, the most allowed
        nested = [nested]
    extra = tmp_path / "extra.jsonl"
    extra.write_text(
        "\n".join(
            [
                json.dumps({**GOOD[0], "prompt": PROMPTS[0]["prompt"]}),
                json.dumps({**GOOD[1], "meta": nested}),
                json.dumps({"key": 1005, "response": "smile \U0001f600"}, ensure_ascii=True),  # "\ud83d\ude00"
            ]
        )
        + "\n"
    )
    assert "\\ud83d\\ude00" in extra.read_text()
    outs = []
    for responses in (plain, extra):
        outs.append(tmp_path / f"{responses.stem}.grades.jsonl")
        done = ifaudit(grade_args(prompts, responses, outs[-1]), resources)
        assert done.returncode == 0, done.stderr
    assert outs[0].read_bytes() == outs[1].read_bytes()
    assert not list(tmp_path.glob(".ifaudit-probe-*"))  # checking the output left nothing


def test_a_line_over_the_cap_is_refused_and_the_cap_is_configurable(resources: Path, tmp_path: Path) -> None:
    prompts = write_jsonl(tmp_path / "prompts.jsonl", PROMPTS)
    responses = write_jsonl(
        tmp_path / "responses.jsonl", [{"key": 1000, "response": "short"}, {"key": 1001, "response": "word " * 400}]
    )
    out = tmp_path / "grades.jsonl"
    done = ifaudit(grade_args(prompts, responses, out), resources, IFAUDIT_MAX_LINE_BYTES="1000")
    assert_one_line(done, f"{responses}:2: ", "line is longer than 1000 bytes", "IFAUDIT_MAX_LINE_BYTES")
    assert not out.exists()
    done = ifaudit(grade_args(prompts, responses, out), resources, IFAUDIT_MAX_LINE_BYTES="3000")
    assert done.returncode == 0, done.stderr
    done = ifaudit(grade_args(prompts, responses, out), resources, IFAUDIT_MAX_LINE_BYTES="lots")
    assert_one_line(done, "IFAUDIT_MAX_LINE_BYTES='lots': expected a positive number of bytes")


def test_a_one_gigabyte_line_is_refused_in_bounded_memory(resources: Path, tmp_path: Path) -> None:
    """A 1 GB file of zero bytes without a newline (sparse, so the test writes nothing): read up
    to the default 64 MiB cap and refused; the process's peak memory is measured, not assumed."""
    prompts = write_jsonl(tmp_path / "prompts.jsonl", PROMPTS)
    zeros = tmp_path / "zeros.jsonl"
    with open(zeros, "wb") as handle:
        handle.truncate(1 << 30)
    out = tmp_path / "grades.jsonl"
    measure = (
        "import resource, sys\nfrom ifaudit.cli import main\ncode = main(sys.argv[1:])\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\nsys.exit(code)\n"
    )
    done = subprocess.run(
        [str(IFAUDIT.parent / "python"), "-c", measure, *grade_args(prompts, zeros, out)],
        env=cli_env(resources),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert_one_line(done, f"{zeros}:1: ", f"line is longer than {64 * 1024 * 1024} bytes")
    peak_mib = int(done.stdout) / 1024
    assert peak_mib < 400, f"peak memory {peak_mib:.0f} MiB reading a 1 GB line"


@pytest.mark.parametrize("jobs", ["0", "-3"])
def test_jobs_below_one_is_refused(resources: Path, tmp_path: Path, jobs: str) -> None:
    out = tmp_path / "grades.jsonl"
    done = ifaudit(grade_args(IFEVAL_PROMPTS, GPT4_RESPONSES, out, "--jobs", jobs), resources)
    assert_one_line(done, f"--jobs {jobs}: expected at least 1 worker process")
    assert not out.exists()


def test_a_dataset_source_that_is_not_a_readable_file_is_a_miss_not_a_hang(
    resources: Path, tmp_path: Path, files
) -> None:
    secret = write_jsonl(tmp_path / "secret.jsonl", GOOD)
    secret.chmod(0)
    out = tmp_path / "data.jsonl"
    done = ifaudit(
        [
            "fetch",
            "--name",
            "mine",
            "--from",
            str(files["fifo"]),
            "--from",
            "/dev/zero",
            "--from",
            str(secret),
            "--out",
            str(out),
            "--record",
            str(tmp_path / "data.json"),
        ],
        resources,
        wrap=NO_OVERRIDE,
    )
    assert_one_line(
        done,
        "dataset mine: no source has the expected bytes",
        "is a FIFO",
        "is a character device",
        "cannot be read: permission denied",
    )
    assert not out.exists()
