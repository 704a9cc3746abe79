"""Hostile paths and content through the real CLI: every case stops at once with exactly one
line naming the file (and line and field where there are ones), exit 2, no traceback, no output
left behind; or, where it is fine, is graded.

Paths are checked before any work, so each case here pairs the bad path with inputs that would
otherwise fail later (or take long): the error seen is the path's, and nothing was graded."""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path, PurePath

import pytest

from conftest import GPT4_RESPONSES, IFAUDIT, IFEVAL_PROMPTS, cli_env, grade_args, read_jsonl, run_cli, write_jsonl
from ifaudit.cli import build_parser
from ifaudit.io.paths import InputFile, InputFileOrFolder, InputFolder, OutputFile, OutputFolder

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


# Every path argument of every subcommand, read from the parser itself: an argument typed with a
# path class of ifaudit.io.paths is filled by its class (a regular file, a folder, a place to
# write); any other value that holds a path is in NESTED below, which says how to build it.
INPUTS_BY_TYPE = {InputFile: "file", InputFolder: "folder", InputFileOrFolder: "file or folder"}
OUTPUTS_BY_TYPE = {OutputFile: "new file", OutputFolder: "new folder"}
# Required arguments that are not paths, and a value each accepts.
PLAIN_VALUES = {
    "--run": "r",
    "--runs": "r",
    "--name": "d",
    "--format": "lm-eval",
    "--config-json": "{}",
    "--plan-sha256": "0" * 64,
    "--steps-sha256": "0" * 64,
    "--model-json": "{}",
}
# Paths inside other options' values, which the parser cannot see: how each option's value names
# a hostile path (checked by cli._nested_inputs, or where the command opens the file).
NESTED = {
    "--file": lambda path: f"grades={path}",  # manifest: LABEL=PATH, hashed
    "--dataset": lambda path: f"d={path}",  # manifest: NAME=RECORD, a fetch record
    "--options-json": lambda path: json.dumps({"results": path}),  # import-log: lm-eval's results file
    "--from": str,  # a grader source (a folder or an archive); fetch: a dataset source, tried in order
    "--infobench-from": str,  # a source of InFoBench's evaluation.py
}
# Options whose words mention a file, a folder or JSON but whose value names no path to open.
NOT_PATHS = {
    "--model-json",  # generate: the model's settings (an endpoint, sampling): no file
    "--config-json",  # manifest: the run's configuration, recorded as it is, not opened
    "--image",  # bundle: a .sif file, or an image reference; a FIFO is neither (test_bundle covers it)
}
PATHLIKE_WORDS = re.compile(r"PATH|RECORD|SOURCE|FILE|\bfiles?\b|folder|JSON")


@functools.cache
def _commands() -> dict[str, argparse.ArgumentParser]:
    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(commands.choices)


def _arguments(sub: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in sub._actions if not isinstance(a, (argparse._HelpAction, argparse._VersionAction))]


def _name(action: argparse.Action) -> str:
    return action.option_strings[0] if action.option_strings else action.dest


def _is_path(action: argparse.Action) -> bool:
    return isinstance(action.type, type) and issubclass(action.type, PurePath)


def _unfillable() -> list[str]:
    """Arguments this test does not know how to fill: a path class it does not know, a required
    plain value it has no value for, or words naming a path without a nested recipe."""
    found = []
    for command, sub in _commands().items():
        for action in _arguments(sub):
            name = _name(action)
            if _is_path(action):
                if action.type not in {**INPUTS_BY_TYPE, **OUTPUTS_BY_TYPE}:
                    found.append(f"{command} {name}: path type {action.type.__name__}")
            elif PATHLIKE_WORDS.search(f"{action.metavar} {action.help}") and name not in {*NESTED, *NOT_PATHS}:
                found.append(f"{command} {name}: may hold a path ({action.metavar}: {action.help})")
            if action.required and not _is_path(action) and name not in PLAIN_VALUES:
                found.append(f"{command} {name}: required, and no value for it here")
    return found


def _path_arguments() -> list[tuple[str, str]]:
    """(command, argument) of every path argument and every nested path option, parser order."""
    return [
        (command, _name(action))
        for command, sub in _commands().items()
        for action in _arguments(sub)
        if _is_path(action) or _name(action) in NESTED
    ]


