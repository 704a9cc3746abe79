"""IFBench's canary: 20 sample outputs with upstream's committed verdicts and sentinels for each
environment-sensitive behaviour, checked under either pin; an environment that changes one of
those behaviours fails it, naming the sentinel."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import cli_env, run_cli
from test_ifbench_reference import PROMPTS, SAMPLE_OUTPUTS

COMMITS = {"c6767a1": "c6767a19bd82ac0536cab950f2f8f6bcc6fabe7c", "db69a6f": "db69a6f05689830b0068b8f1529ebcfd2f3b164c"}


def canary_args(out: Path, version: str) -> list[str]:
    return ["canary", "--task", "ifbench", "--prompts", str(PROMPTS["294"]), "--responses", str(SAMPLE_OUTPUTS)] + [
        "--out",
        str(out),
        "--grader",
        "upstream",
        "--grader-version",
        version,
        "--offline",
        "--require-pass",
    ]


@pytest.mark.parametrize("version", ["c6767a1", "db69a6f"])
def test_committed_ifbench_canary_passes_under_either_pin(version: str, resources: Path, tmp_path: Path) -> None:
    out = tmp_path / "canary.json"
    run_cli(canary_args(out, version), resources)
    verdict = json.loads(out.read_text())
    assert verdict["passed"] and verdict["items"] == 20 and verdict["sentinels"] == 7
    assert verdict["environment"]["grader"]["version"] == COMMITS[version]
    assert sorted(verdict["environment"]["nltk_data"]["resources"]) == [
        "corpora/stopwords",
        "taggers/averaged_perceptron_tagger_eng",
        "tokenizers/punkt_tab",
    ]


# Each scratch environment changes one behaviour a sentinel guards, in the grading process
# itself, before the canary runs: what a different nltk release, NLTK data folder or seeding does.
SCRATCH = {
    "another_stopword_list": (
        "c6767a1",
        "from nltk.corpus.reader import WordListCorpusReader as R\n"
        "words = R.words\n"
        "R.words = lambda self, *a, **k: [w for w in words(self, *a, **k) if w not in ('ma', 'ain', 'nor')]\n",
        "stopwords_nltk_entries",
    ),
    "a_longer_stopword_list": (
        "db69a6f",
        "from nltk.corpus.reader import WordListCorpusReader as R\n"
        "words = R.words\n"
        "R.words = lambda self, *a, **k: [*words(self, *a, **k), 'also', 'would', 'us', 'upon']\n",
        "stopwords_other_lists_words",
    ),
    "another_tagger": (
        "c6767a1",
        "import nltk\nnltk.pos_tag = lambda tokens, *a, **k: [(t, 'NN') for t in tokens]\n",
        "tagger_book_is_a_verb",
    ),
    "another_sentence_splitter": (
        "db69a6f",
        "import re, nltk\nnltk.sent_tokenize = lambda text, *a, **k: re.split(r'(?<=[.?!])\\s+', text)\n",
        "sentence_split_abbreviations",
    ),
    "another_seed": ("c6767a1", "import ifaudit.tasks.grading as g\ng.SEED = 1\n", "repeat_span_seeded_draw"),
}


@pytest.mark.parametrize("scratch", sorted(SCRATCH))
def test_scratch_environment_that_changes_a_guarded_behaviour_fails_the_canary_naming_the_sentinel(
    scratch: str, resources: Path, tmp_path: Path
) -> None:
    version, change, sentinel = SCRATCH[scratch]
    out = tmp_path / "canary.json"
    # The change runs when the grading process starts (sitecustomize), as an installed package would.
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(change)
    env = cli_env(resources, PYTHONPATH=str(site))
    command = [
        sys.executable,
        "-c",
        "from ifaudit.cli import main; raise SystemExit(main())",
        *canary_args(out, version),
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    verdict = json.loads(out.read_text())
    assert verdict["passed"] is False
    assert sentinel in verdict["sentinels_flipped"]
    assert f"ifaudit: sentinel {sentinel} flipped" in done.stderr
