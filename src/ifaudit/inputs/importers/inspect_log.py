"""UK AISI inspect logs: `.eval` (a zip: `header.json` and one `samples/<id>_epoch_<n>.json` per
sample) and `.json` (the same log as one document, samples inline).

inspect_evals' IFEval scorer records per response how many instructions were followed
(`inst_level_strict`, `inst_level_loose`: counts), whether all were (`prompt_level_*`), and
`num_instructions`; not which ones. Its verdicts are imported as those counts. Epochs are
samples: epoch 1 is sample 0.

A log is read in bounded memory whatever it holds: a `.eval` is a zip, and a 1 MB one can inflate
to gigabytes. Each member read is refused past a cap (IFAUDIT_MAX_MEMBER_BYTES, default 64 MiB, as
for a JSONL line: one sample's document), before inflating when its declared size says so; the
declared sizes of the members read (or a `.json` log's size) must stay under a total cap
(default 4 GiB). The import options `max_member_bytes` and `max_log_bytes` override both. A
member is read only stored, deflated or zstd-compressed (the methods inflated in bounded steps),
never encrypted, and an archive naming a member twice (two `header.json`) is refused as ambiguous.
"""

from __future__ import annotations

import json
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ifaudit.io import variables
from ifaudit.core import bounds
from ifaudit.core.errors import InputError
from ifaudit.core.records import PromptKey
from ifaudit.inputs.importers.fields import ImportOptions, LogRecord, kind_of
from ifaudit.io.archive import check_zip_layout, read_zip_member, zip_member
from ifaudit.io.confine import name_problem
from ifaudit.io.jsonl import loads_document
from ifaudit.io.paths import open_input
from ifaudit.inputs.importers.model import HarnessLog, HarnessSample, one_model, unique_samples

SCORE_FIELDS = {"strict": "inst_level_strict", "loose": "inst_level_loose"}
OPTIONS = ("max_member_bytes", "max_log_bytes")  # the caps on what the log may inflate to
REPORTED = {
    "prompt_strict_acc": "prompt_level_strict_acc",
    "inst_strict_acc": "inst_level_strict_acc",
    "prompt_loose_acc": "prompt_level_loose_acc",
    "inst_loose_acc": "inst_level_loose_acc",
}


MAX_MEMBER_ENV = variables.MAX_MEMBER_BYTES.name
DEFAULT_MAX_MEMBER_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_LOG_BYTES = 4 * 1024 * 1024 * 1024  # a whole IFEval run's .json log weighs ~14 MB


@dataclass(frozen=True)
class Caps:
    """Bytes a log may inflate to: each member of a `.eval`, and the log in all."""

    member: int
    log: int

    def member_hint(self) -> str:
        return f"set {MAX_MEMBER_ENV} or the import option max_member_bytes to a larger number of bytes to read it"


def _positive(value: Any, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InputError(f"expected a positive number of bytes, got {value!r}", field=f"import.{name}")
    if problem := bounds.BYTES.problem(value):
        raise InputError(problem, field=f"import.{name}")
    return value


def caps(options: dict[str, Any]) -> Caps:
    """The caps in force: the import options, else IFAUDIT_MAX_MEMBER_BYTES, else the defaults."""
    member = options.get("max_member_bytes")
    if member is None:
        member = variables.positive_bytes(variables.MAX_MEMBER_BYTES, DEFAULT_MAX_MEMBER_BYTES)
    return Caps(
        member=_positive(member, "max_member_bytes"),
        log=_positive(options.get("max_log_bytes", DEFAULT_MAX_LOG_BYTES), "max_log_bytes"),
    )


def _over_log_cap(path: Path, size: int, cap: int) -> InputError:
    return InputError(
        f"the log declares {size} bytes in all, over the cap of {cap}",
        path=path,
        hint="set the import option max_log_bytes to a larger number of bytes to read it",
    )


def _json(data: bytes | bytearray, where: str) -> Any:
    try:
        return loads_document(data.decode("utf-8"), where)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"malformed JSON ({exc.__class__.__name__}); the log may be truncated", path=where) from None


ZSTANDARD = 93  # zip's method number for zstd, which inspect writes and Python < 3.14 cannot read


