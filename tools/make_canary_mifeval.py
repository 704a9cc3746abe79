"""M-IFEval's canaries (tasks mifeval_fr, mifeval_ja), made once and committed under
src/ifaudit/tasks/canaries/; kept so the choice can be audited and repeated (docs/mifeval.md):

    for lang in fr ja; do python tools/make_canary.py mifeval_$lang ../shared/data \
        > src/ifaudit/tasks/canaries/mifeval_$lang.json; done

Items: 20 of GPT-4o's (gpt-4o-2024-08-06) responses in the language, deterministically: loose-only
passes, strict passes, prompts with several instructions not all followed, then greedy coverage
of the remaining instruction types. Expected verdicts are upstream's committed
`evaluations/<lang>_input_response_data_gpt-4o-2024-08-06/eval_results_{strict,loose}.jsonl`
(its own grader's run, ../shared/data/mifeval), not ours. Sentinels (MIFEVAL_SENTINELS) are graded
here by the pinned grader in the pinned environment (requirements.lock, Python 3.11).
"""

from __future__ import annotations

import hashlib
import json
import os
import unicodedata
from pathlib import Path

SIZE = 20
MODEL = "gpt-4o-2024-08-06"
SHORT = "gpt4o"  # the response dataset's name in config/config.yaml: mifeval_<lang>_gpt4o

# name, what it guards, instruction id, kwargs, response
MIFEVAL_SENTINELS = {
    "fr": (
        (
            "fr_punkt_abbreviation_inc",
            "the French punkt_tab's abbreviations (abbrev_types.txt lists `inc`, upstream's own list does not): "
            "`Inc.` ends no sentence, so there are 2 sentences, fewer than 3",
            "fr:length_constraints:number_sentences",
            {"num_sentences": 3, "relation": "moins de"},
            "Elle travaille chez Acme Inc. depuis dix ans. Elle est contente.",
        ),
        (
            "fr_upstream_abbreviation_mme",
            "upstream's own abbreviations reaching the punkt parameters (`mme` is added to "
            "`_params.abbrev_types`): `Mme.` ends no sentence, 2 sentences, fewer than 3",
            "fr:length_constraints:number_sentences",
            {"num_sentences": 3, "relation": "moins de"},
            "Mme. Martin est arrivée. Elle a souri.",
        ),
        (
            "fr_langdetect_french",
            "langdetect's profiles: a plain French sentence is detected as French",
            "fr:language:response_language",
            {"language": "fr"},
            "Le chat dort sur le canapé.",
        ),
        (
            "fr_langdetect_seeded",
            "langdetect's seeding before each grading mode: `Bonjour, merci.` is French under 17 of the "
            "first 50 seeds; seeded with 0 it is not, so the instruction is not followed",
            "fr:language:response_language",
            {"language": "fr"},
            "Bonjour, merci.",
        ),
    ),
    "ja": (
        (
            "ja_janome_tokenization",
            "janome's tokenizer and dictionary: `日本` is one word, so the keyword `本` is not among the "
            "words of `日本に行きました。` (a substring search would find it)",
            "ja:keywords:existence",
            {"keywords": ["本"]},
            "日本に行きました。",
        ),
        (
            "ja_janome_noun_before_period",
            "janome's part-of-speech tags: `晴れ` before `。` is a noun (名詞), one nominal ending",
            "ja:detectable_format:nominal_ending",
            {"count": 1},
            "今日は晴れ。",
        ),
        (
            "ja_segmenter_trailing_no",
            "ja_sentence_segmenter's pipeline: a line ending in `の` is joined to the next, so there are "
            "2 sentences, fewer than 3",
            "ja:length_constraints:number_sentences",
            {"relation": "未満", "num_sentences": 3},
            "これは私の\nペンです。あれは本です。",
        ),
        (
            "ja_langdetect_japanese",
            "langdetect's profiles: a sentence with kana is detected as Japanese",
            "ja:language:response_language",
            {"language": "ja"},
            "今日は晴れです。",
        ),
        (
            "ja_langdetect_kanji_only",
            "langdetect's profiles: `東京大学` (kanji only) is detected as Korean, not Japanese, under "
            "every seed tried",
            "ja:language:response_language",
            {"language": "ja"},
            "東京大学",
        ),
    ),
}


