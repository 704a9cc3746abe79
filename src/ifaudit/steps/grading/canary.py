"""The canary: fixed responses regraded in the run's own environment before its grades count.

A committed canary lists responses with the grades a reference gave them. IFEval's canary names
20 of Google's GPT-4 responses by key and sha256 (the texts come from the fetched, verified
response file) with the grades of the unmodified upstream grader. A canary may instead carry its
prompts and responses inline (Arabic IFEval's, built from the reference implementation's test
vectors). Any disagreement (or a response whose text is not the pinned one) fails the canary,
and the verdict names each disagreeing response and instruction, so an environment whose grader,
NLTK data or seeding differs is caught before its runs count.

Real responses rarely touch the corners where environments differ (the 20 GPT-4 responses grade
the same under nltk 3.9.1 ... 3.10.4), so a canary also carries *sentinels*: short made-up
responses, each built so that one known environment-sensitive behaviour (nltk's sentence
splitting or word counting, the punkt data, langdetect on a borderline text, the Unicode tables of
Python or of `regex`) decides its verdict. A sentinel that flips names itself, what it guards, what
was expected and what came out; docs/environment_sensitivity.md lists them all. The sentinels of
Python's Unicode database carry their verdict per Unicode version (`expected_by_unicode`): Python
3.13 passes them with Unicode 15.1's verdicts, and a Python whose tables are not its version's
fails them (its runs' texts are checked by the summary: ifaudit.tasks.unicode_exposure).

In the DAG every grading process runs the canary itself, with the grader it then grades with,
before grading (grading resets its randomness before each response, so the canary leaves no
trace in the grades). The task's verdict combines those of all its grading processes: one
process that fails is enough to fail it, and so are processes whose grading environments differ
(a verdict names one environment), each differing value named (`environment_differences`), never
counted as a disagreement of responses.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ifaudit.io.canonical import pretty_json_bytes, sha256_bytes, write_json
from ifaudit.core.errors import IfauditError, InputError
from ifaudit.io.prompts import prompt_from_record
from ifaudit.io.responses import read_responses
from ifaudit.core.records import Prompt, Response
from ifaudit.tasks.canary_files import load_canary, load_canary_file, needs_datasets

if TYPE_CHECKING:  # combine-canaries, a small job, starts without the tasks' imports
    from ifaudit.tasks.base import Grading, GradingOptions, Task


def canary_of(task: Task, path: Path | None) -> dict[str, Any]:
    """The canary file given, else the task's committed one."""
    return load_canary_file(path) if path else load_canary(task.name)


def canary_inputs(
    task: Task, canary: dict[str, Any], prompts: Path | None, responses: Path | None, options: str
) -> tuple[list[Prompt], list[Response]]:
    """The canary's prompts and responses: read from its datasets' files, or carried inline.
    `options` names the command-line options that give the files, for the error."""
    if not needs_datasets(canary):
        return inline_inputs(canary)
    if not (prompts and responses):
        raise IfauditError(
            f"the {task.name} canary needs {options} (its datasets: "
            f"{canary['prompts']['dataset']}, {canary['responses']['dataset']})"
        )
    read = task.read_prompts(prompts)
    return read, read_responses(responses, read)


def inline_inputs(canary: dict[str, Any]) -> tuple[list[Prompt], list[Response]]:
    prompts = [prompt_from_record(item["prompt"], "<canary>", index) for index, item in enumerate(canary["items"], 1)]
    responses = [
        Response(key=item["key"], sample=item["sample"], text=item["response"], line=index)
        for index, item in enumerate(canary["items"], 1)
    ]
    return prompts, responses


def _graded_verdicts(graded: dict[str, Any], mode: str) -> Any:
    return graded["gate"]["passed"] if mode == "gate" else graded[mode]["follow_instruction_list"]


def expected_verdicts(sentinel: Mapping[str, Any], unicode: str, grader_version: str = "") -> dict[str, Any]:
    """A sentinel's expected verdicts under Unicode `unicode` and the grader at `grader_version`:
    those it carries for that grader (`expected_by_grader`: IFBench's, pinned at two commits
    whose sentence splitters and repeat-span checkers differ by design), else for that Unicode
    version (`expected_by_unicode`: the Python-Unicode sentinels, whose verdicts hang on the
    version by design), else `expected`, taken in the pinned environment (Unicode 14.0)."""
    by_grader = sentinel.get("expected_by_grader", {})
    if grader_version in by_grader:
        return dict(by_grader[grader_version])
    return dict(sentinel.get("expected_by_unicode", {}).get(unicode, sentinel["expected"]))


