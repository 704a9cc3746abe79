"""How the canaries were chosen (run once; the output is committed under src/ifaudit/tasks/canaries/).
Kept so the choice can be audited and repeated.

    python tools/make_canary.py ifeval ../shared/data/ifeval > src/ifaudit/tasks/canaries/ifeval.json
    python tools/make_canary.py ifeval_arabic_inception ../shared/data/arabic_ifeval \
        > src/ifaudit/tasks/canaries/ifeval_arabic_inception.json
    python tools/make_canary.py ifeval_langcheck ../shared/data/ifeval > src/ifaudit/tasks/canaries/ifeval_langcheck.json
    for task in ifeval_arabic_inception_hf ifeval_arabic_inception_hf_langcheck; do
        NLTK_DATA=../shared/data/nltk python tools/make_canary.py $task ../shared/data/arabic_ifeval \
            > src/ifaudit/tasks/canaries/$task.json; done
    python tools/make_canary.py infobench ../shared/data/infobench > src/ifaudit/tasks/canaries/infobench.json
    for task in ifbench ifbench_db69a6f; do
        python tools/make_canary.py $task ../shared/data > src/ifaudit/tasks/canaries/$task.json; done
    for task in mifeval_fr mifeval_ja; do  # tools/make_canary_mifeval.py
        python tools/make_canary.py $task ../shared/data > src/ifaudit/tasks/canaries/$task.json; done

Sentinels (added to a committed canary, its items untouched; expectations from this environment,
which must be the pinned one: `make .venv/.installed`, Python 3.11):

    for task in ifeval ifeval_langcheck ifeval_arabic_inception ifeval_arabic_inception_hf \
            ifeval_arabic_inception_hf_langcheck; do
        IFAUDIT_GRADER_SOURCE=../shared/upstream/google_ifeval python tools/make_canary.py sentinels $task \
            ../shared/data/nltk > src/ifaudit/tasks/canaries/$task.json.new && mv src/ifaudit/tasks/canaries/$task.json.new \
            src/ifaudit/tasks/canaries/$task.json; done

The Python-Unicode sentinels' verdicts under Unicode 15.0 and 15.1 (`expected_by_unicode`), each
taken in a venv of requirements-stand-in.lock on Python 3.12 and 3.13 (the other sentinels must
hold there as pinned, or this stops):

    for task in ...the same five...; do  # with PY=venv-3.12/bin/python, then venv-3.13/bin/python
        IFAUDIT_GRADER_SOURCE=../shared/upstream/google_ifeval PYTHONPATH=src $PY tools/make_canary.py \
            unicode-sentinels $task ../shared/data/nltk > src/ifaudit/tasks/canaries/$task.json.new && \
            mv src/ifaudit/tasks/canaries/$task.json.new src/ifaudit/tasks/canaries/$task.json; done

IFEval: 20 of Google's GPT-4 responses, deterministically: both letter_frequency prompts graded on
a substitute letter (1122, 1129), language-detection cases that pass and fail, each case check,
loose-only passes, then greedy coverage of the remaining instruction types. Expected grades are
the reference grades made by the unmodified upstream grader.

IFEval with the English gate: IFEval's 20 items and reference grades, plus the verdict of our
English gate on each (two of the 20 answer in another language, as their prompts ask, and fail it).

Arabic IFEval (Inception): responses and expectations from the reference implementation's test
vectors, so the expectations do not come from our own code: for every instruction type the first
vector whose pipeline result (thinking strip, cleaning, strict) is true and the first where it is
false, plus, for each `lang` rule, gate vectors that pass and fail on each failing rule's kind.

IFBench: 20 of upstream's sample outputs, deterministically: the repeat-span prompt whose
`n_start: 0` draws a start at c6767a1 (286), loose-only passes, passes and failures, then greedy
coverage of the remaining constraint types. Expected verdicts are upstream's committed
`eval_results_{strict,loose}.jsonl` (its own run of its grader), not ours; key 163, the one
verdict the two pinned graders give differently (FACTS §11), is left out, so the items hold under
either pin. Its sentinels (IFBENCH_SENTINELS) are graded here under both pins; where the pins
differ by design (the sentence splitter, the repeat-span draw) each pin's verdict is kept
(`expected_by_grader`).

Sentinels: the SENTINELS below, each given to the tasks whose checker or gate has the sensitivity
it guards (docs/environment_sensitivity.md). For Google's registry the pinned upstream grader and
the stand-in must agree on every sentinel, since a run may use either.
"""

