"""An author's own paper (issue 41): only the runs of their config, in its order, in every output
and message; a citation from their config; what graded said in the report; the wording of
verify-bundle and artifact.md; `replay_only` toggled reruns nothing; `make run`'s last lines.

The end-to-end tests share one real DAG run of an author's config that drops config/config.yaml's
default run (`gpt4_google: null`) and declares a generated run before a response-file run, out of
alphabetical order; the others run the same functions on real files."""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import DATA, GPT4_RESPONSES, IFAUDIT, NLTK_MIRROR, REPO, cli_env
from test_workflow import snakemake
from vllm_like import VllmLikeServer

FIRST, SECOND = "zulu_model", "alpha_file"  # the config's order, not the alphabet's
TITLE = "Auditing IFEval: the runs of our paper"
AUTHORS = [
    {"given-names": "Ada", "family-names": "Lovelace", "orcid": "https://orcid.org/0000-0002-1825-0097"},
    {"name": "The Audit Collective"},
]
IFEVAL_ORDER = ["prompt_level_strict_acc", "inst_level_strict_acc", "prompt_level_loose_acc", "inst_level_loose_acc"]


def author_config(base_url: str) -> dict[str, Any]:
    model = {"model": "loopback/author-model", "base_url": base_url, "samples": 1, "concurrency": 8}
    return {
        "statistics": {"resamples": 200, "level": 0.95, "interval": "percentile", "seed": 541},
        "datasets": {"author_responses": {"path": str(GPT4_RESPONSES)}},
        "runs": {
            "gpt4_google": None,
            FIRST: {"task": "ifeval", "prompts": "ifeval_prompts_github", "model": model},
            SECOND: {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "author_responses"},
        },
        "citation": {"title": TITLE, "authors": AUTHORS},
    }


def write_config(workdir: Path, settings: dict[str, Any]) -> None:
    """The test's config on top of the project's, its keys in the order given (an author's)."""
    (workdir / "test.yaml").write_text(yaml.safe_dump(settings, sort_keys=False))


@pytest.fixture(scope="module")
def authored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The author's DAG run, finished (the generating endpoint stopped after it)."""
    workdir = tmp_path_factory.mktemp("author")
    server = VllmLikeServer(GPT4_RESPONSES).start()
    try:
        write_config(workdir, author_config(server.base_url))
        snakemake(workdir)
    finally:
        server.stop()
    yield workdir


def _section(text: str, title: str) -> str:
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _in_order(text: str, *names: str) -> bool:
    places = [text.find(name) for name in names]
    return -1 not in places and places == sorted(places)


@pytest.mark.e2e
def test_an_authors_config_drops_the_default_run_and_every_output_keeps_its_run_order(authored: Path) -> None:
    results = authored / "results"
    assert not (results / "gpt4_google").exists()
    assert json.loads((results / "MANIFEST.json").read_text())["runs"] == [FIRST, SECOND]
    assert json.loads((results / "tables.json").read_text())["plan"]["order"] == [FIRST, SECOND]
    readable = [results / "report.md", results / "metrics.csv", results / "comparisons.csv"]
    readable += sorted((results / "paper").iterdir())
    for path in readable:
        text = path.read_text()
        assert "gpt4_google" not in text, path
    report = (results / "report.md").read_text()
    assert _in_order(_section(report, "Runs"), f"({FIRST})", f"({SECOND})")
    assert _in_order(_section(report, "Disclosures"), f"**{FIRST}**", f"**{SECOND}**")
    # each run a group of rows headed by its label, here its name (paper_latex.run_heading)
    latex = [name.replace("_", "\\_") for name in (FIRST, SECOND)]
    assert _in_order((results / "paper/runs_ifeval.tex").read_text(), *latex)
    artifact = (results / "paper/artifact.md").read_text()
    assert _in_order(artifact, f"| `{FIRST}` |", f"| `{SECOND}` |")
    assert _in_order(artifact, f"- `{FIRST}`: ", f"- `{SECOND}`: ")
    # The baseline is the config's first run, and a comparison lists its metrics in the task's order.
    rows = [row for row in json.loads((results / "tables.json").read_text())["comparisons"] if ":" not in row["a"]]
    assert [(row["a"], row["b"]) for row in rows] == [(FIRST, SECOND)] * 4
    assert [row["metric"] for row in rows] == IFEVAL_ORDER


