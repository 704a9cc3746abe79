"""The Open LLM Leaderboard's details datasets: lm-eval's logged samples as parquet on the
Hugging Face hub, one dataset per model, a config per task (`<model>__leaderboard_ifeval`), a split
per evaluation time plus `latest`.

Read with `datasets.load_dataset`, from a local folder laid out as the hub repository (tried
first) or from the hub at a pinned revision. The rows are lm-eval sample records, so they are
parsed as lm-eval's are.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from ifaudit.core.errors import InputError
from ifaudit.inputs.importers import lm_eval
from ifaudit.inputs.importers.fields import ImportOptions
from ifaudit.inputs.importers.model import HarnessLog
from ifaudit.io.paths import check_tree

OPTIONS = ("config", "split", "repo", "revision")


def load_rows(
    source: str, config: str | None, split: str, revision: str | None, data_files: str | None = None
) -> list[dict[str, Any]]:
    """The split's rows, through `datasets` (the one call for a local folder, the hub and a
    single parquet file)."""
    try:
        import datasets
    except ImportError:
        raise InputError(
            "reading a details dataset needs `datasets`, which this environment (the lean runtime image) lacks",
            path=source,
            hint="import it from the full environment (requirements.lock)",
        ) from None
    datasets.disable_progress_bars()  # an error stays one line; the import step says what it read
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)
    try:
        # A private cache, gone with the step: nothing is left under ~/.cache by an import.
        with tempfile.TemporaryDirectory(prefix="ifaudit-details-") as cache:
            table = datasets.load_dataset(
                source,
                name=config,
                split=split,
                revision=revision,
                cache_dir=cache,
                **({"data_files": data_files} if data_files else {}),
            )
            return list(table)
    except (FileNotFoundError, ValueError, datasets.exceptions.DatasetGenerationError) as exc:
        what = "not a readable parquet file" if data_files else f"cannot load config {config!r} split {split!r}"
        raise InputError(
            f"{what}: {exc}".splitlines()[0],
            path=data_files or source,
            hint="name the task's config (e.g. <model>__leaderboard_ifeval) and an existing split"
            if not data_files
            else "a details split is a parquet file; the log may be truncated",
        ) from None


def config_model(config: str) -> str | None:
    """The model a details config names: `meta-llama__Llama-3.1-8B__leaderboard_ifeval` is
    `meta-llama/Llama-3.1-8B` (the rows themselves do not name it)."""
    model, _, task = config.rpartition("__")
    return model.replace("__", "/") if model and task else None


def read(path: Path, options: dict[str, Any]) -> HarnessLog:
    """`path`: a local folder laid out as the details repository; or one split's parquet file (as
    the workflow fetches it from the hub with `hf: {repo, revision, file}`); or, with
    `options["repo"]` and no folder, the hub repository at `options["revision"]`, which must be
    pinned."""
    settings = ImportOptions.of(options, "leaderboard", OPTIONS)
    config, split = settings.text("config"), settings.text_or("split", "latest")
    repo, pinned = settings.text("repo"), settings.text("revision")
    if path.is_file():
        source, revision = str(path), None
        rows = load_rows("parquet", None, "train", None, data_files=str(path))
    else:
        if not config:
            raise InputError(
                "a leaderboard import needs the details config (e.g. <model>__leaderboard_ifeval)",
                field="import.config",
            )
        if path.is_dir():
            check_tree(path)  # `datasets` reads every file it finds: a FIFO among them would block it
            source, revision = str(path), None
        elif repo is not None:
            if pinned is None:
                raise InputError(
                    "a hub details dataset must be pinned to a revision (a commit hash)", field="import.revision"
                )
            source, revision = repo, pinned
        else:
            raise InputError("not a folder laid out as a details dataset, and no hub repo given", path=path)
        rows = load_rows(source, config, split, revision)
    where = source if path.is_file() else f"{source}[{config}/{split}]"
    samples = []
    for index, row in enumerate(rows):
        samples.extend(lm_eval.sample_from_record(row, f"{where}:{index + 1}"))
    log = lm_eval.from_parts(samples, None, source, format_name="leaderboard")
    return HarnessLog(
        format=log.format,
        tool={"name": "Open LLM Leaderboard details (lm-eval)", "version": None},
        task=config or "ifeval",
        model=log.model or (config_model(config) if config else None),
        samples=log.samples,
        reported={},
        provenance={
            "source": source,
            "config": config,
            "split": None if path.is_file() else split,
            "revision": revision,
        },
    )