def mifeval_sentinels(task_name: str, language: str, nltk_mirror: Path) -> list[dict]:
    """The language's sentinels, each graded here by the pinned grader."""
    from ifaudit.core.records import Response
    from ifaudit.io.prompts import prompt_from_record
    from ifaudit.tasks.base import GradingOptions
    from ifaudit.tasks.grading import grade_response
    from ifaudit.tasks.registry import get_task

    task = get_task(task_name)
    resources = Path(os.environ.get("IFAUDIT_RESOURCES", "resources"))
    options = GradingOptions(
        resources, pin=Path("vendor/lightblue_mifeval/pin.toml"), offline=True, nltk_mirror=nltk_mirror
    )
    registry = task.load(options).checkers
    assert registry is not None
    entries = []
    for index, (name, guards, instruction_id, kwargs, text) in enumerate(MIFEVAL_SENTINELS[language], 1):
        record = {"key": index, "prompt": "(sentinel)", "instruction_id_list": [instruction_id], "kwargs": [kwargs]}
        prompt = prompt_from_record(record, "<sentinel>", index)
        graded = grade_response(registry, task, prompt, Response(key=index, sample=0, text=text, line=index))  # type: ignore[arg-type]
        entries.append(
            {
                "name": name,
                "guards": guards,
                "prompt": record,
                "response": text,
                "response_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
                "expected": {mode: graded[mode]["follow_instruction_list"] for mode in task.modes},
            }
        )
    return entries


def mifeval_canary(data: Path, language: str) -> dict:
    task = f"mifeval_{language}"
    folder = data / "mifeval"
    prompts_file = folder / "data" / f"{language}_input_data.jsonl"
    outputs_file = folder / "data" / f"{language}_input_response_data_{MODEL}.jsonl"
    prompts = [json.loads(line) for line in prompts_file.open(encoding="utf-8")]
    responses = {row["prompt"]: row["response"] for row in map(json.loads, outputs_file.open(encoding="utf-8"))}
    evaluations = folder / "evaluations" / f"{language}_input_response_data_{MODEL}"
    committed = {
        mode: {
            row["prompt"]: row
            for row in map(json.loads, (evaluations / f"eval_results_{mode}.verdicts.jsonl").open(encoding="utf-8"))
        }
        for mode in ("strict", "loose")
    }
    by_key = {p["key"]: p for p in prompts}
    keys = [p["key"] for p in prompts]

    def passed(key: int, mode: str) -> bool:
        return committed[mode][by_key[key]["prompt"]]["follow_all_instructions"]

    chosen: dict[int, list[str]] = {}

    def take(reason: str, candidates: list[int], count: int) -> None:
        for key in [k for k in candidates if k not in chosen][:count]:
            chosen[key] = [reason]

    take("loose-only pass", [k for k in keys if passed(k, "loose") and not passed(k, "strict")], 3)
    take("strict pass", [k for k in keys if passed(k, "strict")], 3)
    several = [k for k in keys if len(by_key[k]["instruction_id_list"]) > 1 and not passed(k, "strict")]
    take("several instructions, not all followed", several, 2)
    covered = {i for k in chosen for i in by_key[k]["instruction_id_list"]}
    while len(chosen) < SIZE:
        best = max(
            (k for k in keys if k not in chosen),
            key=lambda k: (len(set(by_key[k]["instruction_id_list"]) - covered), -k),
        )
        new = sorted(set(by_key[best]["instruction_id_list"]) - covered)
        chosen[best] = ["covers " + ", ".join(new)] if new else ["filler"]
        covered |= set(by_key[best]["instruction_id_list"])
    items = []
    for key in sorted(chosen):
        text = responses[by_key[key]["prompt"]]
        items.append(
            {
                "key": key,
                "sample": 0,
                "why": chosen[key],
                "response_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
                "instruction_id_list": by_key[key]["instruction_id_list"],
                **{mode: committed[mode][by_key[key]["prompt"]]["follow_instruction_list"] for mode in committed},
            }
        )
    return {
        "task": task,
        "description": f"20 of GPT-4o's M-IFEval {language} responses with the verdicts upstream committed for them",
        "prompts": {
            "dataset": f"mifeval_{language}_prompts",
            "sha256": hashlib.sha256(prompts_file.read_bytes()).hexdigest(),
        },
        "responses": {
            "dataset": f"mifeval_{language}_{SHORT}",
            "sha256": hashlib.sha256(outputs_file.read_bytes()).hexdigest(),
        },
        "expected_from": (
            f"upstream's committed evaluations/{language}_input_response_data_{MODEL}/eval_results_{{strict,loose}}"
            ".jsonl (lightblue-tech/M-IFEval 0bc3143), its own grader's run"
        ),
        "instruction_types_covered": len({i for item in items for i in item["instruction_id_list"]}),
        "items": items,
        "sentinels": mifeval_sentinels(task, language, data / "nltk"),
        "sentinels_expected_from": (
            "the pinned grader (0bc3143) in the pinned environment (requirements.lock, Python 3.11, "
            f"Unicode {unicodedata.unidata_version}) when the sentinels were made"
        ),
    }