def _member(archive: zipfile.ZipFile, path: Path, name: str, cap: Caps) -> bytes | bytearray:
    """A member's bytes, never more than the member cap; zstd members are decompressed with
    pyarrow's codec into a buffer of their declared size (a larger output is refused as corrupt),
    read raw from the member's offset in the archive (Python's zipfile reads zstd only from 3.14 on).
    pyarrow, which the leaderboard's parquet needs anyway, is imported only here: most logs'
    readers and every other job never load it."""
    info = zip_member(archive, name, path)  # an encrypted member is refused
    if info.compress_type != ZSTANDARD or info.file_size > cap.member:  # the latter refused unread
        return read_zip_member(archive, name, cap.member, path, cap.member_hint())
    if info.compress_size > cap.member:  # no more read from the file than the member may hold
        raise InputError(
            f"member {name} declares {info.compress_size} compressed bytes, over the cap of {cap.member}",
            path=path,
            hint=cap.member_hint(),
        )
    import pyarrow

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


def _documents(path: Path, cap: Caps) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    """The log's header and its samples, from either file format."""
    with open_input(path) as handle:  # a FIFO or a device is refused, not waited on or read forever
        is_zip = handle.read(4) == b"PK\x03\x04"
        handle.seek(0)
        if is_zip:
            return _archive(path, handle, cap)
        if (size := os.fstat(handle.fileno()).st_size) > cap.log:  # before a byte is read
            raise _over_log_cap(path, size, cap.log)
        data = handle.read(cap.log + 1)
        if len(data) > cap.log:  # grown while read
            raise _over_log_cap(path, os.fstat(handle.fileno()).st_size, cap.log)
        return _json_log(path, data)


def _json_log(path: Path, data: bytes) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    log = _json(data, str(path))
    if not isinstance(log, dict) or not isinstance(log.get("samples"), list):
        raise InputError(
            "not an inspect log: no 'samples' list (written with --no-log-samples?)", path=path, field="samples"
        )
    return log, [(f"{path}:samples[{i}]", s) for i, s in enumerate(log["samples"])]


def _check_names(archive: zipfile.ZipFile, path: Path) -> None:
    """Each member named once, as a plain path inside the archive: of two `header.json` members,
    zip readers differ on which one counts (Python's takes the last, others the first)."""
    seen: set[str] = set()
    for name in archive.namelist():
        if name in seen:
            raise InputError(f"holds member {name} twice; which one is the log's is ambiguous", path=path)
        seen.add(name)
        if name_problem(name.removesuffix("/")) is not None:
            raise InputError(f"member {name!r} is not a plain path inside the archive", path=path)


def _archive(path: Path, handle: BinaryIO, cap: Caps) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    try:
        with zipfile.ZipFile(handle) as archive:
            check_zip_layout(archive, os.fstat(handle.fileno()).st_size, path)  # before any seek to a member
            _check_names(archive, path)
            names = sorted(n for n in archive.namelist() if n.startswith("samples/") and n.endswith(".json"))
            # No member inflates past its declared size (zipfile and the zstd buffer stop there),
            # so the declared total bounds what all of them can take.
            declared = sum(archive.getinfo(name).file_size for name in ["header.json", *names])
            if declared > cap.log:
                raise _over_log_cap(path, declared, cap.log)
            header = _json(_member(archive, path, "header.json", cap), f"{path}!header.json")
            samples = [(f"{path}!{name}", _json(_member(archive, path, name, cap), f"{path}!{name}")) for name in names]
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:  # zipfile's words for a damaged archive
        raise InputError(f"not a readable .eval archive ({exc}); the log may be truncated", path=path) from None
    except KeyError as exc:
        raise InputError(f"not an inspect log: {exc.args[0]}", path=path) from None
    except NotImplementedError as exc:  # zipfile's word for a compression method it cannot read
        raise InputError(
            f"a member of the archive is compressed with a method this reader does not support ({exc})",
            path=path,
            hint="inspect writes .eval members zstd- or deflate-compressed; convert the log with "
            "`inspect log convert --to json`",
        ) from None
    return header, samples


def _text(sample: LogRecord) -> str:
    """The first choice's text: a string, or the text parts of a list of content parts."""
    if not (isinstance(sample.value.get("output"), dict) and sample.record("output").value.get("choices")):
        raise sample.error("output.choices", "missing: the sample has no generated output")
    choice = sample.record("output").records("choices")[0]
    content = choice.record("message").raw("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            LogRecord.at(part, sample.where, f"{choice.name('message.content')}[{i}]") for i, part in enumerate(content)
        ]
        return "".join(part.text("text") for part in parts if part.value.get("type") == "text")
    raise choice.error("message.content", f"expected text content, got {kind_of(content)}")


def _stop_reason(sample: LogRecord) -> str | None:
    """Why the model stopped, as the first choice's `stop_reason` says (`max_tokens`, `model_length`:
    at a length limit); None where the log does not say."""
    return sample.record("output").records("choices")[0].maybe_text("stop_reason")


