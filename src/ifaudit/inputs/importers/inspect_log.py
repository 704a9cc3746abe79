"""UK AISI inspect logs: `.eval` (a zip: `header.json` and one `samples/<id>_epoch_<n>.json` per
sample) and `.json` (the same log as one document, samples inline).

inspect_evals' IFEval scorer records per response how many instructions were followed
(`inst_level_strict`, `inst_level_loose`: counts), whether all were (`prompt_level_*`), and
`num_instructions`; not which ones. Its verdicts are imported as those counts. Epochs are
samples: epoch 1 is sample 0.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any, BinaryIO

from ifaudit.core.errors import InputError
from ifaudit.io.paths import open_input
from ifaudit.inputs.importers.model import HarnessLog, HarnessSample, one_model, unique_samples

SCORE_FIELDS = {"strict": "inst_level_strict", "loose": "inst_level_loose"}
REPORTED = {
    "prompt_strict_acc": "prompt_level_strict_acc",
    "inst_strict_acc": "inst_level_strict_acc",
    "prompt_loose_acc": "prompt_level_loose_acc",
    "inst_loose_acc": "inst_level_loose_acc",
}


def _json(data: bytes, where: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"malformed JSON ({exc.__class__.__name__}); the log may be truncated", path=where) from None


ZSTANDARD = 93  # zip's method number for zstd, which inspect writes and Python < 3.14 cannot read


def _zstd_codec(path: Path) -> Any:
    """pyarrow's zstd codec (there with `datasets` in the full environment); the lean runtime
    image has no pyarrow, and a clear line says what to do instead of a traceback."""
    try:
        import pyarrow
    except ImportError:
        raise InputError(
            "inspect writes .eval members zstd-compressed, and reading them needs pyarrow, which this "
            "environment lacks",
            path=path,
            hint="import the log from the full environment (requirements.lock), or convert it first "
            "with `inspect log convert --to json`",
        ) from None
    return pyarrow


def _member(archive: zipfile.ZipFile, path: Path, name: str) -> bytes:
    """A member's bytes; zstd members are decompressed with pyarrow's codec, read raw from the
    member's offset in the archive (Python's zipfile reads zstd only from 3.14 on)."""
    info = archive.getinfo(name)
    if info.compress_type != ZSTANDARD:
        return archive.read(name)
    pyarrow = _zstd_codec(path)

    with open_input(path) as handle:
        handle.seek(info.header_offset)
        local = handle.read(30)
        if local[:4] != b"PK\x03\x04":
            raise InputError(f"member {name} has no local header; the archive is damaged", path=path)
        handle.seek(
            info.header_offset + 30 + int.from_bytes(local[26:28], "little") + int.from_bytes(local[28:30], "little")
        )
        raw = handle.read(info.compress_size)
    try:
        return pyarrow.Codec("zstd").decompress(raw, decompressed_size=info.file_size).to_pybytes()
    except (OSError, pyarrow.ArrowException) as exc:
        raise InputError(f"member {name} does not decompress ({exc}); the log may be truncated", path=path) from None


def _documents(path: Path) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    """The log's header and its samples, from either file format."""
    with open_input(path) as handle:  # a FIFO or a device is refused, not waited on or read forever
        is_zip = handle.read(4) == b"PK\x03\x04"
        handle.seek(0)
        return _archive(path, handle) if is_zip else _json_log(path, handle.read())


def _json_log(path: Path, data: bytes) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    log = _json(data, str(path))
    if not isinstance(log, dict) or not isinstance(log.get("samples"), list):
        raise InputError(
            "not an inspect log: no 'samples' list (written with --no-log-samples?)", path=path, field="samples"
        )
    return log, [(f"{path}:samples[{i}]", s) for i, s in enumerate(log["samples"])]


