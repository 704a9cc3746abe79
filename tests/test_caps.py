"""Bounded resources for what a server or a log hands in ("trust nothing"): an endpoint's answer
is refused past max_answer_bytes, a whole request is cut at deadline_seconds however slowly the
server trickles, and an inspect `.eval` (a zip) is refused past its member and total caps without
being inflated whole. Real loopback servers on 127.0.0.1 and real files; memory is measured in a
separate process (its peak resident size, VmHWM)."""

from __future__ import annotations

import contextlib
import http.server
import json
import struct
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import IFEVAL_PROMPTS, cli_env
from ifaudit.core.errors import IfauditError, InputError
from ifaudit.inputs.generation import ModelSettings
from ifaudit.inputs.importers import inspect_log
from ifaudit.io.remote.http_client import DEFAULT_MAX_ANSWER_BYTES, EndpointError, HttpPolicy, post_json
from ifaudit.judging.judge import JudgeSettings

MiB = 1024 * 1024
GiB = 1024 * MiB
PEAK_LIMIT = 300 * 1000 * 1000  # bytes of resident memory a refused input may cost at most
HUGE_ANSWER = 300 * MiB
INSPECT_LOGS = Path(__file__).parent / "data" / "harness_logs" / "inspect"
INSPECT_EVAL = next(INSPECT_LOGS.glob("*.eval"))
INSPECT_JSON = next(INSPECT_LOGS.glob("*.json"))
BOMB_HEADER = json.dumps({"eval": {"task": "ifeval"}})


# --- loopback servers -------------------------------------------------------------------------


class _Server(http.server.ThreadingHTTPServer):
    block_on_close = False  # a trickling handler thread must not hold up the fixture's teardown
    requests: int
    mode: str


