"""Harness logs in, claims audited: real logs written by lm-eval and inspect (tools/harness_logs)
against a loopback server replaying Google's GPT-4 responses, imported, graded by the pinned
upstream grader, and set beside the harness's own verdicts."""

from __future__ import annotations

import csv
import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from conftest import (
    GPT4_RESPONSES,
    IFAUDIT,
    IFEVAL_PROMPTS,
    REPO,
    cli_env,
    grade_args,
    read_jsonl,
    run_cli,
    write_jsonl,
)

LOGS = Path(__file__).parent / "data" / "harness_logs"
LM_EVAL_SAMPLES = next((LOGS / "lm_eval").glob("samples_*.jsonl"))
LM_EVAL_RESULTS = next((LOGS / "lm_eval").glob("results_*.json"))
EXPECTED = {
    "prompt_level_strict_acc": (417, 541),
    "inst_level_strict_acc": (698, 834),
    "prompt_level_loose_acc": (431, 541),
    "inst_level_loose_acc": (714, 834),
}


def _import_log_args(fmt: str, log: Path, out: Path, harness: Path, options: dict | None) -> list[str]:
    args = ["import-log", "--format", fmt, "--log", str(log), "--prompts", str(IFEVAL_PROMPTS), "--out", str(out)]
    args += ["--harness", str(harness)]
    return args + (["--options-json", json.dumps(options)] if options else [])


def _audit(tmp: Path, resources: Path, fmt: str, log: Path, options: dict | None = None, **env: str) -> dict:
    """import-log, grade with the pinned upstream grader, audit-claims: the DAG's three steps."""
    responses, harness, grades = tmp / "responses.jsonl", tmp / "harness.json", tmp / "grades.jsonl"
    run_cli(_import_log_args(fmt, log, responses, harness, options), resources, **env)
    run_cli(grade_args(IFEVAL_PROMPTS, responses, grades, "--jobs", "2", grader="upstream"), resources)
    run_cli(
        [
            "audit-claims",
            "--prompts",
            str(IFEVAL_PROMPTS),
            "--responses",
            str(responses),
            "--grades",
            str(grades),
            "--harness",
            str(harness),
            "--resamples",
            "200",
            "--out",
            str(tmp / "claims.json"),
            "--table",
            str(tmp / "disagreements.csv"),
        ],
        resources,
    )
    return json.loads((tmp / "claims.json").read_text())


def _differences(harness: dict, grades: list[dict]) -> set[tuple]:
    """Where the log's own verdicts and the pinned grader's differ, found directly."""
    ours = {(g["key"], g["sample"]): g for g in grades}
    found = set()
    for v in harness["verdicts"]:
        for mode, theirs in v["verdicts"].items():
            mine = ours[v["key"], v["sample"]][mode]["follow_instruction_list"]
            found |= {(v["key"], v["sample"], mode, i) for i, (a, b) in enumerate(zip(mine, theirs)) if a != b}
    return found