from __future__ import annotations

import hashlib
import json
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from make_canary_mifeval import mifeval_canary  # M-IFEval's canaries: how they are made is told there

SIZE = 20


def ifeval_canary(data: Path) -> dict:
    prompts = [json.loads(line) for line in (data / "input_data.jsonl").open()]
    responses = {
        json.loads(line)["prompt"]: json.loads(line)["response"]
        for line in (data / "input_response_data_gpt4_20231107_145030.jsonl").open()
    }
    grades = {g["key"]: g for g in map(json.loads, (data / "reference_grades_gpt4.jsonl").open())}
    by_key = {p["key"]: p for p in prompts}

    def has(key: int, instruction: str) -> bool:
        return instruction in by_key[key]["instruction_id_list"]

    def strict_all(key: int) -> bool:
        return grades[key]["strict"]["follow_all_instructions"]

    keys = sorted(by_key)
    chosen: dict[int, list[str]] = {}

    def take(reason: str, candidates: list[int], count: int = 1) -> None:
        for key in [k for k in candidates if k not in chosen][:count]:
            chosen[key] = [reason]

    take("letter_frequency graded on a substitute letter", [1122, 1129], 2)
    take("language detection, followed", [k for k in keys if has(k, "language:response_language") and strict_all(k)])
    take(
        "language detection, not followed",
        [k for k in keys if has(k, "language:response_language") and not strict_all(k)],
    )
    take("case check: capitals", [k for k in keys if has(k, "change_case:english_capital")])
    take("case check: lowercase", [k for k in keys if has(k, "change_case:english_lowercase")])
    take("loose-only pass", [k for k in keys if not strict_all(k) and grades[k]["loose"]["follow_all_instructions"]], 2)
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
                "strict": grades[key]["strict"]["follow_instruction_list"],
                "loose": grades[key]["loose"]["follow_instruction_list"],
            }
        )
    return {
        "task": "ifeval",
        "description": "20 of Google's GPT-4 responses with the grades the unmodified upstream grader gave them",
        "prompts": {
            "dataset": "ifeval_prompts_github",
            "sha256": hashlib.sha256((data / "input_data.jsonl").read_bytes()).hexdigest(),
        },
        "responses": {
            "dataset": "gpt4_responses",
            "sha256": hashlib.sha256(
                (data / "input_response_data_gpt4_20231107_145030.jsonl").read_bytes()
            ).hexdigest(),
        },
        "expected_from": "reference grades of the unmodified upstream grader at the pinned commit, seeded (FACTS §3)",
        "instruction_types_covered": len({i for item in items for i in item["instruction_id_list"]}),
        "items": items,
    }


def arabic_canary(data: Path) -> dict:
    checkers = [json.loads(line) for line in (data / "checker_vectors.jsonl").open(encoding="utf-8")]
    gates = [json.loads(line) for line in (data / "gate_vectors.jsonl").open(encoding="utf-8")]
    items = []

    def add(vector: dict, prompt: dict, expectation: dict) -> None:
        key = len(items) + 1
        items.append(
            {
                "key": key,
                "sample": 0,
                "source": vector["id"],
                "why": vector["note"],
                "prompt": {"key": key, "prompt": "(canary)", **prompt},
                "response": vector["response"],
                "response_sha256": hashlib.sha256(vector["response"].encode("utf-8")).hexdigest(),
                "instruction_id_list": prompt["instruction_id_list"],
                **expectation,
            }
        )

    for instruction in sorted({v["instruction_id"] for v in checkers}):
        for wanted in (True, False):
            vector = next(
                (
                    v
                    for v in checkers
                    if v["instruction_id"] == instruction
                    and v["expected_strict_stage"] is wanted
                    and "expected_if_nltk_ge_3_10" not in v
                ),
                None,
            )
            if vector is not None:
                add(
                    vector,
                    {"instruction_id_list": [instruction], "kwargs": [vector["kwargs"]], "lang": ["ar"]},
                    {"strict": [wanted]},
                )
    for lang in (["ar"], ["ar", "en"]):
        for wanted in (True, False):
            chosen = [v for v in gates if v["lang"] == lang and v["expected_gate"] is wanted][:4]
            for vector in chosen:
                add(vector, {"instruction_id_list": [], "kwargs": [], "lang": lang}, {"gate": wanted})
    return {
        "task": "ifeval_arabic_inception",
        "description": "responses from the reference implementation's test vectors, with its verdicts",
        "expected_from": "shared/data/arabic_ifeval/{checker,gate}_vectors.jsonl (reference implementation, "
        "commit 15bca74 of the lm-evaluation-harness fork; spec §10)",
        "items": items,
    }


