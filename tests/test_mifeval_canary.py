"""M-IFEval's canaries: 20 of GPT-4o's responses per language with upstream's committed verdicts,
and sentinels for each resource a language's checkers read (French punkt_tab's abbreviations,
janome's tokenization and tags, the Japanese sentence segmenter, langdetect's profiles and
seeding); an environment that changes one of them fails the canary, naming the sentinel."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SHARED, cli_env, run_cli

DATA = SHARED / "data" / "mifeval" / "data"
GPT4O = "gpt-4o-2024-08-06"


def canary_args(out: Path, language: str) -> list[str]:
    prompts, responses = DATA / f"{language}_input_data.jsonl", DATA / f"{language}_input_response_data_{GPT4O}.jsonl"
    return ["canary", "--task", f"mifeval_{language}", "--prompts", str(prompts), "--responses", str(responses)] + [
        "--out",
        str(out),
        "--offline",
        "--require-pass",
    ]


@pytest.mark.parametrize(("language", "sentinels"), [("fr", 4), ("ja", 5)])
def test_committed_mifeval_canary_passes(language: str, sentinels: int, resources: Path, tmp_path: Path) -> None:
    out = tmp_path / "canary.json"
    run_cli(canary_args(out, language), resources)
    verdict = json.loads(out.read_text())
    assert verdict["passed"] and verdict["items"] == 20 and verdict["sentinels"] == sentinels
    environment = verdict["environment"]
    assert environment["grader"]["name"] == "lightblue-tech/M-IFEval"
    assert environment["grader"]["version"] == "0bc3143a919eef2f9ec64aa26da8a546086653de"
    assert {"Janome": "0.5.0", "ja-sentence-segmenter": "0.0.2", "langdetect": "1.0.9"}.items() <= environment[
        "packages"
    ].items()
    assert "spacy" not in {name.lower() for name in environment["packages"]}
    assert (
        "tokenizers/punkt_tab/french/abbrev_types.txt" in environment["nltk_data"]["resources"]["tokenizers/punkt_tab"]
    )


# Each scratch environment changes one behaviour a sentinel guards, in the grading process itself,
# before the canary runs: what another NLTK data folder, janome, segmenter or seeding does.
SCRATCH = {
    "french_punkt_without_inc": (
        "fr",
        "import nltk.data as d\nload = d.load\n"
        "def patched(resource, *a, **k):\n"
        "    loaded = load(resource, *a, **k)\n"
        "    if 'french' in str(resource):\n"
        "        loaded._params.abbrev_types.discard('inc')\n"
        "    return loaded\n"
        "d.load = patched\n",
        "fr_punkt_abbreviation_inc",
    ),
    "another_langdetect_seed": ("fr", "import ifaudit.tasks.grading as g\ng.SEED = 1\n", "fr_langdetect_seeded"),
    "langdetect_says_english": (
        "fr",
        "import langdetect\nlangdetect.detect = lambda text: 'en'\n",
        "fr_langdetect_french",
    ),
    "janome_by_character": (
        "ja",
        "from janome.tokenizer import Tokenizer as T\ntokenize = T.tokenize\n"
        "T.tokenize = lambda self, text, *a, **k: [t for c in text for t in tokenize(self, c, *a, **k)]\n",
        "ja_janome_tokenization",
    ),
    "segmenter_without_concatenation": (
        "ja",
        "import ja_sentence_segmenter.concatenate.simple_concatenator as c\n"
        "c.concatenate_matching = lambda lines, **k: lines\n",
        "ja_segmenter_trailing_no",
    ),
}


@pytest.mark.parametrize("scratch", sorted(SCRATCH))
def test_changed_resource_fails_the_mifeval_canary_naming_its_sentinel(
    scratch: str, resources: Path, tmp_path: Path
) -> None:
    language, change, sentinel = SCRATCH[scratch]
    out = tmp_path / "canary.json"
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(change, encoding="utf-8")
    command = [
        sys.executable,
        "-c",
        "from ifaudit.cli import main; raise SystemExit(main())",
        *canary_args(out, language),
    ]
    done = subprocess.run(command, env=cli_env(resources, PYTHONPATH=str(site)), capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    verdict = json.loads(out.read_text())
    assert verdict["passed"] is False
    assert sentinel in verdict["sentinels_flipped"]
    assert f"ifaudit: sentinel {sentinel} flipped" in done.stderr