@pytest.fixture(scope="module")
def lm_eval_audit(resources: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    tmp = tmp_path_factory.mktemp("lm_eval")
    return tmp, _audit(tmp, resources, "lm-eval", LM_EVAL_SAMPLES, {"results": str(LM_EVAL_RESULTS)})


def test_lm_eval_log_audits_to_the_pinned_grader(lm_eval_audit: tuple[Path, dict]) -> None:
    tmp, claims = lm_eval_audit
    for name, (correct, total) in EXPECTED.items():
        audited = claims["metrics"][name]["audited"]
        assert (audited["correct"], audited["total"]) == (correct, total), name
    # What lm-eval reported is what its own per-response verdicts give, and it differs from the
    # pinned grader on one loose instruction (1122's random letter): 430/541, 713/834.
    loose = claims["metrics"]["prompt_level_loose_acc"]
    assert loose["recomputed_from_harness"]["correct"] == 430
    assert loose["reported"] == pytest.approx(430 / 541, abs=1e-12)
    assert claims["metrics"]["inst_level_loose_acc"]["recomputed_from_harness"]["correct"] == 713
    assert claims["metrics"]["prompt_level_loose_acc"]["audited_minus_claimed"]["value"] == pytest.approx(1 / 541)


def test_lm_eval_disagreements_are_exactly_the_differing_verdicts_each_explained(lm_eval_audit) -> None:
    tmp, claims = lm_eval_audit
    harness = json.loads((tmp / "harness.json").read_text())
    expected = _differences(harness, read_jsonl(tmp / "grades.jsonl"))
    with (tmp / "disagreements.csv").open(newline="") as table:
        rows = list(csv.DictReader(table))
    assert {(int(r["key"]), int(r["sample"]), r["mode"], int(r["index"])) for r in rows} == expected
    assert expected, "this log disagrees with the pinned grader somewhere"
    assert claims["unexplained"] == 0
    assert {r["cause"] for r in rows if r["key"] in ("1122", "1129")} <= {"substituted_setting"}
    assert any(r["key"] == "1122" and r["mode"] == "loose" and r["cause"] == "substituted_setting" for r in rows)


def test_lm_eval_import_keeps_every_sample_and_its_provenance(resources: Path, tmp_path: Path) -> None:
    run_cli(
        [
            "import-log",
            "--format",
            "lm-eval",
            "--log",
            str(LM_EVAL_SAMPLES),
            "--prompts",
            str(IFEVAL_PROMPTS),
            "--options-json",
            json.dumps({"results": str(LM_EVAL_RESULTS)}),
            "--out",
            str(tmp_path / "r.jsonl"),
            "--harness",
            str(tmp_path / "h.json"),
        ],
        resources,
    )
    imported = {(r["key"], r["sample"]): r["response"] for r in read_jsonl(tmp_path / "r.jsonl")}
    published = {r["prompt"]: r["response"] for r in read_jsonl(GPT4_RESPONSES)}
    by_key = {p["key"]: p["prompt"] for p in read_jsonl(IFEVAL_PROMPTS)}
    assert len(imported) == 541
    assert all(text == published[by_key[key]] for (key, _), text in imported.items())
    harness = json.loads((tmp_path / "h.json").read_text())
    assert harness["tool"] == {"name": "lm-evaluation-harness", "version": "0.4.13"}
    assert harness["model"] == "gpt-4-0613-replay"
    assert harness["prompt_differences"] == []
    assert harness["generation"]["max_gen_toks"] == 1280


def test_a_log_whose_prompts_differ_says_so_and_grades_against_the_pinned_set(resources: Path, tmp_path: Path) -> None:
    records = read_jsonl(LM_EVAL_SAMPLES)
    changed = next(r for r in records if r["doc"]["key"] == 2785)
    changed["doc"]["kwargs"][0] = {**changed["doc"]["kwargs"][0], "num_placeholders": 1}
    log = write_jsonl(tmp_path / "samples_ifeval.jsonl", records)
    done = run_cli(
        [
            "import-log",
            "--format",
            "lm-eval",
            "--log",
            str(log),
            "--prompts",
            str(IFEVAL_PROMPTS),
            "--out",
            str(tmp_path / "r.jsonl"),
            "--harness",
            str(tmp_path / "h.json"),
        ],
        resources,
    )
    assert "1 prompts in" in done.stderr and "keys 2785" in done.stderr
    harness = json.loads((tmp_path / "h.json").read_text())
    assert harness["prompt_differences"] == [{"key": 2785, "fields": ["kwargs"]}]


def _bad(resources: Path, tmp_path: Path, fmt: str, log: Path, options: dict | None = None, **env: str) -> str:
    args = _import_log_args(fmt, log, tmp_path / "r.jsonl", tmp_path / "h.json", options)
    done = run_cli(args, resources, check=False, **env)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ifaudit: error: "), done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "r.jsonl").exists() and not (tmp_path / "h.json").exists()
    return lines[0]


def test_bad_lm_eval_logs_stop_with_one_line(resources: Path, tmp_path: Path) -> None:
    records = read_jsonl(LM_EVAL_SAMPLES)[:5]
    missing = [dict(records[0])] + records[1:]
    del missing[0]["inst_level_loose_acc"]
    line = _bad(resources, tmp_path, "lm-eval", write_jsonl(tmp_path / "missing.jsonl", missing))
    assert "missing.jsonl:1" in line and "inst_level_loose_acc" in line
    other_task = [
        {
            "doc_id": 0,
            "doc": {"question": "2+2?", "answer": "4"},
            "resps": [["4"]],
            "filtered_resps": ["4"],
            "exact_match": 1.0,
        }
    ]
    line = _bad(resources, tmp_path, "lm-eval", write_jsonl(tmp_path / "gsm8k.jsonl", other_task))
    assert "another task" in line
    truncated = tmp_path / "truncated.jsonl"
    truncated.write_bytes(LM_EVAL_SAMPLES.read_bytes()[:50_000])
    line = _bad(resources, tmp_path, "lm-eval", truncated)
    assert "truncated.jsonl:" in line and "malformed JSON" in line
    results = tmp_path / "results.json"
    results.write_text(LM_EVAL_RESULTS.read_text()[:300])
    line = _bad(resources, tmp_path, "lm-eval", LM_EVAL_SAMPLES, {"results": str(results)})
    assert "results.json" in line and "truncated" in line


INSPECT_EVAL = next((LOGS / "inspect").glob("*.eval"))
INSPECT_JSON = next((LOGS / "inspect").glob("*.json"))


def test_inspect_log_audits_to_the_pinned_grader_and_explains_each_count(resources: Path, tmp_path: Path) -> None:
    claims = _audit(tmp_path, resources, "inspect", INSPECT_EVAL)
    for name, (correct, total) in EXPECTED.items():
        audited = claims["metrics"][name]["audited"]
        assert (audited["correct"], audited["total"]) == (correct, total), name
        # inspect's reported figures are what its own per-response counts give.
        assert claims["metrics"][name]["reported"] == pytest.approx(
            claims["metrics"][name]["recomputed_from_harness"]["value"], abs=1e-12
        ), name
    harness = json.loads((tmp_path / "harness.json").read_text())
    grades = {(g["key"], g["sample"]): g for g in read_jsonl(tmp_path / "grades.jsonl")}
    differing = {
        (v["key"], mode)
        for v in harness["verdicts"]
        for mode, theirs in v["verdicts"].items()
        if sum(theirs) != sum(grades[v["key"], v["sample"]][mode]["follow_instruction_list"])
    }
    with (tmp_path / "disagreements.csv").open(newline="") as table:
        rows = list(csv.DictReader(table))
    assert {(int(r["key"]), r["mode"]) for r in rows} == differing
    assert differing and claims["unexplained"] == 0
    assert all(r["cause"] in ("substituted_setting", "language_detection") for r in rows), rows


def test_inspect_json_log_reads_like_the_eval_archive(resources: Path, tmp_path: Path) -> None:
    run_cli(
        [
            "import-log",
            "--format",
            "inspect",
            "--log",
            str(INSPECT_JSON),
            "--prompts",
            str(IFEVAL_PROMPTS),
            "--out",
            str(tmp_path / "r.jsonl"),
            "--harness",
            str(tmp_path / "h.json"),
        ],
        resources,
    )
    harness = json.loads((tmp_path / "h.json").read_text())
    assert harness["samples"] == 25 and harness["tool"]["version"] == "0.3.285"
    assert harness["model"] == "openai/gpt-4-0613-replay"
    # The JSON log's samples are the same as the archive's: same responses and counts.
    run_cli(
        [
            "import-log",
            "--format",
            "inspect",
            "--log",
            str(INSPECT_EVAL),
            "--prompts",
            str(IFEVAL_PROMPTS),
            "--out",
            str(tmp_path / "all.jsonl"),
            "--harness",
            str(tmp_path / "all.json"),
        ],
        resources,
    )
    everything = {(r["key"], r["sample"]): r for r in read_jsonl(tmp_path / "all.jsonl")}
    assert all(everything[r["key"], r["sample"]] == r for r in read_jsonl(tmp_path / "r.jsonl"))


def test_bad_inspect_logs_stop_with_one_line(resources: Path, tmp_path: Path) -> None:
    truncated = tmp_path / "cut.eval"
    truncated.write_bytes(INSPECT_EVAL.read_bytes()[:100_000])
    assert "cut.eval" in _bad(resources, tmp_path, "inspect", truncated)
    log = json.loads(INSPECT_JSON.read_text())
    log["samples"][3]["output"]["model"] = "openai/gpt-4o"
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps(log))
    assert "mixes models" in _bad(resources, tmp_path, "inspect", mixed)
    del log["samples"][0]["scores"]
    unscored = tmp_path / "unscored.json"
    unscored.write_text(json.dumps(log))
    assert "scores" in _bad(resources, tmp_path, "inspect", unscored)


