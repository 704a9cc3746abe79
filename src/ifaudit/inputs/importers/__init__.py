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

from ifaudit.inputs.importers import generic_jsonl, inspect_log, leaderboard, lm_eval, openai_batch
from ifaudit.inputs.importers.model import HarnessLog

Reader = Callable[[Path, dict[str, Any]], HarnessLog]

FORMATS: dict[str, Reader] = {
    "lm-eval": lm_eval.read,
    "leaderboard": leaderboard.read,
    "inspect": inspect_log.read,
    "openai-batch": openai_batch.read,
    "jsonl": generic_jsonl.read,
}
