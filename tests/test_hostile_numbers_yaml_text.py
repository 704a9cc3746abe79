"""Hostile numbers, YAML and text (issue 49, item 6): each class stops the config check or the
command in one line naming the file, line and key (or the option), exit non-zero, before any job
or any write; text that reaches an output is written so that it is safe and reads back as given.

- numbers: not finite (`.nan`, `.inf`), a float where an integer is meant (`1.0e+40`, `--config
  shards=1e9`), out of the documented bounds (ifaudit.core.bounds), in the config, in every
  numeric option of the command and in the JSON settings an option takes;
- YAML: a key given twice (the second silently replacing the first), an alias bomb (hung the
  config check's first walk; one of aliased mappings hung Snakemake's own merge of the
  --configfile files, which `make run` now checks first);
- text: a lone surrogate (ended in a traceback inside the workflow), a bidi override or a line
  separator in free text an output shows (reached metrics.csv raw; CITATION.cff read back changed).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import REPO
from test_run_plan import OVERRIDES, PINS, SCHEMA

from ifaudit.core import bounds
from ifaudit.core.errors import ConfigError, InputError
from ifaudit.steps.artifact.bundle import merge_config
from ifaudit.steps.planning.config_check import validated_plan

BASE = [REPO / "config" / "config.yaml", REPO / "config" / "offline.yaml"]


def snakemake_reads(path: Path) -> dict:
    """A config file as Snakemake reads it: JSON first, else PyYAML's own loader."""
    text = path.read_text(encoding="utf-8")
    try:
        return json.loads(text)
    except ValueError:
        return yaml.load(text, Loader=yaml.SafeLoader)


def check(tmp_path: Path, text: str, given: dict | None = None) -> Path:
    """The config check of the project's configs with `text` as a --configfile on top (and
    `given` as --config's values), as the workflow runs it; the file's path."""
    mine = tmp_path / "mine.yaml"
    mine.write_text(text, encoding="utf-8")
    overrides = {**OVERRIDES, **(given or {})}
    files = [*BASE, mine]
    config: dict = {}
    for document in (*(snakemake_reads(path) for path in files), overrides):
        merge_config(config, document)  # as Snakemake merges them: no copy, no walk of the values
    validated_plan(config, overrides, SCHEMA, PINS, tmp_path, files=files)
    return mine


@contextlib.contextmanager
def at_most(seconds: int) -> Iterator[None]:
    """Fail, not hang: the block is stopped after `seconds` of wall time."""

    def stop(*_: object) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def refused(tmp_path: Path, text: str, given: dict | None = None) -> str:
    with at_most(30), pytest.raises((ConfigError, InputError)) as raised:
        check(tmp_path, text, given)
    line = str(raised.value)
    assert "\n" not in line, line
    return line


# --- numbers in the config -------------------------------------------------------------------------

RUN = "runs:\n  gpt4_google:\n"
MODEL_RUN = (
    "runs:\n  made:\n    task: ifeval\n    prompts: ifeval_prompts_github\n"
    "    model:\n      model: m\n      base_url: http://127.0.0.1:9/v1\n"
)
STATISTICS = "statistics:\n  resamples: 100\n  level: 0.9\n  interval: percentile\n  seed: 0\n"