def ifeval_langcheck_canary(data: Path) -> dict:
    from ifaudit.checkers.english_gate import english_gate
    from ifaudit.checkers.thinking import strip_thinking

    canary = ifeval_canary(data)
    texts = {
        hashlib.sha256(json.loads(line)["response"].encode("utf-8")).hexdigest(): json.loads(line)["response"]
        for line in (data / "input_response_data_gpt4_20231107_145030.jsonl").open()
    }
    for item in canary["items"]:
        item["gate"] = english_gate(strip_thinking(texts[item["response_sha256"]])[0]).passed
    canary["task"] = "ifeval_langcheck"
    canary["expected_from"] += "; gate verdicts from ifaudit's English gate when the canary was made"
    return canary


HF_GATE_EXAMPLES = [  # the seed's examples and boundaries, for the gated variant
    "ذهب أحمد إلى السوق صباحا. اشترى خبزا وجبنا وبعض الفاكهة.",
    "hello hello",
    "مرحبا مرحبا",
    "I am fine. I am fine.",
    "هذا Helloمرحبا جيد",
    "قطة 你好",
    "كَتَبَ الطَّالِبُ الدَّرْسَ",
    "",
]


def arabic_hf_canary(data: Path, task_name: str) -> dict:
    """No reference vectors exist for the Hugging Face variant: responses and settings come from
    the Inception vectors, expectations from ifaudit's own registry and gate when the canary was
    made. It guards against a drifting environment, not for correctness (the unit tests do that)."""
    from ifaudit.tasks.graders import load_own
    from ifaudit.tasks.grading import grade_response
    from ifaudit.io.prompts import prompt_from_record
    from ifaudit.core.records import Response
    from ifaudit.tasks.registry import TASKS

    task = TASKS[task_name]
    registry = load_own(task.registry)
    vectors = [json.loads(line) for line in (data / "checker_vectors.jsonl").open(encoding="utf-8")]
    items: list[dict] = []

    def add(response: str, prompt: dict, why: str, wanted: bool | None = None) -> bool:
        key = len(items) + 1
        record = {"key": key, "prompt": "(canary)", **prompt}
        graded = grade_response(
            registry,
            task,
            prompt_from_record(record, "<canary>", key),
            Response(key=key, sample=0, text=response, line=key),
        )
        if wanted is not None and graded["strict"]["follow_instruction_list"][0] is not wanted:
            return False
        expectation = {mode: graded[mode]["follow_instruction_list"] for mode in task.modes}
        if task.gate:
            expectation["gate"] = graded["gate"]["passed"]
        items.append(
            {
                "key": key,
                "sample": 0,
                "why": why,
                "prompt": record,
                "response": response,
                "response_sha256": hashlib.sha256(response.encode("utf-8")).hexdigest(),
                "instruction_id_list": prompt["instruction_id_list"],
                **expectation,
            }
        )
        return True

    for instruction in sorted(registry.instructions):
        for wanted in (True, False):
            next(
                (
                    True
                    for v in vectors
                    if v["instruction_id"] == instruction
                    and add(
                        v["response"],
                        {"instruction_id_list": [instruction], "kwargs": [v["kwargs"]]},
                        f"{instruction} {'followed' if wanted else 'not followed'} ({v['id']})",
                        wanted,
                    )
                ),
                None,
            )
    if task.gate:
        for text in HF_GATE_EXAMPLES:
            add(text, {"instruction_id_list": [], "kwargs": []}, "gate example from the seed")
    return {
        "task": task_name,
        "description": "Inception's vector responses and the seed's gate examples, graded by ifaudit's registry",
        "expected_from": "ifaudit's own arabic_hf registry and gate when the canary was made (no reference "
        "vectors exist for this variant): a guard against environment drift",
        "items": items,
    }