def _archive(path: Path, handle: BinaryIO) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    try:
        with zipfile.ZipFile(handle) as archive:
            names = sorted(n for n in archive.namelist() if n.startswith("samples/") and n.endswith(".json"))
            header = _json(_member(archive, path, "header.json"), f"{path}!header.json")
            samples = [(f"{path}!{name}", _json(_member(archive, path, name), f"{path}!{name}")) for name in names]
    except (zipfile.BadZipFile, EOFError) as exc:
        raise InputError(f"not a readable .eval archive ({exc}); the log may be truncated", path=path) from None
    except KeyError as exc:
        raise InputError(f"not an inspect log: {exc.args[0]}", path=path) from None
    return header, samples


def _text(sample: dict[str, Any], where: str) -> str:
    output = sample.get("output")
    choices = output.get("choices") if isinstance(output, dict) else None
    if not isinstance(choices, list) or not choices:
        raise InputError("missing: the sample has no generated output", path=where, field="output.choices")
    content = choices[0].get("message", {}).get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"
        )
    raise InputError("expected text content", path=where, field="output.choices[0].message.content")


def _counts(sample: dict[str, Any], where: str) -> dict[str, list[bool]]:
    """The scorer's counts as verdict lists (followed first): the sums are the harness's, the
    order carries no meaning."""
    scores = sample.get("scores")
    if not isinstance(scores, dict) or not scores:
        raise InputError("missing: the sample was not scored", path=where, field="scores")
    value = next(iter(scores.values())).get("value")
    if not isinstance(value, dict) or "num_instructions" not in value:
        raise InputError(
            "is not an IFEval score (no num_instructions); this log is of another task", path=where, field="scores"
        )
    total = int(value["num_instructions"])
    counts = {}
    for mode, name in SCORE_FIELDS.items():
        if name not in value:
            raise InputError("missing", path=where, field=f"scores.{name}")
        followed = int(value[name])
        counts[mode] = [True] * followed + [False] * (total - followed)
    return counts


def _reported(header: dict[str, Any]) -> dict[str, float]:
    results = header["results"] if isinstance(header.get("results"), dict) else {}
    found = {}
    for score in results.get("scores", []) or []:
        for name, metric in (score.get("metrics") or {}).items():
            if name in REPORTED and isinstance(metric, dict) and isinstance(metric.get("value"), int | float):
                found[REPORTED[name]] = float(metric["value"])
    return found


def read(path: Path, options: dict[str, Any]) -> HarnessLog:
    header, documents = _documents(path)
    spec = header["eval"] if isinstance(header.get("eval"), dict) else {}
    samples = []
    for where, sample in documents:
        if not isinstance(sample, dict) or "id" not in sample:
            raise InputError("missing", path=where, field="id")
        key = sample["id"]
        metadata = sample["metadata"] if isinstance(sample.get("metadata"), dict) else {}
        doc = None
        if {"prompt", "instruction_id_list", "kwargs"} <= set(metadata):
            kwargs = metadata["kwargs"]
            doc = {
                "key": key,
                "prompt": metadata["prompt"],
                "instruction_id_list": metadata["instruction_id_list"],
                "kwargs": [
                    kwargs[str(i)] if isinstance(kwargs, dict) else kwargs[i]
                    for i in range(len(metadata["instruction_id_list"]))
                ],
            }
        output = sample["output"] if isinstance(sample.get("output"), dict) else {}
        samples.append(
            HarnessSample(
                key=key,
                sample=int(sample.get("epoch", 1)) - 1,
                response=_text(sample, where),
                where=where,
                doc=doc,
                verdicts=_counts(sample, where),
                per_instruction=False,
                model=output.get("model") if isinstance(output.get("model"), str) else None,
            )
        )
    served = one_model(samples, str(path))  # refuses a log whose samples name different models
    packages = spec["packages"] if isinstance(spec.get("packages"), dict) else {}
    return HarnessLog(
        format="inspect",
        tool={"name": "inspect", "version": packages.get("inspect_ai"), "task": spec.get("task")},
        task=str(spec.get("task", "")),
        model=spec.get("model") or served,
        samples=unique_samples(samples, str(path)),
        reported=_reported(header),
        generation=(header.get("plan") or {}).get("config", {}) if isinstance(header.get("plan"), dict) else {},
        provenance={
            key: spec.get(key)
            for key in ("created", "task_version", "dataset", "revision", "packages", "model_base_url")
            if key in spec
        },
    )
