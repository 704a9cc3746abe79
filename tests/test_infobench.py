"""InFoBench: DRFR from imported GPT-4 judgements in the DAG, and a live judge over real HTTP
on loopback, recorded and then replayed with the server stopped."""

from __future__ import annotations

import hashlib
import http.server
import json
import re
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from conftest import DATA, REPO, UPSTREAM, read_jsonl, run_cli, write_jsonl
from test_workflow import snakemake, summary, write_config

INFOBENCH = DATA / "infobench" / "InfoBench.json"
GPT4_JUDGED = DATA / "infobench" / "gpt4_output_gpt4judge_DecomposeEval.jsonl"
# Made at run time, so the key is in no file unless the code under test writes it (a bundle
# carries this test file too).
SECRET = "sk-test-do-not-leak-" + secrets.token_hex(12)
MIRROR = UPSTREAM / "infobench"


@pytest.mark.e2e
def test_imported_gpt4_judgements_give_the_published_drfr(scenario_run) -> None:
    """The digest check's `infobench` scenario (its one session run): GPT-4's InFoBench answers
    with the GPT-4 judge's verdicts imported from the mirror."""
    workdir = scenario_run("infobench").workdir
    assert yaml.safe_load((workdir / "test.yaml").read_text())["runs"]["gpt4_infobench"] == {
        "task": "infobench",
        "prompts": "infobench",
        "responses": "infobench_gpt4_judged",
        "judgements": "infobench_gpt4_judged",
        "label": "GPT-4 on InFoBench, GPT-4 judge (imported)",
    }
    assert json.loads((workdir / "results/canary/infobench.json").read_text())["passed"]
    result = summary(workdir, "gpt4_infobench")
    assert result["counted"]
    metrics = result["metrics"]
    assert (metrics["drfr"]["correct"], metrics["drfr"]["total"]) == (1971, 2250)
    assert round(metrics["drfr"]["value"], 4) == 0.8760
    assert round(metrics["drfr_easy"]["value"], 4) == 0.8841
    assert round(metrics["drfr_hard"]["value"], 4) == 0.8724
    assert metrics["drfr_reference"] == metrics["drfr"]  # complete lists: the reference's ratio is the same
    assert result["verdict_lists"] == {
        "questions": 2250,
        "verdicts_written": 2250,
        "unparsed": 0,
        "unasked": 0,
        "short_lists": 0,
    }
    stats = json.loads((workdir / "results/gpt4_infobench/stats.json").read_text())
    for name, estimate in stats["estimates"].items():
        assert estimate["ci_low"] < estimate["value"] < estimate["ci_high"], name
        assert estimate["bootstrap_se"] == pytest.approx(estimate["clustered_se"], rel=0.1), name
    report = (workdir / "results/report.md").read_text()
    assert "DRFR, Easy set" in report and "imported from `infobench_gpt4_judged.jsonl`" in report


