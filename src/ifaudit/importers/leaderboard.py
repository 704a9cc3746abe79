"""The Open LLM Leaderboard's details datasets: lm-eval's logged samples as parquet on the
Hugging Face hub, one dataset per model, a config per task (`<model>__leaderboard_ifeval`), a split
per evaluation time plus `latest`.

Read with `datasets.load_dataset`, from a local folder laid out as the hub repository (tried
first) or from the hub at a pinned revision. The rows are lm-eval sample records, so they are
parsed as lm-eval's are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ifaudit.errors import InputError
from ifaudit.importers import lm_eval
from ifaudit.importers.model import HarnessLog


def load_rows(source: str, config: str, split: str, revision: str | None) -> list[dict[str, Any]]:
    """The split's rows, through `datasets` (the one call for a local folder and the hub)."""
    import datasets

    datasets.disable_progress_bars()  # an error stays one line; the import step says what it read
    datasets.logging.set_verbosity_error()
    try:
        table = datasets.load_dataset(source, name=config, split=split, revision=revision)
    except (FileNotFoundError, ValueError) as exc:
        raise InputError(f"cannot load config {config!r} split {split!r}: {exc}".splitlines()[0], path=source,
                         hint="name the task's config (e.g. <model>__leaderboard_ifeval) and an existing split") from None
    return list(table)


def config_model(config: str) -> str | None:
    """The model a details config names: `meta-llama__Llama-3.1-8B__leaderboard_ifeval` is
    `meta-llama/Llama-3.1-8B` (the rows themselves do not name it)."""
    model, _, task = config.rpartition("__")
    return model.replace("__", "/") if model and task else None


def read(path: Path, options: dict[str, Any]) -> HarnessLog:
    """`path`: a local folder laid out as the details repository, or (with `options["repo"]` and
    no folder) the hub repository at `options["revision"]`, which must be pinned."""
    config = options.get("config")
    if not config:
        raise InputError("a leaderboard import needs the details config (e.g. <model>__leaderboard_ifeval)",
                         field="import.config")
    split = options.get("split", "latest")
    if path.is_dir():
        source, revision = str(path), None
    elif options.get("repo"):
        if not options.get("revision"):
            raise InputError("a hub details dataset must be pinned to a revision (a commit hash)",
                             field="import.revision")
        source, revision = options["repo"], options["revision"]
    else:
        raise InputError("not a folder laid out as a details dataset, and no hub repo given", path=path)
    rows = load_rows(source, config, split, revision)
    samples = []
    for index, row in enumerate(rows):
        samples.extend(lm_eval.sample_from_record(row, f"{source}[{config}/{split}]:{index + 1}"))
    log = lm_eval.from_parts(samples, None, source, format_name="leaderboard")
    return HarnessLog(format=log.format, tool={"name": "Open LLM Leaderboard details (lm-eval)", "version": None},
                      task=config, model=log.model or config_model(config), samples=log.samples, reported={},
                      provenance={"source": source, "config": config, "split": split, "revision": revision})