class _Handler(http.server.BaseHTTPRequestHandler):
    """Answers every POST as the server's `mode` says: a huge body (with a Content-Length,
    chunked, or ended by closing the connection), or one byte a second (in the status line or in
    the body). It stops when the client hangs up."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.requests += 1
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client hung up
            getattr(self, "_" + self.server.mode.replace("-", "_"))()
        self.close_connection = True

    def _stream(self, size: int, chunked: bool) -> None:
        block = b" " * MiB  # JSON whitespace: the body would even parse, were it read
        for _ in range(size // MiB):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(block), block) if chunked else block)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")

    def _huge_with_length(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(HUGE_ANSWER))
        self.end_headers()
        self._stream(HUGE_ANSWER, chunked=False)

    def _huge_chunked(self) -> None:
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._stream(HUGE_ANSWER, chunked=True)

    def _huge_until_close(self) -> None:
        self.send_response(200)
        self.send_header("Connection", "close")
        self.end_headers()
        self._stream(HUGE_ANSWER, chunked=False)

    def _trickle(self, data: bytes) -> None:
        for byte in data:
            self.wfile.write(bytes([byte]))
            self.wfile.flush()
            time.sleep(1.0)

    def _trickle_status_line(self) -> None:
        self._trickle(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")

    def _trickle_body(self) -> None:
        body = b'{"choices": [' + b" " * 60 + b"]}"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self._trickle(body)

    def _exact(self) -> None:  # a JSON answer of exactly 1000 bytes, chunked
        body = b'{"x": "' + b"a" * 991 + b'"}'
        assert len(body) == 1000
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[_Server]:
    served = _Server(("127.0.0.1", 0), _Handler)
    served.requests, served.mode = 0, "exact"
    threading.Thread(target=served.serve_forever, daemon=True).start()
    yield served
    served.shutdown()
    served.server_close()


def _url(server: _Server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def _in_a_fresh_process(code: str, *args: str, env: dict[str, str] | None = None) -> tuple[str, int]:
    """Run `code` in a new interpreter; (its stderr, its peak resident bytes). The code's last
    act is to print its peak: VmHWM, its own memory's peak since exec (getrusage's ru_maxrss keeps
    the peak of the process before exec, which Linux carries over: the forked pytest's)."""
    tail = (
        "\nimport re; print(int(re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1)) * 1024)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code + tail, *args], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    return done.stderr, int(done.stdout.strip().splitlines()[-1])


# --- the answer's size ------------------------------------------------------------------------

_POST_AND_REPORT = """
import sys
from ifaudit.io.remote.http_client import EndpointError, HttpPolicy, post_json
try:
    post_json(HttpPolicy(base_url=sys.argv[1], retries=2, backoff_seconds=0), "/chat/completions", {})
except EndpointError as error:
    print(error, file=sys.stderr)
"""


@pytest.mark.parametrize("mode", ["huge-with-length", "huge-chunked", "huge-until-close"])
def test_caps_a_300_mib_answer_is_refused_in_one_line_unretried_in_bounded_memory(server: _Server, mode: str) -> None:
    """HttpPolicy.max_answer_bytes (default 64 MiB): a 300 MiB answer, announced by its
    Content-Length, chunked, or ended by closing, costs the client less than 300 MB and one line."""
    server.mode = mode
    started = time.monotonic()
    stderr, peak = _in_a_fresh_process(_POST_AND_REPORT, _url(server) + "/v1")
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert (
        f"endpoint {_url(server)}/v1/chat/completions answered with more than {DEFAULT_MAX_ANSWER_BYTES} bytes"
        in (lines[0])
    )
    assert "raise max_answer_bytes" in lines[0]
    assert peak < PEAK_LIMIT, f"peak {peak / MiB:.0f} MiB"
    assert server.requests == 1  # the same request would get the same answer: not retried
    assert time.monotonic() - started < 30


def test_caps_an_answer_of_exactly_the_cap_is_read_and_one_byte_less_of_cap_refuses_it(server: _Server) -> None:
    """HttpPolicy.max_answer_bytes is inclusive: 1000 bytes pass a cap of 1000, not one of 999."""
    server.mode = "exact"
    answer = post_json(HttpPolicy(base_url=_url(server), max_answer_bytes=1000), "/x", {})
    assert answer == {"x": "a" * 991}
    with pytest.raises(EndpointError, match="answered with more than 999 bytes"):
        post_json(HttpPolicy(base_url=_url(server), max_answer_bytes=999), "/x", {})


# --- the whole request's deadline -------------------------------------------------------------


@pytest.mark.parametrize("mode", ["trickle-status-line", "trickle-body"])
def test_caps_a_server_sending_a_byte_a_second_is_cut_at_the_deadline(server: _Server, mode: str) -> None:
    """HttpPolicy.deadline_seconds: each byte comes well within the 3 s per-read timeout, so only
    the 2 s deadline on the whole request (headers or body) can stop it."""
    server.mode = mode
    policy = HttpPolicy(base_url=_url(server), timeout_seconds=3, deadline_seconds=2, retries=0)
    started = time.monotonic()
    with pytest.raises(EndpointError) as raised:
        post_json(policy, "/x", {})
    elapsed = time.monotonic() - started
    assert "no complete answer within the 2 s deadline (deadline_seconds)" in str(raised.value)
    assert "\n" not in str(raised.value)
    assert 1.9 <= elapsed <= 3.5


def test_caps_a_deadline_cut_is_retried_within_the_retry_budget(server: _Server) -> None:
    """HttpPolicy: a request cut at its deadline is a transient failure, retried like a time-out."""
    server.mode = "trickle-body"
    policy = HttpPolicy(base_url=_url(server), timeout_seconds=3, deadline_seconds=1.2, retries=1, backoff_seconds=0)
    started = time.monotonic()
    with pytest.raises(EndpointError, match=r"after 2 attempts \(last: no complete answer within the 1.2 s deadline"):
        post_json(policy, "/x", {})
    assert server.requests == 2
    assert 2.3 <= time.monotonic() - started <= 4.5


def test_caps_the_deadline_defaults_to_twice_the_timeout() -> None:
    """HttpPolicy.deadline(): unset, twice timeout_seconds; set, as given."""
    assert HttpPolicy(base_url="http://127.0.0.1", timeout_seconds=7).deadline() == 14
    assert HttpPolicy(base_url="http://127.0.0.1", timeout_seconds=7, deadline_seconds=3).deadline() == 3


def test_caps_model_and_judge_settings_carry_the_caps_into_the_policy() -> None:
    """ModelSettings and JudgeSettings: the new fields reach HttpPolicy, with their defaults."""
    spec = {"model": "m", "base_url": "http://127.0.0.1:1/v1", "max_answer_bytes": 1000, "deadline_seconds": 5}
    policy = ModelSettings.from_dict(spec).policy()
    assert (policy.max_answer_bytes, policy.deadline()) == (1000, 5)
    default = ModelSettings.from_dict({"model": "m", "base_url": "http://127.0.0.1:1/v1"}).policy()
    assert (default.max_answer_bytes, default.deadline()) == (64 * MiB, 1200)
    judge = JudgeSettings(model="m").policy()
    assert (judge.max_answer_bytes, judge.deadline()) == (64 * MiB, 240)


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("max_answer_bytes", 0, "expected a number above 0"),
        ("max_answer_bytes", 1.5, "expected a number"),
        ("deadline_seconds", -1, "expected a number above 0"),
        ("deadline_seconds", "600", "expected a number"),
    ],
)
def test_caps_model_settings_refuse_a_cap_that_is_not_a_positive_number(name: str, value: object, problem: str) -> None:
    """ModelSettings.from_dict: a bad cap is one line naming the field."""
    with pytest.raises(InputError) as raised:
        ModelSettings.from_dict({"model": "m", "base_url": "http://127.0.0.1:1/v1", name: value})
    assert str(raised.value) == f"field 'model.{name}': {problem}, got {value!r}"


