"""Concurrent writers (issue "Trust nothing"): two processes writing one file or one store both
succeed. Real processes throughout: eight writers racing on one target with atomic_write_bytes;
a SIGKILLed writer's temporary, kept while it lives and removed by the next write after it dies;
two `ifaudit generate` and two `ifaudit judge` processes sharing one store against loopback
servers, released at the same instant onto the same requests, each request asked once."""

from __future__ import annotations

import http.server
import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from conftest import GPT4_RESPONSES, IFAUDIT, IFEVAL_PROMPTS, cli_env, read_jsonl, write_jsonl
from test_generation import SECRET, model_settings
from test_infobench import INFOBENCH, JudgeServer
from vllm_like import VllmLikeServer

from ifaudit.inputs.generation import ModelSettings
from ifaudit.io.canonical import atomic_write_bytes
from ifaudit.io.remote.store import RequestStore, entry_lock, request_key

WRITERS = 8
ROUNDS = 300
ENTRY = re.compile(r"[0-9a-f]{2}/[0-9a-f]{64}\.json")

# One writer: waits for the go file (so all eight start together), then writes its own content
# ROUNDS times; any failure is a non-zero exit with the error on stderr.
WRITER = """
import sys, time
from pathlib import Path
from ifaudit.io.canonical import atomic_write_bytes
target, index, rounds, folder = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
data = bytes([65 + index]) * 65536 + b"\\n"
(folder / f"ready-{index}").touch()
while not (folder / "go").exists():
    time.sleep(0.001)
for _ in range(rounds):
    atomic_write_bytes(target, data, durable=False)
"""

# A writer stopped for good just before its rename: its temporary is whole and flock'd.
STOPPED_WRITER = """
import os, signal, sys
from ifaudit.io.canonical import atomic_write_bytes
def stop(*args):
    print("ready", flush=True)
    signal.pause()
os.replace = stop
atomic_write_bytes(sys.argv[1], b"killed writer\\n")
"""


def content(index: int) -> bytes:
    return bytes([65 + index]) * 65536 + b"\n"


def temporaries(folder: Path) -> list[Path]:
    return sorted(folder.glob(".*.tmp"))


def test_atomic_write_bytes_eight_processes_racing_on_one_target_all_succeed_with_whole_contents(
    tmp_path: Path,
) -> None:
    target = tmp_path / "out" / "shared.json"
    script = [sys.executable, "-c", WRITER]
    writers = [
        subprocess.Popen([*script, str(target), str(i), str(ROUNDS), str(tmp_path)], stderr=subprocess.PIPE, text=True)
        for i in range(WRITERS)
    ]
    while len(list(tmp_path.glob("ready-*"))) < WRITERS:
        assert all(w.poll() is None for w in writers), [w.stderr.read() for w in writers if w.stderr]
        time.sleep(0.01)
    (tmp_path / "go").touch()
    seen: set[bytes] = set()
    while any(w.poll() is None for w in writers):  # a reader meanwhile sees only whole contents
        if target.exists():
            seen.add(target.read_bytes())
        time.sleep(0.002)
    failures = [(w.returncode, w.stderr.read()) for w in writers if w.returncode != 0]
    assert failures == []
    everyone = {content(i) for i in range(WRITERS)}
    assert seen and seen <= everyone
    assert target.read_bytes() in everyone
    assert temporaries(target.parent) == [] and [p.name for p in target.parent.iterdir()] == ["shared.json"]


