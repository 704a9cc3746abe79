"""IFBench graded through ifaudit equals upstream, verdict for verdict.

Under the default pin (c6767a1) the 294 sample outputs grade to upstream's committed
`eval/eval_results_{strict,loose}.jsonl`; under db69a6f to what the unmodified upstream
`run_eval.py` computes here, in a subprocess over the pinned files (materialized from the mirror
by ifaudit's pins code), on both data versions (294 and 300 rows); and two passes under different
hash seeds are byte-identical.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DATA, REPO, grade_args, read_jsonl, run_cli, write_jsonl

IFBENCH = DATA / "ifbench"
SAMPLE_OUTPUTS = IFBENCH / "sample_output.jsonl"
PIN = REPO / "vendor" / "allenai_ifbench" / "pin.toml"
PROMPTS = {"294": IFBENCH / "IFBench_test_294.jsonl", "300": IFBENCH / "IFBench_test_300.jsonl"}
# Counted from upstream's committed results (FACTS §11): strict prompt, strict instruction, loose
# prompt, loose instruction.
COMMITTED_COUNTS = {"strict": (77, 93), "loose": (88, 109)}


def keyed_sample_outputs(data: str, out: Path) -> Path:
    """The sample outputs keyed to a data version's prompts as upstream's driver matches them
    (exact text, else the text without surrounding spaces); a prompt with no sample output gets
    the empty response, which upstream's driver (db69a6f) grades as following nothing."""
    by_text = {row["prompt"]: row["response"] for row in read_jsonl(SAMPLE_OUTPUTS)}
    by_text.update({text.strip(): response for text, response in list(by_text.items())})
    rows = []
    for prompt in read_jsonl(PROMPTS[data]):
        response = by_text.get(prompt["prompt"], by_text.get(prompt["prompt"].strip(), ""))
        rows.append({"key": prompt["key"], "response": response})
    return write_jsonl(out, rows)


def grade_ifbench(resources: Path, out: Path, data: str, *extra: str, **env: str) -> list[dict]:
    responses = keyed_sample_outputs(data, out.with_suffix(".responses.jsonl"))
    args = grade_args(PROMPTS[data], responses, out, "--task", "ifbench", "--offline", *extra, grader="upstream")
    run_cli(args, resources, **env)
    return read_jsonl(out)


def verdicts(records: list[dict], mode: str) -> list[list[bool]]:
    return [record[mode]["follow_instruction_list"] for record in records]


@pytest.fixture(scope="module")
def default_pin_grades(resources: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ifbench") / "c6767a1.jsonl"
    grade_ifbench(resources, out, "294", PYTHONHASHSEED="0")
    return out


def test_default_pin_grades_sample_outputs_as_upstreams_committed_results(default_pin_grades: Path) -> None:
    graded = read_jsonl(default_pin_grades)
    assert {record["grader"]["version"] for record in graded} == {"c6767a19bd82ac0536cab950f2f8f6bcc6fabe7c"}
    for mode, (prompts_followed, instructions_followed) in COMMITTED_COUNTS.items():
        committed = read_jsonl(IFBENCH / f"eval_results_{mode}.jsonl")
        assert [row["instruction_id_list"] for row in committed] == [record["instruction_id_list"] for record in graded]
        assert verdicts(graded, mode) == [row["follow_instruction_list"] for row in committed]
        assert sum(record[mode]["follow_all_instructions"] for record in graded) == prompts_followed
        assert sum(map(sum, verdicts(graded, mode))) == instructions_followed


def test_two_passes_under_other_hash_seeds_are_byte_identical(
    default_pin_grades: Path, resources: Path, tmp_path: Path
) -> None:
    again = tmp_path / "again.jsonl"
    grade_ifbench(resources, again, "294", PYTHONHASHSEED="1")
    assert again.read_bytes() == default_pin_grades.read_bytes()


def materialized_pin(version: str, folder: Path) -> Path:
    """The pinned files of `version`, materialized and verified by ifaudit's pins code from the mirror."""
    from ifaudit.io.remote.pins import default_sources, load_pin, materialize

    pin = load_pin(PIN, version)
    return materialize(pin, folder, default_sources(pin, [], offline=True))


def upstream_run_eval(version: str, data: str, nltk_data: Path, workdir: Path) -> dict[str, list[dict]]:
    """The unmodified upstream run_eval.py on the sample outputs, in a process of its own, over a
    scratch copy of the pinned files (it writes into its package folder). The NLTK data are the
    pinned resources; a download it tries goes to a closed loopback port and fails."""
    code = workdir / "code"
    shutil.copytree(materialized_pin(version, workdir / "pinned"), code)
    out = workdir / "out"
    out.mkdir()
    closed = "http://127.0.0.1:9"
    env = {**os.environ, "NLTK_DATA": str(nltk_data), "http_proxy": closed, "https_proxy": closed}
    env.pop("PYTHONPATH", None)
    subprocess.run(
        [sys.executable, "run_eval.py", f"--input_data={PROMPTS[data]}", f"--input_response_data={SAMPLE_OUTPUTS}"]
        + [f"--output_dir={out}"],
        cwd=code,
        env=env,
        check=True,
        capture_output=True,
    )
    # db69a6f names its outputs after the response file: sample_output-eval_results_strict.jsonl
    return {mode: read_jsonl(out / f"{SAMPLE_OUTPUTS.stem}-eval_results_{mode}.jsonl") for mode in ("strict", "loose")}


@pytest.mark.parametrize("data", ["294", "300"])
def test_db69a6f_grades_as_the_unmodified_upstream_run_eval(data: str, resources: Path, tmp_path: Path) -> None:
    graded = grade_ifbench(resources, tmp_path / "db69a6f.jsonl", data, "--grader-version", "db69a6f")
    assert {record["grader"]["version"] for record in graded} == {"db69a6f05689830b0068b8f1529ebcfd2f3b164c"}
    upstream = upstream_run_eval("db69a6f", data, resources / "nltk_data_pinned", tmp_path)
    for mode in ("strict", "loose"):
        assert [row["prompt"] for row in upstream[mode]] == [row["prompt"] for row in read_jsonl(PROMPTS[data])]
        assert verdicts(graded, mode) == [row["follow_instruction_list"] for row in upstream[mode]]
    # FACTS §11: the January 2026 graders differ from the committed results at key 163 only.
    committed = [row["follow_instruction_list"] for row in read_jsonl(IFBENCH / "eval_results_strict.jsonl")]
    if data == "294":
        differing = [r["key"] for r, c in zip(graded, committed) if r["strict"]["follow_instruction_list"] != c]
        assert differing == ["163"]
    counts = [sum(r[m]["follow_all_instructions"] for r in graded) for m in ("strict", "loose")]
    assert counts == ([76, 87] if data == "294" else [76, 86])


def test_sample_outputs_keyed_by_prompt_text_are_read_as_upstream_matches_them(resources: Path, tmp_path: Path) -> None:
    """The sample outputs as upstream ships them (keyed by prompt text, like Google's GPT-4 file)."""
    out = tmp_path / "by_text.jsonl"
    run_cli(
        grade_args(PROMPTS["294"], SAMPLE_OUTPUTS, out, "--task", "ifbench", "--offline", grader="upstream"), resources
    )
    committed = read_jsonl(IFBENCH / "eval_results_strict.jsonl")
    assert verdicts(read_jsonl(out), "strict") == [row["follow_instruction_list"] for row in committed]
