"""Print the `--bind` option that lets apptainer jobs see what a configuration names outside the
working folder: the dataset mirror, the NLTK mirror, local grader sources, the judgement store,
canary overrides and datasets given by absolute path. Each is bound read-only at its own path
(the store read-write), so the commands Snakemake builds find them unchanged.

    snakemake --profile profiles/apptainer \\
        --apptainer-args "$(python3 tools/apptainer_binds.py config/config.yaml config/offline.yaml)"

Configuration files merge as Snakemake merges them (later files win, nested keys deep). Paths are
relative to the working folder (the current one, or --directory). Inside it, Snakemake binds
already; folders that do not exist are skipped (apptainer would refuse them)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

import yaml


def merged(files: list[Path]) -> dict:
    def merge(into: dict, update: dict) -> dict:
        for key, value in update.items():
            into[key] = merge(dict(into.get(key) or {}), value) if isinstance(value, dict) else value
        return into

    config: dict = {}
    for path in files:
        try:
            config = merge(config, yaml.safe_load(path.read_text()) or {})
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            where = f"{path}:{mark.line + 1}" if mark else str(path)
            raise SystemExit(f"apptainer_binds: {where}: not valid YAML ({getattr(error, 'problem', error)})") from None
    return config


def named_paths(config: dict) -> Iterator[tuple[str, bool]]:
    """(path, writable) for every local path the configuration names."""
    for key in ("mirror", "nltk_mirror"):
        if config.get(key):
            yield config[key], False
    for source in config.get("grader_sources") or []:
        if "://" not in source:
            yield source, False
    if config.get("judgement_store"):
        yield config["judgement_store"], True
    yield from ((path, False) for path in (config.get("canary") or {}).values())
    yield from ((spec["path"], False) for spec in (config.get("datasets") or {}).values() if "path" in spec)


def binds(config: dict, workdir: Path) -> list[str]:
    workdir = workdir.resolve()
    found: dict[Path, bool] = {}
    for name, writable in named_paths(config):
        path = (workdir / name).resolve()
        if path.exists() and not path.is_relative_to(workdir):
            found[path] = found.get(path, False) or writable
    # A path inside another bound path needs no bind of its own.
    kept = [p for p in sorted(found) if not any(p != q and p.is_relative_to(q) for q in found)]
    return [f"{p}:{p}:{'rw' if found[p] else 'ro'}" for p in kept]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configfiles", nargs="+", type=Path)
    parser.add_argument("--directory", type=Path, default=Path.cwd(), help="Snakemake's working folder")
    args = parser.parse_args(argv)
    for path in args.configfiles:
        if not path.is_file():
            print(f"apptainer_binds: {path}: file not found", file=sys.stderr)
            return 2
    found = binds(merged(args.configfiles), args.directory)
    print(f"--bind {','.join(found)}" if found else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