# --- inspect .eval archives -------------------------------------------------------------------


@pytest.fixture(scope="module")
def zip_bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A .eval of a few MB whose one sample member inflates to 1 GiB of zeros, written chunkwise
    (deflate level 1: 2 s to write rather than 5 at the default level, for 4.6 MB not 1 MB)."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.eval"
    zeros = bytes(MiB)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("header.json", BOMB_HEADER)
        with archive.open("samples/1_epoch_1.json", "w") as member:
            for _ in range(GiB // MiB):
                member.write(zeros)
    assert path.stat().st_size < 8 * MiB
    return path


def _understate(source: Path, out: Path, name: str, size: int) -> Path:
    """A copy of the zip `source` whose central directory says member `name` holds `size` bytes
    (the lie a bomb tells to slip under a check of declared sizes)."""
    data = bytearray(source.read_bytes())
    end = data.rfind(b"PK\x05\x06")
    entries, _, start = struct.unpack_from("<HII", data, end + 10)
    offset = start
    for _ in range(entries):
        name_length, extra_length, comment_length = struct.unpack_from("<HHH", data, offset + 28)
        if data[offset + 46 : offset + 46 + name_length].decode() == name:
            struct.pack_into("<I", data, offset + 24, size)
        offset += 46 + name_length + extra_length + comment_length
    out.write_bytes(bytes(data))
    return out


_IMPORT_AND_REPORT = """
import sys
from ifaudit.cli import main
main(sys.argv[1:])
"""


def _import_in_a_fresh_process(log: Path, tmp_path: Path, resources: Path) -> tuple[str, int]:
    """`ifaudit import-log --format inspect` of `log` in a new process: (its one error line, its
    peak resident bytes); nothing may be written."""
    args = ["import-log", "--format", "inspect", "--log", str(log), "--prompts", str(IFEVAL_PROMPTS)]
    args += ["--out", str(tmp_path / "r.jsonl"), "--harness", str(tmp_path / "h.json")]
    stderr, peak = _in_a_fresh_process(_IMPORT_AND_REPORT, *args, env=cli_env(resources))
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ifaudit: error: "), stderr
    assert not (tmp_path / "r.jsonl").exists() and not (tmp_path / "h.json").exists()
    return lines[0], peak


def test_caps_an_eval_whose_member_inflates_to_1_gib_is_refused_in_one_line_in_bounded_memory(
    zip_bomb: Path, tmp_path: Path, resources: Path
) -> None:
    """inspect_log.Caps.member: the member declares 1 GiB, over the 64 MiB cap; refused unread."""
    line, peak = _import_in_a_fresh_process(zip_bomb, tmp_path, resources)
    assert line == (
        f"ifaudit: error: {zip_bomb}: member samples/1_epoch_1.json declares {GiB} bytes, over the cap of {64 * MiB} "
        "(hint: set IFAUDIT_MAX_MEMBER_BYTES or the import option max_member_bytes to a larger number of bytes "
        "to read it)"
    )
    assert peak < PEAK_LIMIT, f"peak {peak / MiB:.0f} MiB"


def test_caps_an_eval_member_that_understates_its_size_is_refused_in_bounded_memory(
    zip_bomb: Path, tmp_path: Path, resources: Path
) -> None:
    """inspect_log / archive.read_zip_member: the same 1 GiB member declaring 32 MiB passes the
    declared-size checks, is inflated no further than 32 MiB, and fails its checksum."""
    lying = _understate(zip_bomb, tmp_path / "lying.eval", "samples/1_epoch_1.json", 32 * MiB)
    with zipfile.ZipFile(lying) as archive:
        assert archive.getinfo("samples/1_epoch_1.json").file_size == 32 * MiB
    line, peak = _import_in_a_fresh_process(lying, tmp_path, resources)
    assert line == (
        f"ifaudit: error: {lying}: not a readable .eval archive (Bad CRC-32 for file 'samples/1_epoch_1.json'); "
        "the log may be truncated"
    )
    assert peak < PEAK_LIMIT, f"peak {peak / MiB:.0f} MiB"


def test_caps_the_member_cap_comes_from_the_option_then_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """inspect_log.caps: IFAUDIT_MAX_MEMBER_BYTES lowers the cap on the real zstd .eval (refused
    before decompressing, naming the member), the import option max_member_bytes overrides it."""
    read = [i for i in zipfile.ZipFile(INSPECT_EVAL).infolist() if i.filename.startswith(("header", "samples/"))]
    biggest = max(read, key=lambda info: info.file_size)  # of the members the importer reads
    monkeypatch.setenv("IFAUDIT_MAX_MEMBER_BYTES", str(biggest.file_size - 1))
    with pytest.raises(InputError) as raised:
        inspect_log.read(INSPECT_EVAL, {})
    assert f"member {biggest.filename} declares {biggest.file_size} bytes, over the cap of {biggest.file_size - 1}" in (
        str(raised.value)
    )
    log = inspect_log.read(INSPECT_EVAL, {"max_member_bytes": biggest.file_size})
    assert len(log.samples) == 541
    monkeypatch.setenv("IFAUDIT_MAX_MEMBER_BYTES", "lots")
    with pytest.raises(IfauditError, match="IFAUDIT_MAX_MEMBER_BYTES='lots': expected a positive number of bytes"):
        inspect_log.read(INSPECT_EVAL, {})
    with pytest.raises(InputError, match="field 'import.max_member_bytes': expected a positive number of bytes"):
        inspect_log.read(INSPECT_EVAL, {"max_member_bytes": 0})


def test_caps_a_log_whose_declared_total_is_over_the_log_cap_is_refused_before_reading(
    zip_bomb: Path, tmp_path: Path
) -> None:
    """inspect_log.Caps.log: the members' declared sizes are summed before any is inflated (the
    bomb's 1 GiB against a 1 MiB log cap with the member cap raised); a `.json` log's size too."""
    with pytest.raises(InputError) as raised:
        inspect_log.read(zip_bomb, {"max_member_bytes": 2 * GiB, "max_log_bytes": MiB})
    assert str(raised.value).startswith(
        f"{zip_bomb}: the log declares {GiB + len(BOMB_HEADER)} bytes in all, over the cap of {MiB}"
    )
    size = INSPECT_JSON.stat().st_size
    with pytest.raises(InputError, match=f"the log declares {size} bytes in all, over the cap of {size - 1}"):
        inspect_log.read(INSPECT_JSON, {"max_log_bytes": size - 1})
    assert len(inspect_log.read(INSPECT_JSON, {"max_log_bytes": size}).samples) == 25