def infobench_canary(data: Path) -> dict:
    """20 of the GPT-4 responses with the GPT-4 judge's verdicts attached: the 10 Easy and 10 Hard
    ones with the most questions answered NO (then by id), so both verdicts are exercised."""
    judged = [json.loads(line) for line in (data / "gpt4_output_gpt4judge_DecomposeEval.jsonl").open()]
    chosen = []
    for subset in ("Easy_set", "Hard_set"):
        rows = sorted((r for r in judged if r["subset"] == subset), key=lambda r: (-r["eval"].count(False), r["id"]))
        chosen += rows[:10]
    items = [
        {
            "key": r["id"],
            "sample": 0,
            "why": f"{r['subset']}, {r['eval'].count(False)} of {len(r['eval'])} NO",
            "response_sha256": hashlib.sha256(r["output"].encode("utf-8")).hexdigest(),
            "instruction_id_list": ["+".join(labels) for labels in r["question_label"]],
            "strict": r["eval"],
        }
        for r in sorted(chosen, key=lambda r: r["id"])
    ]
    return {
        "task": "infobench",
        "description": "20 GPT-4 responses with the GPT-4 judge's verdicts, graded through the import path",
        "prompts": {
            "dataset": "infobench",
            "sha256": hashlib.sha256((data / "InfoBench.json").read_bytes()).hexdigest(),
        },
        "responses": {
            "dataset": "infobench_gpt4_judged",
            "sha256": hashlib.sha256((data / "gpt4_output_gpt4judge_DecomposeEval.jsonl").read_bytes()).hexdigest(),
        },
        "expected_from": "the `eval` verdicts of gpt4_output_gpt4judge_DecomposeEval.jsonl (shared/data/infobench)",
        "items": items,
    }


GOOGLE, INCEPTION, HF = "google_ifeval", "arabic_inception", "arabic_hf"
# Characters whose properties differ between the Unicode tables in use (measured over all code
# points: Python 3.11 = Unicode 14.0, 3.13 = 15.1; regex 2024.11.6 = Unicode 16.0, 2025.11.3 on = 17.0).
NEW_IN_15 = "\U0001df25"  # LATIN SMALL LETTER D WITH MID-HEIGHT LEFT HOOK: lowercase, alphabetic from 15.0
NEW_IN_17 = "\ua7cf"  # LATIN SMALL LETTER PHARYNGEAL VOICED FRICATIVE: a letter (\\w, \\p{L}) from 17.0


@dataclass(frozen=True)
class Sentinel:
    name: str
    guards: str
    response: str
    instruction_id: str | None  # None: a gate sentinel (no instruction)
    kwargs: dict
    registries: tuple[str, ...] = ()  # checker registries where this behaviour decides the verdict
    gates: tuple[str, ...] = ()  # gates where it does
    lang: tuple[str, ...] = ()