def _score(sample: LogRecord) -> LogRecord:
    """The scorer's value: inspect_evals' IFEval scorer records one object per sample."""
    if not isinstance(sample.value.get("scores"), dict) or not sample.value["scores"]:
        raise sample.error("scores", "missing: the sample was not scored")
    scores = sample.record("scores")
    score = scores.record(next(iter(scores.value)))
    if not (isinstance(score.value.get("value"), dict) and "num_instructions" in score.value["value"]):
        raise sample.error("scores", "is not an IFEval score (no num_instructions); this log is of another task")
    return score.record("value")


def _counts(sample: LogRecord) -> dict[str, list[bool]]:
    """The scorer's counts as verdict lists (followed first): the sums are the harness's, the
    order carries no meaning."""
    value = _score(sample)
    total = value.integer("num_instructions", minimum=1)
    counts = {}
    for mode, name in SCORE_FIELDS.items():
        followed = value.integer(name, minimum=0)
        if followed > total:
            raise value.error(name, f"counts {followed} instructions followed of {total}")
        counts[mode] = [True] * followed + [False] * (total - followed)
    return counts


def _doc(sample: LogRecord, key: PromptKey) -> dict[str, Any] | None:
    """The harness's copy of the prompt, from the sample's metadata (none where it holds none)."""
    metadata = sample.maybe_record("metadata")
    if metadata is None or not {"prompt", "instruction_id_list", "kwargs"} <= set(metadata.value):
        return None
    ids = metadata.items("instruction_id_list")
    kwargs = metadata.raw("kwargs")
    if isinstance(kwargs, dict):  # inspect's metadata keys the settings by index, as strings
        kwargs = [metadata.record("kwargs").raw(str(index)) for index in range(len(ids))]
    return {"key": key, "prompt": metadata.raw("prompt"), "instruction_id_list": ids, "kwargs": kwargs}


def _metric_values(score: LogRecord) -> dict[str, float]:
    """One scorer's IFEval aggregates in the header, under our names."""
    metrics = score.maybe_record("metrics")
    if metrics is None:
        return {}
    found = {}
    for name in (name for name in metrics.value if name in REPORTED):
        metric = metrics.record(name)
        if metric.value.get("value") is not None:
            found[REPORTED[name]] = metric.number("value")
    return found


def _reported(header: LogRecord) -> dict[str, float]:
    results = header.maybe_record("results")
    scores = results.records("scores") if results is not None and results.value.get("scores") is not None else []
    return {name: value for score in scores for name, value in _metric_values(score).items()}


def _sample(where: str, document: Any) -> HarnessSample:
    sample = LogRecord.at(document, where)
    key = sample.key("id")
    output = sample.maybe_record("output")
    return HarnessSample(
        key=key,
        sample=sample.integer_or("epoch", 1, minimum=1) - 1,
        response=_text(sample),
        where=where,
        doc=_doc(sample, key),
        verdicts=_counts(sample),
        per_instruction=False,
        model=output.maybe_text("model") if output else None,
        finish_reason=_stop_reason(sample),
        key_field="id",
        sample_field="epoch",
        doc_field="metadata",
    )


def _header(document: dict[str, Any], path: Path) -> LogRecord:
    """The log's header, named by its place: a `.json` log is its own header (it holds the
    samples), a `.eval` archive's is its member `header.json`."""
    return LogRecord.at(document, str(path) if "samples" in document else f"{path}!header.json")


def read(path: Path, options: dict[str, Any]) -> HarnessLog:
    ImportOptions.of(options, "inspect", OPTIONS)
    document, documents = _documents(path, caps(options))
    header = _header(document, path)
    spec = header.maybe_record("eval") or LogRecord({}, header.where, "eval")
    samples = [_sample(where, document) for where, document in documents]
    served = one_model(samples, str(path))  # refuses a log whose samples name different models
    packages = spec.maybe_record("packages")
    plan = header.maybe_record("plan")
    generation = plan.maybe_record("config") if plan else None
    return HarnessLog(
        format="inspect",
        tool={
            "name": "inspect",
            "version": packages.maybe_text("inspect_ai") if packages else None,
            "task": spec.maybe_text("task"),
        },
        task=spec.maybe_text("task") or "",
        model=spec.maybe_text("model") or served,
        samples=unique_samples(samples, str(path)),
        reported=_reported(header),
        generation=dict(generation.value) if generation else {},
        provenance={
            key: spec.value.get(key)
            for key in ("created", "task_version", "dataset", "revision", "packages", "model_base_url")
            if key in spec.value
        },
    )
