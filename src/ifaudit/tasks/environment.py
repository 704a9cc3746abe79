"""What an environment is made of, as far as grades can depend on it: no host names, no times."""

from __future__ import annotations

import importlib.metadata
import platform
import unicodedata

from ifaudit.tasks.graders import CheckerRegistry
from ifaudit.core.identity import RECORDED_JUDGE
from ifaudit.io.nltk_data import PunktData
from ifaudit.io.timelimits import time_limits

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
    versions = package_versions()
    return {
        **{name: versions[name] for name in SENSITIVE_PACKAGES},
        "python": platform.python_version(),
        "unicodedata": unicode_version(),
    }


def judged_fingerprint() -> dict[str, object]:
    """A judged task's environment: no checkers; the judge is part of each grade's identity."""
    return {
        "grader": RECORDED_JUDGE.as_record(),
        "packages": package_versions(),
        "python": platform.python_version(),
        "unicodedata": unicode_version(),
    }


def fingerprint(registry: CheckerRegistry, punkt: PunktData) -> dict[str, object]:
    return {
        "grader": {**registry.identity().as_record(), "file_sha256": dict(sorted(registry.file_sha256.items()))},
        "nltk_data": punkt.describe(),
        "packages": package_versions(),
        "python": platform.python_version(),
        "time_limits": time_limits(),
        "unicodedata": unicode_version(),
    }