def check_sentinels(
    canary: dict[str, Any], grade: Callable[[Prompt, Response], dict[str, Any]], unicode: str
) -> list[dict[str, Any]]:
    """Grade each sentinel with `grade` under Unicode `unicode` (this Python's database); one
    record per sentinel whose text or verdict is not the one pinned for that version."""
    flips: list[dict[str, Any]] = []
    for index, sentinel in enumerate(canary.get("sentinels", []), 1):
        where = {"sentinel": sentinel["name"], "guards": sentinel["guards"]}
        actual_sha = sha256_bytes(sentinel["response"].encode("utf-8"))
        if actual_sha != sentinel["response_sha256"]:  # an editor normalizing NFD text, say
            flips.append(
                {
                    **where,
                    "problem": "sentinel text differs",
                    "expected_sha256": sentinel["response_sha256"],
                    "got_sha256": actual_sha,
                }
            )
            continue
        prompt = prompt_from_record(sentinel["prompt"], "<canary sentinel>", index)
        graded = grade(prompt, Response(key=prompt.key, sample=0, text=sentinel["response"], line=index))
        grader_version = str(graded.get("grader", {}).get("version", ""))
        for mode, expected in sorted(expected_verdicts(sentinel, unicode, grader_version).items()):
            got = _graded_verdicts(graded, mode)
            if got != expected:
                flips.append(
                    {
                        **where,
                        "mode": mode,
                        "instruction_id_list": list(prompt.instruction_id_list),
                        "expected": expected,
                        "got": got,
                        "problem": "sentinel flipped",
                        "unicode": unicode,
                    }
                )
    return flips


def check_canary(
    canary: dict[str, Any],
    grade: Callable[[Prompt, Response], dict[str, Any]],
    task: Task,
    prompts: list[Prompt],
    responses: list[Response],
    unicode: str,
) -> dict[str, Any]:
    """Regrade each item and each sentinel with `grade` (the task's own grading, in this
    environment, whose Unicode database is `unicode`) and compare."""
    by_key = {prompt.key: prompt for prompt in prompts}
    by_pair = {(r.key, r.sample): r for r in responses}
    disagreements: list[dict[str, Any]] = []
    for item in canary["items"]:
        where = {"key": item["key"], "sample": item["sample"]}
        response = by_pair.get((item["key"], item["sample"]))
        if response is None or item["key"] not in by_key:
            disagreements.append({**where, "problem": "response or prompt missing"})
            continue
        actual_sha = sha256_bytes(response.text.encode("utf-8"))
        if actual_sha != item["response_sha256"]:
            disagreements.append(
                {
                    **where,
                    "problem": "response text differs",
                    "expected_sha256": item["response_sha256"],
                    "got_sha256": actual_sha,
                }
            )
            continue
        graded = grade(by_key[item["key"]], response)
        for mode in task.modes:
            if mode not in item:
                continue
            got = graded[mode]["follow_instruction_list"]
            if len(got) != len(item[mode]):  # a grader that skips or adds an instruction disagrees
                disagreements.append(
                    {
                        **where,
                        "mode": mode,
                        "expected": len(item[mode]),
                        "got": len(got),
                        "problem": "verdict count differs",
                    }
                )
                continue
            for index, (expected, actual) in enumerate(zip(item[mode], got, strict=True)):
                if expected != actual:
                    disagreements.append(
                        {
                            **where,
                            "mode": mode,
                            "index": index,
                            "instruction_id": item["instruction_id_list"][index],
                            "expected": expected,
                            "got": actual,
                            "problem": "grade differs",
                        }
                    )
        if "gate" in item and graded["gate"]["passed"] != item["gate"]:
            disagreements.append(
                {
                    **where,
                    "mode": "gate",
                    "expected": item["gate"],
                    "got": graded["gate"]["passed"],
                    "rule": graded["gate"]["rule"],
                    "problem": "gate verdict differs",
                }
            )
    flips = check_sentinels(canary, grade, unicode)
    disagreements += flips
    return {
        "task": canary["task"],
        "items": len(canary["items"]),
        "passed": not disagreements,
        "disagreements": disagreements,
        "sentinels": len(canary.get("sentinels", [])),
        "sentinels_flipped": sorted({flip["sentinel"] for flip in flips}),
    }


def run_canary(
    canary: dict[str, Any],
    grading: Grading,
    task: Task,
    prompts: list[Prompt],
    responses: list[Response],
    responses_path: Path | None,
) -> dict[str, Any]:
    """The verdict of `canary` graded by `grading` (this process's), with its environment."""
    from ifaudit.tasks.environment import sensitive_versions, unicode_version

    grade_one, environment = grading.canary_grader(responses_path)
    verdict = check_canary(canary, grade_one, task, prompts, responses, unicode_version())
    verdict["environment"] = environment
    verdict["versions"] = sensitive_versions()
    return verdict