HOSTILE_NUMBERS = [
    (STATISTICS.replace("level: 0.9", "level: .nan"), 3, "statistics.level", "nan is not a finite number"),
    (STATISTICS.replace("resamples: 100", "resamples: 1.0e+40"), 2, "statistics.resamples", "is not of type 'integer'"),
    (STATISTICS.replace("resamples: 100", "resamples: 1000001"), 2, "statistics.resamples", "maximum of 100000"),
    (STATISTICS.replace("seed: 0", "seed: -1"), 5, "statistics.seed", "less than the minimum of 0"),
    (STATISTICS.replace("seed: 0", "seed: 99999999999999999999"), 5, "statistics.seed", "maximum of 4294967295"),
    ("shards: 1000000000\n", 1, "shards", "greater than the maximum of 1000"),
    ("shards: 1.0e+9\n", 1, "shards", "is not of type 'integer', 'string'"),
    ("shard_responses: .inf\n", 1, "shard_responses", "inf is not a finite number"),
    (RUN + "    published: {source: a paper, prompt_level_strict_acc: .nan}\n", 3, "runs.gpt4_google.published", "nan"),
    (MODEL_RUN + "      temperature: .inf\n", 8, "runs.made.model.temperature", "inf is not a finite number"),
    (MODEL_RUN + "      temperature: 1.0e+300\n", 8, "runs.made.model.temperature", "maximum of 10"),
    (MODEL_RUN + "      max_tokens: 1.0e+40\n", 8, "runs.made.model.max_tokens", "is not of type 'integer'"),
    (MODEL_RUN + "      samples: 1000000000\n", 8, "runs.made.model.samples", "maximum of 1000"),
    (MODEL_RUN + "      concurrency: 100000\n", 8, "runs.made.model.concurrency", "maximum of 256"),
    (MODEL_RUN + "      seed: 99999999999999999999\n", 8, "runs.made.model.seed", "maximum of 9223372036854775807"),
    (MODEL_RUN + "      timeout_seconds: -.inf\n", 8, "runs.made.model.timeout_seconds", "-inf is not a finite"),
    (MODEL_RUN + "      extra: {logit_bias: {'1': .nan}}\n", 8, "runs.made.model.extra.logit_bias.1", "nan is not"),
]


@pytest.mark.parametrize(
    "text, line, where, words",
    HOSTILE_NUMBERS,
    ids=[f"{case[2]}-{index}" for index, case in enumerate(HOSTILE_NUMBERS)],
)
def test_a_hostile_number_in_a_config_is_one_line_naming_file_line_and_key(
    tmp_path: Path, text: str, line: int, where: str, words: str
) -> None:
    said = refused(tmp_path, text)
    assert said.startswith(f"{tmp_path / 'mine.yaml'}:{line}: config: {where}"), said
    assert words in said, said


def test_a_number_given_with_dash_dash_config_is_named_there(tmp_path: Path) -> None:
    """Snakemake reads `--config shards=1e9` as the float 1e9, which draft 2020-12 counts as an
    integer: it planned 10^9 shards (a traceback after minutes); now refused as a float."""
    said = refused(tmp_path, "{}\n", {"shards": 1e9})
    assert said == "--config shards: 1000000000.0 is not of type 'integer', 'string'", said
    said = refused(tmp_path, "{}\n", {"shards": 5000})
    assert said == "--config shards: 5000 is greater than the maximum of 1000", said


def _numeric_fields(schema: dict, path: str = "") -> Iterator[tuple[str, dict]]:
    """Every place of the schema that takes a number: (key path, its schema)."""
    kinds = schema.get("type")
    if set(kinds if isinstance(kinds, list) else [kinds]) & {"integer", "number"}:
        yield path, schema
    for key, inner in schema.get("properties", {}).items():
        yield from _numeric_fields(inner, f"{path}.{key}" if path else key)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        yield from _numeric_fields(extra, f"{path}.*" if path else "*")


