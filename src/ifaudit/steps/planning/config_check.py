"""The config checked before any job starts, each mistake one line naming the file and line it was
written at, its key path and, for a misspelled key or value, the nearest valid one: the files as
YAML (no key given twice, aliases' expansion capped: ifaudit.io.bounded_yaml), the values (keys
text, numbers finite, no lone surrogate), the schema (workflow/schemas/config.schema.yaml, its
task names taken from the registry, its integers never floats, its bounds those of
ifaudit.core.bounds), then what a schema cannot say (names that must exist, files that must be
there, paths that must not lead out of the project or the mirror)."""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ifaudit.core.errors import ConfigError, InputError
from ifaudit.core.names import run_name_problem
from ifaudit.core.terminal import unshowable
from ifaudit.io import bounded_yaml
from ifaudit.io.confine import leads_out
from ifaudit.io.canonical import atomic_write_bytes, holds, sha256_bytes
from ifaudit.inputs.importers import FILE_SETTINGS
from ifaudit.io.paths import check_input
from ifaudit.io.remote.sources import dataset_places
from ifaudit.steps.planning import plan
from ifaudit.steps.planning.config_places import place_of
from ifaudit.tasks.canary_files import canary_dataset_names
from ifaudit.steps.planning.jobs import RunPlan


def nearest(key: object, valid: Any) -> str:
    """ "; did you mean 'x'?" for the valid key closest to a misspelled one, else nothing."""
    close = difflib.get_close_matches(str(key), sorted(map(str, valid)), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def config_schema(path: Path) -> dict[str, Any]:
    """The config's schema, its task names taken from the package's registry (named once)."""
    import yaml

    # libyaml's loader: every Snakemake run, the no-op included, reads the schema (8 KB: 20 ms in
    # Python, 2 ms in C; the same document).
    schema = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    schema["properties"]["runs"]["additionalProperties"]["properties"]["task"]["enum"] = plan.task_names()
    return schema


def _inner_schema(schema: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    """The schema of `key` in an object's schema: its own property, else any property's."""
    named = schema.get("properties", {})
    if key in named:
        return named[key]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def _takes_boolean(schema: Mapping[str, Any]) -> bool:
    kinds = schema.get("type")
    return "boolean" in (kinds if isinstance(kinds, list) else [kinds])


def coerce_booleans(schema: Mapping[str, Any], given: Mapping[str, Any], settings: Any) -> None:
    """`--config replay_only=true` as YAML reads it. Snakemake takes only `True` and `False` as
    booleans on the command line and leaves `true` a string, which the schema refuses: for every
    key given there (`given`, nested ones too) that the schema says is a boolean, `true` and
    `false` in any case become booleans in `settings` (the merged config)."""
    for key, value in given.items():
        inner = _inner_schema(schema, key)
        if inner is None or not isinstance(settings, dict) or key not in settings:
            continue
        if isinstance(value, dict):
            coerce_booleans(inner, value, settings[key])
        elif isinstance(value, str) and value.lower() in ("true", "false") and _takes_boolean(inner):
            settings[key] = value.lower() == "true"


def _typed(value: Any) -> Any:
    """`value` as JSON that names every type (a YAML date and the string of its repr differ, as do
    1, 1.0, True and "1"); a value of any other type raises TypeError."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return [type(value).__name__, repr(value)]
    if isinstance(value, list):
        return ["list", [_typed(item) for item in value]]
    if isinstance(value, dict):
        return ["dict", sorted(([_typed(key), _typed(item)] for key, item in value.items()), key=json.dumps)]
    raise TypeError(type(value).__name__)


def typed_bytes(value: Any) -> bytes | None:
    """The canonical bytes of a parsed config, its types included; None for a config holding a
    value that plain JSON types cannot name (a date, a set), which is then never remembered."""
    try:
        return json.dumps(_typed(value), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError, RecursionError):
        return None


def _yaml_spelling(key: object) -> str:
    """A key as YAML writes it (null, true, 1, 2024-01-01)."""
    return "null" if key is None else str(key).lower() if isinstance(key, bool) else str(key)


def _key_kind(key: object) -> str:
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "a boolean"
    return "a number" if isinstance(key, int | float) else f"a {type(key).__name__}"


def _count_over(config: Any, cap: int) -> bool:
    """Whether the merged config holds more than `cap` values, a value reached twice (an alias in
    a --config value) counted each time: counted, without recursion, up to the cap only."""
    pending, count = [config], 0
    while pending:
        value = pending.pop()
        count += 1
        if count > cap:
            return True
        if isinstance(value, list):
            pending.extend(value)
        elif isinstance(value, dict):  # what YAML and JSON read (a Mapping check is 3x slower)
            pending.extend(value.values())
    return False


def _surrogate(text: str) -> str | None:
    """Why `text` cannot be written to a UTF-8 file (a lone surrogate, as YAML's `"\\udc80"`
    gives one), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return (
            f"holds a lone surrogate, U+{ord(text[error.start]):04X} at character {error.start + 1}, which no "
            "UTF-8 file can hold: write the character itself, not half of its UTF-16 pair"
        )
    return None


def _value_problem(value: Any) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} is not a finite number"
    if isinstance(value, str):
        return _surrogate(value)
    return None


def check_keys(config: Mapping[str, Any]) -> None:
    """Refuse a key that is not text anywhere in the config (YAML reads `1:`, `true:`, `null:` or
    `2024-01-01:` as a number, a boolean, null or a date): no schema can name it, and keys of
    several types cannot be sorted or compared. Refuse a number that is not finite (`.nan`,
    `.inf`: every bound compares false with NaN) and text holding a lone surrogate, anywhere,
    keys too. One line with the key path, the first such key in the document's order; walked
    with a stack, not recursion, after the values were counted (an alias bomb is refused first)."""
    if _count_over(config, bounded_yaml.MAX_NODES):
        raise ConfigError("top level", f"holds more than {bounded_yaml.MAX_NODES:,} values (aliases expanded)")
    stack: list[tuple[str, Any]] = [("", config)]
    while stack:
        where, value = stack.pop()
        if (problem := _value_problem(value)) is not None:
            raise ConfigError(where or "top level", problem)
        if isinstance(value, list):
            stack.extend((f"{where}.{index}", item) for index, item in reversed(list(enumerate(value))))
        elif isinstance(value, Mapping):
            for key in value:
                path = f"{where}.{_yaml_spelling(key)}" if where else _yaml_spelling(key)
                if not isinstance(key, str):
                    raise ConfigError(path, f"a key must be text; YAML read this one as {_key_kind(key)}: quote it")
                if (problem := _surrogate(key)) is not None:
                    raise ConfigError(path, problem)
            stack.extend((f"{where}.{key}" if where else key, item) for key, item in reversed(list(value.items())))


def _validator(schema: Mapping[str, Any]) -> Any:
    """Draft 2020-12 with two differences: an integer is an int, never a float that happens to be
    whole (`shards: 1e9` from --config, `resamples: 1.0e+40`), and `format: text` is checked
    (free text an output shows, see core.terminal.unshowable)."""
    import jsonschema

    base = jsonschema.Draft202012Validator
    integers = base.TYPE_CHECKER.redefine(
        "integer", lambda _, value: isinstance(value, int) and not isinstance(value, bool)
    )
    formats = jsonschema.FormatChecker(formats=())
    formats.checks("text")(lambda value: not isinstance(value, str) or unshowable(value) is None)
    return jsonschema.validators.extend(base, type_checker=integers)(schema, format_checker=formats)


def check_schema(schema: Mapping[str, Any], config: Mapping[str, Any], passed: Path | None = None) -> None:
    """The schema's most relevant complaint, with the key path and, for an unknown key, the
    nearest valid one (Snakemake's `validate` prints the whole schema instead). In `passed`, a
    folder, a config that passed is remembered by the sha256 of it and its schema, types included
    (typed_bytes): the next Snakemake start with the same config (a no-op, a dry run) need not
    import jsonschema (0.1-0.2 s)."""
    runs = config.get("runs")
    for run in runs if isinstance(runs, dict) else ():
        if problem := run_name_problem(run):  # in words, before the schema's bare pattern
            raise ConfigError("runs", problem)
    checked = typed_bytes([schema, config])
    stamp = None if passed is None or checked is None else passed / f"schema-passed-{sha256_bytes(checked)}"
    if stamp is not None and checked is not None and holds(stamp, checked):  # read back like any staged file
        return
    import jsonschema

    error = jsonschema.exceptions.best_match(_validator(schema).iter_errors(config))
    if error is None:
        if stamp is not None and checked is not None:
            atomic_write_bytes(stamp, checked)
        return
    where = ".".join(map(str, error.absolute_path))
    if error.validator == "additionalProperties" and error.validator_value is False:
        valid = error.schema.get("properties", {})
        key = min(set(error.instance) - set(valid), key=str)
        raise ConfigError(f"{where}.{key}" if where else key, f"unknown key{nearest(key, valid)}")
    if error.validator == "required":
        missing = next(key for key in error.validator_value if key not in error.instance)
        raise ConfigError(f"{where}.{missing}" if where else missing, "required key is missing")
    if error.validator == "maxLength":  # not the text itself: it may be hundreds of kilobytes
        raise ConfigError(
            where, f"is {len(error.instance):,} characters long, more than the {error.validator_value} allowed"
        )
    if error.validator == "format" and isinstance(error.instance, str) and (problem := unshowable(error.instance)):
        raise ConfigError(where, problem)
    near = nearest(error.instance, error.validator_value) if error.validator == "enum" else ""
    raise ConfigError(where or "top level", f"{_shortened(error.message)}{near}")


def _shortened(message: str, most: int = 300) -> str:
    """A schema complaint quotes the value it refuses, which may be a long text: cut, so the line
    stays a line."""
    return message if len(message) <= most else f"{message[:most]}… ({len(message):,} characters in all)"


def _escapes(path: str | Path, root: Path) -> bool:
    """A relative path that leads outside `root` (an absolute path is the user's explicit choice)."""
    return not Path(path).is_absolute() and leads_out(root, path)


def _file_problem(path: Path) -> str | None:
    """Why `path` cannot be read as a file ("file not found", "is a FIFO (named pipe), not a
    file"), in the words of ifaudit.io.paths, or None; nothing of it is read."""
    try:
        check_input(path)
    except InputError as error:
        return error.message
    return None


def _check_datasets(config: Mapping[str, Any], workdir: Path) -> None:
    for name, spec in config["datasets"].items():
        if "mirror" in spec and (Path(spec["mirror"]).is_absolute() or ".." in Path(spec["mirror"]).parts):
            raise ConfigError(f"datasets.{name}.mirror", f"{spec['mirror']!r} leads out of the mirror folder")
        if "path" in spec and _escapes(spec["path"], workdir):
            raise ConfigError(f"datasets.{name}.path", f"{spec['path']!r} leads out of the project")
        places = dataset_places(spec, config["mirror"])
        remote = not config["offline"] and bool(places.canonical)
        mirrored = any(Path(mirror).is_file() for mirror in places.mirrors)
        if "path" in spec and not (remote or mirrored) and (problem := _file_problem(workdir / spec["path"])):
            raise ConfigError(f"datasets.{name}.path", f"{problem}: {spec['path']}")


def _check_run(jobs: RunPlan, run: str) -> None:
    spec, datasets = jobs.runs[run], jobs.datasets
    if ("responses" in spec) == ("model" in spec):
        raise ConfigError(f"runs.{run}", "a run needs exactly one of `responses` (a dataset) or `model` (an endpoint)")
    for role in ("prompts", "responses", "judgements"):
        if role in spec and spec[role] not in datasets:
            raise ConfigError(
                f"runs.{run}.{role}", f"no dataset named {spec[role]!r} under datasets{nearest(spec[role], datasets)}"
            )
    if refusal := plan.task_refusal(spec["task"]):
        raise ConfigError(f"runs.{run}.task", refusal)
    for name in canary_dataset_names(spec["task"]):
        if name not in datasets:
            raise ConfigError("datasets", f"the {spec['task']} canary needs a dataset named {name!r}")
    judged = spec["task"] in plan.judged_tasks()
    if judged and ("judge" in spec) == ("judgements" in spec):
        raise ConfigError(f"runs.{run}", "a judged task needs exactly one of `judge` or `judgements`")
    if not judged and ("judge" in spec or "judgements" in spec):
        raise ConfigError(f"runs.{run}", f"task {spec['task']} is not judged; remove `judge`/`judgements`")
    if "import" in spec and "model" in spec:
        raise ConfigError(
            f"runs.{run}.import", "an imported run reads a harness's log as its `responses`; remove `model`"
        )
    for name in FILE_SETTINGS:
        if (named := spec.get("import", {}).get(name)) is not None and named not in datasets:
            raise ConfigError(
                f"runs.{run}.import.{name}", f"no dataset named {named!r} under datasets{nearest(named, datasets)}"
            )
    verdicts = (spec.get("published") or {}).get("strict_verdicts")
    if verdicts is not None and verdicts not in datasets:
        raise ConfigError(
            f"runs.{run}.published.strict_verdicts",
            f"no dataset named {verdicts!r} under datasets{nearest(verdicts, datasets)}",
        )
    if "judge" in spec:
        jobs.judge_protocol(run)


def _check_same_prompt_set(config: Mapping[str, Any], jobs: RunPlan, where: str, a: str, b: str) -> None:
    """A paired comparison draws the same prompts for both runs: runs of different prompt sets
    (another data version, another language) are refused, unless both sets are the same bytes."""
    first, second = jobs.runs[a]["prompts"], jobs.runs[b]["prompts"]
    if first == second:
        return
    digests = [(config.get("datasets") or {}).get(name, {}).get("sha256") for name in (first, second)]
    if digests[0] is None or digests[0] != digests[1]:
        raise ConfigError(
            where,
            f"compares run {a!r} (prompt set {first}) with run {b!r} (prompt set {second}): "
            "a paired comparison needs the same prompt set",
        )


def check_config(jobs: RunPlan, workdir: Path) -> None:
    """What the schema cannot say; `workdir`: the folder the workflow runs in."""
    config = jobs.config
    _check_datasets(config, workdir)
    for key, store in (("judgement_store", jobs.judgement_store), ("generation_store", jobs.generation_store)):
        if _escapes(store, workdir):
            raise ConfigError(key, "leads out of the project")
    for run in jobs.runs:
        _check_run(jobs, run)
    listed = config["comparisons"] if isinstance(config["comparisons"], list) else []
    named = [(f"comparisons.{index}", pair) for index, pair in enumerate(listed)]
    named += [
        (f"runs.{run}.compare", (run, other)) for run, spec in jobs.runs.items() for other in spec.get("compare", ())
    ]
    for where, (a, b) in named:
        for name in (a, b):
            if name not in jobs.runs:
                raise ConfigError(where, f"no run named {name!r}{nearest(name, jobs.runs)}")
        if a == b:
            raise ConfigError(where, f"compares run {a!r} with itself")
        _check_same_prompt_set(config, jobs, where, a, b)
    for task, path in config.get("canary", {}).items():
        if problem := _file_problem(workdir / path):
            raise ConfigError(f"canary.{task}", f"{problem}: {path}")
    if isinstance(config.get("batch_runs"), int) and config["batch_runs"] > 1 and config["shards"] != 1:
        raise ConfigError(
            "batch_runs",
            f"{config['batch_runs']} with shards: {config['shards']}: a batch grades each run whole (set shards: 1)",
        )


def drop_null_runs(config: dict[str, Any]) -> None:
    """`runs: {NAME: null}` in a config merged on top removes run NAME (Snakemake's merge sets the
    value to null): how an author's config drops config/config.yaml's default run. In place, so
    every reader of the merged config (the workflow's record of it, `ifaudit bundle`) sees only
    the runs left, in their order; a config that drops every run names none."""
    runs = config.get("runs")
    if not isinstance(runs, dict):
        return
    dropped = [name for name, spec in runs.items() if spec is None]
    for name in dropped:
        del runs[name]
    if dropped and not runs:
        raise ConfigError(
            "runs", f"every run is dropped (null: {', '.join(map(str, dropped))}); name a run of your own"
        )


def validated_plan(
    config: dict[str, Any],
    given: Mapping[str, Any],
    schema: Path,
    pins: tuple[Path, Path],
    workdir: Path,
    passed: Path | None = None,
    files: Sequence[Path] = (),
) -> RunPlan:
    """The run plan of a config (`given`: the values from the command line, coerced as YAML
    reads them), once the config is checked (its runs set to null dropped first); raises
    ConfigError on the first mistake, named at the place `files` (the config files in the order
    they were merged) or --config wrote it; InputError for a file that holds a key twice or an
    alias bomb, checked first, before any walk of the values. `passed`: where configs that passed
    the schema are remembered (check_schema)."""
    for path in files:
        bounded_yaml.check_file(path)
    try:
        check_keys(config)
        drop_null_runs(config)
        checked = config_schema(schema)
        coerce_booleans(checked, given, config)
        check_schema(checked, config, passed)
        jobs = RunPlan(config, *pins)
        check_config(jobs, workdir)
    except ConfigError as error:
        raise error.at(place_of(error.where, files, given)) from None
    return jobs
