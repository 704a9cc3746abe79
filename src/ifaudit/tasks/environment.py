"""What an environment is made of, as far as grades can depend on it: no host names, no times.

A grading environment's fingerprint holds only what can change a verdict of its grader: the
grader's files (file_sha256: its code, the driver's and, for our registries, their import
closure), the distributions that code imports (the registry's `distributions`, read from those
imports), Python's version and Unicode database, the NLTK data and the libraries' time limits.
Two grading processes whose fingerprints differ cannot share one canary verdict; anything that
would differ without changing a verdict (numpy, Snakemake, a stand-in installed but not grading)
would fail runs for nothing, so it is not there.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import platform
import unicodedata
from pathlib import Path

from ifaudit.tasks.graders import CheckerRegistry, verdict_distributions
from ifaudit.tasks.unicode_exposure import exposure_sha256
from ifaudit.core.identity import RECORDED_JUDGE
from ifaudit.io.remote.nltk_data import PunktData
from ifaudit.io.timelimits import time_limits

# What the manifest records of the software that made the outputs (not the grading fingerprint).
PACKAGES = ("ifaudit", "absl-py", "langdetect", "nltk", "immutabledict", "regex", "if-verifiable", "numpy", "snakemake")


# What the outputs beyond the grades depend on: the PNG plots' bytes are Pillow's (the manifest
# names it; the grading fingerprint does not, grades being independent of it).
OUTPUT_PACKAGES = ("pillow",)


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


# What the canary's sentinels are sensitive to (docs/environment_sensitivity.md): named in its record.
SENSITIVE_PACKAGES = ("nltk", "regex", "langdetect")


def unicode_version() -> str:
    """The Unicode database of this Python (str.isupper, isalpha, `re`'s \\w): 14.0.0 on 3.11, 15.1.0 on 3.13."""
    return unicodedata.unidata_version


def sensitive_versions() -> dict[str, str]:
    versions = package_versions(SENSITIVE_PACKAGES)
    return {
        **{name: versions[name] for name in SENSITIVE_PACKAGES},
        "python": platform.python_version(),
        "unicodedata": unicode_version(),
    }


# The code that turns a judge's recorded answers into verdicts (the judge itself is part of each
# grade's identity, not of the environment).
JUDGED_VERDICT_MODULES = ("ifaudit.judging.infobench", "ifaudit.judging.judge_protocol")


def judged_distributions() -> tuple[str, ...]:
    """The distributions the judged verdicts' code imports (none today: it is all ifaudit's)."""
    files = [Path(importlib.import_module(name).__file__ or "") for name in JUDGED_VERDICT_MODULES]
    return verdict_distributions(files)


def judged_fingerprint() -> dict[str, object]:
    """A judged task's environment: no checkers; the judge is part of each grade's identity."""
    return {
        "grader": RECORDED_JUDGE.as_record(),
        "packages": package_versions(judged_distributions()),
        "python": platform.python_version(),
        "unicodedata": unicode_version(),
    }


def fingerprint(registry: CheckerRegistry, punkt: PunktData) -> dict[str, object]:
    """What can change a verdict of `registry` in this process (see the module's docstring)."""
    return {
        "grader": {**registry.identity().as_record(), "file_sha256": dict(sorted(registry.file_sha256.items()))},
        "nltk_data": punkt.describe(),
        "packages": package_versions(registry.distributions),
        "python": platform.python_version(),
        "time_limits": time_limits(),
        "unicodedata": unicode_version(),
        # The exposure sets a run's summary checks its texts against when this Unicode database is
        # not the reference one (ifaudit.tasks.unicode_exposure).
        "unicodedata_exposure": exposure_sha256(),
    }