SCHEMA_BOUNDS = {
    "shards": bounds.SHARDS,
    "batch_runs": bounds.BATCH_RUNS,
    "shard_responses": bounds.SHARD_RESPONSES,
    "statistics.resamples": bounds.RESAMPLES,
    "statistics.level": bounds.LEVEL,
    "statistics.seed": bounds.SEED,
    "runs.*.model.temperature": bounds.TEMPERATURE,
    "runs.*.model.top_p": bounds.TOP_P,
    "runs.*.model.max_tokens": bounds.MAX_TOKENS,
    "runs.*.model.seed": bounds.REQUEST_SEED,
    "runs.*.model.samples": bounds.SAMPLES,
    "runs.*.model.concurrency": bounds.CONCURRENCY,
    "runs.*.model.retries": bounds.RETRIES,
    "runs.*.model.backoff_seconds": bounds.BACKOFF_SECONDS,
    "runs.*.model.timeout_seconds": bounds.TIMEOUT_SECONDS,
    "runs.*.model.deadline_seconds": bounds.TIMEOUT_SECONDS,
    "runs.*.model.max_answer_bytes": bounds.BYTES,
    "runs.*.judge.temperature": bounds.TEMPERATURE,
    "runs.*.judge.max_tokens": bounds.MAX_TOKENS,
    "runs.*.judge.concurrency": bounds.CONCURRENCY,
    "runs.*.import.max_member_bytes": bounds.BYTES,
    "runs.*.import.max_log_bytes": bounds.BYTES,
    "runs.*.import.published": bounds.PERCENT,
    "runs.*.published.*": bounds.PROPORTION,
    "runs.*.published.rounded_to": bounds.ROUNDING_STEP,
}


def test_every_number_of_the_schema_has_the_bounds_the_package_checks() -> None:
    """Systematic: every number the config takes is bounded at both ends in the schema, by the
    bounds the command's options and the model settings are checked with (one set of caps)."""
    schema = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
    found = dict(_numeric_fields(schema))
    assert set(found) == set(SCHEMA_BOUNDS)
    for where, field in found.items():
        within = SCHEMA_BOUNDS[where]
        low = field.get("exclusiveMinimum", field.get("minimum"))
        high = field.get("exclusiveMaximum", field.get("maximum"))
        assert (low, high) == (within.low, within.high), where
        assert ("exclusiveMinimum" in field, "exclusiveMaximum" in field) == (within.open_low, within.open_high), where
        assert (field["type"] in ("integer", ["integer", "string"])) == within.integer, where


# --- numbers on the command line ------------------------------------------------------------------


def _number_options() -> list[tuple[str, str, Any]]:
    """(command, flag, type) of every option that takes a number: its type int, float, or a
    cli_parser.Number (the only one allowed)."""
    from ifaudit.cli_parser import COMMANDS, OneOf

    found = []
    for command in COMMANDS:
        options = [o for entry in command.options for o in (entry.options if isinstance(entry, OneOf) else (entry,))]
        for option in options:
            kind = option.settings.get("type")
            if kind in (int, float) or type(kind).__name__ == "Number":
                found.append((command.name, option.flags[0], kind))
    return found


NUMBER_OPTIONS = _number_options()


def test_every_numeric_option_is_bounded() -> None:
    from ifaudit.cli_parser import Number

    assert all(isinstance(kind, Number) for _, _, kind in NUMBER_OPTIONS), NUMBER_OPTIONS
    flags = {flag for _, flag, _ in NUMBER_OPTIONS}
    assert flags == {
        "--resamples",
        "--level",
        "--seed",
        "--jobs",
        "--judge-temperature",
        "--judge-max-tokens",
        "--judge-concurrency",
    }


# Refused by every numeric option: not finite, far too large or small, not ASCII digits, not a number.
HOSTILE_OPTION_TEXTS = ["nan", "inf", "-inf", "1e999", "1e20", "99999999999999999999", "-1", "١٠", "", "0x10", "1_000"]


@pytest.mark.parametrize(
    "command, flag, kind", NUMBER_OPTIONS, ids=[f"{command}{flag}" for command, flag, _ in NUMBER_OPTIONS]
)
def test_a_hostile_number_option_is_one_line(
    capsys: pytest.CaptureFixture[str], command: str, flag: str, kind: Any
) -> None:
    """`--resamples 1e20` was argparse's usage and error (or, as digits, a traceback from numpy),
    `--seed -1` a traceback: one line naming the option and its range, before any work."""
    from ifaudit.cli import main

    texts = HOSTILE_OPTION_TEXTS + (["2.5", "1e3"] if getattr(kind, "within", None) and kind.within.integer else [])
    for text in texts:
        with pytest.raises(SystemExit) as stopped:
            main([command, f"{flag}={text}"])
        assert stopped.value.code == 2, text
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1, (text, lines)
        assert lines[0].startswith(f"ifaudit: error: ifaudit {command}: argument {flag}: "), lines[0]
        assert f"expected {kind.within.describe()} (see ifaudit {command} --help)" in lines[0], lines[0]