def explain(verdict: dict[str, Any], task: str, out: Path) -> list[str]:
    """The lines a command prints about a verdict: agreement, or each flipped sentinel and the versions."""
    if verdict["passed"]:
        return [
            f"canary {task}: {verdict['items']} responses regraded, all agree; "
            f"{verdict['sentinels']} environment sentinels hold"
        ]
    lines = [
        f"ifaudit: CANARY FAILED for {task}: {len(verdict['disagreements'])} disagreements "
        f"(see {out}); runs graded in this environment will not count"
    ]
    flips = {flip["sentinel"]: flip for flip in verdict["disagreements"] if "sentinel" in flip}
    lines += [
        f"ifaudit: sentinel {name} flipped (expected {flip.get('expected')}, got {flip.get('got')}); "
        f"it guards {flip['guards']}"
        for name, flip in flips.items()
    ]
    if flips:
        lines.append(
            "ifaudit: found " + ", ".join(f"{name} {version}" for name, version in verdict["versions"].items())
        )
    return lines


# A fingerprint's leaves (tasks/environment.py) as a person names them: a package by its name, a
# grader file by its path, anything else by its place in the record.
_SHA256_LEAVES = ("grader", "file_sha256")
ABSENT = "absent"


def certify(
    task: Task,
    grading: Grading,
    canary_file: Path | None,
    prompts: Path | None,
    responses: Path | None,
    out: Path,
    prefix: str,
    already_read: tuple[list[Prompt], list[Response]] | None = None,
) -> bool:
    """Run the task's canary with `grading`, write its verdict to `out` and say how it went on
    stderr. `already_read`: the records of `prompts` and `responses`, if the caller has read them;
    `prefix`: the options that name the canary's datasets, for the message when they are missing."""
    canary = canary_of(task, canary_file)
    if already_read is not None and needs_datasets(canary):
        items = already_read
    else:
        items = canary_inputs(task, canary, prompts, responses, f"{prefix}prompts and {prefix}responses")
    verdict = run_canary(canary, grading, task, *items, responses)
    write_json(out, verdict)
    for line in explain(verdict, task.name, out):
        print(line, file=sys.stderr)
    return bool(verdict["passed"])


