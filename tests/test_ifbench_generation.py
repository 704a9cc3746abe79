"""Generation for IFBench's prompts, as for IFEval's: a loopback model answering each prompt with
upstream's sample output, and the generated file graded by the pinned IFBench grader."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import grade_args, read_jsonl, run_cli, write_jsonl
from test_ifbench_reference import IFBENCH, PROMPTS, SAMPLE_OUTPUTS
from vllm_like import VllmLikeServer


@pytest.fixture
def server() -> Iterator[VllmLikeServer]:
    served = VllmLikeServer(SAMPLE_OUTPUTS, faults={}, slow_seconds=2.5).start()
    yield served
    served.stop()


def test_ifbench_prompts_are_generated_and_graded(server: VllmLikeServer, resources: Path, tmp_path: Path) -> None:
    prompts = write_jsonl(tmp_path / "prompts.jsonl", read_jsonl(PROMPTS["294"])[:12])
    model = {"model": "loopback/sample-outputs", "base_url": server.base_url, "api": "chat", "samples": 1}
    model |= {"temperature": 0.0, "max_tokens": 1024, "seed": 0, "retries": 2, "backoff_seconds": 0.05}
    out, grades = tmp_path / "responses.jsonl", tmp_path / "grades.jsonl"
    args = ["generate", "--task", "ifbench", "--prompts", str(prompts), "--model-json", json.dumps(model)]
    run_cli(
        [*args, "--store", str(tmp_path / "store"), "--out", str(out), "--record", str(tmp_path / "g.json")], resources
    )
    generated = read_jsonl(out)
    assert [r["key"] for r in generated] == [p["key"] for p in read_jsonl(prompts)]
    run_cli(grade_args(prompts, out, grades, "--task", "ifbench", "--offline", grader="upstream"), resources)
    committed = read_jsonl(IFBENCH / "eval_results_strict.jsonl")[:12]
    assert [g["strict"]["follow_instruction_list"] for g in read_jsonl(grades)] == [
        row["follow_instruction_list"] for row in committed
    ]
