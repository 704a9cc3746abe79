"""The canary's sentinels: they hold in the pinned environment, and an environment that grades
differently (another nltk, another Unicode database) fails the canary, naming the sentinel.

The scratch-environment test builds real virtual environments from requirements.lock with one
package swapped, installing from PyPI; select it with `-m scratch_env` (it runs by default too)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import GPT4_RESPONSES, IFEVAL_PROMPTS, REPO, cli_env, run_cli
from grader_fixtures import missing_upstream_copy, upstream_copy

CANARIES = REPO / "src" / "ifaudit" / "tasks" / "canaries"
TASKS_WITH_SENTINELS = (
    "ifeval",
    "ifeval_langcheck",
    "ifeval_arabic_inception",
    "ifeval_arabic_inception_hf",
    "ifeval_arabic_inception_hf_langcheck",
)
# sha256 of each canary's "items" (json.dumps(items, sort_keys=True, ensure_ascii=False)) before the
# sentinels were added (commit 92af16f): the real responses and their expectations are unchanged.
ITEMS_SHA256 = {
    "ifeval": "572bde52b7131cafb9b79c62744beeb85a459b8fa29660d556962a4b75aac52e",
    "ifeval_langcheck": "3435fd4090bd1e61a558c3ed222d9500b10d0a0dad5d78e031dd3ba906b4dcc3",
    "ifeval_arabic_inception": "760f273c927ce2d6df735cfae1d891a83aaa25261168fbb3a3624c8ce9d396b2",
    "ifeval_arabic_inception_hf": "c1ef396db28a2bc187f397845abbce4a41adb8534cfd3ed869b2ad42efd0b04d",
    "ifeval_arabic_inception_hf_langcheck": "e2963cc0f0dd2ef3079088004d208809b723c155a5df1c6ba912f41a8495dfe1",
    "infobench": "855024731a6aa2585a19d9d266547bb06a557febdc539bfa96d3e54be92d7e72",
}
# The pinned upstream grader's copy the canaries grade with (`--from`): never the stand-in.
UPSTREAM = upstream_copy()


def upstream_grader() -> list[str]:
    """The options that grade with the pinned upstream copy; a missing copy fails the test."""
    assert UPSTREAM.exists(), missing_upstream_copy(UPSTREAM)
    return ["--grader", "upstream", "--from", str(UPSTREAM), "--offline"]


def canary(task: str) -> dict:
    return json.loads((CANARIES / f"{task}.json").read_text(encoding="utf-8"))


def items_digest(task: str) -> str:
    return hashlib.sha256(json.dumps(canary(task)["items"], sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def canary_args(task: str) -> list[str]:
    data = ["--prompts", str(IFEVAL_PROMPTS), "--responses", str(GPT4_RESPONSES)] if "responses" in canary(task) else []
    return ["canary", "--task", task, *data, "--require-pass"]


@pytest.mark.parametrize("task", TASKS_WITH_SENTINELS)
def test_every_sentinel_says_what_it_guards_and_holds_its_pinned_text(task: str) -> None:
    sentinels = canary(task)["sentinels"]
    assert sentinels and len({s["name"] for s in sentinels}) == len(sentinels)
    for sentinel in sentinels:
        assert sentinel["guards"] and sentinel["expected"]
        assert hashlib.sha256(sentinel["response"].encode()).hexdigest() == sentinel["response_sha256"]
    # Every sentinel is in the documentation's table.
    table = (REPO / "docs" / "environment_sensitivity.md").read_text(encoding="utf-8")
    assert {s["name"] for s in sentinels} <= set(re.findall(r"`([a-z0-9_]+)`", table))


def test_the_real_canary_items_are_unchanged() -> None:
    assert {task: items_digest(task) for task in ITEMS_SHA256} == ITEMS_SHA256
    assert len(canary("ifeval")["items"]) == 20


@pytest.fixture(scope="module")
def pinned_canary(resources: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[dict, str]]:
    """`ifaudit canary --require-pass` of a task in this (the pinned) environment, run once per task
    for the module: its verdict and what it said on stderr."""
    folder = tmp_path_factory.mktemp("pinned_canary")
    verdicts: dict[str, tuple[dict, str]] = {}

    def run(task: str) -> tuple[dict, str]:
        if task not in verdicts:
            out = folder / f"{task}.json"
            done = run_cli([*canary_args(task), *upstream_grader(), "--out", str(out)], resources)
            verdicts[task] = json.loads(out.read_text()), done.stderr
        return verdicts[task]

    return run


@pytest.mark.parametrize("task", TASKS_WITH_SENTINELS)
def test_the_pinned_environment_passes_every_sentinel(task: str, pinned_canary) -> None:
    verdict, stderr = pinned_canary(task)
    assert verdict["passed"] and verdict["sentinels"] == len(canary(task)["sentinels"])
    assert verdict["sentinels_flipped"] == []
    assert f"{verdict['sentinels']} environment sentinels hold" in stderr
    assert verdict["versions"]["unicodedata"] == verdict["environment"]["unicodedata"]
    assert set(verdict["versions"]) == {"nltk", "regex", "langdetect", "python", "unicodedata"}
    assert verdict["environment"]["grader"]["kind"] != "stand-in"  # Google's tasks: the pinned upstream


def test_grading_dependencies_are_pinned_exactly_as_in_the_lock() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    # The stand-in (if-verifiable) is an extra: the upstream image does without it.
    declared = [
        *project["dependencies"],
        *(spec for extra in project["optional-dependencies"].values() for spec in extra),
    ]
    lock = (REPO / "requirements.lock").read_text()
    for name in ("nltk", "regex", "langdetect", "absl-py", "immutabledict", "if-verifiable"):
        pin = next(spec for spec in declared if re.match(rf"{re.escape(name)}\b", spec))
        assert re.fullmatch(rf"{re.escape(name)}==\S+", pin), pin
        assert re.search(rf"^{re.escape(pin)} ", lock, flags=re.MULTILINE), f"{pin} is not what requirements.lock holds"


# --- A different Unicode database --------------------------------------------------------------
# Unicode 15.0 made U+1DF25 a lowercase letter; Python 3.11 (Unicode 14.0) has it unassigned. The
# sitecustomize below shows the case checkers that view of the one character, as Python 3.13 would.
FAKE_UNICODE_15 = textwrap.dedent('''
    import importlib.abc, importlib.machinery, sys, unicodedata

    FAKE_LOWERCASE = "\\U0001DF25"


    class Unicode15Str(str):
        """str.isupper() as CPython computes it, with U+1DF25 a lowercase letter."""

        def isupper(self):
            cased = False
            for char in self:
                if char == FAKE_LOWERCASE or char.islower() or unicodedata.category(char) == "Lt":
                    return False
                cased = cased or char.isupper()
            return cased


    def fake_view(cls):
        check = cls.check_following
        cls.check_following = lambda self, value: check(self, Unicode15Str(value))


    class Hook(importlib.abc.MetaPathFinder):
        NAMES = ("instruction_following_eval.instructions", "if_verifiable.ifeval.instructions",
                 "ifaudit.checkers.arabic.inception_registry")

        def find_spec(self, name, path, target=None):
            if name not in self.NAMES:
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            execute = spec.loader.exec_module

            def exec_module(module):
                execute(module)
                fake_view(module.CapitalLettersEnglishChecker)

            spec.loader.exec_module = exec_module
            return spec


    sys.meta_path.insert(0, Hook())
''')


def test_python_3_13_sees_the_sentinel_character_as_lowercase() -> None:
    """What the fake claims, measured on a real Python 3.13 where one is installed."""
    candidates = [shutil.which("python3.13"), *sorted(Path.home().glob(".pyenv/versions/3.13*/bin/python3.13"))]
    python313 = next(
        (c for c in candidates if c and subprocess.run([c, "-c", ""], capture_output=True).returncode == 0), None
    )
    if python313 is None:
        pytest.skip("no Python 3.13 on this machine")
    probe = (
        "import unicodedata; c = '\\U0001DF25'; print(unicodedata.unidata_version, c.islower(), ('A' + c).isupper())"
    )
    assert subprocess.run([python313, "-c", probe], capture_output=True, text=True).stdout.split() == [
        "15.1.0",
        "True",
        "False",
    ]
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.split() == [
        "14.0.0",
        "False",
        "True",
    ]


@pytest.mark.parametrize("task", ["ifeval", "ifeval_arabic_inception"])
def test_a_different_unicode_database_fails_the_canary(task: str, resources: Path, tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(FAKE_UNICODE_15)
    out = tmp_path / "verdict.json"
    done = run_cli(
        [*canary_args(task), *upstream_grader(), "--out", str(out)],
        resources,
        check=False,
        PYTHONPATH=str(tmp_path / "site"),
    )
    assert done.returncode == 1, done.stderr
    verdict = json.loads(out.read_text())
    assert verdict["sentinels_flipped"] == ["python_unicode_all_capitals"]
    assert verdict["environment"]["grader"]["kind"] != "stand-in"
    flip = next(d for d in verdict["disagreements"] if "sentinel" in d)
    assert flip["expected"] == [True] and flip["got"] == [False]
    assert "Python's Unicode database" in flip["guards"]
    assert "sentinel python_unicode_all_capitals flipped" in done.stderr
    assert "unicodedata 14.0.0" in done.stderr
    # The real responses alone would not have noticed.
    assert all("sentinel" in d for d in verdict["disagreements"])
    # A run graded in this environment is not counted, and its summary says which sentinel flipped.
    from ifaudit.io.prompts import read_prompts
    from ifaudit.steps.grading.summary import summarize
    from ifaudit.tasks.registry import TASKS

    (tmp_path / "grades.jsonl").write_text("")
    result = summarize(TASKS[task], "run", None, tmp_path / "grades.jsonl", read_prompts(IFEVAL_PROMPTS), out)
    assert result["counted"] is False
    assert result["not_counted_because"] == [
        f"canary failed: {len(verdict['disagreements'])} disagreements in {out} "
        "(sentinels flipped: python_unicode_all_capitals)"
    ]


def test_a_sentinel_whose_text_was_altered_fails() -> None:
    """An editor or tool that normalizes the NFD sentinel to NFC must not pass silently."""
    import unicodedata

    from ifaudit.steps.grading.canary import check_sentinels

    altered = canary("ifeval")
    sentinel = next(s for s in altered["sentinels"] if s["name"] == "nltk_words_nfd_accents")
    sentinel["response"] = unicodedata.normalize("NFC", sentinel["response"])

    def never(*_: object) -> dict:
        raise AssertionError("an altered sentinel is not graded")

    altered["sentinels"] = [sentinel]
    [flip] = check_sentinels(altered, never, "14.0.0")
    assert flip["sentinel"] == "nltk_words_nfd_accents" and flip["problem"] == "sentinel text differs"


def test_the_stand_in_passes_the_sentinels_too(resources: Path, tmp_path: Path) -> None:
    out = tmp_path / "verdict.json"
    run_cli([*canary_args("ifeval"), "--grader", "stand-in", "--out", str(out)], resources)
    assert json.loads(out.read_text())["sentinels_flipped"] == []


# --- Other nltk releases, from the registry --------------------------------------------------
# The wheels PyPI serves for the swapped releases, pinned like the lock's entries.
NLTK_WHEELS = {
    "3.9.1": "4fa26829c5b00715afe3061398a8989dc643b92ce7dd93fb4585a70930d168a1",
    "3.10.2": "2c7ccacb765c5e26b0cb60fb1b57080af522c6924d12a714a243305ba3637412",
}
# What `ifaudit canary` imports (absl-py, immutabledict, langdetect, nltk, numpy, regex), with
# their own requirements: the lock's entries for these, hashes and all.
GRADING_CLOSURE = (
    "absl-py",
    "click",
    "defusedxml",
    "immutabledict",
    "joblib",
    "langdetect",
    "nltk",
    "numpy",
    "regex",
    "six",
    "tqdm",
)
FLIPS = {
    ("3.9.1", "ifeval"): [
        "nltk_sentence_smart_quote",
        "nltk_words_nfd_accents",
        "nltk_words_zero_width_joiner",
        "regex_unicode_word",
    ],
    ("3.10.2", "ifeval"): ["nltk_words_nfd_accents", "nltk_words_zero_width_joiner", "regex_unicode_word"],
    ("3.9.1", "ifeval_arabic_inception"): [
        "nltk_sentence_smart_quote",
        "nltk_words_arabic_tashkeel",
        "regex_unicode_word",
    ],
    ("3.10.2", "ifeval_arabic_inception"): ["nltk_words_arabic_tashkeel", "regex_unicode_word"],
}


def lock_entries(lock: str) -> dict[str, str]:
    """Each requirement of the lock (name==version and its hashes) by name, comments left out."""
    entries: dict[str, str] = {}
    for block in re.split(r"\n(?=\S)", lock):
        lines = [line.split("#")[0].rstrip() for line in block.splitlines() if not line.lstrip().startswith("#")]
        if match := re.match(r"([A-Za-z0-9_.\-]+)==", lines[0]):
            entries[match.group(1).lower()] = "\n".join(line for line in lines if line).rstrip(" \\")
    return entries


def scratch_env(root: Path, nltk_version: str) -> Path:
    """A fresh venv holding the lock's grading packages, nltk swapped for `nltk_version`."""
    entries = lock_entries((REPO / "requirements.lock").read_text())
    entries["nltk"] = f"nltk=={nltk_version} --hash=sha256:{NLTK_WHEELS[nltk_version]}"
    requirements = root / f"nltk-{nltk_version}.txt"
    requirements.write_text("\n".join(entries[name] for name in GRADING_CLOSURE) + "\n")
    venv = root / f"nltk-{nltk_version}"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "--quiet",
            "--no-deps",
            "--no-compile",
            "--require-hashes",
            "-r",
            str(requirements),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return venv / "bin" / "python"


