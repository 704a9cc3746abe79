"""Importers: a harness's log turned into ifaudit's inputs.

Each format module reads one kind of log and returns a `HarnessLog`: every response the harness
generated with its (key, sample) identity, the harness's own per-response verdicts where it
recorded them, its reported aggregates and its provenance. `FORMATS` is the one registry of
formats; the CLI and the workflow read it, nothing else names a format.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ifaudit.inputs.importers.model import HarnessLog

Reader = Callable[[Path, dict[str, Any]], HarnessLog]
# Import settings that name a file of the run besides its log (in a workflow: a dataset's name)
FILE_SETTINGS = ("results", "task_config")


def __getattr__(name: str) -> dict[str, Reader]:
    """`FORMATS`, made when first asked for: the report reads importers.model's metric names, and
    importing this package for them must not import every format's reader (YAML's parser, the
    archives': ≈ 40 ms of the report's process)."""
    if name != "FORMATS":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ifaudit.inputs.importers import (
        evalscope,
        generic_jsonl,
        inspect_log,
        leaderboard,
        lighteval,
        lm_eval,
        openai_batch,
        opencompass,
    )

    formats: dict[str, Reader] = {
        "lm-eval": lm_eval.read,
        "leaderboard": leaderboard.read,
        "inspect": inspect_log.read,
        "openai-batch": openai_batch.read,
        "jsonl": generic_jsonl.read,
        "lighteval": lighteval.read,
        "evalscope": evalscope.read,
        "opencompass": opencompass.read,
    }
    globals()["FORMATS"] = formats
    return formats