@pytest.mark.e2e
def test_the_report_says_which_python_and_unicode_graded_and_the_exposure_verdict(authored: Path) -> None:
    canary = json.loads((authored / "results/canary/ifeval.json").read_text())["environment"]
    said = f"Graded on Python {canary['python']} with Unicode {canary['unicodedata']}"
    assert said in (authored / "results/report.md").read_text().split("## Leaderboard")[0]
    assert said in (authored / "results/html/overview.html").read_text()


@pytest.mark.e2e
def test_the_bundle_cites_the_authors_config_and_lists_its_runs_in_its_order(authored: Path, tmp_path: Path) -> None:
    configs = [REPO / "config/config.yaml", REPO / "config/offline.yaml", authored / "test.yaml"]
    env = cli_env(authored / "resources")
    bundle = tmp_path / "bundle"
    made = subprocess.run(
        [str(IFAUDIT), "bundle", "--allow-dirty", "--out", str(bundle), "--project", str(REPO)]
        + [part for config in configs for part in ("--config", str(config))],
        cwd=authored,
        env=env,
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    assert "citation" not in made.stderr  # the authors are named: no note
    assert json.loads((bundle / "BUNDLE.json").read_text())["runs"] == [FIRST, SECOND]
    cited = yaml.safe_load((bundle / "CITATION.cff").read_text())
    assert cited["title"] == TITLE and cited["authors"] == AUTHORS
    assert f"({FIRST}, {SECOND})" in cited["abstract"] and "{" not in cited["abstract"]
    assert "gpt4_google" not in (bundle / "CITATION.cff").read_text()
    checked = subprocess.run(
        [str(IFAUDIT), "verify-bundle", str(bundle), "--checksums-only"], env=env, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr
    assert "not regraded or recomputed" in checked.stderr and "none" not in checked.stderr


@pytest.mark.e2e
def test_toggling_replay_only_reruns_no_job_when_the_store_holds_every_request(authored: Path) -> None:
    settings = yaml.safe_load((authored / "test.yaml").read_text())
    write_config(authored, {**settings, "replay_only": True})
    try:
        dry = snakemake(authored, "--dry-run")
    finally:
        write_config(authored, settings)
    # The workflow's record of its config files (results/MANIFEST.json) changes, and is written
    # again; nothing generate made, nor anything after it.
    planned = set(re.findall(r"^(?:local)?rule (\w+):", dry.stdout + dry.stderr, re.MULTILINE))
    assert planned <= {"all", "workflow_manifest"}, dry.stdout + dry.stderr
    # Still passed to generate when it runs: replayed, never asked.
    write_config(authored, {**settings, "replay_only": True})
    try:
        forced = snakemake(authored, "--dry-run", "--printshellcmds", "--forcerun", "generate")
    finally:
        write_config(authored, settings)
    commands = [line for line in forced.stdout.splitlines() if "ifaudit generate " in line]
    assert commands and all(" --replay-only " in command for command in commands), forced.stdout


@pytest.mark.e2e
def test_counted_ends_with_one_line_per_run_its_figures_and_whether_it_counts(authored: Path) -> None:
    done = subprocess.run(
        [str(IFAUDIT), "counted", "--results", "results"],
        cwd=authored,
        env=cli_env(authored / "resources"),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [FIRST, SECOND]
    metrics = [row for row in read_csv_rows(authored / "results/metrics.csv") if row["run"] == SECOND]
    primary = metrics[0]
    assert lines[1].startswith(f"{SECOND}: counted; prompt-level strict {100 * float(primary['value']):.2f} [")
    assert lines[1].endswith("(percent, 95 % interval)")


@pytest.mark.e2e
def test_a_dag_whose_runs_do_not_count_shows_each_runs_figures_before_naming_them(
    authored: Path, tmp_path: Path
) -> None:
    from ifaudit.tasks.canary_files import load_canary

    workdir = tmp_path / "work"
    shutil.copytree(authored, workdir, symlinks=True)
    canary = load_canary("ifeval")
    item = next(i for i in canary["items"] if i["key"] == 1122)
    item["strict"][0] = not item["strict"][0]
    (workdir / "tampered.json").write_text(json.dumps(canary))
    settings = yaml.safe_load((workdir / "test.yaml").read_text())
    write_config(workdir, {**settings, "canary": {"ifeval": str(workdir / "tampered.json")}})
    done = snakemake(workdir, check=False)
    assert done.returncode == 1, done.stderr
    ours = [line for line in done.stderr.splitlines() if line.startswith("ifaudit: ")][-4:]
    assert [line.split(":")[1].strip() for line in ours[:2]] == [FIRST, SECOND]
    assert all("does not count (below); prompt-level strict " in line for line in ours[:2]), ours
    assert [line.split(" NOT COUNTED")[0] for line in ours[2:]] == [
        f"ifaudit: error: run {run}" for run in (FIRST, SECOND)
    ]


def read_csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as table:
        return list(csv.DictReader(table))


# --- the same classes on real files, without a DAG ------------------------------------------------

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
PINS = (REPO / "vendor/google_ifeval/pin.toml", REPO / "vendor/infobench/pin.toml")


def _merged(*documents: dict[str, Any]) -> dict[str, Any]:
    from ifaudit.steps.artifact.bundle import merge_config

    config: dict[str, Any] = {}
    for document in documents:
        merge_config(config, json.loads(json.dumps(document)))
    return config


def _project(*documents: dict[str, Any]) -> dict[str, Any]:
    base = [yaml.safe_load((REPO / "config" / name).read_text()) for name in ("config.yaml", "offline.yaml")]
    return _merged(*base, *documents, {"mirror": str(DATA), "nltk_mirror": str(NLTK_MIRROR)})


def test_a_run_set_to_null_is_dropped_and_the_others_keep_the_configs_order(tmp_path: Path) -> None:
    from ifaudit.steps.planning.config_check import validated_plan

    runs = {
        name: {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "gpt4_responses"}
        for name in ("zulu", "alpha")
    }
    config = _project({"runs": {"gpt4_google": None, **runs}})
    jobs = validated_plan(config, {}, SCHEMA, PINS, tmp_path)
    assert list(jobs.runs) == ["zulu", "alpha"] and list(config["runs"]) == ["zulu", "alpha"]
    assert list(jobs.report_plan()["order"]) == ["zulu", "alpha"]


def test_a_config_that_drops_every_run_is_one_line(tmp_path: Path) -> None:
    from ifaudit.core.errors import ConfigError
    from ifaudit.steps.planning.config_check import validated_plan

    with pytest.raises(ConfigError, match=r"every run is dropped \(null: gpt4_google\)"):
        validated_plan(_project({"runs": {"gpt4_google": None}}), {}, SCHEMA, PINS, tmp_path)


def test_a_bundle_of_an_authors_configs_drops_the_null_run_and_cites_the_configured_authors(tmp_path: Path) -> None:
    from ifaudit.steps.artifact.bundle import BundleRequest, configured

    files = [REPO / "config/config.yaml", tmp_path / "author.yaml"]
    files[1].write_text(yaml.safe_dump(author_config("http://127.0.0.1:9/v1"), sort_keys=False))
    chosen = configured(BundleRequest(REPO, tmp_path / "results", tmp_path / "resources", tmp_path / "b", tuple(files)))
    assert list(chosen.runs) == [FIRST, SECOND] and chosen.citation == {"title": TITLE, "authors": AUTHORS}


def _description(runs: list[str]) -> dict[str, Any]:
    grader = {
        "name": "google-research/instruction_following_eval",
        "commit": "5b09c22d73a9d35eb6c5d2a99b95677a45053466",
    }
    return {"project": {"commit": "c0ffee", "date": "2026-12-02T08:00:00+00:00"}, "runs": runs, "grader": grader}


def _graded(runs: tuple[str, ...] = (FIRST, SECOND)) -> dict[str, Any]:
    from ifaudit.steps.reporting.grader_text import run_credit

    return {run: run_credit("ifeval", _summary(run)["grader"]) for run in runs}


def test_the_citation_takes_title_and_authors_from_the_config_and_its_abstract_holds_no_json() -> None:
    from ifaudit.steps.artifact.bundle import citation

    cited = yaml.safe_load(citation(_description([FIRST, SECOND]), {"title": TITLE, "authors": AUTHORS}, _graded()))
    assert cited["title"] == TITLE and cited["authors"] == AUTHORS
    assert "{" not in cited["abstract"]
    assert (
        "instruction_following_eval (https://github.com/google-research/google-research) at commit 5b09c22"
        in cited["abstract"]
    )
    assert f"({FIRST}, {SECOND})" in cited["abstract"]
    unnamed = yaml.safe_load(citation(_description([FIRST]), {}, _graded((FIRST,))))
    assert unnamed["authors"] == [{"name": "the authors"}] and FIRST in unnamed["title"]


def test_a_bundles_manifests_are_read_in_the_runs_bundled_order(tmp_path: Path) -> None:
    from ifaudit.steps.artifact.bundle import read_manifests
    from ifaudit.steps.artifact.bundle_verify import bundled_run_order

    for run in (FIRST, SECOND):
        (tmp_path / "results" / run).mkdir(parents=True)
        (tmp_path / "results" / run / "MANIFEST.json").write_text(json.dumps({"run": run}))
    (tmp_path / "BUNDLE.json").write_text(json.dumps({"runs": [FIRST, SECOND]}))
    manifests = read_manifests(tmp_path / "results", bundled_run_order(tmp_path))
    assert [manifest["run"] for manifest in manifests] == [FIRST, SECOND]


def test_checksums_only_says_what_it_left_out_not_that_nothing_reproduced() -> None:
    from ifaudit.steps.artifact.bundle_verify import verified_line

    result = {
        "root_digest": "sha256:ab",
        "files": 3,
        "manifest_hashes": 2,
        "withheld": [],
        "regraded": [],
        "recomputed": 0,
    }
    line = verified_line(result, expected=True, checksums_only=True)
    assert "not regraded or recomputed" in line and "none" not in line and "0 derived" not in line
    full = verified_line({**result, "regraded": [FIRST, SECOND], "recomputed": 9}, expected=True, checksums_only=False)
    assert f"2 runs regraded byte-identically (both passes): {FIRST}, {SECOND}" in full


def test_verify_bundle_says_which_sha256_is_recomputed_now_and_which_recorded(tmp_path: Path) -> None:
    from ifaudit.core.errors import VerificationError
    from ifaudit.io.archive import checksum_lines, tree_files
    from ifaudit.steps.artifact.bundle_verify import check_checksums

    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "CHECKSUMS.sha256").write_bytes(checksum_lines(tmp_path, tree_files(tmp_path)))
    (tmp_path / "a.txt").write_text("b\n")
    with pytest.raises(
        VerificationError,
        match=r"a\.txt: its bytes now have sha256 [0-9a-f]{64}; CHECKSUMS\.sha256 records [0-9a-f]{64}",
    ):
        check_checksums(tmp_path, ["a.txt"])


def _metrics(runs: list[str]) -> Any:
    from ifaudit.io.formats.table import Table

    rows = [
        {
            "run": run,
            "metric": "prompt_level_strict_acc",
            "prompt_set": "ifeval_prompts",
            "title": "prompt-level strict",
            "value": 0.5,
            "ci_low": 0.4,
            "ci_high": 0.6,
            "correct": 1,
            "total": 2,
        }
        | {"level": 0.95, "interval": "percentile", "resamples": 200, "counted": True}
        for run in runs
    ]
    return Table.of(rows)


def _summary(run: str) -> dict[str, Any]:
    grader = {
        "kind": "upstream",
        "name": "google-research/instruction_following_eval",
        "version": "5b09c22",
        "upstream": True,
    }
    return {"label": run, "task": "ifeval", "prompts": 2, "responses": 2, "counted": True, "grader": grader} | {
        "samples_per_prompt": {"min": 1, "max": 1}
    }


def test_artifact_text_agrees_in_number_and_names_a_log_named_after_its_tool_once() -> None:
    from ifaudit.steps.reporting.paper_artifact import render_artifact

    harness = {"format": "inspect", "tool": {"name": "inspect", "version": None}}
    claims = {
        FIRST: {"harness": harness, "disagreements": [{"key": 1}]},
        SECOND: {"harness": harness, "disagreements": []},
    }
    text = render_artifact({run: _summary(run) for run in (FIRST, SECOND)}, _metrics([FIRST, SECOND]), claims)
    assert "the log of inspect" in text and "inspect log of inspect" not in text
    assert "the 1 verdict on which it differs from the grader is listed with its cause" in text
    assert "none of its verdicts differs from the grader's" in text and "the 0 verdicts" not in text


def test_the_report_plan_lists_imported_runs_claims_in_the_configs_order() -> None:
    from ifaudit.steps.reporting.report import in_run_order

    recorded = {
        "order": [FIRST, SECOND],
        "runs": {SECOND: {}, FIRST: {}},
        "claims": {SECOND: "b.json", FIRST: "a.json"},
    }
    assert list(in_run_order(recorded)["claims"]) == [FIRST, SECOND]


def _disclosed(unicode: str, exposure: dict[str, Any] | None) -> dict[str, Any]:
    return {"python": "3.13.1", "unicode": unicode, "exposure_check": exposure}


def test_the_grading_environment_sentence_names_python_unicode_and_the_exposure_verdict() -> None:
    from ifaudit.steps.reporting.report import grading_environment

    passed = {"version": "15.1.0", "reference": "14.0.0", "passed": True}
    runs = {FIRST: _disclosed("15.1.0", passed), SECOND: _disclosed("15.1.0", {**passed, "passed": False})}
    said = grading_environment({"runs": runs}, str)
    assert said.startswith("Graded on Python 3.13.1 with Unicode 15.1.0, not the reference 14.0.0")
    assert f"passed for {FIRST}; FAILED for {SECOND} (not counted)" in said
    reference = {"version": "14.0.0", "reference": "14.0.0", "passed": True}
    said = grading_environment({"runs": {FIRST: {**_disclosed("14.0.0", reference), "python": "3.11.7"}}}, str)
    assert said == (
        "Graded on Python 3.11.7 with Unicode 14.0.0, the reference database: the exposure check passed for every "
        "run (nothing there differs from the reference)."
    )
    judged = grading_environment({"runs": {FIRST: _disclosed("15.1.0", None)}}, str)
    assert judged == "Graded on Python 3.13.1 with Unicode 15.1.0; judged verdicts, so no exposure check."


def test_make_runs_last_lines_hold_each_runs_figures_in_the_configs_order(tmp_path: Path) -> None:
    from ifaudit.steps.reporting.headlines import headline_lines

    rows = [
        {
            "run": run,
            "title": title,
            "value": value,
            "ci_low": 0.7,
            "ci_high": 0.8,
            "level": 0.95,
            "counted": run == FIRST,
        }
        for run in (FIRST, SECOND)
        for title, value in (("prompt-level strict", 0.75), ("instruction-level strict", 0.8125))
    ]
    (tmp_path / "tables.json").write_text(json.dumps({"metrics": rows}))
    (tmp_path / FIRST).mkdir()
    (tmp_path / FIRST / "summary.json").write_text(json.dumps({"prompts": 541, "missing_prompts": []}))
    assert headline_lines(tmp_path) == [
        f"{FIRST}: counted; prompt-level strict 75.00 [70.00, 80.00], instruction-level strict 81.25 (percent, 95 % interval)",
        f"{SECOND}: does not count (below); prompt-level strict 75.00 [70.00, 80.00], instruction-level strict 81.25 "
        "(percent, 95 % interval)",
    ]
    (tmp_path / SECOND).mkdir()
    (tmp_path / SECOND / "summary.json").write_text(json.dumps({"prompts": 541, "missing_prompts": list(range(341))}))
    assert headline_lines(tmp_path)[1] == (
        f"{SECOND}: does not count (below); 341 of 541 prompts have no response and count as failed; "
        "prompt-level strict 75.00 [70.00, 80.00], instruction-level strict 81.25 (percent, 95 % interval)"
    )


def test_the_reports_claims_name_a_log_named_after_its_tool_once_and_others_with_both_names() -> None:
    """report.md's "Claimed vs audited" and artifact.md name an imported log the same way."""
    from ifaudit.steps.auditing.claims_report import log_source

    assert log_source({"format": "inspect", "tool": {"name": "Inspect"}}) == "log of Inspect"
    named = log_source({"format": "lm-eval", "tool": {"name": "lm-evaluation-harness"}})
    assert named == "lm-eval log of lm-evaluation-harness"
    assert log_source({"format": "a*b", "tool": {"name": "t"}}) == "a&#42;b log of t"
