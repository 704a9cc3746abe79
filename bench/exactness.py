"""A speed-up inside grading must not move a byte: grades of this checkout against a base's.

    .venv/bin/python bench/exactness.py --base-src DIR [--shared ../shared]

DIR is the `src/` folder of the version to compare with (e.g. `git archive main src | tar -x -C
/tmp/base`). Every case is graded by `ifaudit grade` once with DIR first on PYTHONPATH and once
with this checkout, and the grade files must be byte-identical; the canary of each task must pass
with this checkout and write the same verdict. This checkout grades as the DAG does, running the
task's canary in the grading process first (`--canary-out`): its verdict must be the bytes the
base's own `ifaudit canary` writes, and the grades after it the base's grades. Cases: Google's
541 GPT-4 responses (upstream grader, stand-in, English gate) and three variants of each (as is,
first half, capitals), the Arabic prompts with responses made from the shared checker vectors
(strict, loose and gated tasks), and InFoBench with its recorded verdicts.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
IFAUDIT = Path(sys.executable).parent / "ifaudit"


def gpt4_variants(source: Path, path: Path) -> Path:
    rows = []
    for line in source.open(encoding="utf-8"):
        record = json.loads(line)
        text = record["response"]
        for sample, variant in enumerate([text, text[: len(text) // 2], text.upper()]):
            rows.append({"prompt": record["prompt"], "response": variant, "sample": sample})
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def arabic_responses(prompts: Path, vectors: Path, path: Path) -> Path:
    """Four responses per Arabic prompt, so loose grading's variants matter: a checker vector's
    response, it in bold, it between a first and a last line, and the prompt repeated."""
    texts = [json.loads(line)["response"] for line in vectors.open(encoding="utf-8")]
    rows = []
    for index, line in enumerate(prompts.open(encoding="utf-8")):
        prompt = json.loads(line)
        text = texts[index % len(texts)]
        for sample, variant in enumerate([text, f"**{text}**", f"مقدمة:\n{text}\nخاتمة.", prompt["prompt"]]):
            rows.append({"key": prompt["key"], "response": variant, "sample": sample})
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def run(args: list[str], env: dict) -> None:
    done = subprocess.run([str(IFAUDIT), *args], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"ifaudit {' '.join(args)} exited {done.returncode}:\n{done.stderr[-2000:]}")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-src", type=Path, required=True)
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    args = parser.parse_args()
    data = args.shared.resolve() / "data"
    work = Path(tempfile.mkdtemp(prefix="ifaudit-exactness-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("IFAUDIT_")}
    env.update(
        IFAUDIT_RESOURCES=str(work / "resources"),
        IFAUDIT_NLTK_MIRROR=str(data / "nltk"),
        IFAUDIT_PIN=str(REPO / "vendor/google_ifeval/pin.toml"),
    )
    upstream = [
        "--grader",
        "upstream",
        "--from",
        str(args.shared.resolve() / "upstream" / "google_ifeval"),
        "--offline",
    ]
    ifeval, gpt4 = (
        data / "ifeval" / "input_data.jsonl",
        data / "ifeval" / "input_response_data_gpt4_20231107_145030.jsonl",
    )
    variants = gpt4_variants(gpt4, work / "gpt4_variants.jsonl")
    arabic = data / "arabic_ifeval" / "ar_input_data.jsonl"
    arabic_out = arabic_responses(arabic, data / "arabic_ifeval" / "checker_vectors.jsonl", work / "arabic.jsonl")
    infobench = data / "infobench"
    judged = infobench / "gpt4_output_gpt4judge_DecomposeEval.jsonl"
    # The datasets each task's canary reads (the Arabic canaries carry theirs inline).
    gpt4_canary = [ifeval, gpt4]
    canary_data = {
        "ifeval": gpt4_canary,
        "ifeval_langcheck": gpt4_canary,
        "infobench": [infobench / "InfoBench.json", judged],
    }
    stand_in = ["--grader", "stand-in"]
    # name: task, prompts, responses, grader options
    cases = {
        "gpt4 ifeval upstream": ("ifeval", ifeval, gpt4, upstream),
        "gpt4 ifeval stand-in": ("ifeval", ifeval, gpt4, stand_in),
        "gpt4 ifeval_langcheck upstream": ("ifeval_langcheck", ifeval, gpt4, upstream),
        "gpt4 x3 variants upstream": ("ifeval", ifeval, variants, upstream),
        "gpt4 x3 variants stand-in": ("ifeval", ifeval, variants, stand_in),
        "arabic ifeval_arabic_inception": ("ifeval_arabic_inception", arabic, arabic_out, []),
        "arabic ifeval_arabic_inception_hf": ("ifeval_arabic_inception_hf", arabic, arabic_out, []),
        "arabic ifeval_arabic_inception_hf_langcheck": ("ifeval_arabic_inception_hf_langcheck", arabic, arabic_out, []),
        "infobench recorded verdicts": ("infobench", infobench / "InfoBench.json", judged, []),
    }
    judgements = {"infobench": ["--judgements", judged]}  # the run's verdicts, not a grader option
    base_env = {**env, "PYTHONPATH": str(args.base_src.resolve())}
    failed = 0
    for name, (task, prompts, responses, extra) in cases.items():
        slug = name.replace(" ", "_")
        grader = [str(o) for o in extra]
        options = [
            str(o)
            for o in ["--task", task, "--prompts", prompts, "--responses", responses, *extra, *judgements.get(task, [])]
        ]
        data = [str(path) for path in canary_data.get(task, [])]
        base_canary, new_canary = work / f"{slug}.canary.base.json", work / f"{slug}.canary.new.json"
        run(["grade", "--quiet", *options, "--out", str(work / f"{slug}.base.jsonl")], base_env)
        data_args = ["--prompts", data[0], "--responses", data[1]] if data else []
        run(["canary", "--task", task, *data_args, *grader, "--out", str(base_canary)], base_env)
        own = ["--canary-out", str(new_canary)]
        own += ["--canary-prompts", data[0], "--canary-responses", data[1]] if data else []
        run(["grade", "--quiet", *options, *own, "--out", str(work / f"{slug}.new.jsonl")], env)
        base, new = digest(work / f"{slug}.base.jsonl"), digest(work / f"{slug}.new.jsonl")
        lines = sum(1 for _ in (work / f"{slug}.new.jsonl").open(encoding="utf-8"))
        same_canary = base_canary.read_bytes() == new_canary.read_bytes()
        passed = json.loads(new_canary.read_text())["passed"]
        failed += base != new or not same_canary or not passed
        print(
            f"{'identical' if base == new else 'DIFFERENT'}  {name}: {lines} grades, sha256 {new}; "
            f"canary in the grading process {'identical' if same_canary else 'DIFFERENT'}, passed={passed}"
        )
    canaries = {
        "ifeval upstream": ["--task", "ifeval", "--prompts", ifeval, "--responses", gpt4, *upstream],
        "ifeval stand-in": ["--task", "ifeval", "--prompts", ifeval, "--responses", gpt4, "--grader", "stand-in"],
        "ifeval_arabic_inception": ["--task", "ifeval_arabic_inception"],
    }
    for name, options in canaries.items():
        options = [str(option) for option in options]
        slug = name.replace(" ", "_")
        outs = {}
        for side, side_env in (("base", base_env), ("new", env)):
            outs[side] = work / f"canary_{slug}.{side}.json"
            run(["canary", "--require-pass", *options, "--out", str(outs[side])], side_env)
        verdict = json.loads(outs["new"].read_text())
        same = outs["base"].read_bytes() == outs["new"].read_bytes()
        failed += not (same and verdict["passed"])
        print(
            f"{'identical' if same else 'DIFFERENT'}  canary {name}: passed={verdict['passed']}, "
            f"{verdict['items']} responses, {verdict['sentinels']} sentinels"
        )
    print(f"work folder {work}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
