"""The sha256 of every compared output of four real DAG runs, recorded before a refactor and
checked after it: the offline default run, an Arabic run, an InFoBench run (imported verdicts)
and a two-run comparison.

    python tests/output_digests.py record   # writes tests/fixtures/output_digests.json
    python tests/output_digests.py check    # re-runs and names every file whose bytes changed

`tests/test_output_digests.py` runs the check. Manifests, logs and HTML renderings are left out:
they hold timestamps, paths or Snakemake's own rendering, not results.

Recorded on main before the task-types refactor of issue 13: first at c1f6ed8, then again at
8dc5298 (after the `upstream` merge switched config/offline.yaml to the upstream grader, which
changes every output that names the grader, and added InFoBench's reference DRFR), each time
from a clean export of main with PYTHONPATH pointing at its src/.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import DATA, GPT4_RESPONSES, read_jsonl, write_jsonl  # noqa: E402
from test_workflow import snakemake, three_per_prompt, write_config  # noqa: E402

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "output_digests.json"
ARABIC_PROMPTS = DATA / "arabic_ifeval" / "ar_input_data.jsonl"
COMPARED = (
    "grades.jsonl",
    "summary.json",
    "stats.json",
    "metrics.csv",
    "breakdown.csv",
    "report.md",
    "comparisons.csv",
)
# Whole folders: paired comparisons, plots, canary verdicts (with the grading environment's
# fingerprint and the grader's identity) and the audits of substituted settings.
FOLDERS = ("comparisons", "plots", "canary", "prompts")


def _arabic(workdir: Path) -> None:
    answers = [
        "ذهب أحمد إلى السوق صباحا. اشترى خبزا وجبنا وبعض الفاكهة.",
        "The market was busy this morning and we bought bread and cheese.",
        " ".join(["جميل"] * 8),
        "<think>English first.</think>ذهب أحمد إلى السوق صباحا.",
    ]
    records = [
        {"key": prompt["key"], "sample": sample, "response": answers[(index + sample) % len(answers)]}
        for index, prompt in enumerate(read_jsonl(ARABIC_PROMPTS))
        for sample in range(2)
    ]
    responses = write_jsonl(workdir / "arabic_responses.jsonl", records)
    write_config(
        workdir,
        {
            "datasets": {
                "arabic_answers": {"path": str(responses)},
                "arabic_jsonl_standing_in_for_hf": {"path": str(ARABIC_PROMPTS)},
            },
            "runs": {
                "arabic": {
                    "task": "ifeval_arabic_inception",
                    "prompts": "arabic_ifeval_inception",
                    "responses": "arabic_answers",
                    "label": "composed Arabic answers",
                },
                "arabic_hf_langcheck": {
                    "task": "ifeval_arabic_inception_hf_langcheck",
                    "prompts": "arabic_jsonl_standing_in_for_hf",
                    "responses": "arabic_answers",
                },
            },
        },
    )


def _infobench(workdir: Path) -> None:
    write_config(
        workdir,
        {
            "runs": {
                "gpt4_infobench": {
                    "task": "infobench",
                    "prompts": "infobench",
                    "responses": "infobench_gpt4_judged",
                    "judgements": "infobench_gpt4_judged",
                    "label": "GPT-4 on InFoBench, GPT-4 judge (imported)",
                }
            }
        },
    )


def _comparison(workdir: Path) -> None:
    halves = [
        {**record, "response": record["response"][: len(record["response"]) // 2]}
        for record in read_jsonl(GPT4_RESPONSES)
    ]
    responses = write_jsonl(workdir / "gpt4_halves.jsonl", halves)
    x3 = three_per_prompt(workdir / "gpt4_x3.jsonl")
    write_config(
        workdir,
        {
            "shards": 2,
            "datasets": {"gpt4_halves": {"path": str(responses)}, "gpt4_x3": {"path": str(x3)}},
            "runs": {
                "gpt4_halves": {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "gpt4_halves"},
                "gpt4_x3": {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "gpt4_x3"},
                "gpt4_langcheck": {
                    "task": "ifeval_langcheck",
                    "prompts": "ifeval_prompts_github",
                    "responses": "gpt4_responses",
                },
            },
        },
    )


SCENARIOS = {
    "offline_default": lambda workdir: None,
    "arabic": _arabic,
    "infobench": _infobench,
    "comparison": _comparison,
}


def compared_files(results: Path) -> dict[str, str]:
    """sha256 of every compared output under `results/`, by path relative to it."""
    chosen = [
        path
        for path in results.rglob("*")
        if path.is_file()
        and (path.name in COMPARED or path.relative_to(results).parts[0] in FOLDERS or path.suffix in (".svg", ".png"))
    ]
    return {
        path.relative_to(results).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(chosen)
    }


def run(name: str, workdir: Path) -> dict[str, str]:
    """Scenario `name` run by the real DAG in the empty folder `workdir`, which keeps its results;
    the digests are taken at once, before anything else could touch them."""
    SCENARIOS[name](workdir)
    snakemake(workdir)
    return compared_files(workdir / "results")


def measure(name: str) -> dict[str, str]:
    with tempfile.TemporaryDirectory(prefix=f"digests_{name}_") as folder:
        return run(name, Path(folder))


def differences(name: str, recorded: dict[str, str], now: dict[str, str]) -> list[str]:
    return [
        f"{name}: {path}: {recorded.get(path, 'absent')} -> {now.get(path, 'absent')}"
        for path in sorted(set(recorded) | set(now))
        if recorded.get(path) != now.get(path)
    ]


def main(argv: list[str]) -> int:
    action, names = argv[0], argv[1:] or list(SCENARIOS)
    if action == "record":
        recorded = json.loads(FIXTURE.read_text()) if FIXTURE.is_file() else {}
        recorded.update({name: measure(name) for name in names})
        FIXTURE.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
        return 0
    recorded = json.loads(FIXTURE.read_text())
    changed = [line for name in names for line in differences(name, recorded[name], measure(name))]
    print("\n".join(changed) or "every compared output is identical")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