PATH_ARGUMENTS = _path_arguments()


def _first(kinds: dict[type, str]) -> dict[str, str]:
    """Each command's first path argument of one of `kinds`, or nested (the extra kinds go there)."""
    first: dict[str, str] = {}
    for command, sub in _commands().items():
        for action in _arguments(sub):
            if (action.type in kinds) if _is_path(action) else (_name(action) in NESTED and kinds is INPUTS_BY_TYPE):
                first.setdefault(command, _name(action))
    return first


FIRST_INPUT, FIRST_OUTPUT = _first(INPUTS_BY_TYPE), _first(OUTPUTS_BY_TYPE)
# What each kind of hostile path is, and what the one line says of it, by what the argument wants.
HOSTILE = {
    "file": {
        "fifo": "is a FIFO (named pipe), not a file",
        "/dev/zero": "is a character device, not a file",
        "folder": "is a folder, not a file",
        "missing": "file not found",
        "loop": "is a symbolic link loop",
    },
    "folder": {
        "fifo": "is a FIFO (named pipe), not a folder",
        "/dev/zero": "is a character device, not a folder",
        "file": "is a file, not a folder",
        "missing": "folder not found",
        "loop": "is a symbolic link loop",
    },
    "file or folder": {
        "fifo": "is a FIFO (named pipe), not a file or folder",
        "/dev/zero": "is a character device, not a file or folder",
        "missing": "file or folder not found",
        "loop": "is a symbolic link loop",
    },
    "new file": {
        "fifo": "cannot write: it is a FIFO (named pipe), not a file",
        "folder": "cannot write: Is a directory",
    },
    "new folder": {
        "fifo": "cannot write: it is a FIFO (named pipe), not a folder",
        "file": "cannot write: it is a file, not a folder",
        "loop": "is a symbolic link loop",
    },
}


def _cases() -> list[tuple[str, str, str]]:
    """FIFO on every path argument; every other kind on each command's first input and first output."""
    return [
        (command, name, kind)
        for command, name in PATH_ARGUMENTS
        for kind in ("fifo", "/dev/zero", "folder", "file", "missing", "loop")
        if kind == "fifo" or name in (FIRST_INPUT.get(command), FIRST_OUTPUT.get(command))
        if kind in HOSTILE[_wants(command, name)]
    ]


def _action(command: str, name: str) -> argparse.Action:
    return next(a for a in _arguments(_commands()[command]) if _name(a) == name)


def _wants(command: str, name: str) -> str:
    """What an argument wants: a file or a folder to read, or a new file or folder to write."""
    action = _action(command, name)
    if not _is_path(action):
        return "file"
    return {**INPUTS_BY_TYPE, **OUTPUTS_BY_TYPE}[action.type]


def _good_value(action: argparse.Action, tmp_path: Path) -> str:
    """A value that passes the checks: the GPT-4 prompt set for a file, a fresh folder or place."""
    wants = {**INPUTS_BY_TYPE, **OUTPUTS_BY_TYPE}.get(action.type) if _is_path(action) else None
    if wants in ("file", "file or folder"):
        return str(IFEVAL_PROMPTS)
    if wants == "folder":
        return str(IFEVAL_PROMPTS.parent)
    return str(tmp_path / "out" / action.dest) if wants else PLAIN_VALUES[_name(action)]


def _command_line(command: str, name: str, hostile: str, tmp_path: Path) -> list[str]:
    """`command` with every required argument and every path argument with a default (a string
    default such as selfcheck's `--config` is checked like a given value) filled with a good
    value, and `name` hostile."""
    args = [command]
    for action in _arguments(_commands()[command]):
        value = NESTED[_name(action)](hostile) if _name(action) == name and name in NESTED else hostile
        if _name(action) != name:
            if not action.required and not (_is_path(action) and action.default is not None):
                continue
            value = _good_value(action, tmp_path)
        args += [value] if not action.option_strings else [action.option_strings[0], value]
    return args


def test_the_parser_has_no_path_argument_this_test_cannot_fill() -> None:
    assert _unfillable() == []
    assert len(PATH_ARGUMENTS) >= 90  # 93 typed path arguments and 13 nested ones when written


