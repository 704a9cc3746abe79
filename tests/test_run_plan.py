"""The run plan is one thing: every `ifaudit` command the DAG would run is the job the package's
plan (ifaudit.steps.planning.jobs.RunPlan) gives for it, and the config is checked by the package."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from pathlib import Path

import pytest
import yaml

from conftest import DATA, NLTK_MIRROR, REPO, UPSTREAM_SOURCE
from ifaudit.core.errors import ConfigError
from ifaudit.steps.planning import plan
from ifaudit.steps.artifact.bundle import environment_lock, merge_config
from ifaudit.steps.planning.config_check import validated_plan
from ifaudit.steps.planning.jobs import RunPlan

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
PINS = (REPO / plan.GRADER_PIN, REPO / plan.INFOBENCH_PIN)
# Two runs beside the default one, neither in alphabetical order nor in one shard.
EXTRA = {
    "shards": 2,
    "runs": {
        "zeta_halves": {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "gpt4_responses"},
        "alpha_langcheck": {
            "task": "ifeval_langcheck",
            "prompts": "ifeval_prompts_github",
            "responses": "gpt4_responses",
            "label": "GPT-4, language-checked",
        },
    },
}
OVERRIDES = {"mirror": str(DATA), "nltk_mirror": str(NLTK_MIRROR), "grader_sources": [UPSTREAM_SOURCE]}


def merged(*documents: dict) -> dict:
    config: dict = {}
    for document in documents:
        merge_config(config, json.loads(json.dumps(document)))
    return config


def project_config(extra: dict, workdir: Path) -> RunPlan:
    base = [yaml.safe_load((REPO / "config" / name).read_text()) for name in ("config.yaml", "offline.yaml")]
    return validated_plan(merged(*base, extra, OVERRIDES), OVERRIDES, SCHEMA, PINS, workdir)


def test_config_mistakes_are_the_packages_one_line(tmp_path: Path) -> None:
    cases = [
        ({"comparisons": [["gpt4_googl", "gpt4_google"]]}, "comparisons.0", "did you mean 'gpt4_google'?"),
        (
            {"runs": {"x": {"task": "ifeval", "prompts": "ifeval_prompts_gitub", "responses": "gpt4_responses"}}},
            "runs.x.prompts",
            "did you mean 'ifeval_prompts_github'?",
        ),
        ({"runs": {"x": {"task": "ifevl", "prompts": "p", "responses": "r"}}}, "runs.x.task", "did you mean 'ifeval'?"),
        ({"shardz": 2}, "shardz", "unknown key; did you mean 'shards'?"),
        (
            {"runs": {"x": {"task": "infobench", "prompts": "ifeval_prompts_github", "responses": "gpt4_responses"}}},
            "runs.x",
            "a judged task needs exactly one of `judge` or `judgements`",
        ),
    ]
    for extra, where, words in cases:
        with pytest.raises(ConfigError) as raised:
            project_config(extra, tmp_path)
        assert raised.value.where == where, str(raised.value)
        assert words in str(raised.value), str(raised.value)
        assert str(raised.value).startswith(f"config: {where}: ")


def test_a_config_that_passed_the_schema_is_remembered_by_its_bytes_and_no_other(tmp_path: Path) -> None:
    """A Snakemake start with the config of an earlier one skips jsonschema (its import is 0.1-0.2 s
    of every no-op); any other config, a mistake above all, is checked, and a mistake leaves no stamp."""
    base = [yaml.safe_load((REPO / "config" / name).read_text()) for name in ("config.yaml", "offline.yaml")]
    passed = tmp_path / "passed"
    validated_plan(merged(*base, OVERRIDES), OVERRIDES, SCHEMA, PINS, tmp_path, passed)
    [stamp] = passed.iterdir()
    validated_plan(merged(*base, OVERRIDES), OVERRIDES, SCHEMA, PINS, tmp_path, passed)
    assert list(passed.iterdir()) == [stamp]
    with pytest.raises(ConfigError, match="unknown key; did you mean 'shards'"):
        validated_plan(merged(*base, {"shardz": 2}, OVERRIDES), OVERRIDES, SCHEMA, PINS, tmp_path, passed)
    assert list(passed.iterdir()) == [stamp]


def test_booleans_from_the_command_line_are_read_as_yaml_reads_them(tmp_path: Path) -> None:
    base = [yaml.safe_load((REPO / "config" / name).read_text()) for name in ("config.yaml", "offline.yaml")]
    given = {**OVERRIDES, "offline": "TRUE", "replay_only": "false"}
    jobs = validated_plan(merged(*base, given), given, SCHEMA, PINS, tmp_path)
    assert jobs.config["offline"] is True and jobs.config["replay_only"] is False


@pytest.mark.e2e
def test_every_command_of_the_dag_is_the_plans_job(tmp_path: Path) -> None:
    from test_workflow import snakemake, write_config

    write_config(tmp_path, EXTRA)
    done = snakemake(tmp_path, "-n", "-p", "--forceall")
    commands = [line.removeprefix("Shell command: ") for line in done.stdout.splitlines() if "ifaudit " in line]
    jobs = project_config(EXTRA, tmp_path)
    runs = list(jobs.runs)
    assert {"zeta_halves", "alpha_langcheck", "gpt4_google"} == set(runs)
    expected = [jobs.vendor_job(task) for task in sorted({jobs.task(run) for run in runs})]
    expected += [jobs.fetch_job(name) for name in sorted({n for run in runs for n in jobs.run_datasets(run)})]
    for run in runs:
        expected += [jobs.grade_job(run, pass_, shard, 2) for pass_ in plan.PASS_HASH_SEEDS for shard in range(2)]
        expected += [jobs.verify_job(run, 2), jobs.summarize_job(run), jobs.stats_job(run), jobs.manifest_job(run)]
    expected += [jobs.compare_many_job(job) for job in jobs.comparison_jobs()]
    planned = {shlex.join(job) for job in expected}
    seen_report = False
    ran = set()
    for command in commands:
        command = re.sub(r" > \S+ 2>&1$", "", command)
        command = re.sub(r"^PYTHONHASHSEED=\d ", "", command)
        argv = shlex.split(command)
        assert argv[0] == "ifaudit", command
        if argv[1] == "report":
            staged = tmp_path / argv[argv.index("--plan") + 1]  # staged by the dry run, named by its sha256
            assert hashlib.sha256(staged.read_bytes()).hexdigest() == argv[argv.index("--plan-sha256") + 1]
            recorded = json.loads(staged.read_bytes())
            assert recorded["runs"] == jobs.report_plan()["runs"] and set(recorded["order"]) == set(runs)
            seen_report = True
        elif argv[1] not in ("combine-canaries", "combine-audits"):
            ran.add(shlex.join(argv[1:]))
    assert seen_report
    assert ran == planned, (sorted(ran - planned)[:3], sorted(planned - ran)[:3])
    # the linear default: the ifeval run against its task's first run; langcheck is another task
    assert jobs.comparisons() == [("gpt4_google", "zeta_halves")]


def test_settings_from_the_environment_are_named_in_the_manifest_and_credentials_never(monkeypatch) -> None:
    from ifaudit.steps.grading.manifest import build_manifest

    monkeypatch.setenv("IFAUDIT_NLTK_MIRROR", "/some/mirror")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-a-secret-value")
    manifest = build_manifest("r", {}, {}, {})
    assert manifest["environment_variables"] == {"IFAUDIT_NLTK_MIRROR": "/some/mirror"}
    assert "sk-a-secret-value" not in json.dumps(manifest)


def test_environment_variables_are_read_in_one_module() -> None:
    """Only ifaudit.io.variables reads the environment for a setting (others name a variable in
    their words only); a new variable is added there, and so reaches the manifest."""
    readers = []
    for path in sorted((REPO / "src" / "ifaudit").rglob("*.py")):
        if path.name == "variables.py":
            continue
        text = path.read_text(encoding="utf-8")
        if re.search(r"os\.environ\.get|os\.getenv|os\.environ\[", text) or re.search(r'"IFAUDIT_[A-Z_]+"', text):
            readers.append(path.relative_to(REPO).as_posix())
    assert readers == []


def test_a_bundle_names_the_runtime_lock_for_a_reviewer_and_the_stand_ins_when_a_run_used_it() -> None:
    """The lock docs/reviewers.md installs: never the development lock (test and lint tools); the
    stand-in's as soon as one run was graded by the registry stand-in, whose package it needs."""
    upstream, stand_in = ({"config": {"settings": {"grader": grader}}} for grader in ("upstream", "stand-in"))
    assert environment_lock([upstream, upstream]) == "project/requirements-runtime.lock"
    assert environment_lock([upstream, stand_in]) == "project/requirements-stand-in.lock"
    for lock in (environment_lock([upstream]), environment_lock([stand_in])):
        assert (REPO / lock.removeprefix("project/")).is_file()
    stand_in_lock = (REPO / "requirements-stand-in.lock").read_text()
    assert (
        "\nif-verifiable==" in stand_in_lock
        and "\nif-verifiable==" not in (REPO / "requirements-runtime.lock").read_text()
    )