def test_bounds_parse_takes_the_documented_range_and_nothing_else() -> None:
    assert bounds.RESAMPLES.parse("100000") == 100_000 and bounds.SEED.parse("0") == 0
    assert bounds.LEVEL.parse("0.95") == 0.95 and bounds.REQUEST_SEED.parse("-5") == -5
    for within, text in ((bounds.RESAMPLES, "100001"), (bounds.LEVEL, "1"), (bounds.LEVEL, "0"), (bounds.SEED, "-1")):
        with pytest.raises(ValueError, match="out of range"):
            within.parse(text)
    assert bounds.SHARDS.problem(True) is not None and bounds.LEVEL.problem(math.nan) is not None


@pytest.mark.parametrize("spec", ["0/1e9", "0/100000", "0/١", "-1/2", "0/0", "1", "0/1/2"])
def test_a_hostile_shard_is_one_line(spec: str) -> None:
    from ifaudit.steps.grading.passes import parse_shard

    with pytest.raises(InputError) as raised:
        parse_shard(spec)
    assert str(raised.value).startswith("field 'shard': "), str(raised.value)


@pytest.mark.parametrize(
    "name, value, words",
    [
        ("temperature", math.nan, "nan is not a finite number"),
        ("temperature", math.inf, "inf is not a finite number"),
        ("concurrency", 10**9, "out of range"),
        ("samples", 10**9, "out of range"),
        ("max_tokens", 10**40, "out of range"),
        ("timeout_seconds", math.inf, "inf is not a finite number"),
        ("backoff_seconds", math.nan, "nan is not a finite number"),
    ],
)
def test_model_settings_from_the_command_line_are_bounded(name: str, value: object, words: str) -> None:
    """--model-json reads JSON, which Python reads NaN and Infinity in: the same bounds as the schema."""
    from ifaudit.inputs.generation import ModelSettings

    spec = json.loads(json.dumps({"model": "m", "base_url": "http://127.0.0.1:9/v1", name: value}))
    with pytest.raises(InputError) as raised:
        ModelSettings.from_dict(spec)
    assert str(raised.value).startswith(f"field 'model.{name}': ") and words in str(raised.value)