WORDS, SENTENCES = "length_constraints:number_words", "length_constraints:number_sentences"
SENTINELS = (
    Sentinel(
        "nltk_sentence_smart_quote",
        'nltk sentence splitting: before 3.10.2 the trailing `"”` after `travelers.` is a second sentence',
        'The guide was written for travelers."”',
        SENTENCES,
        {"num_sentences": 2, "relation": "less than"},
        registries=(GOOGLE, INCEPTION),
    ),
    Sentinel(
        "nltk_words_nfd_accents",
        "nltk word counting: from 3.10.3 RegexpTokenizer uses `regex`, whose \\w takes combining marks "
        "(decomposed accents: 3 words, not 5)",
        unicodedata.normalize("NFD", "café résumé naïve"),
        WORDS,
        {"num_words": 4, "relation": "less than"},
        registries=(GOOGLE,),
    ),
    Sentinel(
        "nltk_words_zero_width_joiner",
        "nltk word counting: from 3.10.3 `regex`'s \\w takes U+200D ZERO WIDTH JOINER (2 words, not 4)",
        "co\u200dop re\u200denter",
        WORDS,
        {"num_words": 3, "relation": "less than"},
        registries=(GOOGLE,),
    ),
    Sentinel(
        "nltk_words_arabic_tashkeel",
        "nltk word counting: from 3.10.3 `regex`'s \\w keeps tashkeel inside a word (3 words, not 9)",
        "كَتَبَ الطَّالِبُ الدَّرْسَ",
        WORDS,
        {"num_words": 4, "relation": "less than"},
        registries=(INCEPTION,),
        lang=("ar",),
    ),
    Sentinel(
        "regex_unicode_word",
        "the Unicode tables of the `regex` package (through nltk's word counting): U+A7CF, new in Unicode "
        "17.0, is \\w from regex 2025.9 on, so qa꟏a is one word (regex 2024.11.6 or stdlib `re`: two)",
        f"qa{NEW_IN_17}a ra{NEW_IN_17}i",
        WORDS,
        {"num_words": 3, "relation": "less than"},
        registries=(GOOGLE, INCEPTION),
    ),
    Sentinel(
        "regex_unicode_letter_english_gate",
        "the Unicode tables of the `regex` package (the English gate's \\p{L}+ words): U+A7CF is a "
        "non-ASCII letter word from regex 2025.9 on, so the gate fails",
        f"The answer is {NEW_IN_17} here.",
        None,
        {},
        gates=("english",),
    ),
    Sentinel(
        "regex_unicode_letter_arabic_gate",
        "the Unicode tables of the `regex` package (Inception's gate, \\p{L}+ runs): U+A7CF is an "
        "other-script letter from regex 2025.9 on, so the gate fails",
        f"ذهب أحمد إلى السوق صباحا {NEW_IN_17}",
        None,
        {},
        gates=("inception",),
        lang=("ar",),
    ),
    Sentinel(
        "python_unicode_all_capitals",
        "Python's Unicode database (str.isupper, english_capital): U+1DF25 is lowercase from Unicode 15.0 "
        "(Python 3.13) and unassigned in 14.0 (Python 3.11)",
        f"THIS ANSWER IS WRITTEN IN CAPITAL LETTERS ONLY, AS THE PROMPT ASKS {NEW_IN_15}",
        "change_case:english_capital",
        {},
        registries=(GOOGLE, INCEPTION),
    ),
    Sentinel(
        "python_unicode_capital_words",
        "Python's Unicode database (str.isupper per word, capital_word_frequency): NASA+U+1DF25 is an "
        "all-capital word under Unicode 14.0, not under 15.0",
        f"NASA{NEW_IN_15} and ESA{NEW_IN_15} share data.",
        "change_case:capital_word_frequency",
        {"capital_frequency": 2, "capital_relation": "at least"},
        registries=(GOOGLE, INCEPTION),
    ),
    Sentinel(
        "python_unicode_word",
        "Python's Unicode database (stdlib `re` \\w in the Hugging Face variant's word count): U+1DF25 "
        "is \\w from Unicode 15.0, so qa+U+1DF25+a is one word on Python 3.13, two on 3.11",
        f"qa{NEW_IN_15}a ra{NEW_IN_15}i",
        WORDS,
        {"num_words": 3, "relation": "less than"},
        registries=(HF,),
    ),
    Sentinel(
        "python_unicode_letter_arabic_hf_gate",
        "Python's Unicode database (str.isalpha in the Arabic-HF gate's words): U+1DF25 is a letter of "
        "another script from Unicode 15.0, so the gate fails on Python 3.13 and passes on 3.11",
        f"ذهب أحمد إلى السوق صباحا {NEW_IN_15}",
        None,
        {},
        gates=("arabic_hf",),
    ),
    Sentinel(
        "langdetect_borderline",
        "langdetect's profiles and seeding: 'Die Hard is a film' is Afrikaans with seed 0 and English "
        "for 10 of seeds 0-19",
        "Die Hard is a film",
        "language:response_language",
        {"language": "en"},
        registries=(GOOGLE, INCEPTION, HF),
    ),
    Sentinel(
        "punkt_abbreviation",
        "the punkt model's data (punkt_tab abbreviation list): `Dr.` does not end a sentence (2 sentences, not 3)",
        "Dr. Smith arrived. He sat down.",
        SENTENCES,
        {"num_sentences": 3, "relation": "less than"},
        registries=(GOOGLE, INCEPTION),
    ),
)


