"""The sha256 of every compared output of four real DAG runs, recorded before a refactor and
checked after it: the offline default run, an Arabic run, an InFoBench run (imported verdicts)
and a two-run comparison.

    python tests/output_digests.py record --reason "why the outputs change"   # clean tree only
    python tests/output_digests.py check    # re-runs and names every file, and field, that changed

`tests/test_output_digests.py` runs the check. Manifests, logs and HTML renderings are left out:
they hold timestamps, paths or Snakemake's own rendering, not results.

These digests are the code's record of itself, not an independent reference: they catch a change,
they do not say the recorded bytes were right (the independent anchors are in
tests/test_independent_*.py and the reference-grade tests). So a re-record is guarded: `record`
refuses a working tree with uncommitted changes, stamps the fixture with the commit it measured
and the reason given, and prints every file and field that changed; the commit that re-records
names the same reason.

Besides each file's sha256 the fixture keeps a short digest of each of its fields (a JSON file's
keys to depth three, a JSONL file's records by key and sample, a CSV file's rows by their first
two cells, a Markdown file's sections), so a change is named down to the field.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import DATA, GPT4_RESPONSES, REPO, read_jsonl, write_jsonl  # noqa: E402
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
    "canary.json",
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
            # Every pair, as the default was before issue 29 (now each run against the first):
            # the three pairs' files as recorded, from the one job of all pairs.
            "comparisons": "all",
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


def _short(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _json_fields(value: object, prefix: str, depth: int) -> dict[str, str]:
    if isinstance(value, dict) and depth > 0 and value:
        return {
            field: digest
            for key, inner in value.items()
            for field, digest in _json_fields(inner, f"{prefix}.{key}" if prefix else str(key), depth - 1).items()
        }
    return {prefix or "(whole)": _short(value)}


def _jsonl_fields(text: str) -> dict[str, str]:
    fields = {}
    for number, line in enumerate(text.splitlines(), 1):
        record = json.loads(line)
        name = f"{record['key']}/{record.get('sample', 0)}" if isinstance(record, dict) and "key" in record else ""
        fields[f"record {name or f'line {number}'}"] = _short(line)
    return fields


def _csv_fields(text: str) -> dict[str, str]:
    rows = list(csv.reader(io.StringIO(text)))
    fields = {"header": _short(rows[0])} if rows else {}
    fields.update({f"row {' | '.join(row[:2])}": _short(row) for row in rows[1:]})
    return fields


def _markdown_fields(text: str) -> dict[str, str]:
    sections: dict[str, list[str]] = {"(top)": []}
    current = "(top)"
    for line in text.splitlines():
        if line.startswith("#"):
            current = line.lstrip("#").strip()
            sections.setdefault(current, [])
        sections[current].append(line)
    return {f"section {name}": _short("\n".join(lines)) for name, lines in sections.items()}


def field_digests(path: Path) -> dict[str, str]:
    """A short digest of each field of a compared output (none for images)."""
    readers = {".json": lambda text: _json_fields(json.loads(text), "", 3), ".jsonl": _jsonl_fields}
    readers |= {".csv": _csv_fields, ".md": _markdown_fields}
    reader = readers.get(path.suffix)
    return reader(path.read_text(encoding="utf-8")) if reader else {}


def compared_outputs(results: Path) -> list[Path]:
    """Every compared output under `results/`."""
    return [
        path
        for path in sorted(results.rglob("*"))
        if path.is_file()
        and (path.name in COMPARED or path.relative_to(results).parts[0] in FOLDERS or path.suffix in (".svg", ".png"))
    ]


def compared_files(results: Path) -> dict[str, str]:
    """sha256 of every compared output under `results/`, by path relative to it."""
    return {
        path.relative_to(results).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in compared_outputs(results)
    }


def compared_fields(results: Path) -> dict[str, dict[str, str]]:
    """The field digests of every compared output under `results/`, by path relative to it."""
    return {path.relative_to(results).as_posix(): field_digests(path) for path in compared_outputs(results)}


@dataclass(frozen=True)
class Measured:
    files: dict[str, str]
    fields: dict[str, dict[str, str]]


def run(name: str, workdir: Path) -> Measured:
    """Scenario `name` run by the real DAG in the empty folder `workdir`, which keeps its results;
    the digests are taken at once, before anything else could touch them."""
    SCENARIOS[name](workdir)
    snakemake(workdir)
    return Measured(compared_files(workdir / "results"), compared_fields(workdir / "results"))


def measure(name: str) -> Measured:
    with tempfile.TemporaryDirectory(prefix=f"digests_{name}_") as folder:
        return run(name, Path(folder))


def differences(name: str, recorded: dict, now: Measured) -> list[str]:
    """One line per compared output whose bytes changed, naming the fields that changed."""
    files, fields = recorded["files"], recorded["fields"]
    lines = []
    for path in sorted(set(files) | set(now.files)):
        if files.get(path) == now.files.get(path):
            continue
        before, after = fields.get(path, {}), now.fields.get(path, {})
        changed = [field for field in sorted(set(before) | set(after)) if before.get(field) != after.get(field)]
        shown = ", ".join(changed[:8]) + (f" and {len(changed) - 8} more" if len(changed) > 8 else "")
        lines.append(f"{name}: {path}: {files.get(path, 'absent')} -> {now.files.get(path, 'absent')}")
        if not before:
            lines.append("    fields changed: (no field digests were recorded for this file)")
        elif shown:
            lines.append(f"    fields changed: {shown}")
    return lines


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()


def record(names: list[str], reason: str) -> int:
    """Measure `names` on a clean checkout and write them, stamped, into the fixture."""
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    if dirty:
        print(f"output_digests: refusing to record from a tree with uncommitted changes:\n{dirty}")
        return 2
    fixture = json.loads(FIXTURE.read_text()) if FIXTURE.is_file() else {"scenarios": {}}
    commit = _git("rev-parse", "HEAD")
    for name in names:
        now = measure(name)
        previous = fixture["scenarios"].get(name)
        print("\n".join(differences(name, previous, now)) if previous else f"{name}: first record")
        fixture["scenarios"][name] = {"commit": commit, "reason": reason, "files": now.files, "fields": now.fields}
    FIXTURE.write_text(json.dumps(fixture, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"recorded at {commit}; commit the fixture naming the reason: {reason}")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["record"]:
        if len(argv) < 3 or argv[1] != "--reason" or not argv[2].strip():
            print('usage: output_digests.py record --reason "why the outputs change" [SCENARIO ...]')
            return 2
        return record(argv[3:] or list(SCENARIOS), argv[2])
    names = argv[1:] or list(SCENARIOS)
    scenarios = json.loads(FIXTURE.read_text())["scenarios"]
    changed = [line for name in names for line in differences(name, scenarios[name], measure(name))]
    print("\n".join(changed) or "every compared output is identical")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