@pytest.mark.parametrize(
    "words, said",
    [
        (["--run", "r\udcff", "--config-json", "{}"], "field '--run': r\\udcff is not UTF-8 text (character 2)"),
        (["--run", "r", "--config-json", '{"a": NaN}'], "field 'config': --config-json holds NaN, not a JSON number"),
        (["--run", "r", "--config-json", '{"a": -Infinity}'], "--config-json holds -Infinity, not a JSON number"),
        (
            ["--run", "r", "--config-json", '{"a": [1e999]}'],
            "--config-json holds 1e999, a number too large for a float",
        ),
        (["--run", "r", "--config-json", "{}", "--file", "x=\udc80"], "field '--file': x=\\udc80 is not UTF-8"),
    ],
    ids=["undecodable-run", "nan-json", "infinity-json", "huge-json", "undecodable-file"],
)
def test_a_command_line_word_that_no_output_can_hold_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, words: list[str], said: str
) -> None:
    """A word of non-UTF-8 bytes (read by Python as lone surrogates) or NaN in a JSON option was a
    traceback when the first file naming it was written; now one line before any work."""
    from ifaudit.cli import main

    out = tmp_path / "manifest.json"
    assert main(["manifest", *words, "--out", str(out)]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("ifaudit: error: ") and said in line, line
    assert not out.exists()


# --- YAML: a key given twice, an alias bomb ---------------------------------------------------------

TWICE = (
    "runs:\n"
    "  mine:\n    task: ifeval\n    prompts: ifeval_prompts_github\n    responses: gpt4_responses\n"
    "  other:\n    task: ifeval\n    prompts: ifeval_prompts_github\n    responses: gpt4_responses\n"
    "  mine:\n    task: ifeval_langcheck\n    prompts: ifeval_prompts_github\n    responses: gpt4_responses\n"
)


def test_a_run_declared_twice_is_refused_naming_both_lines(tmp_path: Path) -> None:
    said = refused(tmp_path, TWICE)
    mine = tmp_path / "mine.yaml"
    assert said == (
        f"{mine}:10: field 'runs.mine': given twice, at lines 2 and 10: YAML would keep only the second; "
        "remove or rename one"
    ), said
    # The same in a config written as JSON (Snakemake reads JSON first, and keeps the last too).
    said = refused(tmp_path, '{"statistics": {"seed": 1,\n "seed": 2}}\n')
    assert (
        said
        == f"{mine}:2: field 'statistics.seed': given twice, at lines 1 and 2: YAML would keep only the second; remove or rename one"
    )


def test_every_other_reader_of_a_config_refuses_a_key_given_twice(tmp_path: Path) -> None:
    """`ifaudit bundle --config` and `selfcheck --config` read config files themselves: the same
    refusal, not the last of the two silently (the bundle's runs would have been another config's)."""
    from ifaudit.steps.artifact.bundle import BundleRequest, configured
    from ifaudit.steps.grading.canary import selfcheck
    from ifaudit.tasks.registry import get_task

    twice = tmp_path / "twice.yaml"
    twice.write_text(TWICE, encoding="utf-8")
    said = f"{twice}:10: field 'runs.mine': given twice, at lines 2 and 10"
    request = BundleRequest(tmp_path, tmp_path / "results", tmp_path / "resources", tmp_path / "out", (twice,))
    with pytest.raises(InputError, match=re.escape(said)):
        configured(request)
    twice.write_text("datasets:\n  a: {path: x}\n  a: {path: y}\n", encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(f"{twice}:3: field 'datasets.a': given twice, at lines 2 and 3")):
        selfcheck(get_task("ifeval"), twice, None, None, tmp_path / "selfcheck.json")  # type: ignore[arg-type]
    assert not (tmp_path / "selfcheck.json").exists()


def test_a_merge_key_is_no_duplicate(tmp_path: Path) -> None:
    text = (
        "x-common: &common {task: ifeval, prompts: ifeval_prompts_github, responses: gpt4_responses}\n"
        "runs:\n  mine:\n    <<: *common\n    task: ifeval_langcheck\n"
    )
    said = refused(tmp_path, text)  # merged, then refused by the schema for its top key, not as a duplicate
    assert "x-common: unknown key" in said and "twice" not in said, said


BOMB = "".join(
    f"b{level}: &b{level} [{', '.join([f'*b{level - 1}'] * 10) if level else ', '.join(['lol'] * 10)}]\n"
    for level in range(9)
)


def test_an_alias_bomb_is_refused_before_any_walk(tmp_path: Path) -> None:
    """10^9 values in 600 bytes: the config check walked them (hung for hours); refused at once."""
    said = refused(tmp_path, BOMB + "statistics: {resamples: 100, level: 0.9, interval: percentile, seed: 0, x: *b8}\n")
    assert said.startswith(f"{tmp_path / 'mine.yaml'}: refused: its aliases expand to more than 1,000,000 values")


def test_an_alias_bomb_given_with_dash_dash_config_is_refused(tmp_path: Path) -> None:
    """A --config value is YAML too (Snakemake's BaseLoader): its aliases are counted before any walk."""
    bomb = yaml.load("x: [" + BOMB.replace("\n", ", ") + "]", Loader=yaml.BaseLoader)["x"]
    said = refused(tmp_path, "{}\n", {"x": bomb})
    assert said == "config: top level: holds more than 1,000,000 values (aliases expanded)", said


# --- text: surrogates, bidi controls, line separators ----------------------------------------------


@pytest.mark.parametrize(
    "text, line, where",
    [
        (RUN + '    label: "GPT-4 \\udc80"\n', 3, "runs.gpt4_google.label"),
        ('{"runs": {"gpt4_google": {"label": "\\ud800"}}}\n', 1, "runs.gpt4_google.label"),
        ('datasets:\n  gpt4_responses:\n    description: "x\\udfff"\n', 3, "datasets.gpt4_responses.description"),
        ('canary: {ifeval: "\\udc80.jsonl"}\n', 1, "canary.ifeval"),
    ],
    ids=["label", "json-label", "description", "a-path"],
)
def test_a_lone_surrogate_is_one_line(tmp_path: Path, text: str, line: int, where: str) -> None:
    """YAML's and JSON's `\\udc80` is half of a UTF-16 pair, which no UTF-8 file can hold: it
    ended in a traceback inside the workflow when a job wrote it."""
    said = refused(tmp_path, text)
    assert said.startswith(f"{tmp_path / 'mine.yaml'}:{line}: config: {where}: holds a lone surrogate, U+D"), said


@pytest.mark.parametrize(
    "text, line, where, char",
    [
        (RUN + '    label: "evil \\u202egnp.exe"\n', 3, "runs.gpt4_google.label", "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
        (RUN + '    label: "two\\u2028lines"\n', 3, "runs.gpt4_google.label", "U+2028 (LINE SEPARATOR)"),
        (RUN + '    label: "bell\\a"\n', 3, "runs.gpt4_google.label", "U+0007 (a control character)"),
        ('citation:\n  title: "A \\u2066title"\n', 2, "citation.title", "U+2066 (LEFT-TO-RIGHT ISOLATE)"),
        (
            'citation:\n  title: t\n  authors:\n    - name: "\\u202dX"\n',
            4,
            "citation.authors.0.name",
            "U+202D (LEFT-TO-RIGHT OVERRIDE)",
        ),
    ],
    ids=["bidi-label", "line-separator-label", "control-label", "isolate-title", "override-author"],
)
def test_free_text_an_output_shows_holds_no_bidi_control_or_line_separator(
    tmp_path: Path, text: str, line: int, where: str, char: str
) -> None:
    said = refused(tmp_path, text)
    assert said.startswith(f"{tmp_path / 'mine.yaml'}:{line}: config: {where}: holds {char}, "), said


def test_csv_cells_show_bidi_controls_and_separators_escaped() -> None:
    """metrics.csv held a label's U+202E raw: a spreadsheet or editor reorders the row around it."""
    from ifaudit.io.formats.table import Table

    label = "evil \u202egnp.exe \u2028 \u200f \x1b[31m"
    written = Table.of([{"label": label, "value": 0.5}]).csv_bytes().decode("utf-8")
    assert not any(char in written for char in "\u202e\u2028\u200f\x1b"), written
    [row] = list(csv.DictReader(io.StringIO(written)))
    assert row["label"] == "evil \\u202egnp.exe \\u2028 \\u200f \\x1b[31m"


HOSTILE_TITLES = [
    "A \u2028title\u2029 with separators",
    "evil \u202egnp.exe\u202c and \u2066isolates\u2069",
    'quotes " and \\ backslash: colon # hash',
    "NEL \x85 and BOM \ufeff and tag \U000e0001",
    "plain Ünïcödé 中文 title",
]


@pytest.mark.parametrize("title", HOSTILE_TITLES)
def test_citation_cff_reads_back_as_written_and_holds_no_raw_control(title: str) -> None:
    """CITATION.cff wrote a title with raw U+2028 and bidi overrides, and a YAML reader read it
    back changed (U+2028 folded as a line break): every character is now itself or its escape."""
    from ifaudit.steps.artifact.bundle import citation

    description = {
        "project": {"commit": "0" * 40, "date": "2026-12-07T00:00:00Z"},
        "runs": ["a"],
        "grader": None,
    }
    author = {"family-names": title, "given-names": "A.", "affiliation": title}
    cff = citation(description, {"title": title, "authors": [author]}, {"a": None})
    text = cff.decode("utf-8")
    assert not any(char in text for char in "\u2028\u2029\u202e\u202c\u2066\u2069\x85\ufeff\U000e0001"), text
    for loader in {yaml.SafeLoader, getattr(yaml, "CSafeLoader", yaml.SafeLoader)}:
        read = yaml.load(text, Loader=loader)
        assert read["title"] == title
        assert read["authors"] == [{"family-names": title, "given-names": "A.", "affiliation": title}]


def test_yaml_string_round_trips_every_character_class() -> None:
    from ifaudit.io.formats.escape import yaml_string

    text = "".join(chr(code) for code in range(0x20000) if not 0xD800 <= code <= 0xDFFF)
    assert yaml.load(f"x: {yaml_string(text)}", Loader=yaml.SafeLoader)["x"] == text
    assert yaml_string("GPT-4, language-checked (2024)") == '"GPT-4, language-checked (2024)"'


def test_the_parser_says_a_mistake_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from ifaudit.cli import main

    for words, said in (
        (["stats", "--bogus"], "ifaudit stats: the following arguments are required: --grades, --prompts, --out"),
        (["stats", "--grades", "g", "--prompts", "p", "--out", "o", "--bogus"], "ifaudit: unrecognized arguments"),
        (["stats", "--interval", "\u202e"], "ifaudit stats: argument --interval: invalid choice: '\\u202e'"),
        (["summarize", "--label", "a\u202eb"], "ifaudit summarize: argument --label: holds U+202E (RIGHT-TO-LEFT"),
        (["summarize", "--label", "a\u2028b"], "ifaudit summarize: argument --label: holds U+2028 (LINE SEPARATOR)"),
    ):
        with pytest.raises(SystemExit) as stopped:
            main(words)
        assert stopped.value.code == 2
        [line] = capsys.readouterr().err.splitlines()
        assert line.startswith(f"ifaudit: error: {said}") and line.endswith("--help)"), line


# --- the same classes through the workflow: Snakemake reads the configs first ----------------------


@pytest.mark.e2e
@pytest.mark.parametrize(
    "text, config, said",
    [
        (
            STATISTICS.replace("level: 0.9", "level: .nan"),
            (),
            "test.yaml:3: config: statistics.level: nan is not a finite",
        ),
        (TWICE, (), "test.yaml:10: field 'runs.mine': given twice, at lines 2 and 10"),
        (BOMB + "x: *b8\n", (), "test.yaml: refused: its aliases expand to more than 1,000,000 values"),
        (
            RUN + '    label: "GPT-4 \\udc80"\n',
            (),
            "test.yaml:3: config: runs.gpt4_google.label: holds a lone surrogate",
        ),
        (RUN + '    label: "\\u202eevil"\n', (), "test.yaml:3: config: runs.gpt4_google.label: holds U+202E"),
        ("{}\n", ("shards=1e9",), "--config shards: 1000000000.0 is not of type 'integer', 'string'"),
    ],
    ids=["nan", "run-twice", "alias-bomb", "surrogate", "bidi", "float-shards"],
)
def test_the_workflow_refuses_each_class_in_one_line_before_any_job(
    tmp_path: Path, text: str, config: tuple[str, ...], said: str
) -> None:
    """The DAG's own start (a dry run): one line, exit 2, nothing written. The
    alias bomb hung the check for hours, `.nan` passed, a surrogate label ended in a traceback in
    a job, `--config shards=1e9` in a traceback while planning 10^9 shards."""
    from test_one_line_hostile import snakemake
    from test_workflow import without_profile_note

    (tmp_path / "test.yaml").write_text(text, encoding="utf-8")
    done = snakemake(tmp_path, "--dry-run", *(("--config", *config) if config else ()))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    ours = without_profile_note(done.stderr)
    assert ours.count("\n") == 1 and ours.startswith("ifaudit: error: "), done.stderr
    assert said in ours, ours
    assert sorted(path.name for path in tmp_path.iterdir()) == ["test.yaml"]  # no results/, no resources/


@pytest.mark.e2e
def test_shards_auto_plans_at_most_the_shards_a_config_may_name(tmp_path: Path) -> None:
    """`shards: auto` with `shard_responses: 1` planned a job per response and pass: 1,082
    responses, 2,164 grading jobs (10^6 responses would plan for hours). At most 1,000 a pass,
    as `shards:` may name; the grades do not depend on the count."""
    from conftest import GPT4_RESPONSES, read_jsonl, write_jsonl
    from test_one_line_hostile import snakemake

    answers = read_jsonl(GPT4_RESPONSES)
    write_jsonl(tmp_path / "twice.jsonl", [{**row, "sample": sample} for sample in (0, 1) for row in answers])
    settings = {
        "shards": "auto",
        "shard_responses": 1,
        "datasets": {"twice": {"path": str(tmp_path / "twice.jsonl")}},
        "runs": {
            "gpt4_google": None,
            "twice": {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "twice"},
        },
    }
    (tmp_path / "test.yaml").write_text(json.dumps(settings), encoding="utf-8")
    fetched = snakemake(tmp_path, "--cores", "2", "resources/data/twice.jsonl")  # the checkpoint the count waits for
    assert fetched.returncode == 0, fetched.stderr
    planned = snakemake(tmp_path, "--dry-run")
    assert planned.returncode == 0, planned.stderr
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", planned.stdout, flags=re.MULTILINE))
    assert jobs["grade_shard"] == "2000", planned.stdout  # 2 passes x 1,000 shards, not 2 x 1,082


MAPPING_BOMB = "".join(
    f"m{level}: &m{level} {{{', '.join(f'k{key}: ' + (f'*m{level - 1}' if level else 'lol') for key in range(10))}}}\n"
    for level in range(9)
)


def test_a_configfile_naming_an_alias_bomb_of_mappings_is_refused_before_snakemake_reads_it(tmp_path: Path) -> None:
    """Snakemake merges --configfile files before the Snakefile runs, walking every mapping with
    its aliases expanded: this bomb hung there for good. `make run` checks them first (the module's
    main, on its Snakemake arguments)."""
    from ifaudit.io.bounded_yaml import configfiles, main

    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(MAPPING_BOMB + "statistics: {x: *m8}\n", encoding="utf-8")
    argv = ["--cores", "2", "--configfile", "config/offline.yaml", str(bomb), "--config", "a=1", "all"]
    assert configfiles(argv) == [Path("config/offline.yaml"), bomb]
    assert configfiles(["--configfile=a.yaml", "b.yaml", "--configfiles", "c.yaml"]) == [Path("a.yaml"), Path("c.yaml")]
    with at_most(30):
        assert main(argv) == 2
    assert main(["--configfile", str(REPO / "config" / "offline.yaml"), str(tmp_path / "not-there.yaml")]) == 0


@pytest.mark.e2e
def test_make_run_refuses_an_alias_bomb_of_mappings_in_one_line(tmp_path: Path) -> None:
    import subprocess

    from test_workflow import snakemake_call, without_profile_note

    (tmp_path / "test.yaml").write_text(MAPPING_BOMB + "statistics: {x: *m8}\n", encoding="utf-8")
    command, environment = snakemake_call(tmp_path)
    arguments = " ".join(command[command.index("-s") :])
    made = subprocess.run(
        ["make", "--no-print-directory", "-f", str(REPO / "Makefile"), "run", f"ARGS={arguments}"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode != 0
    lines = [line for line in without_profile_note(made.stderr).splitlines() if not line.startswith("make")]
    assert lines == [
        f"ifaudit: error: {tmp_path / 'test.yaml'}: refused: its aliases expand to more than 1,000,000 values "
        "(hint: write the values out instead of aliasing them)"
    ], made.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["test.yaml"]