def sentinel_entries(task_name: str, nltk_mirror: Path) -> list[dict]:
    """The sentinels of a task, each graded here by every grader a run of the task may use."""
    import os

    from ifaudit.tasks.graders import STAND_IN, UPSTREAM, load_registry
    from ifaudit.tasks.grading import grade_response
    from ifaudit.io.remote.nltk_data import resolve_punkt
    from ifaudit.io.remote.pins import default_sources, load_pin
    from ifaudit.io.prompts import prompt_from_record
    from ifaudit.core.records import Response
    from ifaudit.tasks.registry import TASKS

    task = TASKS[task_name]
    resources = Path(os.environ.get("IFAUDIT_RESOURCES", "resources"))
    resolve_punkt(resources / "nltk_data", nltk_mirror)
    if task.registry == GOOGLE:
        pin = load_pin(Path("vendor/google_ifeval/pin.toml"))
        registries = [
            load_registry(
                GOOGLE, grader, pin, resources / "vendor" / "google_ifeval", default_sources(pin, [], offline=True)
            )
            for grader in (UPSTREAM, STAND_IN)
        ]
    else:
        registries = [load_registry(task.registry, "-", None, resources, [])]
    gate = task.gate.name if task.gate is not None else None  # a Gate object since the gates became classes
    entries = []
    for sentinel in SENTINELS:
        if task.registry not in sentinel.registries and gate not in sentinel.gates:
            continue
        ids = [sentinel.instruction_id] if task.registry in sentinel.registries else []
        record = {
            "key": len(entries) + 1,
            "prompt": "(sentinel)",
            "instruction_id_list": ids,
            "kwargs": [sentinel.kwargs] if ids else [],
            **({"lang": list(sentinel.lang)} if sentinel.lang else {}),
        }
        prompt = prompt_from_record(record, "<sentinel>", record["key"])
        response = Response(key=record["key"], sample=0, text=sentinel.response, line=record["key"])
        expectations = []
        for registry in registries:
            graded = grade_response(registry, task, prompt, response)
            expected = {mode: graded[mode]["follow_instruction_list"] for mode in task.modes if ids}
            if not ids:  # a checker sentinel's gate verdict hangs on other things: not compared
                expected["gate"] = graded["gate"]["passed"]
            expectations.append(expected)
        if any(e != expectations[0] for e in expectations):
            raise SystemExit(f"{sentinel.name}: the graders disagree in this environment: {expectations}")
        entries.append(
            {
                "name": sentinel.name,
                "guards": sentinel.guards,
                "prompt": record,
                "response": sentinel.response,
                "response_sha256": hashlib.sha256(sentinel.response.encode("utf-8")).hexdigest(),
                "expected": expectations[0],
            }
        )
    return entries


def committed_canary(task: str) -> dict:
    path = Path(__file__).resolve().parents[1] / "src" / "ifaudit" / "tasks" / "canaries" / f"{task}.json"
    return json.loads(path.read_text(encoding="utf-8"))


def with_sentinels(task: str, nltk_mirror: Path) -> dict:
    canary = committed_canary(task)
    # The verdicts taken under other Unicode versions (unicode-sentinels below) stay.
    other_unicode = {
        s["name"]: s["expected_by_unicode"] for s in canary.get("sentinels", []) if "expected_by_unicode" in s
    }
    canary["sentinels"] = [
        {**entry, **({"expected_by_unicode": other_unicode[entry["name"]]} if entry["name"] in other_unicode else {})}
        for entry in sentinel_entries(task, nltk_mirror)
    ]
    canary["sentinels_expected_from"] = (
        "the pinned environment (requirements.lock, Python 3.11, Unicode "
        f"{unicodedata.unidata_version}) when the sentinels were made"
    )
    return canary


# The sentinels whose verdicts hang on Python's Unicode database by design: they carry a verdict
# per Unicode version, taken in a venv of the lock on that version's Python.
PYTHON_UNICODE = "python_unicode_"
REFERENCE_UNICODE = "14.0.0"


def with_unicode_expectations(task: str, nltk_mirror: Path) -> dict:
    """The committed canary with this environment's verdicts on its Python-Unicode sentinels as
    those of its Unicode version; every other sentinel must hold as pinned."""
    version = unicodedata.unidata_version
    if version == REFERENCE_UNICODE:
        raise SystemExit(f"unicode-sentinels: Unicode {version} is the reference; run it on Python 3.12 or 3.13")
    canary = committed_canary(task)
    graded = {entry["name"]: entry["expected"] for entry in sentinel_entries(task, nltk_mirror)}
    for sentinel in canary["sentinels"]:
        name = sentinel["name"]
        if name.startswith(PYTHON_UNICODE):
            sentinel.setdefault("expected_by_unicode", {})[version] = graded[name]
        elif graded[name] != sentinel["expected"]:
            raise SystemExit(
                f"{name} does not hold under Unicode {version}: {graded[name]}, not {sentinel['expected']}"
            )
    return canary


