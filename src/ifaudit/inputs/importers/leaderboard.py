"""The Open LLM Leaderboard's details datasets: lm-eval's logged samples as parquet on the
Hugging Face hub, one dataset per model, a config per task (`<model>__leaderboard_ifeval`), a split
per evaluation time plus `latest`.

The dataset's README declares, in its YAML header, each config's splits and the files of each
(`configs: [{config_name, data_files: [{split, path: [patterns]}]}]`, the hub's own convention);
the split's parquet files are read with pyarrow, in the order of their paths. A local folder laid
out as the hub repository is tried first (its own files: a link is refused, so a hub cache's
snapshot, made of links, is too; `hf download --local-dir` writes files), else the hub at a pinned
revision (through the hub client, into a private cache gone with the step). No `datasets`: it
would bring pandas into the runtime environment, which Snakemake then imports at every start. The
rows are lm-eval sample records, so they are parsed as lm-eval's are.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

from ifaudit.core.errors import InputError
from ifaudit.inputs.importers import lm_eval
from ifaudit.inputs.importers.fields import ImportOptions
from ifaudit.inputs.importers.model import HarnessLog
from ifaudit.io import bounded_yaml
from ifaudit.io.confine import inside, plain_files
from ifaudit.io.paths import open_input

OPTIONS = ("config", "split", "repo", "revision", "published")
README = "README.md"


def read_parquet(path: Path, where: str | None = None) -> list[dict[str, Any]]:
    """A parquet file's rows as plain records (pyarrow, imported here: only a leaderboard import
    needs it). Read on this thread: `read_table` decodes on pyarrow's thread pools, whose threads
    outlive the read, and a process that then exited (a bad document named, exit 2) aborted in
    about one run in five as the interpreter tore them down ("terminate called without an active
    exception", SIGABRT; apache/arrow#34314)."""
    import pyarrow
    import pyarrow.parquet

    with open_input(path) as handle:  # a FIFO or a device is refused, not waited on
        try:
            return pyarrow.parquet.ParquetFile(handle, pre_buffer=False).read(use_threads=False).to_pylist()
        except (pyarrow.ArrowException, OSError) as exc:
            raise InputError(
                f"not a readable parquet file: {exc}".splitlines()[0],
                path=where or path,
                hint="a details split is a parquet file; the log may be truncated",
            ) from None


def _pattern(glob: str) -> re.Pattern[str]:
    """A data_files pattern as the hub matches it against paths in the repository: `**/` any
    folders (none too), `*` and `?` within one path part."""
    parts = re.split(r"(\*\*/|\*\*|\*|\?)", glob)
    wild = {"**/": "(?:[^/]+/)*", "**": ".*", "*": "[^/]*", "?": "[^/]"}
    return re.compile("".join(wild.get(part, re.escape(part)) for part in parts))


def _front_matter(text: str, where: str) -> dict[str, Any]:
    """The README's YAML header (between the first two `---` lines), its aliases' expansion capped."""
    import yaml

    match = re.match(r"---\r?\n(.*?)\r?\n---\r?\n", text, re.DOTALL)
    try:
        header = bounded_yaml.load(match[1]) if match else None
    except (bounded_yaml.TooManyValues, bounded_yaml.DuplicateKey) as exc:
        raise InputError(f"the README's YAML header is refused: {exc}", path=where) from None
    except yaml.YAMLError as exc:
        raise InputError(f"the README's YAML header does not parse ({exc.__class__.__name__})", path=where) from None
    if not isinstance(header, dict) or not isinstance(header.get("configs"), list):
        raise InputError(
            "not a details dataset: its README declares no `configs:` in a YAML header",
            path=where,
            hint="a details dataset's README.md starts with a YAML header listing each config's splits and files",
        )
    return header


def _splits(files: Any) -> dict[str, list[str]]:
    """A config's `data_files` by split: a list of `{split, path}` entries, a mapping of split to
    paths, or bare paths (the hub's one split, `train`)."""
    if isinstance(files, dict):
        entries = [{"split": split, "path": paths} for split, paths in files.items()]
    elif isinstance(files, list) and all(isinstance(item, dict) for item in files):
        entries = files
    else:
        entries = [{"split": "train", "path": files}]
    return {
        str(entry.get("split")): [str(p) for p in ([paths] if isinstance(paths, str) else paths or [])]
        for entry in entries
        for paths in [entry.get("path")]
    }


def _split_files(readme: str, where: str, config: str, split: str) -> list[str]:
    """The data_files patterns of `config`'s `split` in the README's header."""
    configs = _front_matter(readme, where)["configs"]
    declared = {str(entry.get("config_name")): entry for entry in configs if isinstance(entry, dict)}
    if config not in declared:
        names = sorted(declared)
        raise InputError(
            f"cannot load config {config!r} split {split!r}: the README declares no such config "
            f"(it declares {len(names)}: {', '.join(names[:5])}{', …' if len(names) > 5 else ''})",
            path=where,
            hint="name the task's config (e.g. <model>__leaderboard_ifeval)",
        )
    splits = _splits(declared[config].get("data_files"))
    if split not in splits:
        raise InputError(
            f"cannot load config {config!r} split {split!r}: no such split (it has: {', '.join(sorted(splits))})",
            path=where,
            hint="name an existing split, or `latest`",
        )
    return splits[split]


def _matching(paths: list[str], patterns: list[str], where: str, config: str, split: str) -> list[str]:
    compiled = [_pattern(pattern) for pattern in patterns]
    matched = sorted(path for path in paths if any(pattern.fullmatch(path) for pattern in compiled))
    if not matched:
        raise InputError(
            f"cannot load config {config!r} split {split!r}: no file matches {', '.join(patterns)}", path=where
        )
    unreadable = [path for path in matched if not path.endswith(".parquet")]
    if unreadable:
        raise InputError(
            f"config {config!r} split {split!r} is not parquet ({unreadable[0]})",
            path=where,
            hint="a split stored as lm-eval's JSONL sample records is imported with format lm-eval",
        )
    return matched


def folder_rows(folder: Path, config: str, split: str) -> list[dict[str, Any]]:
    """The split's rows from a local folder laid out as the hub repository."""
    # Every file is listed, none read from outside: a link (to a parquet file elsewhere, say) or a
    # FIFO (a reader would block) is refused, as is a folder nested too deep or too full to list.
    paths = plain_files(folder, "the details folder")
    readme = folder / README
    with open_input(readme) as handle:
        text = handle.read().decode("utf-8", errors="replace")
    matched = _matching(paths, _split_files(text, str(readme), config, split), str(folder), config, split)
    return [row for path in matched for row in read_parquet(inside(folder, path, str(folder)))]


def hub_rows(repo: str, revision: str, config: str, split: str) -> list[dict[str, Any]]:
    """The split's rows from the hub repository at `revision`, through a private cache."""
    from huggingface_hub import HfApi, hf_hub_download

    where = f"hf://datasets/{repo}@{revision}"
    with tempfile.TemporaryDirectory(prefix="ifaudit-details-") as cache:

        def fetch(file: str) -> Path:
            return Path(hf_hub_download(repo, file, repo_type="dataset", revision=revision, cache_dir=cache))

        try:
            text = fetch(README).read_text(encoding="utf-8", errors="replace")
            patterns = _split_files(text, f"{where}/{README}", config, split)
            paths = sorted(HfApi().list_repo_files(repo, repo_type="dataset", revision=revision))
            matched = _matching(paths, patterns, where, config, split)
            return [row for path in matched for row in read_parquet(fetch(path), f"{where}/{path}")]
        except InputError:
            raise
        except Exception as exc:  # the hub client raises many types; each means "not read from the hub"
            raise InputError(
                f"cannot read the details from the hub: {type(exc).__name__}: {exc}".splitlines()[0], path=where
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
    published = settings.number("published")
    if path.is_file():
        source, revision = str(path), None
        rows = read_parquet(path)
    else:
        if not config:
            raise InputError(
                "a leaderboard import needs the details config (e.g. <model>__leaderboard_ifeval)",
                field="import.config",
            )
        if path.is_dir():
            source, revision = str(path), None
            rows = folder_rows(path, config, split)
        elif repo is not None:
            if pinned is None:
                raise InputError(
                    "a hub details dataset must be pinned to a revision (a commit hash)", field="import.revision"
                )
            source, revision = repo, pinned
            rows = hub_rows(repo, pinned, config, split)
        else:
            raise InputError("not a folder laid out as a details dataset, and no hub repo given", path=path)
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
        # the leaderboard's IFEval figure as it publishes it: 100 × mean(prompt strict, inst strict)
        composites={} if published is None else {"leaderboard_ifeval": published},
        provenance={
            "source": source,
            "config": config,
            "split": None if path.is_file() else split,
            "revision": revision,
        },
    )
