"""InFoBench's reference judge script is the oracle for ifaudit's `reference` protocol.

The pinned `evaluation.py` (materialized from the shared mirror by ifaudit's own pins code) is
loaded here, in the test only, with stub `openai`, `tiktoken` and `tqdm` modules, and run against a
scripted fake client. ifaudit's judge meets the same script through a real HTTP server on
127.0.0.1. Both must send the same message lists, byte for byte, and end with the same verdict
lists, early stops included. The product itself never executes the pinned file.
"""

from __future__ import annotations

import copy
import http.server
import importlib.util
import json
import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import DATA, REPO, UPSTREAM, read_jsonl, run_cli, write_jsonl
from ifaudit.io.variables import Variable

INFOBENCH = DATA / "infobench" / "InfoBench.json"
PIN = REPO / "vendor" / "infobench" / "pin.toml"
MIRROR = UPSTREAM / "infobench"
NO_SUCH_VARIABLE = Variable("IFAUDIT_TEST_NO_SUCH_VARIABLE", "never set: only the sources given are tried")

# Each response names its script; the judge's answer to question k of that response is script[k].
SCRIPTS = {
    "all-parsed": ["YES", "no", "Yes, it does.", "The answer is NO.", "NO", "Nope", "yesterday I said yes"],
    "stops-second": ["Yes", "It depends.", "YES", "NO"],
    "leading-space": [" Yes", "YES", "NO"],  # the reference does not strip: unparsable, stop at once
    "both-words": ["no", "YES", "YES and NO", "NO"],
    "lower-words": ["The text says yes", "NO"],  # neither a leading yes/no nor an upper-case word
}
# InFoBench items (by position): with an input and without, 1 to 6 questions.
ITEMS = {
    0: "all-parsed",
    1: "stops-second",
    3: "all-parsed",
    4: "leading-space",
    5: "both-words",
    7: "both-words",
    8: "lower-words",
    9: "stops-second",
}