def test_an_evalscope_import_names_its_report_and_task_config_as_datasets(tmp_path: Path) -> None:
    """evalscope's import reads two files besides its log (the report, the task config): both are
    datasets the run needs, handed to the importer as their files, and a misnamed one is refused."""
    logs = REPO / "tests" / "data" / "harness_logs" / "evalscope"
    datasets = {
        "es_reviews": {"path": str(logs / "reviews" / "gpt-4-0613-replay" / "ifeval_default.jsonl")},
        "es_report": {"path": str(logs / "reports" / "gpt-4-0613-replay" / "ifeval.json")},
        "es_config": {"path": str(logs / "configs" / "task_config.yaml")},
    }
    run = {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "es_reviews"}
    settings = {"format": "evalscope", "results": "es_report", "task_config": "es_config"}
    jobs = project_config({"datasets": datasets, "runs": {"es": {**run, "import": settings}}}, tmp_path)
    assert {"es_report", "es_config", "es_reviews"} <= set(jobs.run_datasets("es"))
    given = json.loads(jobs.import_settings("es")[3])
    assert given == {"results": plan.dataset_file("es_report"), "task_config": plan.dataset_file("es_config")}
    misnamed = {"runs": {"es": {**run, "import": {**settings, "task_config": "es_conf"}}}, "datasets": datasets}
    with pytest.raises(ConfigError) as raised:
        project_config(misnamed, tmp_path)
    assert raised.value.where == "runs.es.import.task_config" and "did you mean 'es_config'?" in str(raised.value)
