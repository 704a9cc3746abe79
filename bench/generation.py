"""Generation client: overhead per request and throughput, against a loopback vLLM-like server.

    .venv/bin/python bench/generation.py [--shared ../shared] [--requests 300] [--latency 0.05]

The server (tests/vllm_like.py, answering with Google's GPT-4 responses) runs in its own process.
- Overhead per request, concurrency 1, no server latency: a bare urllib POST of the same body
  (the floor of any Python client) against ifaudit's live path (shared HTTP policy, answer
  check, canonical request key, atomic store write, response record). Overhead = ours - bare,
  median per request. Also the replay path (store read, no HTTP).
- Throughput with concurrency 1, 8, 32 when the server takes `--latency` seconds per request (a
  model's time to answer), as requests per second and as a share of the ideal
  concurrency / latency.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from ifaudit.inputs.generation import ModelSettings, generate, recorded_asker
from ifaudit.io.prompts import read_prompts
from ifaudit.io.remote.store import RequestStore

REPO = Path(__file__).resolve().parents[1]

SERVER = """
import sys, time
sys.path.insert(0, {tests!r})
from pathlib import Path
from vllm_like import VllmLikeServer
server = VllmLikeServer(Path({responses!r}), max_n=8, delay={delay}).start()
print(server.base_url, flush=True)
time.sleep(1e9)
"""


def start_server(responses: Path, delay: float) -> tuple[subprocess.Popen, str]:
    code = SERVER.format(tests=str(REPO / "tests"), responses=str(responses), delay=delay)
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    return process, process.stdout.readline().strip()


def settings_for(base_url: str, concurrency: int) -> ModelSettings:
    return ModelSettings(
        model="bench", base_url=base_url, temperature=0.7, max_tokens=512, seed=0, samples=1, concurrency=concurrency
    )


def bare_post(base_url: str, body: dict) -> None:
    request = urllib.request.Request(
        base_url + "/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as reply:
        json.loads(reply.read())


def per_request(prompts, base_url: str, store: Path) -> dict[str, float]:
    settings = settings_for(base_url, 1)
    bodies = [settings.request(p.prompt, 1, 0, 0)["body"] for p in prompts]
    bare, ours, replay = [], [], []
    for prompt, body in zip(prompts, bodies, strict=True):  # interleaved, so load drifts hit both alike
        started = time.perf_counter()
        bare_post(base_url, body)
        bare.append(time.perf_counter() - started)
        asker = recorded_asker(settings, RequestStore(store), live=True)
        started = time.perf_counter()
        generate(settings, [prompt], asker)
        ours.append(time.perf_counter() - started)
        asker = recorded_asker(settings, RequestStore(store), live=False)
        started = time.perf_counter()
        generate(settings, [prompt], asker)
        replay.append(time.perf_counter() - started)
    ms = {
        name: statistics.median(values) * 1000 for name, values in (("bare", bare), ("ours", ours), ("replay", replay))
    }
    return {**ms, "overhead": ms["ours"] - ms["bare"]}


def throughput(prompts, base_url: str, store: Path, concurrency: int) -> float:
    settings = settings_for(base_url, concurrency)
    asker = recorded_asker(settings, RequestStore(store), live=True)
    started = time.perf_counter()
    generate(settings, prompts, asker)
    return len(prompts) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=Path(os.environ.get("IFAUDIT_SHARED", REPO.parent / "shared")))
    parser.add_argument("--requests", type=int, default=300, help="at most 541 (distinct prompts)")
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()
    data = args.shared / "data" / "ifeval"
    prompts = read_prompts(data / "input_data.jsonl")
    responses = data / "input_response_data_gpt4_20231107_145030.jsonl"
    count = min(args.requests, len(prompts))  # distinct prompts: every request misses the store

    with tempfile.TemporaryDirectory() as scratch:
        server, base_url = start_server(responses, 0.0)
        try:
            ms = per_request(prompts[:count], base_url, Path(scratch) / "single")
        finally:
            server.terminate()
            server.wait()
        print(
            f"per request, concurrency 1, {count} requests, median: bare urllib "
            f"{ms['bare']:.2f} ms, ifaudit live {ms['ours']:.2f} ms, overhead {ms['overhead']:.2f} ms "
            f"(target < 2 ms); replay from the store {ms['replay']:.2f} ms"
        )

        server, base_url = start_server(responses, args.latency)
        try:
            for concurrency in (1, 8, 32):
                batch = prompts[: count if concurrency > 1 else max(20, count // 8)]
                rate = throughput(batch, base_url, Path(scratch) / f"c{concurrency}", concurrency)
                ideal = concurrency / args.latency
                print(
                    f"throughput, concurrency {concurrency:2d}, server latency {args.latency * 1000:.0f} ms, "
                    f"{len(batch)} requests: {rate:.1f} requests/s = {rate / ideal:.0%} of the ideal {ideal:.0f}/s"
                )
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