IFBENCH_SKIPPED = {"163": "its verdict differs between the pinned graders (sentence splitting moved to NLTK)"}
IFBENCH_REPEAT_PROMPT = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
# (name, guards, instruction id, kwargs, response)
IFBENCH_SENTINELS = (
    (
        "sentence_split_abbreviations",
        "sentence splitting by the pin's own splitter (c6767a1: upstream's regex and its prefix list; "
        "db69a6f: nltk's punkt_tab and its abbreviation list): `Dr.`, `Mr.`, `Ms.` end no sentence, "
        "so there are 3 sentences of 12 characters",
        "ratio:sentence_words",
        {},
        "Dr. Lee ran. Mr. Kim ran. Ms. Fox ran.",
    ),
    (
        "sentence_split_by_grader",
        "which sentence splitter graded: upstream's regex (up to c6767a1) ends a sentence at `...`, "
        "nltk's punkt (from 8e6a9be, db69a6f) does not (the flip of key 163)",
        "ratio:sentence_type",
        {},
        "It rained... We stayed in. Did you?",
    ),
    (
        "stopwords_nltk_entries",
        "the English stop-word list: `ma`, `ain` and `nor` are stop words of NLTK's list (4 of 8 words, "
        "over 49 %); a list without them passes",
        "ratio:stop_words",
        {"percentage": 49},
        "ma ain nor the also would us upon",
    ),
    (
        "stopwords_other_lists_words",
        "the English stop-word list: `also`, `would`, `us`, `upon` are not in NLTK's list (4 of 8 words, "
        "50 %); a list that counts any of them fails",
        "ratio:stop_words",
        {"percentage": 50},
        "ma ain nor the also would us upon",
    ),
    (
        "tagger_book_is_a_verb",
        "the POS tagger's model: the 2015 averaged perceptron tags a leading `Book` as VB",
        "words:start_verb",
        {},
        "Book a table for two.",
    ),
    (
        "tagger_water_is_a_noun",
        "the POS tagger's model: the 2015 averaged perceptron tags a leading `Water` as NN(P)",
        "words:start_verb",
        {},
        "Water the plants every morning.",
    ),
    (
        "repeat_span_seeded_draw",
        "the repeat-span draw: at c6767a1 `if not n_start` draws a start when n_start is 0; random.seed(0) "
        "before each response's strict and loose grading makes it word 6, any other seeding another; at "
        "db69a6f 0 is a character index and nothing is drawn",
        "repeat:repeat_span",
        {"prompt_to_repeat": IFBENCH_REPEAT_PROMPT, "n_start": 0, "n_end": 9},
        "eta theta iota",
    ),
)


def ifbench_sentinels(nltk_mirror: Path) -> list[dict]:
    """IFBench's sentinels, each graded here under both pinned graders (in one process: the flat
    layout's modules and the package's have different names)."""
    import os

    from ifaudit.core.records import Response
    from ifaudit.io.prompts import prompt_from_record
    from ifaudit.tasks.base import GradingOptions
    from ifaudit.tasks.grading import grade_response
    from ifaudit.tasks.ifbench import IFBENCH

    resources = Path(os.environ.get("IFAUDIT_RESOURCES", "resources"))
    pin = Path("vendor/allenai_ifbench/pin.toml")
    registries = [
        IFBENCH.load(GradingOptions(resources, pin=pin, grader_version=v, offline=True, nltk_mirror=nltk_mirror))
        for v in ("c6767a1", "db69a6f")
    ]
    entries = []
    for index, (name, guards, instruction_id, kwargs, text) in enumerate(IFBENCH_SENTINELS, 1):
        record = {"key": index, "prompt": "(sentinel)", "instruction_id_list": [instruction_id], "kwargs": [kwargs]}
        prompt = prompt_from_record(record, "<sentinel>", index)
        by_grader = {}
        for grading in registries:
            registry = grading.checkers
            assert registry is not None
            graded = grade_response(registry, IFBENCH, prompt, Response(key=index, sample=0, text=text, line=index))
            by_grader[registry.version] = {mode: graded[mode]["follow_instruction_list"] for mode in IFBENCH.modes}
        verdicts = list(by_grader.values())
        entry = {
            "name": name,
            "guards": guards,
            "prompt": record,
            "response": text,
            "response_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "expected": verdicts[0],
        }
        if verdicts[1] != verdicts[0]:
            entry["expected_by_grader"] = by_grader
        entries.append(entry)
    return entries