def scripted_answer(messages: list[dict[str, str]]) -> str:
    first = messages[0]["content"]
    name = next(name for name in SCRIPTS if f"[script:{name}]" in first)
    return SCRIPTS[name][len(messages) // 2]


def the_case() -> tuple[list[dict], list[dict]]:
    """InFoBench items and one response per item naming its script."""
    everything = read_jsonl(INFOBENCH)
    items = [everything[index] for index in ITEMS]
    outputs = [
        {"id": item["id"], "output": f"[script:{ITEMS[index]}] A reply to: {item['instruction']}\nDone."}
        for index, item in zip(ITEMS, items)
    ]
    return items, outputs


def materialized_reference(version: str, tmp_path: Path) -> Path:
    """The pinned evaluation.py, materialized and verified by ifaudit's pins code from the mirror."""
    from ifaudit.io.remote.pins import default_sources, load_pin, materialize

    pin = load_pin(PIN, version)
    folder = materialize(
        pin,
        tmp_path / "vendor",
        default_sources(pin, [str(MIRROR / version)], offline=True, variable=NO_SUCH_VARIABLE),
    )
    return folder / "evaluation.py"


def load_reference_module(path: Path, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """The upstream script as a module, its third-party imports replaced by stubs."""
    openai = types.ModuleType("openai")
    openai.OpenAI = lambda **kwargs: None
    tiktoken = types.ModuleType("tiktoken")
    tiktoken.get_encoding = lambda name: object()
    tqdm = types.ModuleType("tqdm")
    tqdm.tqdm = lambda items, **kwargs: items
    fire = types.ModuleType("fire")  # imported by the first commit only
    fire.Fire = lambda *args, **kwargs: None
    for name, module in (("openai", openai), ("tiktoken", tiktoken), ("tqdm", tqdm), ("fire", fire)):
        monkeypatch.setitem(sys.modules, name, module)
    spec = importlib.util.spec_from_file_location(f"infobench_evaluation_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ScriptedClient:
    """Stands in for `openai.OpenAI()`: client.chat.completions.create(model, messages, temperature)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.chat = types.SimpleNamespace(completions=types.SimpleNamespace(create=self.create))

    def create(self, **kwargs: Any) -> Any:
        self.requests.append(copy.deepcopy(kwargs))  # the reference appends to its list after the call
        content = scripted_answer(kwargs["messages"])
        return types.SimpleNamespace(choices=[types.SimpleNamespace(message=types.SimpleNamespace(content=content))])


class ScriptedServer(http.server.BaseHTTPRequestHandler):
    """The same script behind an OpenAI-compatible endpoint."""

    log: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        ScriptedServer.log.append(body)
        payload = json.dumps(
            {"choices": [{"message": {"role": "assistant", "content": scripted_answer(body["messages"])}}]}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def scripted_server() -> Iterator[str]:
    ScriptedServer.log = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ScriptedServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def run_reference(
    module: types.ModuleType, items: list[dict], outputs: list[dict], tmp_path: Path, *, takes_client: bool
) -> tuple[list[dict], dict[str, list]]:
    """The reference's run_evaluation over the case; its requests and its verdict list per id."""
    folder = tmp_path / "reference"
    (folder / "outputs").mkdir(parents=True)
    in_path = write_jsonl(
        folder / "outputs" / "model_output.jsonl",
        [{**item, "output": out["output"]} for item, out in zip(items, outputs)],
    )
    client = ScriptedClient()
    if takes_client:
        written = module.run_evaluation(client, str(in_path), str(folder), eval_model="scripted-judge", temperature=0)
    else:  # the first commit reads a module-level client
        module.client = client
        written = module.run_evaluation(str(in_path), str(folder), eval_model="scripted-judge", temperature=0)
    return client.requests, {entry["id"]: entry["eval"] for entry in read_jsonl(Path(written))}


def run_ifaudit(
    base_url: str, items: list[dict], outputs: list[dict], resources: Path, tmp_path: Path, version: str
) -> tuple[list[dict], dict[str, list], list[dict]]:
    """ifaudit's judge (live, over loopback HTTP), then a replay grading; the requests the server
    saw, the verdict list per id, and the grade records."""
    folder = tmp_path / "ifaudit"
    folder.mkdir()
    prompts = write_jsonl(folder / "prompts.jsonl", items)
    responses = write_jsonl(folder / "responses.jsonl", [{"id": o["id"], "response": o["output"]} for o in outputs])
    judge = [
        "--store",
        str(folder / "store"),
        "--judge-model",
        "scripted-judge",
        "--judge-base-url",
        base_url,
        "--infobench-version",
        version,
        "--infobench-from",
        str(MIRROR / version),
    ]
    run_cli(
        [
            "judge",
            "--offline",
            "--prompts",
            str(prompts),
            "--responses",
            str(responses),
            *judge,
            "--record",
            str(folder / "judge.json"),
        ],
        resources,
    )
    seen = list(ScriptedServer.log)
    run_cli(
        [
            "grade",
            "--offline",
            "--task",
            "infobench",
            "--prompts",
            str(prompts),
            "--responses",
            str(responses),
            *judge,
            "--out",
            str(folder / "grades.jsonl"),
        ],
        resources,
    )
    grades = read_jsonl(folder / "grades.jsonl")
    return seen, {record["key"]: record["verdicts"] for record in grades}, grades


def by_conversation(requests: list[dict]) -> list[str]:
    """Requests in a fixed order (ifaudit asks conversations in parallel): canonical JSON of each
    message list, sorted."""
    return sorted(json.dumps(request["messages"], ensure_ascii=False) for request in requests)


@pytest.mark.parametrize("version, takes_client", [("d47415e", True), ("497b42a", False)])
def test_ifaudit_judges_as_the_pinned_reference_does(
    version: str,
    takes_client: bool,
    scripted_server: str,
    resources: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    items, outputs = the_case()
    module = load_reference_module(materialized_reference(version, tmp_path), monkeypatch)
    reference_requests, reference_verdicts = run_reference(module, items, outputs, tmp_path, takes_client=takes_client)
    ifaudit_requests, ifaudit_verdicts, grades = run_ifaudit(
        scripted_server, items, outputs, resources, tmp_path, version
    )

    # The same message lists, byte for byte, and nothing else sent but the model and temperature 0.
    assert len(ifaudit_requests) == len(reference_requests)
    assert by_conversation(ifaudit_requests) == by_conversation(reference_requests)
    assert all(set(request) == {"model", "messages", "temperature"} for request in reference_requests)
    assert all(set(request) == {"model", "messages", "temperature"} for request in ifaudit_requests)
    assert (
        {json.dumps([r["model"], r["temperature"]]) for r in ifaudit_requests}
        == {json.dumps([r["model"], r["temperature"]]) for r in reference_requests}
        == {'["scripted-judge", 0]'}
    )
    assert all(r["messages"][0]["content"].startswith(module.SYS_MSG) for r in ifaudit_requests)

    # The same verdict lists, early stops included; the script makes them of every kind.
    assert ifaudit_verdicts == reference_verdicts
    short = {
        key: verdicts
        for key, verdicts in reference_verdicts.items()
        if len(verdicts) < len(next(i for i in items if i["id"] == key)["decomposed_questions"])
    }
    assert short and all(verdicts[-1] is None for verdicts in short.values())
    assert any(v is False for vs in reference_verdicts.values() for v in vs)

    # Every grade says which protocol and which pinned commit; unasked questions count as not satisfied.
    for record in grades:
        questions = len(record["instruction_id_list"])
        assert record["verdicts_written"] == len(record["verdicts"]) <= questions
        assert record["strict"]["follow_instruction_list"] == [v is True for v in record["verdicts"]] + [False] * (
            questions - record["verdicts_written"]
        )
        reference = record["grader"]["protocol"]["reference"]
        assert record["grader"]["protocol"]["name"] == "reference"
        assert reference["version"] == version and reference["commit"].startswith(version)
    judged = json.loads((tmp_path / "ifaudit" / "judge.json").read_text())
    assert (
        judged["unasked"]
        == sum(len(record["instruction_id_list"]) - record["verdicts_written"] for record in grades)
        > 0
    )


def test_sys_msg_is_read_by_parsing_and_equals_the_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ifaudit.judging.judge_protocol import read_sys_msg

    for version in ("d47415e", "497b42a"):
        path = materialized_reference(version, tmp_path / version)
        assert read_sys_msg(path) == load_reference_module(path, monkeypatch).SYS_MSG
    first = read_sys_msg(materialized_reference("497b42a", tmp_path / "497b42a"))
    latest = read_sys_msg(materialized_reference("d47415e", tmp_path / "d47415e"))
    assert "ensuing Ouestions" in first and "NOchoice" in first and "Howevernote" in first
    assert "ensuing Questions with either a YES or NO choice" in latest


def test_sys_msg_is_never_executed(tmp_path: Path) -> None:
    from ifaudit.core.errors import InputError
    from ifaudit.judging.judge_protocol import read_sys_msg

    marker = tmp_path / "ran"
    script = tmp_path / "evaluation.py"
    script.write_text(
        f'import pathlib\npathlib.Path({str(marker)!r}).touch()\nSYS_MSG = "judge this"\nraise SystemExit(3)\n'
    )
    assert read_sys_msg(script) == "judge this"
    assert not marker.exists()
    script.write_text('SYS_MSG = "a" + "b"\n')
    with pytest.raises(InputError, match="SYS_MSG is not a string literal"):
        read_sys_msg(script)
    script.write_text("x = 1\n")
    with pytest.raises(InputError, match="expected one top-level SYS_MSG assignment, found 0"):
        read_sys_msg(script)


def test_the_pin_offers_both_commits_latest_by_default(tmp_path: Path) -> None:
    from ifaudit.core.errors import InputError
    from ifaudit.io.remote.pins import load_pin

    latest = load_pin(PIN)
    assert (latest.version, latest.commit) == ("d47415e", "d47415ef7c8f9454be072e33cc8e6d1697ed7a88")
    assert load_pin(PIN, "497b42a").commit == "497b42a90a7cc1ca55c3f10774d47efd6a261072"
    assert (
        latest.url_template.format(commit=latest.commit, path="evaluation.py")
        == "https://raw.githubusercontent.com/qinyiwei/InfoBench/d47415ef7c8f9454be072e33cc8e6d1697ed7a88/evaluation.py"
    )
    assert latest.mirrors == (str((REPO.parent / "shared/upstream/infobench/d47415e").resolve()),)
    with pytest.raises(InputError, match="no version 'abc1234'"):
        load_pin(PIN, "abc1234")


def test_a_tampered_reference_is_refused(scripted_server: str, resources: Path, tmp_path: Path) -> None:
    """A copy of evaluation.py with other bytes is never used, and nothing is judged."""
    tampered = tmp_path / "tampered"
    tampered.mkdir()
    original = (MIRROR / "d47415e" / "evaluation.py").read_text()
    (tampered / "evaluation.py").write_text(original.replace("NO choice", "NO answer"))
    items, outputs = the_case()
    prompts = write_jsonl(tmp_path / "prompts.jsonl", items[:1])
    responses = write_jsonl(tmp_path / "responses.jsonl", [{"id": outputs[0]["id"], "response": outputs[0]["output"]}])
    done = run_cli(
        [
            "judge",
            "--offline",
            "--prompts",
            str(prompts),
            "--responses",
            str(responses),
            "--store",
            str(tmp_path / "store"),
            "--judge-model",
            "m",
            "--judge-base-url",
            scripted_server,
            "--infobench-pin",
            str(write_pin_without_mirrors(tmp_path)),
            "--infobench-from",
            str(tampered),
            "--record",
            str(tmp_path / "judge.json"),
        ],
        tmp_path / "fresh-resources",
        check=False,
    )
    assert done.returncode == 3, done.stderr
    assert "evaluation.py: no source has the pinned bytes" in done.stderr and "sha256 mismatch" in done.stderr
    assert ScriptedServer.log == [] and not (tmp_path / "judge.json").exists()


def write_pin_without_mirrors(tmp_path: Path) -> Path:
    """The project's pin, its mirror list emptied (so only the tampered copy is offered)."""
    text = PIN.read_text().replace('mirrors = ["../../../shared/upstream/infobench/{version}"]', "mirrors = []")
    path = tmp_path / "pin.toml"
    path.write_text(text)
    return path


def test_imported_short_verdict_lists_are_accepted_and_disclosed() -> None:
    """A reference-style judgement file whose lists stop early: the verdicts written are kept, DRFR
    is given both ways, and a list longer than the questions is still refused."""
    from ifaudit.core.errors import InputError
    from ifaudit.core.identity import GraderIdentity, GraderKind
    from ifaudit.judging.infobench import grade_infobench, read_infobench, verdict_counts
    from ifaudit.core.metrics import accuracies, score_tables
    from ifaudit.core.records import Response
    from ifaudit.tasks.registry import get_task

    prompts = read_infobench(INFOBENCH)[:2]  # 3 and 4 questions
    responses = [Response(key=p.key, sample=0, text=f"answer {i}", line=i + 1) for i, p in enumerate(prompts)]
    from ifaudit.io.canonical import sha256_bytes

    verdicts = {
        (r.key, 0): {"answers": None, "response_sha256": sha256_bytes(r.text.encode()), "verdicts": v}
        for r, v in zip(responses, [[True, True, False], [True, None]])
    }
    identity = GraderIdentity(GraderKind.IMPORTED, "x.jsonl", "0")
    grades = grade_infobench("infobench", identity, prompts, responses, verdicts)
    assert [g["verdicts_written"] for g in grades] == [3, 2]
    assert grades[1]["strict"]["follow_instruction_list"] == [True, False, False, False]
    metrics = accuracies(score_tables(prompts, grades, get_task("infobench").metrics))
    assert (metrics["drfr"]["correct"], metrics["drfr"]["total"]) == (3, 7)
    assert (metrics["drfr_reference"]["correct"], metrics["drfr_reference"]["total"]) == (3, 5)
    assert verdict_counts(grades) == {
        "questions": 7,
        "verdicts_written": 5,
        "unparsed": 1,
        "unasked": 2,
        "short_lists": 1,
    }
    verdicts[responses[0].key, 0]["verdicts"] = [True] * 4
    with pytest.raises(InputError, match="4 verdicts for 3 questions"):
        grade_infobench("infobench", identity, prompts, responses, verdicts)