MODEL = "gpt-4-0613-replay"
IFEVAL_CONFIG = f"{MODEL}__leaderboard_ifeval"
LATEST, EARLIER = "2026-12-01T00-57-05.423298", "2026-11-30T09-12-44.101010"


def _split_name(stamp: str) -> str:
    """The hub's split name for an evaluation time: `-` and `:` are not allowed in split names."""
    return stamp.replace("-", "_")


def details_folder(root: Path) -> Path:
    """A details dataset laid out as the leaderboard's are on the hub: parquet per task and
    evaluation time under the model's folder, and a README whose YAML header declares a config per
    task with a split per time plus `latest` (made here from the committed lm-eval samples)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = read_jsonl(LM_EVAL_SAMPLES)
    model_dir = root / MODEL.replace("/", "__")
    model_dir.mkdir(parents=True)
    tables = {
        ("leaderboard_ifeval", LATEST): records,
        ("leaderboard_ifeval", EARLIER): records[:40],
        ("leaderboard_gsm8k", LATEST): [
            {
                "doc_id": 0,
                "doc": {"question": "2+2?", "answer": "4"},
                "resps": [["4"]],
                "filtered_resps": ["4"],
                "exact_match": 1.0,
            }
        ],
    }
    configs: dict[str, list[dict]] = {}
    for (task, stamp), rows in tables.items():
        name = f"samples_{task}_{stamp}.parquet"
        pq.write_table(pa.Table.from_pylist(rows), model_dir / name)
        splits = configs.setdefault(f"{MODEL}__{task}", [])
        splits.append({"split": _split_name(stamp), "path": [f"**/{name}"]})
        if stamp == LATEST:
            splits.append({"split": "latest", "path": [f"**/{name}"]})
    header = {
        "pretty_name": f"Evaluation run of {MODEL}",
        "configs": [{"config_name": name, "data_files": files} for name, files in configs.items()],
    }
    (root / "README.md").write_text(f"---\n{yaml.safe_dump(header, sort_keys=False)}---\n\n# Details of {MODEL}\n")
    return root


def test_a_leaderboard_details_folder_loads_and_audits(resources: Path, tmp_path: Path) -> None:
    folder = details_folder(tmp_path / "details")
    hf = {"HF_HOME": str(tmp_path / "hf"), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    work = tmp_path / "latest"
    work.mkdir()
    claims = _audit(work, resources, "leaderboard", folder, {"config": IFEVAL_CONFIG, "split": "latest"}, **hf)
    for name, (correct, total) in EXPECTED.items():
        audited = claims["metrics"][name]["audited"]
        assert (audited["correct"], audited["total"]) == (correct, total), name
    # The details rows are lm-eval's records, verdicts included: the same 430/541 loose.
    assert claims["metrics"]["prompt_level_loose_acc"]["recomputed_from_harness"]["correct"] == 430
    assert claims["unexplained"] == 0 and claims["disagreements"]
    harness = json.loads((work / "harness.json").read_text())
    assert harness["format"] == "leaderboard" and harness["model"] == MODEL
    assert harness["provenance"]["config"] == IFEVAL_CONFIG and harness["provenance"]["split"] == "latest"
    # A timestamped split is the evaluation made then (here: 40 documents).
    run_cli(
        [
            "import-log",
            "--format",
            "leaderboard",
            "--log",
            str(folder),
            "--prompts",
            str(IFEVAL_PROMPTS),
            "--options-json",
            json.dumps({"config": IFEVAL_CONFIG, "split": _split_name(EARLIER)}),
            "--out",
            str(tmp_path / "early.jsonl"),
            "--harness",
            str(tmp_path / "early.json"),
        ],
        resources,
        **hf,
    )
    assert len(read_jsonl(tmp_path / "early.jsonl")) == 40


def test_bad_leaderboard_details_stop_with_one_line(resources: Path, tmp_path: Path) -> None:
    folder = details_folder(tmp_path / "details")
    hf = {"HF_HOME": str(tmp_path / "hf"), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    line = _bad(resources, tmp_path, "leaderboard", folder, {"config": f"{MODEL}__leaderboard_gsm8k"}, **hf)
    assert "another task" in line and "leaderboard_gsm8k/latest" in line
    line = _bad(resources, tmp_path, "leaderboard", folder, {"config": IFEVAL_CONFIG, "split": "2020_01_01"}, **hf)
    assert "2020_01_01" in line
    assert "import.config" in _bad(resources, tmp_path, "leaderboard", folder, {}, **hf)


def test_a_refused_leaderboard_import_exits_2_every_time(resources: Path, tmp_path: Path) -> None:
    """Parquet is read on the command's own thread: decoded on pyarrow's thread pools, about one
    refused import in five aborted at exit (SIGABRT, "terminate called without an active
    exception") after printing its line. Fifteen in a row all exit 2 (0.75^15 ≈ 1 % before)."""
    folder = details_folder(tmp_path / "details")
    hf = {"HF_HOME": str(tmp_path / "hf"), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    args = _import_log_args(
        "leaderboard", folder, tmp_path / "r.jsonl", tmp_path / "h.json", {"config": f"{MODEL}__leaderboard_gsm8k"}
    )
    codes = [run_cli(args, resources, check=False, **hf).returncode for _ in range(15)]
    assert codes == [2] * 15, codes


def test_the_hub_path_reads_the_split_the_readme_declares_at_the_pinned_revision(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No hub here: the hub client's two calls (download a file, list the repository's files) are
    served in-process from a details folder, and what they are asked for is inspected."""
    import huggingface_hub

    from ifaudit.core.errors import InputError
    from ifaudit.inputs.importers import leaderboard

    folder = details_folder(tmp_path / "details")
    repo, revision = f"open-llm-leaderboard/{MODEL}-details", "0123456789abcdef0123456789abcdef01234567"
    calls = []

    def hf_hub_download(repo_id: str, filename: str, *, repo_type: str, revision: str, cache_dir: str) -> str:
        assert Path(cache_dir).is_dir()  # a private cache, removed after the step
        calls.append(("download", repo_id, filename, repo_type, revision))
        return str(folder / filename)

    def list_repo_files(self: object, repo_id: str, *, repo_type: str, revision: str) -> list[str]:
        calls.append(("list", repo_id, repo_type, revision))
        return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", hf_hub_download)
    monkeypatch.setattr(huggingface_hub.HfApi, "list_repo_files", list_repo_files)
    log = leaderboard.read(
        tmp_path / "not-a-folder",
        {"repo": repo, "revision": revision, "config": IFEVAL_CONFIG, "split": _split_name(LATEST)},
    )
    latest = f"{MODEL}/samples_leaderboard_ifeval_{LATEST}.parquet"
    assert calls == [
        ("download", repo, "README.md", "dataset", revision),
        ("list", repo, "dataset", revision),
        ("download", repo, latest, "dataset", revision),
    ]
    assert len(log.samples) == 541 and log.provenance["revision"] == revision
    # The folder itself reads the same samples, with no revision.
    local = leaderboard.read(folder, {"config": IFEVAL_CONFIG})
    assert [replace(sample, where="") for sample in local.samples] == [
        replace(sample, where="") for sample in log.samples
    ]
    assert local.provenance["revision"] is None
    # An unpinned hub source is refused before any call.
    with pytest.raises(InputError, match="pinned"):
        leaderboard.read(tmp_path / "not-a-folder", {"repo": repo, "config": IFEVAL_CONFIG})
    assert len(calls) == 3


RUNTIME_IFAUDIT = REPO / ".venv-runtime" / "bin" / "ifaudit"


@pytest.mark.parametrize("fmt", ["inspect", "leaderboard", "leaderboard-file"])
def test_make_runs_environment_imports_what_the_development_one_does(resources: Path, tmp_path: Path, fmt: str) -> None:
    """`make run`'s environment (requirements-runtime.lock, what the image holds) reads an inspect
    `.eval` (zstd members) and a leaderboard details dataset (parquet: a folder, and one split's
    file as the workflow fetches it), and writes the very bytes the development environment does."""
    if not RUNTIME_IFAUDIT.is_file():
        pytest.fail(f"no runtime venv at {RUNTIME_IFAUDIT}: build it with `make .venv-runtime/.installed`")
    folder = details_folder(tmp_path / "details")
    log, options = {
        "inspect": (INSPECT_EVAL, None),
        "leaderboard": (folder, {"config": IFEVAL_CONFIG}),
        "leaderboard-file": (
            next(folder.glob(f"*/samples_leaderboard_ifeval_{LATEST}.parquet")),
            {"config": IFEVAL_CONFIG},
        ),
    }[fmt]
    made = {}
    for name, command in (("dev", IFAUDIT), ("runtime", RUNTIME_IFAUDIT)):
        out, harness = tmp_path / f"{name}.jsonl", tmp_path / f"{name}.json"
        args = _import_log_args(fmt.removesuffix("-file"), log, out, harness, options)
        done = subprocess.run([str(command), *args], env=cli_env(resources), capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        made[name] = (out.read_bytes(), harness.read_bytes())
    assert made["runtime"] == made["dev"]
    assert len(made["dev"][0].splitlines()) == 541


def _gpt4_by_key() -> dict[int, str]:
    """Google's published GPT-4 responses, by the pinned prompt's key."""
    keys = {p["prompt"]: p["key"] for p in read_jsonl(IFEVAL_PROMPTS)}
    return {keys[r["prompt"]]: r["response"] for r in read_jsonl(GPT4_RESPONSES)}


def batch_line(index: int, key: int, text: str, model: str = "gpt-4-0613") -> dict:
    """One line of an OpenAI Batch API output file, as the API writes it for a chat request."""
    return {
        "id": f"batch_req_{index:06d}",
        "custom_id": f"ifeval-{key}-0",
        "response": {
            "status_code": 200,
            "request_id": f"req_{index:032x}",
            "body": {
                "id": f"chatcmpl-{index:08d}",
                "object": "chat.completion",
                "created": 1699368630,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text, "refusal": None},
                        "logprobs": None,
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 50, "completion_tokens": 300, "total_tokens": 350},
                "system_fingerprint": None,
            },
        },
        "error": None,
    }


def _audited_exactly(claims: dict) -> None:
    for name, (correct, total) in EXPECTED.items():
        audited = claims["metrics"][name]["audited"]
        assert (audited["correct"], audited["total"]) == (correct, total), name
        # No verdicts and no reported score in these logs: only the audited figure is shown.
        assert claims["metrics"][name]["reported"] is None
        assert claims["metrics"][name]["recomputed_from_harness"] is None
        assert claims["metrics"][name]["audited_minus_claimed"] is None
    assert claims["responses_with_harness_verdicts"] == 0 and claims["disagreements"] == []


def test_an_openai_batch_output_file_audits_to_the_pinned_grader(resources: Path, tmp_path: Path) -> None:
    lines = [batch_line(i, key, text) for i, (key, text) in enumerate(sorted(_gpt4_by_key().items()))]
    log = write_jsonl(tmp_path / "batch_output.jsonl", lines[::-1])  # the API writes in completion order
    claims = _audit(tmp_path, resources, "openai-batch", log, {"custom_id": "ifeval-{key}-{sample}"})
    _audited_exactly(claims)
    harness = json.loads((tmp_path / "harness.json").read_text())
    assert harness["model"] == "gpt-4-0613" and harness["samples"] == 541


def test_bad_openai_batch_outputs_stop_with_one_line(resources: Path, tmp_path: Path) -> None:
    texts = sorted(_gpt4_by_key().items())[:4]
    good = [batch_line(i, key, text) for i, (key, text) in enumerate(texts)]
    pattern = {"custom_id": "ifeval-{key}-{sample}"}
    failed = [
        *good[:2],
        {
            **good[2],
            "response": None,
            "error": {"code": "batch_expired", "message": "This request could not be executed"},
        },
    ]
    line = _bad(resources, tmp_path, "openai-batch", write_jsonl(tmp_path / "failed.jsonl", failed), pattern)
    assert "failed.jsonl:3" in line and "batch_expired" in line
    server_error = [
        *good[:1],
        {
            **good[1],
            "response": {"status_code": 500, "request_id": "req_x", "body": {"error": {"message": "server error"}}},
        },
    ]
    line = _bad(resources, tmp_path, "openai-batch", write_jsonl(tmp_path / "500.jsonl", server_error), pattern)
    assert "500.jsonl:2" in line and "status_code" in line
    renamed = [*good[:3], {**good[3], "custom_id": f"request-{texts[3][0]}"}]
    line = _bad(resources, tmp_path, "openai-batch", write_jsonl(tmp_path / "renamed.jsonl", renamed), pattern)
    assert "renamed.jsonl:4" in line and "custom_id" in line and "does not match" in line
    mixed = [*good[:3], batch_line(3, texts[3][0], texts[3][1], model="gpt-4o-2024-08-06")]
    line = _bad(resources, tmp_path, "openai-batch", write_jsonl(tmp_path / "mixed.jsonl", mixed), pattern)
    assert "mixes models" in line and "gpt-4o-2024-08-06" in line


GENERIC_FIELDS = {"key": "meta.prompt_id", "response": "output.text", "sample": "meta.n", "model": "output.model"}


def generic_line(key: int, text: str, model: str = "gpt-4-0613") -> dict:
    return {"meta": {"prompt_id": key, "n": 0}, "output": {"text": text, "model": model}}


def test_a_generic_jsonl_log_with_named_fields_audits_to_the_pinned_grader(resources: Path, tmp_path: Path) -> None:
    log = write_jsonl(tmp_path / "log.jsonl", [generic_line(k, t) for k, t in sorted(_gpt4_by_key().items())])
    claims = _audit(tmp_path, resources, "jsonl", log, {"fields": GENERIC_FIELDS})
    _audited_exactly(claims)
    assert json.loads((tmp_path / "harness.json").read_text())["model"] == "gpt-4-0613"


def test_bad_generic_jsonl_logs_stop_with_one_line(resources: Path, tmp_path: Path) -> None:
    texts = sorted(_gpt4_by_key().items())[:4]
    good = [generic_line(k, t) for k, t in texts]
    options = {"fields": GENERIC_FIELDS}
    missing = [*good[:2], {"meta": good[2]["meta"], "output": {"model": "gpt-4-0613"}}]
    line = _bad(resources, tmp_path, "jsonl", write_jsonl(tmp_path / "missing.jsonl", missing), options)
    assert "missing.jsonl:3" in line and "output.text" in line
    mixed = [*good[:3], generic_line(*texts[3], model="gpt-4o")]
    assert "mixes models" in _bad(resources, tmp_path, "jsonl", write_jsonl(tmp_path / "mixed.jsonl", mixed), options)
    twice = [*good, good[0]]
    assert "appears twice" in _bad(resources, tmp_path, "jsonl", write_jsonl(tmp_path / "twice.jsonl", twice), options)
    truncated = tmp_path / "cut.jsonl"
    truncated.write_bytes(write_jsonl(tmp_path / "whole.jsonl", good).read_bytes()[:-40])
    assert "cut.jsonl" in _bad(resources, tmp_path, "jsonl", truncated, options)


def test_one_split_as_a_fetched_parquet_file_imports_the_same_responses(resources: Path, tmp_path: Path) -> None:
    """The workflow fetches a hub file (`hf: {repo, revision, file}`) into resources/data/<name>.jsonl:
    a split's parquet file under another name reads as the folder's split does."""
    folder = details_folder(tmp_path / "details")
    hf = {"HF_HOME": str(tmp_path / "hf"), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    fetched = tmp_path / "leaderboard_details.jsonl"
    fetched.write_bytes(next(folder.glob(f"*/samples_leaderboard_ifeval_{LATEST}.parquet")).read_bytes())
    run_cli(
        [
            "import-log",
            "--format",
            "leaderboard",
            "--log",
            str(fetched),
            "--prompts",
            str(IFEVAL_PROMPTS),
            "--options-json",
            json.dumps({"config": IFEVAL_CONFIG}),
            "--out",
            str(tmp_path / "r.jsonl"),
            "--harness",
            str(tmp_path / "h.json"),
        ],
        resources,
        **hf,
    )
    run_cli(
        [
            "import-log",
            "--format",
            "lm-eval",
            "--log",
            str(LM_EVAL_SAMPLES),
            "--prompts",
            str(IFEVAL_PROMPTS),
            "--out",
            str(tmp_path / "lm.jsonl"),
            "--harness",
            str(tmp_path / "lm.json"),
        ],
        resources,
    )
    assert (tmp_path / "r.jsonl").read_bytes() == (tmp_path / "lm.jsonl").read_bytes()
    assert json.loads((tmp_path / "h.json").read_text())["model"] == MODEL
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(fetched.read_bytes()[:-5000])
    assert "cut.jsonl" in _bad(resources, tmp_path / "cut", "leaderboard", cut, **hf)


def test_import_settings_that_are_not_a_json_object_are_one_line(resources: Path, tmp_path: Path) -> None:
    for given, said in (("{bad", "is not JSON"), ("[1]", "--options-json: expected a JSON object")):
        done = run_cli(
            [
                "import-log",
                "--format",
                "lm-eval",
                "--log",
                str(LM_EVAL_SAMPLES),
                "--prompts",
                str(IFEVAL_PROMPTS),
                "--options-json",
                given,
                "--out",
                str(tmp_path / "r.jsonl"),
                "--harness",
                str(tmp_path / "h.json"),
            ],
            resources,
            check=False,
        )
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and said in done.stderr, done.stderr