def test_atomic_write_bytes_keeps_a_live_writers_temporary_and_removes_a_sigkilled_ones(tmp_path: Path) -> None:
    target = tmp_path / "summary.json"
    atomic_write_bytes(target, b"first\n")
    writer = subprocess.Popen([sys.executable, "-c", STOPPED_WRITER, str(target)], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        [live] = temporaries(tmp_path)
        assert live.read_bytes() == b"killed writer\n"
        atomic_write_bytes(target, b"second\n")  # the writer is alive: its temporary is not stale
        assert temporaries(tmp_path) == [live] and target.read_bytes() == b"second\n"
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    assert writer.returncode == -signal.SIGKILL and temporaries(tmp_path) == [live]
    atomic_write_bytes(target, b"third\n")  # the kernel released the dead writer's lock
    assert temporaries(tmp_path) == [] and target.read_bytes() == b"third\n"


def test_entry_lock_left_by_a_killed_process_neither_blocks_nor_stays(tmp_path: Path) -> None:
    entry = tmp_path / "ab" / f"ab{'0' * 62}.json"
    entry.parent.mkdir()
    left = entry.parent / f".{entry.name}.lock"
    left.touch()  # no process holds it, as after a SIGKILL
    with entry_lock(entry):
        assert left.exists()
    assert list(entry.parent.iterdir()) == []


# --- two CLI processes sharing one store -------------------------------------------------------


def waiting_on_a_lock(pid: int) -> bool:
    """Whether process `pid` is blocked waiting for an flock (a `->` line of /proc/locks)."""
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if len(fields) > 5 and fields[1:3] == ["->", "FLOCK"] and fields[5] == str(pid):
            return True
    return False


def race_on_held_entries(commands: list[list[str]], store: Path, keys: list[str], env: dict[str, str]) -> list[str]:
    """Run `commands` (ifaudit argument lists) while this process holds the entry locks of `keys`
    in `store`; once every one of them is blocked on those locks, release them all at once, so
    the processes meet on the same requests at the same moment. Returns their stderr."""
    processes: list[subprocess.Popen[str]] = []
    try:
        with ExitStack() as held:
            for key in keys:
                held.enter_context(entry_lock(RequestStore(store).path(key)))
            for args in commands:
                processes.append(
                    subprocess.Popen(
                        [str(IFAUDIT), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
                    )
                )
            deadline = time.monotonic() + 120
            while not all(waiting_on_a_lock(p.pid) for p in processes):
                exited = [p.communicate()[1] for p in processes if p.poll() is not None]
                assert not exited and time.monotonic() < deadline, f"a process never waited on a lock: {exited}"
                time.sleep(0.02)
        finished = [p.communicate(timeout=300) for p in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert [p.returncode for p in processes] == [0] * len(processes), [err for _, err in finished]
    return [err for _, err in finished]


def store_files(store: Path) -> list[str]:
    """Every file under the store (dot files too: a lock or temporary left behind would show)."""
    return sorted(p.relative_to(store).as_posix() for p in store.rglob("*") if p.is_file())


@pytest.fixture
def vllm_server() -> Iterator[VllmLikeServer]:
    served = VllmLikeServer(GPT4_RESPONSES).start()  # n capped at 2, no faults: 2 requests a prompt
    yield served
    served.stop()


def test_recorded_two_generate_processes_on_one_store_ask_each_request_once(
    vllm_server: VllmLikeServer, resources: Path, tmp_path: Path
) -> None:
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(IFEVAL_PROMPTS.read_text(encoding="utf-8").splitlines(keepends=True)[:20]))
    spec = model_settings(vllm_server)  # 3 samples, concurrency 8
    store = tmp_path / "store"

    def generate(name: str) -> list[str]:
        return [
            "generate",
            "--prompts",
            str(prompts),
            "--model-json",
            json.dumps(spec),
            "--store",
            str(store),
            "--out",
            str(tmp_path / f"{name}.jsonl"),
            "--record",
            str(tmp_path / f"{name}.json"),
            "--quiet",
        ]

    settings = ModelSettings.from_dict(spec)
    first_requests = [request_key(settings.request(p["prompt"], 3, 0, 0)) for p in read_jsonl(prompts)]
    env = cli_env(resources, LOOPBACK_KEY=SECRET)
    race_on_held_entries([generate("a"), generate("b")], store, first_requests, env)

    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert len(read_jsonl(tmp_path / "a.jsonl")) == 60
    # 20 prompts x (a request for 3 samples, answered with 2, and one for the third): 40 bodies,
    # each answered once, none asked by both processes.
    assert vllm_server.requests == 40 and len(vllm_server.answered) == 40
    assert set(vllm_server.answered.values()) == {1}
    live = [json.loads((tmp_path / f"{name}.json").read_text())["live_requests"] for name in "ab"]
    assert sum(live) == 40
    files = store_files(store)
    assert len(files) == 40 and all(ENTRY.fullmatch(name) for name in files)


@pytest.fixture
def judge_server() -> Iterator[tuple[str, http.server.ThreadingHTTPServer]]:
    """test_infobench's rule judge (its first request refused once with a 429)."""
    JudgeServer.log, JudgeServer.refused_once = [], False
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), JudgeServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", server
    server.shutdown()
    server.server_close()


def test_recorded_judge_two_judge_processes_on_one_store_ask_each_question_once(
    judge_server, resources: Path, tmp_path: Path
) -> None:
    base_url, _ = judge_server
    items = read_jsonl(INFOBENCH)[:4]
    prompts = write_jsonl(tmp_path / "prompts.jsonl", items)
    responses = write_jsonl(
        tmp_path / "responses.jsonl",
        [{"id": item["id"], "response": f"An answer to: {item['instruction']}"} for item in items],
    )

    def judge(store: Path, name: str) -> list[str]:
        options = {"--prompts": prompts, "--responses": responses, "--store": store, "--record": tmp_path / name}
        judge_options = {
            "--judge-model": "rule-judge",
            "--judge-base-url": base_url,
            "--judge-api-key-env": "TEST_JUDGE_KEY",
            "--judge-concurrency": "2",
            "--judge-protocol": "ifaudit",
        }
        return ["judge", *(str(part) for pair in {**options, **judge_options}.items() for part in pair)]

    env = cli_env(resources, TEST_JUDGE_KEY="sk-concurrent-writers-test")
    # A first run into a scratch store names every request (a question's request holds the
    # earlier answers, so they are learnt, not built); its 429 is spent there.
    scratch = tmp_path / "scratch"
    done = subprocess.run([str(IFAUDIT), *judge(scratch, "scratch.json")], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    keys = [Path(name).stem for name in store_files(scratch)]
    questions = sum(len(item["decomposed_questions"]) for item in items)
    assert len(keys) == questions
    JudgeServer.log = []

    store = tmp_path / "store"
    race_on_held_entries([judge(store, "a.json"), judge(store, "b.json")], store, keys, env)

    bodies = [json.dumps(entry["body"], sort_keys=True) for entry in JudgeServer.log]
    assert len(bodies) == questions and len(set(bodies)) == questions  # each question asked once, by one
    live = [json.loads((tmp_path / name).read_text())["live_requests"] for name in ("a.json", "b.json")]
    assert sum(live) == questions
    assert store_files(store) == store_files(scratch)
    for name in store_files(store):  # the same entries as the scratch run's, byte for byte
        assert (store / name).read_bytes() == (scratch / name).read_bytes(), name


@pytest.mark.e2e
def test_reliability_two_judged_runs_sharing_a_judgement_store_in_one_dag_finish_identically(
    judge_server, default_run_copy: Path
) -> None:
    """Two judged runs with the same judge block, side by side in one DAG (two cores): both judge
    steps share the judgement store, each distinct question is asked once, and the two runs'
    grades are the same bytes."""
    from test_workflow import snakemake, write_config

    workdir = default_run_copy  # the default run finished: only the two judged runs are graded
    base_url, _ = judge_server
    items = read_jsonl(INFOBENCH)[4:7]
    prompts = write_jsonl(workdir / "infobench_subset.jsonl", items)
    responses = write_jsonl(
        workdir / "answers.jsonl", [{"id": i["id"], "response": f"Answer: {i['instruction']}"} for i in items]
    )
    judge = {"model": "rule-judge", "base_url": base_url, "api_key_env": "TEST_JUDGE_KEY"}
    run = {"task": "infobench", "prompts": "infobench_subset", "responses": "answers", "judge": judge}
    write_config(
        workdir,
        {
            "judgement_store": str(workdir / "store"),
            "datasets": {"infobench_subset": {"path": str(prompts)}, "answers": {"path": str(responses)}},
            "runs": {"judged_one": run, "judged_two": run},
        },
    )
    snakemake(workdir)
    records = [
        json.loads((workdir / f"results/{name}/judge.json").read_text()) for name in ("judged_one", "judged_two")
    ]
    answered = [json.dumps(entry["body"], sort_keys=True) for entry in JudgeServer.log[1:]]  # the first: a 429
    assert len(answered) == len(set(answered))  # no question answered twice
    assert sum(record["live_requests"] for record in records) == len(answered) > 0
    grades = [(workdir / f"results/{name}/grades.jsonl").read_bytes() for name in ("judged_one", "judged_two")]
    assert grades[0] == grades[1] and grades[0]
    assert not [path for path in (workdir / "store").rglob("*") if path.name.startswith(".")]