class JudgeServer(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint answering by a rule: a question whose sha256 starts with an
    even hex digit gets "YES", an odd one "No, it does not."; a question mentioning "appealing"
    gets "It depends." (unparsed). The first request is refused once with 429."""

    log: list[dict] = []
    refused_once = False

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        JudgeServer.log.append({"path": self.path, "authorization": self.headers.get("Authorization"), "body": body})
        if not JudgeServer.refused_once:
            JudgeServer.refused_once = True
            self.send_response(429)
            self.send_header("Retry-After", "0")
            self.end_headers()
            return
        question = body["messages"][-1]["content"].rsplit("Question:\n", 1)[-1].strip()
        if "appealing" in question:
            answer = "It depends."
        else:
            answer = "YES" if int(hashlib.sha256(question.encode()).hexdigest()[0], 16) % 2 == 0 else "No, it does not."
        payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": answer}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def judge_server() -> Iterator[tuple[str, http.server.ThreadingHTTPServer]]:
    JudgeServer.log, JudgeServer.refused_once = [], False
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), JudgeServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", server
    server.shutdown()
    server.server_close()


def test_live_judge_then_replay_without_the_server(judge_server, resources: Path, tmp_path: Path) -> None:
    """ifaudit's own protocol, chosen by name: its instruction text, max_tokens, every question asked."""
    base_url, server = judge_server
    items = read_jsonl(INFOBENCH)[:4]  # user_oriented_task_167's second question mentions "appealing"
    prompts = write_jsonl(tmp_path / "prompts.jsonl", items)
    responses = write_jsonl(
        tmp_path / "responses.jsonl",
        [{"id": item["id"], "response": f"<think>draft</think>An answer to: {item['instruction']}"} for item in items],
    )
    store = tmp_path / "store"
    judge = [
        "--store",
        str(store),
        "--judge-model",
        "rule-judge",
        "--judge-base-url",
        base_url,
        "--judge-api-key-env",
        "TEST_JUDGE_KEY",
        "--judge-concurrency",
        "2",
        "--judge-protocol",
        "ifaudit",
    ]

    done = run_cli(
        [
            "judge",
            "--prompts",
            str(prompts),
            "--responses",
            str(responses),
            *judge,
            "--record",
            str(tmp_path / "judge.json"),
        ],
        resources,
        TEST_JUDGE_KEY=SECRET,
    )
    questions = sum(len(item["decomposed_questions"]) for item in items)
    record = json.loads((tmp_path / "judge.json").read_text())
    assert record["live_requests"] == questions and record["questions"] == questions
    assert len(JudgeServer.log) == questions + 1  # one refused with 429, then retried
    assert all(entry["authorization"] == f"Bearer {SECRET}" for entry in JudgeServer.log)
    assert all(entry["path"] == "/v1/chat/completions" for entry in JudgeServer.log)

    # The multi-turn protocol: question k carries the k-1 earlier questions and the answers given.
    answered = [entry["body"] for entry in JudgeServer.log[1:]]
    for item in items:
        mine = sorted(
            (body for body in answered if f"An answer to: {item['instruction']}" in body["messages"][0]["content"]),
            key=lambda body: len(body["messages"]),
        )
        assert [len(body["messages"]) for body in mine] == [2 * k + 1 for k in range(len(item["decomposed_questions"]))]
        last = mine[-1]["messages"]
        assert [m["role"] for m in last] == ["user", "assistant"] * (len(mine) - 1) + ["user"]
        assert "<think>" not in last[0]["content"]  # the judge sees the answer, not the thinking
        assert item["decomposed_questions"][0] in last[0]["content"]
        assert [m["content"].strip() for m in last[2::2]] == item["decomposed_questions"][1:]
        for earlier, later in zip(mine, mine[1:]):
            assert later["messages"][: len(earlier["messages"])] == earlier["messages"]
        assert all((b["model"], b["temperature"], b["max_tokens"]) == ("rule-judge", 0.0, 64) for b in mine)

    # The key is used, never written.
    for path in [*store.rglob("*.json"), tmp_path / "judge.json"]:
        assert SECRET not in path.read_text()
    assert SECRET not in done.stderr

    # Grade by replay, stop the server, replay again and re-run the judge: same bytes, no requests.
    grade = ["grade", "--task", "infobench", "--prompts", str(prompts), "--responses", str(responses), *judge]
    run_cli([*grade, "--out", str(tmp_path / "first.jsonl")], resources)
    server.shutdown()
    server.server_close()
    calls_before = len(JudgeServer.log)
    run_cli([*grade, "--out", str(tmp_path / "second.jsonl")], resources)
    run_cli(
        [
            "judge",
            "--prompts",
            str(prompts),
            "--responses",
            str(responses),
            *judge,
            "--record",
            str(tmp_path / "again.json"),
        ],
        resources,
    )
    assert json.loads((tmp_path / "again.json").read_text())["live_requests"] == 0
    assert len(JudgeServer.log) == calls_before
    first = (tmp_path / "first.jsonl").read_bytes()
    assert first == (tmp_path / "second.jsonl").read_bytes()

    graded = read_jsonl(tmp_path / "first.jsonl")
    for record, item in zip(graded, items):
        for question, answer, verdict in zip(item["decomposed_questions"], record["answers"], record["verdicts"]):
            expected = (
                None
                if "appealing" in question
                else (int(hashlib.sha256(question.encode()).hexdigest()[0], 16) % 2 == 0)
            )
            assert verdict is expected, (question, answer)
        assert record["strict"]["follow_instruction_list"] == [v is True for v in record["verdicts"]]
        assert record["grader"] == {
            "kind": "judge",
            "name": "rule-judge",
            "upstream": False,
            "version": "protocol=ifaudit,temperature=0.0,max_tokens=64",
            "protocol": {"name": "ifaudit"},
        }
        assert record["verdicts_written"] == len(item["decomposed_questions"])  # no early stop
    assert any(v is None for record in graded for v in record["verdicts"])  # the unparsed answer is kept as such
    assert all(json.loads(path.read_text())["protocol"] == {"name": "ifaudit"} for path in store.rglob("*.json"))


def test_replay_without_a_recorded_answer_is_an_error(resources: Path, tmp_path: Path) -> None:
    items = read_jsonl(INFOBENCH)[:1]
    prompts = write_jsonl(tmp_path / "prompts.jsonl", items)
    responses = write_jsonl(tmp_path / "responses.jsonl", [{"id": items[0]["id"], "response": "x"}])
    done = run_cli(
        [
            "grade",
            "--task",
            "infobench",
            "--prompts",
            str(prompts),
            "--responses",
            str(responses),
            "--store",
            str(tmp_path / "empty"),
            "--judge-model",
            "m",
            "--out",
            str(tmp_path / "g.jsonl"),
        ],
        resources,
        check=False,
    )
    assert done.returncode == 2 and "is not in the judgement store" in done.stderr
    assert not (tmp_path / "g.jsonl").exists()


def test_agreement_command(resources: Path, tmp_path: Path) -> None:
    annotations = write_jsonl(
        tmp_path / "pairs.jsonl",
        [
            {"id": "a", "labels": [1, 1, 1], "gold": 1},
            {"id": "b", "labels": [1, 1, 0], "gold": 0},
            {"id": "c", "labels": [0, 0, -1], "gold": -1},
            {"id": "d", "labels": [-1, 0, 1]},
        ],
    )
    run_cli(["agreement", "--annotations", str(annotations), "--out", str(tmp_path / "agreement.json")], resources)
    result = json.loads((tmp_path / "agreement.json").read_text())
    assert result["fleiss_kappa"] == 1 / 22  # hand-computed in tests/test_agreement.py
    assert result["items"] == 4 and result["annotators"] == 3
    # Gold on a, b, c = [1, 0, -1]. Annotator 1 says [1, 1, 0]: distances 0, 1, 1 -> 2/3.
    # Annotator 3 says [1, 0, -1]: 0, 0, 0 -> 0. Majority [1, 1, 0] -> 2/3.
    assert result["wpld"] == pytest.approx(
        {"annotator_1": 2 / 3, "annotator_2": 2 / 3, "annotator_3": 0.0, "majority": 2 / 3}
    )


@pytest.mark.e2e
def test_live_judge_in_the_dag(judge_server, default_run_copy: Path) -> None:
    workdir = default_run_copy  # the default run finished: only the judged run is graded
    base_url, server = judge_server
    items = read_jsonl(INFOBENCH)[4:7]
    prompts = write_jsonl(workdir / "infobench_subset.jsonl", items)
    responses = write_jsonl(
        workdir / "answers.jsonl", [{"id": i["id"], "response": f"Answer: {i['instruction']}"} for i in items]
    )
    write_config(
        workdir,
        {
            "judgement_store": str(workdir / "store"),
            "datasets": {"infobench_subset": {"path": str(prompts)}, "answers": {"path": str(responses)}},
            "runs": {
                "judged": {
                    "task": "infobench",
                    "prompts": "infobench_subset",
                    "responses": "answers",
                    "judge": {"model": "rule-judge", "base_url": base_url, "api_key_env": "TEST_JUDGE_KEY"},
                }
            },
        },
    )
    snakemake(workdir)
    record = json.loads((workdir / "results/judged/judge.json").read_text())
    assert record["live_requests"] == record["asked"] == record["questions"] - record["unasked"]
    # The default protocol is the reference's, from the latest pinned evaluation.py; every output says so.
    latest = {
        "name": "reference",
        "reference": {
            "repository": "https://github.com/qinyiwei/InfoBench",
            "version": "d47415e",
            "commit": "d47415ef7c8f9454be072e33cc8e6d1697ed7a88",
            "path": "evaluation.py",
            "sha256": "e18f50e526da70a45ca7cf5d8681f0ccc975db694a7cb2afbde5007abed25475",
        },
    }
    assert record["judge"]["protocol"] == latest
    assert all(g["grader"]["protocol"] == latest for g in read_jsonl(workdir / "results/judged/grades.jsonl"))
    assert summary(workdir, "judged")["grader"]["protocol"] == latest
    manifest = json.loads((workdir / "results/judged/MANIFEST.json").read_text())
    assert manifest["config"]["judge_protocol"] == {
        "protocol": "reference",
        "infobench_version": "d47415e",
        "infobench_commit": latest["reference"]["commit"],
    }
    assert "asked by InFoBench's reference protocol" in (workdir / "results/report.md").read_text()
    grades = (workdir / "results/judged/grades.jsonl").read_bytes()
    server.shutdown()
    server.server_close()
    snakemake(workdir, "--forcerun", "judge", "grade_shard")  # judge and regrade, server gone: replay
    assert json.loads((workdir / "results/judged/judge.json").read_text())["live_requests"] == 0
    assert (workdir / "results/judged/grades.jsonl").read_bytes() == grades
    assert summary(workdir, "judged")["counted"]

    # A bundle of the run replays the reference protocol's requests from the store, elsewhere.
    # The project's source comes from this checkout (dirty while developing, hence --allow-dirty);
    # evaluation.py travels in the bundle, so no InFoBench source is given to the verifier.
    configs = [REPO / "config/config.yaml", REPO / "config/offline.yaml", workdir / "test.yaml"]
    run_cli(
        [
            "bundle",
            "--out",
            str(workdir / "bundle"),
            "--project",
            str(REPO),
            "--allow-dirty",
            "--results",
            str(workdir / "results"),
            *(f"--config={c}" for c in configs),
        ],
        workdir / "resources",
    )
    done = run_cli(["verify-bundle", str(workdir / "bundle")], workdir / "verify-resources")
    assert re.search(r"regraded byte-identically[^:]*: [^;]*\bjudged\b", done.stderr), done.stderr
