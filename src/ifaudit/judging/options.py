"""The judge's settings as command-line options, from one rule."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def judge_options(judge: Mapping[str, Any], protocol: Mapping[str, Any]) -> list[str]:
    """A run's `judge` block and its resolved protocol as the options of `ifaudit judge` and
    `grade`, which build the JudgeSettings from them: each setting of the block is its
    `--judge-<key>` option, so a config, the command line and a bundle's replay name the same
    settings in the same words. The workflow writes its rules' options with it too, at parse
    time, so this module imports nothing beyond the standard library."""
    options = []
    for key, value in judge.items():
        if key not in ("protocol", "infobench_version"):  # resolved into `protocol`
            options += [f"--judge-{key.replace('_', '-')}", str(value)]
    options += ["--judge-protocol", protocol["protocol"]]
    if "infobench_version" in protocol:
        options += ["--infobench-version", protocol["infobench_version"]]
    return options