@pytest.fixture(scope="module")
def startup(resources: Path) -> float:
    """Wall time of `ifaudit --help` (start-up and the parser alone), the least any command takes."""
    started = time.monotonic()
    assert run_cli(["--help"], resources).returncode == 0
    return time.monotonic() - started


# Each command's first case runs in a process of its own, as a user meets it (what the process
# prints at start-up and exit counts too); the command's other cases call the same entry point,
# ifaudit.cli.main, in this process with the CLI's environment: a process start each (0.1 s of
# CPU) would be most of the inner loop's time, and it is not what differs between them.
IN_A_PROCESS = {next(case for case in _cases() if case[0] == command) for command in _commands()}


def ifaudit_in_process(args: list[str], resources: Path, monkeypatch, capsys) -> subprocess.CompletedProcess:
    """`ifaudit ARGS` through ifaudit.cli.main in this process, under the CLI's environment
    (conftest.cli_env), with its exit status and what it printed. An exception escaping main
    fails the test (a process would print it as a traceback); so does a body still running
    after 10 s (a FIFO opened for reading blocks)."""
    from ifaudit.cli import main

    for key in [key for key in os.environ if key.startswith("IFAUDIT_")]:
        monkeypatch.delenv(key)
    for key, value in cli_env(resources).items():
        if key.startswith("IFAUDIT_"):
            monkeypatch.setenv(key, value)
    capsys.readouterr()
    with within(10):
        try:
            status = main(args)
        except SystemExit as exit:  # argparse's own refusals
            status = exit.code
    printed = capsys.readouterr()
    return subprocess.CompletedProcess(args, status, printed.out, printed.err)


@pytest.mark.parametrize("command, name, kind", _cases(), ids=["-".join(case) for case in _cases()])
def test_every_file_argument_of_every_command_is_checked(
    resources: Path, tmp_path: Path, files, startup: float, command: str, name: str, kind: str, monkeypatch, capsys
) -> None:
    """A hostile path in any path argument of any command is refused in one line naming it,
    within a second of start-up, and nothing is written. Start-up (~0.3 s here, 2 loaded cores)
    counts once more in the budget: the command may take 1 s beyond `ifaudit --help` (in this
    process, start-up is already done: 1 s of CPU in all)."""
    hostile = {"missing": str(tmp_path / "missing"), "/dev/zero": "/dev/zero"}.get(kind) or str(files[kind])
    args = _command_line(command, name, hostile, tmp_path)
    if (command, name, kind) in IN_A_PROCESS:
        started = time.monotonic()
        done = subprocess.run(  # a hang fails the test after 10 s instead of blocking it
            [str(IFAUDIT), *args], env=cli_env(resources), capture_output=True, text=True, timeout=10
        )
        elapsed = time.monotonic() - started - startup
    else:  # the CPU it took, with any process it waited for: no work done before refusing
        started = sum(os.times()[:4])
        done = ifaudit_in_process(args, resources, monkeypatch, capsys)
        elapsed = sum(os.times()[:4]) - started
    assert done.returncode != 0, done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("ifaudit: error:")]
    assert len(lines) == 1, done.stderr
    source_miss = command == "fetch" and name == "--from"  # a source that is not a file is a miss
    expected = f"ifaudit: error: {'dataset d: ' if source_miss else f'{hostile}: '}"
    assert lines[0].startswith(expected) and HOSTILE[_wants(command, name)][kind] in lines[0], lines[0]
    assert hostile in lines[0], lines[0]
    assert elapsed < 1.0, f"{elapsed:.2f} s beyond start-up ({startup:.2f} s)"
    assert not (tmp_path / "out").exists(), list((tmp_path / "out").rglob("*"))


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "missing", "folder"])
def test_a_hostile_path_named_inside_the_report_plan_is_refused_before_any_work(
    resources: Path, tmp_path: Path, files, kind: str
) -> None:
    """The report plan's file is checked like any input (above); the files it names are checked
    with the arguments, before the plan's sha256 or anything else is read."""
    hostile = {"missing": str(tmp_path / "missing"), "/dev/zero": "/dev/zero"}.get(kind) or str(files[kind])
    staged = tmp_path / "plan.json"
    staged.write_text(json.dumps({"runs": {"r": {"summary": hostile, "stats": hostile}}}))
    args = ["report", "--plan", str(staged), "--plan-sha256", "0" * 64, "--out-dir", str(tmp_path / "out")]
    done = subprocess.run([str(IFAUDIT), *args], env=cli_env(resources), capture_output=True, text=True, timeout=10)
    lines = [line for line in done.stderr.splitlines() if line.startswith("ifaudit: error:")]
    assert done.returncode != 0 and len(lines) == 1, done.stderr
    assert lines[0].startswith(f"ifaudit: error: {hostile}: ") and HOSTILE["file"][kind] in lines[0], lines[0]
    assert not (tmp_path / "out").exists()