@pytest.mark.scratch_env
def test_other_nltk_releases_fail_the_canary_naming_the_sentinels(
    resources: Path, pinned_canary, tmp_path: Path
) -> None:
    with ThreadPoolExecutor(2) as pool:
        pythons = dict(zip(NLTK_WHEELS, pool.map(lambda v: scratch_env(tmp_path, v), NLTK_WHEELS)))
    for nltk_version, python in pythons.items():
        found = subprocess.run(
            [str(python), "-c", "import nltk, sys; print(nltk.__version__, sys.prefix)"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert found == [nltk_version, str(python.parent.parent)]  # a real venv of its own
        for task in ("ifeval", "ifeval_arabic_inception"):
            out = tmp_path / f"{nltk_version}-{task}.json"
            done = subprocess.run(
                [str(python), "-m", "ifaudit.cli", *canary_args(task), *upstream_grader(), "--out", str(out)],
                capture_output=True,
                text=True,
                env=cli_env(resources, PYTHONPATH=str(REPO / "src")),
            )
            assert done.returncode == 1, done.stderr
            verdict = json.loads(out.read_text())
            assert verdict["sentinels_flipped"] == sorted(FLIPS[nltk_version, task])
            assert verdict["versions"]["nltk"] == nltk_version
            assert all("sentinel" in d for d in verdict["disagreements"])  # the real responses all agree
            for name in FLIPS[nltk_version, task]:
                assert f"sentinel {name} flipped" in done.stderr
            assert f"found nltk {nltk_version}, regex" in done.stderr
    # The pinned environment (this one) passes the same canaries (the module's one run of each).
    for task in ("ifeval", "ifeval_arabic_inception"):
        assert pinned_canary(task)[0]["passed"]