def selfcheck(task: Task, config: Path, mirror: Path | None, options: GradingOptions, out: Path) -> bool:
    """The task's committed canary with its datasets fetched from the config's sources (verified
    by sha256) into a scratch folder: does this environment grade as the reference did?"""
    import shutil
    import tempfile

    canary = load_canary(task.name)
    work = Path(tempfile.mkdtemp(prefix="ifaudit-selfcheck-"))
    try:
        return _selfcheck_in(work, task, canary, config, mirror, options, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _selfcheck_in(
    work: Path,
    task: Task,
    canary: dict[str, Any],
    config: Path,
    mirror: Path | None,
    options: GradingOptions,
    out: Path,
) -> bool:
    import yaml

    from ifaudit.io import bounded_yaml
    from ifaudit.io.remote.fetch import config_sources, fetch

    fetched: dict[str, Path | None] = {"prompts": None, "responses": None}
    if needs_datasets(canary):
        try:
            datasets = bounded_yaml.load(config.read_text(encoding="utf-8"))["datasets"]
        except (bounded_yaml.DuplicateKey, bounded_yaml.TooManyValues) as exc:  # read as the config check reads it
            raise bounded_yaml.refusal(config, exc) from None
        except (UnicodeDecodeError, yaml.YAMLError, TypeError, KeyError) as exc:  # binary, not YAML, no datasets
            raise InputError(f"not a config with datasets ({type(exc).__name__})", path=config) from None
        for role in fetched:
            name = canary[role]["dataset"]
            spec = datasets[name]
            fetched[role] = target = work / f"{name}.jsonl"
            fetch(
                name,
                target,
                work / f"{name}.json",
                config_sources(spec, mirror, options.offline),
                spec.get("sha256"),
                work / "checksums",
            )
    return certify(task, task.load(options), None, fetched["prompts"], fetched["responses"], out, "--")


def environment_leaves(environment: Mapping[str, Any], path: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """Every value of a fingerprint by its path of keys (keys may hold dots, so no dotted path)."""
    leaves: dict[tuple[str, ...], Any] = {}
    for key, value in environment.items():
        if isinstance(value, Mapping):
            leaves.update(environment_leaves(value, (*path, key)))
        else:
            leaves[(*path, key)] = value
    return leaves


def leaf_name(path: tuple[str, ...]) -> str:
    """`nltk` for ("packages", "nltk"), `instruction_following_eval/instructions.py sha256` for a
    grader file, `python`, `unicodedata`, else the keys joined by spaces."""
    if path[0] == "packages" and len(path) == 2:
        return path[1]
    if path[:2] == _SHA256_LEAVES and len(path) == 3:
        return f"{path[2]} sha256"
    return " ".join(path)


def environment_differences(first: Mapping[str, Any], other: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each leaf where `other`'s fingerprint differs from `first`'s, in path order; a leaf one
    of them lacks is `absent` there."""
    ours, theirs = environment_leaves(first), environment_leaves(other)
    return [
        {"what": leaf_name(path), "first": ours.get(path, ABSENT), "other": theirs.get(path, ABSENT)}
        for path in sorted(set(ours) | set(theirs))
        if ours.get(path, ABSENT) != theirs.get(path, ABSENT)
    ]


def _shown(value: Any) -> str:
    """A leaf's value in a message: a sha256 shortened to 12 digits (the record keeps it whole)."""
    if isinstance(value, str):
        is_sha256 = len(value) == 64 and all(c in "0123456789abcdef" for c in value)
        return value[:12] + "…" if is_sha256 else value
    return json.dumps(value)


def difference_problem(differences: list[dict[str, Any]]) -> str:
    """`grading environments differ: nltk 3.10.4 vs 3.9.1, python 3.11.7 vs 3.12.1`."""
    listed = ", ".join(f"{d['what']} {_shown(d['first'])} vs {_shown(d['other'])}" for d in differences)
    return f"grading environments differ: {listed}"


def failure_reason(verdict: Mapping[str, Any]) -> str:
    """Why a (combined) verdict failed, in one phrase: its disagreements of responses and
    sentinels, if any (`N disagreements`, the wording summaries and reports have always used),
    and each difference between its grading environments, if any."""
    reasons = []
    if verdict["disagreements"]:
        reasons.append(f"{len(verdict['disagreements'])} disagreements")
    reasons += [item["problem"] for item in verdict.get("environment_differences", [])]
    return "; ".join(reasons) or "no reason recorded"


def combined_line(verdict: Mapping[str, Any], processes: int, out: Path) -> str:
    """The line `combine-canaries` prints about the verdict it wrote to `out`."""
    if verdict["passed"]:
        return f"canary of {processes} grading processes: passed -> {out}"
    return (
        f"canary of {processes} grading processes: FAILED ({failure_reason(verdict)}): "
        f"runs graded by these processes will not count -> {out}"
    )


def _environment_differences_of(
    first_name: str, first: Mapping[str, Any], verdict: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """How `verdict`'s environment differs from the first verdict's (file `first_name`), and the
    differences it already records if it was itself combined (their files go by its own name)."""
    recorded = [
        {key: value for key, value in item.items() if key != "in"}
        for item in verdict.get("environment_differences", [])
    ]
    differences = environment_differences(first["environment"], verdict["environment"])
    if not differences:
        return recorded
    problem = {"problem": difference_problem(differences), "differs": differences, "compared_with": first_name}
    return [*recorded, problem]


def _grouped(found: dict[str, list[str]]) -> list[dict[str, Any]]:
    return [{**json.loads(key), "in": names} for key, names in found.items()]


def combine_verdicts(verdicts: dict[str, bytes]) -> bytes:
    """One verdict for a task from those of its grading processes (file name -> bytes, in order).

    Processes that agree wrote the same bytes, and the task's verdict is those bytes: what a
    single canary process writes. Otherwise the first verdict stands for the rest, except that
    its disagreements are all the processes' disagreements, each naming the verdict files (`in`)
    that report it, and it passes only if there are none and every process graded in the first
    one's environment. Each other environment is recorded in `environment_differences` (never
    among the disagreements: no response disagreed): its differing leaves (`differs`), the
    problem naming them with both values, the first verdict's file (`compared_with`) and its own
    files (`in`)."""
    distinct = list(dict.fromkeys(verdicts.values()))
    if not distinct:
        raise InputError("no canary verdicts to combine", field="canary")
    if len(distinct) == 1:
        return distinct[0]
    parsed = {name: json.loads(data) for name, data in verdicts.items()}
    first_name, first = next(iter(parsed.items()))
    found: dict[str, list[str]] = {}
    environments: dict[str, list[str]] = {}
    for name, verdict in parsed.items():
        for disagreement in verdict["disagreements"]:
            found.setdefault(json.dumps(disagreement, sort_keys=True), []).append(name)
        for difference in _environment_differences_of(first_name, first, verdict):
            environments.setdefault(json.dumps(difference, sort_keys=True), []).append(name)
    disagreements, differing = _grouped(found), _grouped(environments)
    flipped = sorted({name for verdict in parsed.values() for name in verdict["sentinels_flipped"]})
    combined = {
        **first,
        "passed": not disagreements and not differing,
        "disagreements": disagreements,
        "sentinels_flipped": flipped,
    }
    if differing:
        combined["environment_differences"] = differing
    return pretty_json_bytes(combined)