def ifbench_canary(data: Path, task: str = "ifbench") -> dict:
    prompts_file, outputs_file = data / "ifbench" / "IFBench_test_294.jsonl", data / "ifbench" / "sample_output.jsonl"
    prompts = [json.loads(line) for line in prompts_file.open()]
    responses = {row["prompt"]: row["response"] for row in map(json.loads, outputs_file.open())}
    committed = {
        mode: {row["prompt"]: row for row in map(json.loads, (data / "ifbench" / f"eval_results_{mode}.jsonl").open())}
        for mode in ("strict", "loose")
    }
    by_key = {p["key"]: p for p in prompts}
    keys = [p["key"] for p in prompts if p["key"] not in IFBENCH_SKIPPED]

    def passed(key: str, mode: str) -> bool:
        return committed[mode][by_key[key]["prompt"]]["follow_all_instructions"]

    chosen: dict[str, list[str]] = {}

    def take(reason: str, candidates: list[str], count: int = 1) -> None:
        for key in [k for k in candidates if k not in chosen][:count]:
            chosen[key] = [reason]

    take("repeat span with n_start 0: a random start at c6767a1", ["286"])
    take("loose-only pass", [k for k in keys if passed(k, "loose") and not passed(k, "strict")], 3)
    take("strict pass", [k for k in keys if passed(k, "strict")], 3)
    take("several constraints, not all followed", [k for k in keys if len(by_key[k]["instruction_id_list"]) > 1], 2)
    covered = {i for k in chosen for i in by_key[k]["instruction_id_list"]}
    while len(chosen) < SIZE:
        best = max(
            (k for k in keys if k not in chosen),
            key=lambda k: (len(set(by_key[k]["instruction_id_list"]) - covered), -int(k)),
        )
        new = sorted(set(by_key[best]["instruction_id_list"]) - covered)
        chosen[best] = ["covers " + ", ".join(new)] if new else ["filler"]
        covered |= set(by_key[best]["instruction_id_list"])
    items = []
    for key in sorted(chosen, key=int):
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
        "description": "20 of IFBench's sample outputs with the verdicts upstream committed for them",
        "prompts": {"dataset": "ifbench_prompts_294", "sha256": hashlib.sha256(prompts_file.read_bytes()).hexdigest()},
        "responses": {
            "dataset": "ifbench_sample_outputs",
            "sha256": hashlib.sha256(outputs_file.read_bytes()).hexdigest(),
        },
        "expected_from": "upstream's committed eval/eval_results_{strict,loose}.jsonl (c94da02), its own grader's run",
        "left_out": IFBENCH_SKIPPED,
        "instruction_types_covered": len({i for item in items for i in item["instruction_id_list"]}),
        "items": items,
        "sentinels": ifbench_sentinels(data / "nltk"),
        "sentinels_expected_from": (
            "both pinned graders (c6767a1, db69a6f) in the pinned environment (requirements.lock, Python 3.11, "
            f"Unicode {unicodedata.unidata_version}) when the sentinels were made"
        ),
    }


def main(task: str, data: Path) -> None:
    makers = {
        "ifeval": ifeval_canary,
        "ifeval_arabic_inception": arabic_canary,
        "ifeval_langcheck": ifeval_langcheck_canary,
        "infobench": infobench_canary,
        "ifbench": ifbench_canary,
        "ifbench_db69a6f": lambda d: ifbench_canary(d, "ifbench_db69a6f"),
        "ifeval_arabic_inception_hf": lambda d: arabic_hf_canary(d, "ifeval_arabic_inception_hf"),
        "ifeval_arabic_inception_hf_langcheck": lambda d: arabic_hf_canary(d, "ifeval_arabic_inception_hf_langcheck"),
        "mifeval_fr": lambda d: mifeval_canary(d, "fr"),
        "mifeval_ja": lambda d: mifeval_canary(d, "ja"),
    }
    canary = makers[task](data)
    json.dump(canary, sys.stdout, indent=2, sort_keys=True, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    if sys.argv[1] in ("sentinels", "unicode-sentinels"):
        make = with_sentinels if sys.argv[1] == "sentinels" else with_unicode_expectations
        json.dump(make(sys.argv[2], Path(sys.argv[3])), sys.stdout, indent=2, sort_keys=True, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        main(sys.argv[1], Path(sys.argv[2]))