@contextlib.contextmanager
def within(seconds: int) -> Iterator[None]:
    """Fail, instead of blocking the test for ever, if the body takes longer than `seconds`."""

    def too_long(signum: int, frame: object) -> None:
        raise AssertionError(f"still running after {seconds} s: blocked on a FIFO or reading without end?")

    previous = signal.signal(signal.SIGALRM, too_long)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


IMPORTER_FILES = [
    ("inspect", "log"),
    ("lm-eval", "log"),
    ("lm-eval", "results"),
    ("openai-batch", "log"),
    ("jsonl", "log"),
]


@pytest.mark.parametrize("bad, message", INPUTS[:1] + INPUTS[-1:], ids=["fifo", "/dev/zero"])
@pytest.mark.parametrize("format_name, role", IMPORTER_FILES, ids=["-".join(case) for case in IMPORTER_FILES])
def test_each_importer_refuses_a_fifo_or_a_device_where_it_opens_its_files(
    files, format_name: str, role: str, bad: str, message: str
) -> None:
    """In-process, past the CLI's check of its arguments: the importer's own open refuses them."""
    from ifaudit.core.errors import InputError
    from ifaudit.inputs.importers import FORMATS

    path = files.get(bad, Path(bad))
    log, options = (path, {}) if role == "log" else (IFEVAL_PROMPTS, {role: str(path)})
    with within(5), pytest.raises(InputError) as raised:
        FORMATS[format_name](log, options)
    assert str(raised.value) == f"{path}: {message}"


def test_a_fifo_inside_a_leaderboard_details_folder_is_refused_before_it_is_read(
    resources: Path, tmp_path: Path, files
) -> None:
    details = tmp_path / "details"
    (details / "model__leaderboard_ifeval").mkdir(parents=True)
    fifo = details / "model__leaderboard_ifeval" / "samples_latest.parquet"
    os.mkfifo(fifo)
    out, harness = tmp_path / "responses.jsonl", tmp_path / "harness.json"
    options = json.dumps({"config": "model__leaderboard_ifeval"})
    done = ifaudit(
        ["import-log", "--format", "leaderboard", "--log", str(details), "--options-json", options]
        + ["--prompts", str(IFEVAL_PROMPTS), "--out", str(out), "--harness", str(harness)],
        resources,
    )
    assert_one_line(done, f"{fifo}: ", "is a FIFO (named pipe), not a file")
    assert not out.exists() and not harness.exists()


def test_a_fetch_record_naming_a_fifo_is_refused_by_manifest(resources: Path, tmp_path: Path, files) -> None:
    """The record itself is a regular file (the CLI checks it); the dataset it names is a FIFO."""
    record = tmp_path / "record.json"
    record.write_text(json.dumps({"path": str(files["fifo"]), "sha256": "0" * 64}))
    out = tmp_path / "manifest.json"
    done = ifaudit(
        ["manifest", "--run", "r", "--config-json", "{}", "--dataset", f"d={record}", "--out", str(out)], resources
    )
    assert_one_line(done, f"{files['fifo']}: ", "is a FIFO (named pipe), not a file")
    assert not out.exists()


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
    # VmHWM, the peak of this process's own memory since its exec: getrusage's ru_maxrss keeps the
    # peak of the process before exec (Linux carries it over), here the forked pytest, hundreds of MB.
    measure = (
        "import re, sys\nfrom ifaudit.cli import main\ncode = main(sys.argv[1:])\n"
        "status = open('/proc/self/status').read()\n"
        "print(re.search(r'VmHWM:\\s+(\\d+) kB', status).group(1))\nsys.exit(code)\n"
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
    assert_one_line(done, f"ifaudit grade: argument --jobs: {jobs} is out of range; expected an integer from 1 to 256")
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
