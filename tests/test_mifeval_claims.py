"""config/mifeval.yaml: M-IFEval's published leaderboard as claims. Every `published:` figure is
instruction-level strict of upstream's committed verdicts for the run's model and language,
rounded to 0.1 (the README's table), and each run reads that model's committed response file."""

from __future__ import annotations

import yaml

from conftest import REPO, SHARED, read_jsonl

MIFEVAL = SHARED / "data" / "mifeval"
CONFIG = yaml.safe_load((REPO / "config" / "mifeval.yaml").read_text(encoding="utf-8"))
DATASETS = yaml.safe_load((REPO / "config" / "config.yaml").read_text(encoding="utf-8"))["datasets"]
TASKS = {"fr": "mifeval_fr", "ja": "mifeval_ja", "en": "ifeval"}


def committed_inst_strict(mirror_path: str) -> tuple[int, int]:
    """(followed, instructions) of the committed strict verdicts of a response file."""
    folder = MIFEVAL / "evaluations" / mirror_path.removeprefix("mifeval/data/").removesuffix(".jsonl")
    rows = read_jsonl(folder / "eval_results_strict.verdicts.jsonl")
    verdicts = [verdict for row in rows for verdict in row["follow_instruction_list"]]
    return sum(verdicts), len(verdicts)


def test_every_published_figure_is_the_committed_verdicts_instruction_level_strict_rounded() -> None:
    runs = {name: spec for name, spec in CONFIG["runs"].items() if spec is not None}
    assert len(runs) == 15
    for name, spec in runs.items():
        language = name.split("_")[1]
        assert spec["task"] == TASKS[language] and spec["prompts"] == f"mifeval_{language}_prompts"
        followed, total = committed_inst_strict(DATASETS[spec["responses"]]["mirror"])
        assert spec["published"]["inst_level_strict_acc"] == round(round(100 * followed / total, 1) / 100, 4), name
        assert set(spec["published"]) <= {"source", "note", "inst_level_strict_acc"}


def test_a_spanish_run_is_refused_when_the_config_is_checked_in_one_line(tmp_path) -> None:
    from test_run_plan import project_config

    from ifaudit.core.errors import ConfigError

    run = {"task": "mifeval_es", "prompts": "mifeval_es_prompts", "responses": "mifeval_fr_gpt4o"}
    try:
        project_config({"runs": {"es_gpt4o": run}}, tmp_path)
    except ConfigError as refused:
        message = str(refused)
    else:
        raise AssertionError("a mifeval_es run was accepted")
    assert message.startswith(
        "config: runs.es_gpt4o.task: task mifeval_es needs spaCy's es_core_news_sm and xx_sent_ud_sm"
    )
    assert "\n" not in message
