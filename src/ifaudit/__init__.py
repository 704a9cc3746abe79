"""ifaudit: audit-grade, byte-reproducible replication of instruction-following scores.

`ifaudit.__version__` is the version of the source that is running: the one its pyproject.toml
declares where the source sits in a checkout or a bundle's project/ (a bundle's code run from
another installation reports its own), else the installed distribution's metadata.
`ifaudit.source_commit()` adds the git commit of a checkout, for manifests and `--version` only:
a commit is not part of any compared output.
"""

from __future__ import annotations

import functools
from pathlib import Path

_PROJECT = Path(__file__).resolve().parents[2]
_DISTRIBUTION = "ifaudit"


@functools.cache
def _version() -> str:
    pyproject = _PROJECT / "pyproject.toml"
    if pyproject.is_file():
        import tomllib

        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
        if project.get("name") == _DISTRIBUTION and isinstance(project.get("version"), str):
            return project["version"]
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(_DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"


@functools.cache
def source_commit() -> str | None:
    """The commit of the checkout this source runs from (with `+dirty` when it has changes), or None."""
    if not (_PROJECT / ".git").exists():
        return None
    import subprocess  # here: every command imports the package, few ask for the commit

    try:
        head = subprocess.run(
            ["git", "-C", str(_PROJECT), "describe", "--always", "--dirty=+dirty", "--abbrev=40", "--exclude=*"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() or None if head.returncode == 0 else None


def __getattr__(name: str) -> str:
    """`__version__`, read when first asked for (not at every import of the package)."""
    if name == "__version__":
        return _version()
    raise AttributeError(f"module 'ifaudit' has no attribute {name!r}")
